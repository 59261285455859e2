package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRunStreamFailExpectation: a fail expectation makes run stream exit 1 with a summary
// whose error names the expectation and a violating row; after the expectation is removed the
// rerun processes the batch and succeeds.
func TestRunStreamFailExpectation(t *testing.T) {
	lake := t.TempDir()
	failing := writeGenConfig(t, lake, `expectations:
  - {name: tiny_amounts, expect: "amount < 1", on_violation: fail}
`)
	if out, err := runGenCLI(t, "gen", "--config", failing, "--events", "500", "--files", "1", "--seed", "3", "--start", "now", "--future", "0"); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	if out, err := runGenCLI(t, "run", "ingest", "--config", failing); err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	out, err := runGenCLI(t, "run", "stream", "--config", failing)
	if err == nil || exitCode(err) != 1 {
		t.Fatalf("run stream: err %v (exit %d), want exit 1\n%s", err, exitCode(err), out)
	}
	line := out[strings.Index(out, `{"error"`):]
	line = line[:strings.IndexByte(line, '\n')]
	var summary struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &summary); err != nil {
		t.Fatalf("summary %q: %v", line, err)
	}
	if summary.OK || !strings.Contains(summary.Error, `expectation "tiny_amounts"`) || !strings.Contains(summary.Error, `"event_id":`) {
		t.Errorf("summary error %q does not name the expectation and a row", summary.Error)
	}
	plain := writeGenConfig(t, lake, "")
	out, err = runGenCLI(t, "run", "stream", "--config", plain)
	if err != nil {
		t.Fatalf("rerun: %v\n%s", err, out)
	}
	if !strings.Contains(out, `"numSilverRows":`) || strings.Contains(out, `"numSilverRows":0,`) {
		t.Errorf("rerun summary: %s", out)
	}
}
