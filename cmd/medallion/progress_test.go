package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/jobs"
)

// TestProgressQuietOffTerminal: run ingest and run stream draw no progress bar when stderr is
// not a terminal (a scheduler's log, a pipe): stdout is the one-line summary, stderr has no
// carriage returns.
func TestProgressQuietOffTerminal(t *testing.T) {
	lake := t.TempDir()
	cfg := writeGenConfig(t, lake, "landing: {path: landing/events/, max_files_per_trigger: 1}\n")
	if out, err := runGenCLI(t, "gen", "--config", cfg, "--events", "3000", "--files", "3"); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	for _, job := range []string{"ingest", "stream"} {
		root := newRootCmd()
		var stdout, stderr bytes.Buffer
		root.SetOut(&stdout)
		root.SetErr(&stderr)
		root.SetArgs([]string{"run", job, "--config", cfg})
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
	cfg, err := loadPipelineConfig(cfgPath, nil)
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
