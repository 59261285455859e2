package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/report"
)

func newCheckCmd() *cobra.Command {
	var rf rangeFlags
	cmd := newConfigCmd("check --config F [--since 24h | --from T --to T] [--bronze] [--samples N] [--json]",
		"Evaluate the config's expectations over rows already in the lake (writes nothing)",
		`check evaluates every expectation of the config over the silver rows whose event time is in the
range (all rows by default) and prints, per expectation, the rows that pass and fail, what the
stream would have done (warn, drop, FAIL the batch) and a few violating rows. --bronze judges the
bronze table instead, on the rows the stream's other rules keep (required columns, event time,
max_future_skew): use it to try a new expectation before the stream applies it.
current_timestamp() is the time check runs. Nothing in the lake is written.`,
		"override a config key, e.g. --set expectations[0].expect='amount > 0' (repeatable)",
		func(cmd *cobra.Command, path string) error {
			now := time.Now()
			rng, cfg, lake, err := openRangeReadOnly(cmd, &rf, path, now)
			if err != nil {
				return err
			}
			defer lake.Close()
			ctx := cmd.Context()
			bronzeFlag, _ := cmd.Flags().GetBool("bronze")
			samples, _ := cmd.Flags().GetInt("samples")
			only, err := onlySource(cmd, cfg, false)
			if err != nil {
				return err
			}
			// A landing prefix that never had an object while bronze has no rows: most often a
			// typo in landing.path; there is nothing to check, and saying "0 rows pass" would
			// read as success.
			if empty := warnEmptyLanding(ctx, lake, cfg, slog.New(slog.DiscardHandler)); len(empty) > 0 {
				return fmt.Errorf("check: lake %s: no object under %s and no rows in bronze yet: is landing.path in %s right? (ingest has nothing to read there)",
					cfg.Lake, strings.Join(empty, ", "), path)
			}
			copts := report.CheckOptions{From: rng.From, To: rng.To, Bronze: bronzeFlag, Now: now, Samples: samples}
			if cfg.MultiSource() && only == "" {
				return checkSources(cmd, cfg, lake, copts, path)
			}
			if only != "" {
				cfg, _ = cfg.ForSource(only)
			}
			rep, err := report.Check(ctx, lake, cfg, copts)
			switch {
			case errors.Is(err, report.ErrBadRange):
				return usageError("check: %v", err)
			case errors.Is(err, report.ErrNoExpectations):
				return usageError("check: %s declares no expectations (see docs/expectations.md)", path)
			case err != nil:
				return err
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				return printJSON(cmd.OutOrStdout(), rep)
			}
			return rep.WriteText(cmd.OutOrStdout())
		})
	rf.register(cmd)
	cmd.Flags().Bool("bronze", false, "judge the bronze table instead of silver")
	cmd.Flags().Int("samples", 3, "violating rows to print per expectation")
	cmd.Flags().Bool("json", false, "print the verdicts as one JSON object")
	cmd.Flags().String("source", "", "only this source (default: every source with expectations)")
	return cmd
}

// checkSources is `check` over every source of a several-source config that declares
// expectations, each judged on its own tables, printed under its name (or as
// {"sources": [{"source": name, ...}]} with --json).
func checkSources(cmd *cobra.Command, cfg *config.Pipeline, lake objstore.Bucket, opts report.CheckOptions, path string) error {
	type sourceCheck struct {
		Source string              `json:"source"`
		Check  *report.CheckReport `json:"check"`
	}
	var out []sourceCheck
	for _, s := range cfg.AllSources() {
		if len(s.Expectations) == 0 {
			continue
		}
		v, _ := cfg.ForSource(s.Name)
		rep, err := report.Check(cmd.Context(), lake, v, opts)
		switch {
		case errors.Is(err, report.ErrBadRange):
			return usageError("check: %v", err)
		case err != nil:
			return fmt.Errorf("source %s: %w", s.Name, err)
		}
		out = append(out, sourceCheck{Source: s.Name, Check: rep})
	}
	if len(out) == 0 {
		return usageError("check: %s declares no expectations on any source (see docs/expectations.md)", path)
	}
	return printPerSource(cmd, out, func(sc sourceCheck) string { return sc.Source }, func(w io.Writer, sc sourceCheck) error {
		return sc.Check.WriteText(w)
	})
}
