package main

import (
	"bytes"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/jobs"
	"github.com/medallion-lake/medallion/late"
)

// TestProgressQuietOffTerminal: run ingest, run stream and run replay draw no progress bar when stderr is
// not a terminal (a scheduler's log, a pipe): stdout is the one-line summary, stderr has no
// carriage returns.
func TestProgressQuietOffTerminal(t *testing.T) {
	lake := t.TempDir()
	cfg := writeGenConfig(t, lake, "landing: {path: landing/events/, max_files_per_trigger: 1}\n")
	if out, err := runGenCLI(t, "gen", "--config", cfg, "--events", "3000", "--files", "3"); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	for _, job := range []string{"ingest", "stream", "replay"} {
		root := newRootCmd()
		var stdout, stderr bytes.Buffer
		root.SetOut(&stdout)
		root.SetErr(&stderr)
		args := []string{"run", job, "--config", cfg}
		if job == "replay" {
			args = append(args, "--since", "30d")
		}
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatalf("run %s: %v\n%s", job, err, stderr.String())
		}
		if strings.Contains(stderr.String(), "\r") || strings.Contains(stderr.String(), job+": batch") || strings.Count(stdout.String(), "\n") != 1 {
			t.Errorf("run %s off a terminal: stdout %q, stderr %q", job, stdout.String(), stderr.String())
		}
	}
}

// TestProgressOnTerminal: on a terminal the bar shows the batch and counts the lines each
// committed batch read; the counts add up to the run's summary.
func TestProgressOnTerminal(t *testing.T) {
	lake := t.TempDir()
	cfgPath := writeGenConfig(t, lake, "landing: {path: landing/events/, max_files_per_trigger: 1}\n")
	if out, err := runGenCLI(t, "gen", "--config", cfgPath, "--events", "3000", "--files", "3"); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	cfg, err := loadPipelineConfig(t.Context(), cfgPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	env, err := jobs.NewEnv(t.Context(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var screen bytes.Buffer
	bar := newProgress(&screen, true, "ingest", "lines", -1)
	var seen int64
	rep, err := jobs.IngestProgress(t.Context(), env, func(b bronze.Report) {
		seen += b.Lines
		bar.add(b.Lines, "ingest: batch of "+count(int64(b.Files), "object"))
	})
	bar.done()
	if err != nil {
		t.Fatal(err)
	}
	if rep.Batches != 3 || seen != rep.Lines || seen != 3000 {
		t.Fatalf("progress counted %d lines over the batches; the summary says %d in %d batches", seen, rep.Lines, rep.Batches)
	}
	if !strings.Contains(screen.String(), "ingest: batch of 1 object") {
		t.Fatalf("the bar showed %q", screen.String())
	}
}

// TestReplayProgressOnTerminal: on a terminal run replay's bar names the aggregation and the
// files of the source read, and counts the rows read: for a window aggregation the report's
// inputRows.
func TestReplayProgressOnTerminal(t *testing.T) {
	lake := t.TempDir()
	cfgPath := writeGenConfig(t, lake, "landing: {path: landing/events/, max_files_per_trigger: 1}\n")
	// Three seconds of arrivals (gen's old default rate), the workload this test was written for;
	// spread over gen's default 2h the bar counts fewer rows than the report (see the report of
	// branch s9-firsthour).
	if out, err := runGenCLI(t, "gen", "--config", cfgPath, "--events", "3000", "--files", "3", "--start", "2024-05-01T00:00:00Z", "--rate", "1000"); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	for _, job := range []string{"ingest", "stream"} {
		if out, err := runGenCLI(t, "run", job, "--config", cfgPath); err != nil {
			t.Fatalf("run %s: %v\n%s", job, err, out)
		}
	}
	cfg, err := loadPipelineConfig(t.Context(), cfgPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	env, err := jobs.NewEnv(t.Context(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var screen bytes.Buffer
	bar := newProgress(&screen, true, "replay", "rows", -1)
	r := late.Range{From: time.Date(2024, 4, 30, 0, 0, 0, 0, time.UTC), To: time.Date(2024, 5, 3, 0, 0, 0, 0, time.UTC)}
	rep, err := jobs.ReplayProgress(t.Context(), env, "", r, replayProgress(bar))
	// The bar draws at most every 100ms: the screen shows its first state, State its last.
	counted, last := bar.bar.State().CurrentNum, bar.bar.State().Description
	bar.done()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Gold) != 1 || rep.Gold[0].InputRows == 0 {
		t.Fatalf("replay read nothing: the test proves nothing: %+v", rep)
	}
	if counted != rep.Gold[0].InputRows {
		t.Fatalf("the bar counted %d rows; the report read %d", counted, rep.Gold[0].InputRows)
	}
	if !strings.Contains(screen.String(), "replay: g5 (1/1)") {
		t.Fatalf("the bar showed %q", screen.String())
	}
	m := regexp.MustCompile(`^replay: g5 \(1/1\) pass 1, file (\d+)/(\d+)$`).FindStringSubmatch(last)
	if m == nil || m[1] != m[2] || m[1] == "0" {
		t.Fatalf("the bar ended on %q, not on every file of the one pass read", last)
	}
}

// TestProgressStartsNoGoroutine: the bar draws only from the goroutine that calls add, describe
// and done. schollz/progressbar's spinner refresh goroutine (started for a bar of unknown length
// when the spinner changes on a timer) read the bar's start time without its lock and could
// draw after Finish, a data race that failed `make test` under -race on a loaded machine. The
// goroutine is created inside newProgress, so it is in the goroutine list when newProgress
// returns (no waiting needed to see it).
func TestProgressStartsNoGoroutine(t *testing.T) {
	for _, total := range []int64{-1, 10} {
		var screen bytes.Buffer
		bar := newProgress(&screen, true, "ingest", "lines", total)
		stacks := make([]byte, 1<<20)
		stacks = stacks[:runtime.Stack(stacks, true)]
		bar.add(1, "ingest: batch of 1 object")
		bar.done()
		if bytes.Contains(stacks, []byte("created by github.com/schollz/progressbar")) {
			t.Errorf("total %d: newProgress left a goroutine of the progressbar library running:\n%s", total, goroutineOf(stacks, "created by github.com/schollz/progressbar"))
		}
		if !strings.Contains(screen.String(), "ingest: batch of 1 object") {
			t.Errorf("total %d: the bar showed %q", total, screen.String())
		}
	}
}

// goroutineOf is the first goroutine in a runtime.Stack dump whose trace contains marker.
func goroutineOf(stacks []byte, marker string) string {
	for _, g := range strings.Split(string(stacks), "\n\n") {
		if strings.Contains(g, marker) {
			return g
		}
	}
	return ""
}
