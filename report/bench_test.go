package report

import (
	"context"
	"testing"

	"github.com/medallion-lake/medallion/objstore/mem"
)

// BenchmarkLag measures a lag analysis over a 200k-row bronze table in memory (projection of
// two columns, sketch, histogram); rows/s is reported as a metric.
func BenchmarkLag(b *testing.B) {
	ctx := context.Background()
	cfg := testConfig(b)
	lake := mem.New()
	groups, _, _ := workload(6, 200000)
	writeBronze(b, lake, cfg.Tables.Bronze, groups)
	b.ReportAllocs()
	b.ResetTimer()
	var rows int64
	for b.Loop() {
		rep, err := Lag(ctx, lake, cfg, LagOptions{})
		if err != nil {
			b.Fatal(err)
		}
		rows += rep.Rows
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkLagSVG measures rendering the lag chart.
func BenchmarkLagSVG(b *testing.B) {
	rep := &LagReport{Rows: 10, P50: 1e9, P95: 5e9, P99: 9e9, Max: 2e10, Recommended: 1e10}
	for i := range 22 {
		rep.Histogram = append(rep.Histogram, Bucket{Lo: 0, Hi: 1e9, Count: int64(i)})
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = LagChart(rep).SVG()
	}
}
