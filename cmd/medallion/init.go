package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/jobs"
)

func newInitCmd() *cobra.Command {
	return newConfigCmd("init --config F",
		"Prepare a lake: create the bucket (MinIO, LocalStack), check put-if-absent, create the tables",
		`init prepares the config's lake for the pipeline and prints what to run next. It creates the S3
bucket when it is missing and the store allows it (MinIO, LocalStack), checks that the store
refuses to overwrite with put-if-absent (commits rely on it; unsafe_commits skips the check),
and creates every table of the pipeline that does not exist yet, empty. Running it again changes
nothing. No Docker needed: a local lake or any S3 endpoint (AWS_ENDPOINT_URL) will do.`,
		"override a config key, e.g. --set lake=./lake (repeatable)",
		func(cmd *cobra.Command, path string) error {
			cfg, err := loadCommandConfig(cmd, path)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			env, err := jobs.NewEnv(ctx, cfg, newLogger(cfg.Log, cmd.ErrOrStderr()))
			if err != nil {
				return err
			}
			defer env.Lake.Close()
			rep, err := jobs.Init(ctx, env)
			if err != nil {
				return fmt.Errorf("init: %w", err)
			}
			out := cmd.OutOrStdout()
			lake := "lake " + cfg.Lake
			switch rep.Bucket {
			case "created":
				lake += ": bucket created"
			case "exists":
				lake += ": bucket exists"
			}
			check := "put-if-absent works"
			if rep.PutIfAbsent != "ok" {
				check = "put-if-absent not checked (unsafe_commits: true)"
			}
			fmt.Fprintf(out, "%s; %s\n", lake, check)
			if len(rep.Created) > 0 {
				fmt.Fprintf(out, "created: %s\n", strings.Join(rep.Created, ", "))
			}
			if len(rep.Existing) > 0 {
				fmt.Fprintf(out, "already there: %s\n", strings.Join(rep.Existing, ", "))
			}
			// Where gen writes, and where your own data goes: a landing prefix or Kafka topics.
			into, own := cfg.Landing.Path, "put your own NDJSON objects there"
			if cfg.Landing.Kind == config.LandingKafka {
				into = "Kafka topic " + strings.Join(cfg.Landing.Kafka.TopicList(), ", ")
				own = "produce your own JSON records there"
			}
			fmt.Fprintf(out, `
Next:
  medallion gen --config %[1]s --events 200000   # synthetic events of the last 2 hours into %[2]s
                                        # (or %[4]s)
  medallion run ingest --config %[1]s            # landing -> bronze (+ rejects)
  medallion run stream --config %[1]s            # bronze -> silver, quarantine, gold
  medallion run merge-late --config %[1]s        # late rows -> gold
  medallion serve --config %[1]s                 # all of it on the config's schedules, status on http://%[3]s/
`, path, into, cfg.Serve.Listen, own)
			return nil
		})
}
