package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newTableCheckpointCmd() *cobra.Command {
	var vf tableVersionFlags
	var cleanup bool
	cmd := &cobra.Command{
		Use:   "checkpoint URL",
		Short: "Write a checkpoint (and optionally clean up expired log files)",
		Long: "Write a classic Parquet checkpoint of the latest version (or of --version/--timestamp) and\n" +
			"update _delta_log/_last_checkpoint. With --cleanup, also delete commits and checkpoints older\n" +
			"than the newest checkpoint outside delta.logRetentionDuration. Data files are never touched.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			l, err := openLog(ctx, args[0], false)
			if err != nil {
				return err
			}
			defer l.Bucket().Close()
			snap, err := loadSnapshot(ctx, l, vf)
			if err != nil {
				return err
			}
			if err := l.Checkpoint(ctx, snap); err != nil {
				return fmt.Errorf("table %s: %w", args[0], err)
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
	}
	vf.register(cmd)
	cmd.Flags().BoolVar(&cleanup, "cleanup", false, "delete expired log files after the checkpoint")
	return cmd
}
