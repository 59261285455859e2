package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/jobs"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/report"
)

func newLagCmd() *cobra.Command {
	var rf rangeFlags
	cmd := newConfigCmd("lag --config F [--from T --to T | --since 24h] [--json] [--svg lag.svg]",
		"Show the lag distribution and the recommended watermark",
		`lag measures lag = _ingest_time - event time over the bronze rows whose event time is in the range
(all rows by default): avg, p50/p90/p95/p99 (within 0.5%), min and max, a histogram, the share of
rows that candidate watermarks (1x, 2x, 3x p95, the current one, the recommended one) would have
made late, the recommended watermark (2 x p95 rounded up to a nice value), and the late rows per
day in each quarantine table. --json prints the same figures as one JSON object; --svg also
writes the histogram as an SVG chart with p50, p95, p99 and the watermarks marked.

The ingest time is when ingest read the row, so the lag includes the time objects waited in the
landing prefix: with ingest every minute that wait is at most a minute.`,
		"override a config key, e.g. --set stream.watermark=5m (repeatable)",
		func(cmd *cobra.Command, path string) error {
			opts, cfg, lake, err := openRangeReadOnly(cmd, &rf, path, time.Now())
			if err != nil {
				return err
			}
			defer lake.Close()
			ctx := cmd.Context()
			only, err := onlySource(cmd, cfg, false)
			if err != nil {
				return err
			}
			if cfg.MultiSource() && only == "" {
				if svg, _ := cmd.Flags().GetString("svg"); svg != "" {
					return usageError("lag: --svg draws one source's histogram: give --source too (%s has several)", path)
				}
				return lagSources(cmd, cfg, lake, opts)
			}
			if only != "" {
				cfg, _ = cfg.ForSource(only)
			}
			rep, err := report.Lag(ctx, lake, cfg, opts)
			if errors.Is(err, report.ErrBadRange) {
				return usageError("lag: %v", err)
			}
			if err != nil {
				return err
			}
			rep.Kafka = jobs.KafkaLagReport(ctx, jobs.Env{Config: cfg, Lake: lake})
			if svg, _ := cmd.Flags().GetString("svg"); svg != "" {
				if err := os.WriteFile(svg, []byte(report.LagChart(rep).SVG()), 0o644); err != nil {
					return fmt.Errorf("lag: --svg: %w", err)
				}
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				return printJSON(cmd.OutOrStdout(), rep)
			}
			if err := rep.WriteText(cmd.OutOrStdout()); err != nil || rep.Kafka == nil {
				return err
			}
			return rep.Kafka.WriteText(cmd.OutOrStdout())
		})
	rf.register(cmd)
	cmd.Flags().Bool("json", false, "print the figures as one JSON object")
	cmd.Flags().String("svg", "", "also write the lag histogram as SVG to this file")
	cmd.Flags().String("source", "", "only this source (default: every source, each under its name)")
	return cmd
}

// sourceLag is one source's lag in `lag --json` of a several-source config.
type sourceLag struct {
	Source string            `json:"source"`
	Lag    *report.LagReport `json:"lag"`
	// Problem says why the lag was not measured (no bronze table yet).
	Problem string           `json:"problem,omitempty"`
	Kafka   *report.KafkaLag `json:"kafka,omitempty"`
}

// lagSources is `lag` over every source of a several-source config: each measured on its own
// bronze table, printed under its name (or as {"sources": [...]} with --json).
func lagSources(cmd *cobra.Command, cfg *config.Pipeline, lake objstore.Bucket, opts report.LagOptions) error {
	ctx := cmd.Context()
	var out []sourceLag
	for _, s := range cfg.AllSources() {
		v, _ := cfg.ForSource(s.Name)
		sl := sourceLag{Source: s.Name}
		rep, err := report.Lag(ctx, lake, v, opts)
		switch {
		case errors.Is(err, report.ErrBadRange):
			return usageError("lag: %v", err)
		case errors.Is(err, report.ErrNoBronze):
			sl.Problem = "no bronze table yet: run ingest first"
		case err != nil:
			return fmt.Errorf("source %s: %w", s.Name, err)
		default:
			sl.Lag = rep
		}
		sl.Kafka = jobs.KafkaLagReport(ctx, jobs.Env{Config: v, Lake: lake})
		out = append(out, sl)
	}
	return printPerSource(cmd, out, func(sl sourceLag) string { return sl.Source }, func(w io.Writer, sl sourceLag) error {
		if sl.Lag == nil {
			_, err := fmt.Fprintln(w, sl.Problem)
			return err
		}
		if err := sl.Lag.WriteText(w); err != nil {
			return err
		}
		if sl.Kafka != nil {
			return sl.Kafka.WriteText(w)
		}
		return nil
	})
}

