package stream_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/jobs"
	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/stream"
	"github.com/medallion-lake/medallion/table"
)

type printer struct{}

func (printer) OnProgress(p *stream.Progress) {
	fmt.Printf("batch %d: %d rows, watermark %s\n", p.BatchID, p.NumInputRows, p.EventTime["watermark"])
}

// Example ingests landing objects into bronze and streams them available-now: the resent
// event is dropped as a duplicate, the no-data batch after the 12:20 event closes the 12:00
// window, and the 12:02 event, read after that, is quarantined instead of dropped.
func Example() {
	ctx := context.Background()
	lake := mem.New()
	cfg, err := config.Parse([]byte(`
lake: mem
schema:
  - {name: event_id,   type: string, required: true}
  - {name: event_type, type: string}
  - {name: event_time, type: timestamp, required: true}
stream: {watermark: 5m, dedup: [event_id], max_files_per_trigger: 1}
gold:
  - name: counts_5m
    window: {type: tumbling, size: 5m}
    group_by: [event_type]
    aggregates: [{fn: count, as: count}]
`), "pipeline.yaml")
	if err != nil {
		panic(err)
	}
	clock := func() time.Time { return time.Date(2024, 5, 1, 13, 0, 0, 0, time.UTC) }
	env := jobs.Env{Config: cfg, Lake: lake, Clock: clock, Logger: slog.New(slog.DiscardHandler)}
	r, err := stream.New(stream.Options{Lake: lake, Query: specs.Query(cfg), Clock: clock, Listener: printer{}})
	if err != nil {
		panic(err)
	}
	// Each landing object is ingested, then streamed (as a scheduler would run both jobs).
	var rep stream.Report
	land := func(key, lines string) {
		if err := objstore.PutBytes(ctx, lake, "landing/events/"+key, []byte(lines)); err != nil {
			panic(err)
		}
		if _, err := jobs.Ingest(ctx, env); err != nil {
			panic(err)
		}
		if rep, err = r.Run(ctx); err != nil {
			panic(err)
		}
	}
	land("1.json", `{"event_id":"a","event_type":"click","event_time":"2024-05-01T12:01:00Z"}
{"event_id":"b","event_type":"click","event_time":"2024-05-01T12:03:00Z"}
{"event_id":"a","event_type":"click","event_time":"2024-05-01T12:01:00Z"}
`)
	land("2.json", `{"event_id":"c","event_type":"view","event_time":"2024-05-01T12:20:00Z"}`)
	land("3.json", `{"event_id":"d","event_type":"click","event_time":"2024-05-01T12:02:00Z"}`)
	fmt.Printf("silver %d, duplicates %d, quarantined %d\n", rep.SilverRows, rep.Duplicates, rep.Gold[0].LateRows)
	for b, err := range table.Open(objstore.WithPrefix(lake, "gold/counts_5m"), table.Options{}).Scan(ctx, table.ScanOptions{}) {
		if err != nil {
			panic(err)
		}
		for i := range b.Len() {
			fmt.Println(string(pq.AppendJSONRow(nil, b, i)))
		}
	}
	// Output:
	// batch 0: 3 rows, watermark 1970-01-01T00:00:00.000Z
	// batch 1: 0 rows, watermark 2024-05-01T11:58:00.000Z
	// batch 2: 1 rows, watermark 2024-05-01T11:58:00.000Z
	// batch 3: 0 rows, watermark 2024-05-01T12:15:00.000Z
	// batch 4: 1 rows, watermark 2024-05-01T12:15:00.000Z
	// silver 4, duplicates 1, quarantined 1
	// {"window":{"start":"2024-05-01T12:00:00Z","end":"2024-05-01T12:05:00Z"},"event_type":"click","count":2,"late_rows":0}
}
