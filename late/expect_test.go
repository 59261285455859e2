package late

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/internal/testutil"
	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/stream"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
)

const expectYAML = `expectations:
  - {name: big_enough, expect: "amount IS NULL OR amount >= 15", on_violation: drop}
  - {name: known_type, expect: "event_type IN ('click', 'view')", on_violation: warn}
  - {name: odd_qty, expect: "qty % 5 <> 0", on_violation: drop}
`

// brow is a bronze row as the expectations oracle sees it.
type brow struct {
	key          string // source file and offset: unique per bronze row
	id           string
	valid        bool // passes the rules that come before expectations
	amt          float64
	amtOK        bool
	typ          string
	typOK, qtyOK bool
	qty          int64
}

// readBronze reads bronze and applies the base rules (event id and time present, event time
// at most an hour after ingest) with its own code.
func readBronze(t testing.TB, lake objstore.Bucket) []brow {
	t.Helper()
	var out []brow
	tbl := table.Open(objstore.WithPrefix(lake, "bronze/events"), table.Options{})
	for b, err := range tbl.Scan(context.Background(), table.ScanOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		id, et, ing := b.Column("event_id"), b.Column("event_time"), b.Column("_ingest_time")
		amt, typ, qty := b.Column("amount"), b.Column("event_type"), b.Column("qty")
		sf, so := b.Column(bronze.ColSourceFile), b.Column(bronze.ColSourceOffset)
		for i := range b.Len() {
			r := brow{key: fmt.Sprintf("%s@%d", sf.StringAt(i), so.Int64[i])}
			r.valid = !id.IsNull(i) && !et.IsNull(i) && et.Int64[i] <= ing.Int64[i]+time.Hour.Microseconds()
			if !id.IsNull(i) {
				r.id = id.StringAt(i)
			}
			if r.amtOK = !amt.IsNull(i); r.amtOK {
				r.amt = amt.Float64[i]
			}
			if r.typOK = !typ.IsNull(i); r.typOK {
				r.typ = typ.StringAt(i)
			}
			if r.qtyOK = !qty.IsNull(i); r.qtyOK {
				r.qty = qty.Int64[i]
			}
			out = append(out, r)
		}
	}
	return out
}

// TestExpectationsPipeline: ingest, stream and merge-late with a warn and two drop
// expectations. Warn keeps every row and counts its violations; drop moves exactly the
// violating rows to rejects with reason expectation:<name> and every violated name in the
// detail; invariant A (bronze = silver + validation rejects + duplicates) and invariant E
// (gold = the batch aggregation of silver after merge-late) hold.
func TestExpectationsPipeline(t *testing.T) {
	lake, cfg, srep := pipeline(t, 7, 6000, 8, expectYAML)
	bronzeRows := readBronze(t, lake)

	// The oracle: which valid rows violate which expectation (judged before dedup).
	var judged, bigFail, typeFail, qtyFail int64
	wantDropped := map[string][]string{}
	for _, r := range bronzeRows {
		if !r.valid {
			continue
		}
		judged++
		var names []string
		if r.amtOK && r.amt < 15 {
			bigFail++
			names = append(names, "big_enough")
		}
		if !r.typOK || (r.typ != "click" && r.typ != "view") {
			typeFail++
			names = append(names, "known_type")
		}
		if !r.qtyOK || r.qty%5 == 0 { // NULL is a violation too
			qtyFail++
			names = append(names, "odd_qty")
		}
		if len(names) > 0 && (names[0] != "known_type" || len(names) > 1) {
			wantDropped[r.key] = names
		}
	}
	if bigFail == 0 || typeFail == 0 || qtyFail == 0 || bigFail == judged {
		t.Fatalf("workload: %d judged, %d/%d/%d violations: the test would not exercise every action", judged, bigFail, typeFail, qtyFail)
	}

	// Counts in the run summary.
	want := []stream.ExpectationProgress{
		{Name: "big_enough", OnViolation: "drop", Passed: judged - bigFail, Failed: bigFail, Dropped: bigFail},
		{Name: "known_type", OnViolation: "warn", Passed: judged - typeFail, Failed: typeFail},
		{Name: "odd_qty", OnViolation: "drop", Passed: judged - qtyFail, Failed: qtyFail, Dropped: qtyFail},
	}
	if fmt.Sprint(srep.Expectations) != fmt.Sprint(want) {
		t.Errorf("report expectations\n got %+v\nwant %+v", srep.Expectations, want)
	}

	// Rejects hold exactly the dropped rows, with the reason and every violated name.
	var validationRejects int
	gotDropped := map[string]bool{}
	for _, r := range jsonRowsOf(t, lake, "bronze/rejects") {
		if r["stage"] != silver.StageValidate {
			continue
		}
		validationRejects++
		reason := r["reason"].(string)
		if !strings.HasPrefix(reason, silver.ReasonExpectationPrefix) {
			continue
		}
		key := fmt.Sprintf("%s@%d", r["source_file"], int64(r["source_offset"].(float64)))
		names, ok := wantDropped[key]
		if !ok {
			t.Errorf("rejects hold %s (%s), which violates no drop expectation", key, reason)
			continue
		}
		gotDropped[key] = true
		first := names[0]
		if first == "known_type" {
			first = names[1]
		}
		if reason != silver.ReasonExpectationPrefix+first {
			t.Errorf("%s: reason %q, want %q", key, reason, silver.ReasonExpectationPrefix+first)
		}
		for _, n := range names {
			if !strings.Contains(r["error"].(string), n+" (") {
				t.Errorf("%s: error %q does not name %s", key, r["error"], n)
			}
		}
		var raw map[string]any
		if err := json.Unmarshal([]byte(r["raw"].(string)), &raw); err != nil {
			t.Errorf("%s: raw %q is not the row as JSON: %v", key, r["raw"], err)
		}
	}
	if len(gotDropped) != len(wantDropped) {
		t.Errorf("rejects hold %d dropped rows, the oracle %d", len(gotDropped), len(wantDropped))
	}

	// Silver: no dropped row, every warned one that is not a duplicate.
	silverRows := jsonRowsOf(t, lake, "silver/events")
	warned := 0
	for _, r := range silverRows {
		if a, ok := r["amount"].(float64); ok && a < 15 {
			t.Errorf("silver holds a row with amount %v", a)
		}
		if q, ok := r["qty"].(float64); !ok || int64(q)%5 == 0 {
			t.Errorf("silver holds a row whose qty violates odd_qty: %v", r)
		}
		if typ, _ := r["event_type"].(string); typ != "click" && typ != "view" {
			warned++
		}
	}
	if warned == 0 {
		t.Error("no warned row reached silver: warn must keep the row")
	}
	// Invariant A, part 2.
	if len(bronzeRows) != len(silverRows)+validationRejects+int(srep.Duplicates) {
		t.Errorf("invariant A: bronze %d != silver %d + validation rejects %d + duplicates %d", len(bronzeRows), len(silverRows), validationRejects, srep.Duplicates)
	}
	if int64(validationRejects) != srep.Rejected {
		t.Errorf("rejects table has %d validation rejects, the report %d", validationRejects, srep.Rejected)
	}

	// Progress: the per-batch counts sum to the report's.
	var sum [3][3]int64
	for _, p := range progressFiles(t, lake) {
		for i, e := range p.Expectations {
			sum[i][0] += e.Passed
			sum[i][1] += e.Failed
			sum[i][2] += e.Dropped
		}
	}
	for i, w := range want {
		if sum[i] != [3]int64{w.Passed, w.Failed, w.Dropped} {
			t.Errorf("%s: progress files sum to %v, want %+v", w.Name, sum[i], w)
		}
	}

	// Invariant E after merge-late.
	if _, err := MergeLate(context.Background(), opts(lake, cfg)); err != nil {
		t.Fatal(err)
	}
	checkInvariantE(t, lake, srep.WatermarkMs)
}