// printPerSource prints a several-source result: with --json one object {"sources": out}, else
// each source's text under a "== source NAME ==" heading.
func printPerSource[T any](cmd *cobra.Command, out []T, name func(T) string, text func(io.Writer, T) error) error {
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
		return printJSON(cmd.OutOrStdout(), map[string]any{"sources": out})
	}
	w := cmd.OutOrStdout()
	for i, item := range out {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "== source %s ==\n", name(item))
		if err := text(w, item); err != nil {
			return err
		}
	}
	return nil
}

// openRangeReadOnly is how the commands that only read (lag, report, check) start: the
// event-time range of their flags first (a bad range is a bad command line, said before
// anything about the lake; now ends a --since range), then the config at path with the
// command's --set overrides, and its lake opened read-only. The caller closes the lake.
func openRangeReadOnly(cmd *cobra.Command, rf *rangeFlags, path string, now time.Time) (report.LagOptions, *config.Pipeline, objstore.Bucket, error) {
	rng, err := rf.lagOptions(subPath(cmd), now)
	if err != nil {
		return rng, nil, nil, err
	}
	cfg, err := loadCommandConfig(cmd, path)
	if err != nil {
		return rng, nil, nil, err
	}
	if err := refuseEmptyLake(cmd.Context(), cfg, path); err != nil {
		return rng, nil, nil, err // a typo'd lake: say so, not "no bronze table yet"
	}
	lake, err := jobs.OpenLakeReadOnly(cmd.Context(), cfg)
	if err != nil {
		return rng, nil, nil, err
	}
	return rng, cfg, lake, nil
}

// rangeFlags are --from/--to/--since: an event-time range.
type rangeFlags struct {
	from, to, since string
}

func (f *rangeFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.from, "from", "", "first event time (RFC 3339, 'YYYY-MM-DD HH:MM:SS' or 'YYYY-MM-DD', UTC)")
	cmd.Flags().StringVar(&f.to, "to", "", "end of the event-time range, exclusive (same forms as --from)")
	cmd.Flags().StringVar(&f.since, "since", "", "the last span of event time up to now, e.g. 24h or 7d")
}

// lagOptions turns the flags into a range; now ends a --since range.
func (f *rangeFlags) lagOptions(cmd string, now time.Time) (report.LagOptions, error) {
	var opts report.LagOptions
	if f.since != "" {
		if f.from != "" || f.to != "" {
			return opts, usageError("%s: --since excludes --from and --to", cmd)
		}
		d, err := config.ParseDuration(f.since)
		if err != nil || d.Duration <= 0 {
			return opts, usageError("%s: --since %q: want a positive duration such as 24h or 7d", cmd, f.since)
		}
		return report.LagOptions{From: now.Add(-d.Duration), To: now}, nil
	}
	for _, p := range []struct {
		flag, v string
		dst     *time.Time
	}{{"--from", f.from, &opts.From}, {"--to", f.to, &opts.To}} {
		if p.v == "" {
			continue
		}
		t, err := parseFlagTime(p.v)
		if err != nil {
			return opts, usageError("%s: %s %q: want RFC 3339 (2024-05-01T08:00:00Z), 'YYYY-MM-DD HH:MM:SS' or 'YYYY-MM-DD'", cmd, p.flag, p.v)
		}
		*p.dst = t
	}
	// A bad range is a bad command line, said before anything about the lake (report.Lag
	// checks it too, for its other callers).
	if !opts.From.IsZero() && !opts.To.IsZero() && !opts.To.After(opts.From) {
		return opts, usageError("%s: %v: --to %s is not after --from %s", cmd, report.ErrBadRange,
			opts.To.UTC().Format(time.RFC3339), opts.From.UTC().Format(time.RFC3339))
	}
	return opts, nil
}

// parseFlagTime reads the timestamp forms records accept, or a bare date (UTC midnight).
func parseFlagTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	us, err := bronze.ParseTimestampMicros([]byte(s))
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMicro(us).UTC(), nil
}
