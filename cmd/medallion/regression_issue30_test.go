package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
)

// TestIssue30FirstArrivalWhateverTheCores is issue 30's reproduction 6 with the real binary:
// the same landing objects, ingested and streamed with GOMAXPROCS 1, 2, 3 and 8, give the same
// silver, gold, quarantine and rejects and the same job summaries, and silver's row for each
// dedup key is its first arrival in landing order (the objects' listing order, then the line's
// offset), computed here from the landing files without medallion. Ingest used to spread a
// batch's objects round-robin over GOMAXPROCS data files and the stream took bronze's file
// order as arrival order: with the issue's three objects, GOMAXPROCS=2 kept c.json's X.
//
// The randomized cases have many duplicate keys within and across objects, batches of several
// objects large enough to be cut into parts, one bronze file a micro-batch (so that the file
// layout decides the batches and their watermarks), rows late enough to be quarantined, and a
// few malformed lines; after merge-late, a replay from bronze (which deduplicates by the same
// rule) must leave gold equal to the windows of the oracle's silver. MEDALLION_LONG=1 runs more
// seeds.
func TestIssue30FirstArrivalWhateverTheCores(t *testing.T) {
	bin := binary(t)
	t.Run("issue", func(t *testing.T) {
		landing := map[string]string{
			"a.json": `{"event_id":"a1","device":"d","amount":5,"event_time":"2024-05-01T00:00:00Z"}` + "\n",
			"b.json": `{"event_id":"X","device":"d","amount":1,"event_time":"2024-05-01T00:01:00Z"}` + "\n",
			"c.json": `{"event_id":"X","device":"d","amount":2,"event_time":"2024-05-01T00:01:00Z"}` + "\n",
		}
		checkArrivalOrder(t, bin, landing, 1000, false)
	})
	seeds := []uint64{1}
	if os.Getenv("MEDALLION_LONG") != "" {
		seeds = append(seeds, 2, 3, 4)
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("random/seed=%d", seed), func(t *testing.T) {
			checkArrivalOrder(t, bin, randomLanding(seed), 3, true)
		})
	}
}

// randomLanding is nine objects under random names (so listing order is not the order they
// were made in) of 2,000 to 9,000 lines: event times that move forward through the objects with
// up to 40 minutes of disorder, two event ids a second (so most ids come many times, within
// objects and across them), amounts that are whole numbers (exact sums in any order), and one
// line in 500 not JSON.
func randomLanding(seed uint64) map[string]string {
	rng := rand.New(rand.NewPCG(seed, 30))
	base := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	out := map[string]string{}
	for o := range 9 {
		name := fmt.Sprintf("%08x.json", rng.Uint32())
		var sb strings.Builder
		for range 2000 + rng.IntN(7000) {
			if rng.IntN(500) == 0 {
				sb.WriteString("not json at all\n")
				continue
			}
			// An event id is its second and one of two draws: resends of one event share its
			// time (a replay from bronze recomputes a time range, and finds an event's first
			// arrival among the rows of its own time), and differ in device and amount.
			sec := o*20*60 + rng.IntN(40*60)
			fmt.Fprintf(&sb, `{"event_id":"e%d-%d","device":"d%d","amount":%d,"event_time":"%s"}`+"\n",
				sec, rng.IntN(2), rng.IntN(3), rng.IntN(100), base.Add(time.Duration(sec)*time.Second).Format(time.RFC3339))
		}
		out[name] = sb.String()
	}
	return out
}

// oracleRow is a landing line as the oracle reads it.
type oracleRow struct {
	ID     string  `json:"event_id"`
	Device string  `json:"device"`
	Amount float64 `json:"amount"`
	Time   string  `json:"event_time"`
	key    string
	offset int64
}

