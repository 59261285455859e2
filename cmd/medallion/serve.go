package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/medallion-lake/medallion/jobs"
)

func newServeCmd() *cobra.Command {
	return newConfigCmd("serve --config F",
		"Run the cron schedule from the config, with /metrics and /healthz",
		`serve runs every job that has a schedule in the config (cron in UTC, seconds optional, @every),
never two runs of one job at once, across processes too (a lease per job in the lake). It serves
Prometheus metrics at /metrics and a health report at /healthz on serve.listen (loopback by default).
SIGINT or SIGTERM stop it gracefully: running jobs finish or stop at a safe point.`,
		"override a config key, e.g. --set serve.listen=127.0.0.1:9500 (repeatable)",
		func(cmd *cobra.Command, path string) error {
			cfg, err := loadCommandConfig(cmd, path)
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
		})
}
