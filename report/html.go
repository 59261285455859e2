package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/objstore"
)

// DefaultMaxBatches is how many of the latest progress files a report charts.
const DefaultMaxBatches = 500

// ReportOptions tune Build.
type ReportOptions struct {
	Lag LagOptions
	// Now stamps the report (it is shown, never used to select data).
	Now time.Time
	// MaxBatches bounds the progress files read (DefaultMaxBatches when 0).
	MaxBatches int
}

// Report is everything the HTML status report shows.
type Report struct {
	Generated time.Time
	// Source is the config file, Lake the lake URL.
	Source, Lake string
	// Lag is nil when it could not be measured; LagProblem then says why.
	Lag        *LagReport
	LagProblem string
	Tables     []TableStatus
	// Checkpoint is the stream's checkpoint; Batches its latest progress, oldest first.
	Checkpoint string
	Batches    []BatchProgress
	// Gold lists the aggregation names, in config order (the late-row series).
	Gold []string
	// Problems are files that could not be read and were left out.
	Problems []string
	// Jobs are the scheduled jobs of a running serve (nil in a report written to a file).
	Jobs []JobStatus
	// RefreshSeconds > 0 makes the page reload itself (the live page of serve).
	RefreshSeconds int
	// KafkaLag is the consumer lag of a Kafka landing (nil for a files landing), filled by jobs.
	KafkaLag *KafkaLag
	// Name is the source the lag, checkpoint and batches are about, in a several-source config
	// (the top-level source for the report itself; empty for a single-source config).
	Name string
	// Sources are the other sources of a several-source config, each as its own report (their
	// tables are listed in Tables too).
	Sources []*Report
	// Joins are the join queries' panels (several-source configs).
	Joins []JoinPanel
	// Graph is the pipeline graph with each node's version, freshness and late rows pending
	// (nil when it could not be read; the report of one source of several has none).
	Graph *GraphStatus
}

// JobStatus is one scheduled job as serve's page shows it.
type JobStatus struct {
	Name        string    `json:"name"`
	Schedule    string    `json:"schedule"`
	Running     bool      `json:"running"`
	LastStart   time.Time `json:"last_start,omitzero"`
	LastEnd     time.Time `json:"last_end,omitzero"`
	LastResult  string    `json:"last_result,omitempty"`
	LastError   string    `json:"last_error,omitempty"`
	Runs        int64     `json:"runs"`
	Failures    int64     `json:"failures"`
	NextRun     time.Time `json:"next_run,omitzero"`
	LeaseHolder string    `json:"lease_holder,omitempty"`
}

// Duration is the last run's duration, or zero while it runs or before it ever ran.
func (j JobStatus) Duration() time.Duration {
	if j.LastEnd.Before(j.LastStart) {
		return 0
	}
	return j.LastEnd.Sub(j.LastStart).Round(time.Millisecond)
}

// Build reads the lag, the tables and the stream progress of a pipeline. A pipeline without
// bronze or progress yet gives a report that says so; only storage errors fail.
func Build(ctx context.Context, lake objstore.Bucket, cfg *config.Pipeline, opts ReportOptions) (*Report, error) {
	if !cfg.MultiSource() {
		r, err := buildSource(ctx, lake, cfg, opts)
		if err != nil {
			return nil, err
		}
		r.addGraph(ctx, lake, cfg)
		return r, nil
	}
	// Every source from its single-source view (its own bronze, lag, checkpoint and the
	// aggregations over it), the top-level one as the report itself; then the joins.
	var r *Report
	var tables []TableStatus
	seen := map[string]bool{}
	for i, s := range cfg.AllSources() {
		v, _ := cfg.ForSource(s.Name)
		sub, err := buildSource(ctx, lake, v, opts)
		if err != nil {
			return nil, fmt.Errorf("report: source %s: %w", s.Name, err)
		}
		sub.Name = s.Name
		for _, t := range sub.Tables {
			if seen[t.Path] {
				continue // a rejects table the sources share
			}
			seen[t.Path] = true
			t.Role = s.Name + " " + t.Role
			tables = append(tables, t)
		}
		if i == 0 {
			r = sub
		} else {
			r.Sources = append(r.Sources, sub)
		}
	}
	var joinTables []TableStatus
	for _, j := range cfg.Joins {
		joinTables = append(joinTables, TableStatus{Role: j.Name + " joined", Path: j.Table}, TableStatus{Role: j.Name + " quarantine", Path: j.Quarantine})
		for _, g := range cfg.GoldOf(j.Name) {
			joinTables = append(joinTables, TableStatus{Role: "quarantine " + g.Name, Path: g.Quarantine}, TableStatus{Role: "gold " + g.Name, Path: g.Table})
		}
	}
	err := tableStatuses(ctx, lake, joinTables)
	if err != nil {
		return nil, err
	}
	r.Tables = append(tables, joinTables...)
	r.addGraph(ctx, lake, cfg)
	limit := opts.MaxBatches
	if limit == 0 {
		limit = DefaultMaxBatches
	}
	if r.Joins, err = JoinPanels(ctx, lake, cfg, limit); err != nil {
		return nil, err
	}
	r.Source = cfg.Source()
	return r, nil
}

