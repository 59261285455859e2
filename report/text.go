package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/medallion-lake/medallion/config"
)

// FormatLag prints a lag for people, with about three significant figures: "850ms", "1.99s",
// "4m12s", "2h05m", "3d04h", "-12s".
func FormatLag(d time.Duration) string {
	if d < 0 {
		return "-" + FormatLag(-d)
	}
	switch {
	case d == 0:
		return "0s"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < 10*time.Second:
		return trimZeros(fmt.Sprintf("%.2f", d.Seconds())) + "s"
	case d < time.Minute:
		return trimZeros(fmt.Sprintf("%.1f", d.Seconds())) + "s"
	case d < time.Hour:
		return twoUnits(int64(d.Round(time.Second)/time.Second), 60, "m%d", "%02ds")
	case d < day:
		return twoUnits(int64(d.Round(time.Minute)/time.Minute), 60, "h%d", "%02dm")
	}
	return twoUnits(int64(d.Round(time.Hour)/time.Hour), 24, "d%d", "%02dh")
}

// twoUnits prints n small units as big units and the rest ("4m05s"), or the big units alone
// when the rest is zero ("10m"). big is the big unit's letter followed by a verb for nothing.
func twoUnits(n, per int64, big, small string) string {
	s := fmt.Sprintf("%d%s", n/per, big[:1])
	if n%per != 0 {
		s += fmt.Sprintf(small, n%per)
	}
	return s
}

func trimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// percent prints a fraction as a percentage with two decimals, or "<0.01%" for a small
// non-zero one (so that a few late rows never read as none).
func percent(f float64) string {
	if f > 0 && f < 0.00005 {
		return "<0.01%"
	}
	return fmt.Sprintf("%.2f%%", f*100)
}

// groupDigits prints n with thousands separators.
func groupDigits(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func rangeText(from, to time.Time) string {
	f, t := "-inf", "+inf"
	if !from.IsZero() {
		f = from.UTC().Format(time.RFC3339)
	}
	if !to.IsZero() {
		t = to.UTC().Format(time.RFC3339)
	}
	if from.IsZero() && to.IsZero() {
		return "all"
	}
	return "[" + f + ", " + t + ")"
}

// histogramBarWidth is the longest text bar, in characters.
const histogramBarWidth = 40

// WriteText writes the report for a terminal: summary, percentiles, a histogram with bars,
// the candidate watermarks and the recommendation, and late rows per day per quarantine.
func (r *LagReport) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p("Lag = %s - %s over %s, event time %s\n", "_ingest_time", r.EventTime, r.Table, rangeText(r.From, r.To))
	p("rows %s   without event time %s   future (beyond max_future_skew, left out) %s   negative lag %s",
		groupDigits(r.Rows), groupDigits(r.NullEventTime), groupDigits(r.Future), groupDigits(r.Negative))
	if r.Rows > 0 {
		p(" (%s)", percent(float64(r.Negative)/float64(r.Rows)))
	}
	p("\n")
	if r.Rows == 0 {
		p("\nNo rows: nothing to measure. Recommended watermark: %s (the smallest).\n", niceName(r.Recommended))
		r.writeQuarantineText(p)
		return bw.Flush()
	}
	p("\n%-6s %10s\n", "", "lag")
	for _, row := range []struct {
		name string
		v    time.Duration
	}{{"avg", r.Avg}, {"min", r.Min}, {"p50", r.P50}, {"p90", r.P90}, {"p95", r.P95}, {"p99", r.P99}, {"max", r.Max}} {
		p("%-6s %10s\n", row.name, FormatLag(row.v))
	}
	p("(percentiles within %.1f%%; avg, min and max exact)\n", RelativeAccuracy*100)

	p("\nHistogram (rows with lo < lag <= hi)\n")
	lo, hi := -1, -1
	var top int64
	for i, b := range r.Histogram {
		if b.Count > 0 {
			if lo < 0 {
				lo = i
			}
			hi = i
			top = max(top, b.Count)
		}
	}
	top = max(top, r.Negative)
	bar := func(label string, n int64) {
		width := 0
		if top > 0 {
			width = int(math.Round(float64(n) / float64(top) * histogramBarWidth))
		}
		if n > 0 && width == 0 {
			width = 1 // a non-empty bucket is never invisible
		}
		p("%-9s |%-*s %12s %7s\n", label, histogramBarWidth, strings.Repeat("#", width), groupDigits(n), percent(float64(n)/float64(r.Rows)))
	}
	if r.Negative > 0 {
		bar("<0", r.Negative)
	}
	for i := lo; i >= 0 && i <= hi; i++ {
		bar(r.Histogram[i].Label(), r.Histogram[i].Count)
	}

	p("\n%-12s %8s %14s %9s\n", "watermark", "value", "late rows", "late")
	for _, c := range r.Candidates {
		mark := ""
		if !c.Exact {
			mark = " ~"
		}
		p("%-12s %8s %14s %9s%s\n", c.Name, FormatLag(c.Watermark), groupDigits(c.LateRows), percent(c.LateFraction), mark)
	}
	p("(~ estimated from the sketch. A row counts as late here when lag > watermark; the stream compares\n" +
		" window ends with max event time - watermark, so its counts differ, usually lower)\n")
	if r.Backfill {
		p("\nBackfill: these lags are a backfill's. Event times lie far behind the ingest time (p50 %s) in bulk,\n"+
			"while rows arrive at most %s (p95; p99 %s, max %s) behind the newest event time ingested before\n"+
			"them. The stream judges rows by that newest event time, so the candidates above and the\n"+
			"recommendation are based on arrival order, not on the lag.\n",
			FormatLag(r.P50), FormatLag(r.ArrivalP95), FormatLag(r.ArrivalP99), FormatLag(r.ArrivalMax))
		p("\nRecommended watermark: %s (2x arrival p95 = %s, rounded up to a nice value)", niceName(r.Recommended), FormatLag(2*r.ArrivalP95))
	} else {
		p("\nRecommended watermark: %s (2x p95 = %s, rounded up to a nice value)", niceName(r.Recommended), FormatLag(2*r.P95))
	}
	if r.Current > 0 {
		p("; current: %s", niceName(r.Current))
	}
	p("\n")
	r.writeQuarantineText(p)
	return bw.Flush()
}

