// Command medallion runs a Delta-Lake medallion pipeline on object storage: ingest into bronze,
// stream into silver, quarantine and gold, fold late rows back with merge-late, replay ranges,
// and inspect or maintain any Delta table. See DESIGN.md §8 for the command-line contract.
//
// The CLI keeps no state of its own: a command killed at any instant leaves what its job
// guarantees after a crash (see jobs and the engine packages), and running it again is safe.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// exitError carries a process exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError marks a bad invocation or a bad config: exit code 2.
func usageError(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "medallion",
		Short:         "A Delta-Lake medallion pipeline on object storage",
		Long:          "medallion ingests raw events into a bronze Delta table, streams them with Spark's event-time\nsemantics into silver, quarantine and gold, and folds late rows back into gold exactly once.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newDemoCmd(),
		newGenCmd(),
		newRunCmd(),
		newServeCmd(),
		newLagCmd(),
		newReportCmd(),
		newTableCmd(),
		newExportCmd(),
	)
	return root
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd().ExecuteContext(ctx)
	stop()
	os.Exit(exitCode(err))
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	fmt.Fprintln(os.Stderr, "medallion:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}
