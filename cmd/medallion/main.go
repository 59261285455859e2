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
	"runtime/debug"
	"slices"
	"strings"
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
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("medallion {{.Version}}\n")
	root.AddCommand(
		newDemoCmd(),
		newInitCmd(),
		newGenCmd(),
		newRunCmd(),
		newServeCmd(),
		newLagCmd(),
		newCheckCmd(),
		newGraphCmd(),
		newReportCmd(),
		newTableCmd(),
		newExportCmd(),
		newRecoverCmd(),
	)
	strictCommandLine(root)
	return root
}

// strictCommandLine makes every bad command line exit 2, at every level: an unknown command or
// subcommand word (with cobra's "did you mean" suggestions), a missing subcommand, extra
// arguments and an unknown or malformed flag. A scheduler must never read a typo as success.
func strictCommandLine(c *cobra.Command) {
	if c.HasParent() {
		c.SuggestionsMinimumDistance = c.Root().SuggestionsMinimumDistance
	} else {
		c.SuggestionsMinimumDistance = 2
		c.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
			if !cmd.HasParent() {
				// "medallion inget --config F": the unknown word is the mistake, not the flag
				// meant for the job it names.
				if args := cmd.Flags().Args(); len(args) > 0 {
					return unknownCommand(cmd, args[0])
				}
				return &exitError{code: 2, err: fmt.Errorf("%w (see '%s --help')", err, cmd.CommandPath())}
			}
			return &exitError{code: 2, err: fmt.Errorf("%s: %w (see '%s --help')", subPath(cmd), err, cmd.CommandPath())}
		})
	}
	switch {
	case c.HasSubCommands():
		// A group: cobra only checks the first word of the root, and a group without RunE prints
		// help and succeeds whatever follows it. Check every word and fail without one. A
		// group below the root ignores the job's flags (run ingets --config F), so the typo is
		// what gets reported, with its suggestion.
		if c.HasParent() {
			c.FParseErrWhitelist.UnknownFlags = true
		}
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			return unknownCommand(cmd, args[0])
		}
		c.RunE = func(cmd *cobra.Command, _ []string) error {
			if !cmd.HasParent() {
				return cmd.Help()
			}
			cmd.SetOut(cmd.ErrOrStderr())
			_ = cmd.Usage()
			var names []string
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() {
					names = append(names, sub.Name())
				}
			}
			return usageError("%s: missing subcommand: one of %s", subPath(cmd), strings.Join(names, ", "))
		}
	case c.Args != nil:
		args := c.Args
		c.Args = func(cmd *cobra.Command, a []string) error {
			if err := args(cmd, a); err != nil {
				return &exitError{code: 2, err: fmt.Errorf("%s: %w (see '%s --help')", subPath(cmd), err, cmd.CommandPath())}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		strictCommandLine(sub)
	}
}

// unknownCommand is the exit-2 error for an unknown word after cmd, with cobra's suggestions;
// at the top level, a word near a job's name also suggests "run JOB" (medallion ingest).
func unknownCommand(cmd *cobra.Command, word string) error {
	msg := fmt.Sprintf("unknown command %q for %q", word, cmd.CommandPath())
	s := cmd.SuggestionsFor(word)
	if !cmd.HasParent() {
		for _, sub := range cmd.Commands() {
			if sub.Name() == "run" {
				for _, job := range sub.SuggestionsFor(word) {
					if !slices.Contains(s, "run "+job) {
						s = append(s, "run "+job)
					}
				}
			}
		}
	}
	if len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return &exitError{code: 2, err: fmt.Errorf("%s (see '%s --help')", msg, cmd.CommandPath())}
}

// subPath is the command path without the program name, which exitCode prints already.
func subPath(cmd *cobra.Command) string {
	if !cmd.HasParent() {
		return cmd.Name()
	}
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// version is the module version the binary was built from (go install pkg@v1.2.3), else the VCS
// revision it was built at (with -dirty for uncommitted changes), else "devel".
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified == "true" {
		rev += "-dirty"
	}
	return "devel-" + rev
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
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	if code == 2 {
		// A usage or config error: ours, short, and a config's may list several problems.
		fmt.Fprintln(os.Stderr, "medallion:", err)
	} else {
		// A failure: one line, without the SDK's chain, with a hint for the usual causes.
		fmt.Fprintln(os.Stderr, "medallion:", (&oneLineError{err}).Error())
	}
	return code
}
