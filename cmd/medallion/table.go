package main

import "github.com/spf13/cobra"

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
