package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/medallion-lake/medallion/jobs"
	"github.com/medallion-lake/medallion/report"
)

func newReportCmd() *cobra.Command {
	var rf rangeFlags
	cmd := newConfigCmd("report --config F --html report.html [--json] [--from T --to T | --since 24h]",
		"Write a self-contained HTML status report (lag, tables, stream progress)",
		`report writes one HTML file with inline CSS and SVG charts (no script, nothing fetched: it works
offline and can be attached to a ticket): the lag distribution with p50/p95/p99 and the current and
recommended watermarks, late rows per day per quarantine, every pipeline table's version, files,
size and last operation, and the stream's progress (input and processing rate, batch duration,
late rows per batch and per hour, state rows). --from/--to/--since limit the lag to an event-time
range.`,
		"override a config key (repeatable)",
		func(cmd *cobra.Command, path string) error {
			out, _ := cmd.Flags().GetString("html")
			asJSON, _ := cmd.Flags().GetBool("json")
			if out == "" && !asJSON {
				return usageError("report: --html FILE or --json is required")
			}
			now := time.Now()
			lagOpts, cfg, lake, err := openRangeReadOnly(cmd, &rf, path, now)
			if err != nil {
				return err
			}
			defer lake.Close()
			ctx := cmd.Context()
			maxBatches, _ := cmd.Flags().GetInt("batches")
			rep, err := report.Build(ctx, lake, cfg, report.ReportOptions{Lag: lagOpts, Now: now, MaxBatches: maxBatches})
			if errors.Is(err, report.ErrBadRange) {
				return usageError("report: %v", err)
			}
			if err != nil {
				return err
			}
			rep.KafkaLag = jobs.KafkaLagReport(ctx, jobs.Env{Config: cfg, Lake: lake})
			if asJSON {
				if err := printJSON(cmd.OutOrStdout(), rep); err != nil {
					return err
				}
			}
			if out == "" {
				return nil
			}
			if err := writeFileAtomic(out, rep.WriteHTML); err != nil {
				return fmt.Errorf("report: --html: %w", err)
			}
			if !asJSON {
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", out)
			}
			return err
		})
	cmd.Flags().String("html", "", "the HTML file to write")
	cmd.Flags().Bool("json", false, "print the report's figures as one JSON object on stdout")
	cmd.Flags().Int("batches", report.DefaultMaxBatches, "chart at most this many of the latest stream batches")
	rf.register(cmd)
	return cmd
}

// writeFileAtomic writes through a temporary file in the same folder and renames it, so that
// a process killed midway never leaves a half-written file under the name.
func writeFileAtomic(name string, write func(w io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if err = write(f); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), name)
}
