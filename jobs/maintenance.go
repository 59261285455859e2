package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/late"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// TablePaths lists every table of the pipeline (under the lake), bronze first, gold last.
func TablePaths(env Env) []string {
	cfg := env.Config
	var paths []string
	seen := map[string]bool{}
	add := func(ps ...string) {
		for _, p := range ps {
			if !seen[p] { // sources may share the rejects table
				seen[p] = true
				paths = append(paths, p)
			}
		}
	}
	for _, s := range cfg.AllSources() {
		add(s.Tables.Bronze, s.Tables.Rejects, s.Tables.Silver)
	}
	for _, j := range cfg.Joins {
		add(j.Table, j.Quarantine)
	}
	for _, g := range cfg.Gold {
		if cfg.IsDerived(g) {
			add(g.Table) // a derived table has no quarantine (docs/derived-tables.md)
			continue
		}
		add(g.Quarantine, g.Table)
	}
	return paths
}

// TableResult is one table's line in a maintenance summary. A dry-run vacuum fills the
// "would delete" fields, never the "deleted" ones, so a reader of the summary cannot mistake
// one for the other.
type TableResult struct {
	Table string `json:"table"`
	// Optimize, checkpoint
	Version      int64 `json:"version,omitempty"`
	FilesRemoved int   `json:"filesRemoved,omitempty"`
	FilesAdded   int   `json:"filesAdded,omitempty"`
	// Vacuum
	FilesDeleted     int    `json:"filesDeleted,omitempty"`
	BytesDeleted     int64  `json:"bytesDeleted,omitempty"`
	FilesWouldDelete int    `json:"filesWouldDelete,omitempty"`
	BytesWouldDelete int64  `json:"bytesWouldDelete,omitempty"`
	Skipped          string `json:"skipped,omitempty"`
}

// forEachTable runs fn on every existing table of the pipeline and on the event log; tables
// not created yet are reported as skipped. Every table is tried even when one fails.
func forEachTable(ctx context.Context, env Env, fn func(*table.Table, *TableResult) error) ([]TableResult, error) {
	var out []TableResult
	var errs []error
	paths := TablePaths(env)
	if p, on := env.Config.EventLogPath(); on {
		paths = append(paths, p) // compacted and vacuumed with the other tables
	}
	for _, p := range paths {
		opts := table.Options{Clock: env.Clock}
		if p == env.Config.Tables.Silver {
			opts.Write = silver.WriteOptions(env.Config.Stream.Dedup, pq.WriteOptions{})
		}
		t := table.Open(objstore.WithPrefix(env.Lake, p), opts)
		res := TableResult{Table: p}
		if _, err := t.Log().Snapshot(ctx); errors.Is(err, txlog.ErrTableNotFound) {
			res.Skipped = "no table yet"
			out = append(out, res)
			continue
		}
		if err := fn(t, &res); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
		}
		out = append(out, res)
	}
	return out, errors.Join(errs...)
}

// Optimize compacts small files of every pipeline table (bin-packing, dataChange=false, so
// streams reading them see no new data).
func Optimize(ctx context.Context, env Env) ([]TableResult, error) {
	target := env.Config.Jobs.Optimize.TargetFileSize.Bytes
	return forEachTable(ctx, env, func(t *table.Table, res *TableResult) error {
		r, err := t.Optimize(ctx, table.OptimizeOptions{TargetSize: target})
		res.Version, res.FilesRemoved, res.FilesAdded = r.Version, r.FilesRemoved, r.FilesAdded
		return err
	})
}

// Vacuum deletes files no version within the retention references, on every pipeline table.
func Vacuum(ctx context.Context, env Env, dryRun bool) ([]TableResult, error) {
	v := env.Config.Jobs.Vacuum
	return forEachTable(ctx, env, func(t *table.Table, res *TableResult) error {
		r, err := t.Vacuum(ctx, table.VacuumOptions{Retention: v.Retain.Duration, Force: v.AllowShortRetention, DryRun: dryRun})
		if errors.Is(err, table.ErrRetentionTooShort) {
			// The config validation refuses this first; a config built in code may not have.
			return fmt.Errorf("jobs.vacuum.retain %s is shorter than %s; set jobs.vacuum.allow_short_retention: true if you are sure: %w",
				config.FormatDuration(v.Retain.Duration), config.FormatDuration(table.MinVacuumRetention), err)
		}
		if dryRun {
			res.FilesWouldDelete, res.BytesWouldDelete = len(r.Files), r.Bytes
		} else {
			res.FilesDeleted, res.BytesDeleted = len(r.Files), r.Bytes
		}
		return err
	})
}

