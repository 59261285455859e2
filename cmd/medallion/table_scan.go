package main

import (
	"bufio"
	"fmt"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/spf13/cobra"
)

func newTableScanCmd() *cobra.Command {
	var vf tableVersionFlags
	var format, columns string
	var limit int
	var opts table.ScanOptions
	cmd := tableSubCmd{
		use:      "scan URL",
		short:    "Print the rows",
		readOnly: true,
		long: "Print the rows of a Delta table. --format jsonl prints one JSON object a line: timestamps in\n" +
			"RFC 3339 UTC with microseconds when non-zero, structs as objects, null as null.",
		check: func() error {
			if err := checkFormat(format, "jsonl", "table"); err != nil {
				return err
			}
			var err error
			if opts, err = vf.scanOptions(); err != nil {
				return err
			}
			if columns != "" {
				opts.Columns = strings.Split(columns, ",")
			}
			return nil
		},
		run: func(cmd *cobra.Command, t *table.Table, _ string) error {
			ctx := cmd.Context()
			out := bufio.NewWriter(cmd.OutOrStdout())
			defer out.Flush()
			var tw *tabwriter.Writer
			if format == "table" {
				tw = tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
			}
			n, header := 0, false
			var line []byte
			for b, err := range t.Scan(ctx, opts) {
				if err != nil {
					return err
				}
				if tw != nil && !header {
					for k, f := range b.Schema.Fields {
						if k > 0 {
							fmt.Fprint(tw, "\t")
						}
						fmt.Fprint(tw, f.Name)
					}
					fmt.Fprintln(tw)
					header = true
				}
				for i := 0; i < b.Len(); i++ {
					if limit >= 0 && n >= limit {
						break
					}
					n++
					if tw == nil {
						line = pq.AppendJSONRow(line[:0], b, i)
						line = append(line, '\n')
						if _, err := out.Write(line); err != nil {
							return err
						}
						continue
					}
					writeTableRow(tw, b, i)
				}
			}
			if tw != nil {
				return tw.Flush()
			}
			return nil
		},
	}.command()
	vf.register(cmd)
	cmd.Flags().StringVar(&format, "format", "jsonl", "output format: jsonl or table")
	cmd.Flags().StringVar(&columns, "columns", "", "comma-separated columns to print (default: all)")
	cmd.Flags().IntVar(&limit, "limit", -1, "print at most this many rows")
	return cmd
}

// humanFloat writes a float as people do: without binary noise (24709.9, not
// 24709.90000000002: 12 significant digits for a double, 6 for a float) and without an exponent
// (1500000, not 1.5e+06). jsonl keeps the exact value.
func humanFloat(v float64, bits int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	digits := 12
	if bits == 32 {
		digits = 6
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', digits, 64), 64)
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// writeTableRow prints one row as tab-separated cells in the JSON rendering, with strings
// unquoted and null as NULL.
func writeTableRow(tw *tabwriter.Writer, b *pq.Batch, i int) {
	var cell []byte
	for k, c := range b.Columns {
		if k > 0 {
			fmt.Fprint(tw, "\t")
		}
		switch {
		case c.IsNull(i):
			fmt.Fprint(tw, "NULL")
		case b.Schema.Fields[k].Type.TypeName() == "string":
			q := strconv.Quote(c.StringAt(i))
			fmt.Fprint(tw, q[1:len(q)-1])
		case c.Kind == pq.KindFloat64:
			fmt.Fprint(tw, humanFloat(c.Float64[i], 64))
		case c.Kind == pq.KindFloat32:
			fmt.Fprint(tw, humanFloat(float64(c.Float32[i]), 32))
		default:
			cell = pq.AppendJSONValue(cell[:0], c, i)
			if len(cell) >= 2 && cell[0] == '"' {
				cell = cell[1 : len(cell)-1] // timestamps, dates, binary
			}
			tw.Write(cell)
		}
	}
	fmt.Fprintln(tw)
}
