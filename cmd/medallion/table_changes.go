package main

import (
	"bufio"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// newTableChangesCmd prints a table's change data feed, as Spark's table_changes does.
func newTableChangesCmd() *cobra.Command {
	var format, fromTimestamp string
	var from, to int64
	var since *time.Time
	cmd := tableSubCmd{
		use:      "changes URL",
		short:    "Print the change data feed (rows inserted, updated and deleted per version)",
		readOnly: true,
		long: "Print the change data feed of a Delta table with delta.enableChangeDataFeed=true, as Spark's\n" +
			"table_changes does: each changed row with the table's columns, then _change_type (insert,\n" +
			"delete, update_preimage, update_postimage), _commit_version and _commit_timestamp, in version\n" +
			"order. Versions --from-version (or the first committed at or after --from-timestamp) to\n" +
			"--to-version (default and at most the latest) are read. --format jsonl prints one JSON\n" +
			"object a line, as table scan does. It fails (exit 1) when the feed was off at a version of\n" +
			"the range, when vacuum deleted a file the range needs, or when a version is out of range\n" +
			"(docs/change-data-feed.md).",
		check: func() error {
			if err := checkFormat(format, "jsonl", "table"); err != nil {
				return err
			}
			switch {
			case from >= 0 && fromTimestamp != "":
				return usageError("--from-version and --from-timestamp are exclusive")
			case from < 0 && fromTimestamp == "":
				return usageError("say where the changes start: --from-version N or --from-timestamp T")
			case fromTimestamp != "":
				ts, err := time.Parse(time.RFC3339Nano, fromTimestamp)
				if err != nil {
					return usageError("--from-timestamp %q: want RFC 3339 (2024-03-01T08:00:00Z): %v", fromTimestamp, err)
				}
				since = &ts
			}
			if to >= 0 && from >= 0 && to < from {
				return usageError("--to-version %d is before --from-version %d", to, from)
			}
			return nil
		},
		run: func(cmd *cobra.Command, t *table.Table, _ string) error {
			ctx := cmd.Context()
			start := from
			if since != nil {
				v, err := t.VersionAt(ctx, *since)
				if err != nil {
					return fmt.Errorf("--from-timestamp %s: %w", fromTimestamp, err)
				}
				start = v
			}
			feed, err := t.OpenChanges(ctx, start, to)
			if err != nil {
				return err
			}
			out := bufio.NewWriter(cmd.OutOrStdout())
			defer out.Flush()
			var tw *tabwriter.Writer
			if format == "table" {
				tw = tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
				writeTableHeader(tw, feed.Schema())
				defer tw.Flush()
			}
			// A file at a time, as it is read: the memory follows the largest file, not the
			// largest version.
			var line []byte
			first, last := feed.Range()
			for v := first; v <= last; v++ {
				vc, err := feed.Plan(ctx, v)
				if err != nil {
					return err
				}
				for _, cf := range vc.Files {
					b, err := feed.ReadFile(ctx, vc, cf)
					if err != nil {
						return err
					}
					for i := 0; i < b.Len(); i++ {
						if tw != nil {
							writeTableRow(tw, b, i)
							continue
						}
						line = pq.AppendJSONRow(line[:0], b, i)
						line = append(line, '\n')
						if _, err := out.Write(line); err != nil {
							return err
						}
					}
				}
			}
			return nil
		},
	}.command()
	cmd.Flags().Int64Var(&from, "from-version", -1, "first version whose changes are printed")
	cmd.Flags().Int64Var(&to, "to-version", -1, "last version whose changes are printed (default: the latest)")
	cmd.Flags().StringVar(&fromTimestamp, "from-timestamp", "", "start at the first version committed at or after this RFC 3339 time")
	cmd.Flags().StringVar(&format, "format", "jsonl", "output format: jsonl or table")
	return cmd
}

// writeTableHeader prints the column names as the first row of --format table.
func writeTableHeader(tw *tabwriter.Writer, schema *txlog.StructType) {
	for k, f := range schema.Fields {
		if k > 0 {
			fmt.Fprint(tw, "\t")
		}
		fmt.Fprint(tw, f.Name)
	}
	fmt.Fprintln(tw)
}
