package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/objstore/mem"
)

// specExampleProgress is batch 4 of vector WM, built from our own pieces (tracker stats,
// operator metrics) with the §5 example's illustrative timings.
func specExampleProgress(t *testing.T) *Progress {
	tr, _ := gold.NewWatermarkTracker(gold.PolicyMin, []int64{10 * 60 * 1000}, 0)
	tr.Observe(0, []int64{at(12, 21), at(12, 2), at(12, 4)}, nil)
	return &Progress{
		ID: "4f0f3c8e-6a51-4c2b-9a57-2b0e9d1d7a10", RunID: "b7e2c1d4-1f3a-4e0b-8c55-0c6f3a9e2d11",
		Name: "gold_window_counts", Timestamp: time.Date(2024, 5, 1, 12, 30, 0, 0, time.UTC),
		BatchID: 4, NumInputRows: 3, InputRowsPerSecond: 0.3, ProcessedRowsPerSecond: 2.5,
		DurationMs: map[string]int64{"triggerExecution": 1200, "addBatch": 950, "walCommit": 45, "commitOffsets": 40,
			"getBatch": 5, "latestOffset": 60, "queryPlanning": 90},
		EventTime: EventTimeProgress(tr.Stats(0), msAt(12, 5), true),
		StateOperators: []StateOperatorProgress{{
			OperatorName: "stateStoreSave", NumRowsTotal: 4, NumRowsUpdated: 1, AllUpdatesTimeMs: 12,
			AllRemovalsTimeMs: 3, CommitTimeMs: 110, MemoryUsedBytes: 91240, NumRowsDroppedByWatermark: 1,
			NumShufflePartitions: 200, NumStateStoreInstances: 200,
			CustomMetrics: map[string]int64{"stateOnCurrentVersionSizeBytes": 30512, "loadedMapCacheMissCount": 0, "loadedMapCacheHitCount": 400},
		}},
		Sources: []SourceProgress{{
			Description:  "DeltaSource[file:/lake/silver/events]",
			StartOffset:  OffsetJSON(`{"sourceVersion":1,"reservoirId":"9d3c...","reservoirVersion":41,"index":-1,"isStartingVersion":false}`),
			EndOffset:    OffsetJSON(`{"sourceVersion":1,"reservoirId":"9d3c...","reservoirVersion":42,"index":-1,"isStartingVersion":false}`),
			NumInputRows: 3, InputRowsPerSecond: 0.3, ProcessedRowsPerSecond: 2.5,
			Metrics: map[string]string{"numFilesOutstanding": "0", "numBytesOutstanding": "0"},
		}},
		Sink: SinkProgress{Description: "DeltaSink[file:/lake/gold/window_counts]", NumOutputRows: -1},
	}
}

func TestProgressGoldenSpecExample(t *testing.T) {
	golden, err := os.ReadFile("testdata/progress_spec_example.json")
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, golden); err != nil {
		t.Fatal(err)
	}
	got, err := specExampleProgress(t).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("progress JSON differs from the spec example:\n got %s\nwant %s", got, want.Bytes())
	}
}

func TestProgressOmissions(t *testing.T) {
	p := specExampleProgress(t)
	p.Name = ""
	p.InputRowsPerSecond = math.NaN()
	p.ProcessedRowsPerSecond = math.Inf(1)
	p.DurationMs = nil
	p.EventTime = EventTimeProgress(gold.EventTimeStats{}, 0, true)
	p.StateOperators[0].CustomMetrics[CustomMetricLateRowsQuarantined] = 2
	b, _ := p.MarshalJSON()
	s := string(b)
	for _, want := range []string{`"name":null`, `"eventTime":{"watermark":"1970-01-01T00:00:00.000Z"}`,
		`"loadedMapCacheMissCount":0,"numLateRowsQuarantined":2,"stateOnCurrentVersionSizeBytes":30512`} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %s in %s", want, s)
		}
	}
	for _, absent := range []string{`"durationMs"`, `"batchId":4,"numInputRows":3,"inputRowsPerSecond"`, `Inf`, `NaN`} {
		if strings.Contains(s, absent) {
			t.Errorf("unexpected %s in %s", absent, s)
		}
	}
	if !json.Valid(b) {
		t.Fatalf("invalid JSON %s", s)
	}
}

