package main

import "github.com/spf13/cobra"

func newTableCheckpointCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "checkpoint URL",
		Short: "Write a checkpoint",
		Args:  cobra.ExactArgs(1),
		RunE:  notBuilt("table checkpoint"),
	}
}
