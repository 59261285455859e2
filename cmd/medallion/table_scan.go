package main

import "github.com/spf13/cobra"

func newTableScanCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "scan URL",
		Short: "Print the rows",
		Args:  cobra.ExactArgs(1),
		RunE:  notBuilt("table scan"),
	}
}
