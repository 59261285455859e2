package main

import (
	"fmt"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/spf13/cobra"
)

func newTableOptimizeCmd() *cobra.Command {
	var target int64
	cmd := &cobra.Command{
		Use:   "optimize URL",
		Short: "Compact small files",
		Long: "Bin-pack the files of each partition that are smaller than the target size into files of at most\n" +
			"the target size, in one commit with dataChange=false (streaming readers skip it). It settles: run\n" +
			"again on an unchanged table, it rewrites nothing and prints \"nothing to compact\".",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if target < 0 {
				return usageError("--target-size %d: must be positive", target)
			}
			ctx := cmd.Context()
			t, err := openTable(ctx, args[0], false)
			if err != nil {
				return err
			}
			defer t.Bucket().Close()
			res, err := t.Optimize(ctx, table.OptimizeOptions{TargetSize: target})
			if err != nil {
				return fmt.Errorf("table %s: %w", args[0], err)
			}
			if res.Version < 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "nothing to compact")
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "version %d: %s (%s) compacted into %s (%s)\n",
				res.Version, count(int64(res.FilesRemoved), "file"), count(res.BytesRemoved, "byte"), count(int64(res.FilesAdded), "file"), count(res.BytesAdded, "byte"))
			return nil
		},
	}
	cmd.Flags().Int64Var(&target, "target-size", pq.DefaultTargetFileSize, "target file size in bytes")
	return cmd
}