// addGraph reads the pipeline graph into r.Graph; a checkpoint or log it cannot read leaves the
// graph out with a problem, not the whole page.
func (r *Report) addGraph(ctx context.Context, lake objstore.Bucket, cfg *config.Pipeline) {
	g, err := PipelineGraph(ctx, lake, cfg)
	if err != nil {
		r.Problems = append(r.Problems, "pipeline graph: "+err.Error())
		return
	}
	r.Graph = g
}

// buildSource is Build for one source (a single-source config or a source's view).
func buildSource(ctx context.Context, lake objstore.Bucket, cfg *config.Pipeline, opts ReportOptions) (*Report, error) {
	r := &Report{Generated: opts.Now, Source: cfg.Source(), Lake: cfg.Lake, Checkpoint: cfg.Stream.Checkpoint}
	for _, g := range cfg.Gold {
		r.Gold = append(r.Gold, g.Name)
	}
	lag, err := Lag(ctx, lake, cfg, opts.Lag)
	switch {
	case errors.Is(err, ErrNoBronze):
		r.LagProblem = "No bronze table yet: run ingest first."
	case err != nil:
		return nil, err
	default:
		r.Lag = lag
	}
	if r.Tables, err = Tables(ctx, lake, cfg); err != nil {
		return nil, err
	}
	limit := opts.MaxBatches
	if limit == 0 {
		limit = DefaultMaxBatches
	}
	if r.Batches, r.Problems, err = StreamProgress(ctx, lake, cfg, limit); err != nil {
		return nil, err
	}
	return r, nil
}

// RateChart is input and processing rate per batch.
func (r *Report) RateChart() *TimeChart {
	in, proc := Series{Name: "input rows/s"}, Series{Name: "processed rows/s"}
	for _, b := range r.Batches {
		// A run's first batch has no previous trigger to measure its input rate against
		// (progress says 0, as Spark's does): no point, rather than a dip to 0.
		if b.InputRowsPerSecond > 0 || b.NumInputRows == 0 {
			in.Points = append(in.Points, Point{b.Timestamp, b.InputRowsPerSecond})
		}
		proc.Points = append(proc.Points, Point{b.Timestamp, b.ProcessedRowsPerSecond})
	}
	return &TimeChart{Title: "Input and processing rate", YLabel: "rows per second", Series: []Series{in, proc}}
}

// DurationChart is each batch's trigger execution time.
func (r *Report) DurationChart() *TimeChart {
	s := Series{Name: "trigger execution ms"}
	for _, b := range r.Batches {
		s.Points = append(s.Points, Point{b.Timestamp, float64(b.DurationMs)})
	}
	return &TimeChart{Title: "Batch duration", YLabel: "milliseconds", Series: []Series{s}, Bars: true}
}

// LateBatchChart shows each aggregation's late rows per batch, side by side (not stacked: a row
// late for two aggregations would count twice).
func (r *Report) LateBatchChart() *TimeChart {
	c := &TimeChart{Title: "Late rows per batch (quarantined)", YLabel: "rows", Bars: true, Grouped: true}
	for _, g := range r.Gold {
		s := Series{Name: g}
		for _, b := range r.Batches {
			s.Points = append(s.Points, Point{b.Timestamp, float64(b.LateRows[g])})
		}
		c.Series = append(c.Series, s)
	}
	return c
}

// LateHourChart shows each aggregation's late rows per hour of batch time, side by side: a row
// late for two aggregations is in both quarantines, and a stack counted it twice (300 for 150
// rows). Each bar covers its hour, the axis up to the end of the last one.
func (r *Report) LateHourChart() *TimeChart {
	c := &TimeChart{Title: "Late rows per hour (quarantined)", YLabel: "rows", Bars: true, Interval: time.Hour, Grouped: true}
	for _, g := range r.Gold {
		s := Series{Name: g}
		for _, b := range r.Batches {
			h := b.Timestamp.Truncate(time.Hour)
			if n := len(s.Points); n > 0 && s.Points[n-1].T.Equal(h) {
				s.Points[n-1].V += float64(b.LateRows[g])
				continue
			}
			s.Points = append(s.Points, Point{h, float64(b.LateRows[g])})
		}
		c.Series = append(c.Series, s)
	}
	return c
}

