package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/medallion-lake/medallion/jobs"
)

func newServeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve --config F",
		Short: "Run the cron schedule from the config, with /metrics and /healthz",
		Long: `serve runs every job that has a schedule in the config (cron in UTC, seconds optional, @every),
never two runs of one job at once, across processes too (a lease per job in the lake). It serves
Prometheus metrics at /metrics and a health report at /healthz on serve.listen (loopback by default).
SIGINT or SIGTERM stop it gracefully: running jobs finish or stop at a safe point.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, _ := cmd.Flags().GetString("config")
			if path == "" {
				return usageError("serve: --config is required")
			}
			sets, _ := cmd.Flags().GetStringArray("set")
			cfg, err := loadPipelineConfig(cmd.Context(), path, sets)
			if errors.Is(err, errLoadStopped) {
				// SIGINT and SIGTERM stop serve gracefully, before its start as after it: exit 0.
				fmt.Fprintln(cmd.ErrOrStderr(), "medallion: serve:", errors.Unwrap(err))
				return nil
			}
			if err != nil {
				return err
			}
			logger := newLogger(cfg.Log, cmd.ErrOrStderr())
			// serve may start before the first object lands (event-driven ingest waits for
			// it), so an empty lake is not refused as run refuses it: a warning names it.
			if err := refuseEmptyLake(cmd.Context(), cfg, path); errors.Is(err, errNoLake) {
				logger.Warn("serve: " + errors.Unwrap(err).Error())
			}
			env, err := jobs.NewEnv(cmd.Context(), cfg, logger)
			if err != nil {
				return err
			}
			defer env.Lake.Close()
			srv, err := jobs.NewServer(env)
			if err != nil {
				return err
			}
			return srv.Run(cmd.Context())
		},
	}
	cmd.Flags().String("config", "", "pipeline config (YAML)")
	cmd.Flags().StringArray("set", nil, "override a config key, e.g. --set serve.listen=127.0.0.1:9500 (repeatable)")
	return cmd
}
