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
	if !regexp.MustCompile(`bronze \+[1-9][0-9,]* rows`).MatchString(first) {
		t.Fatalf("the first demo ingested nothing:\n%s", first)
	}
	second := run()
	if !strings.Contains(second, "bronze +0 rows") || !strings.Contains(second, "silver +0 rows") || !strings.Contains(second, "nothing new to merge") {
		t.Fatalf("a second demo must add nothing:\n%s", second)
	}
}
