package stream

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/internal/testutil"
	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

func ckptBucket(lake objstore.Bucket) objstore.Bucket {
	return objstore.WithPrefix(lake, "_checkpoints/events")
}

func exists(t *testing.T, b objstore.Bucket, key string) bool {
	t.Helper()
	_, err := b.Stat(context.Background(), key)
	if err != nil && !errors.Is(err, objstore.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// TestC1C2C3 replays a batch whose sinks committed but whose commits/N is missing (C3): the
// tables skip it (C1, no new version), commits/N is written, no row is duplicated; the next
// batch makes exactly one commit per table carrying txn(query id, N) (C2).
func TestC1C2C3(t *testing.T) {
	ctx := context.Background()
	lake := mem.New()
	cfg := parseConfig(t, "10m", "", countGold)
	appendBronze(t, lake, []ev{{ID: "a", T: hm("12:07")}, {ID: "b", T: hm("12:08")}, {ID: "c", T: hm("12:14")}})
	rep := mustRun(t, lake, cfg, "once")
	ck := ckptBucket(lake)
	if rep.Batches != 1 || !exists(t, ck, "commits/0") || exists(t, ck, "offsets/1") {
		t.Fatalf("once ran %d batches; want exactly batch 0 and no trailing no-data batch", rep.Batches)
	}
	v := testutil.TableVersion(t, lake, "silver/events")
	if err := ck.Delete(ctx, "commits/0"); err != nil { // crash after the sinks, before commits/0
		t.Fatal(err)
	}
	rep = mustRun(t, lake, cfg, "once")
	if rep.Batches != 1 || rep.LastBatch != 0 {
		t.Fatalf("restart ran batches up to %d (%d), want a re-run of batch 0 only", rep.LastBatch, rep.Batches)
	}
	if got := testutil.TableVersion(t, lake, "silver/events"); got != v {
		t.Fatalf("C1: re-run of batch 0 made silver version %d, want %d (skipped)", got, v)
	}
	if !exists(t, ck, "commits/0") || len(tableRows(t, lake, "silver/events")) != 3 {
		t.Fatal("C3: commits/0 missing or silver rows duplicated")
	}
	appendBronze(t, lake, []ev{{ID: "d", T: hm("12:21")}})
	mustRun(t, lake, cfg, "once")
	silverT := table.Open(objstore.WithPrefix(lake, "silver/events"), table.Options{})
	snap, err := silverT.Log().Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version() != v+1 {
		t.Fatalf("C2: batch 1 made silver versions %d..%d, want one", v+1, snap.Version())
	}
	data, err := objstore.ReadAll(ctx, silverT.Bucket(), txlog.CommitKey(snap.Version()))
	if err != nil {
		t.Fatal(err)
	}
	actions, _ := txlog.ParseActions(data)
	var txn *txlog.Txn
	adds := 0
	for _, a := range actions {
		if a.Txn != nil {
			txn = a.Txn
		}
		if a.Add != nil {
			adds++
		}
	}
	if txn == nil || txn.AppID != rep.QueryID || txn.Version != 1 || adds == 0 {
		t.Fatalf("C2: commit holds txn %+v and %d files, want txn(%s, 1) with the files", txn, adds, rep.QueryID)
	}
}

// TestWME5RerunReusesOffsets fails batch 2 before any sink wrote, then restarts with another
// clock: the re-run uses offsets/2's watermark and batch timestamp exactly (WM-E5), so the
// rejects it writes carry the first attempt's time.
func TestWME5RerunReusesOffsets(t *testing.T) {
	ctx := context.Background()
	lake := mem.New()
	cfg := parseConfig(t, "10m", "", countGold)
	appendBronze(t, lake, []ev{{ID: "a", T: hm("12:07")}, {ID: "b", T: hm("12:14")}})
	mustRun(t, lake, cfg, "available-now") // batch 0 and a no-data batch 1: W = 12:04
	appendBronze(t, lake, []ev{{ID: "c", T: hm("12:30")}, {ID: "bad"}})
	first := time.Date(2024, 5, 3, 0, 0, 0, 0, time.UTC)
	// Reading batch 2's bronze file fails: offsets/2 is written, no sink is.
	faulty := objstore.WithFaults(lake, objstore.FaultPlan{Faults: []objstore.Fault{{Op: objstore.OpGetRange, KeyPrefix: "bronze/events/part-", Rate: 1}, {Op: objstore.OpGet, KeyPrefix: "bronze/events/part-", Rate: 1}}})
	r, _ := New(Options{Lake: faulty, Query: specs.Query(cfg), Clock: func() time.Time { return first }, Trigger: mustTrigger(t, "once")})
	if _, err := r.Run(ctx); err == nil {
		t.Fatal("the faulty run succeeded")
	}
	ck := ckptBucket(lake)
	e, err := checkpoint.Open(ck).ReadOffsets(ctx, 2)
	if err != nil || exists(t, ck, "commits/2") {
		t.Fatalf("offsets/2 %v (%v); commits/2 must not exist", e, err)
	}
	r2, _ := New(Options{Lake: lake, Query: specs.Query(cfg), Clock: func() time.Time { return first.Add(time.Hour) }, Trigger: mustTrigger(t, "once")})
	rep, err := r2.Run(ctx)
	if err != nil || rep.LastBatch != 2 || rep.Batches != 1 {
		t.Fatalf("restart: %+v, %v; want a re-run of batch 2 only", rep, err)
	}
	if e.BatchWatermarkMs != hm("12:04").UnixMilli() || e.BatchTimestampMs != first.UnixMilli() {
		t.Fatalf("offsets/2 = %+v", e)
	}
	var rejectedAt []string
	for _, row := range jsonRows(t, lake, "bronze/rejects") {
		rejectedAt = append(rejectedAt, row["rejected_at"].(string))
		if row["reason"] != silver.ReasonMissingEventTime || !strings.Contains(row["raw"].(string), `"event_id":"bad"`) {
			t.Errorf("reject %v: want reason %s and the raw row", row, silver.ReasonMissingEventTime)
		}
	}
	if !slices.Equal(rejectedAt, []string{"2024-05-03T00:00:00Z"}) {
		t.Fatalf("rejected_at %v, want the first attempt's batch timestamp once", rejectedAt)
	}
	c, err := checkpoint.Open(ck).ReadCommit(ctx, 2)
	if err != nil || c.NextBatchWatermarkMs != hm("12:20").UnixMilli() {
		t.Fatalf("commits/2 = %+v, %v", c, err)
	}
}

func mustTrigger(t *testing.T, s string) spec.Trigger {
	t.Helper()
	return parseTrigger(t, s)
}

// TestT1T2AvailableNowAndOnce is T1/T2 through the runner: with max_files_per_trigger 1,
// available-now reads 3 bronze files in 3 data batches (plus the watermark's no-data batch);
// once reads all of them in one batch.
func TestT1T2AvailableNowAndOnce(t *testing.T) {
	for _, tc := range []struct {
		trigger string
		batches int
		files   []int
	}{{"available-now", 4, []int{1, 1, 1, 0}}, {"once", 1, []int{3}}} {
		t.Run(tc.trigger, func(t *testing.T) {
			lake := mem.New()
			cfg := parseConfig(t, "10m", "  max_files_per_trigger: 1", countGold)
			for i, ts := range []string{"12:01", "12:02", "12:30"} {
				appendBronze(t, lake, []ev{{ID: string(rune('a' + i)), T: hm(ts)}})
			}
			rep := mustRun(t, lake, cfg, tc.trigger)
			if rep.Batches != tc.batches || rep.InputRows != 3 {
				t.Fatalf("%d batches, %d rows; want %d batches, 3 rows", rep.Batches, rep.InputRows, tc.batches)
			}
			for n, want := range tc.files {
				data, err := objstore.ReadAll(context.Background(), ckptBucket(lake), checkpoint.ProgressKey(int64(n)))
				if err != nil {
					t.Fatal(err)
				}
				var p struct{ NumInputRows int }
				_ = json.Unmarshal(data, &p)
				if p.NumInputRows != want {
					t.Errorf("batch %d read %d rows, want %d", n, p.NumInputRows, want)
				}
			}
		})
	}
}

// TestValidationRejects sends each kind of invalid row to rejects with a reason a person can
// act on; only valid rows move the watermark.
func TestValidationRejects(t *testing.T) {
	lake := mem.New()
	cfg := parseConfig(t, "10m", "", countGold)
	ingest := hm("13:00")
	appendBronze(t, lake, []ev{
		{ID: "ok", T: hm("12:07"), Ingest: ingest},
		{ID: "nulltime", Ingest: ingest},
		{ID: "", T: hm("12:08"), Ingest: ingest},
		{ID: "future", T: hm("14:00:01"), Ingest: ingest},
	})
	rep := mustRun(t, lake, cfg, "once")
	if rep.SilverRows != 1 || rep.Rejected != 3 || rep.WatermarkMs != hm("11:57").UnixMilli() {
		t.Fatalf("report %+v: want 1 silver row, 3 rejects, watermark 11:57", rep)
	}
	got := map[string]string{}
	for _, r := range jsonRows(t, lake, "bronze/rejects") {
		if r["stage"] != silver.StageValidate || r["source_file"] != "landing/test.json" || r["error"] == "" {
			t.Errorf("reject %v", r)
		}
		got[r["reason"].(string)] = r["raw"].(string)
	}
	for reason, id := range map[string]string{silver.ReasonMissingEventTime: "nulltime", silver.ReasonMissingRequired: `"event_id":null`, silver.ReasonFuture: "future"} {
		if !strings.Contains(got[reason], id) {
			t.Errorf("reason %s: raw %q, want it to hold %s", reason, got[reason], id)
		}
	}
}

// TestSessionS5ThroughRunner is vector S5 through the runner: a late-arriving event bridges
// two sessions of key A into one, [0s, 30s) with 4 events, emitted once when the watermark
// passes its end (gap 10 s, watermark delay 1 h).
func TestSessionS5ThroughRunner(t *testing.T) {
	lake := mem.New()
	cfg := parseConfig(t, "1h", "", `
  - name: s
    table: gold/s
    quarantine: silver/late_s
    window: {type: session, gap: 10s}
    group_by: [event_type]
    aggregates: [{fn: count, as: count}, {fn: sum, column: amount, as: total}]
`)
	at := func(s int) time.Time { return day.Add(time.Duration(s) * time.Second) }
	for _, in := range [][]int{{0, 5, 20}, {12}, {2 * 3600}} {
		var rows []ev
		for _, s := range in {
			rows = append(rows, ev{ID: fmt.Sprint(s), Type: "A", Amount: 1, T: at(s)})
		}
		appendBronze(t, lake, rows)
		mustRun(t, lake, cfg, "available-now")
	}
	got := tableRows(t, lake, "gold/s")
	// _total_exact is the internal exact sum, 4 = 1·2^2 in gold.Exact's canonical encoding
	// (docs/exact-sums.md): flags 0, the exponent 2 as a zig-zag varint (0x04), one byte of
	// significand, 0x01: AAQBAQ== in base64.
	want := []string{`{"window":{"start":"2024-05-01T00:00:00Z","end":"2024-05-01T00:00:30Z"},"event_type":"A","count":4,"total":4,"late_rows":0,"_total_exact":"AAQBAQ=="}`}
	if !slices.Equal(got, want) {
		t.Fatalf("sessions %v, want %v", got, want)
	}
}

// TestExactDedupBeyondState: a resend whose key was already evicted from the dedup state (its
// event time is below the watermark) is still found in silver and dropped as a duplicate, while
// a new late row is kept in silver (and quarantined), where Spark would drop both as late.
func TestExactDedupBeyondState(t *testing.T) {
	lake := mem.New()
	cfg := parseConfig(t, "10m", "  dedup: [event_id]", countGold)
	appendBronze(t, lake, []ev{{ID: "a", T: hm("12:00")}})
	mustRun(t, lake, cfg, "available-now")
	appendBronze(t, lake, []ev{{ID: "z", T: hm("12:30")}})
	mustRun(t, lake, cfg, "available-now") // W = 12:20: key a evicted by the no-data batch
	appendBronze(t, lake, []ev{{ID: "a", T: hm("12:00")}, {ID: "b", T: hm("12:01")}, {ID: "b", T: hm("12:01")}})
	rep := mustRun(t, lake, cfg, "available-now")
	if rep.Duplicates != 2 || rep.SilverRows != 1 {
		t.Fatalf("report %+v: want the resent a and the second b dropped, b kept", rep)
	}
	var ids []string
	for _, r := range jsonRows(t, lake, "silver/events") {
		ids = append(ids, r["event_id"].(string))
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"a", "b", "z"}) {
		t.Fatalf("silver ids %v", ids)
	}
	if q := jsonRows(t, lake, "silver/late_w5"); len(q) != 1 || q[0]["event_id"] != "b" {
		t.Fatalf("quarantine %v, want b", q)
	}
}

// TestEveryAggregateFunction writes each aggregate to gold in the documented layout (avg with
// its sum and count, sketches with their state) and checks the values against plain Go math.
func TestEveryAggregateFunction(t *testing.T) {
	lake := mem.New()
	cfg := parseConfig(t, "1m", "", `
  - name: all
    table: gold/all
    quarantine: silver/late_all
    window: {type: tumbling, size: 1h}
    group_by: [event_type]
    aggregates:
      - {fn: count, column: amount, as: n}
      - {fn: sum, column: amount, as: total}
      - {fn: min, column: amount, as: lo}
      - {fn: max, column: amount, as: hi}
      - {fn: avg, column: amount, as: mean}
      - {fn: approx_count_distinct, column: event_id, as: ids}
      - {fn: approx_percentile, column: amount, as: p, percentiles: [0.5]}
`)
	var rows []ev
	for i := range 1000 {
		rows = append(rows, ev{ID: fmt.Sprint(i % 400), Type: "t", Amount: float64(i%100 + 1), T: hm("12:00").Add(time.Duration(i) * time.Second)})
	}
	appendBronze(t, lake, rows)
	appendBronze(t, lake, []ev{{ID: "late", Type: "t", T: hm("14:00")}})
	mustRun(t, lake, cfg, "available-now")
	got := jsonRows(t, lake, "gold/all")
	if len(got) != 1 {
		t.Fatalf("gold rows %v", got)
	}
	g := got[0]
	// 1000 amounts cycling 1..100: sum 50500, mean 50.5, median 50 or 51.
	for col, want := range map[string]float64{"n": 1000, "total": 50500, "lo": 1, "hi": 100, "mean": 50.5, "mean_sum": 50500, "mean_count": 1000, "late_rows": 0} {
		if g[col] != want {
			t.Errorf("%s = %v, want %v", col, g[col], want)
		}
	}
	if ids := g["ids"].(float64); math.Abs(ids-400) > 400*0.05*3 {
		t.Errorf("approx_count_distinct %v, want about 400", ids)
	}
	if p := g["p"].([]any)[0].(float64); p < 49 || p > 52 {
		t.Errorf("median %v, want about 50.5", p)
	}
	for _, sk := range []string{"ids_sketch", "p_sketch"} {
		raw, err := base64.StdEncoding.DecodeString(g[sk].(string))
		if err != nil {
			t.Fatal(err)
		}
		if _, rest, err := gold.DecodeAggValue(raw); err != nil || len(rest) != 0 {
			t.Errorf("%s does not decode as an aggregate state: %v (%d bytes left)", sk, err, len(rest))
		}
	}
}
