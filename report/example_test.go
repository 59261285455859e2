package report_test

import (
	"fmt"
	"time"

	"github.com/medallion-lake/medallion/report"
)

// The recommended watermark is twice the p95 lag, rounded up to a nice value.
func ExampleRecommend() {
	for _, p95 := range []time.Duration{700 * time.Millisecond, 40 * time.Second, 3*time.Minute + 19*time.Second, 5 * time.Hour} {
		fmt.Println(report.FormatLag(p95), "->", report.FormatLag(report.Recommend(p95)))
	}
	// Output:
	// 700ms -> 2s
	// 40s -> 2m
	// 3m19s -> 10m
	// 5h -> 12h
}

// A histogram chart renders as standalone SVG; markers sit at their values on the log axis.
func ExampleHistogramChart() {
	c := &report.HistogramChart{
		Title: "lag", XLabel: "seconds", YLabel: "rows", Min: 1, Max: 100,
		Bars:    []report.Bar{{Lo: 1, Hi: 10, Count: 5, Label: "1s-10s"}, {Lo: 10, Hi: 100, Count: 2, Label: "10s-100s"}},
		Markers: []report.Marker{{Name: "p95", Value: 10, Text: "10s"}},
	}
	svg := c.SVG()
	fmt.Println(svg[:4], len(svg) > 1000)
	// Output: <svg true
}