func (r *LagReport) writeQuarantineText(p func(string, ...any)) {
	if len(r.Quarantine) == 0 {
		return
	}
	p("\nLate rows (quarantine tables; per day also as the stream's progress reported them)\n")
	for _, q := range r.Quarantine {
		if !q.Exists {
			p("%-16s %s: no table yet\n", q.Gold, q.Table)
		} else {
			p("%-16s %s: %s rows", q.Gold, q.Table, groupDigits(q.Rows))
			if q.DayColumn != "" {
				p(", days by %s", q.DayColumn)
			}
			p("\n%-16s %s\n", "", q.MergeText())
		}
		days := q.Days()
		if len(days) == 0 {
			continue
		}
		p("  %-10s %12s %12s\n", "day", "quarantine", "progress")
		for _, d := range days {
			p("  %-10s %12s %12s\n", d.Day, optCount(d.Quarantine), optCount(d.Progress))
		}
	}
}

// MergeText says how much of the quarantine merge-late has folded back into gold.
func (q QuarantineLate) MergeText() string {
	switch {
	case q.Pending < 0:
		return "merge state unknown (files without row counts)"
	case q.MergedVersion < 0:
		return fmt.Sprintf("not merged yet: %s rows pending", groupDigits(q.Pending))
	}
	return fmt.Sprintf("merged into gold up to version %d: %s rows; %s rows pending", q.MergedVersion, groupDigits(q.Merged), groupDigits(q.Pending))
}

// DayLate is one day of late rows: from the quarantine table and from progress (-1: none).
type DayLate struct {
	Day                  string
	Quarantine, Progress int64
}

// Days joins PerDay and ProgressPerDay by day, in day order.
func (q QuarantineLate) Days() []DayLate {
	var out []DayLate
	i, j := 0, 0
	for i < len(q.PerDay) || j < len(q.ProgressPerDay) {
		switch {
		case j == len(q.ProgressPerDay) || i < len(q.PerDay) && q.PerDay[i].Day < q.ProgressPerDay[j].Day:
			out = append(out, DayLate{q.PerDay[i].Day, q.PerDay[i].Rows, -1})
			i++
		case i == len(q.PerDay) || q.ProgressPerDay[j].Day < q.PerDay[i].Day:
			out = append(out, DayLate{q.ProgressPerDay[j].Day, -1, q.ProgressPerDay[j].Rows})
			j++
		default:
			out = append(out, DayLate{q.PerDay[i].Day, q.PerDay[i].Rows, q.ProgressPerDay[j].Rows})
			i++
			j++
		}
	}
	return out
}

func optCount(n int64) string {
	if n < 0 {
		return "-"
	}
	return groupDigits(n)
}

// seconds renders a duration as JSON seconds (microsecond precision).
type seconds time.Duration

func (s seconds) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprintf("%.6f", time.Duration(s).Seconds())), nil
}

