package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/internal/testutil"
)

func writeGenConfig(t *testing.T, lake, extra string) string {
	t.Helper()
	cfg := `lake: ` + lake + "\n" + testutil.EventsSchema + `  - {name: device_id, type: string}
stream: {watermark: 10m, dedup: [event_id]}
gold:
  - name: g5
    window: {type: tumbling, size: 5m}
    aggregates: [{fn: count}]
` + extra
	path := filepath.Join(t.TempDir(), "pipeline.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func runGenCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestGenCommand(t *testing.T) {
	lake := t.TempDir()
	cfg := writeGenConfig(t, lake, "")
	out, err := runGenCLI(t, "gen", "--config", cfg, "--events", "5000", "--files", "3", "--seed", "4", "--malformed", "0.01", "--start", "2024-05-01T00:00:00Z")
	if err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	var summary map[string]any
	if err := json.Unmarshal([]byte(out), &summary); err != nil || strings.Count(out, "\n") != 1 {
		t.Fatalf("want one JSON line, got %q (%v)", out, err)
	}
	// Count the lines on disk independently of the summary.
	entries, err := os.ReadDir(filepath.Join(lake, "landing", "events"))
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(lake, "landing", "events", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(data, []byte("\n"))
		if !bytes.Contains(data, []byte(`"device_id":"dev-`)) {
			t.Errorf("%s lacks the schema's device_id column", e.Name())
		}
	}
	if len(entries) != 3 || lines != 5000 || summary["lines"] != 5000.0 || summary["files"] != 3.0 || summary["malformed"].(float64) == 0 {
		t.Errorf("%d objects with %d lines; summary %v", len(entries), lines, summary)
	}
	// landing.format decides the format.
	out, err = runGenCLI(t, "gen", "--config", cfg, "--events", "100", "--files", "1", "--start", "2024-05-01T00:00:00Z", "--set", "landing.path=landing/csv/", "--set", "landing.format=csv")
	if err != nil || !strings.Contains(out, `"last_key":"landing/csv/20240501T000000.000000Z-s1-000000.csv"`) {
		t.Errorf("csv: %v %s", err, out)
	}
	// A rerun converges: same objects, all skipped.
	out, err = runGenCLI(t, "gen", "--config", cfg, "--events", "5000", "--files", "3", "--seed", "4", "--malformed", "0.01", "--start", "2024-05-01T00:00:00Z")
	if err != nil || !strings.Contains(out, `"skipped":3`) {
		t.Errorf("rerun: %v %s", err, out)
	}
}

func TestGenStartNow(t *testing.T) {
	lake := t.TempDir()
	cfg := writeGenConfig(t, lake, "")
	before := time.Now()
	out, err := runGenCLI(t, "gen", "--config", cfg, "--events", "20000", "--rate", "10", "--start", "now", "--future", "0")
	if err != nil {
		t.Fatal(err)
	}
	var summary struct {
		MaxEventTime time.Time `json:"max_event_time"`
		MinEventTime time.Time `json:"min_event_time"`
	}
	if err := json.Unmarshal([]byte(out), &summary); err != nil {
		t.Fatal(err)
	}
	// 20,000 lines at 10 per second span 2000 s that end now: no event time is after now, and
	// the earliest ones are over half an hour old.
	if summary.MaxEventTime.After(time.Now()) || summary.MinEventTime.After(before.Add(-30*time.Minute)) {
		t.Errorf("event times %v..%v for a run ending at %v", summary.MinEventTime, summary.MaxEventTime, before)
	}
}

func TestGenCommandErrors(t *testing.T) {
	lake := t.TempDir()
	good := writeGenConfig(t, lake, "")
	bad := writeGenConfig(t, lake, "stream2: {}\n")
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"gen", "--events", "10"}, 2, "--config is required"},
		{[]string{"gen", "--config", good}, 2, "--events must be a positive"},
		{[]string{"gen", "--config", bad, "--events", "10"}, 2, `unknown key "stream2" in the top level (did you mean "stream"?)`},
		{[]string{"gen", "--config", good, "--events", "10", "--set", "landing.format=xml"}, 2, `landing.format: invalid value "xml": expected json or csv`},
		{[]string{"gen", "--config", good, "--events", "10", "--set", "stream.watermrk=1m"}, 2, `unknown key "watermrk"`},
		{[]string{"gen", "--config", good, "--events", "10", "--start", "yesterday"}, 2, `--start "yesterday"`},
		{[]string{"gen", "--config", good, "--events", "10", "--duplicates", "2"}, 1, "DuplicateFraction = 2"},
		{[]string{"gen", "--config", filepath.Join(lake, "missing.yaml"), "--events", "10"}, 2, "missing.yaml"}, // a bad config: exit 2 (README),
	}
	for _, c := range cases {
		_, err := runGenCLI(t, c.args...)
		var ee *exitError
		code := 1
		if errors.As(err, &ee) {
			code = ee.code
		}
		if err == nil || code != c.code || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v (code %d), want code %d and %q", c.args, err, code, c.code, c.want)
		}
	}
}

// TestGenDefaults: without --start and --files, gen writes several objects (so that batches and
// micro-batches show late rows) of events that end now (not in 2024, which made the lag 942 days).
func TestGenDefaults(t *testing.T) {
	lake := t.TempDir()
	cfg := writeGenConfig(t, lake, "")
	before := time.Now()
	out, err := runGenCLI(t, "gen", "--config", cfg, "--events", "3000", "--future", "0")
	if err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	entries, err := os.ReadDir(filepath.Join(lake, "landing", "events"))
	if err != nil {
		t.Fatal(err)
	}
	var summary struct {
		MaxEventTime time.Time `json:"max_event_time"`
	}
	if err := json.Unmarshal([]byte(out), &summary); err != nil {
		t.Fatal(err)
	}
	if len(entries) != 8 {
		t.Errorf("%d landing objects, want 8", len(entries))
	}
	if summary.MaxEventTime.After(time.Now()) || summary.MaxEventTime.Before(before.Add(-time.Hour)) {
		t.Errorf("the newest event is at %v; the run ended at %v", summary.MaxEventTime, before)
	}
	// The arrivals spread over --span (2h by default), not a few seconds at a fixed rate: the
	// first object's name is its first line's arrival time.
	name := entries[0].Name()
	first, err := time.Parse("20060102T150405.000000Z", name[:strings.IndexByte(name, '-')])
	if err != nil {
		t.Fatalf("landing object %s: %v", name, err)
	}
	if spread := before.Sub(first); spread < 110*time.Minute || spread > 2*time.Hour+time.Minute {
		t.Errorf("the arrivals began %v before the run, want 2h (the default --span)", spread)
	}
	// --span sets it.
	before = time.Now()
	out, err = runGenCLI(t, "gen", "--config", cfg, "--events", "3000", "--span", "10m", "--set", "landing.path=landing/span/")
	var short struct {
		FirstKey string `json:"first_key"`
	}
	if err != nil || json.Unmarshal([]byte(out), &short) != nil {
		t.Fatalf("--span 10m: %v %s", err, out)
	}
	name = strings.TrimPrefix(short.FirstKey, "landing/span/")
	first, err = time.Parse("20060102T150405.000000Z", name[:strings.IndexByte(name, '-')])
	if spread := before.Sub(first); err != nil || spread < 9*time.Minute || spread > 11*time.Minute {
		t.Errorf("--span 10m: the arrivals began %v before the run (%v)", spread, err)
	}
}
