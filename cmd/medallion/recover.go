package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/medallion-lake/medallion/jobs"
)

// newRecoverCmd is `medallion recover query-id|rollback`: the recoveries of a checkpoint that
// a job refused at start (docs/recovery.md). Each prints a one-line JSON summary like run and
// writes no table; a refusal (the evidence does not support a safe answer) exits 1 and
// changes nothing.
func newRecoverCmd() *cobra.Command {
	rec := &cobra.Command{
		Use:   "recover query-id|rollback --config F [--query NAME] [--ingest]",
		Short: "Recover a checkpoint a job refused: a lost query id, a table gone back",
		Long: `recover repairs a checkpoint that a job refused to start from (docs/recovery.md):
  query-id  writes a lost _checkpoints/<query>/metadata (or the ingest's metadata.json) back with
            the id its progress files and its tables' txn agree on; refuses when they do not.
  rollback  rolls the checkpoint back to the last batch every table it writes still holds, so
            the next run re-runs the lost batches exactly as recorded.
--query names a source (its stream; default the top-level one) or a join; --ingest addresses the
source's ingest checkpoint instead.`,
	}
	for _, sub := range []struct {
		name, short string
		run         func(ctx context.Context, env jobs.Env, query string, ingest bool) (any, error)
	}{
		{"query-id", "Write a lost checkpoint query id back from the progress files and the tables' txn",
			func(ctx context.Context, env jobs.Env, q string, ingest bool) (any, error) {
				return jobs.RecoverID(ctx, env, q, ingest)
			}},
		{"rollback", "Roll a checkpoint back to the last batch every table it writes holds",
			func(ctx context.Context, env jobs.Env, q string, ingest bool) (any, error) {
				return jobs.Rollback(ctx, env, q, ingest)
			}},
	} {
		cmd := newJobCmd(sub.name+" --config F [--query NAME] [--ingest]", sub.short, "override a config key (repeatable)",
			"recover "+sub.name, func(ctx context.Context, cmd *cobra.Command, env jobs.Env) (any, error) {
				q, _ := cmd.Flags().GetString("query")
				ingest, _ := cmd.Flags().GetBool("ingest")
				return sub.run(ctx, env, q, ingest)
			})
		cmd.Flags().String("query", "", "a source (its streaming query) or a join (default: the top-level stream)")
		cmd.Flags().Bool("ingest", false, "the source's ingest checkpoint instead of its streaming query's")
		rec.AddCommand(cmd)
	}
	return rec
}
