package report

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Chart geometry: a laptop-sized plot with room for axis labels and the legend.
const (
	chartWidth   = 820
	chartHeight  = 360
	marginLeft   = 72
	marginRight  = 24
	marginTop    = 70
	legendY      = 56
	marginBottom = 56
)

// palette is colour-blind friendly (Okabe-Ito), in the order series and markers use it.
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442", "#000000"}

// Bar is one bar of a histogram on a logarithmic axis: the rows with Lo < value <= Hi.
type Bar struct {
	Lo, Hi float64
	Count  int64
	Label  string
}

// Marker is a labelled vertical line at a value of a histogram's axis.
type Marker struct {
	Name  string
	Value float64
	// Text is the value as people read it ("12.3s").
	Text string
	// Dashed marks configuration values (watermarks) as opposed to measured ones.
	Dashed bool
}

// HistogramChart is a histogram over a logarithmic x axis, with markers.
type HistogramChart struct {
	Title, XLabel, YLabel string
	// Min and Max bound the axis (> 0); bars and markers outside are clamped to it.
	Min, Max float64
	Bars     []Bar
	Markers  []Marker
	// Ticks are the axis values to label, with their labels.
	Ticks []Tick
	// Note is a line under the title (e.g. rows left out).
	Note string
}

// Tick is one labelled axis value.
type Tick struct {
	Value float64
	Label string
}

// Point is one value of a time series.
type Point struct {
	T time.Time
	V float64
}

// Series is one named line or bar stack of a time chart.
type Series struct {
	Name   string
	Points []Point
}

// TimeChart is one or more series over time: lines, or bars when Bars is set (stacked, or side
// by side when Grouped is set).
type TimeChart struct {
	Title, YLabel string
	Series        []Series
	Bars          bool
	// Interval is the time one point stands for (e.g. an hour for hourly sums): each point is
	// the start of its interval, its bar covers [T, T+Interval) and the x-axis reaches the end
	// of the last interval. Zero takes the smallest distance between points, centred on them.
	Interval time.Duration
	// Grouped draws the series' bars side by side instead of stacked: for series that count
	// the same things several ways (each aggregation's late rows: one late row is late for
	// both), where a stack would count them twice.
	Grouped bool
}

type svgBuf struct {
	strings.Builder
	// extraRows are legend rows below the x-axis label: the chart grows by legendRowH each.
	extraRows int
}

// legendRowH is the height of one legend row.
const legendRowH = 16

// String is the SVG, its height grown to hold every legend row.
func (b *svgBuf) String() string {
	s := b.Builder.String()
	if b.extraRows == 0 {
		return s
	}
	h := chartHeight + b.extraRows*legendRowH + 6
	old := fmt.Sprintf(`viewBox="0 0 %d %d" width="%d" height="%d"`, chartWidth, chartHeight, chartWidth, chartHeight)
	s = strings.Replace(s, old, fmt.Sprintf(`viewBox="0 0 %d %d" width="%d" height="%d"`, chartWidth, h, chartWidth, h), 1)
	return strings.Replace(s, fmt.Sprintf(`<rect width="%d" height="%d" fill="#ffffff"/>`, chartWidth, chartHeight),
		fmt.Sprintf(`<rect width="%d" height="%d" fill="#ffffff"/>`, chartWidth, h), 1)
}

func (b *svgBuf) f(format string, args ...any) { fmt.Fprintf(&b.Builder, format, args...) }

