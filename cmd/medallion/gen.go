package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/gen"
	"github.com/medallion-lake/medallion/jobs"
	"github.com/medallion-lake/medallion/jobs/specs"
)

func newGenCmd() *cobra.Command {
	cmd := newConfigCmd("gen --config F --events N [--seed S] [--files K]",
		"Write synthetic events into the landing prefix",
		`gen writes N lines of NDJSON (or CSV, per landing.format) into the config's landing prefix, in arrival order: events of the
configured schema with a realistic event-time lag (log-normal body, heavy tail, outage bursts
where one device delivers an hour late), duplicates, malformed lines and far-future event times.
By default the events arrive over the last 2 hours (--span; --rate instead sets the lines per
second) and end now (--start now), in 8 objects: with a watermark of minutes, the stream closes
the windows of most of that span. With the same seed, flags and
an RFC 3339 --start, every run gives byte-identical objects, and a rerun skips objects already
written.
It prints a one-line JSON summary that counts every kind of line.
When landing.kind is kafka, the lines are produced into the landing topic instead, one record
each (created with --partitions partitions when it does not exist); a rerun produces them again.`,
		"override a config key, e.g. --set landing.path=landing/test/ (repeatable)", runGen)
	f := cmd.Flags()
	f.Int64("events", 0, "number of lines to write (events, duplicates and malformed lines together)")
	f.Int64("seed", 1, "random seed (same seed, same objects)")
	f.Int("files", 0, "number of landing objects (default: 8, or one per 1,000,000 lines when that is more)")
	d := gen.DefaultOptions()
	f.String("start", "now", "arrival time of the first line (RFC 3339, e.g. "+d.Start.Format(time.RFC3339)+" for objects that are the same on every run), or \"now\": the last line arrives now")
	f.Duration("span", defaultGenSpan, "arrival time the lines spread over (the rate is lines / span), unless --rate is given")
	f.Float64("rate", d.Rate, "lines arriving per second of the arrival clock (default: --events / --span)")
	f.Bool("gzip", false, "gzip each object (.json.gz, .csv.gz)")
	f.Int32("partitions", 4, "partitions of the topic gen creates when landing.kind is kafka")
	f.String("source", "", "write this source's events (its schema and landing) instead of the top-level source's")
	f.Int("event-types", d.EventTypes, "distinct event_type values")
	f.Int("devices", d.Devices, "distinct devices (device_id, if the schema declares it)")
	f.Float64("duplicates", d.DuplicateFraction, "fraction of lines that resend an earlier event")
	f.Float64("late-resends", d.LateResendFraction, "fraction of duplicates resent from far back")
	f.Float64("malformed", d.MalformedFraction, "fraction of lines that are not JSON objects")
	f.Float64("wrong-types", d.WrongTypeFraction, "fraction of lines with a wrongly typed event time or amount")
	f.Float64("future", d.FutureFraction, "fraction of lines with a far-future event time")
	f.Float64("outage-rate", d.OutageRate, "probability per line that an outage burst is delivered")
	f.Duration("lag-median", d.LagMedian, "median event-time lag")
	f.Float64("time-formats", d.TimeFormatMix, "fraction of event times in another accepted spelling (no fraction, millis, offset, space)")
	return cmd
}

func runGen(cmd *cobra.Command, path string) error {
	f := cmd.Flags()
	events, _ := f.GetInt64("events")
	if events <= 0 {
		return usageError("gen: --events must be a positive number of lines, got %d", events)
	}
	cfg, err := loadCommandConfig(cmd, path)
	if err != nil {
		return err
	}
	if name, err := onlySource(cmd, cfg, false); err != nil {
		return err
	} else if name != "" {
		cfg, _ = cfg.ForSource(name)
	}
	o, err := genOptions(cmd, cfg, events)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if cfg.Landing.Kind == config.LandingKafka {
		return runGenKafka(cmd, cfg, o)
	}
	lake, err := jobs.OpenLake(ctx, cfg)
	if err != nil {
		return err
	}
	defer lake.Close()
	if f, ok := cmd.ErrOrStderr().(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar := progressbar.NewOptions64(o.Lines, progressbar.OptionSetWriter(f),
			progressbar.OptionSetDescription("gen"), progressbar.OptionShowCount(),
			progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
		o.Progress = func(lines int64) { _ = bar.Set64(lines) }
		defer bar.Finish()
	}
	began := time.Now()
	st, err := gen.Generate(ctx, lake, o)
	if err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	secs := time.Since(began).Seconds()
	summary := struct {
		Lake   string `json:"lake"`
		Prefix string `json:"prefix"`
		Seed   int64  `json:"seed"`
		gen.Stats
		Seconds   float64 `json:"seconds"`
		LinesPerS float64 `json:"lines_per_s"`
		FirstKey  string  `json:"first_key,omitempty"`
		LastKey   string  `json:"last_key,omitempty"`
	}{Lake: cfg.Lake, Prefix: o.Prefix, Seed: o.Seed, Stats: st, Seconds: roundTo(secs, 3), LinesPerS: roundTo(float64(st.Lines)/max(secs, 1e-9), 0)}
	if len(st.Keys) > 0 {
		summary.FirstKey, summary.LastKey = st.Keys[0], st.Keys[len(st.Keys)-1]
	}
	line, err := json.Marshal(summary)
	if err != nil {
		return fmt.Errorf("gen: summary: %w", err)
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), string(line))
	return err
}