// firstArrivals reads the landing objects in listing order (ascending key, what S3 and the
// file lake list) and each object's lines by offset, and keeps each event id's first line.
func firstArrivals(t *testing.T, landing map[string]string) []oracleRow {
	t.Helper()
	keys := make([]string, 0, len(landing))
	for k := range landing {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	seen := map[string]bool{}
	var out []oracleRow
	for _, k := range keys {
		var off int64
		for line := range strings.SplitAfterSeq(landing[k], "\n") {
			var r oracleRow
			if json.Unmarshal([]byte(line), &r) == nil && !seen[r.ID] {
				seen[r.ID] = true
				r.key, r.offset = "landing/events/"+k, off
				out = append(out, r)
			}
			off += int64(len(line))
		}
	}
	return out
}

// arrivalOutcome is what one run of the pipeline left: table rows (sorted JSON lines) and job
// summaries, minus what differs between any two runs (wall-clock times and the query id).
type arrivalOutcome struct {
	tables    map[string][]string
	summaries []string
	replayed  []string // gold after a replay from bronze
}

func checkArrivalOrder(t *testing.T, bin string, landing map[string]string, ingestFiles int, replay bool) {
	oracle := firstArrivals(t, landing)
	var first *arrivalOutcome
	for _, procs := range []int{1, 2, 3, 8} {
		got := runArrivalPipeline(t, bin, landing, ingestFiles, procs, replay)
		if first == nil {
			first = got
			checkSilverOracle(t, got.tables["silver/events"], oracle)
			if replay {
				checkGoldOracle(t, got.replayed, oracle)
			}
			continue
		}
		for name, rows := range first.tables {
			if !slices.Equal(rows, got.tables[name]) {
				t.Errorf("GOMAXPROCS=%d: %s differs from GOMAXPROCS=1 (%d rows against %d)%s", procs, name,
					len(got.tables[name]), len(rows), firstDiff(rows, got.tables[name]))
			}
		}
		if !slices.Equal(first.summaries, got.summaries) {
			t.Errorf("GOMAXPROCS=%d: job summaries differ from GOMAXPROCS=1:\n%s\nagainst\n%s", procs,
				strings.Join(got.summaries, "\n"), strings.Join(first.summaries, "\n"))
		}
		if !slices.Equal(first.replayed, got.replayed) {
			t.Errorf("GOMAXPROCS=%d: gold after replay differs from GOMAXPROCS=1%s", procs, firstDiff(first.replayed, got.replayed))
		}
	}
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("; first difference:\n  %s\n  %s", a[i], b[i])
		}
	}
	return ""
}

