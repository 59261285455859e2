package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/table"
	"github.com/spf13/cobra"
)

func newTableVacuumCmd() *cobra.Command {
	var retain time.Duration
	var dryRun, force bool
	cmd := tableSubCmd{
		use:   "vacuum URL",
		short: "Remove unreferenced files older than the retention",
		long: "Delete data files that the latest version does not reference and that are older than the\n" +
			"retention (default 168h; 0s means zero). A retention below 168h is refused unless --force is\n" +
			"given, because readers of older versions and running writers may still need younger files.\n" +
			"--dry-run lists the files and says what would be deleted; it deletes nothing.",
		run: func(cmd *cobra.Command, t *table.Table, url string) error {
			res, err := t.Vacuum(cmd.Context(), table.VacuumOptions{Retention: retain, Force: force, DryRun: dryRun})
			if errors.Is(err, table.ErrRetentionTooShort) {
				// Name the flag to change, not the library's option.
				return usageError("table vacuum: --retain %s is shorter than %s: readers of older versions and running writers may still need those files; add --force if you are sure",
					config.FormatDuration(retain), config.FormatDuration(table.MinVacuumRetention))
			}
			if err != nil {
				return fmt.Errorf("table %s: %w", url, err)
			}
			out := cmd.OutOrStdout()
			if dryRun {
				for _, f := range res.Files {
					fmt.Fprintln(out, f)
				}
				fmt.Fprintf(out, "dry run: %s (%s) would be deleted\n", count(int64(len(res.Files)), "file"), count(res.Bytes, "byte"))
				return nil
			}
			fmt.Fprintf(out, "deleted %s (%s)\n", count(int64(len(res.Files)), "file"), count(res.Bytes, "byte"))
			return nil
		},
	}.command()
	cmd.Flags().DurationVar(&retain, "retain", table.MinVacuumRetention, "keep unreferenced files younger than this")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list the files without deleting them")
	cmd.Flags().BoolVar(&force, "force", false, "allow a retention below 168h")
	return cmd
}
