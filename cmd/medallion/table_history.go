package main

import "github.com/spf13/cobra"

func newTableHistoryCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "history URL",
		Short: "Show the commit history",
		Args:  cobra.ExactArgs(1),
		RunE:  notBuilt("table history"),
	}
}
