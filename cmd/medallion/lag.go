package main

import "github.com/spf13/cobra"

func newLagCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lag --config F",
		Short: "Show the lag distribution and the recommended watermark",
		Args:  cobra.NoArgs,
		RunE:  notBuilt("lag"),
	}
	cmd.Flags().String("config", "", "pipeline config (YAML)")
	return cmd
}
