package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/medallion-lake/medallion/table"
)

func newTableHistoryCmd() *cobra.Command {
	var limit int
	var format string
	cmd := tableSubCmd{
		use:      "history URL",
		short:    "Show the commit history, newest first",
		readOnly: true,
		check:    func() error { return checkFormat(format, "table", "jsonl") },
		run: func(cmd *cobra.Command, t *table.Table, _ string) error {
			hist, err := t.Log().History(cmd.Context(), limit)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if format == "jsonl" {
				enc := json.NewEncoder(out)
				enc.SetEscapeHTML(false)
				for _, h := range hist {
					if err := enc.Encode(map[string]any{"version": h.Version, "timestamp": h.Timestamp, "commitInfo": h.CommitInfo}); err != nil {
						return err
					}
				}
				return nil
			}
			tw := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "VERSION\tTIMESTAMP\tOPERATION\tPARAMETERS\tREAD VERSION\tISOLATION\tBLIND APPEND\tENGINE")
			for _, h := range hist {
				ci := h.CommitInfo
				if ci == nil {
					fmt.Fprintf(tw, "%d\t%s\t\t\t\t\t\t\n", h.Version, h.Timestamp.Format(time.RFC3339Nano))
					continue
				}
				read, blind := "", ""
				if ci.ReadVersion != nil {
					read = fmt.Sprint(*ci.ReadVersion)
				}
				if ci.IsBlindAppend != nil {
					blind = fmt.Sprint(*ci.IsBlindAppend)
				}
				var params []string
				for _, k := range slices.Sorted(maps.Keys(ci.OperationParameters)) {
					params = append(params, k+"="+plainJSON(ci.OperationParameters[k]))
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", h.Version, h.Timestamp.Format(time.RFC3339Nano), ci.Operation,
					strings.Join(params, " "), read, ci.IsolationLevel, blind, ci.EngineInfo)
			}
			return tw.Flush()
		},
	}.command()
	cmd.Flags().IntVar(&limit, "limit", 0, "show at most this many commits (0: all)")
	cmd.Flags().StringVar(&format, "format", "table", "output format: table or jsonl")
	return cmd
}

// plainJSON re-encodes a commitInfo value without HTML escaping: Go's encoder wrote the MERGE
// predicate's "<=>" as "\u003c=\u003e", which is valid JSON but not what people read.
func plainJSON(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
