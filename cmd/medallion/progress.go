package main

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress is a progress bar on stderr for long interactive work (a backlog ingest, a stream
// catching up, a replay), or nothing at all when stderr is not a terminal: logs and the
// one-line summary of a scheduled run stay clean.
type progress struct {
	bar *progressbar.ProgressBar
}

// isTerminal says whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// newProgress starts a bar described desc counting units (total < 0: unknown, a spinner with a
// count) on w when tty, else a progress that does nothing.
func newProgress(w io.Writer, tty bool, desc, units string, total int64) *progress {
	if !tty {
		return &progress{}
	}
	return &progress{bar: progressbar.NewOptions64(total, progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc), progressbar.OptionShowCount(),
		progressbar.OptionSetItsString(units), progressbar.OptionShowIts(),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish(),
		progressbar.OptionSpinnerType(14),
		// No spinner timer: with one, the library starts a goroutine per bar of unknown length
		// that draws on its own and reads the bar's start time unlocked, a data race with add
		// (and it could draw after done). At zero the spinner turns when add draws.
		progressbar.OptionSetSpinnerChangeInterval(0))}
}

// add counts n more units and shows what (the batch) is being done.
func (p *progress) add(n int64, what string) {
	if p.bar == nil {
		return
	}
	if what != "" {
		p.bar.Describe(what)
	}
	_ = p.bar.Add64(n)
}

// done clears the bar.
func (p *progress) done() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
