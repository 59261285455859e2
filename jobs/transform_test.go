package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/internal/testutil"
	"github.com/medallion-lake/medallion/late"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/report"
	"github.com/medallion-lake/medallion/stream"
	"github.com/medallion-lake/medallion/table"
)

// transformPipeline: computed columns of events used as the dedup key (id_norm), the group-by
// (region) and an aggregate column (cents); a filter; clicks joined to events on computed keys.
const transformPipeline = `
landing: {path: landing/events/}
schema:
  - {name: event_id, type: string, required: true}
  - {name: device, type: string}
  - {name: event_type, type: string}
  - {name: amount, type: double}
  - {name: event_time, type: timestamp, required: true}
transform:
  columns:
    - {name: id_norm, expr: "upper(trim(event_id))"}
    - {name: region, expr: "coalesce(upper(trim(device)), 'NONE')"}
    - {name: cents, expr: "amount * 100"}
  filter: {name: no_test_traffic, expr: "event_type <> 'test'", on_filter: %s}
expectations:
  - {name: modest_cents, expect: "cents < 600", on_violation: drop}
stream: {name: events, watermark: 10m, dedup: [id_norm]}
sources:
  - name: clicks
    landing: {path: landing/clicks/}
    schema:
      - {name: click_id, type: string}
      - {name: ref, type: string}
      - {name: click_time, type: timestamp}
    transform:
      columns: [{name: ref_norm, expr: "upper(trim(ref))"}]
    stream: {event_time: click_time, watermark: 1h}
joins:
  - {name: ec, left: events, right: clicks, on: [{left: id_norm, right: ref_norm}], time: {lower: 0s, upper: 1h}}
gold:
  - name: region_5m
    window: {type: tumbling, size: 5m}
    group_by: [region]
    aggregates: [{fn: count, as: n}, {fn: sum, column: cents, as: cents}]
`

type trEvent struct {
	ID, Device, Type string
	Amount           float64
	At               time.Time
}

// trEvents are the test's events: ids that differ only in case and spaces (duplicates once
// normalized), devices that normalize to one region, test traffic, a null type (the filter's
// NULL: filtered out, as Spark's WHERE), and a last event far ahead that moves the watermark
// past every window before it.
func trEvents() []trEvent {
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	var out []trEvent
	devices := []string{"de-1", " DE-1", "fr-2", "", "Fr-2 "}
	types := []string{"view", "click", "test", "view", "NULL"}
	for i := range 40 {
		id := fmt.Sprintf("e%d", i%31) // 9 repeats
		if i >= 31 {
			id = " " + strings.ToUpper(id) + " "
		}
		out = append(out, trEvent{ID: id, Device: devices[i%5], Type: types[(i/2)%5], Amount: float64(i%7) + 0.25,
			At: t0.Add(time.Duration(i*47) * time.Second)})
	}
	return append(out, trEvent{ID: "last", Device: "zz", Type: "view", Amount: 1, At: t0.Add(24 * time.Hour)})
}

func (e trEvent) json() string {
	m := map[string]any{"event_id": e.ID, "amount": e.Amount, "event_time": e.At.Format(time.RFC3339)}
	if e.Device != "" {
		m["device"] = e.Device
	}
	if e.Type != "NULL" {
		m["event_type"] = e.Type
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// trOracle computes, in plain Go from the input events, what the pipeline must give: the rows
// the filter takes out (among those the expectation on the computed cents keeps: amounts of
// 6 and more go to rejects as expectation:modest_cents, whatever their type), the deduplicated rows kept (by normalized id, first arrival) and the
// gold rows of the windows the last event's watermark closes.
func trOracle(events []trEvent) (filtered int, kept []trEvent, gold []string) {
	seen := map[string]bool{}
	type key struct {
		start  time.Time
		region string
	}
	n, cents := map[key]int64{}, map[key]float64{}
	for _, e := range events {
		if e.Amount >= 6 {
			continue // expectation modest_cents: amount * 100 < 600
		}
		if e.Type == "test" || e.Type == "NULL" {
			filtered++
			continue
		}
		id := strings.ToUpper(strings.TrimSpace(e.ID))
		if seen[id] {
			continue
		}
		seen[id] = true
		kept = append(kept, e)
		region := strings.ToUpper(strings.TrimSpace(e.Device))
		if e.Device == "" {
			region = "NONE"
		}
		if e.ID == "last" {
			continue // its window stays open
		}
		k := key{e.At.Truncate(5 * time.Minute), region}
		n[k]++
		cents[k] += e.Amount * 100
	}
	for _, k := range slices.SortedFunc(maps.Keys(n), func(a, b key) int {
		return strings.Compare(a.start.Format(time.RFC3339)+a.region, b.start.Format(time.RFC3339)+b.region)
	}) {
		gold = append(gold, fmt.Sprintf("%s %s n=%d cents=%g", k.start.Format(time.RFC3339), k.region, n[k], cents[k]))
	}
	return filtered, kept, gold
}

// trRows reads a table's rows as JSON objects.
func trRows(t *testing.T, lake objstore.Bucket, path string) []map[string]any {
	t.Helper()
	var out []map[string]any
	tbl := table.Open(objstore.WithPrefix(lake, path), table.Options{})
	for b, err := range tbl.Scan(context.Background(), table.ScanOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Len() {
			var m map[string]any
			if err := json.Unmarshal(pq.AppendJSONRow(nil, b, i), &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
	}
	return out
}

func trGold(t *testing.T, lake objstore.Bucket) []string {
	var out []string
	for _, r := range trRows(t, lake, "gold/region_5m") {
		w := r["window"].(map[string]any)
		start, err := time.Parse(time.RFC3339Nano, w["start"].(string))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %s n=%v cents=%v", start.UTC().Format(time.RFC3339), r["region"], r["n"], r["cents"]))
	}
	slices.Sort(out)
	return out
}

// TestTransformEndToEnd: ingest -> silver -> gold and the join with computed columns as the
// dedup key, the group-by, an aggregate column and the join keys; the filter in both modes.
// Oracle: trOracle, plain Go over the input events. Replay from silver gives the same gold.
func TestTransformEndToEnd(t *testing.T) {
	for _, mode := range []string{config.OnFilterReject, config.OnFilterDrop} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			cfg := testutil.Pipeline(t, "lake: "+t.TempDir()+"\n"+fmt.Sprintf(transformPipeline, mode))
			env, err := NewEnv(ctx, cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer env.Lake.Close()
			events := trEvents()
			var lines []string
			for _, e := range events {
				lines = append(lines, e.json())
			}
			put := func(key, body string) {
				t.Helper()
				if err := objstore.PutBytes(ctx, env.Lake, key, []byte(body)); err != nil {
					t.Fatal(err)
				}
			}
			// Two files: the duplicates of the second arrive after their first copies.
			put("landing/events/a.json", strings.Join(lines[:31], "\n")+"\n")
			put("landing/events/b.json", strings.Join(lines[31:], "\n")+"\n")
			put("landing/clicks/a.json", `{"click_id":"c1","ref":" e2 ","click_time":"2024-05-01T12:10:00Z"}
{"click_id":"c2","ref":"E5","click_time":"2024-05-01T12:30:00Z"}
{"click_id":"c3","ref":"e2","click_time":"2024-05-01T15:00:00Z"}
{"click_id":"c4","ref":"nope","click_time":"2024-05-01T12:10:00Z"}
`)
			var dropped int64
			for range 2 { // the second run's no-data batch closes the windows the first one's data passed
				if _, err := IngestSources(ctx, env, "", nil); err != nil {
					t.Fatal(err)
				}
				rep, err := StreamSources(ctx, env, "", config.Trigger{}, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, q := range rep.Sources {
					dropped += q.FilteredDropped
				}
			}
			filtered, kept, want := trOracle(events)

			// Rejects: filtered:<name> rows, only in reject mode; counted in drop mode.
			var rejected, expectDropped, wantExpectDropped int
			for _, r := range trRows(t, env.Lake, "bronze/rejects") {
				switch r["reason"] {
				case "filtered:no_test_traffic":
					rejected++
				case "expectation:modest_cents":
					expectDropped++
				}
			}
			for _, e := range events {
				if e.Amount >= 6 {
					wantExpectDropped++
				}
			}
			// The expectation reads a computed column: judged on every bronze row, duplicates
			// included, as validation comes before dedup.
			if wantExpectDropped == 0 || expectDropped != wantExpectDropped {
				t.Errorf("%d rows rejected as expectation:modest_cents, want %d", expectDropped, wantExpectDropped)
			}
			// check judges the same expectation over bronze (computing the columns) and silver.
			for _, bronzeSide := range []bool{true, false} {
				rep, err := report.Check(ctx, env.Lake, cfg, report.CheckOptions{Bronze: bronzeSide})
				if err != nil {
					t.Fatal(err)
				}
				want := int64(0)
				if bronzeSide {
					want = int64(wantExpectDropped)
				}
				if got := rep.Expectations[0].Failed; got != want {
					t.Errorf("check (bronze %v): modest_cents failed %d rows, want %d", bronzeSide, got, want)
				}
			}
			switch mode {
			case config.OnFilterReject:
				if rejected != filtered || dropped != 0 {
					t.Errorf("reject mode: %d rows rejected as filtered:no_test_traffic, %d dropped; want %d and 0", rejected, dropped, filtered)
				}
			default:
				if rejected != 0 || dropped != int64(filtered) {
					t.Errorf("drop mode: %d filtered rows in rejects, %d counted dropped; want 0 and %d", rejected, dropped, filtered)
				}
			}

			// Silver: the kept rows, each with its computed columns.
			silver := trRows(t, env.Lake, "silver/events")
			var ids, wantIDs []string
			for _, r := range silver {
				ids = append(ids, fmt.Sprint(r["id_norm"]))
				if want := strings.ToUpper(strings.TrimSpace(fmt.Sprint(r["event_id"]))); r["id_norm"] != want {
					t.Errorf("silver row %v: id_norm %v, want %s", r["event_id"], r["id_norm"], want)
				}
			}
			for _, e := range kept {
				wantIDs = append(wantIDs, strings.ToUpper(strings.TrimSpace(e.ID)))
			}
			slices.Sort(ids)
			slices.Sort(wantIDs)
			if !slices.Equal(ids, wantIDs) {
				t.Errorf("silver ids\n got %v\nwant %v", ids, wantIDs)
			}

			// Gold, grouped by a computed column, summing another.
			got := trGold(t, env.Lake)
			if !slices.Equal(got, want) {
				t.Errorf("gold\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
			}

			// The join on computed keys: c1 matches E2 (within the hour), c2 matches E5, c3 is
			// too late for E2, c4 matches nothing.
			var pairs []string
			for _, r := range trRows(t, env.Lake, "silver/ec") {
				pairs = append(pairs, fmt.Sprintf("%v-%v", r["id_norm"], r["click_id"]))
			}
			slices.Sort(pairs)
			if want := wantPairs(kept); !slices.Equal(pairs, want) {
				t.Errorf("joined pairs %v, want %v", pairs, want)
			}

			// Replay from silver recomputes gold from the rows silver holds: the same table.
			if _, err := Replay(ctx, env, "region_5m", late.Range{From: events[0].At.Add(-time.Hour), To: events[0].At.Add(48 * time.Hour)}); err != nil {
				t.Fatal(err)
			}
			if again := trGold(t, env.Lake); !slices.Equal(again, got) {
				t.Errorf("gold after replay\n got %v\nwant %v", again, got)
			}
			// Replay from bronze recomputes the computed columns, the filter and the dedup on
			// computed keys as the stream did: the same table again.
			if _, err := Replay(ctx, env, "region_5m", late.Range{From: events[0].At.Add(-time.Hour), To: events[0].At.Add(48 * time.Hour),
				Source: late.SourceBronze}); err != nil {
				t.Fatal(err)
			}
			if again := trGold(t, env.Lake); !slices.Equal(again, want) {
				t.Errorf("gold after replay from bronze\n got %v\nwant %v", again, want)
			}
		})
	}
}

// wantPairs joins the kept events with the test's clicks in plain Go.
func wantPairs(kept []trEvent) []string {
	clicks := []struct {
		id, ref string
		at      time.Time
	}{
		{"c1", " e2 ", time.Date(2024, 5, 1, 12, 10, 0, 0, time.UTC)},
		{"c2", "E5", time.Date(2024, 5, 1, 12, 30, 0, 0, time.UTC)},
		{"c3", "e2", time.Date(2024, 5, 1, 15, 0, 0, 0, time.UTC)},
		{"c4", "nope", time.Date(2024, 5, 1, 12, 10, 0, 0, time.UTC)},
	}
	var out []string
	for _, e := range kept {
		id := strings.ToUpper(strings.TrimSpace(e.ID))
		for _, c := range clicks {
			if strings.ToUpper(strings.TrimSpace(c.ref)) == id && !c.at.Before(e.At) && !c.at.After(e.At.Add(time.Hour)) {
				out = append(out, id+"-"+c.id)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestTransformDefinitionChanges: a computed column added later is taken like an added column
// (silver gains it, earlier rows hold NULL); one removed stays in silver, NULL in new rows; a
// changed expression of an existing (or removed) one is refused before the query reads
// anything (stream.ErrDefinitionChanged), naming the column, the old and the new expression.
func TestTransformDefinitionChanges(t *testing.T) {
	ctx := context.Background()
	lake := t.TempDir()
	base := "lake: " + lake + "\n" + testutil.EventsSchema + `transform:
  columns:
    - {name: kind, expr: "upper(event_type)"}
%sstream: {watermark: 10m, dedup: [event_id]}
gold:
  - name: g5
    window: {type: tumbling, size: 5m}
    group_by: [kind]
    aggregates: [{fn: count}]
`
	run := func(extra, landing string) error {
		t.Helper()
		cfg := testutil.Pipeline(t, fmt.Sprintf(base, extra))
		env, err := NewEnv(ctx, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer env.Lake.Close()
		if err := objstore.PutBytes(ctx, env.Lake, "landing/events/"+landing+".json", []byte(fmt.Sprintf(
			`{"event_id":%q,"event_type":"view","amount":1,"event_time":"2024-05-01T12:00:00Z"}`+"\n", landing))); err != nil {
			t.Fatal(err)
		}
		if _, err := Ingest(ctx, env); err != nil {
			t.Fatal(err)
		}
		_, err = Stream(ctx, env, config.Trigger{}, nil)
		return err
	}
	if err := run("", "a"); err != nil {
		t.Fatal(err)
	}
	added := `    - {name: cents, expr: "amount * 100"}
`
	if err := run(added, "b"); err != nil {
		t.Fatalf("a computed column added later: %v", err)
	}
	env, err := NewEnv(ctx, testutil.Pipeline(t, fmt.Sprintf(base, added)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Lake.Close()
	var got []string
	for _, r := range trRows(t, env.Lake, "silver/events") {
		got = append(got, fmt.Sprintf("%v %v %v", r["event_id"], r["kind"], r["cents"]))
	}
	slices.Sort(got)
	if want := []string{"a VIEW <nil>", "b VIEW 100"}; !slices.Equal(got, want) {
		t.Errorf("silver after adding cents: %v, want %v", got, want)
	}
	// Removed from the config, cents stays in silver, NULL in new rows; adding it back under
	// another expression is a changed expression (the removed one stays recorded).
	if err := run("", "r"); err != nil {
		t.Fatalf("a computed column removed: %v", err)
	}
	got = nil
	for _, r := range trRows(t, env.Lake, "silver/events") {
		got = append(got, fmt.Sprintf("%v %v %v", r["event_id"], r["kind"], r["cents"]))
	}
	slices.Sort(got)
	if want := []string{"a VIEW <nil>", "b VIEW 100", "r VIEW <nil>"}; !slices.Equal(got, want) {
		t.Errorf("silver after removing cents: %v, want %v", got, want)
	}
	changed := strings.Replace(added, "amount * 100", "amount * 1000", 1)
	err = run(changed, "c")
	if !errors.Is(err, stream.ErrDefinitionChanged) || !strings.Contains(err.Error(), `computed column cents was "amount * 100", is now "amount * 1000"`) {
		t.Fatalf("a changed expression: %v; want ErrDefinitionChanged naming cents", err)
	}
}

// TestBackfillRecomputesComputedColumns: backfill-columns recomputes the transform's computed
// columns in silver and the quarantine: a computed column over a column the backfill fills
// (region over country), and one added to the config after the rows were written (double_amt,
// over an old column). Oracle: plain Go over the landing lines. A rerun commits nothing; a
// changed expression of an existing computed column is refused and leaves the tables alone.
func TestBackfillRecomputesComputedColumns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	v1 := testutil.EventsSchema + "transform:\n  columns:\n    - {name: kind, expr: \"upper(event_type)\"}\n"
	env := openEvolving(t, dir, v1)
	type line struct {
		id, typ, country string // country "": absent; "7": a number, which a string column does not take
		amount           float64
		at               string
	}
	lines := []line{
		{"old-1", "a", "FR", 1.5, "2024-05-01T12:00:00Z"}, {"old-2", "b", "7", 2, "2024-05-01T12:00:00Z"},
		{"old-3", "a", "", 3, "2024-05-01T12:00:00Z"}, {"old-4", "c", "It", 4.25, "2024-05-01T13:00:00Z"},
		{"late-1", "a", "Es", 5, "2024-05-01T12:01:00Z"}, // late once old-4 moved the watermark: quarantined
	}
	jsonOf := func(l line) string {
		m := map[string]any{"event_id": l.id, "event_type": l.typ, "amount": l.amount, "event_time": l.at}
		switch l.country {
		case "":
		case "7":
			m["country"] = 7
		default:
			m["country"] = l.country
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	var first []string
	for _, l := range lines[:4] {
		first = append(first, jsonOf(l))
	}
	landLine(t, env, "landing/events/a.json", strings.Join(first, "\n"))
	runIngestStream(t, env)
	landLine(t, env, "landing/events/b.json", jsonOf(lines[4]))
	runIngestStream(t, env)
	env.Lake.Close()

	grown := strings.TrimSuffix(testutil.EventsSchema, "\n") + "\n  - {name: country, type: string}\n" +
		"transform:\n  columns:\n    - {name: kind, expr: \"upper(event_type)\"}\n" +
		"    - {name: region, expr: \"lower(coalesce(country, 'zz'))\"}\n    - {name: double_amt, expr: \"amount * 2\"}\n"
	env = openEvolving(t, dir, grown)
	if _, err := IngestSources(ctx, env, "", nil); err != nil { // evolves bronze
		t.Fatal(err)
	}
	rep, err := BackfillColumns(ctx, env, "")
	if err != nil {
		t.Fatal(err)
	}
	check := func(path string, ls []line) {
		t.Helper()
		region := scanColumn(t, env, path, "event_id", "region")
		double := scanColumn(t, env, path, "event_id", "double_amt")
		kind := scanColumn(t, env, path, "event_id", "kind")
		for _, l := range ls {
			wantRegion := "zz"
			if l.country != "" && l.country != "7" {
				wantRegion = strings.ToLower(l.country)
			}
			if region[l.id] != wantRegion || double[l.id] != l.amount*2 || kind[l.id] != strings.ToUpper(l.typ) {
				t.Errorf("%s: %s has region %v, double_amt %v, kind %v; want %s, %g, %s", path, l.id,
					region[l.id], double[l.id], kind[l.id], wantRegion, l.amount*2, strings.ToUpper(l.typ))
			}
		}
	}
	check("silver/events", lines) // silver holds the late row too
	check("silver/late_events_5m", lines[4:])
	recomputed := map[string]int64{}
	for _, s := range rep {
		for _, r := range s.Tables {
			recomputed[r.Table] = r.RowsRecomputed
		}
	}
	// Every row gains double_amt, and region (zz when it has no country).
	if recomputed["silver/events"] != 5 || recomputed["silver/late_events_5m"] != 1 || recomputed["bronze/events"] != 0 {
		t.Errorf("rows recomputed %v, want silver 5, quarantine 1, bronze 0", recomputed)
	}
	versions := func() map[string]int64 {
		out := map[string]int64{}
		for _, p := range []string{"bronze/events", "silver/events", "silver/late_events_5m"} {
			out[p] = testutil.TableVersion(t, env.Lake, p)
		}
		return out
	}
	before := versions()
	if _, err := BackfillColumns(ctx, env, ""); err != nil {
		t.Fatal(err)
	}
	if after := versions(); !maps.Equal(before, after) {
		t.Errorf("a second backfill committed: versions %v -> %v", before, after)
	}
	// The stream carries on over the backfilled silver: a new row computed as before.
	landLine(t, env, "landing/events/c.json", jsonOf(line{"new-1", "d", "De", 6, "2024-05-01T13:01:00Z"}))
	runIngestStream(t, env)
	check("silver/events", append(lines[:5:5], line{"new-1", "d", "De", 6, ""}))
	env.Lake.Close()

	// A changed expression: refused before any table changes, as the stream refuses it.
	env = openEvolving(t, dir, strings.Replace(grown, "amount * 2", "amount * 3", 1))
	defer env.Lake.Close()
	before = versions()
	_, err = BackfillColumns(ctx, env, "")
	if !errors.Is(err, stream.ErrDefinitionChanged) || !strings.Contains(err.Error(), `computed column double_amt was "amount * 2", is now "amount * 3"`) {
		t.Errorf("backfill after a changed expression: %v, want %v naming double_amt", err, stream.ErrDefinitionChanged)
	}
	if after := versions(); !maps.Equal(before, after) {
		t.Errorf("a refused backfill committed: versions %v -> %v", before, after)
	}
}
