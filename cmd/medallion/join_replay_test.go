package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// joinGoldConfig joins events (watermark 10m) with clicks (watermark 30m) and counts the joined
// rows per ad in 5-minute windows of the event time.
func joinGoldConfig(t *testing.T, lake string) string {
	t.Helper()
	cfg := `lake: ` + lake + `
schema:
  - {name: event_id,   type: string, required: true}
  - {name: ad_id,      type: string}
  - {name: event_time, type: timestamp, required: true}
stream: {watermark: 10m}
sources:
  - name: clicks
    schema:
      - {name: click_id,   type: string, required: true}
      - {name: ad_id,      type: string}
      - {name: click_time, type: timestamp, required: true}
    stream: {event_time: click_time, watermark: 30m}
joins:
  - {name: ec, left: events, right: clicks, type: left_outer, on: [{left: ad_id, right: ad_id}],
     time: {left: event_time, right: click_time, lower: 0s, upper: 10m}}
gold:
  - name: ec_5m
    source: ec
    time_column: event_time
    window: {type: tumbling, size: 5m}
    group_by: [ad_id]
    aggregates: [{fn: count, as: n}]
`
	path := filepath.Join(t.TempDir(), "pipeline.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// hourLines is one row a minute through the hour starting at hour, ads ad0..ad2 in turn.
func hourLines(idCol, timeCol string, hour time.Time) []string {
	var out []string
	for i := range 60 {
		ts := hour.Add(time.Duration(i) * time.Minute).Format(time.RFC3339)
		out = append(out, fmt.Sprintf(`{"%s":"%s%d","ad_id":"ad%d","%s":"%s"}`, idCol, idCol, hour.Hour()*100+i, i%3, timeCol, ts))
	}
	return out
}

// TestReplayOverJoinKeepsOpenWindows: replay of an aggregation over a join replaces only the
// windows the join's propagated watermark has closed (spec §3.4: the join's watermark minus
// upper minus 1 ms), not those its plain watermark has; otherwise the stream would append the
// open windows again when they close, and gold would hold them twice. Gold then equals the
// count of the joined table's rows in every emitted window.
func TestReplayOverJoinKeepsOpenWindows(t *testing.T) {
	lake := t.TempDir()
	cfg := joinGoldConfig(t, lake)
	h12 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	landingFile(t, lake, "landing/events", "part-0.json", hourLines("event_id", "event_time", h12))
	landingFile(t, lake, "landing/clicks", "part-0.json", hourLines("click_id", "click_time", h12))
	run := func(args ...string) {
		t.Helper()
		if out, err := runGenCLI(t, append(args, "--config", cfg)...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	run("run", "ingest")
	run("run", "stream")
	// The join's watermark is min(12:49, 12:29) = 12:29; the aggregation's is 12:18:59.999, so
	// gold holds the windows up to [12:10, 12:15) and [12:15, 12:20) is still open.
	run("run", "replay", "--from", "2024-05-01T00:00:00Z", "--to", "2024-05-02T00:00:00Z")
	landingFile(t, lake, "landing/events", "part-1.json", hourLines("event_id", "event_time", h12.Add(time.Hour)))
	landingFile(t, lake, "landing/clicks", "part-1.json", hourLines("click_id", "click_time", h12.Add(time.Hour)))
	run("run", "ingest")
	run("run", "stream")

	// The oracle: joined rows per (5-minute window of event_time, ad_id), from the joined table.
	want := map[string]int{}
	out, err := runCLI(t, "table", "scan", "--format", "jsonl", filepath.Join(lake, "silver", "ec"))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range jsonlRows(t, out) {
		et, err := time.Parse(time.RFC3339, row["event_time"].(string))
		if err != nil {
			t.Fatal(err)
		}
		want[fmt.Sprintf("%s/%s", et.Truncate(5*time.Minute).Format("15:04"), row["ad_id"])]++
	}
	out, err = runCLI(t, "table", "scan", "--format", "jsonl", filepath.Join(lake, "gold", "ec_5m"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, row := range jsonlRows(t, out) {
		start, err := time.Parse(time.RFC3339, row["window"].(map[string]any)["start"].(string))
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("%s/%s", start.Format("15:04"), row["ad_id"])
		if _, dup := got[key]; dup {
			t.Errorf("gold holds window %s twice", key)
		}
		got[key] = int(row["n"].(float64))
	}
	// The join's watermark is now min(13:49, 13:29) = 13:29, the aggregation's 13:18:59.999:
	// gold has exactly the windows starting before 13:15.
	if len(got) != 3*15 {
		t.Errorf("gold has %d windows, want %d (12:00 to 13:10, three ads)", len(got), 3*15)
	}
	for key, n := range got {
		if want[key] != n {
			t.Errorf("gold %s = %d, the joined table has %d rows in it", key, n, want[key])
		}
	}
}

// jsonlRows decodes `table scan --format jsonl` output.
func jsonlRows(t *testing.T, out string) []map[string]any {
	t.Helper()
	var rows []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var row map[string]any
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		rows = append(rows, row)
	}
	return rows
}
