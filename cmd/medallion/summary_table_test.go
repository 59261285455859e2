package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: tty is what a person's shell gives a command as its stdout,
// and what is written to it is read from master.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("ptsname: %v", err)
	}
	s, err := os.OpenFile(filepath.Join("/dev/pts", strconv.Itoa(n)), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open pts: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// runCLIOn runs the CLI in-process with stdout on out (stderr apart) and returns its error.
func runCLIOn(out io.Writer, stderr io.Writer, args ...string) error {
	root := newRootCmd()
	root.SetOut(out)
	root.SetErr(stderr)
	root.SetArgs(args)
	return root.Execute()
}

// TestRunSummaryFormat: a run's summary is a small aligned table on a terminal and the one-line
// JSON (unchanged) when piped; --format table|json chooses; the stream's per-micro-batch
// progress lines are debug, not info.
func TestRunSummaryFormat(t *testing.T) {
	lake := t.TempDir()
	cfg := writeGenConfig(t, lake, "log: {level: info}\n")
	if out, err := runGenCLI(t, "gen", "--config", cfg, "--events", "2000", "--files", "2", "--seed", "5"); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}

	// On a terminal (auto): the table. The pseudo-terminal turns \n into \r\n.
	master, tty := openPTY(t)
	read := make(chan string)
	go func() {
		var b bytes.Buffer
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			b.Write(buf[:n])
			if err != nil { // EIO once the terminal side is closed and everything is read
				read <- strings.ReplaceAll(b.String(), "\r\n", "\n")
				return
			}
		}
	}()
	var stderr bytes.Buffer
	err := runCLIOn(tty, &stderr, "run", "ingest", "--config", cfg)
	tty.Close()
	table := <-read
	if err != nil {
		t.Fatalf("ingest: %v\n%s", err, stderr.String())
	}
	if strings.Contains(table, "{") || !regexpMatch(`(?m)^job +ingest$`, table) || !regexpMatch(`(?m)^ok +true$`, table) ||
		!regexpMatch(`(?m)^rows +[1-9][0-9]*$`, table) {
		t.Fatalf("on a terminal the summary is not a table:\n%s", table)
	}
	// Every figure's value starts in the same column.
	col := -1
	for _, l := range strings.Split(strings.TrimSpace(table), "\n") {
		key := strings.Fields(l)[0]
		c := len(key) + strings.IndexFunc(l[len(key):], func(r rune) bool { return r != ' ' })
		if col >= 0 && c != col {
			t.Fatalf("values not aligned (%d vs %d) in:\n%s", c, col, table)
		}
		col = c
	}

	// Piped (auto), and --format json on a terminal: the one-line JSON.
	var piped bytes.Buffer
	stderr.Reset()
	if err := runCLIOn(&piped, &stderr, "run", "stream", "--config", cfg, "--set", "stream.max_files_per_trigger=1"); err != nil {
		t.Fatalf("stream: %v\n%s", err, stderr.String())
	}
	var s struct {
		Job    string         `json:"job"`
		OK     bool           `json:"ok"`
		Result map[string]any `json:"result"`
	}
	if strings.Count(piped.String(), "\n") != 1 || json.Unmarshal(piped.Bytes(), &s) != nil || s.Job != "stream" || !s.OK || s.Result["batches"].(float64) < 2 {
		t.Fatalf("piped, the summary is not one JSON line: %q", piped.String())
	}
	// Two micro-batches at info: no progress line each (they are debug).
	if strings.Contains(stderr.String(), "stream progress") {
		t.Fatalf("per-micro-batch progress lines at info:\n%s", stderr.String())
	}

	var forced bytes.Buffer
	if err := runCLIOn(&forced, io.Discard, "run", "merge-late", "--config", cfg, "--format", "table"); err != nil {
		t.Fatal(err)
	}
	if !regexpMatch(`(?m)^job +merge-late$`, forced.String()) {
		t.Fatalf("--format table piped:\n%s", forced.String())
	}
	forced.Reset()
	if err := runCLIOn(&forced, io.Discard, "run", "merge-late", "--config", cfg, "--format", "json"); err != nil || !json.Valid(forced.Bytes()) {
		t.Fatalf("--format json: %v %q", err, forced.String())
	}
	if err := runCLIOn(io.Discard, io.Discard, "run", "ingest", "--config", cfg, "--format", "xml"); exitCode(err) != 2 {
		t.Fatalf("--format xml: %v (exit %d), want exit 2", err, exitCode(err))
	}
}

func regexpMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }
