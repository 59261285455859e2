package stream

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/gen"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/objstore/s3/s3test"
)

// benchLake ingests lines generated events into bronze on a file lake.
func benchLake(b *testing.B, lines int64) objstore.Bucket {
	b.Helper()
	ctx := context.Background()
	lake, err := file.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	opts := gen.DefaultOptions()
	opts.Seed, opts.Lines, opts.Files, opts.Rate = 1, lines, 8, 2000
	if _, err := gen.Generate(ctx, lake, opts); err != nil {
		b.Fatal(err)
	}
	x, err := bronze.NewIngester(lake, bronze.IngestOptions{LandingPrefix: "landing/events/", Declared: declared(),
		BronzePath: "bronze/events", RejectsPath: "bronze/rejects", CheckpointPath: "_checkpoints/ingest",
		Clock: func() time.Time { return time.Date(2024, 5, 1, 6, 0, 0, 0, time.UTC) }})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := x.Run(ctx); err != nil {
		b.Fatal(err)
	}
	return lake
}

// BenchmarkStreamFile streams 400k bronze rows (dedup on, two gold aggregations) into fresh
// silver, quarantine and gold tables on a file lake, reporting events per second and CPU time
// per event.
func BenchmarkStreamFile(b *testing.B) {
	benchStream(b, benchLake(b, 400_000), nil)
}

// benchExpectations are five expectations of the kinds users write: null-tolerant range,
// IN list, string function, timestamp bound, LIKE with OR.
var benchExpectations = []config.Expectation{
	{Name: "non_negative", Expect: "amount IS NULL OR amount >= 0", OnViolation: "drop"},
	{Name: "known_type", Expect: "event_type IN ('click', 'view', 'purchase', 'signup')", OnViolation: "warn"},
	{Name: "id_length", Expect: "length(event_id) > 4", OnViolation: "drop"},
	{Name: "recent", Expect: "event_time > TIMESTAMP '2020-01-01 00:00:00'", OnViolation: "warn"},
	{Name: "plausible", Expect: "lower(event_type) LIKE '%i%' OR amount < 1000", OnViolation: "warn"},
}

// BenchmarkStreamFileExpectations is BenchmarkStreamFile with benchExpectations: the
// difference in cpu-ns/event is the expectations' cost per event.
func BenchmarkStreamFileExpectations(b *testing.B) {
	benchStream(b, benchLake(b, 400_000), benchExpectations)
}

// BenchmarkStreamMinIO is the same on a real MinIO server (skipped without one: run it with
// scripts/minio.sh run -- go test -bench StreamMinIO ./stream/), over 100k rows.
func BenchmarkStreamMinIO(b *testing.B) {
	lake := s3test.NewTestBucket(b)
	copyInto(b, benchLake(b, 100_000), lake)
	benchStream(b, lake, nil)
}

func benchStream(b *testing.B, lake objstore.Bucket, expectations []config.Expectation) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuNanos()
	var rows int64
	for i := range b.N {
		gy := fmt.Sprintf(`
  - name: g5
    table: run%d/gold/g5
    quarantine: run%d/late_g5
    window: {type: tumbling, size: 5m}
    group_by: [event_type]
    aggregates:
      - {fn: count, as: count}
      - {fn: sum, column: amount, as: total}
      - {fn: avg, column: amount, as: avg_amount}
  - name: g60
    table: run%d/gold/g60
    quarantine: run%d/late_g60
    window: {type: tumbling, size: 1h}
    group_by: [event_type]
    aggregates: [{fn: count, as: count}]
`, i, i, i, i)
		cfg := parseConfig(b, "10s", fmt.Sprintf("  dedup: [event_id]\n  checkpoint: run%d/ck\n  max_files_per_trigger: 4", i), gy)
		cfg.Tables.Silver = fmt.Sprintf("run%d/silver", i)
		cfg.Tables.Rejects = fmt.Sprintf("run%d/rejects", i)
		cfg.Expectations = expectations
		rep := mustRun(b, lake, cfg, "available-now")
		rows += rep.InputRows
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rows), "ns/event")
	b.ReportMetric(float64(cpuNanos()-cpu0)/float64(rows), "cpu-ns/event")
}
