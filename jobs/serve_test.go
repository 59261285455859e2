package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/internal/testutil"
	"github.com/medallion-lake/medallion/objstore"
)

func testPipeline(t *testing.T, lake string, extra string) *config.Pipeline {
	t.Helper()
	yaml := fmt.Sprintf(`
lake: %s
landing: {path: landing/events/}
`+testutil.EventsSchema+`stream: {watermark: 10m, dedup: [event_id]}
gold:
  - name: events_5m
    window: {type: tumbling, size: 5m}
    group_by: [event_type]
    aggregates: [{fn: count, as: count}]
serve: {listen: "127.0.0.1:0", lease_ttl: 5s, shutdown_timeout: 5s}
%s`, lake, extra)
	return testutil.Pipeline(t, yaml)
}

func TestServeRunsScheduledJobs(t *testing.T) {
	dir := t.TempDir()
	cfg := testPipeline(t, dir, `jobs: {ingest: {schedule: "* * * * * *"}, checkpoint: {schedule: "@every 1s"}}`)
	env, err := NewEnv(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	line := `{"event_id":"e1","event_type":"a","amount":1,"event_time":"2024-05-01T12:00:00Z"}` + "\n"
	if err := objstore.PutBytes(context.Background(), env.Lake, "landing/events/a.json", []byte(strings.Repeat(line, 10))); err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(env)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	base := "http://" + srv.Addr()

	// Wait until ingest has run successfully, as /healthz reports it.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var health struct {
			Status string   `json:"status"`
			Jobs   []Status `json:"jobs"`
		}
		getJSON(t, base+"/healthz", &health)
		ok := false
		for _, j := range health.Jobs {
			if j.Name == "ingest" && j.Runs > 0 && j.LastResult == "ok" {
				ok = true
			}
		}
		if health.Status == "ok" && ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ingest never ran: %+v", health)
		}
		time.Sleep(100 * time.Millisecond)
	}
	metrics := get(t, base+"/metrics")
	for _, series := range []string{
		`medallion_job_runs_total{job="ingest",result="ok"}`,
		`medallion_job_duration_seconds_count{job="ingest"}`,
		`objstore_bucket_operations_total{bucket="lake"`,
		`go_goroutines`,
	} {
		if !strings.Contains(metrics, series) {
			t.Errorf("/metrics lacks %s", series)
		}
	}
	began := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop within 10 s")
	}
	t.Logf("stopped in %v", time.Since(began))
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %s", url, resp.Status)
	}
	return string(body)
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(get(t, url)), v); err != nil {
		t.Fatal(err)
	}
}
