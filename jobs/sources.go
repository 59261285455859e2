package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/late"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/stream"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// ErrUnknownSource is returned for a --source that names no source (or, for stream, no join).
var ErrUnknownSource = errors.New("jobs: unknown source")

// ForSource is env with the single-source view of the source named name (config.ForSource): the
// single-source jobs (Ingest, Stream, MergeLate, Replay) run on it unchanged.
func (e Env) ForSource(name string) (Env, bool) {
	v, ok := e.Config.ForSource(name)
	if !ok {
		return e, false
	}
	e.Config = v
	return e, true
}

// CheckSource checks a --source value: a source, or (joinsToo) a join. Empty is every one.
func CheckSource(cfg *config.Pipeline, name string, joinsToo bool) error {
	if name == "" {
		return nil
	}
	if _, ok := cfg.SourceByName(name); ok {
		return nil
	}
	if _, ok := cfg.JoinByName(name); ok && joinsToo {
		return nil
	}
	var names []string
	for _, s := range cfg.AllSources() {
		names = append(names, s.Name)
	}
	if joinsToo {
		for _, j := range cfg.Joins {
			names = append(names, j.Name)
		}
	}
	return fmt.Errorf("%w %q: %s has %s", ErrUnknownSource, name, cfg.Source(), strings.Join(names, ", "))
}

// MultiIngestReport is a several-source ingest run: what run ingest prints and serve records.
type MultiIngestReport struct {
	Sources []SourceIngestReport `json:"sources"`
}

// MultiReplayReport is a several-source replay run.
type MultiReplayReport struct {
	Queries []QueryReplayReport `json:"queries"`
}

// SourceIngestReport is one source's ingest in a several-source run.
type SourceIngestReport struct {
	Source string `json:"source"`
	bronze.Report
}

// IngestSources ingests every source in config order (the top-level one first), or only the
// source named only. onBatch (when not nil) follows each source's batches. It stops at the
// first failing source: each source's ingest is exactly once, so a rerun picks up from there.
func IngestSources(ctx context.Context, env Env, only string, onBatch func(source string, r bronze.Report)) ([]SourceIngestReport, error) {
	if err := CheckSource(env.Config, only, false); err != nil {
		return nil, err
	}
	out := []SourceIngestReport{}
	for _, s := range env.Config.AllSources() {
		if only != "" && s.Name != only {
			continue
		}
		se, _ := env.ForSource(s.Name)
		var cb func(bronze.Report)
		if onBatch != nil {
			name := s.Name
			cb = func(r bronze.Report) { onBatch(name, r) }
		}
		rep, err := IngestProgress(ctx, se, cb)
		out = append(out, SourceIngestReport{Source: s.Name, Report: rep})
		if err != nil {
			return out, fmt.Errorf("source %s: %w", s.Name, err)
		}
	}
	return out, nil
}

// SourceStreamReport is one source query's run in a several-source stream.
type SourceStreamReport struct {
	Source string `json:"source"`
	stream.Report
}

// StreamReport is a several-source stream run: every source query, then every join query.
type StreamReport struct {
	Sources []SourceStreamReport `json:"sources"`
	Joins   []stream.JoinReport  `json:"joins"`
}

// StreamSources runs every source's query (the top-level one first), then every join's query (a
// join reads the silver tables its sources just wrote); or, with only, the one source or join of
// that name. trigger overrides each query's when its Kind is set. It stops at the first failure:
// every query is exactly once on its own checkpoint, so a rerun converges.
func StreamSources(ctx context.Context, env Env, only string, trigger config.Trigger, listener stream.Listener) (StreamReport, error) {
	rep := StreamReport{Sources: []SourceStreamReport{}, Joins: []stream.JoinReport{}}
	if err := CheckSource(env.Config, only, true); err != nil {
		return rep, err
	}
	for _, s := range env.Config.AllSources() {
		if only != "" && s.Name != only {
			continue
		}
		se, _ := env.ForSource(s.Name)
		r, err := Stream(ctx, se, trigger, listener)
		rep.Sources = append(rep.Sources, SourceStreamReport{Source: s.Name, Report: r})
		if err != nil {
			return rep, fmt.Errorf("source %s: %w", s.Name, err)
		}
	}
	for _, j := range specs.Joins(env.Config) {
		if only != "" && j.Name != only {
			continue
		}
		r, err := StreamJoin(ctx, env, j.Name, trigger, listener)
		rep.Joins = append(rep.Joins, r)
		if err != nil {
			return rep, fmt.Errorf("join %s: %w", j.Name, err)
		}
	}
	return rep, nil
}

// StreamJoin runs the join query named name.
func StreamJoin(ctx context.Context, env Env, name string, trigger config.Trigger, listener stream.Listener) (stream.JoinReport, error) {
	j, ok := specs.Join(env.Config, name)
	if !ok {
		return stream.JoinReport{Name: name}, fmt.Errorf("%w %q", ErrUnknownSource, name)
	}
	if err := ensureJoinInputs(ctx, env, j); err != nil {
		return stream.JoinReport{Name: name}, err
	}
	listener = env.streamListener(ctx, j.Name, j.Checkpoint, listener)
	r, err := stream.NewJoin(stream.JoinOptions{Lake: env.Lake, Join: j, Trigger: specs.Trigger(trigger), Clock: env.Clock,
		Logger: env.Logger, Listener: listener})
	if err != nil {
		return stream.JoinReport{Name: name}, err
	}
	return r.Run(ctx)
}

// ensureJoinInputs creates, as `medallion init` does, the tables of a join's input source whose
// silver table does not exist yet: a source that has never had a row. Spark runs a join's
// micro-batch as soon as either input has new data, even when the other has never had any
// (spec/stream-joins.md §7); the join reads an empty silver table as "no rows yet", but with no
// table at all it has no schema to plan with and would run nothing.
func ensureJoinInputs(ctx context.Context, env Env, j spec.Join) error {
	for _, in := range []spec.JoinInput{j.Left, j.Right} {
		_, err := table.Open(objstore.WithPrefix(env.Lake, in.Silver), table.Options{}).Log().Snapshot(ctx)
		if err == nil {
			continue
		}
		if !errors.Is(err, txlog.ErrTableNotFound) {
			return fmt.Errorf("join %s: silver %s: %w", j.Name, in.Silver, err)
		}
		se, ok := env.ForSource(in.Source)
		if !ok {
			return fmt.Errorf("%w %q (input of join %s)", ErrUnknownSource, in.Source, j.Name)
		}
		env.Logger.Info("join input has never had a row: creating its tables as init does", "join", j.Name, "source", in.Source, "silver", in.Silver)
		if err := initSource(ctx, se, map[string]bool{}); err != nil {
			return fmt.Errorf("join %s: %w", j.Name, err)
		}
	}
	return nil
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
