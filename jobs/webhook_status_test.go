package jobs

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
)

// TestWebhookIngestCountsAsRun: serve ingests once at start (what landed while it was down is
// not left for the reconcile listing an hour away), and an ingest triggered by a notification is
// an ingest run in /healthz, /api/status and the job metrics, as a scheduled one is (it was
// invisible: the status said the ingest had never run while bronze filled up). A file lake takes
// event keys as lake-relative, so no MinIO is needed.
func TestWebhookIngestCountsAsRun(t *testing.T) {
	dir := t.TempDir()
	cfg := testPipeline(t, dir, `jobs: {}`)
	cfg.Landing.Notify.Mode = "webhook"
	cfg.Landing.Notify.Reconcile.Duration = time.Hour
	env, err := NewEnv(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	line := `{"event_id":"e1","event_type":"a","amount":1,"event_time":"2024-05-01T12:00:00Z"}` + "\n"
	if err := objstore.PutBytes(context.Background(), env.Lake, "landing/events/a.json", []byte(strings.Repeat(line, 4))); err != nil {
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
	base := "http://" + srv.Addr()
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	// The ingest serve runs at start lists the prefix once: a.json landed while it was down.
	ingest := waitIngestRuns(t, get, 1)
	if sum, _ := json.Marshal(ingest.LastSummary); ingest.LastResult != "ok" || !strings.Contains(string(sum), `"rows":4`) {
		t.Fatalf("the ingest at start: %+v, summary %s", ingest, sum)
	}
	if err := objstore.PutBytes(context.Background(), env.Lake, "landing/events/b.json", []byte(strings.Repeat(line, 3))); err != nil {
		t.Fatal(err)
	}
	event := `{"Records":[{"eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":"lake"},"object":{"key":"landing/events/b.json","size":1}}}]}`
	resp, err := http.Post(base+cfg.Landing.Notify.Path, "application/json", strings.NewReader(event))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("webhook answered %s", resp.Status)
	}
	ingest = waitIngestRuns(t, get, 2)
	if sum, _ := json.Marshal(ingest.LastSummary); ingest.LastResult != "ok" || !strings.Contains(string(sum), `"rows":3`) {
		t.Fatalf("/healthz ingest after the notification: %+v, summary %s", ingest, sum)
	}
	metrics := get("/metrics")
	for _, want := range []string{`medallion_job_runs_total{job="ingest",result="ok"} 2`, `medallion_job_last_success_timestamp_seconds{job="ingest"}`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	var api struct {
		Jobs []struct {
			Name string `json:"name"`
			Runs int64  `json:"runs"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(get("/api/status")), &api); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, j := range api.Jobs {
		if j.Name == "ingest" {
			found = j.Runs == 2
		}
	}
	if !found {
		t.Errorf("/api/status jobs: %+v, want ingest with 2 runs", api.Jobs)
	}
}

// waitIngestRuns polls /healthz until the ingest job has n runs, and returns its status.
func waitIngestRuns(t *testing.T, get func(string) string, n int64) Status {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; {
		var health struct{ Jobs []Status }
		if err := json.Unmarshal([]byte(get("/healthz")), &health); err != nil {
			t.Fatal(err)
		}
		for _, st := range health.Jobs {
			if st.Name == "ingest" && st.Runs >= n {
				if st.Runs > n {
					t.Fatalf("ingest ran %d times, want %d", st.Runs, n)
				}
				return st
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz shows fewer than %d ingest runs after 15 s: %+v", n, health.Jobs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
