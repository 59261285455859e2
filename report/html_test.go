package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/stream"
)

// writeProgress stores batch n's progress as the stream runner does, through stream.Progress's
// own JSON encoder (the real producer of these files).
func writeProgress(t *testing.T, lake objstore.Bucket, checkpoint string, n int64, at time.Time, rows int64, late map[string]int64) {
	t.Helper()
	metrics := map[string]string{"numSilverRows": strconv.FormatInt(rows, 10)}
	for g, v := range late {
		metrics["gold."+g+"."+stream.CustomMetricLateRowsQuarantined] = strconv.FormatInt(v, 10)
	}
	p := &stream.Progress{
		ID: "q", RunID: "r", Name: "events", Timestamp: at, BatchID: n, NumInputRows: rows,
		InputRowsPerSecond: float64(rows) / 30, ProcessedRowsPerSecond: float64(rows) / 2,
		DurationMs: map[string]int64{"triggerExecution": 2000 + 100*n, "addBatch": 1500},
		EventTime:  stream.EventTimeProgress(gold.EventTimeStats{Count: 1, Min: at.Add(-time.Hour).UnixMilli(), Max: at.Add(-time.Minute).UnixMilli(), Sum: at.Add(-time.Hour).UnixMilli()}, at.Add(-11*time.Minute).UnixMilli(), true),
		StateOperators: []stream.StateOperatorProgress{
			{OperatorName: "dedupe", NumRowsTotal: 1000 * (n + 1)},
			{OperatorName: "stateStoreSave", NumRowsTotal: 40 + n},
			{OperatorName: "stateStoreSave", NumRowsTotal: 4},
		},
		Sink: stream.SinkProgress{Description: "DeltaSink[silver/events]", NumOutputRows: -1, Metrics: metrics},
	}
	data, err := p.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	key := fmt.Sprintf("%s/progress/%d.json", checkpoint, n)
	if err := objstore.PutBytes(context.Background(), lake, key, data); err != nil {
		t.Fatal(err)
	}
}

// checkPage checks that the page is self-contained and that every chart in it is
// well-formed SVG.
func checkPage(t *testing.T, page string) {
	t.Helper()
	for _, bad := range []string{"<script", "<link", "@import", "src=\"http", "href=\"http"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q: it must work offline, without scripts", bad)
		}
	}
	for _, u := range regexp.MustCompile(`https?://[^"' <]+`).FindAllString(page, -1) {
		if u != "http://www.w3.org/2000/svg" {
			t.Errorf("page references %s", u)
		}
	}
	for _, s := range regexp.MustCompile(`(?s)<svg.*?</svg>`).FindAllString(page, -1) {
		parseSVG(t, s)
	}
}

