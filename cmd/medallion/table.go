package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/bucketurl"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// newTableCmd groups the table subcommands; each lives in its own table_*.go file.
func newTableCmd() *cobra.Command {
	table := &cobra.Command{
		Use:   "table",
		Short: "Inspect and maintain any Delta table (ours, Spark's, delta-rs's)",
	}
	table.AddCommand(
		newTableHistoryCmd(),
		newTableDescribeCmd(),
		newTableScanCmd(),
		newTableCheckpointCmd(),
		newTableVacuumCmd(),
		newTableOptimizeCmd(),
		newTableChangesCmd(),
	)
	for _, sub := range table.Commands() {
		run := sub.RunE
		sub.RunE = func(cmd *cobra.Command, args []string) error {
			err := run(cmd, args)
			if err != nil && len(args) > 0 {
				err = explainTableNotFound(cmd.Context(), args[0], err)
			}
			return err
		}
	}
	return table
}

// tableSubCmd describes a table subcommand: one over the table at its one argument, URL.
type tableSubCmd struct {
	use, short, long string
	// readOnly opens the table's bucket so that nothing is created and writes are refused:
	// inspecting a lake must not write to it.
	readOnly bool
	// check validates the flags before the table is opened, so that a bad command line is
	// said first; nil: nothing to check.
	check func() error
	// run works on the opened table; its bucket is closed after it.
	run func(cmd *cobra.Command, t *table.Table, url string) error
}

// command builds the cobra command.
func (s tableSubCmd) command() *cobra.Command {
	return &cobra.Command{Use: s.use, Short: s.short, Long: s.long, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if s.check != nil {
				if err := s.check(); err != nil {
					return err
				}
			}
			t, err := openTable(cmd.Context(), args[0], s.readOnly)
			if err != nil {
				return err
			}
			defer t.Bucket().Close()
			return s.run(cmd, t, args[0])
		}}
}

// openTable opens the table at url; readOnly creates nothing and refuses writes.
func openTable(ctx context.Context, url string, readOnly bool) (*table.Table, error) {
	b, err := bucketurl.Open(ctx, url, bucketurl.Options{ReadOnly: readOnly})
	if errors.Is(err, fs.ErrNotExist) {
		// The backend's "open root: ... no such file or directory" reads like our bug.
		return nil, fmt.Errorf("%s: %w", url, txlog.ErrTableNotFound) // explainTableNotFound says more
	}
	if err != nil {
		return nil, err
	}
	// Deletion vectors of shallow clones stay with the source table: reach them read-only,
	// with the same S3 settings from the environment.
	openURL := func(ctx context.Context, u string) (objstore.Bucket, error) {
		return bucketurl.Open(ctx, u, bucketurl.Options{ReadOnly: true})
	}
	return table.Open(b, table.Options{OpenURL: openURL}), nil
}

// checkFormat refuses a --format that is none of those the command prints.
func checkFormat(format string, formats ...string) error {
	if slices.Contains(formats, format) {
		return nil
	}
	return usageError("--format %q: want %s", format, strings.Join(formats, " or "))
}

// tableVersionFlags are the time-travel flags shared by the table commands that read.
type tableVersionFlags struct {
	version   int64
	timestamp string
}

func (f *tableVersionFlags) register(cmd *cobra.Command) {
	cmd.Flags().Int64Var(&f.version, "version", -1, "read this table version (time travel)")
	cmd.Flags().StringVar(&f.timestamp, "timestamp", "", "read the latest version committed at or before this RFC 3339 time")
}

// selected returns the version or the time the flags select; both nil: the latest version.
func (f *tableVersionFlags) selected() (*int64, *time.Time, error) {
	if f.version >= 0 && f.timestamp != "" {
		return nil, nil, usageError("--version and --timestamp are exclusive")
	}
	if f.version >= 0 {
		v := f.version
		return &v, nil, nil
	}
	if f.timestamp != "" {
		t, err := time.Parse(time.RFC3339Nano, f.timestamp)
		if err != nil {
			return nil, nil, usageError("--timestamp %q: want RFC 3339 (2024-03-01T08:00:00Z): %v", f.timestamp, err)
		}
		return nil, &t, nil
	}
	return nil, nil, nil
}

// scanOptions selects the version the flags name.
func (f *tableVersionFlags) scanOptions() (table.ScanOptions, error) {
	v, ts, err := f.selected()
	return table.ScanOptions{Version: v, Timestamp: ts}, err
}

// snapshot loads the latest snapshot, or the one the flags select.
func (f *tableVersionFlags) snapshot(ctx context.Context, l *txlog.Log) (*txlog.Snapshot, error) {
	v, ts, err := f.selected()
	switch {
	case err != nil:
		return nil, err
	case v != nil:
		return l.SnapshotAt(ctx, *v)
	case ts != nil:
		return l.SnapshotAsOf(ctx, *ts)
	}
	return l.Snapshot(ctx)
}
