package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/jobs"
	"github.com/medallion-lake/medallion/late"
	"github.com/medallion-lake/medallion/stream"
)

// jobRunner runs one job and returns what its one-line JSON summary reports.
type jobRunner func(ctx context.Context, cmd *cobra.Command, env jobs.Env) (any, error)

func newRunCmd() *cobra.Command {
	run := &cobra.Command{
		Use:   "run JOB --config F",
		Short: "Run one job once (for external schedulers)",
		Long: `run runs one job once and exits: 0 when it succeeded, 1 when it failed (it is safe to run again),
2 for a bad command line or config. It prints its summary on stdout: one line of JSON when stdout is
not a terminal (pipes, files, schedulers), a small aligned table on a terminal (--format table|json
chooses); logs go to stderr.`,
	}
	for _, job := range []struct {
		name, short string
		run         jobRunner
	}{
		{"ingest", "Ingest new landing objects into bronze, exactly once", runIngest},
		{"stream", "Run the stream: bronze to silver, quarantine and gold", runStream},
		{"merge-late", "Fold quarantined late rows back into gold with MERGE", runMergeLate},
		{"replay", "Recompute a time range of gold and overwrite it with replaceWhere", runReplay},
		{"refresh", "Rebuild one gold or derived table (and those below it) from its inputs in one overwrite", runRefresh},
		{"optimize", "Compact small files of every pipeline table", runOptimize},
		{"vacuum", "Remove unreferenced files older than the retention, on every pipeline table", runVacuum},
		{"checkpoint", "Write a checkpoint of every pipeline table", runCheckpoint},
		{"publish", "Publish the sinks' table changes to Kafka, exactly once", runPublish},
		{"backfill-columns", "Move values kept in _rescued_data into columns added to schema: since (bronze, silver, quarantine)", runBackfillColumns},
	} {
		cmd := newJobCmd(job.name+" --config F", job.short, "override a config key, e.g. --set stream.trigger=once (repeatable)", job.name, job.run)
		if job.name == "merge-late" || job.name == "replay" {
			// Only these two work on one gold aggregation; elsewhere --gold would be ignored.
			cmd.Flags().String("gold", "", "only this gold aggregation")
		}
		if job.name == "ingest" || job.name == "backfill-columns" {
			cmd.Flags().String("source", "", "only this source (default: every source)")
		}
		if job.name == "stream" {
			cmd.Flags().String("source", "", "only this source or join (default: every source, then every join)")
		}
		if job.name == "stream" {
			cmd.Flags().String("trigger", "", "once | available-now | processing-time=30s (overrides stream.trigger)")
			cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
				if s, _ := cmd.Flags().GetString("trigger"); s != "" {
					if _, err := config.ParseTrigger(s); err != nil {
						return usageError("run stream: --trigger: %v", err)
					}
				}
				return nil
			}
		}
		if job.name == "replay" {
			cmd.Flags().String("since", "", "replay the range ending now, e.g. 24h (or --from/--to)")
			cmd.Flags().String("from", "", "range start (RFC 3339 or 'YYYY-MM-DD HH:MM:SS' UTC), with --to")
			cmd.Flags().String("to", "", "range end (exclusive), with --from")
			cmd.Flags().String("source", "silver", "silver | bronze (re-validated and deduplicated)")
			cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
				_, err := replayRange(cmd, time.Now())
				return err
			}
		}
		if job.name == "publish" {
			addPublishFlags(cmd)
		}
		if job.name == "refresh" {
			cmd.Flags().String("table", "", "the gold or derived table to rebuild (required)")
			cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
				cfg, err := commandConfig(cmd)
				if err != nil {
					return err
				}
				return refreshTable(cmd, cfg)
			}
		}
		if job.name == "vacuum" {
			cmd.Flags().Bool("dry-run", false, "list the files vacuum would delete, delete nothing")
		}
		run.AddCommand(cmd)
	}
	return run
}

// newJobCmd returns a command that runs a job once and prints its summary (run JOB, recover
// ...): --config and --set (setUsage is its help), --format, no arguments. name names the job
// in the summary and the event log.
func newJobCmd(use, short, setUsage, name string, run jobRunner) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs, RunE: jobCommand(name, run)}
	addConfigFlags(cmd, setUsage)
	addFormatFlag(cmd)
	return cmd
}

