package main

import "github.com/spf13/cobra"

func newTableDescribeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "describe URL",
		Short: "Show version, protocol, schema, partitioning, files and properties",
		Args:  cobra.ExactArgs(1),
		RunE:  notBuilt("table describe"),
	}
}