// checkSilverOracle: silver holds exactly one row an event id, the oracle's first arrival.
func checkSilverOracle(t *testing.T, silver []string, oracle []oracleRow) {
	t.Helper()
	want := map[string]oracleRow{}
	for _, r := range oracle {
		want[r.ID] = r
	}
	got := map[string]bool{}
	for _, line := range silver {
		var r struct {
			oracleRow
			File   string `json:"_source_file"`
			Offset int64  `json:"_source_offset"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("silver row %s: %v", line, err)
		}
		w, ok := want[r.ID]
		switch {
		case !ok:
			t.Errorf("silver holds %s, which no landing line has", line)
		case got[r.ID]:
			t.Errorf("silver holds event id %s twice", r.ID)
		case r.File != w.key || r.Offset != w.offset || r.Amount != w.Amount || r.Device != w.Device:
			t.Errorf("silver keeps %s from %s offset %d (amount %v); its first arrival is %s offset %d (amount %v)",
				r.ID, r.File, r.Offset, r.Amount, w.key, w.offset, w.Amount)
		}
		got[r.ID] = true
	}
	if len(got) != len(want) {
		t.Errorf("silver holds %d event ids, the landing %d", len(got), len(want))
	}
}

// checkGoldOracle: after a replay of the whole range from bronze, gold's closed 5-minute
// windows by device are the count and sum of the oracle's rows.
func checkGoldOracle(t *testing.T, gold []string, oracle []oracleRow) {
	t.Helper()
	type win struct{ start, device string }
	type agg struct {
		n     int64
		total float64
	}
	// Gold holds the windows the watermark closed: those that end at or below the latest
	// event time less the 10-minute delay (duplicates move the watermark too, but a duplicate's
	// time is its first arrival's).
	var latest time.Time
	for _, r := range oracle {
		ev, err := time.Parse(time.RFC3339, r.Time)
		if err != nil {
			t.Fatal(err)
		}
		if ev.After(latest) {
			latest = ev
		}
	}
	want := map[win]agg{}
	for _, r := range oracle {
		ev, _ := time.Parse(time.RFC3339, r.Time)
		start := ev.Truncate(5 * time.Minute)
		if start.Add(5 * time.Minute).After(latest.Add(-10 * time.Minute)) {
			continue
		}
		w := win{start.Format(time.RFC3339), r.Device}
		a := want[w]
		a.n++
		a.total += r.Amount
		want[w] = a
	}
	got := map[win]agg{}
	for _, line := range gold {
		var g struct {
			Window struct {
				Start time.Time `json:"start"`
			} `json:"window"`
			Device string  `json:"device"`
			N      int64   `json:"n"`
			Total  float64 `json:"total"`
		}
		if err := json.Unmarshal([]byte(line), &g); err != nil {
			t.Fatalf("gold row %s: %v", line, err)
		}
		got[win{g.Window.Start.UTC().Format(time.RFC3339), g.Device}] = agg{g.N, g.Total}
	}
	for w, a := range want {
		if got[w] != a {
			t.Errorf("gold window %v holds %+v after replay from bronze; its first arrivals make %+v", w, got[w], a)
		}
	}
	if len(got) != len(want) {
		t.Errorf("gold holds %d windows after replay from bronze, the first arrivals make %d", len(got), len(want))
	}
}

const arrivalYAML = `lake: lake
landing: {path: landing/events/, format: json, max_files_per_trigger: %d}
schema:
  - {name: event_id, type: string, required: true}
  - {name: device, type: string}
  - {name: amount, type: double}
  - {name: event_time, type: timestamp, required: true}
tables: {bronze: bronze/events, rejects: bronze/rejects, silver: silver/events}
stream: {name: q, event_time: event_time, watermark: 10m, dedup: [event_id], max_files_per_trigger: 1}
gold:
  - name: g
    window: {type: tumbling, size: 5m}
    group_by: [device]
    aggregates: [{fn: count, as: n}, {fn: sum, column: amount, as: total}]
`

// runArrivalPipeline lands the objects in a fresh lake and runs ingest, stream and merge-late
// (and, with replay, a replay from bronze of the whole range) with GOMAXPROCS=procs.
func runArrivalPipeline(t *testing.T, bin string, landing map[string]string, ingestFiles, procs int, replay bool) *arrivalOutcome {
	t.Helper()
	dir := t.TempDir()
	for k, v := range landing {
		p := filepath.Join(dir, "lake", "landing", "events", k)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, arrivalYAML, ingestFiles), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append(args, "--config", cfg)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), fmt.Sprintf("GOMAXPROCS=%d", procs))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("GOMAXPROCS=%d medallion %s: %v\n%s", procs, strings.Join(args, " "), err, stderr.String())
		}
		return comparableSummary(t, out)
	}
	o := &arrivalOutcome{tables: map[string][]string{}}
	o.summaries = append(o.summaries, run("run", "ingest"), run("run", "stream"), run("run", "merge-late"))
	lake, err := file.New(filepath.Join(dir, "lake"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"bronze/events", "bronze/rejects", "silver/events", "silver/late_g", "gold/g"} {
		o.tables[p] = sortedRows(t, lake, p)
	}
	if replay {
		o.summaries = append(o.summaries, run("run", "replay", "--source", "bronze",
			"--from", "2024-04-30T00:00:00Z", "--to", "2024-05-02T00:00:00Z"))
		o.replayed = sortedRows(t, lake, "gold/g")
	}
	return o
}

// comparableSummary is a job's JSON summary minus wall-clock figures and the query id, keys
// sorted (json.Marshal of a map).
func comparableSummary(t *testing.T, out []byte) string {
	t.Helper()
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	var s map[string]any
	if err := json.Unmarshal(lines[len(lines)-1], &s); err != nil || s["ok"] != true {
		t.Fatalf("summary %s: %v", out, err)
	}
	var strip func(v any)
	strip = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				switch k {
				case "seconds", "durationMs", "rowsPerSecond", "queryId":
					delete(v, k)
				default:
					strip(x)
				}
			}
		case []any:
			for _, x := range v {
				strip(x)
			}
		}
	}
	strip(s)
	b, _ := json.Marshal(s)
	return string(b)
}

// sortedRows are a table's rows as sorted JSON lines, without _ingest_time (each run ingests at
// its own wall-clock time).
func sortedRows(t *testing.T, lake objstore.Bucket, path string) []string {
	t.Helper()
	ctx := context.Background()
	tbl := table.Open(objstore.WithPrefix(lake, path), table.Options{})
	snap, err := tbl.Log().Snapshot(ctx)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	schema, err := snap.Schema()
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, f := range schema.Fields {
		switch f.Name {
		case "_ingest_time", "rejected_at", "query_id":
		default:
			cols = append(cols, f.Name)
		}
	}
	var out []string
	for b, err := range tbl.Scan(ctx, table.ScanOptions{Columns: cols}) {
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for i := range b.Len() {
			out = append(out, string(pq.AppendJSONRow(nil, b, i)))
		}
	}
	slices.Sort(out)
	return out
}