// jobCommand loads the config, builds the environment, runs the job and prints its summary.
func jobCommand(name string, run jobRunner) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		path, err := configPath(cmd)
		if err != nil {
			return err
		}
		cfg, err := loadCommandConfig(cmd, path)
		if err != nil {
			return err
		}
		if _, err := goldFlag(cmd, cfg); err != nil {
			return err
		}
		source, err := sourceFlag(cmd, cfg)
		if err != nil {
			return err
		}
		if _, err := sinkFlag(cmd, cfg); err != nil {
			return err
		}
		format, err := summaryFormat(cmd)
		if err != nil {
			return err
		}
		// A typo'd lake: refuse it rather than create a new, empty lake there.
		if err := refuseEmptyLake(cmd.Context(), cfg, path); err != nil {
			return err
		}
		logger := newLogger(cfg.Log, cmd.ErrOrStderr())
		ctx := cmd.Context()
		env, err := jobs.NewEnv(ctx, cfg, logger)
		if err != nil {
			return err
		}
		defer env.Lake.Close()
		began := time.Now()
		// The event log gets the run's row (docs/event-log.md), whatever its outcome.
		summary, err := jobs.RunLogged(ctx, env, name, source, func(ctx context.Context, env jobs.Env) (any, error) {
			return run(ctx, cmd, env)
		})
		result := map[string]any{"job": name, "ok": err == nil, "seconds": roundTo(time.Since(began).Seconds(), 3)}
		if err != nil {
			// The short form: schedulers parse this line; the chain is at debug level.
			result["error"] = (&oneLineError{err}).Error()
		}
		if summary := emptyNotNull(summary); summary != nil {
			result["result"] = summary
		}
		line, merr := json.Marshal(result)
		if merr != nil {
			return merr
		}
		if format == formatTable {
			if werr := writeSummaryTable(cmd.OutOrStdout(), line); werr != nil {
				return werr
			}
		} else {
			fmt.Fprintln(cmd.OutOrStdout(), string(line))
		}
		if err != nil {
			// Printed once, on one line, by main; the whole chain only for those who ask.
			logger.Debug("job failed", "job", name, "err", err.Error())
			return &exitError{code: 1, err: fmt.Errorf("%s: %w", subPath(cmd), err)}
		}
		return nil
	}
}

func runIngest(ctx context.Context, cmd *cobra.Command, env jobs.Env) (any, error) {
	warnEmptyLanding(ctx, env.Lake, env.Config, env.Logger) // a typo'd landing.path reads nothing
	bar := newProgress(cmd.ErrOrStderr(), isTerminal(cmd.ErrOrStderr()), "ingest", "lines", -1)
	defer bar.done()
	if env.Config.MultiSource() {
		only, _ := cmd.Flags().GetString("source")
		reps, err := jobs.IngestSources(ctx, env, only, func(source string, b bronze.Report) {
			bar.add(b.Lines, fmt.Sprintf("ingest %s: batch of %s", source, count(int64(b.Files), "object")))
		})
		return jobs.MultiIngestReport{Sources: reps}, err
	}
	rep, err := jobs.IngestProgress(ctx, env, func(b bronze.Report) {
		bar.add(b.Lines, fmt.Sprintf("ingest: batch of %s", count(int64(b.Files), "object")))
	})
	return rep, err
}

// sourceFlag is --source (on ingest and stream), checked against the config before anything
// runs: an unknown name is a bad command line (exit 2).
func sourceFlag(cmd *cobra.Command, cfg *config.Pipeline) (string, error) {
	if cmd.Flags().Lookup("source") == nil || cmd.Name() == "replay" {
		return "", nil
	}
	return onlySource(cmd, cfg, cmd.Name() == "stream")
}

func runOptimize(ctx context.Context, _ *cobra.Command, env jobs.Env) (any, error) {
	return jobs.Optimize(ctx, env)
}

func runVacuum(ctx context.Context, cmd *cobra.Command, env jobs.Env) (any, error) {
	dry, _ := cmd.Flags().GetBool("dry-run")
	return jobs.Vacuum(ctx, env, dry)
}