// TestExpectationFailCommitsNothing: a fail expectation violated in a batch stops the run
// before any table write (every table's version unchanged), with an error that names the
// expectation and a violating row; after removing the expectation, a rerun processes the
// batch exactly once (the tables equal those of a run that never had the expectation).
func TestExpectationFailCommitsNothing(t *testing.T) {
	ctx := context.Background()
	lake := mem.New()
	cfg := testConfig(t, "")
	start := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	landAt(t, lake, 71, 1500, 2, start)
	ingest(t, lake, cfg)
	runStream(t, lake, cfg)
	landAt(t, lake, 171, 1500, 2, start.Add(10*time.Second))
	ingest(t, lake, cfg)
	control := cloneLake(t, lake)

	tables := []string{"silver/events", "bronze/rejects", "gold/t5", "gold/s10", "silver/late_t5", "silver/late_s10"}
	versions := func(l objstore.Bucket) []int64 {
		var v []int64
		for _, p := range tables {
			v = append(v, testutil.TableVersion(t, l, p))
		}
		return v
	}
	before := versions(lake)

	failing := testConfig(t, `expectations:
  - {name: small_amount, expect: "amount < 40", on_violation: fail}
`)
	r, err := stream.New(stream.Options{Lake: lake, Query: specs.Query(failing), Trigger: spec.Trigger{Kind: spec.AvailableNow}, Clock: streamClock})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Run(ctx)
	var xe *silver.ExpectationError
	if !errors.As(err, &xe) || !errors.Is(err, silver.ErrExpectationFailed) {
		t.Fatalf("run: %v, want an *ExpectationError", err)
	}
	if xe.Name != "small_amount" || !strings.Contains(err.Error(), `"small_amount"`) || xe.Violations == 0 {
		t.Errorf("error %v does not name the expectation and its violations", err)
	}
	var row map[string]any
	if err := json.Unmarshal([]byte(xe.Row), &row); err != nil {
		t.Fatalf("row %q is not JSON: %v", xe.Row, err)
	}
	if a, ok := row["amount"].(float64); ok && a < 40 {
		t.Errorf("the sample row %s does not violate amount < 40", xe.Row)
	}
	if !strings.Contains(err.Error(), xe.Row) || xe.SourceFile == "" || xe.SourceOffset < 0 {
		t.Errorf("error %v lacks the row or its source (%q, %d)", err, xe.SourceFile, xe.SourceOffset)
	}
	if after := versions(lake); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("table versions %v after the failed batch, %v before: the batch committed something", after, before)
	}

	// Rerun without the expectation, and a control run that never had it.
	rep := runStream(t, lake, cfg)
	crep := runStream(t, control, cfg)
	if rep.SilverRows != crep.SilverRows || rep.Rejected != crep.Rejected || rep.Duplicates != crep.Duplicates || rep.SilverRows == 0 {
		t.Errorf("rerun after the failure: %+v; control: %+v", rep, crep)
	}
	for _, p := range tables {
		got, want := goldState(t, lake, p), goldState(t, control, p)
		if p == "bronze/rejects" || strings.HasPrefix(p, "silver/late") {
			// rejected_at and the quarantine's batch id follow the batch; compare counts.
			if len(got) != len(want) {
				t.Errorf("%s: %d rows after the rerun, %d in the control", p, len(got), len(want))
			}
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s differs from the control run after the rerun (%d rows, control %d)", p, len(got), len(want))
		}
	}
}

func jsonRowsOf(t testing.TB, lake objstore.Bucket, path string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, s := range goldState(t, lake, path) {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// progressFiles reads every progress report the stream left in its checkpoint.
func progressFiles(t testing.TB, lake objstore.Bucket) []struct{ Expectations []stream.ExpectationProgress } {
	t.Helper()
	ctx := context.Background()
	var out []struct{ Expectations []stream.ExpectationProgress }
	for info, err := range lake.List(ctx, "_checkpoints/", objstore.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(info.Key, "progress") {
			continue
		}
		data, err := objstore.ReadAll(ctx, lake, info.Key)
		if err != nil {
			t.Fatal(err)
		}
		var p struct{ Expectations []stream.ExpectationProgress }
		if err := json.Unmarshal(data, &p); err != nil {
			t.Fatalf("%s: %v", info.Key, err)
		}
		out = append(out, p)
	}
	return out
}

// TestReplayFromBronzeDropsWhatExpectationsDrop: replay from bronze re-validates rows with the
// drop expectations too, so gold ends equal to the batch aggregation of silver (which never
// held the dropped rows) as replay from silver does.
func TestReplayFromBronzeDropsWhatExpectationsDrop(t *testing.T) {
	base, cfg, srep := pipeline(t, 15, 4000, 5, `expectations:
  - {name: big_enough, expect: "amount IS NULL OR amount >= 15", on_violation: drop}
  - {name: odd_qty, expect: "qty % 5 <> 0", on_violation: warn}
`)
	if srep.Expectations[0].Dropped == 0 {
		t.Fatal("nothing dropped: the test proves nothing")
	}
	r := replayRange(silverTimes(t, base), 0.2, 0.7)
	for _, src := range []string{SourceSilver, SourceBronze} {
		lake := cloneLake(t, base)
		damage(t, lake, "gold/t5", r.From.UnixMicro(), r.To.UnixMicro())
		r.Source = src
		if _, err := Replay(context.Background(), opts(lake, cfg), r); err != nil {
			t.Fatal(err)
		}
		checkInvariantE(t, lake, srep.WatermarkMs)
	}
}
