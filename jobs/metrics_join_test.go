package jobs

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/medallion-lake/medallion/internal/testutil"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/table"
)

// TestJoinMetrics runs serve over two sources and a left outer join (ingest, then the chain
// stream -> merge-late) and reads /metrics: each side's input rows equal the rows written to
// its landing, the late rows per side equal the join quarantine's rows of that side (read from
// the table), every quarantined row is counted merged, the emitted rows add up to what the
// stream appended, and the gauges (state rows and bytes per side, each source's watermark, which
// must be its max event time minus its delay) are there.
func TestJoinMetrics(t *testing.T) {
	dir := t.TempDir()
	cfg := testutil.Pipeline(t, fmt.Sprintf(`
lake: %s
landing: {path: landing/events/, max_files_per_trigger: 1}
schema:
  - {name: event_id, type: string, required: true}
  - {name: device_id, type: string}
  - {name: event_time, type: timestamp, required: true}
stream: {name: events, watermark: 5m, dedup: [event_id], max_files_per_trigger: 1}
sources:
  - name: clicks
    landing: {path: landing/clicks/, max_files_per_trigger: 1}
    schema:
      - {name: click_id, type: string, required: true}
      - {name: device_id, type: string}
      - {name: click_time, type: timestamp, required: true}
    stream: {event_time: click_time, watermark: 4m, dedup: [click_id], max_files_per_trigger: 1}
joins:
  - name: ec
    left: events
    right: clicks
    type: left_outer
    on: [{left: device_id, right: device_id}]
    time: {left: event_time, right: click_time, lower: 0s, upper: 2m}
gold:
  - name: ec_5m
    source: ec
    time_column: event_time
    window: {type: tumbling, size: 5m}
    aggregates: [{fn: count}]
jobs: {ingest: {schedule: "@every 1h"}, stream: {after: ingest}, merge_late: {after: stream}}
serve: {listen: "127.0.0.1:0", lease_ttl: 5s, shutdown_timeout: 5s}
`, dir))
	env, err := NewEnv(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Four objects a source, one micro-batch each; the last carries rows far behind the
	// watermark on both sides.
	base := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	ts := func(d time.Duration) string { return base.Add(d).Format(time.RFC3339) }
	events, clicks := 0, 0
	var maxEvent, maxClick time.Duration
	for f := 0; f < 4; f++ {
		var ev, ck strings.Builder
		for i := 10 * f; i < 10*f+10; i++ {
			at := time.Duration(i) * time.Minute
			fmt.Fprintf(&ev, `{"event_id":"e%d","device_id":"d%d","event_time":%q}`+"\n", i, i%5, ts(at))
			events, maxEvent = events+1, at
			if i%2 == 0 {
				fmt.Fprintf(&ck, `{"click_id":"c%d","device_id":"d%d","click_time":%q}`+"\n", i, i%5, ts(at+30*time.Second))
				clicks, maxClick = clicks+1, at+30*time.Second
			}
		}
		if f == 3 {
			for i := 0; i < 3; i++ {
				fmt.Fprintf(&ev, `{"event_id":"late-e%d","device_id":"d%d","event_time":%q}`+"\n", i, i, ts(time.Duration(i)*time.Minute))
				fmt.Fprintf(&ck, `{"click_id":"late-c%d","device_id":"d%d","click_time":%q}`+"\n", i, i, ts(time.Duration(i)*time.Minute+20*time.Second))
				events, clicks = events+1, clicks+1
			}
		}
		for key, body := range map[string]string{fmt.Sprintf("landing/events/%d.json", f): ev.String(), fmt.Sprintf("landing/clicks/%d.json", f): ck.String()} {
			if err := env.Lake.Put(context.Background(), key, strings.NewReader(body), int64(len(body))); err != nil {
				t.Fatal(err)
			}
		}
	}

	srv, err := NewServer(env)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var merged Status
		for _, s := range srv.Scheduler().Statuses() {
			if s.Name == "merge-late" {
				merged = s
			}
		}
		if merged.Runs > 0 {
			if merged.LastResult != "ok" {
				t.Fatalf("merge-late: %+v", merged)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the chain ingest -> stream -> merge-late did not finish in 60 s: %+v", srv.Scheduler().Statuses())
		}
	}
	resp, err := http.Get("http://" + srv.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	must := func(name string, labels ...string) float64 {
		t.Helper()
	next:
		for _, m := range families[name].GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					found = found || lp.GetName() == labels[i] && lp.GetValue() == labels[i+1]
				}
				if !found {
					continue next
				}
			}
			if m.Counter != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
		t.Fatalf("/metrics has no %s%v", name, labels)
		return 0
	}

	if l, r := must("medallion_join_input_rows_total", "join", "ec", "side", "left"), must("medallion_join_input_rows_total", "join", "ec", "side", "right"); l != float64(events) || r != float64(clicks) {
		t.Errorf("join input rows: left %v, right %v; landing has %d events, %d clicks", l, r, events, clicks)
	}
	// The oracle for the late rows: the quarantine table's rows of each side.
	sides := map[string]float64{}
	for b, err := range table.Open(objstore.WithPrefix(env.Lake, "silver/late_ec/"), table.Options{}).Scan(context.Background(), table.ScanOptions{Columns: []string{"side"}}) {
		if err != nil {
			t.Fatal(err)
		}
		col := b.Column("side")
		for i := 0; i < b.Len(); i++ {
			sides[col.StringAt(i)]++
		}
	}
	for _, side := range []string{"left", "right"} {
		if got := must("medallion_join_late_rows_quarantined_total", "join", "ec", "side", side); got != sides[side] || got == 0 {
			t.Errorf("late %s rows: /metrics %v, quarantine table %v (want > 0)", side, got, sides[side])
		}
	}
	if merged := must("medallion_join_late_rows_merged_total", "join", "ec"); merged != sides["left"]+sides["right"] {
		t.Errorf("late rows merged %v, quarantined %v", merged, sides["left"]+sides["right"])
	}
	matched, ul, ur := must("medallion_join_matched_rows_total", "join", "ec"),
		must("medallion_join_unmatched_rows_total", "join", "ec", "side", "left"), must("medallion_join_unmatched_rows_total", "join", "ec", "side", "right")
	if out := must("medallion_table_rows_in_total", "table", "silver/ec"); matched == 0 || ul == 0 || ur != 0 || matched+ul != out {
		t.Errorf("emitted: %v matched + %v left unmatched + %v right unmatched; the joined table got %v", matched, ul, ur, out)
	}
	for _, side := range []string{"left", "right"} {
		rows, bytes := must("medallion_join_state_rows", "join", "ec", "side", side), must("medallion_join_state_bytes", "join", "ec", "side", side)
		if rows <= 0 || bytes <= rows {
			t.Errorf("%s state: %v rows, %v bytes", side, rows, bytes)
		}
	}
	for src, want := range map[string]time.Time{"events": base.Add(maxEvent - 5*time.Minute), "clicks": base.Add(maxClick - 4*time.Minute)} {
		if got := must("medallion_join_source_watermark_timestamp_seconds", "join", "ec", "source", src); got != float64(want.UnixMilli())/1000 {
			t.Errorf("%s watermark %v, want %v (max event time - delay)", src, time.UnixMilli(int64(got*1000)).UTC(), want)
		}
	}
}