// num prints a coordinate with one decimal, without a trailing ".0" (stable across platforms).
func num(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

func esc(s string) string { return html.EscapeString(s) }

func (b *svgBuf) open(title, note string) {
	b.f(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n",
		chartWidth, chartHeight, chartWidth, chartHeight, esc(title))
	b.f(`<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", chartWidth, chartHeight)
	b.f(`<text class="title" x="%d" y="20" font-size="15" font-weight="bold">%s</text>`+"\n", marginLeft, esc(title))
	if note != "" {
		b.f(`<text class="note" x="%d" y="37" fill="#555555">%s</text>`+"\n", marginLeft, esc(note))
	}
}

// plot area
const (
	plotLeft   = marginLeft
	plotRight  = chartWidth - marginRight
	plotTop    = marginTop
	plotBottom = chartHeight - marginBottom
)

// niceStep is the smallest 1, 2 or 5 x 10^k at least raw.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// yAxis draws horizontal grid lines and labels from 0 to the top, and returns the top value.
func (b *svgBuf) yAxis(maxV float64, label string, format func(float64) string) float64 {
	step := niceStep(maxV / 5)
	top := math.Ceil(maxV/step) * step
	if top <= 0 {
		top = step
	}
	for v := 0.0; v <= top+step/2; v += step {
		y := plotBottom - v/top*(plotBottom-plotTop)
		b.f(`<line class="grid" x1="%d" y1="%s" x2="%d" y2="%s" stroke="#e5e5e5"/>`+"\n", plotLeft, num(y), plotRight, num(y))
		b.f(`<text class="ytick" x="%d" y="%s" text-anchor="end" dominant-baseline="middle" fill="#333333">%s</text>`+"\n", plotLeft-6, num(y), esc(format(v)))
	}
	b.f(`<text class="ylabel" transform="translate(16 %s) rotate(-90)" text-anchor="middle" fill="#333333">%s</text>`+"\n", num((plotTop+plotBottom)/2.0), esc(label))
	return top
}

// countLabel prints an axis count compactly ("1.5k", "2M").
func countLabel(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e9:
		return trimZeros(strconv.FormatFloat(v/1e9, 'f', 1, 64)) + "G"
	case a >= 1e6:
		return trimZeros(strconv.FormatFloat(v/1e6, 'f', 1, 64)) + "M"
	case a >= 1e3:
		return trimZeros(strconv.FormatFloat(v/1e3, 'f', 1, 64)) + "k"
	}
	return trimZeros(strconv.FormatFloat(v, 'f', 2, 64))
}

func (b *svgBuf) frame() {
	b.f(`<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333333"/>`+"\n", plotLeft, plotBottom, plotRight, plotBottom)
	b.f(`<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333333"/>`+"\n", plotLeft, plotTop, plotLeft, plotBottom)
}

// legend draws swatches and names under the title, left to right; the widths follow the text
// (about 7 px a character at 12 px) so that long names do not overlap. Items that do not fit in
// that row go to rows below the x-axis label, and the chart grows to hold them, so that no
// legend is cut at the right edge.
func (b *svgBuf) legend(items []legendItem) {
	b.f(`<g class="legend">` + "\n")
	x, y, row := plotLeft, legendY, 0
	for _, it := range items {
		w := 22 + 7*len([]rune(it.text))
		if x > plotLeft && x+w > chartWidth-4 {
			row++
			x, y = plotLeft, chartHeight+row*legendRowH-4
			b.extraRows = row
		}
		dash := ""
		if it.dashed {
			dash = ` stroke-dasharray="5 3"`
		}
		b.f(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"%s/>`, x, y-4, x+18, y-4, it.color, dash)
		b.f(`<text x="%d" y="%d" fill="#333333">%s</text>`+"\n", x+22, y, esc(it.text))
		x += w + 18
	}
	b.f("</g>\n")
}

type legendItem struct {
	color, text string
	dashed      bool
}

// SVG renders the histogram: bars on a log axis, each with a <title> for its count, and the
// markers as labelled vertical lines whose x is the marker's value on the same axis.
func (c *HistogramChart) SVG() string {
	var b svgBuf
	b.open(c.Title, c.Note)
	lmin, lmax := math.Log(c.Min), math.Log(c.Max)
	x := func(v float64) float64 {
		v = min(max(v, c.Min), c.Max)
		return plotLeft + (math.Log(v)-lmin)/(lmax-lmin)*(plotRight-plotLeft)
	}
	var top int64
	for _, bar := range c.Bars {
		top = max(top, bar.Count)
	}
	yTop := b.yAxis(float64(top), c.YLabel, countLabel)
	for _, t := range c.Ticks {
		tx := num(x(t.Value))
		b.f(`<line class="xtick" x1="%s" y1="%d" x2="%s" y2="%d" stroke="#333333"/>`+"\n", tx, plotBottom, tx, plotBottom+5)
		b.f(`<text class="xtick" x="%s" y="%d" text-anchor="middle" fill="#333333" data-value="%s">%s</text>`+"\n", tx, plotBottom+18, strconv.FormatFloat(t.Value, 'g', -1, 64), esc(t.Label))
	}
	b.f(`<text class="xlabel" x="%s" y="%d" text-anchor="middle" fill="#333333">%s</text>`+"\n", num((plotLeft+plotRight)/2.0), chartHeight-14, esc(c.XLabel))
	for _, bar := range c.Bars {
		if bar.Count == 0 {
			continue
		}
		x0, x1 := x(bar.Lo), x(bar.Hi)
		h := float64(bar.Count) / yTop * (plotBottom - plotTop)
		b.f(`<rect class="bar" x="%s" y="%s" width="%s" height="%s" fill="#9ecae1" stroke="#3182bd"><title>%s: %d</title></rect>`+"\n",
			num(x0+0.5), num(plotBottom-h), num(max(x1-x0-1, 1)), num(h), esc(bar.Label), bar.Count)
	}
	b.frame()
	var items []legendItem
	for i, m := range c.Markers {
		color := palette[i%len(palette)]
		mx := num(x(m.Value))
		dash := ""
		if m.Dashed {
			dash = ` stroke-dasharray="5 3"`
		}
		b.f(`<line class="marker" data-name="%s" data-value="%s" x1="%s" y1="%d" x2="%s" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n",
			esc(m.Name), strconv.FormatFloat(m.Value, 'g', -1, 64), mx, plotTop, mx, plotBottom, color, dash)
		// Labels are staggered so that close markers stay readable, carry the first word of
		// the name only (the legend has the rest), and turn left near the right edge.
		label, _, _ := strings.Cut(m.Name, " ")
		lx, anchor := x(m.Value)+3, "start"
		if lx > plotRight-90 {
			lx, anchor = x(m.Value)-3, "end"
		}
		b.f(`<text class="marker-label" x="%s" y="%d" fill="%s" font-weight="bold" text-anchor="%s">%s</text>`+"\n", num(lx), plotTop+12+14*i, color, anchor, esc(label))
		items = append(items, legendItem{color: color, text: m.Name + " " + m.Text, dashed: m.Dashed})
	}
	if len(items) > 0 {
		b.legend(items)
	}
	b.f("</svg>\n")
	return b.String()
}

// timeSteps are the candidate distances between time ticks.
var timeSteps = []time.Duration{
	time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute,
	10 * time.Minute, 30 * time.Minute, time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
	day, 7 * day, 30 * day, 365 * day,
}

// SVG renders the chart; a chart without points says "no data".
func (c *TimeChart) SVG() string {
	var b svgBuf
	b.open(c.Title, "")
	t0, t1, n := c.timeRange()
	yTop := b.yAxis(c.maxValue(), c.YLabel, countLabel)
	if n == 0 {
		b.frame()
		b.f(`<text class="nodata" x="%s" y="%s" text-anchor="middle" fill="#777777">no data</text>`+"\n", num((plotLeft+plotRight)/2.0), num((plotTop+plotBottom)/2.0))
		b.f("</svg>\n")
		return b.String()
	}
	// Pad the range by half a bar on each side so that the end bars and tick labels fit.
	gap := c.Interval
	if gap <= 0 {
		gap = minGap(c.Series)
	}
	if gap <= 0 {
		gap = time.Minute
	}
	// An interval's point is its start: its bar covers [T, T+Interval), and the last one must
	// fit (centred on the start, the axis ended half an interval before the rows arrived).
	centre := gap / 2
	if c.Interval > 0 {
		centre = 0
		t0, t1 = t0.Add(-gap/10), t1.Add(gap+gap/10)
	} else {
		t0, t1 = t0.Add(-gap/2), t1.Add(gap/2)
	}
	span := t1.Sub(t0)
	x := func(t time.Time) float64 {
		return plotLeft + float64(t.Sub(t0))/float64(span)*(plotRight-plotLeft)
	}
	b.timeTicks(t0, t1, x)
	y := func(v float64) float64 { return plotBottom - v/yTop*(plotBottom-plotTop) }
	var items []legendItem
	if c.Bars {
		items = c.drawBars(&b, x, y, float64(gap)/float64(span)*(plotRight-plotLeft), centre == 0)
	} else {
		items = c.drawLines(&b, x, y, gap)
	}
	b.frame()
	b.legend(items)
	b.f("</svg>\n")
	return b.String()
}

// timeRange is the first and last time of the chart's points, and how many there are.
func (c *TimeChart) timeRange() (t0, t1 time.Time, n int) {
	for _, s := range c.Series {
		for _, p := range s.Points {
			if n == 0 || p.T.Before(t0) {
				t0 = p.T
			}
			if n == 0 || p.T.After(t1) {
				t1 = p.T
			}
			n++
		}
	}
	return t0, t1, n
}

// maxValue is the largest value the y axis must reach.
func (c *TimeChart) maxValue() float64 {
	maxV := 0.0
	if c.Bars && !c.Grouped {
		// Bars stack: the axis must reach the tallest stack.
		sums := map[int64]float64{}
		for _, s := range c.Series {
			for _, p := range s.Points {
				sums[p.T.UnixMicro()] += max(p.V, 0)
				maxV = max(maxV, sums[p.T.UnixMicro()])
			}
		}
		return maxV
	}
	for _, s := range c.Series {
		for _, p := range s.Points {
			maxV = max(maxV, p.V)
		}
	}
	return maxV
}

// timeTicks draws the time axis from t0 to t1 (x places a time): at most 8 ticks at a round
// step, labelled with as much of the time as the step and the range need.
func (b *svgBuf) timeTicks(t0, t1 time.Time, x func(time.Time) float64) {
	span := t1.Sub(t0)
	step := timeSteps[len(timeSteps)-1]
	for _, s := range timeSteps {
		if span/s <= 8 {
			step = s
			break
		}
	}
	layout := "15:04"
	switch {
	case step < time.Minute:
		layout = "15:04:05"
	case step >= day:
		layout = "2006-01-02"
	case t0.UTC().YearDay() != t1.UTC().YearDay() || t0.UTC().Year() != t1.UTC().Year():
		layout = "01-02 15:04"
	}
	for t := t0.UTC().Truncate(step); !t.After(t1); t = t.Add(step) {
		if t.Before(t0) {
			continue
		}
		tx := num(x(t))
		b.f(`<line class="xtick" x1="%s" y1="%d" x2="%s" y2="%d" stroke="#333333"/>`+"\n", tx, plotBottom, tx, plotBottom+5)
		b.f(`<text class="xtick" x="%s" y="%d" text-anchor="middle" fill="#333333">%s</text>`+"\n", tx, plotBottom+18, t.Format(layout))
	}
	b.f(`<text class="xlabel" x="%s" y="%d" text-anchor="middle" fill="#333333">time (UTC)</text>`+"\n", num((plotLeft+plotRight)/2.0), chartHeight-14)
}

// drawBars draws the series as bars, stacked or grouped, and returns their legend. gapWidth
// is the width of one gap between points on the x axis; startAligned puts a bar's left edge
// at its time (an interval's start) rather than centring it there.
func (c *TimeChart) drawBars(b *svgBuf, x func(time.Time) float64, y func(float64) float64, gapWidth float64, startAligned bool) []legendItem {
	var items []legendItem
	w := gapWidth * 0.8
	if c.Interval <= 0 {
		w = min(max(w, 1), 40)
	}
	w = max(w, 1)
	// Where the bar (or the group of bars) of a point starts, relative to x(T).
	left := -w / 2
	if startAligned {
		left = gapWidth * 0.1
	}
	bw := w
	if c.Grouped && len(c.Series) > 0 {
		bw = w / float64(len(c.Series))
	}
	base := map[int64]float64{}
	for i, s := range c.Series {
		color := palette[i%len(palette)]
		for _, p := range s.Points {
			if p.V <= 0 {
				continue
			}
			k := p.T.UnixMicro()
			bx := x(p.T) + left
			y0, y1 := y(0), y(p.V)
			if c.Grouped {
				bx += float64(i) * bw
			} else {
				y0, y1 = y(base[k]), y(base[k]+p.V)
				base[k] += p.V
			}
			b.f(`<rect class="bar" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s %s: %s</title></rect>`+"\n",
				num(bx), num(y1), num(bw), num(y0-y1), color, esc(s.Name), p.T.UTC().Format(time.RFC3339), countLabel(p.V))
		}
		items = append(items, legendItem{color: color, text: s.Name})
	}
	return items
}

// drawLines draws the series as lines (with a dot per point when there are few) and returns
// their legend.
func (c *TimeChart) drawLines(b *svgBuf, x func(time.Time) float64, y func(float64) float64, gap time.Duration) []legendItem {
	var items []legendItem
	for i, s := range c.Series {
		color := palette[i%len(palette)]
		// A line joins neighbouring points only: across a gap (serve was down, the
		// stream idle) it would draw a ramp through times that had no batch.
		limit := 3 * max(gap, medianStep(s.Points))
		var pts []string
		flush := func() {
			if len(pts) > 0 {
				b.f(`<polyline class="series" data-name="%s" fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", esc(s.Name), color, strings.Join(pts, " "))
			}
			pts = pts[:0]
		}
		for k, p := range s.Points {
			if k > 0 && p.T.Sub(s.Points[k-1].T) > limit {
				flush()
			}
			pts = append(pts, num(x(p.T))+","+num(y(p.V)))
		}
		flush()
		if len(s.Points) <= 60 {
			for _, p := range s.Points {
				b.f(`<circle cx="%s" cy="%s" r="2.5" fill="%s"><title>%s %s: %s</title></circle>`+"\n",
					num(x(p.T)), num(y(p.V)), color, esc(s.Name), p.T.UTC().Format(time.RFC3339), countLabel(p.V))
			}
		}
		items = append(items, legendItem{color: color, text: s.Name})
	}
	return items
}

// medianStep is the median distance between consecutive points (0 for fewer than two).
func medianStep(pts []Point) time.Duration {
	if len(pts) < 2 {
		return 0
	}
	d := make([]time.Duration, 0, len(pts)-1)
	for k := 1; k < len(pts); k++ {
		d = append(d, pts[k].T.Sub(pts[k-1].T))
	}
	slices.Sort(d)
	return d[len(d)/2]
}

// minGap is the smallest distance between two distinct point times of any series.
func minGap(series []Series) time.Duration {
	var g time.Duration
	for _, s := range series {
		for i := 1; i < len(s.Points); i++ {
			d := s.Points[i].T.Sub(s.Points[i-1].T)
			if d < 0 {
				d = -d
			}
			if d > 0 && (g == 0 || d < g) {
				g = d
			}
		}
	}
	return g
}

// lagTicks are the labelled values of a lag axis, in seconds.
var lagTicks = []time.Duration{
	time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, time.Second, 10 * time.Second,
	time.Minute, 10 * time.Minute, time.Hour, 6 * time.Hour, day, 7 * day, 30 * day, 365 * day,
}

// LagChart is the lag histogram with p50, p95, p99 and the current and recommended watermarks
// marked. The axis spans the non-empty buckets and every marker; negative lags, which a log
// axis cannot show, are counted in the note.
func LagChart(r *LagReport) *HistogramChart {
	c := &HistogramChart{
		Title:  "Lag (ingest time - event time) of " + r.Table,
		XLabel: "lag (log scale)", YLabel: "rows",
	}
	var markers []Marker
	add := func(name string, d time.Duration, dashed bool) {
		markers = append(markers, Marker{Name: name, Value: d.Seconds(), Text: FormatLag(d), Dashed: dashed})
	}
	if r.Rows > 0 {
		add("p50", r.P50, false)
		add("p95", r.P95, false)
		add("p99", r.P99, false)
	}
	if r.Current > 0 {
		add("current watermark", r.Current, true)
	}
	add("recommended watermark", r.Recommended, true)
	c.Markers = markers
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, b := range r.Histogram {
		bl, bh := b.Lo.Seconds(), b.Hi.Seconds()
		if b.Lo <= 0 {
			bl = bh / 10
		}
		if b.Hi <= 0 {
			bh = max(bl*2, r.Max.Seconds())
		}
		c.Bars = append(c.Bars, Bar{Lo: bl, Hi: bh, Count: b.Count, Label: b.Label()})
		if b.Count > 0 {
			lo, hi = min(lo, bl), max(hi, bh)
		}
	}
	for _, m := range markers {
		if m.Value > 0 {
			lo, hi = min(lo, m.Value), max(hi, m.Value)
		}
	}
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		lo, hi = 0.1, 10
	}
	// A little room on both sides so that markers at the ends are not on the frame.
	c.Min, c.Max = lo/1.5, hi*1.5
	for _, t := range lagTicks {
		if v := t.Seconds(); v >= c.Min && v <= c.Max {
			c.Ticks = append(c.Ticks, Tick{Value: v, Label: niceName(t)})
		}
	}
	c.Note = fmt.Sprintf("%s rows, p50 %s, p95 %s, p99 %s, max %s", groupDigits(r.Rows), FormatLag(r.P50), FormatLag(r.P95), FormatLag(r.P99), FormatLag(r.Max))
	if r.Negative > 0 {
		c.Note += fmt.Sprintf("; %s rows with negative lag not shown", groupDigits(r.Negative))
	}
	return c
}
