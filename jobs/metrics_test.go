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

	"github.com/medallion-lake/medallion/gen"
	"github.com/medallion-lake/medallion/internal/testutil"
)

// TestPipelineMetrics runs serve on a generated workload (ingest at start, then the chain
// stream -> merge-late) and reads /metrics as Prometheus would: the row counters add up to what
// gen wrote (its own count is the oracle), late rows quarantined equal late rows merged, and the
// lake figures (table versions and freshness, watermark and its delay, lag p95, state rows) are
// there.
func TestPipelineMetrics(t *testing.T) {
	dir := t.TempDir()
	cfg := testutil.Pipeline(t, fmt.Sprintf(`
lake: %s
landing: {path: landing/events/, max_files_per_trigger: 1}
`+testutil.EventsSchema+`stream: {watermark: 1m, dedup: [event_id], max_files_per_trigger: 1}
gold:
  - name: events_5m
    window: {type: tumbling, size: 5m}
    group_by: [event_type]
    aggregates: [{fn: count, as: count}]
jobs: {ingest: {schedule: "@every 1h"}, stream: {after: ingest}, merge_late: {after: stream}}
serve: {listen: "127.0.0.1:0", lease_ttl: 5s, shutdown_timeout: 5s}
`, dir))
	env, err := NewEnv(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := gen.DefaultOptions()
	o.Lines, o.Files, o.Seed, o.OutageRate, o.FutureFraction = 20000, 6, 3, 0.002, 0
	o.Start = time.Now().UTC().Add(-time.Duration(float64(o.Lines) / o.Rate * float64(time.Second)))
	st, err := gen.Generate(context.Background(), env.Lake, o)
	if err != nil {
		t.Fatal(err)
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
	value := func(name string, labels ...string) (float64, bool) {
		mf := families[name]
		if mf == nil {
			return 0, false
		}
	next:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					found = found || lp.GetName() == labels[i] && lp.GetValue() == labels[i+1]
				}
				if !found {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue(), true
			case m.Gauge != nil:
				return m.GetGauge().GetValue(), true
			}
		}
		return 0, false
	}
	must := func(name string, labels ...string) float64 {
		t.Helper()
		v, ok := value(name, labels...)
		if !ok {
			t.Fatalf("/metrics has no %s%v", name, labels)
		}
		return v
	}
	landing := must("medallion_table_rows_in_total", "table", "landing")
	bronzeIn, rejectsIn := must("medallion_table_rows_in_total", "table", "bronze/events"), must("medallion_table_rows_in_total", "table", "bronze/rejects")
	ingestRejects := 0.0
	for _, m := range families["medallion_rejects_total"].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "stage" && lp.GetValue() == "ingest" {
				ingestRejects += m.GetCounter().GetValue()
			}
		}
	}
	validation := must("medallion_rejects_total", "stage", "stream", "reason", "validation")
	if landing != float64(st.Lines) || bronzeIn+ingestRejects != landing || rejectsIn != ingestRejects+validation {
		t.Errorf("landing %v (gen wrote %d), bronze %v + ingest rejects %v, rejects table %v (validation %v)",
			landing, st.Lines, bronzeIn, ingestRejects, rejectsIn, validation)
	}
	if out := must("medallion_table_rows_out_total", "table", "bronze/events"); out != bronzeIn {
		t.Errorf("the stream read %v bronze rows; ingest wrote %v", out, bronzeIn)
	}
	silver, dups := must("medallion_table_rows_in_total", "table", "silver/events"), must("medallion_duplicates_dropped_total")
	if silver+dups+validation != bronzeIn {
		t.Errorf("silver %v + duplicates %v + validation rejects %v != bronze %v", silver, dups, validation, bronzeIn)
	}
	q, m := must("medallion_late_rows_quarantined_total", "gold", "events_5m"), must("medallion_late_rows_merged_total", "gold", "events_5m")
	if q == 0 || m != q || must("medallion_table_rows_out_total", "table", "silver/late_events_5m") != q {
		t.Errorf("late rows: %v quarantined, %v merged", q, m)
	}
	// Gold is created with its change data feed on: merge-late's commit wrote change rows.
	if c := must("medallion_change_rows_written_total", "table", "gold/events_5m"); c <= 0 {
		t.Errorf("merge-late merged %v late rows and wrote %v change rows", m, c)
	}
	for _, table := range TablePaths(env) {
		if v := must("medallion_table_version", "table", table); v < 0 {
			t.Errorf("%s version %v", table, v)
		}
		if age := must("medallion_table_last_commit_age_seconds", "table", table); age < 0 || age > 120 {
			t.Errorf("%s last commit %v s ago", table, age)
		}
	}
	wm, delay := must("medallion_watermark_timestamp_seconds"), must("medallion_watermark_delay_seconds")
	if wm <= 0 || delay <= 0 || delay > 3*3600 {
		t.Errorf("watermark %v, delay %v s", wm, delay)
	}
	if p95 := must("medallion_lag_p95_seconds"); p95 <= 0 {
		t.Errorf("lag p95 %v", p95)
	}
	if _, ok := families["medallion_state_rows"]; !ok {
		t.Error("/metrics has no medallion_state_rows")
	}
	// The state's footprint, beside its rows: the dedup index and an aggregation hold memory.
	for _, op := range []string{"dedup", "events_5m"} {
		if b := must("medallion_state_memory_bytes", "operator", op); b <= 0 {
			t.Errorf("medallion_state_memory_bytes{operator=%q} = %v, want the state's bytes", op, b)
		}
	}
	t.Logf("landing %v, bronze %v, silver %v, late %v quarantined and merged", landing, bronzeIn, silver, q)
}
