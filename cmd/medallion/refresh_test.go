package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/internal/testutil"
)

// refreshEvent is one event the refresh test writes to landing, and the oracle's input.
type refreshEvent struct {
	id, typ string
	amount  int64 // whole units, written as a double: sums stay exact
	at      time.Time
}

// refreshConfig is the pipeline of the refresh test: gold g5 over the events and a derived
// 1h rollup of it; newDef is the changed definition (10-minute windows, a sum added).
func refreshConfig(t *testing.T, lake string, newDef bool) string {
	t.Helper()
	g := `  - name: g5
    window: {type: tumbling, size: 5m}
    group_by: [event_type]
    aggregates: [{fn: count, as: count}]
  - name: g1h
    source: g5
    window: {type: tumbling, size: 1h}
    group_by: [event_type]
    aggregates: [{fn: sum, column: count, as: count}]
`
	if newDef {
		g = `  - name: g5
    window: {type: tumbling, size: 10m}
    group_by: [event_type]
    aggregates: [{fn: count, as: count}, {fn: sum, column: amount, as: total}]
  - name: g1h
    source: g5
    window: {type: tumbling, size: 1h}
    group_by: [event_type]
    aggregates: [{fn: sum, column: count, as: count}, {fn: sum, column: total, as: total}]
`
	}
	// s10: sliding windows, unchanged, refreshed too (its open windows overlap closed ones);
	// sess: session windows, unchanged, refreshed too (its open sessions may hold late rows).
	g += `  - name: s10
    window: {type: sliding, size: 10m, slide: 5m}
    group_by: [event_type]
    aggregates: [{fn: count, as: count}, {fn: sum, column: amount, as: total}]
  - name: sess
    window: {type: session, gap: 1m}
    group_by: [event_type]
    aggregates: [{fn: count, as: count}, {fn: sum, column: amount, as: total}]
`
	// c10 and u10: output_mode complete and update, 5m -> 10m windows too: their tables hold
	// every window, the open ones too.
	size := "5m"
	if newDef {
		size = "10m"
	}
	g += `  - name: c10
    window: {type: tumbling, size: ` + size + `}
    group_by: [event_type]
    aggregates: [{fn: count, as: count}, {fn: sum, column: amount, as: total}]
    output_mode: complete
  - name: u10
    window: {type: tumbling, size: ` + size + `}
    group_by: [event_type]
    aggregates: [{fn: count, as: count}, {fn: sum, column: amount, as: total}]
    output_mode: update
`
	cfg := "lake: " + lake + "\n" + testutil.EventsSchema + "stream: {watermark: 10m, dedup: [event_id]}\ngold:\n" + g
	path := filepath.Join(t.TempDir(), "pipeline.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRefreshChangedGoldDefinition: the operator changes a gold's definition (window 5m ->
// 10m, an aggregate added) after the stream has run, with late rows quarantined and not yet
// merged and windows still open in the stream's state. The stream refuses the new definition
// and names run refresh; run refresh rebuilds the gold and its derived rollup under the new
// definition; then more data (on time, into the windows that were open at the refresh, and
// late), the stream and merge-late: every closed window of both tables equals a plain group-by
// of all the events the test wrote (no late row counted twice, none lost, the open windows'
// rows from before the refresh kept).
func TestRefreshChangedGoldDefinition(t *testing.T) {
	lake := t.TempDir()
	rng := rand.New(rand.NewPCG(33, 5))
	base := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	var all []refreshEvent
	n := 0
	// part writes events at random times in [from, to) (minutes after base) as one landing file.
	part := func(file string, from, to, count int) {
		t.Helper()
		var b strings.Builder
		for range count {
			n++
			e := refreshEvent{id: fmt.Sprintf("e%05d", n), typ: []string{"a", "b", "c"}[rng.IntN(3)], amount: int64(rng.IntN(100)),
				at: base.Add(time.Duration(from)*time.Minute + time.Duration(rng.Int64N(int64(to-from)*int64(time.Minute)))).Truncate(time.Second)}
			all = append(all, e)
			fmt.Fprintf(&b, `{"event_id":%q,"event_type":%q,"amount":%d.0,"event_time":%q}`+"\n", e.id, e.typ, e.amount, e.at.Format(time.RFC3339))
		}
		dir := filepath.Join(lake, "landing", "events")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(cfg string, args ...string) map[string]any {
		t.Helper()
		out, err := runGenCLI(t, append(args, "--config", cfg)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		var sum map[string]any
		if err := json.Unmarshal([]byte(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]), &sum); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return sum
	}
	oldCfg, newCfg := refreshConfig(t, lake, false), refreshConfig(t, lake, true)

	part("p1.jsonl", 0, 180, 600) // 00:00-03:00
	run(oldCfg, "run", "ingest")
	run(oldCfg, "run", "stream")
	// 02:50-03:55 on time, and late rows for the first hour (quarantined, not merged yet).
	part("p2.jsonl", 170, 235, 200)
	part("p3.jsonl", 0, 60, 40)
	run(oldCfg, "run", "ingest")
	run(oldCfg, "run", "stream")

	// The status graph: g5's quarantine holds the 40 late rows of p3 (their windows closed
	// before the batch that read them), none merged.
	checkGraphNode(t, oldCfg, "gold:g5", 40, 0)
	if out, err := runGenCLI(t, "run", "stream", "--config", newCfg); err == nil || !strings.Contains(out+err.Error(), "run refresh --table g5") {
		t.Fatalf("the stream under a changed definition: %v\n%s", err, out)
	}
	sum := run(newCfg, "run", "refresh", "--table", "g5")
	res, _ := sum["result"].(map[string]any)
	if g, _ := res["gold"].(map[string]any); g == nil || g["schemaChanged"] != true || g["openGroups"].(float64) == 0 {
		t.Fatalf("refresh of g5: %v", sum)
	}
	if d, _ := res["refreshed"].([]any); len(d) != 1 {
		t.Fatalf("refresh of g5 did not rebuild g1h: %v", sum)
	}
	run(newCfg, "run", "refresh", "--table", "s10")
	run(newCfg, "run", "refresh", "--table", "sess")
	run(newCfg, "run", "refresh", "--table", "c10")
	run(newCfg, "run", "refresh", "--table", "u10")
	checkRefreshTables(t, lake, all)
	checkGraphNode(t, newCfg, "gold:g5", 0, 0)   // in the rebuilt windows: not pending any more
	checkGraphNode(t, newCfg, "gold:g1h", -1, 0) // a derived table keeps its gold: id

	// On time into the windows open at the refresh (03:45 on), later data, and late rows.
	part("p4.jsonl", 225, 360, 400)
	part("p5.jsonl", 30, 150, 60)
	run(newCfg, "run", "ingest")
	checkGraphNode(t, newCfg, "silver:events", -1, 1) // the new bronze version, not read yet
	run(newCfg, "run", "stream")
	checkGraphNode(t, newCfg, "gold:g5", 60, 0) // p5's rows: windows closed before them
	run(newCfg, "run", "merge-late")
	checkGraphNode(t, newCfg, "gold:g5", 0, 0)
	checkRefreshTables(t, lake, all)
	// A later run restores the state the stream wrote after the refresh (a full snapshot, not a
	// delta over the old definition's chain).
	part("p6.jsonl", 350, 420, 100)
	run(newCfg, "run", "ingest")
	run(newCfg, "run", "stream")
	run(newCfg, "run", "merge-late")
	checkRefreshTables(t, lake, all)
	out, err := runGenCLI(t, "graph", "--status", "--config", newCfg)
	if err != nil || !strings.Contains(out, "gold     g5: version") || !strings.Contains(out, "up to date") || !strings.Contains(out, "0 late rows pending") {
		t.Errorf("graph --status: %v\n%s", err, out)
	}
	// A second refresh rebuilds the same tables.
	run(newCfg, "run", "refresh", "--table", "g5")
	run(newCfg, "run", "refresh", "--table", "sess")
	checkRefreshTables(t, lake, all)
}

// checkRefreshTables compares gold g5 (10m windows), g1h and s10 (10m every 5m) with a group-by
// of events over the windows closed by the watermark (the latest event time - 10m), c10 and u10
// (complete and update modes) with one over every window, both ways; then gold sess.
func checkRefreshTables(t *testing.T, lake string, events []refreshEvent) {
	t.Helper()
	var maxAt time.Time
	for _, e := range events {
		if e.at.After(maxAt) {
			maxAt = e.at
		}
	}
	wm := maxAt.Add(-10 * time.Minute)
	for _, tc := range []struct {
		table       string
		size, slide time.Duration
		all         bool // complete and update modes: every window, closed or not
	}{{"gold/g5", 10 * time.Minute, 10 * time.Minute, false}, {"gold/g1h", time.Hour, time.Hour, false},
		{"gold/s10", 10 * time.Minute, 5 * time.Minute, false}, {"gold/c10", 10 * time.Minute, 10 * time.Minute, true},
		{"gold/u10", 10 * time.Minute, 10 * time.Minute, true}} {
		want := map[string][2]int64{}
		for _, e := range events {
			for start := e.at.Truncate(tc.slide); start.Add(tc.size).After(e.at); start = start.Add(-tc.slide) {
				if start.Add(tc.size).After(wm) && !tc.all {
					continue
				}
				k := start.Format(time.RFC3339) + "/" + e.typ
				v := want[k]
				want[k] = [2]int64{v[0] + 1, v[1] + e.amount}
			}
		}
		got := scanCountTotals(t, filepath.Join(lake, tc.table), "event_type")
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s %s: (count, total) %v, want %v", tc.table, k, got[k], w)
			}
		}
		for k, g := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("%s %s: row %v for a window the oracle has not closed", tc.table, k, g)
			}
		}
	}
	checkRefreshSessions(t, lake, events, wm)
}

