package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/jobs/specs"
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
	err := eachSource(env, only, func(name string, se Env) error {
		var cb func(bronze.Report)
		if onBatch != nil {
			cb = func(r bronze.Report) { onBatch(name, r) }
		}
		rep, err := IngestProgress(ctx, se, cb)
		out = append(out, SourceIngestReport{Source: name, Report: rep})
		return err
	})
	return out, err
}

// eachSource runs job on the single-source view of every source in config order (the top-level
// one first), or of the source named only (checked by the caller: CheckSource), and stops at
// the first failure, which it names by the source: each source's jobs are exactly once on
// their own, so a rerun picks up from there.
func eachSource(env Env, only string, job func(name string, se Env) error) error {
	for _, s := range env.Config.AllSources() {
		if only != "" && s.Name != only {
			continue
		}
		se, _ := env.ForSource(s.Name)
		if err := job(s.Name, se); err != nil {
			return fmt.Errorf("source %s: %w", s.Name, err)
		}
	}
	return nil
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
	listener, flush := env.streamListener(ctx, j.Name, j.Checkpoint, listener)
	defer flush()
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
