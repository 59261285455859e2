package main

import "github.com/spf13/cobra"

func newDemoCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Generate sample events into a local lake, run every job once, show the result",
		Args:  cobra.NoArgs,
		RunE:  notBuilt("demo"),
	}
	cmd.Flags().String("lake", "./lake", "directory of the embedded local lake")
	return cmd
}
