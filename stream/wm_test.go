package stream

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/stream/checkpoint"
)

const countGold = `
  - name: w5
    table: gold/w5
    quarantine: silver/late_w5
    window: {type: tumbling, size: 5m}
    aggregates: [{fn: count, as: count}]
`

// TestWMVector runs spec vector WM (§3.5) through the runner: each data batch is a bronze
// commit read by an available-now run, which adds the no-data batches the watermark asks for.
func TestWMVector(t *testing.T) {
	lake := mem.New()
	cfg := parseConfig(t, "10m", "", countGold)
	steps := []struct {
		in        []string
		lastBatch int64
		gold      []string
		late      int
	}{
		{[]string{"12:07", "12:08", "12:14"}, 1, nil, 0},
		{[]string{"12:09", "12:15", "12:03"}, 3, []string{"12:00=1"}, 0},
		{[]string{"12:21", "12:02", "12:04"}, 5, []string{"12:00=1", "12:05=3"}, 2},
		{[]string{"12:12"}, 6, []string{"12:00=1", "12:05=3"}, 2},
	}
	id := 0
	for si, s := range steps {
		var rows []ev
		for _, ts := range s.in {
			id++
			rows = append(rows, ev{ID: string(rune('a' + id)), Type: "x", T: hm(ts)})
		}
		appendBronze(t, lake, rows)
		rep := mustRun(t, lake, cfg, "available-now")
		if rep.LastBatch != s.lastBatch {
			t.Fatalf("step %d: last batch %d, want %d", si, rep.LastBatch, s.lastBatch)
		}
		if got := goldCounts(t, lake, "gold/w5"); !slices.Equal(got, s.gold) {
			t.Fatalf("step %d: gold %v, want %v", si, got, s.gold)
		}
		if got := len(tableRows(t, lake, "silver/late_w5")); got != s.late {
			t.Fatalf("step %d: %d quarantined rows, want %d", si, got, s.late)
		}
	}
	ck := objstore.WithPrefix(lake, "_checkpoints/events")
	wantWM := map[int64]string{0: "0", 1: "12:04", 2: "12:04", 3: "12:05", 4: "12:05", 5: "12:11", 6: "12:11"}
	for n, w := range wantWM {
		e, err := checkpoint.Open(ck).ReadOffsets(context.Background(), n)
		if err != nil {
			t.Fatal(err)
		}
		want := int64(0)
		if w != "0" {
			want = hm(w).UnixMilli()
		}
		if e.BatchWatermarkMs != want {
			t.Errorf("offsets/%d batchWatermarkMs %d, want %s", n, e.BatchWatermarkMs, w)
		}
	}
	c, err := checkpoint.Open(ck).ReadCommit(context.Background(), 6)
	if err != nil || c.NextBatchWatermarkMs != hm("12:11").UnixMilli() {
		t.Fatalf("commits/6 = %+v, %v", c, err)
	}
	// Progress of batch 4: Spark's group counter 1, our exact late rows 2, watermark W_4.
	data, err := objstore.ReadAll(context.Background(), ck, "progress/4.json")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		NumInputRows int64             `json:"numInputRows"`
		EventTime    map[string]string `json:"eventTime"`
		StateOps     []struct {
			Dropped int64            `json:"numRowsDroppedByWatermark"`
			Custom  map[string]int64 `json:"customMetrics"`
		} `json:"stateOperators"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	if p.NumInputRows != 3 || p.EventTime["watermark"] != "2024-05-01T12:05:00.000Z" || p.EventTime["min"] != "2024-05-01T12:02:00.000Z" ||
		len(p.StateOps) != 1 || p.StateOps[0].Dropped != 1 || p.StateOps[0].Custom["numLateRowsQuarantined"] != 2 {
		t.Fatalf("progress/4.json = %s", data)
	}
	q := tableRows(t, lake, "silver/late_w5", "query_id")
	for _, row := range q {
		var m map[string]any
		_ = json.Unmarshal([]byte(row), &m)
		if m["late_watermark"] != "2024-05-01T12:05:00Z" || m["batch_id"] != float64(4) {
			t.Errorf("quarantine row %s: want late_watermark 12:05, batch 4", row)
		}
	}
}