// StateChart is the rows each state operator holds, per batch. The aggregations' operators
// come in the config's gold order after the dedup state, so each is named after its
// aggregation ("events_5m"), not after the operator ("stateStoreSave 2").
func (r *Report) StateChart() *TimeChart {
	c := &TimeChart{Title: "State rows", YLabel: "rows"}
	index := map[string]int{}
	for _, b := range r.Batches {
		for k, label := range r.StateLabels(b.StateRows) {
			i, ok := index[label]
			if !ok {
				i = len(c.Series)
				index[label] = i
				c.Series = append(c.Series, Series{Name: label})
			}
			c.Series[i].Points = append(c.Series[i].Points, Point{b.Timestamp, float64(b.StateRows[k].Count)})
		}
	}
	return c
}

// StateFootprint is one state operator after the latest batch: its rows beside its bytes.
type StateFootprint struct {
	Name        string
	Rows, Bytes int64
}

// BytesPerRow is the state's cost per row (per open group, per key): 0 without rows.
func (f StateFootprint) BytesPerRow() int64 {
	if f.Rows == 0 {
		return 0
	}
	return f.Bytes / f.Rows
}

// StateFootprints is every state operator of the latest batch with its memoryUsedBytes, named as
// StateLabels names them; nil when no batch reports bytes (progress files before memoryUsedBytes
// was filled in say 0), so the page shows no table of zeros.
func (r *Report) StateFootprints() []StateFootprint {
	if len(r.Batches) == 0 {
		return nil
	}
	b := r.Batches[len(r.Batches)-1]
	if len(b.StateBytes) != len(b.StateRows) {
		return nil
	}
	var out []StateFootprint
	some := false
	for i, label := range r.StateLabels(b.StateRows) {
		out = append(out, StateFootprint{Name: label, Rows: b.StateRows[i].Count, Bytes: b.StateBytes[i].Count})
		some = some || b.StateBytes[i].Count > 0
	}
	if !some {
		return nil
	}
	return out
}

// StateLabels names each state operator of one batch for people and for metric labels:
// "dedup", then each aggregation after its gold table, in the config's order; an operator
// beyond those keeps its Spark name, numbered when it repeats. The labels of one batch are
// distinct.
func (r *Report) StateLabels(states []NamedCount) []string {
	labels := make([]string, len(states))
	seen := map[string]int{}
	agg := 0
	for i, op := range states {
		seen[op.Name]++
		label := op.Name
		switch {
		case op.Name == "dedupe":
			label = "dedup"
		case agg < len(r.Gold):
			label = r.Gold[agg]
			agg++
		case seen[op.Name] > 1:
			label = fmt.Sprintf("%s %d", op.Name, seen[op.Name])
		}
		labels[i] = label
	}
	return labels
}

// ExpectationTotal sums one expectation over the charted batches.
type ExpectationTotal struct {
	ExpectationCounts
	// FailedFraction is Failed / (Passed + Failed), 0 when no row was judged.
	FailedFraction float64
}

// ExpectationTotals sums each expectation's counts over the report's batches, in the order
// they first appear.
func (r *Report) ExpectationTotals() []ExpectationTotal {
	var out []ExpectationTotal
	index := map[string]int{}
	for _, b := range r.Batches {
		for _, e := range b.Expectations {
			i, ok := index[e.Name]
			if !ok {
				i = len(out)
				index[e.Name] = i
				out = append(out, ExpectationTotal{ExpectationCounts: ExpectationCounts{Name: e.Name, OnViolation: e.OnViolation}})
			}
			t := &out[i]
			t.Passed += e.Passed
			t.Failed += e.Failed
			t.Dropped += e.Dropped
			t.OnViolation = e.OnViolation
		}
	}
	for i := range out {
		if n := out[i].Passed + out[i].Failed; n > 0 {
			out[i].FailedFraction = float64(out[i].Failed) / float64(n)
		}
	}
	return out
}

// ExpectationChart stacks each expectation's violating rows per batch.
func (r *Report) ExpectationChart() *TimeChart {
	c := &TimeChart{Title: "Expectation violations per batch", YLabel: "rows", Bars: true}
	for _, t := range r.ExpectationTotals() {
		s := Series{Name: t.Name + " (" + t.OnViolation + ")"}
		for _, b := range r.Batches {
			var v int64
			for _, e := range b.Expectations {
				if e.Name == t.Name {
					v = e.Failed
				}
			}
			s.Points = append(s.Points, Point{b.Timestamp, float64(v)})
		}
		c.Series = append(c.Series, s)
	}
	return c
}

// streamSummary is the headline of the progress section.
type streamSummary struct {
	LastBatch                     int64
	Watermark, MaxEventTime       string
	Delay                         string
	InputRows                     int64
	LateRows                      []NamedCount
	FirstBatchTime, LastBatchTime string
}

