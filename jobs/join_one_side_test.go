package jobs

import (
	"context"
	"testing"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/internal/testutil"
	"github.com/medallion-lake/medallion/objstore"
)

// TestJoinRunsWhileOneSideNeverHadARow: a join whose right source has never had a row runs a
// micro-batch for the left rows, as Spark does (spec/stream-joins.md §7: a batch runs as soon
// as either input has new data), without `medallion init` having created the right source's
// tables. It ran none while the right silver table did not exist. The oracle is the spec: batch
// 0 reads the 3 left rows; the right node has never had a row, so it counts 0 (§2.2) and the
// global watermark stays 0, so no no-data batch follows; the clicks that land later are
// batch 1.
func TestJoinRunsWhileOneSideNeverHadARow(t *testing.T) {
	ctx := context.Background()
	cfg := testutil.Pipeline(t, "lake: "+t.TempDir()+`
landing: {path: landing/events/}
`+testutil.EventsSchema+`stream: {watermark: 10m}
sources:
  - name: clicks
    landing: {path: landing/clicks/}
    schema:
      - {name: click_id, type: string}
      - {name: event_id, type: string}
      - {name: click_time, type: timestamp}
    stream: {event_time: click_time, watermark: 1h}
joins:
  - {name: ec, left: events, right: clicks, type: left_outer, on: [{left: event_id, right: event_id}], time: {lower: 0s, upper: 1h}}
gold:
  - name: events_5m
    window: {type: tumbling, size: 5m}
    aggregates: [{fn: count}]
`)
	env, err := NewEnv(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Lake.Close()
	put := func(key, data string) {
		t.Helper()
		if err := objstore.PutBytes(ctx, env.Lake, key, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	run := func() StreamReport {
		t.Helper()
		if _, err := IngestSources(ctx, env, "", nil); err != nil {
			t.Fatal(err)
		}
		rep, err := StreamSources(ctx, env, "", config.Trigger{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Joins) != 1 {
			t.Fatalf("%d join reports, want 1", len(rep.Joins))
		}
		return rep
	}
	put("landing/events/a.json", `{"event_id":"e1","event_type":"v","amount":1,"event_time":"2024-05-01T12:00:00Z"}
{"event_id":"e2","event_type":"v","amount":1,"event_time":"2024-05-01T12:01:00Z"}
{"event_id":"e3","event_type":"v","amount":1,"event_time":"2024-05-01T12:02:00Z"}
`)
	j := run().Joins[0]
	if j.Batches != 1 || j.LastBatch != 0 || j.LeftRows != 3 || j.RightRows != 0 || j.WatermarkMs != 0 {
		t.Fatalf("with no click ever: join ran %d batches (last %d), read %d left and %d right rows, watermark %d; want batch 0 only, 3 left rows, watermark 0",
			j.Batches, j.LastBatch, j.LeftRows, j.RightRows, j.WatermarkMs)
	}
	put("landing/clicks/a.json", `{"click_id":"c1","event_id":"e1","click_time":"2024-05-01T12:05:00Z"}
`)
	j = run().Joins[0]
	if j.LastBatch < 1 || j.RightRows != 1 || j.LeftRows != 0 || j.MatchedRows != 1 {
		t.Fatalf("after the first click: last batch %d, %d left and %d right rows read, %d matched; want batch 1 reading the click, matched with e1",
			j.LastBatch, j.LeftRows, j.RightRows, j.MatchedRows)
	}
}
