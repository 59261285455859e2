package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/medallion-lake/medallion/table"
)

func newTableCheckpointCmd() *cobra.Command {
	var vf tableVersionFlags
	var cleanup bool
	cmd := tableSubCmd{
		use:   "checkpoint URL",
		short: "Write a checkpoint (and optionally clean up expired log files)",
		long: "Write a classic Parquet checkpoint of the latest version (or of --version/--timestamp) and\n" +
			"update _delta_log/_last_checkpoint. With --cleanup, also delete commits and checkpoints older\n" +
			"than the newest checkpoint outside delta.logRetentionDuration. Data files are never touched.",
		run: func(cmd *cobra.Command, t *table.Table, url string) error {
			ctx, l := cmd.Context(), t.Log()
			snap, err := vf.snapshot(ctx, l)
			if err != nil {
				return err
			}
			if err := l.Checkpoint(ctx, snap); err != nil {
				return fmt.Errorf("table %s: %w", url, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "checkpoint written at version %d (%d live files)\n", snap.Version(), len(snap.Files()))
			if cleanup {
				n, err := l.Cleanup(ctx, snap)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "log cleanup deleted %s\n", count(int64(n), "file"))
			}
			return nil
		},
	}.command()
	vf.register(cmd)
	cmd.Flags().BoolVar(&cleanup, "cleanup", false, "delete expired log files after the checkpoint")
	return cmd
}
