package main

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestDemo runs the real binary's demo on an empty folder, then again: the first run reports
// every step and the tables, the second adds nothing (every job is exactly once).
func TestDemo(t *testing.T) {
	lake := t.TempDir()
	run := func() string {
		out, err := exec.Command(binary(t), "demo", "--lake", lake, "--events", "30000").CombinedOutput()
		if err != nil {
			t.Fatalf("demo: %v\n%s", err, out)
		}
		return string(out)
	}
	first := run()
	for _, want := range []string{"[1/4] gen", "[2/4] ingest", "[3/4] stream", "[4/4] merge-late", "bronze/events", "gold/events_5m", "late rows quarantined", "late rows merged in one commit", "gold windows changed", "Explore:"} {
		if !strings.Contains(first, want) {
			t.Fatalf("demo output lacks %q:\n%s", want, first)
		}
	}
	// The second source and the join: clicks are generated and streamed; the join runs, or
	// says plainly that this build has no join host yet.
	for _, want := range []string{"clicks: ", "under landing/clicks/", "bronze/clicks", "silver/clicks"} {
		if !strings.Contains(first, want) {
			t.Fatalf("demo output lacks %q:\n%s", want, first)
		}
	}
	if !strings.Contains(first, joinsUnavailable) && !strings.Contains(first, "join events_clicks: ") {
		t.Fatalf("demo output shows neither the join nor that joins are unavailable:\n%s", first)
	}
	if !regexp.MustCompile(`bronze \+[1-9][0-9,]* rows`).MatchString(first) {
		t.Fatalf("the first demo ingested nothing:\n%s", first)
	}
	second := run()
	if !strings.Contains(second, "bronze +0 rows") || !strings.Contains(second, "silver +0 rows") || !strings.Contains(second, "nothing new to merge") {
		t.Fatalf("a second demo must add nothing:\n%s", second)
	}
	// Nor say that it merged anything into the joined table (it printed "299 late input rows
	// merged" for rows it only looked at again).
	if m := regexp.MustCompile(`join events_clicks: [0-9,]+ late input rows? merged`).FindString(second); m != "" {
		t.Fatalf("a second demo says %q when nothing was merged:\n%s", m, second)
	}
}

// TestPlurals: counts read as people write them ("1 file", "2 files", "1 micro-batch").
func TestPlurals(t *testing.T) {
	for _, c := range []struct {
		n    int64
		noun string
		want string
	}{
		{1, "file", "1 file"}, {0, "file", "0 files"}, {1234, "row", "1,234 rows"},
		{1, "micro-batch", "1 micro-batch"}, {3, "micro-batch", "3 micro-batches"}, {2, "late row", "2 late rows"},
	} {
		if got := count(c.n, c.noun); got != c.want {
			t.Errorf("count(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
}