// runGenKafka is gen for a Kafka landing: the workload's lines produced into the topic.
func runGenKafka(cmd *cobra.Command, cfg *config.Pipeline, o gen.Options) error {
	parts, _ := cmd.Flags().GetInt32("partitions")
	if parts <= 0 {
		return usageError("gen: --partitions must be positive, got %d", parts)
	}
	began := time.Now()
	st, ks, err := jobs.GenKafka(cmd.Context(), cfg, o, parts)
	if err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	secs := time.Since(began).Seconds()
	summary := struct {
		gen.KafkaStats
		Seed int64 `json:"seed"`
		gen.Stats
		Seconds   float64 `json:"seconds"`
		LinesPerS float64 `json:"lines_per_s"`
	}{KafkaStats: ks, Seed: o.Seed, Stats: st, Seconds: roundTo(secs, 3), LinesPerS: roundTo(float64(st.Lines)/max(secs, 1e-9), 0)}
	line, err := json.Marshal(summary)
	if err != nil {
		return fmt.Errorf("gen: summary: %w", err)
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), string(line))
	return err
}

func roundTo(v float64, digits int) float64 {
	p := 1.0
	for range digits {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}

// defaultGenSpan is how long gen's arrivals last by default: long enough beside watermarks of
// minutes that the windows of most of it close and gold shows them.
const defaultGenSpan = 2 * time.Hour

// genOptions applies the flags to the config's generator options.
func genOptions(cmd *cobra.Command, cfg *config.Pipeline, events int64) (gen.Options, error) {
	f := cmd.Flags()
	o := genOptionsFromConfig(cfg)
	o.Lines = events
	o.Seed, _ = f.GetInt64("seed")
	o.Files, _ = f.GetInt("files")
	o.Gzip, _ = f.GetBool("gzip")
	o.Rate, _ = f.GetFloat64("rate")
	if span, _ := f.GetDuration("span"); !f.Changed("rate") {
		if span <= 0 {
			return o, usageError("gen: --span must be positive, got %v", span)
		}
		// Spread over the span: at a fixed rate (1,000 lines a second), 200,000 lines arrived
		// within 4 minutes, less than a watermark of 10m, and no window ever closed.
		o.Rate = float64(events) / span.Seconds()
	}
	o.EventTypes, _ = f.GetInt("event-types")
	o.Devices, _ = f.GetInt("devices")
	o.DuplicateFraction, _ = f.GetFloat64("duplicates")
	o.LateResendFraction, _ = f.GetFloat64("late-resends")
	o.MalformedFraction, _ = f.GetFloat64("malformed")
	o.WrongTypeFraction, _ = f.GetFloat64("wrong-types")
	o.FutureFraction, _ = f.GetFloat64("future")
	o.OutageRate, _ = f.GetFloat64("outage-rate")
	o.LagMedian, _ = f.GetDuration("lag-median")
	o.TimeFormatMix, _ = f.GetFloat64("time-formats")
	if o.Files < 0 {
		return o, usageError("gen: --files must not be negative, got %d", o.Files)
	}
	if !f.Changed("files") {
		// Several objects by default, so that ingest batches and the stream's micro-batches
		// (one object per batch, as a schedule sees them arrive) show late rows being
		// quarantined and merged back; one object would be one batch with nothing late.
		o.Files = int(min(events, max(8, (events+999_999)/1_000_000)))
	}
	start, _ := f.GetString("start")
	if start == "now" {
		// The last line arrives now: an arrival clock running past the real time would make
		// the newest events look like the future to ingest.
		span := time.Duration(float64(events) / max(o.Rate, 1e-9) * float64(time.Second))
		o.Start = time.Now().UTC().Add(-span).Truncate(time.Second)
	} else {
		t, err := time.Parse(time.RFC3339Nano, start)
		if err != nil {
			return o, usageError("gen: --start %q: expected an RFC 3339 time such as 2024-05-01T00:00:00Z, or now", start)
		}
		o.Start = t.UTC()
	}
	return o, nil
}

// genOptionsFromConfig is the generator's default workload for a pipeline: its schema, event
// time, dedup key and landing prefix (Lines is left 0). The demo uses it too.
func genOptionsFromConfig(cfg *config.Pipeline) gen.Options {
	o := gen.DefaultOptions()
	o.Prefix = cfg.Landing.Path
	o.Format = cfg.Landing.Format
	o.Columns = nil
	for _, c := range cfg.Schema {
		o.Columns = append(o.Columns, gen.Column{Name: c.Name, Kind: string(c.Type.Kind),
			Precision: c.Type.Precision, Scale: c.Type.Scale, Required: c.Required})
	}
	o.EventTime = cfg.Stream.EventTime
	// A single-column dedup key is the event id: resends repeat it.
	if len(cfg.Stream.Dedup) == 1 {
		o.ID = cfg.Stream.Dedup[0]
	}
	return o
}

// errLoadStopped is the error of a command stopped by SIGINT or SIGTERM while it loaded its
// config: the config is not known to be bad, and nothing was done.
var errLoadStopped = errors.New("stopped by a signal while loading the config; nothing was done")

// loadPipelineConfig loads a config and applies --set overrides; any problem in the config is
// a usage error (exit code 2). SIGINT or SIGTERM (ctx ends) during the load stops it at
// once with errLoadStopped, exit code 1 (the config is not known to be bad; nothing was done;
// serve turns it into its graceful exit 0). It sets the process's memory limit
// (memory_limit) as it goes.
func loadPipelineConfig(ctx context.Context, path string, sets []string) (*config.Pipeline, error) {
	cfg, err := config.LoadContext(ctx, path)
	if err == nil {
		// Every --set first, one validation after: their order does not matter.
		var kvs []config.KeyValue
		for _, s := range sets {
			key, value, ok := strings.Cut(s, "=")
			if !ok {
				return nil, usageError("--set %q: expected key=value, e.g. stream.trigger=once", s)
			}
			kvs = append(kvs, config.KeyValue{Key: key, Value: value})
		}
		err = cfg.OverrideAllContext(ctx, kvs)
	}
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil, &exitError{code: 1, err: fmt.Errorf("%w: %w", errLoadStopped, err)}
	}
	if err == nil {
		err = specs.Check(cfg) // Spark's answer to each join, from the join operator's rules
	}
	if err != nil {
		// A config that is missing, unreadable or invalid is a bad config: exit 2 (README).
		var ee *exitError
		if errors.As(err, &ee) {
			return nil, err
		}
		return nil, &exitError{code: 2, err: err}
	}
	applyMemoryLimit(cfg.MemoryLimit.Bytes, os.LookupEnv, os.DirFS("/"))
	return cfg, nil
}

// applyMemoryLimit sets Go's soft memory limit to limit bytes, unless GOMEMLIMIT is set in
// the environment, which the runtime has applied already and which wins (GOMEMLIMIT=off turns
// the default off). When limit is 0 the limit follows the live heap (heapHeadroom: a quarter
// above its largest, at least 900 MiB) up to defaultMemoryLimit (from the cgroup's and the
// machine's memory under root); it returns that watch, nil for a fixed limit.
func applyMemoryLimit(limit int64, env func(string) (string, bool), root fs.FS) *heapHeadroom {
	if _, set := env("GOMEMLIMIT"); set {
		return nil
	}
	if limit > 0 {
		debug.SetMemoryLimit(limit)
		return nil
	}
	h := &heapHeadroom{floor: headroomFloor, ceiling: defaultMemoryLimit(root),
		setLimit: debug.SetMemoryLimit, liveHeap: liveHeapBytes}
	h.watch()
	return h
}
