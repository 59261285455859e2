package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/jobs"
)

// The commands that read a pipeline config (init, serve, gen, lag, report, check, run JOB,
// recover ...) share their flags, their refusal of a missing --config, the loading of the
// config with the --set overrides and their JSON output: these are those pieces, once.

// newConfigCmd returns a command that reads a pipeline config: it takes no arguments, refuses
// a missing --config with a usage error naming the command, and runs run with --config's
// path. setUsage is the help of its --set flag.
func newConfigCmd(use, short, long, setUsage string, run func(cmd *cobra.Command, path string) error) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Long: long, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, err := configPath(cmd)
			if err != nil {
				return err
			}
			return run(cmd, path)
		}}
	addConfigFlags(cmd, setUsage)
	return cmd
}

// addConfigFlags registers --config and --set (setUsage is its help: an example that fits
// the command).
func addConfigFlags(cmd *cobra.Command, setUsage string) {
	cmd.Flags().String("config", "", "pipeline config (YAML)")
	cmd.Flags().StringArray("set", nil, setUsage)
}

// configPath returns --config, or a usage error ("run ingest: --config is required").
func configPath(cmd *cobra.Command) (string, error) {
	path, _ := cmd.Flags().GetString("config")
	if path == "" {
		return "", usageError("%s: --config is required", subPath(cmd))
	}
	return path, nil
}

// commandConfig loads the config of --config (required) with the command's --set overrides.
func commandConfig(cmd *cobra.Command) (*config.Pipeline, error) {
	path, err := configPath(cmd)
	if err != nil {
		return nil, err
	}
	return loadCommandConfig(cmd, path)
}

// loadCommandConfig loads the config at path with the command's --set overrides (see
// loadPipelineConfig).
func loadCommandConfig(cmd *cobra.Command, path string) (*config.Pipeline, error) {
	sets, _ := cmd.Flags().GetStringArray("set")
	return loadPipelineConfig(cmd.Context(), path, sets)
}

// onlySource returns --source after checking that cfg has that source (or, with joins, that
// join); a wrong name is a usage error naming the command.
func onlySource(cmd *cobra.Command, cfg *config.Pipeline, joins bool) (string, error) {
	name, _ := cmd.Flags().GetString("source")
	if err := jobs.CheckSource(cfg, name, joins); err != nil {
		return "", usageError("%s: --source: %v", subPath(cmd), err)
	}
	return name, nil
}

// printJSON prints v as one line of JSON.
func printJSON(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(data))
	return err
}
