package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// twoSourceConfig is events (the top-level source) and clicks (sources:), no join.
func twoSourceConfig(t *testing.T, lake string) string {
	t.Helper()
	cfg := `lake: ` + lake + `
schema:
  - {name: event_id,   type: string, required: true}
  - {name: ad_id,      type: string}
  - {name: event_time, type: timestamp, required: true}
stream: {watermark: 10m, dedup: [event_id]}
sources:
  - name: clicks
    schema:
      - {name: click_id,   type: string, required: true}
      - {name: ad_id,      type: string}
      - {name: click_time, type: timestamp, required: true}
    stream: {event_time: click_time, watermark: 30m, dedup: [click_id]}
    expectations:
      - {name: ad_is_even, expect: "ad_id IN ('ad0', 'ad2')"}   # warn: counted, kept
gold:
  - name: events_5m
    window: {type: tumbling, size: 5m}
    aggregates: [{fn: count}]
`
	path := filepath.Join(t.TempDir(), "pipeline.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// landingFile writes lines under the lake's landing prefix.
func landingFile(t *testing.T, lake, prefix, name string, lines []string) {
	t.Helper()
	dir := filepath.Join(lake, filepath.FromSlash(prefix))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sourceLines builds a source's landing lines: good rows with distinct ids, dups resent ids,
// one line that is not JSON (an ingest reject) and one row without its required event time
// (a validation reject).
func sourceLines(idCol, timeCol string, good, dups int) []string {
	var out []string
	for i := range good {
		out = append(out, fmt.Sprintf(`{"%s":"id%03d","ad_id":"ad%d","%s":"2024-05-01T12:%02d:00Z"}`, idCol, i, i%3, timeCol, i%60))
	}
	for i := range dups {
		out = append(out, fmt.Sprintf(`{"%s":"id%03d","ad_id":"ad%d","%s":"2024-05-01T12:%02d:00Z"}`, idCol, i, i%3, timeCol, i%60))
	}
	out = append(out, `{not json`, fmt.Sprintf(`{"%s":"nope","ad_id":"ad1"}`, idCol))
	return out
}

// scanRows counts a table's rows with `table scan --format jsonl`, and those for which keep
// holds.
func scanRows(t *testing.T, dir string, keep func(map[string]any) bool) (all, kept int) {
	t.Helper()
	out, err := runCLI(t, "table", "scan", "--format", "jsonl", dir)
	if err != nil {
		t.Fatalf("scan %s: %v", dir, err)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var row map[string]any
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("scan %s: %q: %v", dir, line, err)
		}
		all++
		if keep == nil || keep(row) {
			kept++
		}
	}
	return all, kept
}

func jobSummary(t *testing.T, out string) map[string]any {
	t.Helper()
	var s struct {
		OK     bool           `json:"ok"`
		Result map[string]any `json:"result"`
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil || !s.OK {
		t.Fatalf("summary %q (%v)", out, err)
	}
	return s.Result
}

// bySource indexes a several-source summary's list by its "source" field.
func bySource(t *testing.T, res map[string]any, list string) map[string]map[string]any {
	t.Helper()
	items, ok := res[list].([]any)
	if !ok {
		t.Fatalf("summary has no %s list: %v", list, res)
	}
	out := map[string]map[string]any{}
	for _, it := range items {
		m := it.(map[string]any)
		out[m["source"].(string)] = m
	}
	return out
}

// TestTwoFileSources: ingest and stream run both sources (or the one --source names), each into
// its own bronze, silver and checkpoint, and invariant A holds per source with figures read
// from the tables themselves.
func TestTwoFileSources(t *testing.T) {
	lake := t.TempDir()
	cfg := twoSourceConfig(t, lake)
	const evGood, evDups, clGood, clDups = 40, 3, 25, 2
	landingFile(t, lake, "landing/events", "part-0.json", sourceLines("event_id", "event_time", evGood, evDups))
	landingFile(t, lake, "landing/clicks", "part-0.json", sourceLines("click_id", "click_time", clGood, clDups))
	landed := map[string]int{"events": evGood + evDups + 2, "clicks": clGood + clDups + 2}

	// --source picks one: clicks only.
	out, err := runGenCLI(t, "run", "ingest", "--config", cfg, "--source", "clicks")
	if err != nil {
		t.Fatalf("ingest clicks: %v\n%s", err, out)
	}
	ing := bySource(t, jobSummary(t, out), "sources")
	if len(ing) != 1 || ing["clicks"]["lines"] != float64(landed["clicks"]) {
		t.Fatalf("ingest --source clicks: %v", ing)
	}
	if _, err := os.Stat(filepath.Join(lake, "bronze", "events")); !os.IsNotExist(err) {
		t.Fatalf("ingest --source clicks touched bronze/events: %v", err)
	}
	// Every source: events now, clicks has nothing new.
	out, err = runGenCLI(t, "run", "ingest", "--config", cfg)
	if err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	ing = bySource(t, jobSummary(t, out), "sources")
	if ing["events"]["lines"] != float64(landed["events"]) || ing["clicks"]["lines"] != float64(0) {
		t.Fatalf("ingest: %v", ing)
	}

	out, err = runGenCLI(t, "run", "stream", "--config", cfg, "--source", "events")
	if err != nil {
		t.Fatalf("stream events: %v\n%s", err, out)
	}
	st := jobSummary(t, out)
	first := bySource(t, st, "sources")
	if len(first) != 1 || first["events"] == nil {
		t.Fatalf("stream --source events: %v", st)
	}
	if _, err := os.Stat(filepath.Join(lake, "_checkpoints", "clicks", "offsets")); !os.IsNotExist(err) {
		t.Fatalf("stream --source events wrote the clicks checkpoint: %v", err)
	}
	out, err = runGenCLI(t, "run", "stream", "--config", cfg)
	if err != nil {
		t.Fatalf("stream: %v\n%s", err, out)
	}
	st = jobSummary(t, out)
	streamed := bySource(t, st, "sources")
	if joins, ok := st["joins"].([]any); !ok || len(joins) != 0 {
		t.Errorf("joins = %v, want an empty list", st["joins"])
	}
	if streamed["events"]["numInputRows"] != float64(0) || streamed["clicks"]["numInputRows"] == float64(0) {
		t.Fatalf("second stream: %v", streamed)
	}
	for _, ck := range []string{"events", "clicks"} {
		if _, err := os.Stat(filepath.Join(lake, "_checkpoints", ck, "commits")); err != nil {
			t.Errorf("checkpoint of %s: %v", ck, err)
		}
	}

	// Invariant A per source, every figure from the tables: landing lines = bronze rows +
	// ingest rejects; bronze rows = silver rows + validation rejects + duplicates dropped.
	dupsDropped := map[string]any{"events": first["events"]["numDuplicatesDropped"], "clicks": streamed["clicks"]["numDuplicatesDropped"]}
	for src, want := range map[string][2]int{"events": {evGood, evDups}, "clicks": {clGood, clDups}} {
		good, dups := want[0], want[1]
		prefix := "landing/" + src + "/"
		ofSource := func(stage string) func(map[string]any) bool {
			return func(r map[string]any) bool {
				f, _ := r["source_file"].(string)
				return r["stage"] == stage && strings.Contains(f, prefix)
			}
		}
		bronzeRows, _ := scanRows(t, filepath.Join(lake, "bronze", src), nil)
		silverRows, _ := scanRows(t, filepath.Join(lake, "silver", src), nil)
		_, ingestRejects := scanRows(t, filepath.Join(lake, "bronze", "rejects"), ofSource("ingest"))
		_, validateRejects := scanRows(t, filepath.Join(lake, "bronze", "rejects"), ofSource("validate"))
		if bronzeRows+ingestRejects != landed[src] || ingestRejects != 1 {
			t.Errorf("%s: landing %d lines, bronze %d rows + %d ingest rejects", src, landed[src], bronzeRows, ingestRejects)
		}
		if silverRows != good || validateRejects != 1 || bronzeRows != silverRows+validateRejects+dups || dupsDropped[src] != float64(dups) {
			t.Errorf("%s: bronze %d rows = silver %d + validation rejects %d + duplicates %d (the stream reported %v)?",
				src, bronzeRows, silverRows, validateRejects, dups, dupsDropped[src])
		}
	}

	// lag measures each source on its own bronze; the report lists both sources with the
	// rows each stream read (the oracle: the bronze rows counted above).
	out, err = runCLI(t, "lag", "--config", cfg, "--json")
	if err != nil {
		t.Fatalf("lag: %v\n%s", err, out)
	}
	var lag struct {
		Sources []struct {
			Source string         `json:"source"`
			Lag    map[string]any `json:"lag"`
		} `json:"sources"`
	}
	if err := json.Unmarshal([]byte(out), &lag); err != nil || len(lag.Sources) != 2 || lag.Sources[0].Source != "events" ||
		lag.Sources[1].Source != "clicks" || lag.Sources[0].Lag == nil || lag.Sources[1].Lag == nil {
		t.Fatalf("lag --json: %v\n%s", err, out)
	}
	out, err = runCLI(t, "report", "--config", cfg, "--json")
	if err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	var rep struct {
		Sources []struct {
			Name              string `json:"name"`
			Bronze            string `json:"bronze"`
			InputRows         *int64 `json:"numInputRows"`
			SilverRows        *int64 `json:"numSilverRows"`
			ValidationRejects *int64 `json:"numValidationRejects"`
		} `json:"sources"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Sources) != 2 {
		t.Fatalf("report --json: %v\n%s", err, out)
	}
	for _, s := range rep.Sources {
		bronzeRows, _ := scanRows(t, filepath.Join(lake, "bronze", s.Name), nil)
		silverRows, _ := scanRows(t, filepath.Join(lake, "silver", s.Name), nil)
		if s.Bronze != "bronze/"+s.Name || s.InputRows == nil || *s.InputRows != int64(bronzeRows) ||
			s.SilverRows == nil || *s.SilverRows != int64(silverRows) || s.ValidationRejects == nil || *s.ValidationRejects != 1 {
			t.Errorf("report source %s: bronze %q, input rows %v, silver rows %v, validation rejects %v; bronze holds %d rows, silver %d, 1 row lacks its time",
				s.Name, s.Bronze, s.InputRows, s.SilverRows, s.ValidationRejects, bronzeRows, silverRows)
		}
	}

	// check judges the one source with expectations on its own silver: ids i%3 give ad0, ad1,
	// ad2, so the clicks with i%3 == 1 fail (counted here from the lines written).
	out, err = runCLI(t, "check", "--config", cfg, "--json")
	if err != nil {
		t.Fatalf("check: %v\n%s", err, out)
	}
	var chk struct {
		Sources []struct {
			Source string `json:"source"`
			Check  struct {
				Table        string `json:"table"`
				Expectations []struct {
					Passed, Failed int64
				} `json:"expectations"`
			} `json:"check"`
		} `json:"sources"`
	}
	wantFailed := int64(0)
	for i := range clGood {
		if i%3 == 1 {
			wantFailed++
		}
	}
	if err := json.Unmarshal([]byte(out), &chk); err != nil || len(chk.Sources) != 1 || chk.Sources[0].Source != "clicks" ||
		chk.Sources[0].Check.Table != "silver/clicks" || len(chk.Sources[0].Check.Expectations) != 1 ||
		chk.Sources[0].Check.Expectations[0].Failed != wantFailed || chk.Sources[0].Check.Expectations[0].Passed != int64(clGood)-wantFailed {
		t.Fatalf("check --json: %v\n%s", err, out)
	}

	// A name that is neither a source nor (for stream) a join is a bad command line.
	_, err = runGenCLI(t, "run", "ingest", "--config", cfg, "--source", "nope")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), `unknown source "nope"`) {
		t.Fatalf("--source nope: %v", err)
	}
}

// TestJoinSparkRejectionExits2: a join Spark would reject is a bad config for every command,
// with Spark's text and the field, exit 2 (the check runs after Parse, with the operator's rules).
func TestJoinSparkRejectionExits2(t *testing.T) {
	lake := t.TempDir()
	path := twoSourceConfig(t, lake)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(data), "gold:", `joins:
  - {name: ec, left: events, right: clicks, type: left_anti, on: [{left: ad_id, right: ad_id}], time: {lower: 0s, upper: 1h}}
gold:`, 1)
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"run", "stream"}, {"lag"}, {"init"}} {
		_, err := runGenCLI(t, append(args, "--config", path)...)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "joins[0].type: LeftAnti joins with a streaming DataFrame/Dataset on the right are not supported") {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// TestGenSource: gen --source writes that source's events (its columns) under its landing
// prefix, and nothing under the top-level one.
func TestGenSource(t *testing.T) {
	lake := t.TempDir()
	cfg := twoSourceConfig(t, lake)
	if out, err := runGenCLI(t, "gen", "--config", cfg, "--source", "clicks", "--events", "200", "--files", "2", "--seed", "3"); err != nil {
		t.Fatalf("gen --source clicks: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(lake, "landing", "events")); !os.IsNotExist(err) {
		t.Fatalf("gen --source clicks wrote the events landing: %v", err)
	}
	entries, err := os.ReadDir(filepath.Join(lake, "landing", "clicks"))
	if err != nil || len(entries) != 2 {
		t.Fatalf("clicks landing: %v %v", entries, err)
	}
	data, err := os.ReadFile(filepath.Join(lake, "landing", "clicks", entries[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"click_time"`) || strings.Contains(string(data), `"event_time"`) {
		t.Errorf("clicks lines do not follow the clicks schema:\n%.300s", data)
	}
	if _, err := runGenCLI(t, "gen", "--config", cfg, "--source", "nope", "--events", "1"); err == nil {
		t.Error("gen --source nope accepted")
	}
}
