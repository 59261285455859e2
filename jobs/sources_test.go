package jobs

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/medallion-lake/medallion/internal/testutil"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/table"
)

// severalSources: events (top level, files), clicks (files) and orders (kafka), clicks joined
// to events.
const severalSources = `
landing: {path: landing/events/}
` + testutil.EventsSchema + `stream: {watermark: 10m}
sources:
  - name: clicks
    schema:
      - {name: click_id, type: string}
      - {name: event_id, type: string}
      - {name: click_time, type: timestamp}
    stream: {event_time: click_time, watermark: 1h}
  - name: orders
    landing: {kind: kafka, kafka: {brokers: ["127.0.0.1:1"], topic: orders}}
    schema:
      - {name: order_id, type: string}
      - {name: event_time, type: timestamp}
joins:
  - {name: ec, left: events, right: clicks, type: left_outer, on: [{left: event_id, right: event_id}], time: {lower: 0s, upper: 1h}}
gold:
  - name: events_5m
    window: {type: tumbling, size: 5m}
    aggregates: [{fn: count}]
`

// TestInitSeveralSources: init creates every source's bronze and silver (a Kafka source's bronze
// with the _kafka_* columns, as its ingester requires) and the join's tables, with the columns
// DESIGN.md §8 names.
func TestInitSeveralSources(t *testing.T) {
	ctx := context.Background()
	cfg := testutil.Pipeline(t, "lake: "+t.TempDir()+"\n"+severalSources)
	env, err := NewEnv(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Lake.Close()
	rep, err := Init(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bronze/events", "bronze/rejects", "silver/events", "bronze/clicks", "silver/clicks", "bronze/orders", "silver/orders",
		"silver/ec", "silver/late_ec", "silver/late_events_5m", "gold/events_5m"}
	if !slices.Equal(sorted(rep.Created), sorted(want)) || !slices.Equal(sorted(TablePaths(env)), sorted(want)) {
		t.Fatalf("created %v, paths %v; want %v", rep.Created, TablePaths(env), want)
	}
	columns := func(path string) string {
		snap, err := table.Open(objstore.WithPrefix(env.Lake, path), table.Options{}).Log().Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s, err := snap.Schema()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range s.Fields {
			names = append(names, f.Name)
		}
		return strings.Join(names, " ")
	}
	if got := columns("bronze/orders"); !strings.Contains(got, "_kafka_offset") {
		t.Errorf("kafka bronze columns: %s", got)
	}
	meta := "_rescued_data _ingest_time _source_file _source_offset"
	if got, want := columns("silver/ec"), "event_id event_type amount event_time "+meta+
		" click_id clicks_event_id click_time clicks__rescued_data clicks__ingest_time clicks__source_file clicks__source_offset"; got != want {
		t.Errorf("joined columns\n got %s\nwant %s", got, want)
	}
	if got := columns("silver/late_ec"); !strings.HasSuffix(got, "clicks__source_offset side late_watermark batch_id query_id") {
		t.Errorf("join quarantine columns: %s", got)
	}
}

func TestLandingSourceOf(t *testing.T) {
	cfg := testutil.Pipeline(t, "lake: "+t.TempDir()+"\n"+severalSources)
	for key, want := range map[string]string{
		"landing/events/a.json": "events", "landing/clicks/x/b.json.gz": "clicks", "landing/orders/c.json": "", "elsewhere/d.json": "",
	} {
		got, ok := LandingSourceOf(cfg, key)
		if got != want || ok != (want != "") {
			t.Errorf("LandingSourceOf(%q) = %q, %v; want %q", key, got, ok, want)
		}
	}
}

// TestIngestKeysRoutesBySource: keys of a notification batch reach the bronze of the source
// whose landing prefix holds them.
func TestIngestKeysRoutesBySource(t *testing.T) {
	ctx := context.Background()
	cfg := testutil.Pipeline(t, "lake: "+t.TempDir()+"\n"+severalSources)
	env, err := NewEnv(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Lake.Close()
	put := func(key, body string) {
		if err := objstore.PutBytes(ctx, env.Lake, key, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	put("landing/events/a.json", `{"event_id":"e1","event_time":"2024-05-01T12:00:00Z"}`+"\n"+`{"event_id":"e2","event_time":"2024-05-01T12:00:00Z"}`+"\n")
	put("landing/clicks/b.json", `{"click_id":"c1","event_id":"e1","click_time":"2024-05-01T12:01:00Z"}`+"\n")
	rep, err := IngestKeys(ctx, env, []string{"landing/events/a.json", "landing/clicks/b.json", "other/z.json"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rows != 3 || rep.Files != 2 {
		t.Errorf("report %+v, want 3 rows from 2 files", rep)
	}
	for path, want := range map[string]int64{"bronze/events": 2, "bronze/clicks": 1} {
		var n int64
		for b, err := range table.Open(objstore.WithPrefix(env.Lake, path), table.Options{}).Scan(ctx, table.ScanOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			n += int64(b.Len())
		}
		if n != want {
			t.Errorf("%s has %d rows, want %d", path, n, want)
		}
	}
}

// TestServeRunsEverySource: serve's scheduled ingest and the stream chained after it run both
// sources of a two-source config, and /metrics counts each source's rows on its own tables
// (the oracle: the lines written here).
func TestServeRunsEverySource(t *testing.T) {
	dir := t.TempDir()
	cfg := testutil.Pipeline(t, "lake: "+dir+"\n"+`
landing: {path: landing/events/}
`+testutil.EventsSchema+`stream: {watermark: 10m}
sources:
  - name: clicks
    schema:
      - {name: click_id, type: string}
      - {name: click_time, type: timestamp}
    stream: {event_time: click_time, watermark: 1h}
gold:
  - name: events_5m
    window: {type: tumbling, size: 5m}
    aggregates: [{fn: count}]
jobs: {ingest: {schedule: "@every 1h"}, stream: {after: ingest}}
serve: {listen: "127.0.0.1:0", lease_ttl: 5s, shutdown_timeout: 5s}
`)
	ctx := context.Background()
	env, err := NewEnv(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ev, cl strings.Builder
	for i := range 7 {
		fmt.Fprintf(&ev, `{"event_id":"e%d","event_time":"2024-05-01T12:0%d:00Z"}`+"\n", i, i)
	}
	for i := range 4 {
		fmt.Fprintf(&cl, `{"click_id":"c%d","click_time":"2024-05-01T12:0%d:00Z"}`+"\n", i, i)
	}
	for key, body := range map[string]string{"landing/events/a.json": ev.String(), "landing/clicks/a.json": cl.String()} {
		if err := objstore.PutBytes(ctx, env.Lake, key, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := NewServer(env)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Run(rctx) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var st Status
		for _, s := range srv.Scheduler().Statuses() {
			if s.Name == "stream" {
				st = s
			}
		}
		if st.Runs > 0 {
			if st.LastResult != "ok" {
				t.Fatalf("stream: %+v", st)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ingest -> stream did not finish in 60 s: %+v", srv.Scheduler().Statuses())
		}
	}
	resp, err := http.Get("http://" + srv.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`medallion_table_rows_in_total{table="bronze/events"} 7`, `medallion_table_rows_in_total{table="bronze/clicks"} 4`,
		`medallion_table_rows_in_total{table="silver/events"} 7`, `medallion_table_rows_in_total{table="silver/clicks"} 4`,
		`medallion_table_rows_out_total{table="bronze/clicks"} 4`, `medallion_table_rows_in_total{table="landing"} 11`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestWebhookQueuesEveryFileSource: the webhook queues the keys of every files source's landing
// prefix (a Kafka source has none) and ignores the rest.
func TestWebhookQueuesEveryFileSource(t *testing.T) {
	cfg := testutil.Pipeline(t, "lake: "+t.TempDir()+"\n"+severalSources)
	cfg.Landing.Notify.Mode = "webhook"
	cfg.Serve.Listen = "127.0.0.1:0"
	env, err := NewEnv(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := newNotifier(env, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	body := eventBody("landing/events/a.json", "landing/clicks/b.json", "landing/orders/c.json", "elsewhere/d.json")
	if code := postEvent(n, "", body); code != http.StatusNoContent {
		t.Fatalf("status %d, want 204", code)
	}
	want := map[string]bool{"landing/events/a.json": true, "landing/clicks/b.json": true}
	if !maps.Equal(n.pending, want) {
		t.Fatalf("queued %v, want %v", n.pending, want)
	}
}