func TestJavaDouble(t *testing.T) {
	for v, want := range map[float64]string{0: "0.0", 2.5: "2.5", 3: "3.0", 1e7: "1.0E7", 12345678.9: "1.23456789E7",
		0.0001: "1.0E-4", 0.001: "0.001", -42: "-42.0", 1.0 / 3: "0.3333333333333333"} {
		if got := JavaDouble(v); got != want {
			t.Errorf("JavaDouble(%v) = %s, want %s", v, got, want)
		}
	}
	if got := InputRowsPerSecond(3, time.Time{}, time.Now()); got != 0 {
		t.Errorf("first trigger rate %v", got)
	}
	if got := ProcessedRowsPerSecond(5, 0); got != 5000 {
		t.Errorf("processed rate with 0 duration %v, want 5000 (1 ms floor)", got)
	}
}

// at is hh:mm on 2024-05-01 UTC in µs, msAt the same in ms.
func at(h, m int) int64   { return time.Date(2024, 5, 1, h, m, 0, 0, time.UTC).UnixMicro() }
func msAt(h, m int) int64 { return at(h, m) / 1000 }

// The expectations section comes after Spark's keys, one object per expectation in order, and
// only when the query has expectations.
func TestProgressExpectations(t *testing.T) {
	p := specExampleProgress(t)
	without, _ := p.MarshalJSON()
	if strings.Contains(string(without), "expectations") {
		t.Fatalf("a query without expectations writes the key: %s", without)
	}
	p.Expectations = []ExpectationProgress{{Name: "a", OnViolation: "drop", Passed: 5, Failed: 2, Dropped: 2},
		{Name: "b", OnViolation: "warn", Passed: 7}}
	b, _ := p.MarshalJSON()
	want := `,"expectations":[{"name":"a","onViolation":"drop","passed":5,"failed":2,"dropped":2},{"name":"b","onViolation":"warn","passed":7,"failed":0,"dropped":0}]}`
	if !strings.HasSuffix(string(b), want) || !json.Valid(b) {
		t.Errorf("progress ends %s, want %s", b[max(0, len(b)-len(want)):], want)
	}
	if !strings.HasPrefix(string(b), string(without[:len(without)-1])) {
		t.Error("the expectations changed Spark's part of the progress")
	}
}

// TestProgressMemoryUsedBytes: every state operator reports its state's footprint, which
// grows with the groups and keys it holds and falls back when the watermark closes windows.
func TestProgressMemoryUsedBytes(t *testing.T) {
	lake := mem.New()
	cfg := parseConfig(t, "10m", "  dedup: [event_id]", `
  - name: w5
    table: gold/w5
    quarantine: silver/late_w5
    window: {type: tumbling, size: 5m}
    group_by: [event_type]
    aggregates: [{fn: count, as: count}]
`)
	var rows []ev
	for i := range 2000 {
		rows = append(rows, ev{ID: fmt.Sprintf("e%05d", i), Type: fmt.Sprintf("k%d", i%500), T: hm("12:00").Add(time.Duration(i) * 300 * time.Millisecond)})
	}
	appendBronze(t, lake, rows)
	progress := make(chanListener, 100)
	r, err := New(Options{Lake: lake, Query: specs.Query(cfg), Clock: runStreamClock, Listener: progress})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(progress)
	var first *Progress
	for p := range progress {
		if first == nil {
			first = p
		}
	}
	if first == nil || len(first.StateOperators) != 2 {
		t.Fatalf("want a batch with dedupe and one aggregation, got %+v", first)
	}
	for _, op := range first.StateOperators {
		// 2000 dedup keys of 8+ bytes, or 500 keys x 4 windows of groups: far above any
		// fixed overhead, below what a per-row estimate of Spark's (~1 KB a row) would say.
		if op.MemoryUsedBytes < 10_000 || op.MemoryUsedBytes > 1<<20 {
			t.Errorf("%s: memoryUsedBytes %d for %d rows", op.OperatorName, op.MemoryUsedBytes, op.NumRowsTotal)
		}
	}
	if got := first.Sink.Metrics["gold.w5.stateMemoryUsedBytes"]; got != strconv.FormatInt(first.StateOperators[1].MemoryUsedBytes, 10) {
		t.Errorf("sink metric gold.w5.stateMemoryUsedBytes = %q, want the operator's %d", got, first.StateOperators[1].MemoryUsedBytes)
	}
	data, err := first.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), fmt.Sprintf(`"memoryUsedBytes":%d`, first.StateOperators[1].MemoryUsedBytes)) {
		t.Errorf("progress JSON lacks the aggregation's memoryUsedBytes: %s", data)
	}
}