// checkRefreshSessions compares gold sess with the test's sessionization of events: per
// event type, in time order, an event within 1m of its session's last one extends it (the
// session is [first, last + 1m)); a session ending at or before wm is closed.
func checkRefreshSessions(t *testing.T, lake string, events []refreshEvent, wm time.Time) {
	t.Helper()
	const gap = time.Minute
	byType := map[string][]refreshEvent{}
	for _, e := range events {
		byType[e.typ] = append(byType[e.typ], e)
	}
	want := map[string][2]int64{}
	for typ, es := range byType {
		slices.SortFunc(es, func(a, b refreshEvent) int { return a.at.Compare(b.at) })
		for i := 0; i < len(es); {
			j, end, sum := i, es[i].at.Add(gap), es[i].amount
			for j+1 < len(es) && !es[j+1].at.After(end) {
				j++
				end, sum = es[j].at.Add(gap), sum+es[j].amount
			}
			if !end.After(wm) {
				want[es[i].at.Format(time.RFC3339)+"/"+end.Format(time.RFC3339)+"/"+typ] = [2]int64{int64(j + 1 - i), sum}
			}
			i = j + 1
		}
	}
	out, err := runGenCLI(t, "table", "scan", filepath.Join(lake, "gold", "sess"), "--format", "jsonl")
	if err != nil {
		t.Fatalf("scan sess: %v\n%s", err, out)
	}
	got := map[string][2]int64{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var row struct {
			Window struct {
				Start time.Time `json:"start"`
				End   time.Time `json:"end"`
			} `json:"window"`
			Type  string  `json:"event_type"`
			Count float64 `json:"count"`
			Total float64 `json:"total"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("sess: %v: %s", err, line)
		}
		k := row.Window.Start.UTC().Format(time.RFC3339) + "/" + row.Window.End.UTC().Format(time.RFC3339) + "/" + row.Type
		if _, dup := got[k]; dup {
			t.Errorf("sess: two rows for %s", k)
		}
		got[k] = [2]int64{int64(row.Count), int64(row.Total)}
	}
	if len(want) < 20 {
		t.Fatalf("the oracle has %d closed sessions: the test data no longer exercises sessions", len(want))
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("sess %s: (count, total) %v, want %v", k, got[k], w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("sess %s: row %v for a session the oracle does not have closed", k, g)
		}
	}
}

// checkGraphNode checks one node of the status graph (report --json): its late rows pending
// (-1: not checked) and the upstream versions it has not consumed.
func checkGraphNode(t *testing.T, cfg, id string, pending, behind int64) {
	t.Helper()
	out, err := runGenCLI(t, "report", "--json", "--config", cfg)
	if err != nil {
		t.Fatalf("report --json: %v\n%s", err, out)
	}
	var rep struct {
		Graph struct {
			Nodes []struct {
				ID          string `json:"id"`
				Exists      bool   `json:"exists"`
				Behind      *int64 `json:"behind_versions"`
				LatePending *int64 `json:"late_rows_pending"`
			} `json:"nodes"`
		} `json:"graph"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report --json: %v\n%s", err, out)
	}
	for _, n := range rep.Graph.Nodes {
		if n.ID != id {
			continue
		}
		if !n.Exists || n.Behind == nil || *n.Behind != behind || (pending >= 0 && (n.LatePending == nil || *n.LatePending != pending)) {
			t.Errorf("graph node %s: %s; want %d behind, %d late rows pending", id, out[strings.Index(out, `"id":"`+id):][:200], behind, pending)
		}
		return
	}
	t.Errorf("the graph has no node %s", id)
}

// joinRefreshConfig is a left outer join of events and clicks with gold ec_g over it
// (events' time, 5m windows, count by ad) and ec_1h, a 1h rollup of ec_g; newDef changes ec_g
// to 10m windows with a sum added, and ec_1h sums that too.
func joinRefreshConfig(t *testing.T, lake string, newDef bool) string {
	t.Helper()
	g := `    window: {type: tumbling, size: 5m}
    aggregates: [{fn: count, as: count}]
  - name: ec_1h
    source: ec_g
    window: {type: tumbling, size: 1h}
    group_by: [ad_id]
    aggregates: [{fn: sum, column: count, as: count}]
`
	if newDef {
		g = `    window: {type: tumbling, size: 10m}
    aggregates: [{fn: count, as: count}, {fn: sum, column: amount, as: total}]
  - name: ec_1h
    source: ec_g
    window: {type: tumbling, size: 1h}
    group_by: [ad_id]
    aggregates: [{fn: sum, column: count, as: count}, {fn: sum, column: total, as: total}]
`
	}
	cfg := `lake: ` + lake + `
schema:
  - {name: event_id,   type: string, required: true}
  - {name: ad_id,      type: string}
  - {name: amount,     type: double}
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
  - name: ec_g
    source: ec
    time_column: event_time
    group_by: [ad_id]
` + g
	path := filepath.Join(t.TempDir(), "pipeline.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRefreshChangedJoinGoldDefinition: a gold over a join changes definition (5m -> 10m
// windows, a sum added) after the stream has run, with late events and clicks quarantined by
// the join and not merged yet, and windows still open in the stream's state of the gold. The
// stream refuses the new definition naming run refresh; run refresh rebuilds the gold from the
// joined table; then merge-late, more data (on time, into the windows open at the refresh, and
// late), the stream and merge-late again: every closed window equals the test's own left outer
// join of everything it wrote, grouped by (window, ad) (a matched event once per click, an
// unmatched one once).
func TestRefreshChangedJoinGoldDefinition(t *testing.T) {
	lake := t.TempDir()
	rng := rand.New(rand.NewPCG(33, 6))
	base := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	var events, clicks []refreshEvent // typ is the ad
	n := 0
	// part writes count rows of one side at random times in [from, to) (minutes after base).
	part := func(side, file string, from, to, count int) {
		t.Helper()
		var lines []string
		for range count {
			n++
			e := refreshEvent{id: fmt.Sprintf("r%05d", n), typ: fmt.Sprintf("ad%d", rng.IntN(8)), amount: int64(rng.IntN(100)),
				at: base.Add(time.Duration(from)*time.Minute + time.Duration(rng.Int64N(int64(to-from)*int64(time.Minute)))).Truncate(time.Second)}
			if side == "events" {
				events = append(events, e)
				lines = append(lines, fmt.Sprintf(`{"event_id":%q,"ad_id":%q,"amount":%d.0,"event_time":%q}`, e.id, e.typ, e.amount, e.at.Format(time.RFC3339)))
			} else {
				clicks = append(clicks, e)
				lines = append(lines, fmt.Sprintf(`{"click_id":%q,"ad_id":%q,"click_time":%q}`, e.id, e.typ, e.at.Format(time.RFC3339)))
			}
		}
		landingFile(t, lake, "landing/"+side, file, lines)
	}
	run := func(cfg string, args ...string) string {
		t.Helper()
		out, err := runGenCLI(t, append(args, "--config", cfg)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return out
	}
	oldCfg, newCfg := joinRefreshConfig(t, lake, false), joinRefreshConfig(t, lake, true)

	part("events", "p1.json", 0, 120, 250)
	part("clicks", "p1.json", 0, 120, 100)
	run(oldCfg, "run", "ingest")
	run(oldCfg, "run", "stream")
	// On time up to 03:00, and late events and clicks of the first hour: the join quarantines
	// them (its watermark is past them), unmerged.
	part("events", "p2.json", 110, 180, 120)
	part("clicks", "p2.json", 110, 180, 50)
	part("events", "p3.json", 0, 60, 25)
	part("clicks", "p3.json", 0, 60, 25)
	run(oldCfg, "run", "ingest")
	run(oldCfg, "run", "stream")

	if out, err := runGenCLI(t, "run", "stream", "--config", newCfg); err == nil || !strings.Contains(out+err.Error(), "run refresh --table ec_g") {
		t.Fatalf("the stream under a changed definition of a gold over a join: %v\n%s", err, out)
	}
	var sum struct {
		Result struct {
			Gold struct {
				SchemaChanged bool  `json:"schemaChanged"`
				OpenGroups    int64 `json:"openGroups"`
				SilverRows    int64 `json:"silverRows"`
			} `json:"gold"`
			Refreshed []any `json:"refreshed"`
		} `json:"result"`
	}
	// A batch of the join begun and not committed (a kill between its offsets and its commit):
	// the refresh refuses, naming the batch and the join, and goes on once the batch is gone.
	offsets := filepath.Join(lake, "_checkpoints", "ec", "offsets")
	batches, err := os.ReadDir(offsets)
	if err != nil {
		t.Fatal(err)
	}
	lastBatch := -1
	for _, e := range batches {
		if b, err := strconv.Atoi(e.Name()); err == nil {
			lastBatch = max(lastBatch, b)
		}
	}
	last, err := os.ReadFile(filepath.Join(offsets, strconv.Itoa(lastBatch)))
	if err != nil {
		t.Fatal(err)
	}
	begun := filepath.Join(offsets, strconv.Itoa(lastBatch+1))
	if err := os.WriteFile(begun, last, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runGenCLI(t, "run", "refresh", "--table", "ec_g", "--config", newCfg); err == nil ||
		!strings.Contains(out+err.Error(), fmt.Sprintf("batch %d of join ec is not committed", lastBatch+1)) {
		t.Fatalf("refresh over a join's batch not committed: %v\n%s", err, out)
	}
	if err := os.Remove(begun); err != nil {
		t.Fatal(err)
	}
	out := run(newCfg, "run", "refresh", "--table", "ec_g")
	if err := json.Unmarshal([]byte(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]), &sum); err != nil {
		t.Fatalf("refresh: %v\n%s", err, out)
	}
	if g := sum.Result.Gold; !g.SchemaChanged || g.OpenGroups == 0 || g.SilverRows == 0 || len(sum.Result.Refreshed) != 1 {
		t.Fatalf("refresh of ec_g: %s", out)
	}
	run(newCfg, "run", "merge-late")
	checkJoinRefreshTable(t, lake, events, clicks)

	// On time into the windows open at the refresh (02:40 on), later data, and late rows.
	part("events", "p4.json", 160, 300, 200)
	part("clicks", "p4.json", 160, 300, 80)
	part("events", "p5.json", 60, 120, 20)
	part("clicks", "p5.json", 30, 120, 20)
	run(newCfg, "run", "ingest")
	run(newCfg, "run", "stream")
	run(newCfg, "run", "merge-late")
	checkJoinRefreshTable(t, lake, events, clicks)
	// A second refresh rebuilds the same table.
	run(newCfg, "run", "refresh", "--table", "ec_g")
	checkJoinRefreshTable(t, lake, events, clicks)
}

// checkJoinRefreshTable compares gold ec_g (10m windows of the event time, by ad) and its
// rollup ec_1h with the test's own left outer join of events and clicks (same ad, click time in
// [event time, event time + 10m]) grouped over the windows the join's output watermark has
// closed: the join's watermark W is the least of the events' (latest - 10m) and the clicks'
// (latest - 30m), and the left side's state watermark, W - 10m - 1ms, is the lowest
// (spec/stream-joins.md §3.4).
func checkJoinRefreshTable(t *testing.T, lake string, events, clicks []refreshEvent) {
	t.Helper()
	latest := func(rs []refreshEvent) time.Time {
		var m time.Time
		for _, r := range rs {
			if r.at.After(m) {
				m = r.at
			}
		}
		return m
	}
	w := latest(events).Add(-10 * time.Minute)
	if c := latest(clicks).Add(-30 * time.Minute); c.Before(w) {
		w = c
	}
	outWM := w.Add(-10*time.Minute - time.Millisecond)
	for _, tc := range []struct {
		table string
		size  time.Duration
	}{{"ec_g", 10 * time.Minute}, {"ec_1h", time.Hour}} {
		want := map[string][2]int64{}
		for _, e := range events {
			start := e.at.Truncate(tc.size)
			if start.Add(tc.size).After(outWM) {
				continue
			}
			rows := int64(0)
			for _, c := range clicks {
				if c.typ == e.typ && !c.at.Before(e.at) && !c.at.After(e.at.Add(10*time.Minute)) {
					rows++
				}
			}
			rows = max(rows, 1)
			k := start.Format(time.RFC3339) + "/" + e.typ
			v := want[k]
			want[k] = [2]int64{v[0] + rows, v[1] + rows*e.amount}
		}
		got := scanCountTotals(t, filepath.Join(lake, "gold", tc.table), "ad_id")
		if len(want) < 10 {
			t.Fatalf("%s: the oracle has %d closed windows: the test data no longer exercises it", tc.table, len(want))
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s %s: (count, total) %v, want %v", tc.table, k, got[k], w)
			}
		}
		for k, g := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("%s %s: row %v for a window the oracle has not closed", tc.table, k, g)
			}
		}
	}
}

// TestRefreshGoldOverJoinGraph: the status graph's freshness of a join and its gold: the
// silver versions the join has not read, summed.
func TestRefreshGoldOverJoinGraph(t *testing.T) {
	lake := t.TempDir()
	cfg := joinGoldConfig(t, lake)
	h12 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	landingFile(t, lake, "landing/events", "part-0.json", hourLines("event_id", "event_time", h12))
	landingFile(t, lake, "landing/clicks", "part-0.json", hourLines("click_id", "click_time", h12))
	for _, args := range [][]string{{"run", "ingest"}, {"run", "stream"}} {
		if out, err := runGenCLI(t, append(args, "--config", cfg)...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	checkGraphNode(t, cfg, "join:ec", -1, 0)
	checkGraphNode(t, cfg, "gold:ec_5m", 0, 0)
	// New events and clicks through silver only: the join has not read either new version.
	h13 := h12.Add(time.Hour)
	landingFile(t, lake, "landing/events", "part-1.json", hourLines("event_id", "event_time", h13))
	landingFile(t, lake, "landing/clicks", "part-1.json", hourLines("click_id", "click_time", h13))
	for _, args := range [][]string{{"run", "ingest"}, {"run", "stream", "--source", "events"}, {"run", "stream", "--source", "clicks"}} {
		if out, err := runGenCLI(t, append(args, "--config", cfg)...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	checkGraphNode(t, cfg, "join:ec", -1, 2)
	checkGraphNode(t, cfg, "gold:ec_5m", 0, 2)
}

// scanCountTotals reads a gold table of count and total per window and key as (count, total)
// by "window start/key" (keyCol names the key column), failing on a window and key held twice.
func scanCountTotals(t *testing.T, table, keyCol string) map[string][2]int64 {
	t.Helper()
	out, err := runGenCLI(t, "table", "scan", table, "--format", "jsonl")
	if err != nil {
		t.Fatalf("scan %s: %v\n%s", table, err, out)
	}
	got := map[string][2]int64{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var row struct {
			Window struct {
				Start time.Time `json:"start"`
			} `json:"window"`
			Count float64 `json:"count"`
			Total float64 `json:"total"`
		}
		var cols map[string]any
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%s: %v: %s", table, err, line)
		}
		if err := json.Unmarshal([]byte(line), &cols); err != nil {
			t.Fatalf("%s: %v: %s", table, err, line)
		}
		key, ok := cols[keyCol].(string)
		if !ok {
			t.Fatalf("%s: no string %s in %s", table, keyCol, line)
		}
		k := row.Window.Start.UTC().Format(time.RFC3339) + "/" + key
		if _, dup := got[k]; dup {
			t.Errorf("%s: two rows for %s", table, k)
		}
		got[k] = [2]int64{int64(row.Count), int64(row.Total)}
	}
	return got
}
