package main

import "github.com/spf13/cobra"

func newRunCmd() *cobra.Command {
	run := &cobra.Command{
		Use:   "run JOB --config F",
		Short: "Run one job once (for external schedulers)",
	}
	for _, job := range []struct{ name, short string }{
		{"ingest", "Ingest new landing objects into bronze, exactly once"},
		{"stream", "Run the stream: bronze to silver, quarantine and gold"},
		{"merge-late", "Fold quarantined late rows back into gold with MERGE"},
		{"replay", "Recompute a time range of gold and overwrite it with replaceWhere"},
		{"optimize", "Compact small files"},
		{"vacuum", "Remove unreferenced files older than the retention"},
	} {
		cmd := &cobra.Command{Use: job.name, Short: job.short, Args: cobra.NoArgs, RunE: notBuilt("run " + job.name)}
		cmd.Flags().String("config", "", "pipeline config (YAML)")
		cmd.Flags().String("gold", "", "only this gold aggregation")
		run.AddCommand(cmd)
	}
	return run
}
