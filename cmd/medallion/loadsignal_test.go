package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hugeExpectations is an expectations section of 32 expectations, each an IN list of 60,000
// ids (about 30 MB in all, each expectation within the parser's limits): a config whose load
// takes seconds even in linear time (issue 30: 20,000 items took 6 CPU s each).
// The ids are formatted by hand: two million fmt calls took seconds of CPU under -race.
func hugeExpectations() string {
	var b []byte
	b = append(b, "expectations:\n"...)
	for k := range 32 {
		b = fmt.Appendf(b, "  - name: known_ids_%d\n    expect: \"event_id IN (", k)
		for i := range 60_000 {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = append(b, "'evt-"...)
			b = appendZeroPadded(b, i, 8)
			b = append(b, '\'')
		}
		b = append(b, ")\"\n"...)
	}
	return string(b)
}

// appendZeroPadded appends n (>= 0) in decimal, zero-padded to width digits, as %0*d does.
func appendZeroPadded(b []byte, n, width int) []byte {
	digits := strconv.Itoa(n)
	for range width - len(digits) {
		b = append(b, '0')
	}
	return append(b, digits...)
}

// TestSignalDuringConfigLoad: SIGTERM while serve or check loads a huge config stops it
// promptly, with the documented exit code (serve: 0, its graceful stop; other commands: 1,
// nothing was done) and a message that says so, and nothing is written to the lake. The
// config comes through a named pipe: the signal is sent once the process has opened it and
// read it all, so it lands during the load, never before the handler is installed. The
// deadline only guards against a hang; today's main parses the 32 lists for hours.
func TestSignalDuringConfigLoad(t *testing.T) {
	bin := binary(t)
	expectations := hugeExpectations()
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"serve"}, 0},
		{[]string{"check"}, 1},
	} {
		t.Run(c.args[0], func(t *testing.T) {
			lake := t.TempDir()
			base, err := os.ReadFile(writeGenConfig(t, lake, "serve: {listen: "+freeAddr(t)+"}\n"))
			if err != nil {
				t.Fatal(err)
			}
			text := append(base, expectations...)
			fifo := filepath.Join(t.TempDir(), "pipeline.yaml")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, append(c.args, "--config", fifo)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			guard := time.NewTimer(60 * time.Second)
			defer guard.Stop()
			defer cmd.Process.Kill()

			// Opening the pipe for writing returns once the process has opened it to read.
			wrote := make(chan error, 1)
			go func() {
				f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
				if err != nil {
					wrote <- err
					return
				}
				_, err = f.Write(text)
				wrote <- errors.Join(err, f.Close())
			}()
			select {
			case err := <-wrote:
				if err != nil {
					t.Fatalf("writing the config: %v", err)
				}
			case err := <-done:
				t.Fatalf("%s exited before reading its config: %v\n%s", c.args[0], err, stderr.String())
			case <-guard.C:
				t.Fatalf("%s never read its config", c.args[0])
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			var exitErr error
			select {
			case exitErr = <-done:
			case <-guard.C:
				t.Fatalf("%s still running 60 s after SIGTERM during its config load\n%s", c.args[0], stderr.String())
			}
			code := 0
			var xe *exec.ExitError
			if errors.As(exitErr, &xe) {
				code = xe.ExitCode()
			} else if exitErr != nil {
				t.Fatal(exitErr)
			}
			if code != c.code || !strings.Contains(stderr.String(), "stopped by a signal while loading the config") {
				t.Errorf("%s: exit %d (%v), stderr %q; want exit %d, stopped while loading", c.args[0], code, exitErr, stderr.String(), c.code)
			}
			if entries, err := os.ReadDir(lake); err != nil || len(entries) > 0 {
				t.Errorf("the lake holds %v (%v): a command stopped during its load must write nothing", entries, err)
			}
		})
	}
}