func runBackfillColumns(ctx context.Context, cmd *cobra.Command, env jobs.Env) (any, error) {
	only, _ := cmd.Flags().GetString("source")
	return jobs.BackfillColumns(ctx, env, only)
}

func runCheckpoint(ctx context.Context, _ *cobra.Command, env jobs.Env) (any, error) {
	return jobs.Checkpoint(ctx, env)
}

func runStream(ctx context.Context, cmd *cobra.Command, env jobs.Env) (any, error) {
	var trigger config.Trigger
	if s, _ := cmd.Flags().GetString("trigger"); s != "" {
		t, err := config.ParseTrigger(s)
		if err != nil {
			return nil, usageError("run stream: --trigger: %v", err)
		}
		trigger = t
	}
	bar := newProgress(cmd.ErrOrStderr(), isTerminal(cmd.ErrOrStderr()), "stream", "rows", -1)
	defer bar.done()
	if env.Config.MultiSource() {
		only, _ := cmd.Flags().GetString("source")
		rep, err := jobs.StreamSources(ctx, env, only, trigger, progressListener{bar})
		return jobs.WithDerived(ctx, env, rep, err)
	}
	rep, err := jobs.Stream(ctx, env, trigger, progressListener{bar})
	return jobs.WithDerived(ctx, env, rep, err)
}

func runMergeLate(ctx context.Context, cmd *cobra.Command, env jobs.Env) (any, error) {
	name, err := goldFlag(cmd, env.Config)
	if err != nil {
		return nil, err
	}
	if derivedOnly(env.Config, name) {
		return jobs.WithDerived(ctx, env, nil, nil)
	}
	if env.Config.MultiSource() {
		rep, err := jobs.MergeLateSources(ctx, env, name)
		return jobs.WithDerived(ctx, env, rep, err)
	}
	rep, err := jobs.MergeLate(ctx, env, name)
	return jobs.WithDerived(ctx, env, rep, err)
}

// refreshTable checks run refresh's --table against the config before anything runs: a
// name that is not a gold or derived table of the config is a bad command line (exit 2).
func refreshTable(cmd *cobra.Command, cfg *config.Pipeline) error {
	name, _ := cmd.Flags().GetString("table")
	if _, ok := cfg.GoldByName(name); ok {
		return nil
	}
	var names []string
	for _, g := range cfg.Gold {
		names = append(names, g.Name)
	}
	return usageError("%s: --table %q is not a gold or derived table of the config (it has %s)", subPath(cmd), name, strings.Join(names, ", "))
}

// runRefresh is run refresh --table NAME: a gold (from silver, with the stream's state of it)
// or a derived table (from its upstream), and the derived tables below it, rebuilt in one
// overwrite each (docs/derived-tables.md).
func runRefresh(ctx context.Context, cmd *cobra.Command, env jobs.Env) (any, error) {
	name, _ := cmd.Flags().GetString("table")
	rep, err := jobs.Refresh(ctx, env, name)
	if rep.Derived == nil {
		rep.Derived = []late.DeriveReport{}
	}
	return rep, err
}

// derivedOnly reports whether --gold names a derived table: merge-late and replay then only
// keep the derived tables (from their upstreams' change feeds), which is all they do for one.
func derivedOnly(cfg *config.Pipeline, name string) bool {
	g, ok := cfg.GoldByName(name)
	return ok && cfg.IsDerived(*g)
}

// progressListener moves the stream's bar on each batch's progress.
type progressListener struct{ bar *progress }

func (l progressListener) OnProgress(p *stream.Progress) {
	l.bar.add(p.NumInputRows, fmt.Sprintf("stream: batch %d", p.BatchID))
}

// goldFlag is --gold (on the jobs that have it), checked against the config before anything
// runs: an unknown name is a bad command line (exit 2).
func goldFlag(cmd *cobra.Command, cfg *config.Pipeline) (string, error) {
	if cmd.Flags().Lookup("gold") == nil {
		return "", nil
	}
	name, _ := cmd.Flags().GetString("gold")
	if name != "" {
		if _, ok := cfg.GoldByName(name); !ok {
			var names []string
			for _, g := range cfg.Gold {
				names = append(names, g.Name)
			}
			return "", usageError("%s: --gold %q is not a gold aggregation of %s (it has %s)", subPath(cmd), name, cfg.Source(), strings.Join(names, ", "))
		}
	}
	return name, nil
}

