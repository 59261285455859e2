package bench

import (
	"fmt"
	"html"
	"math"
	"sort"
	"strings"
)

// series is one line of the plot: an engine's stage for one key count on one backend.
type series struct {
	label  string
	color  string
	points [][2]float64 // events, value
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}

// PlotSVG draws throughput (events/s) and peak RSS (MB) against events, for our end to end
// and stream stages and Spark's streaming job, one line per key count and backend. Log-log
// axes; a single size shows as points.
func PlotSVG(runs []Run) string {
	type id struct {
		engine, stage, backend string
		keys                   int
	}
	want := func(r Run) bool {
		return r.OK() && ((r.Engine == EngineOurs && (r.Stage == StageEndToEnd || r.Stage == StageStream)) ||
			(r.Engine == EngineSpark && r.Stage == StageStream))
	}
	groups := map[id][]Run{}
	var ids []id
	for _, r := range runs {
		if !want(r) {
			continue
		}
		k := id{r.Engine, r.Stage, r.Backend, r.Keys}
		if _, ok := groups[k]; !ok {
			ids = append(ids, k)
		}
		groups[k] = append(groups[k], r)
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := ids[i], ids[j]
		return fmt.Sprint(a.engine, a.stage, a.backend, a.keys) < fmt.Sprint(b.engine, b.stage, b.backend, b.keys)
	})
	var thr, mem []series
	for i, k := range ids {
		rs := groups[k]
		sort.Slice(rs, func(a, b int) bool { return rs[a].Events < rs[b].Events })
		label := fmt.Sprintf("%s %s, %s keys, %s", k.engine, k.stage, Count(int64(k.keys)), k.backend)
		if k.engine == EngineSpark {
			label = fmt.Sprintf("spark streaming, %s keys", Count(int64(k.keys)))
		}
		t := series{label: label, color: palette[i%len(palette)]}
		m := t
		for _, r := range rs {
			t.points = append(t.points, [2]float64{float64(r.Events), r.EventsPerS()})
			m.points = append(m.points, [2]float64{float64(r.Events), float64(r.MaxRSSKB) / 1024})
		}
		thr, mem = append(thr, t), append(mem, m)
	}
	const w, h = 960, 440
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	panel(&b, 60, 30, 380, 260, "throughput (events/s)", thr)
	panel(&b, 540, 30, 380, 260, "peak RSS (MB)", mem)
	for i, s := range thr {
		y := 330 + 18*i
		fmt.Fprintf(&b, `<line x1="60" y1="%d" x2="90" y2="%d" stroke="%s" stroke-width="2"/>`, y, y, s.color)
		fmt.Fprintf(&b, `<text x="96" y="%d" dominant-baseline="middle">%s</text>`+"\n", y, html.EscapeString(s.label))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// panel draws one log-log chart with its axes at (x0, y0), size pw x ph.
func panel(b *strings.Builder, x0, y0, pw, ph float64, title string, ss []series) {
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for _, p := range s.points {
			if p[0] > 0 && p[1] > 0 && !math.IsNaN(p[1]) {
				xmin, xmax = math.Min(xmin, p[0]), math.Max(xmax, p[0])
				ymin, ymax = math.Min(ymin, p[1]), math.Max(ymax, p[1])
			}
		}
	}
	fmt.Fprintf(b, `<text x="%g" y="%g" font-weight="bold">%s vs events</text>`+"\n", x0, y0-10, html.EscapeString(title))
	fmt.Fprintf(b, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#333"/>`+"\n", x0, y0, pw, ph)
	if math.IsInf(xmin, 0) {
		fmt.Fprintf(b, `<text x="%g" y="%g">no data</text>`+"\n", x0+pw/2-20, y0+ph/2)
		return
	}
	// Whole decades around the data, so ticks are powers of ten.
	lx0, lx1 := math.Floor(math.Log10(xmin)), math.Ceil(math.Log10(xmax))
	ly0, ly1 := math.Floor(math.Log10(ymin)), math.Ceil(math.Log10(ymax))
	if lx1 == lx0 {
		lx1++
	}
	if ly1 == ly0 {
		ly1++
	}
	px := func(v float64) float64 { return x0 + (math.Log10(v)-lx0)/(lx1-lx0)*pw }
	py := func(v float64) float64 { return y0 + ph - (math.Log10(v)-ly0)/(ly1-ly0)*ph }
	for d := lx0; d <= lx1; d++ {
		x := x0 + (d-lx0)/(lx1-lx0)*pw
		fmt.Fprintf(b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#ddd"/>`, x, y0, x, y0+ph)
		fmt.Fprintf(b, `<text x="%.1f" y="%g" text-anchor="middle">%s</text>`+"\n", x, y0+ph+16, si(math.Pow(10, d)))
	}
	for d := ly0; d <= ly1; d++ {
		y := y0 + ph - (d-ly0)/(ly1-ly0)*ph
		fmt.Fprintf(b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#ddd"/>`, x0, y, x0+pw, y)
		fmt.Fprintf(b, `<text x="%g" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", x0-4, y, si(math.Pow(10, d)))
	}
	for _, s := range ss {
		var pts []string
		for _, p := range s.points {
			if p[0] <= 0 || p[1] <= 0 || math.IsNaN(p[1]) {
				continue
			}
			x, y := px(p[0]), py(p[1])
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>`, x, y, s.color)
		}
		if len(pts) > 1 {
			fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`, strings.Join(pts, " "), s.color)
		}
		b.WriteString("\n")
	}
}