func (r *Report) summary() *streamSummary {
	if len(r.Batches) == 0 {
		return nil
	}
	last := r.Batches[len(r.Batches)-1]
	s := &streamSummary{LastBatch: last.BatchID, FirstBatchTime: stamp(r.Batches[0].Timestamp), LastBatchTime: stamp(last.Timestamp)}
	if !last.Watermark.IsZero() {
		s.Watermark = stamp(last.Watermark)
	}
	// A batch without rows reports no max event time: take the latest that does.
	for i := len(r.Batches) - 1; i >= 0; i-- {
		if b := r.Batches[i]; !b.MaxEventTime.IsZero() {
			s.MaxEventTime = stamp(b.MaxEventTime)
			if !last.Watermark.IsZero() {
				s.Delay = FormatLag(b.MaxEventTime.Sub(last.Watermark))
			}
			break
		}
	}
	for _, g := range r.Gold {
		nc := NamedCount{Name: g}
		for _, b := range r.Batches {
			nc.Count += b.LateRows[g]
		}
		s.LateRows = append(s.LateRows, nc)
	}
	for _, b := range r.Batches {
		s.InputRows += b.NumInputRows
	}
	return s
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// byteSize prints a size in binary units ("1.5 MiB").
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

var pageTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"lag":     FormatLag,
	"nice":    niceName,
	"percent": percent,
	"digits": func(v any) string {
		switch n := v.(type) {
		case int:
			return groupDigits(int64(n))
		case int64:
			return groupDigits(n)
		}
		return fmt.Sprint(v)
	},
	"bytes": byteSize,
	"stamp": stamp,
	"svg":   func(s string) template.HTML { return template.HTML(s) }, // our own escaped SVG
	"rng":   rangeText,
	"count": optCount,
	"opt":   optInt,
}).Parse(pageHTML))

// optInt prints a figure that may be missing (nil) as "—".
func optInt(p *int64) string {
	if p == nil {
		return "—"
	}
	return groupDigits(*p)
}

// SourceRow is one source in the status page's sources table (several-source configs).
type SourceRow struct {
	Name       string `json:"name"`
	Bronze     string `json:"bronze"`
	Silver     string `json:"silver"`
	Checkpoint string `json:"checkpoint"`
	// LagRows, LagP95Ms and RecommendedMs come from the source's lag (nil: not measured).
	LagRows       *int64 `json:"lagRows"`
	LagP95Ms      *int64 `json:"lagP95Ms"`
	RecommendedMs *int64 `json:"recommendedWatermarkMs"`
	// LastBatch, InputRows, Watermark and LateRows come from its progress (nil: no batch yet).
	LastBatch *int64 `json:"lastBatchId"`
	InputRows *int64 `json:"numInputRows"`
	// SilverRows and ValidationRejects sum the batches' sink metrics (nil: none reported).
	SilverRows        *int64 `json:"numSilverRows"`
	ValidationRejects *int64 `json:"numValidationRejects"`
	Watermark         string `json:"watermark,omitempty"`
	LateRows          *int64 `json:"numLateRowsQuarantined"`
}

// SourceRows lists every source of a several-source report (none for a single-source one):
// the report's own source first.
func (r *Report) SourceRows() []SourceRow {
	if r.Name == "" {
		return nil
	}
	var out []SourceRow
	for _, s := range append([]*Report{r}, r.Sources...) {
		row := SourceRow{Name: s.Name, Checkpoint: s.Checkpoint}
		for _, t := range s.Tables {
			// The report's own Tables list every source's, prefixed with the source's name.
			switch strings.TrimPrefix(t.Role, s.Name+" ") {
			case "bronze":
				row.Bronze = t.Path
			case "silver":
				row.Silver = t.Path
			}
		}
		if l := s.Lag; l != nil {
			rows, p95, rec := l.Rows, l.P95.Milliseconds(), l.Recommended.Milliseconds()
			row.LagRows, row.LagP95Ms, row.RecommendedMs = &rows, &p95, &rec
		}
		if sum := s.summary(); sum != nil {
			last, in := sum.LastBatch, sum.InputRows
			var late int64
			for _, n := range sum.LateRows {
				late += n.Count
			}
			row.LastBatch, row.InputRows, row.Watermark, row.LateRows = &last, &in, sum.Watermark, &late
		}
		for _, b := range s.Batches {
			for _, f := range [...]struct{ src, dst **int64 }{{&b.SilverRows, &row.SilverRows}, {&b.ValidationRejects, &row.ValidationRejects}} {
				if *f.src == nil {
					continue
				}
				if *f.dst == nil {
					*f.dst = new(int64)
				}
				**f.dst += **f.src
			}
		}
		out = append(out, row)
	}
	return out
}

// P95 and Recommended print the lag figures for the page.
func (s SourceRow) P95() string { return optLag(s.LagP95Ms) }

// Recommended is the recommended watermark, or "—".
func (s SourceRow) Recommended() string { return optLag(s.RecommendedMs) }

func optLag(ms *int64) string {
	if ms == nil {
		return "—"
	}
	return FormatLag(time.Duration(*ms) * time.Millisecond)
}