func runReplay(ctx context.Context, cmd *cobra.Command, env jobs.Env) (any, error) {
	r, err := replayRange(cmd, env.Clock())
	if err != nil {
		return nil, err
	}
	name, err := goldFlag(cmd, env.Config)
	if err != nil {
		return nil, err
	}
	bar := newProgress(cmd.ErrOrStderr(), isTerminal(cmd.ErrOrStderr()), "replay", "rows", -1)
	defer bar.done()
	if derivedOnly(env.Config, name) {
		return jobs.WithDerived(ctx, env, nil, nil)
	}
	if env.Config.MultiSource() {
		reps, err := jobs.ReplaySources(ctx, env, name, r, replayProgress(bar))
		return jobs.WithDerived(ctx, env, jobs.MultiReplayReport{Queries: reps}, err)
	}
	rep, err := jobs.ReplayProgress(ctx, env, name, r, replayProgress(bar))
	return jobs.WithDerived(ctx, env, rep, err)
}

// replayProgress moves the replay's bar by the source rows read since the last report and
// shows the aggregation, the read pass and its files. Rows restart from 0 when an aggregation
// starts (again, after a conflict): those are rows read again, counted again.
func replayProgress(bar *progress) func(late.ReplayProgress) {
	var rows int64
	done := 0
	return func(p late.ReplayProgress) {
		if p.Rows < rows {
			rows = 0
		}
		// The aggregation's number in the run: the one after those done, unless this report
		// is the one saying it is done.
		n := p.GoldDone + 1
		if p.GoldDone > done {
			n, done = p.GoldDone, p.GoldDone
		}
		what := fmt.Sprintf("replay: %s (%d/%d)", p.Gold, n, p.GoldTotal)
		if p.Pass > 0 {
			what += fmt.Sprintf(" pass %d, file %d/%d", p.Pass, p.FilesDone, p.FilesTotal)
		}
		bar.add(p.Rows-rows, what)
		rows = p.Rows
	}
}

// replayRange reads --since D | --from T --to T and --source into a range (usage errors: exit 2).
func replayRange(cmd *cobra.Command, now time.Time) (late.Range, error) {
	since, _ := cmd.Flags().GetString("since")
	from, _ := cmd.Flags().GetString("from")
	to, _ := cmd.Flags().GetString("to")
	src, _ := cmd.Flags().GetString("source")
	var r late.Range
	switch src {
	case late.SourceSilver, late.SourceBronze:
		r.Source = src
	default:
		return r, usageError("run replay: --source %q: want silver or bronze", src)
	}
	switch {
	case since != "" && (from != "" || to != ""):
		return r, usageError("run replay: give --since or --from/--to, not both")
	case since != "":
		d, err := config.ParseDuration(since)
		if err != nil || d.Duration <= 0 {
			return r, usageError("run replay: --since %q: want a positive duration such as 24h", since)
		}
		r.From, r.To = now.Add(-d.Duration), now
	case from != "" && to != "":
		var err error
		if r.From, err = parseFlagTime(from); err != nil {
			return r, usageError("run replay: --from %q: want RFC 3339, 'YYYY-MM-DD HH:MM:SS' or 'YYYY-MM-DD'", from)
		}
		if r.To, err = parseFlagTime(to); err != nil {
			return r, usageError("run replay: --to %q: want RFC 3339, 'YYYY-MM-DD HH:MM:SS' or 'YYYY-MM-DD'", to)
		}
		if !r.From.Before(r.To) {
			return r, usageError("run replay: --from %s is not before --to %s", from, to)
		}
	default:
		return r, usageError("run replay: give --since D, or --from T and --to T")
	}
	return r, nil
}

// newLogger follows the config: JSON unless stderr is a terminal (or as set), at its level.
func newLogger(c config.Log, w interface{ Write([]byte) (int, error) }) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(strings.ToUpper(c.Level)))
	opts := &slog.HandlerOptions{Level: level}
	text := c.Format == "text"
	if c.Format == "" || c.Format == "auto" {
		text = term.IsTerminal(int(os.Stderr.Fd()))
	}
	if text {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
