package main

import "github.com/spf13/cobra"

func newTableOptimizeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "optimize URL",
		Short: "Compact small files",
		Args:  cobra.ExactArgs(1),
		RunE:  notBuilt("table optimize"),
	}
}
