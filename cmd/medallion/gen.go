package main

import "github.com/spf13/cobra"

func newGenCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gen --config F --events N [--seed S] [--files K]",
		Short: "Write synthetic events into the landing prefix",
		Args:  cobra.NoArgs,
		RunE:  notBuilt("gen"),
	}
	cmd.Flags().String("config", "", "pipeline config (YAML)")
	cmd.Flags().Int64("events", 0, "number of events to generate")
	cmd.Flags().Int64("seed", 1, "random seed (same seed, same objects)")
	cmd.Flags().Int("files", 1, "number of landing objects")
	return cmd
}