// pageData is what the template reads.
type pageData struct {
	*Report
	LagSVG, GraphSVG                                     string
	RateSVG, DurationSVG, LateSVG, LateHourSVG, StateSVG string
	Stream                                               *streamSummary
	// Expectations and ExpectationSVG: the data-quality section (absent without expectations).
	Expectations   []ExpectationTotal
	ExpectationSVG string
}

// WriteHTML writes the report as one self-contained HTML file: inline CSS and SVG, no script,
// nothing fetched, so it works offline and can be attached to a ticket.
func (r *Report) WriteHTML(w io.Writer) error {
	d := pageData{Report: r, Stream: r.summary()}
	if r.Graph != nil {
		d.GraphSVG = r.Graph.SVG()
	}
	if r.Lag != nil {
		d.LagSVG = LagChart(r.Lag).SVG()
	}
	if len(r.Batches) > 0 {
		d.RateSVG, d.DurationSVG = r.RateChart().SVG(), r.DurationChart().SVG()
		d.LateSVG, d.LateHourSVG, d.StateSVG = r.LateBatchChart().SVG(), r.LateHourChart().SVG(), r.StateChart().SVG()
		if d.Expectations = r.ExpectationTotals(); len(d.Expectations) > 0 {
			d.ExpectationSVG = r.ExpectationChart().SVG()
		}
	}
	if err := pageTemplate.Execute(w, d); err != nil {
		return fmt.Errorf("report: html: %w", err)
	}
	return nil
}