// Checkpoint writes a checkpoint of every pipeline table at its latest version.
func Checkpoint(ctx context.Context, env Env) ([]TableResult, error) {
	return forEachTable(ctx, env, func(t *table.Table, res *TableResult) error {
		snap, err := t.Log().Snapshot(ctx)
		if err != nil {
			return err
		}
		res.Version = snap.Version()
		return t.Log().Checkpoint(ctx, snap)
	})
}

// Catalog maps the config's job schedules to job functions, for the scheduler.
func Catalog(env Env) []Scheduled {
	var jobs []Scheduled
	j := env.Config.Jobs
	for _, e := range []struct {
		name string
		job  config.Job
	}{
		{"ingest", j.Ingest}, {"stream", j.Stream}, {"merge-late", j.MergeLate}, {"replay", j.Replay.Job},
		{"optimize", j.Optimize.Job}, {"vacuum", j.Vacuum.Job}, {"checkpoint", j.Checkpoint}, {"publish", j.Publish},
	} {
		if e.name == "publish" && len(env.Config.Sinks) > 0 && e.job.Schedule == "" && e.job.After == "" {
			// Sinks publish what each job that changes tables committed, as soon as it did.
			e.job.After = "stream,merge-late,replay"
		}
		if e.job.Schedule == "" && e.job.After == "" {
			continue
		}
		// The config says merge_late (a YAML key); the job is merge-late (a command).
		after := strings.ReplaceAll(e.job.After, "_", "-")
		jobs = append(jobs, Scheduled{Name: e.name, Schedule: e.job.Schedule, After: after, Timeout: e.job.Timeout.Duration, Run: Lookup(e.name)})
	}
	return jobs
}

// Lookup returns the job function of a job name as the scheduler runs it (scheduled runs use
// the config's settings: available-now stream, the replay lookback), or nil for an unknown name.
func Lookup(name string) Func {
	switch name {
	case "ingest":
		return func(ctx context.Context, env Env) (any, error) {
			if env.Config.MultiSource() {
				reps, err := IngestSources(ctx, env, "", nil)
				return MultiIngestReport{Sources: reps}, err
			}
			return Ingest(ctx, env)
		}
	case "stream":
		return func(ctx context.Context, env Env) (any, error) {
			if env.Config.MultiSource() {
				rep, err := StreamSources(ctx, env, "", config.Trigger{}, nil)
				return WithDerived(ctx, env, rep, err)
			}
			rep, err := Stream(ctx, env, config.Trigger{}, nil)
			return WithDerived(ctx, env, rep, err)
		}
	case "merge-late":
		return func(ctx context.Context, env Env) (any, error) {
			if env.Config.MultiSource() {
				rep, err := MergeLateSources(ctx, env, "")
				return WithDerived(ctx, env, rep, err)
			}
			rep, err := MergeLate(ctx, env, "")
			return WithDerived(ctx, env, rep, err)
		}
	case "replay":
		return func(ctx context.Context, env Env) (any, error) {
			if env.Config.MultiSource() {
				now := env.clock()
				reps, err := ReplaySources(ctx, env, "", late.Range{From: now.Add(-env.Config.Jobs.Replay.Lookback.Duration), To: now}, nil)
				return WithDerived(ctx, env, MultiReplayReport{Queries: reps}, err)
			}
			rep, err := ReplayLookback(ctx, env)
			return WithDerived(ctx, env, rep, err)
		}
	case "optimize":
		return func(ctx context.Context, env Env) (any, error) { return Optimize(ctx, env) }
	case "vacuum":
		return func(ctx context.Context, env Env) (any, error) { return Vacuum(ctx, env, false) }
	case "checkpoint":
		return func(ctx context.Context, env Env) (any, error) { return Checkpoint(ctx, env) }
	case "publish":
		return publishJob(nil)
	}
	return nil
}