func TestBuildReportFromLake(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	lake := mem.New()

	empty, err := Build(ctx, lake, cfg, ReportOptions{Now: base})
	if err != nil {
		t.Fatal(err)
	}
	if empty.Lag != nil || empty.LagProblem == "" || len(empty.Batches) != 0 {
		t.Errorf("empty lake: %+v", empty)
	}
	for _, ts := range empty.Tables {
		if ts.Exists {
			t.Errorf("empty lake: table %+v exists", ts)
		}
	}
	var page bytes.Buffer
	if err := empty.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	checkPage(t, page.String())
	for _, want := range []string{"No bronze table yet", "No progress yet", "no table yet"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("empty report lacks %q", want)
		}
	}

	groups, _, _ := workload(5, 4000)
	writeBronze(t, lake, cfg.Tables.Bronze, groups)
	t0 := base.Add(72 * time.Hour)
	for n := range int64(6) {
		writeProgress(t, lake, cfg.Stream.Checkpoint, n, t0.Add(time.Duration(n)*30*time.Second), 100*(n+1),
			map[string]int64{"events_5m": n % 3, "events_1h": n / 4})
	}
	// A file that is not progress JSON is left out and reported; foreign objects are ignored.
	if err := objstore.PutBytes(ctx, lake, cfg.Stream.Checkpoint+"/progress/6.json", []byte(`{"batchId": 6, "timestamp": "yesterday"}`)); err != nil {
		t.Fatal(err)
	}
	if err := objstore.PutBytes(ctx, lake, cfg.Stream.Checkpoint+"/progress/.6.json.tmp", []byte(`x`)); err != nil {
		t.Fatal(err)
	}

	rep, err := Build(ctx, lake, cfg, ReportOptions{Now: base, MaxBatches: 5})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Lag == nil || rep.Lag.Rows+rep.Lag.Future+rep.Lag.NullEventTime != 4000 {
		t.Fatalf("lag %+v", rep.Lag)
	}
	bz := rep.Tables[0]
	if bz.Role != "bronze" || !bz.Exists || bz.Version != int64(len(groups)) || bz.Files != len(groups) || bz.Bytes <= 0 || bz.LastOperation == "" || bz.LastCommit.IsZero() {
		t.Errorf("bronze status %+v, want version %d with %d files", bz, len(groups), len(groups))
	}
	if len(rep.Tables) != 3+2*len(cfg.Gold) {
		t.Errorf("%d tables, want bronze, rejects, silver and a quarantine and gold per aggregation", len(rep.Tables))
	}
	// The last five readable batches are 1..5 (6 is broken, and counts towards the limit).
	if len(rep.Batches) != 4 || rep.Batches[0].BatchID != 2 || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "progress/6.json") {
		t.Fatalf("batches %+v, problems %q", rep.Batches, rep.Problems)
	}
	b := rep.Batches[3]
	if b.BatchID != 5 || b.NumInputRows != 600 || b.DurationMs != 2500 || b.LateRows["events_5m"] != 2 || b.LateRows["events_1h"] != 1 ||
		!b.Timestamp.Equal(t0.Add(150*time.Second)) || !b.Watermark.Equal(b.Timestamp.Add(-11*time.Minute)) ||
		len(b.StateRows) != 3 || b.StateRows[0] != (NamedCount{"dedupe", 6000}) || b.InputRowsPerSecond != 20 {
		t.Errorf("batch 5: %+v", b)
	}
	page.Reset()
	if err := rep.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	checkPage(t, page.String())
	s := page.String()
	for _, want := range []string{
		`id="lag-p95">` + FormatLag(rep.Lag.P95) + `<`,
		`id="lag-recommended">` + niceName(rep.Lag.Recommended) + `<`,
		`id="stream-last-batch">5<`,
		`id="stream-input-rows">1,800<`, // 300 + 400 + 500 + 600
		"Left out: report: bad progress file: _checkpoints/events/progress/6.json",
		"Late rows per batch", "Input and processing rate", "Batch duration", "State rows",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// The state chart's legend names each aggregation, not its operator's position.
	state := rep.StateChart()
	var names []string
	for _, sr := range state.Series {
		names = append(names, sr.Name)
	}
	for _, g := range rep.Gold {
		if !slices.Contains(names, g) {
			t.Errorf("state chart series %v lack aggregation %s", names, g)
		}
	}
	if strings.Contains(s, "stateStoreSave") {
		t.Errorf("the page names a state operator instead of its aggregation")
	}
	if n := strings.Count(s, "<svg "); n != 7 {
		t.Errorf("%d charts, want lag, the pipeline graph and 5 progress charts", n)
	}
	// The graph: landing, bronze, silver and both golds, with their tables' versions.
	if rep.Graph == nil || len(rep.Graph.Nodes) != 3+len(cfg.Gold) {
		t.Fatalf("graph %+v", rep.Graph)
	}
	for _, want := range []string{`id="node-landing-events"`, `id="node-bronze-events"`, `id="node-silver-events"`,
		`id="node-gold-events_5m"`, `id="node-gold-events_1h"`, fmt.Sprintf("version %d</text>", len(groups))} {
		if !strings.Contains(s, want) {
			t.Errorf("the graph lacks %q", want)
		}
	}
}

