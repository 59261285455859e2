package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
)

func newTableOptimizeCmd() *cobra.Command {
	var target int64
	cmd := tableSubCmd{
		use:   "optimize URL",
		short: "Compact small files",
		long: "Bin-pack the files of each partition that are smaller than the target size into files of at most\n" +
			"the target size, in one commit with dataChange=false (streaming readers skip it). It settles: run\n" +
			"again on an unchanged table, it rewrites nothing and prints \"nothing to compact\".",
		check: func() error {
			if target < 0 {
				return usageError("--target-size %d: must be positive", target)
			}
			return nil
		},
		run: func(cmd *cobra.Command, t *table.Table, url string) error {
			res, err := t.Optimize(cmd.Context(), table.OptimizeOptions{TargetSize: target})
			if err != nil {
				return fmt.Errorf("table %s: %w", url, err)
			}
			if res.Version < 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "nothing to compact")
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "version %d: %s (%s) compacted into %s (%s)\n",
				res.Version, count(int64(res.FilesRemoved), "file"), count(res.BytesRemoved, "byte"), count(int64(res.FilesAdded), "file"), count(res.BytesAdded, "byte"))
			return nil
		},
	}.command()
	cmd.Flags().Int64Var(&target, "target-size", pq.DefaultTargetFileSize, "target file size in bytes")
	return cmd
}