const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>medallion report: {{.Source}}</title>
{{- if .RefreshSeconds}}
<meta http-equiv="refresh" content="{{.RefreshSeconds}}">
{{- end}}
<style>
body { font-family: Helvetica, Arial, sans-serif; margin: 24px auto; max-width: 1180px; color: #222; padding: 0 16px; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 18px; border-bottom: 2px solid #0072B2; padding-bottom: 4px; margin-top: 36px; }
.meta { color: #555; font-size: 13px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }
th, td { padding: 4px 10px; border-bottom: 1px solid #ddd; text-align: left; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.figures { display: flex; flex-wrap: wrap; gap: 12px; margin: 12px 0; }
.figure { border: 1px solid #ddd; border-radius: 6px; padding: 8px 14px; min-width: 110px; }
.figure .v { font-size: 20px; font-weight: bold; }
.figure .k { font-size: 12px; color: #555; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; }
.chart svg { max-width: 100%; height: auto; border: 1px solid #eee; }
.missing { color: #888; }
.problem { color: #b00; }
.note { color: #555; font-size: 12px; }
</style>
</head>
<body>
<h1>medallion pipeline report</h1>
<div class="meta">config <code>{{.Source}}</code> &middot; lake <code>{{.Lake}}</code> &middot; generated {{stamp .Generated}}</div>

{{- if .Jobs}}
<section id="jobs">
<h2>Jobs</h2>
<table>
<tr><th>job</th><th>schedule</th><th>state</th><th>last run</th><th>result</th><th class="num">duration</th><th class="num">runs</th><th class="num">failures</th><th>next run</th><th>lease holder</th></tr>
{{- range .Jobs}}
<tr id="job-{{.Name}}"><td>{{.Name}}</td><td><code>{{.Schedule}}</code></td><td>{{if .Running}}running{{else}}idle{{end}}</td><td>{{stamp .LastStart}}</td><td{{if eq .LastResult "error"}} class="problem" title="{{.LastError}}"{{end}}>{{.LastResult}}</td><td class="num">{{if .Duration}}{{.Duration}}{{end}}</td><td class="num">{{.Runs}}</td><td class="num">{{.Failures}}</td><td>{{stamp .NextRun}}</td><td>{{.LeaseHolder}}</td></tr>
{{- end}}
</table>
</section>
{{- end}}

<section id="lag">
<h2>Lag: ingest time minus event time</h2>
{{- if .Lag}}{{with .Lag}}
<div class="meta">bronze table <code>{{.Table}}</code>, event time {{rng .From .To}}</div>
<div class="figures">
<div class="figure"><div class="v" id="lag-rows">{{digits .Rows}}</div><div class="k">rows</div></div>
<div class="figure"><div class="v" id="lag-p50">{{lag .P50}}</div><div class="k">p50</div></div>
<div class="figure"><div class="v" id="lag-p95">{{lag .P95}}</div><div class="k">p95</div></div>
<div class="figure"><div class="v" id="lag-p99">{{lag .P99}}</div><div class="k">p99</div></div>
<div class="figure"><div class="v" id="lag-max">{{lag .Max}}</div><div class="k">max</div></div>
<div class="figure"><div class="v" id="lag-current">{{if .Current}}{{nice .Current}}{{else}}none{{end}}</div><div class="k">current watermark</div></div>
<div class="figure"><div class="v" id="lag-recommended">{{nice .Recommended}}</div><div class="k">recommended watermark</div></div>
</div>
{{end}}
<div class="chart">{{svg $.LagSVG}}</div>
{{with .Lag}}
<table id="candidates">
<tr><th>watermark</th><th class="num">value</th><th class="num">late rows</th><th class="num">late</th><th></th></tr>
{{- range .Candidates}}
<tr><td>{{.Name}}</td><td class="num">{{lag .Watermark}}</td><td class="num">{{digits .LateRows}}</td><td class="num">{{percent .LateFraction}}</td><td>{{if not .Exact}}estimated{{end}}</td></tr>
{{- end}}
</table>
<p class="note">A row counts as late here when its lag exceeds the watermark. The stream compares window ends with the
maximum event time minus the watermark, so its counts differ (usually lower). Percentiles are within 0.5%.
{{if .Negative}}{{digits .Negative}} rows have a negative lag (event time after ingest time).{{end}}</p>
<h3>Late rows (quarantine)</h3>
<table id="quarantine">
<tr><th>aggregation</th><th>table</th><th class="num">rows</th><th>merge-late</th></tr>
{{- range .Quarantine}}
{{- if .Exists}}
<tr><td>{{.Gold}}</td><td><code>{{.Table}}</code></td><td class="num">{{digits .Rows}}</td><td>{{.MergeText}}</td></tr>
{{- else}}
<tr><td>{{.Gold}}</td><td><code>{{.Table}}</code></td><td class="missing" colspan="2">no table yet</td></tr>
{{- end}}
{{- end}}
</table>
<table id="late-per-day">
<tr><th>aggregation</th><th>day</th><th class="num">quarantined rows</th><th class="num">late rows in progress</th></tr>
{{- range .Quarantine}}{{$q := .}}
{{- range .Days}}
<tr><td>{{$q.Gold}}</td><td>{{.Day}}</td><td class="num">{{count .Quarantine}}</td><td class="num">{{count .Progress}}</td></tr>
{{- end}}
{{- end}}
</table>
{{end}}
{{- else}}
<p class="missing">{{.LagProblem}}</p>
{{- end}}
</section>

{{- with .KafkaLag}}
<section id="kafka-lag">
<h2>Kafka consumer lag</h2>
<div class="meta">log end offset minus the next offset ingest reads, topics {{range .Topics}}<code>{{.}}</code> {{end}}</div>
{{- if .Problem}}
<p class="missing">{{.Problem}}</p>
{{- else}}
<table>
<tr><th>topic</th><th class="num">partition</th><th class="num">ingested to</th><th class="num">end</th><th class="num">lag</th></tr>
{{- range .Partitions}}
<tr><td><code>{{.Topic}}</code></td><td class="num">{{.Partition}}</td><td class="num">{{.Committed}}</td><td class="num">{{.End}}</td><td class="num">{{.Lag}}</td></tr>
{{- end}}
<tr><td>total</td><td></td><td></td><td></td><td class="num" id="kafka-total-lag">{{.Total}}</td></tr>
</table>
{{- end}}
</section>
{{- end}}

{{- if .Graph}}
<section id="graph">
<h2>Pipeline graph</h2>
<div class="note">Each table's version; freshness: the upstream versions its query (or, for a derived table, its last pass) has not read yet; late rows pending: quarantine rows merge-late has not folded in. Hover a node for its path and the watermark its windows are complete to.</div>
<div class="chart">{{svg $.GraphSVG}}</div>
</section>
{{- end}}

<section id="tables">
<h2>Tables</h2>
<table>
<tr><th>role</th><th>path</th><th class="num">version</th><th class="num">files</th><th class="num">size</th><th>last operation</th><th>committed</th><th class="num">latest change</th></tr>
{{- range .Tables}}
{{- if .Exists}}
<tr><td>{{.Role}}</td><td><code>{{.Path}}</code></td><td class="num">{{.Version}}</td><td class="num">{{digits .Files}}</td><td class="num">{{bytes .Bytes}}</td><td>{{.LastOperation}}</td><td>{{stamp .LastCommit}}</td><td class="num">{{if not .ChangeFeed}}feed off{{else if ge .ChangeVersion 0}}{{.ChangeVersion}}{{else}}none recent{{end}}</td></tr>
{{- else}}
<tr><td>{{.Role}}</td><td><code>{{.Path}}</code></td><td class="missing" colspan="6">no table yet</td></tr>
{{- end}}
{{- end}}
</table>
</section>

<!-- STREAM PROGRESS: read from <stream.checkpoint>/progress/N.json (Spark's StreamingQueryProgress). -->
<section id="stream-progress">
<h2>Stream progress</h2>
<div class="meta">from <code>{{.Checkpoint}}/progress/</code>{{if .Batches}}, the last {{len .Batches}} batches{{end}}</div>
{{- with .Stream}}
<div class="figures">
<div class="figure"><div class="v" id="stream-last-batch">{{.LastBatch}}</div><div class="k">last batch</div></div>
<div class="figure"><div class="v" id="stream-input-rows">{{digits .InputRows}}</div><div class="k">input rows</div></div>
<div class="figure"><div class="v" id="stream-watermark">{{if .Watermark}}{{.Watermark}}{{else}}none{{end}}</div><div class="k">watermark{{if .Delay}} (max event time - {{.Delay}}){{end}}</div></div>
{{- range .LateRows}}
<div class="figure"><div class="v">{{digits .Count}}</div><div class="k">late rows, {{.Name}}</div></div>
{{- end}}
</div>
<div class="charts">
<div class="chart">{{svg $.RateSVG}}</div>
<div class="chart">{{svg $.DurationSVG}}</div>
<div class="chart">{{svg $.LateSVG}}</div>
<div class="chart">{{svg $.LateHourSVG}}</div>
<div class="chart">{{svg $.StateSVG}}</div>
</div>
{{- with $.StateFootprints}}
<table id="state-footprint">
<caption>State after the latest batch</caption>
<tr><th>operator</th><th class="num">rows</th><th class="num">memory</th><th class="num">bytes/row</th></tr>
{{- range .}}
<tr><td>{{.Name}}</td><td class="num">{{count .Rows}}</td><td class="num">{{bytes .Bytes}}</td><td class="num">{{.BytesPerRow}}</td></tr>
{{- end}}
</table>
{{- end}}
{{- else}}
<p class="missing">No progress yet: the stream has not run a batch.</p>
{{- end}}
{{- range .Problems}}
<p class="problem">Left out: {{.}}</p>
{{- end}}
</section>
{{- with .SourceRows}}

<!-- SOURCES: every source of a several-source config, each its own query and checkpoint. -->
<section id="sources">
<h2>Sources</h2>
<table id="source-table">
<tr><th>source</th><th>bronze</th><th>silver</th><th class="num">lag p95</th><th>recommended watermark</th><th class="num">last batch</th><th class="num">input rows</th><th class="num">silver rows</th><th class="num">validation rejects</th><th>watermark</th><th class="num">late rows</th></tr>
{{- range .}}
<tr id="source-{{.Name}}"><td>{{.Name}}</td><td><code>{{.Bronze}}</code></td><td><code>{{.Silver}}</code></td><td class="num">{{.P95}}</td><td>{{.Recommended}}</td><td class="num">{{opt .LastBatch}}</td><td class="num">{{opt .InputRows}}</td><td class="num">{{opt .SilverRows}}</td><td class="num">{{opt .ValidationRejects}}</td><td>{{if .Watermark}}{{.Watermark}}{{else}}—{{end}}</td><td class="num">{{opt .LateRows}}</td></tr>
{{- end}}
</table>
</section>
{{- end}}
{{- if .Joins}}

<!-- JOINS: each join query's progress (its checkpoint's progress files, read leniently). -->
<section id="joins">
<h2>Joins</h2>
{{- range .Joins}}
<h3 id="join-{{.Name}}">{{.Name}}: {{.Left}} {{.Type}} {{.Right}}</h3>
<div class="meta">joined <code>{{.Table}}</code>, quarantine <code>{{.Quarantine}}</code>, from <code>{{.Checkpoint}}/progress/</code>{{if .Batches}}, the last {{.Batches}} batches{{end}}</div>
<div class="figures">
<div class="figure"><div class="v" id="join-{{.Name}}-last-batch">{{opt .LastBatch}}</div><div class="k">last batch</div></div>
<div class="figure"><div class="v" id="join-{{.Name}}-output-rows">{{opt .OutputRows}}</div><div class="k">output rows</div></div>
<div class="figure"><div class="v">{{if .Watermark}}{{.Watermark}}{{else}}—{{end}}</div><div class="k">watermark</div></div>
</div>
<table id="join-{{.Name}}-sides">
<tr><th></th><th class="num">left: {{.Left}}</th><th class="num">right: {{.Right}}</th></tr>
<tr><td>input rows</td><td class="num">{{opt .LeftRows}}</td><td class="num">{{opt .RightRows}}</td></tr>
<tr><td>late rows (quarantined)</td><td class="num">{{opt .LateLeft}}</td><td class="num">{{opt .LateRight}}</td></tr>
<tr><td>state rows (last batch)</td><td class="num">{{opt .StateLeft}}</td><td class="num">{{opt .StateRight}}</td></tr>
</table>
{{- range .Problems}}
<p class="problem">Left out: {{.}}</p>
{{- end}}
{{- end}}
</section>
{{- end}}
{{- if .Expectations}}

<!-- EXPECTATIONS: the progress key expectations, summed over the batches above. -->
<section id="expectations">
<h2>Data-quality expectations</h2>
<table id="expectation-totals">
<tr><th>expectation</th><th>on violation</th><th class="num">passed</th><th class="num">failed</th><th class="num">dropped</th><th class="num">failed share</th></tr>
{{- range .Expectations}}
<tr id="expectation-{{.Name}}"><td>{{.Name}}</td><td>{{.OnViolation}}</td><td class="num">{{digits .Passed}}</td><td class="num{{if .Failed}} problem{{end}}">{{digits .Failed}}</td><td class="num">{{digits .Dropped}}</td><td class="num">{{percent .FailedFraction}}</td></tr>
{{- end}}
</table>
<div class="chart">{{svg .ExpectationSVG}}</div>
</section>
{{- end}}
</body>
</html>
`

// MarshalJSON writes the figures the HTML page shows (for an /api/status or a --json): the
// lag as LagReport's JSON, tables, the stream summary and each batch, times in RFC 3339.
func (r *Report) MarshalJSON() ([]byte, error) {
	type table struct {
		Role          string `json:"role"`
		Path          string `json:"path"`
		Exists        bool   `json:"exists"`
		Version       int64  `json:"version"`
		Files         int    `json:"files"`
		Bytes         int64  `json:"bytes"`
		LastOperation string `json:"last_operation,omitempty"`
		LastCommit    string `json:"last_commit,omitempty"`
		ChangeFeed    bool   `json:"change_feed"`
		// ChangeVersion: the newest version with change rows; absent when the feed is off
		// or none of the recent versions changed data.
		ChangeVersion *int64 `json:"latest_change_version,omitempty"`
	}
	type batch struct {
		BatchID                int64               `json:"batch_id"`
		Timestamp              string              `json:"timestamp"`
		NumInputRows           int64               `json:"num_input_rows"`
		InputRowsPerSecond     float64             `json:"input_rows_per_second"`
		ProcessedRowsPerSecond float64             `json:"processed_rows_per_second"`
		DurationMs             int64               `json:"duration_ms"`
		Watermark              string              `json:"watermark,omitempty"`
		MaxEventTime           string              `json:"max_event_time,omitempty"`
		LateRows               map[string]int64    `json:"late_rows"`
		StateRows              []NamedCount        `json:"state_rows"`
		StateBytes             []NamedCount        `json:"state_bytes,omitempty"`
		Expectations           []ExpectationCounts `json:"expectations,omitempty"`
	}
	rfc := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	out := struct {
		Generated  string       `json:"generated"`
		Source     string       `json:"source"`
		Lake       string       `json:"lake"`
		Lag        *LagReport   `json:"lag"`
		LagProblem string       `json:"lag_problem,omitempty"`
		Tables     []table      `json:"tables"`
		Checkpoint string       `json:"checkpoint"`
		Gold       []string     `json:"gold"`
		Batches    []batch      `json:"batches"`
		Problems   []string     `json:"problems"`
		Jobs       []JobStatus  `json:"jobs,omitempty"`
		KafkaLag   *KafkaLag    `json:"kafka_lag,omitempty"`
		Name       string       `json:"name,omitempty"`
		Sources    []SourceRow  `json:"sources,omitempty"`
		Joins      []JoinPanel  `json:"joins,omitempty"`
		Graph      *GraphStatus `json:"graph,omitempty"`
	}{Graph: r.Graph, Name: r.Name, Sources: r.SourceRows(), Joins: r.Joins, KafkaLag: r.KafkaLag, Jobs: r.Jobs, Generated: rfc(r.Generated), Source: r.Source, Lake: r.Lake, Lag: r.Lag, LagProblem: r.LagProblem,
		Tables: []table{}, Checkpoint: r.Checkpoint, Gold: r.Gold, Batches: []batch{}, Problems: r.Problems}
	if out.Problems == nil {
		out.Problems = []string{}
	}
	for _, ts := range r.Tables {
		row := table{Role: ts.Role, Path: ts.Path, Exists: ts.Exists, Version: ts.Version,
			Files: ts.Files, Bytes: ts.Bytes, LastOperation: ts.LastOperation, LastCommit: rfc(ts.LastCommit), ChangeFeed: ts.ChangeFeed}
		if ts.ChangeFeed && ts.ChangeVersion >= 0 {
			v := ts.ChangeVersion
			row.ChangeVersion = &v
		}
		out.Tables = append(out.Tables, row)
	}
	for _, b := range r.Batches {
		sr := b.StateRows
		if sr == nil {
			sr = []NamedCount{}
		}
		out.Batches = append(out.Batches, batch{BatchID: b.BatchID, Timestamp: rfc(b.Timestamp), NumInputRows: b.NumInputRows,
			InputRowsPerSecond: b.InputRowsPerSecond, ProcessedRowsPerSecond: b.ProcessedRowsPerSecond,
			DurationMs: b.DurationMs, Watermark: rfc(b.Watermark), MaxEventTime: rfc(b.MaxEventTime),
			LateRows: b.LateRows, StateRows: sr, StateBytes: b.StateBytes, Expectations: b.Expectations})
	}
	return json.Marshal(out)
}
