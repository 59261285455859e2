package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/jobs"
)

// addPublishFlags registers run publish's --sink.
func addPublishFlags(cmd *cobra.Command) {
	cmd.Flags().String("sink", "", "only this sink (default: every sink of the config)")
	cmd.Long = `run publish sends the new changes of each sink's table (sinks: in the config) to its Kafka
topic, exactly once: one record per changed row, keyed by the row's window and group (a gold
table) or by the row, with the new row as JSON and a tombstone for a row that left the table.
It starts where the sink's last committed transaction ended, so it may be killed and run again
at any time. Brokers: the sink's brokers or KAFKA_BROKERS; TLS and SASL from KAFKA_TLS* and
KAFKA_SASL_* (docs/kafka.md). The summary lists, per sink, the versions read and the records
published (docs/change-data-feed.md).`
}

// sinkFlag is --sink (on run publish), checked against the config before anything runs: an
// unknown name, or a config without sinks, is a bad command line (exit 2).
func sinkFlag(cmd *cobra.Command, cfg *config.Pipeline) (string, error) {
	if cmd.Flags().Lookup("sink") == nil {
		return "", nil
	}
	if len(cfg.Sinks) == 0 {
		return "", usageError("%s: the config has no sinks: add one, e.g. sinks: [{name: gold_to_kafka, table: %s, kind: kafka, topic: events_changes}]", subPath(cmd), cfg.Gold[0].Table)
	}
	name, _ := cmd.Flags().GetString("sink")
	if name == "" {
		return "", nil
	}
	if _, ok := cfg.SinkByName(name); !ok {
		names := make([]string, len(cfg.Sinks))
		for i, s := range cfg.Sinks {
			names[i] = s.Name
		}
		return "", usageError("%s: --sink %q: no such sink (the config has %s)", subPath(cmd), name, strings.Join(names, ", "))
	}
	return name, nil
}

func runPublish(ctx context.Context, cmd *cobra.Command, env jobs.Env) (any, error) {
	only, _ := cmd.Flags().GetString("sink")
	return jobs.Publish(ctx, env, only, nil)
}