// MarshalJSON writes the report with durations in seconds and times in RFC 3339 (null for an
// open range end).
func (r *LagReport) MarshalJSON() ([]byte, error) {
	type bucket struct {
		Label string   `json:"label"`
		Lo    seconds  `json:"lo_s"`
		Hi    *seconds `json:"hi_s"`
		Count int64    `json:"count"`
	}
	type candidate struct {
		Name         string  `json:"name"`
		Watermark    seconds `json:"watermark_s"`
		Text         string  `json:"watermark"`
		LateRows     int64   `json:"late_rows"`
		LateFraction float64 `json:"late_fraction"`
		Exact        bool    `json:"exact"`
	}
	type day struct {
		Day  string `json:"day"`
		Rows int64  `json:"rows"`
	}
	type quarantine struct {
		Gold           string `json:"gold"`
		Table          string `json:"table"`
		Exists         bool   `json:"exists"`
		Rows           int64  `json:"rows"`
		DayColumn      string `json:"day_column,omitempty"`
		PerDay         []day  `json:"per_day"`
		ProgressPerDay []day  `json:"progress_per_day"`
		MergedVersion  int64  `json:"merged_version"`
		Merged         int64  `json:"merged_rows"`
		Pending        int64  `json:"pending_rows"`
	}
	ts := func(t time.Time) *string {
		if t.IsZero() {
			return nil
		}
		s := t.UTC().Format(time.RFC3339Nano)
		return &s
	}
	out := struct {
		From             *string      `json:"from"`
		To               *string      `json:"to"`
		Table            string       `json:"table"`
		EventTime        string       `json:"event_time"`
		Rows             int64        `json:"rows"`
		NullEventTime    int64        `json:"null_event_time"`
		Future           int64        `json:"future"`
		Negative         int64        `json:"negative"`
		Avg              seconds      `json:"avg_s"`
		Min              seconds      `json:"min_s"`
		Max              seconds      `json:"max_s"`
		P50              seconds      `json:"p50_s"`
		P90              seconds      `json:"p90_s"`
		P95              seconds      `json:"p95_s"`
		P99              seconds      `json:"p99_s"`
		RelativeAccuracy float64      `json:"percentile_relative_accuracy"`
		Current          seconds      `json:"current_watermark_s"`
		Recommended      seconds      `json:"recommended_watermark_s"`
		RecommendedText  string       `json:"recommended_watermark"`
		Histogram        []bucket     `json:"histogram"`
		Candidates       []candidate  `json:"candidates"`
		Quarantine       []quarantine `json:"quarantine"`
		Kafka            *KafkaLag    `json:"kafka,omitempty"`
		ArrivalP95       seconds      `json:"arrival_p95_s"`
		ArrivalP99       seconds      `json:"arrival_p99_s"`
		ArrivalMax       seconds      `json:"arrival_max_s"`
		Backfill         bool         `json:"backfill"`
	}{
		ArrivalP95: seconds(r.ArrivalP95), ArrivalP99: seconds(r.ArrivalP99), ArrivalMax: seconds(r.ArrivalMax), Backfill: r.Backfill,
		Kafka: r.Kafka,
		From:  ts(r.From), To: ts(r.To), Table: r.Table, EventTime: r.EventTime,
		Rows: r.Rows, NullEventTime: r.NullEventTime, Future: r.Future, Negative: r.Negative,
		Avg: seconds(r.Avg), Min: seconds(r.Min), Max: seconds(r.Max),
		P50: seconds(r.P50), P90: seconds(r.P90), P95: seconds(r.P95), P99: seconds(r.P99),
		RelativeAccuracy: RelativeAccuracy, Current: seconds(r.Current),
		Recommended: seconds(r.Recommended), RecommendedText: niceName(r.Recommended),
		Histogram: []bucket{}, Candidates: []candidate{}, Quarantine: []quarantine{},
	}
	for _, b := range r.Histogram {
		jb := bucket{Label: b.Label(), Lo: seconds(b.Lo), Count: b.Count}
		if b.Hi > 0 {
			h := seconds(b.Hi)
			jb.Hi = &h
		}
		out.Histogram = append(out.Histogram, jb)
	}
	for _, c := range r.Candidates {
		out.Candidates = append(out.Candidates, candidate{Name: c.Name, Watermark: seconds(c.Watermark),
			Text: FormatLag(c.Watermark), LateRows: c.LateRows, LateFraction: c.LateFraction, Exact: c.Exact})
	}
	for _, q := range r.Quarantine {
		jq := quarantine{Gold: q.Gold, Table: q.Table, Exists: q.Exists, Rows: q.Rows, DayColumn: q.DayColumn,
			PerDay: []day{}, ProgressPerDay: []day{}, MergedVersion: q.MergedVersion, Merged: q.Merged, Pending: q.Pending}
		for _, d := range q.PerDay {
			jq.PerDay = append(jq.PerDay, day(d))
		}
		for _, d := range q.ProgressPerDay {
			jq.ProgressPerDay = append(jq.ProgressPerDay, day(d))
		}
		out.Quarantine = append(out.Quarantine, jq)
	}
	return json.Marshal(out)
}

// WriteText prints the graph's nodes, one line each in graph order: kind, name, table version,
// freshness, the watermark its windows are complete to and the late rows pending (the same
// figures as the status page's graph).
func (g *GraphStatus) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, n := range g.Nodes {
		fmt.Fprintf(&b, "%-8s %s", n.Kind, n.Name)
		switch {
		case n.Kind == config.NodeLanding:
			fmt.Fprintf(&b, ": %s\n", n.Path)
			continue
		case !n.Exists:
			b.WriteString(": no table yet")
		default:
			fmt.Fprintf(&b, ": version %d", n.Version)
		}
		if f := n.Freshness(); f != "" {
			b.WriteString(", " + f)
		}
		if wm := n.watermarkText(); wm != "" {
			b.WriteString(", windows complete to " + wm)
		}
		if n.LatePending >= 0 {
			fmt.Fprintf(&b, ", %s late rows pending", groupDigits(n.LatePending))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
