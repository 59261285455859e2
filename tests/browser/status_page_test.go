// Package browser tests serve's status page in a real browser: Debian's Chromium, headless,
// driven with chromedp over the DevTools protocol. scripts/browser.sh installs Chromium.
package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/gen"
	"github.com/medallion-lake/medallion/jobs"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/report"
)

// chromium finds the browser; without one the test fails under CI (a missing install step) and
// skips elsewhere.
func chromium(t *testing.T) string {
	for _, name := range []string{os.Getenv("MEDALLION_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" || os.Getenv("MEDALLION_REQUIRE_BROWSER") == "1" {
		t.Fatal("no Chromium found: run scripts/browser.sh install (make test does)")
	}
	t.Skip("no Chromium; run scripts/browser.sh install")
	return ""
}

// lakeWithLateData builds a file lake where the stream has run over many micro-batches and
// quarantined late rows: two hours of events ending now, with outage bursts an hour late.
func lakeWithLateData(t *testing.T) jobs.Env {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	yaml := fmt.Sprintf(`
lake: %s
landing: {path: landing/events/, max_files_per_trigger: 1}
schema:
  - {name: event_id, type: string, required: true}
  - {name: event_type, type: string}
  - {name: amount, type: double}
  - {name: event_time, type: timestamp, required: true}
  - {name: device_id, type: string}
stream: {watermark: 10m, dedup: [event_id], max_files_per_trigger: 1}
gold:
  - name: events_5m
    window: {type: tumbling, size: 5m}
    group_by: [event_type]
    aggregates: [{fn: count, as: count}]
jobs: {optimize: {schedule: "@every 1h"}}
serve: {listen: "127.0.0.1:0"}
`, dir)
	cfg, err := config.Parse([]byte(yaml), filepath.Join(dir, "pipeline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	env, err := jobs.NewEnv(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := gen.DefaultOptions()
	o.Lines, o.Files, o.Seed = 30000, 6, 7
	o.Rate = 30000.0 / 7200
	o.OutageRate = 0.0003
	o.Start = time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)
	if _, err := gen.Generate(ctx, env.Lake, o); err != nil {
		t.Fatal(err)
	}
	if _, err := jobs.Ingest(ctx, env); err != nil {
		t.Fatal(err)
	}
	rep, err := jobs.Stream(ctx, env, config.Trigger{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Batches < 3 || rep.Gold[0].LateRows == 0 {
		t.Fatalf("the workload must give several batches and late rows: %+v", rep)
	}
	return env
}

// lastProgress reads the stream's progress log directly: the oracle for the page's stream figures.
func lastProgress(t *testing.T, env jobs.Env) (lastBatch int64, inputRows int64) {
	t.Helper()
	ctx := context.Background()
	infos, err := objstore.ListAll(ctx, env.Lake, env.Config.Stream.Checkpoint+"/progress/", objstore.ListOptions{})
	if err != nil || len(infos) == 0 {
		t.Fatalf("no progress files: %v", err)
	}
	lastBatch = -1
	for _, info := range infos {
		data, err := objstore.ReadAll(ctx, env.Lake, info.Key)
		if err != nil {
			t.Fatal(err)
		}
		var p struct {
			BatchID      int64 `json:"batchId"`
			NumInputRows int64 `json:"numInputRows"`
		}
		if err := json.Unmarshal(data, &p); err != nil {
			t.Fatalf("%s: %v", info.Key, err)
		}
		lastBatch = max(lastBatch, p.BatchID)
		inputRows += p.NumInputRows
	}
	return lastBatch, inputRows
}

func TestStatusPageInBrowser(t *testing.T) {
	browser := chromium(t)
	env := lakeWithLateData(t)
	srv, err := jobs.NewServer(env)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() { cancel(); <-done }()
	base := "http://" + srv.Addr()

	// The figures behind the page.
	resp, err := http.Get(base + "/api/status")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var api struct {
		Lag struct {
			Rows int64   `json:"rows"`
			P50  float64 `json:"p50_s"`
			P95  float64 `json:"p95_s"`
			P99  float64 `json:"p99_s"`
		} `json:"lag"`
		Batches []struct {
			BatchID      int64 `json:"batch_id"`
			NumInputRows int64 `json:"num_input_rows"`
		} `json:"batches"`
		Jobs []struct {
			Name string `json:"name"`
		} `json:"jobs"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &api) != nil {
		t.Fatalf("/api/status: %s %s", resp.Status, body)
	}
	lastBatch, inputRows := lastProgress(t, env)
	if n := len(api.Batches); n == 0 || api.Batches[n-1].BatchID != lastBatch {
		t.Fatalf("/api/status batches end at %+v, the progress log at batch %d", api.Batches, lastBatch)
	}
	var apiInput int64
	for _, b := range api.Batches {
		apiInput += b.NumInputRows
	}
	if apiInput != inputRows || api.Lag.Rows == 0 || len(api.Jobs) != 1 {
		t.Fatalf("/api/status: input rows %d (progress log %d), lag rows %d, jobs %+v", apiInput, inputRows, api.Lag.Rows, api.Jobs)
	}

	// The page, in Chromium.
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(1280, 900),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	bctx, tcancel := context.WithTimeout(bctx, 90*time.Second)
	defer tcancel()

	// Console messages from the first moment of the page: errors and uncaught exceptions fail.
	cctx, stopConsole := context.WithCancel(bctx)
	messages := chromedp.Console(cctx)
	var consoleErrors []string
	consoleDone := make(chan struct{})
	go func() {
		defer close(consoleDone)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == "error" || m.IsException() {
				consoleErrors = append(consoleErrors, m.String())
			}
		}
	}()
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible("#lag-p95")); err != nil {
		t.Fatalf("chromium: load the page: %v", err)
	}
	page, err := chromedp.Run(bctx, chromedp.Evaluate[map[string]any](`(() => {
		const text = sel => (document.querySelector(sel) || {textContent: "missing " + sel}).textContent;
		const svgs = [...document.querySelectorAll(".chart svg")];
		return {
			rows: text("#lag-rows"), p50: text("#lag-p50"), p95: text("#lag-p95"), p99: text("#lag-p99"),
			batch: text("#stream-last-batch"), input: text("#stream-input-rows"),
			job: text("#jobs tr[id^=job-] td"),
			charts: svgs.length,
			drawn: svgs.filter(s => s.querySelectorAll("path,rect,line,polyline,circle").length > 3).length,
			// Legends drawn past the chart's right edge are cut off by the browser.
			cut: svgs.flatMap(s => [...s.querySelectorAll(".legend text")].filter(t => {
				const b = t.getBBox(); return b.x + b.width > s.viewBox.baseVal.width + 0.5 || b.y + b.height > s.viewBox.baseVal.height + 0.5;
			}).map(t => t.textContent)),
			// The pipeline graph: a box per node, each line of text inside its box.
			graphNodes: document.querySelectorAll("#graph g.node").length,
			graphCut: [...document.querySelectorAll("#graph g.node")].flatMap(g => {
				const r = g.querySelector("rect").getBBox();
				return [...g.querySelectorAll("text")].filter(t => t.getBBox().x + t.getBBox().width > r.x + r.width).map(t => t.textContent);
			}),
			operators: svgs.flatMap(s => [...s.querySelectorAll(".legend text")].map(t => t.textContent)).filter(n => n.startsWith("stateStoreSave")),
			// The first point of the input rate: a run's first batch has none to show (not 0).
			firstInput: ([...document.querySelectorAll("circle title")].map(t => t.textContent).find(t => t.startsWith("input rows/s")) || ""),
			// Marker labels of the lag histogram (p50, p95, p99, watermarks) must not overlap.
			overlaps: svgs.flatMap(s => {
				const boxes = [...s.querySelectorAll(".marker-label")].map(t => [t.textContent, t.getBBox()]);
				const out = [];
				for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
					const [a, p] = boxes[i], [b, q] = boxes[j];
					if (p.x < q.x + q.width && q.x < p.x + p.width && p.y < q.y + q.height && q.y < p.y + p.height) out.push(a + "/" + b);
				}
				return out;
			}),
		};
	})()`))
	if err != nil {
		t.Fatalf("chromium: read the page: %v", err)
	}
	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("chromium: screenshot: %v", err)
	}
	saveArtifact(t, "status-page.png", shot)
	stopConsole()
	<-consoleDone
	str := func(k string) string { return fmt.Sprint(page[k]) }
	rows, p50, p95, p99, batchText, inputText, jobName := str("rows"), str("p50"), str("p95"), str("p99"), str("batch"), str("input"), str("job")
	charts, _ := page["charts"].(float64)
	chartShapes, _ := page["drawn"].(float64)

	num := func(s string) int64 {
		n, err := strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(s), ",", ""), 10, 64)
		if err != nil {
			t.Fatalf("page figure %q is not a number", s)
		}
		return n
	}
	secs := func(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }
	checks := []struct{ what, page, want string }{
		{"lag rows", fmt.Sprint(num(rows)), fmt.Sprint(api.Lag.Rows)},
		{"p50", p50, report.FormatLag(secs(api.Lag.P50))},
		{"p95", p95, report.FormatLag(secs(api.Lag.P95))},
		{"p99", p99, report.FormatLag(secs(api.Lag.P99))},
		{"last batch", fmt.Sprint(num(batchText)), fmt.Sprint(lastBatch)},
		{"input rows", fmt.Sprint(num(inputText)), fmt.Sprint(inputRows)},
		{"job", strings.TrimSpace(jobName), "optimize"},
	}
	for _, c := range checks {
		if strings.TrimSpace(c.page) != c.want {
			t.Errorf("%s: the page shows %q, /api/status and the progress log say %q", c.what, c.page, c.want)
		}
	}
	if charts < 6 || chartShapes < 6 {
		t.Errorf("%v charts on the page, %v of them with drawn shapes; want the lag histogram and 5 stream charts", charts, chartShapes)
	}
	if n, _ := page["graphNodes"].(float64); n < 4 {
		t.Errorf("the pipeline graph has %v nodes, want landing, bronze, silver and the gold", n)
	}
	if cut, _ := page["graphCut"].([]any); len(cut) > 0 {
		t.Errorf("graph node text runs out of its box: %v", cut)
	}
	if cut, _ := page["cut"].([]any); len(cut) > 0 {
		t.Errorf("legend entries cut at the chart's edge: %v", cut)
	}
	if ops, _ := page["operators"].([]any); len(ops) > 0 {
		t.Errorf("legends name state operators, not aggregations: %v", ops)
	}
	if first := str("firstInput"); first == "" || strings.HasSuffix(first, ": 0") {
		t.Errorf("the input rate chart starts with %q: the first batch of a run has no rate to show", first)
	}
	if ov, _ := page["overlaps"].([]any); len(ov) > 0 {
		t.Errorf("marker labels overlap: %v", ov)
	}
	if len(consoleErrors) > 0 {
		t.Errorf("console errors: %v", consoleErrors)
	}
}

// saveArtifact keeps a file for people to look at: under $MEDALLION_ARTIFACTS, or test-artifacts/
// at the repository root.
func saveArtifact(t *testing.T, name string, data []byte) {
	dir := os.Getenv("MEDALLION_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "test-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(data))
}