// TestReportHTMLGolden pins the page of a hand-built report byte for byte.
func TestReportHTMLGolden(t *testing.T) {
	at := time.Date(2024, 5, 4, 12, 0, 0, 0, time.UTC)
	lag := &LagReport{Table: "bronze/events", EventTime: "event_time", Rows: 1000, Negative: 3,
		Avg: 40 * time.Second, Min: -2 * time.Second, Max: 3 * time.Hour,
		P50: 20 * time.Second, P90: 70 * time.Second, P95: 100 * time.Second, P99: 9 * time.Minute,
		Current: 10 * time.Minute, Recommended: 5 * time.Minute,
		Histogram: []Bucket{{Lo: 0, Hi: time.Second, Count: 10}, {Lo: time.Second, Hi: time.Minute, Count: 700},
			{Lo: time.Minute, Hi: time.Hour, Count: 280}, {Lo: time.Hour, Hi: 0, Count: 7}},
		Candidates: []Candidate{{Name: "1x p95", Watermark: 100 * time.Second, LateRows: 50, LateFraction: 0.05},
			{Name: "current", Watermark: 10 * time.Minute, LateRows: 8, LateFraction: 0.008, Exact: true}},
		Quarantine: []QuarantineLate{{Gold: "events_5m", Table: "silver/late_events_5m", Exists: true, Rows: 9,
			DayColumn: "_ingest_time", PerDay: []DayCount{{"2024-05-03", 4}, {"2024-05-04", 5}}},
			{Gold: "events_1h", Table: "silver/late_events_1h"}},
	}
	r := &Report{Generated: at, Source: "pipeline.yaml", Lake: "s3://lake", Lag: lag, Checkpoint: "_checkpoints/events",
		Gold: []string{"events_5m", "events_1h"},
		Tables: []TableStatus{{Role: "bronze", Path: "bronze/events", Exists: true, Version: 12, Files: 12, Bytes: 3 << 20,
			LastOperation: "WRITE", LastCommit: at.Add(-time.Minute)}, {Role: "silver", Path: "silver/events"},
			{Role: "gold events_5m", Path: "gold/events_5m", Exists: true, Version: 9, Files: 3, Bytes: 4 << 10,
				LastOperation: "OPTIMIZE", LastCommit: at.Add(-time.Minute), ChangeFeed: true, ChangeVersion: 8}},
	}
	for n := range int64(4) {
		r.Batches = append(r.Batches, BatchProgress{BatchID: n, Timestamp: at.Add(time.Duration(n) * time.Minute),
			NumInputRows: 100, InputRowsPerSecond: 1.5, ProcessedRowsPerSecond: 50, DurationMs: 2000,
			Watermark: at.Add(-10 * time.Minute), MaxEventTime: at, LateRows: map[string]int64{"events_5m": n},
			StateRows: []NamedCount{{"stateStoreSave", 10 * n}}})
	}
	var page bytes.Buffer
	if err := r.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	checkPage(t, page.String())
	golden(t, "report.html", page.Bytes())
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report.json", append(js, '\n'))
	// The JSON carries the page's figures.
	var back struct {
		Lag struct {
			P95 float64 `json:"p95_s"`
		} `json:"lag"`
		Batches []struct {
			LateRows map[string]int64 `json:"late_rows"`
		} `json:"batches"`
		Tables []struct {
			Bytes int64 `json:"bytes"`
		} `json:"tables"`
	}
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if back.Lag.P95 != 100 || len(back.Batches) != 4 || back.Batches[3].LateRows["events_5m"] != 3 || back.Tables[0].Bytes != 3<<20 {
		t.Errorf("report JSON %+v", back)
	}
}

func TestParseProgressErrors(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{`[1]`, "k.json: json"},
		{`{"timestamp": "2024-05-01"}`, `k.json: timestamp "2024-05-01"`},
		{`{"timestamp": "2024-05-01T00:00:00.000Z", "eventTime": {"watermark": "x"}}`, `k.json: eventTime.watermark "x"`},
		{`{"timestamp": "2024-05-01T00:00:00.000Z", "sink": {"metrics": {"gold.a.numLateRowsQuarantined": "many"}}}`, `gold.a.numLateRowsQuarantined = "many"`},
	} {
		_, err := ParseProgress("k.json", []byte(tc.data))
		if !errors.Is(err, ErrBadProgress) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrBadProgress naming %q", tc.data, err, tc.want)
		}
	}
}

