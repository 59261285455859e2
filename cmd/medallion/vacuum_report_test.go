package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestVacuumRetentionAndDryRunReport: a retention of 0s means zero (it was a silent 168h), the
// refusal names the flag or config key to change (not the library's Force field), --set order
// does not matter, and a dry run's summary says "would delete", never "deleted".
func TestVacuumRetentionAndDryRunReport(t *testing.T) {
	lake := t.TempDir()
	cfg := writeGenConfig(t, lake, "")
	for _, args := range [][]string{
		// Two ingest batches, so bronze has two files for optimize to compact.
		{"gen", "--config", cfg, "--events", "1000", "--files", "1", "--seed", "3"},
		{"run", "ingest", "--config", cfg},
		{"gen", "--config", cfg, "--events", "1000", "--files", "1", "--seed", "4"},
		{"run", "ingest", "--config", cfg},
		{"run", "stream", "--config", cfg},
		{"run", "optimize", "--config", cfg}, // leaves unreferenced files behind for vacuum
	} {
		if out, err := runGenCLI(t, args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	bronze := lake + "/bronze/events"

	_, err := runGenCLI(t, "table", "vacuum", bronze, "--retain", "0s", "--dry-run")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "--force") || strings.Contains(err.Error(), "Force to override") {
		t.Fatalf("--retain 0s without --force: %v", err)
	}
	out, err := runGenCLI(t, "table", "vacuum", bronze, "--retain", "0s", "--force", "--dry-run")
	if err != nil || !strings.Contains(out, "would be deleted") || strings.Contains(out, "dry run: 0 files") {
		t.Fatalf("--retain 0s --force --dry-run lists nothing (a silent 168h?): %v\n%s", err, out)
	}

	// The config rule ties two keys; given in either order, the pair is accepted.
	sets := [][]string{
		{"--set", "jobs.vacuum.retain=0s", "--set", "jobs.vacuum.allow_short_retention=true"},
		{"--set", "jobs.vacuum.allow_short_retention=true", "--set", "jobs.vacuum.retain=0s"},
	}
	for _, set := range sets {
		out, err := runGenCLI(t, append([]string{"run", "vacuum", "--config", cfg, "--dry-run"}, set...)...)
		if err != nil {
			t.Fatalf("run vacuum %v: %v\n%s", set, err, out)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var s struct {
			Result []map[string]any `json:"result"`
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil {
			t.Fatal(err)
		}
		would := 0.0
		for _, tr := range s.Result {
			if _, ok := tr["filesDeleted"]; ok {
				t.Fatalf("dry run reports filesDeleted: %v", tr)
			}
			n, _ := tr["filesWouldDelete"].(float64)
			would += n
		}
		if would == 0 {
			t.Fatalf("dry run with retain 0s would delete nothing: %s", out)
		}
	}
	_, err = runGenCLI(t, "run", "vacuum", "--config", cfg, "--set", "jobs.vacuum.retain=0s")
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "allow_short_retention") {
		t.Fatalf("retain 0s without allow_short_retention: %v", err)
	}
	_, err = runGenCLI(t, "run", "vacuum", "--config", cfg, "--set", "landing.path={oops")
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "quote it") {
		t.Fatalf("unparsable --set value: %v", err)
	}
}
