package main

import "github.com/spf13/cobra"

func newTableVacuumCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "vacuum URL",
		Short: "Remove unreferenced files older than the retention",
		Args:  cobra.ExactArgs(1),
		RunE:  notBuilt("table vacuum"),
	}
}