func FuzzParseProgress(f *testing.F) {
	f.Add([]byte(`{"id":"q","runId":"r","name":"events","timestamp":"2024-05-01T00:00:30.000Z","batchId":3,"numInputRows":10,"inputRowsPerSecond":0.5,"processedRowsPerSecond":20.0,"durationMs":{"triggerExecution":500},"eventTime":{"max":"2024-05-01T00:00:00.000Z","watermark":"2024-04-30T23:50:00.000Z"},"stateOperators":[{"operatorName":"stateStoreSave","numRowsTotal":4}],"sources":[],"sink":{"description":"x","numOutputRows":-1,"metrics":{"gold.g.numLateRowsQuarantined":"2"}}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"timestamp":"2024-05-01T00:00:00Z","sink":{"metrics":{"gold..numLateRowsQuarantined":"-1"}}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		bp, err := ParseProgress("f.json", data)
		if err != nil {
			if !errors.Is(err, ErrBadProgress) {
				t.Fatalf("error %v is not ErrBadProgress", err)
			}
			return
		}
		if bp.LateRows == nil || bp.Timestamp.Location() != time.UTC {
			t.Fatalf("parsed %+v", bp)
		}
	})
}

// TestStateFootprint: memoryUsedBytes of each state operator is read from progress and shown
// beside its rows on the page (and in the JSON), named as the state chart names them.
func TestStateFootprint(t *testing.T) {
	data := []byte(`{"timestamp":"2024-05-01T00:00:30.000Z","batchId":3,"numInputRows":10,` +
		`"stateOperators":[{"operatorName":"dedupe","numRowsTotal":1000,"memoryUsedBytes":48000},` +
		`{"operatorName":"stateStoreSave","numRowsTotal":200,"memoryUsedBytes":12800},` +
		`{"operatorName":"stateStoreSave","numRowsTotal":0,"memoryUsedBytes":0}]}`)
	b, err := ParseProgress("progress/3.json", data)
	if err != nil {
		t.Fatal(err)
	}
	want := []NamedCount{{"dedupe", 48000}, {"stateStoreSave", 12800}, {"stateStoreSave", 0}}
	if !slices.Equal(b.StateBytes, want) {
		t.Fatalf("StateBytes %v, want %v", b.StateBytes, want)
	}
	r := &Report{Source: "p.yaml", Gold: []string{"events_5m", "events_1h"}, Batches: []BatchProgress{b}}
	fp := r.StateFootprints()
	wantFP := []StateFootprint{{"dedup", 1000, 48000}, {"events_5m", 200, 12800}, {"events_1h", 0, 0}}
	if !slices.Equal(fp, wantFP) {
		t.Fatalf("StateFootprints %+v, want %+v", fp, wantFP)
	}
	if fp[0].BytesPerRow() != 48 || fp[1].BytesPerRow() != 64 || fp[2].BytesPerRow() != 0 {
		t.Errorf("bytes per row %d %d %d, want 48 64 0", fp[0].BytesPerRow(), fp[1].BytesPerRow(), fp[2].BytesPerRow())
	}
	var page bytes.Buffer
	if err := r.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	checkPage(t, page.String())
	for _, s := range []string{`id="state-footprint"`, `<td>events_5m</td><td class="num">200</td><td class="num">12.5 KiB</td><td class="num">64</td>`} {
		if !strings.Contains(page.String(), s) {
			t.Errorf("page lacks %q", s)
		}
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"state_bytes":[{"name":"dedupe","count":48000}`) {
		t.Errorf("JSON lacks the state bytes: %s", js)
	}
	// Progress without bytes (older files, all zero): no table of zeros.
	r.Batches[0].StateBytes = []NamedCount{{"dedupe", 0}, {"stateStoreSave", 0}, {"stateStoreSave", 0}}
	if fp := r.StateFootprints(); fp != nil {
		t.Errorf("StateFootprints without bytes = %+v, want none", fp)
	}
}

// TestLateHourChartCountsOnce: 150 rows late for both aggregations (each quarantine holds
// them) show as 150 in the hourly chart, not a stack of 300, and the x-axis reaches the hour
// the rows arrived in (it ended half an hour before).
func TestLateHourChartCountsOnce(t *testing.T) {
	at := time.Date(2026, 12, 4, 20, 45, 0, 0, time.UTC)
	r := &Report{Gold: []string{"events_5m", "events_1h"}, Batches: []BatchProgress{
		{BatchID: 7, Timestamp: at, LateRows: map[string]int64{"events_5m": 150, "events_1h": 150}},
	}}
	for _, c := range []*TimeChart{r.LateHourChart(), r.LateBatchChart()} {
		elems := parseSVG(t, c.SVG())
		topTick, lastX := 0.0, ""
		var bars []svgElem
		var titles []string // each bar's tooltip: "<aggregation> <time>: <count>"
		for _, e := range elems {
			switch {
			case e.name == "text" && e.attrs["class"] == "ytick":
				v, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(e.text), ",", ""), 64)
				if err == nil {
					topTick = max(topTick, v)
				}
			case e.name == "text" && e.attrs["class"] == "xtick":
				lastX = strings.TrimSpace(e.text)
			case e.name == "rect" && e.attrs["class"] == "bar":
				bars = append(bars, e)
			case e.name == "title" && strings.HasPrefix(e.text, "events_"):
				titles = append(titles, e.text)
			}
		}
		if topTick < 150 || topTick >= 300 {
			t.Errorf("%s: the y-axis reaches %v for 150 late rows (a stack counts them twice)", c.Title, topTick)
		}
		if len(bars) != 2 {
			t.Fatalf("%s: %d bars, want one per aggregation", c.Title, len(bars))
		}
		if len(titles) != 2 || !strings.HasSuffix(titles[0], ": 150") || !strings.HasSuffix(titles[1], ": 150") {
			t.Errorf("%s: bars %q, want 150 each", c.Title, titles)
		}
		// Side by side: the two bars do not overlap, and both start at the axis.
		x0, _ := strconv.ParseFloat(bars[0].attrs["x"], 64)
		w0, _ := strconv.ParseFloat(bars[0].attrs["width"], 64)
		x1, _ := strconv.ParseFloat(bars[1].attrs["x"], 64)
		if x1 < x0+w0-0.01 || bars[0].attrs["y"] != bars[1].attrs["y"] {
			t.Errorf("%s: bars %v and %v are stacked or overlap", c.Title, bars[0].attrs, bars[1].attrs)
		}
		if c.Interval > 0 && lastX < "20:45" {
			t.Errorf("%s: the x-axis ends at %s, before the rows arrived at 20:45", c.Title, lastX)
		}
	}
}
