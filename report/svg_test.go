package report

import (
	"bytes"
	"context"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/objstore/mem"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it); got:\n%s", name, got)
	}
}

// svgElem is an element of a parsed SVG: its name, attributes and text.
type svgElem struct {
	name  string
	attrs map[string]string
	text  string
}

// parseSVG checks that s is well-formed XML with an <svg> root and returns its elements.
func parseSVG(t *testing.T, s string) []svgElem {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(s))
	var out []svgElem
	var stack []int
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, s)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			e := svgElem{name: tk.Name.Local, attrs: map[string]string{}}
			for _, a := range tk.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			if len(out) == 0 && (e.name != "svg" || tk.Name.Space != "http://www.w3.org/2000/svg") {
				t.Fatalf("root element %v, want svg in the SVG namespace", tk.Name)
			}
			out = append(out, e)
			stack = append(stack, len(out)-1)
		case xml.CharData:
			if len(stack) > 0 {
				out[stack[len(stack)-1]].text += string(tk)
			}
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
	return out
}

func attrFloat(t *testing.T, e svgElem, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(e.attrs[name], 64)
	if err != nil {
		t.Fatalf("<%s %s=%q>: %v", e.name, name, e.attrs[name], err)
	}
	return v
}

// TestLagSVGPercentiles is issue 12's acceptance test on bronze rows written with a lag
// distribution built here: the percentiles the SVG shows are within 1% of those computed by
// sorting the lags, and each marker sits where the axis's own tick labels put that value.
func TestLagSVGPercentiles(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	lake := mem.New()
	groups, evs, lags := workload(3, 60000)
	writeBronze(t, lake, cfg.Tables.Bronze, groups)
	rep, err := Lag(ctx, lake, cfg, LagOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := newOracle(evs, lags, time.Time{}, time.Time{})
	checkLagSVG(t, LagChart(rep).SVG(), map[string]time.Duration{
		"p50": o.at(0.5), "p95": o.at(0.95), "p99": o.at(0.99),
		"current watermark": 10 * time.Minute, "recommended watermark": Recommend(o.at(0.95)),
	})
}

// checkLagSVG parses a lag chart and checks that its markers are exactly want (within 1%),
// placed where the log axis, read from its tick labels alone, puts their values.
func checkLagSVG(t *testing.T, svg string, want map[string]time.Duration) {
	t.Helper()
	elems := parseSVG(t, svg)
	var ticks [][2]float64 // (ln value, x)
	for _, e := range elems {
		if e.name == "text" && e.attrs["class"] == "xtick" {
			d, err := config.ParseDuration(strings.TrimSpace(e.text))
			if err != nil {
				t.Fatalf("tick label %q: %v", e.text, err)
			}
			ticks = append(ticks, [2]float64{math.Log(d.Seconds()), attrFloat(t, e, "x")})
		}
	}
	if len(ticks) < 3 {
		t.Fatalf("%d x ticks, want at least 3", len(ticks))
	}
	first, last := ticks[0], ticks[len(ticks)-1]
	slope := (last[1] - first[1]) / (last[0] - first[0])
	for _, tk := range ticks {
		if x := first[1] + slope*(tk[0]-first[0]); math.Abs(x-tk[1]) > 0.2 {
			t.Errorf("tick at x=%v, a log axis puts it at %v", tk[1], x)
		}
	}
	xOf := func(sec float64) float64 { return first[1] + slope*(math.Log(sec)-first[0]) }
	seen := map[string]bool{}
	bars := 0
	for _, e := range elems {
		if e.name == "rect" && e.attrs["class"] == "bar" {
			bars++
		}
		if e.name != "line" || e.attrs["class"] != "marker" {
			continue
		}
		name := e.attrs["data-name"]
		w, ok := want[name]
		if !ok {
			t.Errorf("unexpected marker %q", name)
			continue
		}
		seen[name] = true
		v := attrFloat(t, e, "data-value")
		if math.Abs(v-w.Seconds()) > 0.01*w.Seconds() {
			t.Errorf("%s marker at %vs, want %vs within 1%%", name, v, w.Seconds())
		}
		// 1% of the value moves the marker by slope*ln(1.01) px; allow that plus rounding.
		x := attrFloat(t, e, "x1")
		if math.Abs(x-xOf(w.Seconds())) > slope*math.Log(1.01)+0.1 {
			t.Errorf("%s marker at x=%v, the axis puts %v at x=%v", name, x, w, xOf(w.Seconds()))
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("no %s marker", name)
		}
	}
	if bars < 5 {
		t.Errorf("%d bars, want the non-empty buckets", bars)
	}
}

// TestHistogramSVGGolden pins a hand-made histogram's rendering byte for byte.
func TestHistogramSVGGolden(t *testing.T) {
	c := &HistogramChart{
		Title: "Lag <test> & co", XLabel: "lag (log scale)", YLabel: "rows",
		Min: 0.5, Max: 4000,
		Bars: []Bar{{Lo: 0.5, Hi: 1, Count: 10, Label: "<=1s"}, {Lo: 1, Hi: 10, Count: 250, Label: "1s-10s"},
			{Lo: 10, Hi: 60, Count: 120, Label: "10s-1m"}, {Lo: 60, Hi: 600, Count: 0, Label: "1m-10m"},
			{Lo: 600, Hi: 3600, Count: 3, Label: "10m-1h"}},
		Markers: []Marker{{Name: "p50", Value: 4, Text: "4s"}, {Name: "p95", Value: 45, Text: "45s"},
			{Name: "recommended watermark", Value: 120, Text: "2m", Dashed: true}},
		Ticks: []Tick{{1, "1s"}, {10, "10s"}, {60, "1m"}, {600, "10m"}, {3600, "1h"}},
		Note:  "373 rows",
	}
	s := c.SVG()
	elems := parseSVG(t, s)
	var titles []string
	for _, e := range elems {
		if e.name == "title" {
			titles = append(titles, e.text)
		}
	}
	if strings.Join(titles, "|") != "<=1s: 10|1s-10s: 250|10s-1m: 120|10m-1h: 3" {
		t.Errorf("bar titles %q (empty buckets draw no bar)", titles)
	}
	golden(t, "histogram.svg", []byte(s))
}

// TestTimeChartSVGGolden pins a line chart and a stacked bar chart, and checks the bars'
// heights against their values.
func TestTimeChartSVGGolden(t *testing.T) {
	t0 := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	pts := func(vs ...float64) []Point {
		var p []Point
		for i, v := range vs {
			p = append(p, Point{T: t0.Add(time.Duration(i) * 30 * time.Second), V: v})
		}
		return p
	}
	line := &TimeChart{Title: "Rows per second", YLabel: "rows/s", Series: []Series{
		{Name: "input", Points: pts(100, 220, 180, 90, 300)},
		{Name: "processed", Points: pts(1500, 1400, 1650, 1200, 1800)},
	}}
	golden(t, "timeseries_line.svg", []byte(line.SVG()))

	bars := &TimeChart{Title: "Late rows per batch", YLabel: "rows", Bars: true, Series: []Series{
		{Name: "events_5m", Points: pts(0, 4, 10, 0, 2)},
		{Name: "events_1h", Points: pts(0, 1, 5, 0, 0)},
	}}
	s := bars.SVG()
	golden(t, "timeseries_bars.svg", []byte(s))
	// Every bar's height is proportional to its value: height/value is one constant.
	var ratio float64
	n := 0
	elems := parseSVG(t, s)
	for i, e := range elems {
		if e.name != "rect" || e.attrs["class"] != "bar" {
			continue
		}
		n++
		title := elems[i+1].text
		v, err := strconv.ParseFloat(title[strings.LastIndex(title, " ")+1:], 64)
		if err != nil {
			t.Fatalf("bar title %q: %v", title, err)
		}
		r := attrFloat(t, e, "height") / v
		if ratio == 0 {
			ratio = r
		} else if math.Abs(r-ratio) > 0.1 {
			t.Errorf("bar %q: height/value %v, others %v", title, r, ratio)
		}
	}
	if n != 5 {
		t.Errorf("%d bars, want 5 (zero values draw none)", n)
	}

	empty := &TimeChart{Title: "Batch duration", YLabel: "ms"}
	if !strings.Contains(empty.SVG(), ">no data<") {
		t.Error("an empty chart does not say no data")
	}
	parseSVG(t, empty.SVG())
}

// TestTimeChartBreaksAtGaps: a line joins neighbouring batches only; an hour without batches
// is a break in the line, not a ramp across it.
func TestTimeChartBreaksAtGaps(t *testing.T) {
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	var pts []Point
	for _, m := range []int{0, 1, 2, 3, 63, 64, 65} {
		pts = append(pts, Point{t0.Add(time.Duration(m) * time.Minute), float64(m)})
	}
	svg := (&TimeChart{Title: "t", Series: []Series{{Name: "rate", Points: pts}}}).SVG()
	if n := strings.Count(svg, `<polyline class="series" data-name="rate"`); n != 2 {
		t.Fatalf("%d line pieces for a series with one gap, want 2:\n%s", n, svg)
	}
	even := (&TimeChart{Title: "t", Series: []Series{{Name: "rate", Points: pts[:4]}}}).SVG()
	if n := strings.Count(even, `<polyline class="series"`); n != 1 {
		t.Fatalf("%d line pieces for evenly spaced points, want 1", n)
	}
}

// TestLegendWraps: a legend wider than the chart wraps to rows below the plot, and the chart
// grows to hold them: no legend text starts or ends beyond the right edge.
func TestLegendWraps(t *testing.T) {
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	c := &TimeChart{Title: "many"}
	for i := range 8 {
		c.Series = append(c.Series, Series{Name: fmt.Sprintf("aggregation_with_a_long_name_%d", i), Points: []Point{{t0, 1}, {t0.Add(time.Minute), 2}}})
	}
	svg := c.SVG()
	re := regexp.MustCompile(`<text x="(\d+)" y="(\d+)" fill="#333333">(aggregation_[^<]*)</text>`)
	ms := re.FindAllStringSubmatch(svg, -1)
	if len(ms) != 8 {
		t.Fatalf("%d legend entries, want 8", len(ms))
	}
	maxY := 0
	for _, m := range ms {
		x, _ := strconv.Atoi(m[1])
		y, _ := strconv.Atoi(m[2])
		maxY = max(maxY, y)
		if x+7*len(m[3]) > chartWidth {
			t.Errorf("legend %q at x=%d runs past the chart's %d px", m[3], x, chartWidth)
		}
	}
	h := regexp.MustCompile(`height="(\d+)"`).FindStringSubmatch(svg)
	height, _ := strconv.Atoi(h[1])
	if maxY >= height || height <= chartHeight {
		t.Errorf("legend rows reach y=%d in a chart %d high", maxY, height)
	}
}

// TestRateChartFirstBatch: a run's first batch has no input rate (progress says 0): the chart
// leaves the point out instead of drawing a dip to 0.
func TestRateChartFirstBatch(t *testing.T) {
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	r := &Report{Batches: []BatchProgress{
		{BatchID: 0, Timestamp: t0, NumInputRows: 100, InputRowsPerSecond: 0, ProcessedRowsPerSecond: 50},
		{BatchID: 1, Timestamp: t0.Add(time.Minute), NumInputRows: 120, InputRowsPerSecond: 2, ProcessedRowsPerSecond: 60},
		{BatchID: 2, Timestamp: t0.Add(2 * time.Minute), NumInputRows: 0, InputRowsPerSecond: 0, ProcessedRowsPerSecond: 0},
	}}
	c := r.RateChart()
	in := c.Series[0]
	if len(in.Points) != 2 || in.Points[0].V != 2 || !in.Points[1].T.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("input rate points %v: want batch 1's rate and batch 2's true 0", in.Points)
	}
	if len(c.Series[1].Points) != 3 {
		t.Fatalf("processed rate points %v", c.Series[1].Points)
	}
}
