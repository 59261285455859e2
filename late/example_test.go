package late_test

import (
	"context"
	"fmt"
	"time"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/gen"
	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/late"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/stream"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/txlog"
)

// A pipeline whose stream quarantined late rows: merge-late folds them into gold once, a
// rerun finds gold up to date, and replay recomputes a range from silver.
func Example() {
	ctx := context.Background()
	cfg, err := config.Parse([]byte(`
schema:
  - {name: event_id,   type: string, required: true}
  - {name: event_type, type: string}
  - {name: amount,     type: double}
  - {name: event_time, type: timestamp, required: true}
stream: {watermark: 5s, dedup: [event_id], max_files_per_trigger: 1}
gold:
  - name: events_5s
    window: {type: tumbling, size: 5s}
    group_by: [event_type]
    aggregates: [{fn: count, as: count}, {fn: avg, column: amount, as: avg_amount}]
`), "example.yaml")
	if err != nil {
		panic(err)
	}
	lake := mem.New()
	g := gen.DefaultOptions()
	g.Lines, g.Files, g.Rate, g.TailFraction, g.TailScale = 3000, 6, 200, 0.05, 10*time.Second
	if _, err := gen.Generate(ctx, lake, g); err != nil {
		panic(err)
	}
	str := txlog.PrimitiveType{Name: txlog.TypeString}
	x, _ := bronze.NewIngester(lake, bronze.IngestOptions{LandingPrefix: "landing/events/", MaxFilesPerTrigger: 1,
		BronzePath: cfg.Tables.Bronze, RejectsPath: cfg.Tables.Rejects, CheckpointPath: "_checkpoints/ingest",
		Declared: &txlog.StructType{Fields: []txlog.StructField{{Name: "event_id", Type: str}, {Name: "event_type", Type: str, Nullable: true},
			{Name: "amount", Type: txlog.PrimitiveType{Name: txlog.TypeDouble}, Nullable: true},
			{Name: "event_time", Type: txlog.PrimitiveType{Name: txlog.TypeTimestamp}}}}})
	if _, err := x.Run(ctx); err != nil {
		panic(err)
	}
	r, _ := stream.New(stream.Options{Lake: lake, Query: specs.Query(cfg), Trigger: spec.Trigger{Kind: spec.AvailableNow}})
	srep, err := r.Run(ctx)
	if err != nil {
		panic(err)
	}

	opts := late.Options{Lake: lake, Query: specs.Query(cfg)}
	first, err := late.MergeLate(ctx, opts)
	if err != nil {
		panic(err)
	}
	second, _ := late.MergeLate(ctx, opts)
	fmt.Println("folded every quarantined row:", first.LateRows == srep.Gold[0].LateRows && first.LateRows > 0)
	fmt.Println("rerun up to date:", second.Gold[0].UpToDate, "late rows:", second.LateRows)

	// 00:00:02-00:00:04 widens to the whole window [00:00:00, 00:00:05).
	day := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	rep, err := late.Replay(ctx, opts, late.Range{From: day.Add(2 * time.Second), To: day.Add(4 * time.Second)})
	if err != nil {
		panic(err)
	}
	fmt.Println("replaced window starts:", rep.Gold[0].StartFrom.Format(time.TimeOnly), "..", rep.Gold[0].StartTo.Format(time.TimeOnly))
	// Output:
	// folded every quarantined row: true
	// rerun up to date: true late rows: 0
	// replaced window starts: 00:00:00 .. 00:00:00
}
