package stream

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/join"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
)

// TestJoinProgressAndOffsets runs an inner ±5s join (delays 10s) and reads the join's progress and offsets log: Spark's symmetricHashJoin operator with medallion's
// per-side counts, both sources, the per-source watermarks in eventTime, and in offsets/N
// the per-source and output watermarks that late/ and report/ read.
func TestJoinProgressAndOffsets(t *testing.T) {
	lake := mem.New()
	j := joinSpec("inner", -5*time.Second, 5*time.Second, 10*time.Second, 10*time.Second)
	appendSilver(t, lake, "silver/imp", rows(jL("1", 100), jL("1", 101)))
	appendSilver(t, lake, "silver/clk", rows(jR("1", 50), jR("1", 104), jR("1", 98)))
	rep := runJoin(t, lake, j, spec.AvailableNow)
	// Batch 0: L1@100 and L1@101 each meet R1@104 and R1@98 (R1@50 is out of range): four
	// pairs. Then W = min(101 - 10, 104 - 10) = 91 s, applied by a no-data batch.
	if rep.Batches != 2 || rep.MatchedRows != 4 || rep.OutputRows != 4 || rep.LeftRows != 2 || rep.RightRows != 3 {
		t.Fatalf("report %+v", rep)
	}
	p := joinProgress(t, lake, j.Checkpoint, 0, 1)
	op := joinOperator(t, p[0])
	cm := op["customMetrics"].(map[string]any)
	want := map[string]float64{
		JoinMetricLeftInputRows: 2, JoinMetricRightInputRows: 3, JoinMetricMatchedRows: 4,
		JoinMetricLeftStateRows: 2, JoinMetricRightStateRows: 3, JoinMetricLeftUnmatchedRows: 0, JoinMetricRightUnmatchedRows: 0,
		JoinMetricLateLeftRows: 0, JoinMetricLateRightRows: 0, CustomMetricLateRowsQuarantined: 0,
	}
	for k, v := range want {
		if cm[k] != v {
			t.Fatalf("customMetrics[%s] = %v, want %v (%v)", k, cm[k], v, cm)
		}
	}
	lb, rb := cm[JoinMetricLeftStateBytes].(float64), cm[JoinMetricRightStateBytes].(float64)
	if lb <= 0 || rb <= 0 || op["memoryUsedBytes"] != lb+rb || op["numRowsTotal"] != 5.0 || op["numRowsUpdated"] != 5.0 || op["numStateStoreInstances"] != 4.0 {
		t.Fatalf("symmetricHashJoin %v", op)
	}
	if p[0]["numInputRows"] != 5.0 {
		t.Fatalf("numInputRows %v", p[0]["numInputRows"])
	}
	srcs := p[0]["sources"].([]any)
	if len(srcs) != 2 || srcs[0].(map[string]any)["description"] != "DeltaSource[silver/imp]" || srcs[1].(map[string]any)["numInputRows"] != 3.0 {
		t.Fatalf("sources %v", srcs)
	}
	// Batch 1 is the no-data batch with W = min(101, 104) - 10 s = 91 s.
	et := p[1]["eventTime"].(map[string]any)
	if et["watermark"] != "1970-01-01T00:01:31.000Z" || et["watermark.imp"] != "1970-01-01T00:01:31.000Z" || et["watermark.clk"] != "1970-01-01T00:01:34.000Z" {
		t.Fatalf("eventTime %v", et)
	}
	if s := p[0]["sink"].(map[string]any); s["description"] != "DeltaSink[gold/joined]" {
		t.Fatalf("sink %v", s)
	}
	d := checkpoint.Open(objstore.WithPrefix(lake, j.Checkpoint))
	e, err := d.ReadOffsets(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	// The output watermark: min(SL, SR, W) = 91 s - 5 s - 1 ms (spec §3.4).
	if e.BatchWatermarkMs != 91000 || len(e.Sources) != 2 || e.Sources[0] == nil || e.Sources[1] == nil ||
		e.SourceWatermarksMs["imp"] != 91000 || e.SourceWatermarksMs["clk"] != 94000 || e.OutputWatermarkMs == nil || *e.OutputWatermarkMs != 85999 {
		t.Fatalf("offsets/1 = %+v", e)
	}
	// A new runner resumes the per-source watermarks: clicks at 94 s holds nothing back, the
	// impressions' new row at 150 s moves W to min(140, 94) = 94 s.
	appendSilver(t, lake, "silver/imp", rows(jL("2", 150)))
	rep = runJoin(t, lake, j, spec.AvailableNow)
	if rep.WatermarkMs != 94000 || rep.SourceWatermarksMs["imp"] != 140000 || rep.SourceWatermarksMs["clk"] != 94000 {
		t.Fatalf("after a restart: %+v", rep)
	}
	// A run with nothing new runs no batch and still reports the sources' watermarks (the
	// summary dropped sourceWatermarksMs when batches was 0).
	rep = runJoin(t, lake, j, spec.AvailableNow)
	if rep.Batches != 0 || rep.SourceWatermarksMs["imp"] != 140000 || rep.SourceWatermarksMs["clk"] != 94000 {
		t.Fatalf("a run with nothing new: %+v", rep)
	}
}

// TestJoinRejects: the combinations Spark rejects fail NewJoin with Spark's text, and so do
// an event-time column among the join keys and an unknown type; a join whose silver tables do
// not exist yet runs no batch and fails nothing.
func TestJoinRejects(t *testing.T) {
	s := time.Second
	noWM := joinSpec("left_outer", -5*s, 5*s, 10*s, 10*s)
	noWM.Right.Watermark = spec.Watermark{}
	onTime := joinSpec("inner", -5*s, 5*s, 10*s, 10*s)
	onTime.On = append(onTime.On, spec.JoinKey{Left: "t", Right: "t"})
	noKeys := joinSpec("inner", -5*s, 5*s, 10*s, 10*s)
	noKeys.On = nil
	for _, tc := range []struct {
		name string
		j    spec.Join
		is   error
		text string
	}{
		{"outer without the nullable side's watermark", noWM, join.ErrUnsupportedOperation, "Stream-stream LeftOuter join between two streaming DataFrame/Datasets is not supported without a watermark"},
		{"left anti", joinSpec("left_anti", -5*s, 5*s, 10*s, 10*s), join.ErrUnsupportedOperation, "LeftAnti joins with a streaming DataFrame/Dataset on the right are not supported"},
		{"no equality", noKeys, join.ErrUnsupportedOperation, "Stream-stream join without equality predicate is not supported"},
		{"event time as key", onTime, join.ErrBadSpec, "names a source's event-time column"},
		{"unknown type", joinSpec("outer", 0, s, s, s), join.ErrBadSpec, `unknown join type "outer"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewJoin(JoinOptions{Lake: mem.New(), Join: tc.j})
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("err = %v, want %v with %q", err, tc.is, tc.text)
			}
		})
	}
	lake := mem.New()
	appendSilver(t, lake, "silver/imp", rows(jL("1", 100)))
	rep := runJoin(t, lake, joinSpec("inner", -5*s, 5*s, 10*s, 10*s), spec.AvailableNow)
	if rep.Batches != 0 || rep.LastBatch != -1 {
		t.Fatalf("a join without its right silver table ran: %+v", rep)
	}
	// Once the right table exists, the left rows are read from the start.
	appendSilver(t, lake, "silver/clk", rows(jR("1", 101)))
	if rep := runJoin(t, lake, joinSpec("inner", -5*s, 5*s, 10*s, 10*s), spec.AvailableNow); rep.OutputRows != 1 {
		t.Fatalf("after the right table appeared: %+v", rep)
	}
}

// progressCh passes each batch's progress to the test.
type progressCh chan *Progress

func (c progressCh) OnProgress(p *Progress) { c <- p }

// TestJoinProcessingTime: a processing-time join picks up rows appended while it runs, runs
// the no-data batch the watermark asks for, and stops without an error when cancelled.
func TestJoinProcessingTime(t *testing.T) {
	lake := mem.New()
	j := joinSpec("left_outer", 0, 5*time.Second, 10*time.Second, 10*time.Second)
	appendSilver(t, lake, "silver/imp", rows(jL("1", 10), jL("2", 10)))
	appendSilver(t, lake, "silver/clk", rows(jR("1", 12)))
	ch := make(progressCh, 100)
	r, err := NewJoin(JoinOptions{Lake: lake, Join: j, Trigger: spec.Trigger{Kind: spec.ProcessingTime, Interval: 5 * time.Millisecond}, Listener: ch})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var rep JoinReport
	go func() {
		var err error
		rep, err = r.Run(ctx)
		done <- err
	}()
	<-ch
	appendSilver(t, lake, "silver/imp", rows(jL("3", 100)))
	appendSilver(t, lake, "silver/clk", rows(jR("3", 101)))
	// The batches after read the new rows (one side each, or both at once); then W = 90 s,
	// and the batch that runs with it evicts L2@10 unmatched.
	for p := range ch {
		if p.EventTime["watermark"] == "1970-01-01T00:01:30.000Z" {
			break
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := joinedRows(t, lake, j.Table); !slices.Equal(got, []string{"(L1@10,R1@12)", "(L2@10,null)", "(L3@100,R3@101)"}) {
		t.Fatalf("joined %v", got)
	}
	if rep.Batches < 3 || rep.WatermarkMs != 90000 {
		t.Fatalf("report %+v", rep)
	}
}

// TestCreateJoinTables: init creates the joined table, the join quarantine and the gold
// tables with the joined schema (the right columns renamed) before any batch, and refuses a
// join whose silver table is missing, naming it.
func TestCreateJoinTables(t *testing.T) {
	lake := mem.New()
	j := crashJoin()
	appendSilver(t, lake, "silver/imp", nil)
	err := CreateJoinTables(context.Background(), JoinOptions{Lake: lake, Join: j})
	if err == nil || !strings.Contains(err.Error(), "silver/clk") {
		t.Fatalf("err = %v, want one naming silver/clk", err)
	}
	appendSilver(t, lake, "silver/clk", nil)
	if err := CreateJoinTables(context.Background(), JoinOptions{Lake: lake, Join: j}); err != nil {
		t.Fatal(err)
	}
	for path, cols := range map[string]string{
		"gold/joined":        "id k t clk_id clk_k clk_t",
		"silver/late_joined": "id k t clk_id clk_k clk_t side late_watermark batch_id query_id",
		"gold/jcount":        "window k count late_rows",
		"silver/late_jcount": "id k t clk_id clk_k clk_t late_watermark batch_id query_id",
	} {
		snap, err := table.Open(objstore.WithPrefix(lake, path), table.Options{}).Log().Snapshot(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		schema, _ := snap.Schema()
		var names []string
		for _, f := range schema.Fields {
			names = append(names, f.Name)
		}
		if got := strings.Join(names, " "); got != cols {
			t.Fatalf("%s has columns %s, want %s", path, got, cols)
		}
	}
	if n, _ := checkpoint.Open(objstore.WithPrefix(lake, j.Checkpoint)).LatestOffsets(context.Background()); n != -1 {
		t.Fatalf("init wrote offsets/%d", n)
	}
}
