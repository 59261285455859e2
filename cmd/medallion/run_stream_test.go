package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestRunStreamCommand: gen, ingest, then `run stream --trigger once` prints one JSON summary;
// a second available-now run finds nothing new; a bad --trigger is a usage error (exit 2).
func TestRunStreamCommand(t *testing.T) {
	lake := t.TempDir()
	cfg := writeGenConfig(t, lake, "")
	if out, err := runGenCLI(t, "gen", "--config", cfg, "--events", "3000", "--files", "3", "--seed", "2"); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	if out, err := runGenCLI(t, "run", "ingest", "--config", cfg); err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	summary := func(out string) map[string]any {
		t.Helper()
		var s struct {
			Job    string         `json:"job"`
			OK     bool           `json:"ok"`
			Result map[string]any `json:"result"`
		}
		lines := strings.Split(strings.TrimSpace(out), "\n") // logs share the buffer; the summary is last
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil || !s.OK || s.Job != "stream" {
			t.Fatalf("summary %q (%v)", out, err)
		}
		return s.Result
	}
	out, err := runGenCLI(t, "run", "stream", "--config", cfg, "--trigger", "once")
	if err != nil {
		t.Fatalf("stream: %v\n%s", err, out)
	}
	res := summary(out)
	if res["batches"] != float64(1) || res["numSilverRows"].(float64) < 2500 || res["numInputRows"].(float64) < res["numSilverRows"].(float64) {
		t.Fatalf("once: %v", res)
	}
	out, err = runGenCLI(t, "run", "stream", "--config", cfg, "--trigger", "available-now")
	if err != nil {
		t.Fatalf("stream: %v\n%s", err, out)
	}
	second := summary(out)
	if second["numInputRows"] != float64(0) {
		t.Fatalf("second run read %v rows", second["numInputRows"])
	}
	// The first run's own figures are the oracle: a run with no new data reports where the
	// query stands (it said watermarkMs 0 and lastBatchId -1, and the demo printed 1970).
	out, err = runGenCLI(t, "run", "stream", "--config", cfg, "--trigger", "available-now")
	if err != nil {
		t.Fatalf("stream: %v\n%s", err, out)
	}
	third := summary(out)
	if third["batches"] != float64(0) || third["watermarkMs"] != second["watermarkMs"] ||
		third["lastBatchId"] != second["lastBatchId"] || third["watermarkMs"].(float64) <= 0 {
		t.Fatalf("idle run reports watermark %v and last batch %v; the run before ended at %v and %v",
			third["watermarkMs"], third["lastBatchId"], second["watermarkMs"], second["lastBatchId"])
	}
	if g, ok := third["gold"].([]any); !ok || g == nil {
		t.Fatalf("idle run: gold is %#v, want a list", third["gold"])
	}
	_, err = runGenCLI(t, "run", "stream", "--config", cfg, "--trigger", "sometimes")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "--trigger") {
		t.Fatalf("bad trigger: %v", err)
	}
}
