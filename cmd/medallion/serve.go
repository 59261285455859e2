package main

import "github.com/spf13/cobra"

func newServeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve --config F",
		Short: "Run the cron schedule from the config, with /metrics and /healthz",
		Args:  cobra.NoArgs,
		RunE:  notBuilt("serve"),
	}
	cmd.Flags().String("config", "", "pipeline config (YAML)")
	return cmd
}
