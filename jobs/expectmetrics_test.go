package jobs

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
)

// TestServeExpectationMetrics: the scheduled stream reports each expectation's rows by
// outcome on /metrics and on the status page.
func TestServeExpectationMetrics(t *testing.T) {
	dir := t.TempDir()
	cfg := testPipeline(t, dir, `jobs: {ingest: {schedule: "@every 1s"}, stream: {schedule: "@every 1s"}}
expectations:
  - {name: non_negative, expect: "amount >= 0", on_violation: drop}
  - {name: is_a, expect: "event_type = 'a'", on_violation: warn}
`)
	env, err := NewEnv(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var lines strings.Builder
	for i := range 10 {
		typ := "a"
		if i%4 == 0 {
			typ = "b"
		}
		// amounts -3..6: three negative; types b at 0, 4, 8: three not "a"
		fmt.Fprintf(&lines, `{"event_id":"e%d","event_type":%q,"amount":%d,"event_time":"2024-05-01T12:00:00Z"}`+"\n", i, typ, i-3)
	}
	if err := objstore.PutBytes(context.Background(), env.Lake, "landing/events/a.json", []byte(lines.String())); err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(env)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	want := []string{
		`medallion_expectation_rows_total{expectation="non_negative",outcome="dropped",source="events"} 3`,
		`medallion_expectation_rows_total{expectation="non_negative",outcome="failed",source="events"} 3`,
		`medallion_expectation_rows_total{expectation="non_negative",outcome="passed",source="events"} 7`,
		`medallion_expectation_rows_total{expectation="is_a",outcome="failed",source="events"} 3`,
		`medallion_expectation_rows_total{expectation="is_a",outcome="passed",source="events"} 7`,
		`medallion_expectation_rows_total{expectation="is_a",outcome="dropped",source="events"} 0`,
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		metrics := get(t, "http://"+srv.Addr()+"/metrics")
		missing := ""
		for _, w := range want {
			if !strings.Contains(metrics, w+"\n") {
				missing = w
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics never showed %s:\n%s", missing, grepLines(metrics, "medallion_expectation"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The status page shows the same counts, once its cached view of the lake (built at most
	// a few seconds ago, possibly by the scrapes above, before the stream ran) is rebuilt.
	for page := ""; ; time.Sleep(200 * time.Millisecond) {
		page = get(t, "http://"+srv.Addr()+"/")
		missing := ""
		for _, w := range []string{`<section id="expectations">`, `<tr id="expectation-non_negative"><td>non_negative</td><td>drop</td><td class="num">7</td><td class="num problem">3</td><td class="num">3</td>`} {
			if !strings.Contains(page, w) {
				missing = w
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status page lacks %s", missing)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
