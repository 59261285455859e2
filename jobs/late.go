package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/late"
	"github.com/medallion-lake/medallion/stream/spec"
)

// MergeLate folds each gold aggregation's new quarantine rows into its gold table (only
// goldName's when set), exactly once per quarantine version.
func MergeLate(ctx context.Context, env Env, goldName string) (late.MergeReport, error) {
	return late.MergeLate(ctx, lateOptions(env, goldName))
}

// Replay recomputes the whole windows of r from silver (or bronze) and replaces them in gold.
func Replay(ctx context.Context, env Env, goldName string, r late.Range) (late.ReplayReport, error) {
	return ReplayProgress(ctx, env, goldName, r, nil)
}

// ReplayProgress is Replay, calling progress (when not nil) as it reads the source and
// finishes each aggregation (see late.ReplayProgress).
func ReplayProgress(ctx context.Context, env Env, goldName string, r late.Range, progress func(late.ReplayProgress)) (late.ReplayReport, error) {
	opts := lateOptions(env, goldName)
	opts.Progress = progress
	return late.Replay(ctx, opts, r)
}

// ReplayLookback is the scheduled replay: the configured lookback (jobs.replay.lookback),
// ending now, from silver.
func ReplayLookback(ctx context.Context, env Env) (late.ReplayReport, error) {
	now := env.clock()
	return Replay(ctx, env, "", late.Range{From: now.Add(-env.Config.Jobs.Replay.Lookback.Duration), To: now})
}

// QueryMergeReport is the merge-late of one query's aggregations: a source's, or a join's
// (Source names the join).
type QueryMergeReport struct {
	Source string `json:"source"`
	late.MergeReport
}

// JoinMergeReport is one join's merge-late: the joined table fixed (invariant J).
type JoinMergeReport = late.JoinMergeReport

// MergeLateReport is a several-source merge-late.
type MergeLateReport struct {
	// Queries are the aggregations' merges, per source and per join with aggregations.
	Queries []QueryMergeReport `json:"queries"`
	// Joins are the joined tables' merges.
	Joins []JoinMergeReport `json:"joins"`
}

// MergeLateSources runs merge-late for every query with aggregations (goldName's only when set)
// and fixes every joined table with late.MergeLateJoin (all of them unless goldName is set).
// A join's table is fixed before the aggregations over it merge their own quarantine.
func MergeLateSources(ctx context.Context, env Env, goldName string) (MergeLateReport, error) {
	rep := MergeLateReport{Queries: []QueryMergeReport{}, Joins: []JoinMergeReport{}}
	for _, s := range env.Config.AllSources() {
		q, _ := specs.SourceQuery(env.Config, s.Name)
		if !hasGold(q.Gold, goldName) {
			continue
		}
		opts := lateOptions(env, goldName)
		opts.Query = q
		r, err := late.MergeLate(ctx, opts)
		rep.Queries = append(rep.Queries, QueryMergeReport{Source: s.Name, MergeReport: r})
		if err != nil {
			return rep, fmt.Errorf("source %s: %w", s.Name, err)
		}
	}
	for _, j := range specs.Joins(env.Config) {
		if goldName == "" {
			r, err := late.MergeLateJoin(ctx, lateOptions(env, ""), j)
			rep.Joins = append(rep.Joins, r)
			if err != nil {
				return rep, fmt.Errorf("join %s: %w", j.Name, err)
			}
		}
		if !hasGold(j.Gold, goldName) {
			continue
		}
		opts := lateOptions(env, goldName)
		opts.Query, opts.Join = late.JoinQuery(j), &j
		r, err := late.MergeLate(ctx, opts)
		rep.Queries = append(rep.Queries, QueryMergeReport{Source: j.Name, MergeReport: r})
		if err != nil {
			return rep, fmt.Errorf("join %s: %w", j.Name, err)
		}
	}
	return rep, nil
}

// QueryReplayReport is the replay of one query's aggregations.
type QueryReplayReport struct {
	Source string `json:"source"`
	late.ReplayReport
}

// ReplaySources replays r for every query with aggregations (goldName's only when set): each
// source's from its own silver (or bronze), each join's from the joined table.
func ReplaySources(ctx context.Context, env Env, goldName string, r late.Range, progress func(late.ReplayProgress)) ([]QueryReplayReport, error) {
	out := []QueryReplayReport{}
	run := func(name string, q spec.Query, j *spec.Join) error {
		if !hasGold(q.Gold, goldName) {
			return nil
		}
		opts := lateOptions(env, goldName)
		opts.Query, opts.Join = q, j
		opts.Progress = progress
		rep, err := late.Replay(ctx, opts, r)
		out = append(out, QueryReplayReport{Source: name, ReplayReport: rep})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}
	for _, s := range env.Config.AllSources() {
		q, _ := specs.SourceQuery(env.Config, s.Name)
		if err := run(s.Name, q, nil); err != nil {
			return out, err
		}
	}
	for _, j := range specs.Joins(env.Config) {
		if err := run(j.Name, late.JoinQuery(j), &j); err != nil {
			return out, err
		}
	}
	return out, nil
}

// hasGold reports whether a query has aggregations to work on: any (name empty) or name.
func hasGold(gold []spec.Aggregation, name string) bool {
	if len(gold) == 0 {
		return false
	}
	if name == "" {
		return true
	}
	for _, g := range gold {
		if g.Name == name {
			return true
		}
	}
	return false
}

func lateOptions(env Env, goldName string) late.Options {
	return late.Options{Lake: env.Lake, Query: specs.Query(env.Config), Gold: goldName, Clock: env.clock, Logger: env.Logger}
}

func (e Env) clock() time.Time {
	if e.Clock == nil {
		return time.Now()
	}
	return e.Clock()
}
