package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/medallion-lake/medallion/kafka"
)

// publishBrokers is the test broker, set as KAFKA_BROKERS for the sinks; the test is skipped
// without one unless MEDALLION_REQUIRE_KAFKA=1 or CI=true.
func publishBrokers(t *testing.T) string {
	t.Helper()
	brokers := os.Getenv("MEDALLION_TEST_KAFKA_BROKERS")
	if brokers == "" {
		if os.Getenv("MEDALLION_REQUIRE_KAFKA") == "1" || os.Getenv("CI") == "true" {
			t.Fatal("MEDALLION_TEST_KAFKA_BROKERS is not set: run under scripts/kafka.sh run --")
		}
		t.Skip("no Kafka broker: run under scripts/kafka.sh run --")
	}
	t.Setenv("KAFKA_BROKERS", brokers)
	return brokers
}

// landEvents writes a landing file of events "id,type,amount,minute after 10:00".
func landEvents(t *testing.T, lake, name string, events [][4]any) {
	t.Helper()
	var b strings.Builder
	day := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, e := range events {
		fmt.Fprintf(&b, `{"event_id":"%v","event_type":"%v","amount":%v,"event_time":"%s"}`+"\n", e[0], e[1], e[2],
			day.Add(time.Duration(e[3].(int))*time.Minute).Format(time.RFC3339))
	}
	dir := filepath.Join(lake, "landing", "events")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// topicTable reads the sink's topic as a read_committed consumer and applies compaction (the
// last record of a key wins, a tombstone removes it): the rows the topic holds, by key.
func topicTable(t *testing.T, brokers, topic string) (map[string]any, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := kafka.Conn{Brokers: strings.Split(brokers, ",")}
	if err := kafka.WaitStable(ctx, conn, topic, time.Minute); err != nil {
		t.Fatal(err)
	}
	view, n := map[string]any{}, 0
	err := kafka.ReadCommitted(ctx, conn, topic, time.Minute, func(r *kgo.Record) error {
		n++
		if r.Value == nil {
			delete(view, string(r.Key))
			return nil
		}
		var v struct {
			Row map[string]any `json:"row"`
		}
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return err
		}
		view[string(r.Key)] = v.Row
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return view, n
}

// scannedGold is the gold table as `medallion table scan --format jsonl` prints it, keyed as a
// sink keys a gold row: its window and group-by columns, in that order.
func scannedGold(t *testing.T, table string, keys ...string) map[string]any {
	t.Helper()
	out, err := runCLI(t, "table", "scan", table, "--format", "jsonl")
	if err != nil {
		t.Fatalf("table scan: %v\n%s", err, out)
	}
	rows := map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var row map[string]any
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		// The key, built from the scanned row by hand: {"window":{...},"event_type":...}.
		var k strings.Builder
		k.WriteString("{")
		for i, c := range keys {
			v, _ := json.Marshal(row[c])
			if c == "window" {
				w := row[c].(map[string]any)
				v = fmt.Appendf(nil, `{"start":%q,"end":%q}`, w["start"], w["end"])
			}
			if i > 0 {
				k.WriteString(",")
			}
			fmt.Fprintf(&k, "%q:%s", c, v)
		}
		k.WriteString("}")
		rows[k.String()] = row
	}
	return rows
}

// TestRunPublishAfterMergeLate: merge-late folds late rows into gold (change feed: post-images
// of updated windows, inserts of new ones); `run publish` sends them, and the compacted topic
// equals gold as `table scan` reads it, after the first publication and after a second round
// of late data whose publishers were SIGKILLed mid-run (then run again to the end).
func TestRunPublishAfterMergeLate(t *testing.T) {
	brokers := publishBrokers(t)
	lake := t.TempDir()
	stamp := time.Now().UnixNano()
	topic := fmt.Sprintf("g5t_changes-%d", stamp)
	// One sink per window type: tumbling, sliding (a row in several windows) and session (a
	// late row merges sessions: their old keys must be tombstoned).
	topics := map[string]string{"g5t": topic, "g10s": fmt.Sprintf("g10s_changes-%d", stamp), "gsess": fmt.Sprintf("gsess_changes-%d", stamp)}
	cfg := writeGenConfig(t, lake, `  - name: g5t
    window: {type: tumbling, size: 5m}
    group_by: [event_type]
    aggregates: [{fn: count, as: n}, {fn: sum, column: amount, as: total}]
  - name: g10s
    window: {type: sliding, size: 10m, slide: 5m}
    group_by: [event_type]
    aggregates: [{fn: count, as: n}]
  - name: gsess
    window: {type: session, gap: 3m}
    group_by: [event_type]
    aggregates: [{fn: count, as: n}, {fn: max, column: amount, as: top}]
sinks:
  - {name: g5t_out, table: gold/g5t, kind: kafka, topic: `+topic+`, partitions: 2}
  - {name: g10s_out, table: gold/g10s, topic: `+topics["g10s"]+`}
  - {name: gsess_out, table: gold/gsess, topic: `+topics["gsess"]+`, partitions: 3}
`)
	sameAsGold := func(when string) {
		t.Helper()
		for name, tp := range topics {
			view, n := topicTable(t, brokers, tp)
			if want := scannedGold(t, filepath.Join(lake, "gold", name), "window", "event_type"); !reflect.DeepEqual(view, want) || len(want) == 0 {
				t.Fatalf("%s: the compacted topic of gold/%s (%d keys of %d records) differs from gold scanned (%d rows):\n topic %v\n gold  %v", when, name, len(view), n, len(want), view, want)
			}
		}
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := runGenCLI(t, append(args, "--config", cfg, "--format", "json")...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return out
	}
	rng := rand.New(rand.NewPCG(11, 32))
	var events [][4]any
	for i := range 200 {
		events = append(events, [4]any{fmt.Sprintf("a%d", i), []string{"click", "view", "buy"}[rng.IntN(3)], rng.IntN(100), rng.IntN(60)})
	}
	landEvents(t, lake, "1.json", events)
	run("run", "ingest")
	run("run", "stream")
	// Late rows (behind the watermark, 60m - 10m) and new ones: the stream quarantines the late.
	events = nil
	for i := range 120 {
		minute := rng.IntN(45)
		if i%3 == 0 {
			minute = 60 + rng.IntN(30)
		}
		events = append(events, [4]any{fmt.Sprintf("b%d", i), []string{"click", "view", "buy", "refund"}[rng.IntN(4)], rng.IntN(100), minute})
	}
	landEvents(t, lake, "2.json", events)
	run("run", "ingest")
	run("run", "stream")
	merged := run("run", "merge-late")
	if !strings.Contains(merged, `"ok":true`) {
		t.Fatalf("merge-late: %s", merged)
	}
	out := run("run", "publish")
	var sum struct {
		OK     bool `json:"ok"`
		Result struct {
			Sinks []struct {
				Sink         string `json:"sink"`
				Records      int64  `json:"records"`
				Upserts      int64  `json:"upserts"`
				Preimages    int64  `json:"preimagesSkipped"`
				TopicCreated bool   `json:"topicCreated"`
			} `json:"sinks"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &sum); err != nil || !sum.OK || len(sum.Result.Sinks) != 3 {
		t.Fatalf("publish summary %s (%v)", out, err)
	}
	t.Logf("publish: %s", out)
	checkSummaryKeys(t, out)
	s := sum.Result.Sinks[0]
	if s.Sink != "g5t_out" || !s.TopicCreated || s.Records == 0 || s.Preimages == 0 {
		t.Errorf("publish summary %+v: want records and merge-late's pre-images skipped", s)
	}
	sameAsGold("after merge-late")
	if _, n := topicTable(t, brokers, topic); n != int(s.Records) {
		t.Errorf("the topic holds %d records, publish says it published %d", n, s.Records)
	}

	// A second round of late data, published by processes killed mid-run, then a run to the end.
	events = nil
	for i := range 150 {
		events = append(events, [4]any{fmt.Sprintf("c%d", i), []string{"click", "view", "buy", "refund"}[rng.IntN(4)], rng.IntN(100), rng.IntN(90)})
	}
	landEvents(t, lake, "3.json", events)
	run("run", "ingest")
	run("run", "stream")
	run("run", "merge-late")
	run("run", "replay", "--from", "2026-12-01T10:00:00Z", "--to", "2026-12-01T10:30:00Z")
	bin := binary(t)
	for i := range 3 {
		cmd := exec.Command(bin, "run", "publish", "--config", cfg)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(10+rng.IntN(60)*(i+1)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
	}
	run("run", "publish", "--sink", "g5t_out")
	t.Logf("publish after the kills: %s", run("run", "publish"))
	sameAsGold("after replay and the kills")
	again := run("run", "publish")
	if !strings.Contains(again, `"upToDate":true`) {
		t.Errorf("a publish with nothing new: %s", again)
	}
}

// TestRunPublishFlags: --sink must name a sink of the config, and run publish needs one: both
// are bad command lines (exit 2), found before anything runs.
func TestRunPublishFlags(t *testing.T) {
	lake := t.TempDir()
	cfg := writeGenConfig(t, lake, "")
	if _, err := runGenCLI(t, "run", "publish", "--config", cfg); usageCode(err) != 2 || !strings.Contains(err.Error(), "the config has no sinks") {
		t.Errorf("run publish without sinks: %v", err)
	}
	cfg = writeGenConfig(t, lake, "sinks: [{name: a, table: gold/g5, topic: t}]\n")
	if _, err := runGenCLI(t, "run", "publish", "--config", cfg, "--sink", "b"); usageCode(err) != 2 || !strings.Contains(err.Error(), `--sink "b": no such sink (the config has a)`) {
		t.Errorf("run publish --sink b: %v", err)
	}
}

// usageCode is the exit code an error from a command maps to (2: usage), without printing.
func usageCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if err != nil {
		return 1
	}
	return 0
}

// TestRunPublishJoinedTable: a sink on a joined table (keyless: each record is keyed by the
// row's non-null columns). Join merge-late replaces a null-extended row by the late match (a
// pre/post pair whose keys differ: a tombstone and a new row), and the compacted topic holds
// the joined table's rows.
func TestRunPublishJoinedTable(t *testing.T) {
	brokers := publishBrokers(t)
	lake := t.TempDir()
	topic := fmt.Sprintf("joined_changes-%d", time.Now().UnixNano())
	cfg := twoSourceConfig(t, lake)
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, []byte(`joins:
  - name: events_clicks
    left: events
    right: clicks
    type: left_outer
    on: [{left: ad_id, right: ad_id}]
    time: {left: event_time, right: click_time, lower: 0s, upper: 1h}
sinks:
  - {name: joined_out, table: silver/events_clicks, topic: `+topic+`}
`)...)
	if err := os.WriteFile(cfg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := runGenCLI(t, append(args, "--config", cfg, "--format", "json")...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return out
	}
	at := func(h, m int) string { return time.Date(2026, 12, 1, h, m, 0, 0, time.UTC).Format(time.RFC3339) }
	var events, clicks []string
	for i := range 8 {
		events = append(events, fmt.Sprintf(`{"event_id":"e%d","ad_id":"ad%d","event_time":"%s"}`, i, i%4, at(10, i*3)))
	}
	events = append(events, fmt.Sprintf(`{"event_id":"e9","ad_id":"ad9","event_time":"%s"}`, at(13, 0)))
	clicks = append(clicks, fmt.Sprintf(`{"click_id":"c0","ad_id":"ad0","click_time":"%s"}`, at(10, 5)),
		fmt.Sprintf(`{"click_id":"c9","ad_id":"ad9","click_time":"%s"}`, at(13, 5)))
	landingFile(t, lake, "landing/events/", "1.json", events)
	landingFile(t, lake, "landing/clicks/", "1.json", clicks)
	run("run", "ingest")
	run("run", "stream")
	// Late clicks (behind the clicks' watermark) for impressions already emitted unmatched.
	landingFile(t, lake, "landing/clicks/", "2.json", []string{
		fmt.Sprintf(`{"click_id":"c1","ad_id":"ad1","click_time":"%s"}`, at(10, 20)),
		fmt.Sprintf(`{"click_id":"c2","ad_id":"ad2","click_time":"%s"}`, at(10, 30)),
	})
	run("run", "ingest")
	run("run", "stream")
	merged := run("run", "merge-late")
	out := run("run", "publish")
	if !strings.Contains(out, `"ok":true`) {
		t.Fatalf("publish: %s", out)
	}
	view, _ := topicTable(t, brokers, topic)
	got := map[string]bool{}
	for _, row := range view {
		b, _ := json.Marshal(row)
		got[string(b)] = true
	}
	scan, err := runCLI(t, "table", "scan", filepath.Join(lake, "silver", "events_clicks"), "--format", "jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(scan), "\n") {
		var row map[string]any
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		b, _ := json.Marshal(row)
		want[string(b)] = true
	}
	if len(want) == 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("the compacted topic's rows differ from the joined table's:\n topic %v\n table %v", got, want)
	}
	// The late clicks replaced null-extended rows: each one's tombstone was published.
	if strings.Contains(merged, `"nullRowsReplaced":0`) || strings.Contains(out, `"tombstones":0`) {
		t.Errorf("merge-late replaced no null-extended row, or publish sent no tombstone for one:\n%s\n%s", merged, out)
	}
}

// checkSummaryKeys holds a run summary to the rules of every summary (summary_test.go):
// camelCase fields, no null, each field documented in docs/commands.md.
func checkSummaryKeys(t *testing.T, line string) {
	t.Helper()
	doc, err := os.ReadFile("../../docs/commands.md")
	if err != nil {
		t.Fatal(err)
	}
	camel := regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case nil:
			t.Errorf("summary field %s is null", path)
		case map[string]any:
			for k, x := range v {
				if !camel.MatchString(k) || !strings.Contains(string(doc), "`"+k+"`") {
					t.Errorf("summary field %s.%s: not camelCase or not in docs/commands.md", path, k)
				}
				walk(path+"."+k, x)
			}
		case []any:
			for _, x := range v {
				walk(path+"[]", x)
			}
		}
	}
	var v any
	if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &v); err != nil {
		t.Fatalf("summary %q: %v", line, err)
	}
	walk("", v)
}
