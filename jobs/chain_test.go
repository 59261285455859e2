package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/medallion-lake/medallion/objstore/file"
)

// TestChainedJobs: a job with After runs right after each successful run of the job it names,
// without a schedule of its own, and a chain goes on (a -> b -> c); a failed run starts
// nothing after it.
func TestChainedJobs(t *testing.T) {
	lake, err := file.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	fail := false
	job := func(name string) Func {
		return func(context.Context, Env) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, name)
			if name == "a" && fail {
				return nil, errors.New("a failed")
			}
			return nil, nil
		}
	}
	env := Env{Config: testPipeline(t, t.TempDir(), ""), Lake: lake, Clock: time.Now, Logger: discardLogger()}
	s, err := NewScheduler(env, NewLeases(lake, "serve-a", 10*time.Second, nil), prometheus.NewRegistry(), []Scheduled{
		{Name: "a", Schedule: "@every 1h", Run: job("a")},
		{Name: "b", After: "a", Run: job("b")},
		{Name: "c", After: "b", Run: job("c")},
	})
	if err != nil {
		t.Fatal(err)
	}
	status := func(name string) Status {
		for _, st := range s.Statuses() {
			if st.Name == name {
				return st
			}
		}
		t.Fatalf("no status for %s", name)
		return Status{}
	}
	if st := status("c"); st.After != "b" || st.Schedule != "" {
		t.Fatalf("status of c: %+v", st)
	}
	s.runOnce(Scheduled{Name: "a", Run: job("a")}) // as cron would, but now
	deadline := time.Now().Add(10 * time.Second)
	for status("c").Runs == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("c never ran after a succeeded: ran %v", order)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	if got := len(order); got != 3 || order[0] != "a" || order[1] != "b" || order[2] != "c" {
		t.Fatalf("runs %v, want [a b c]", order)
	}
	fail = true
	mu.Unlock()
	if b, c := status("b"), status("c"); !b.LastStart.After(status("a").LastEnd.Add(-time.Millisecond)) || c.LastStart.Before(b.LastEnd) {
		t.Fatalf("the chain ran out of order: a %+v, b %+v, c %+v", status("a"), b, c)
	}

	s.runOnce(Scheduled{Name: "a", Run: job("a")})
	time.Sleep(200 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(order) != 4 || status("b").Runs != 1 {
		t.Fatalf("after a failed run of a: runs %v, b ran %d times", order, status("b").Runs)
	}
}

// TestRunLogSeconds: a run's log line gives its duration in seconds (it was a count of
// nanoseconds in the JSON log).
func TestRunLogSeconds(t *testing.T) {
	lake, err := file.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var buf syncBuffer
	env := Env{Config: testPipeline(t, t.TempDir(), ""), Lake: lake, Clock: time.Now, Logger: slog.New(slog.NewJSONHandler(&buf, nil))}
	s, err := NewScheduler(env, NewLeases(lake, "serve-a", 10*time.Second, nil), prometheus.NewRegistry(), []Scheduled{
		{Name: "a", Schedule: "@every 1h", Run: func(context.Context, Env) (any, error) { time.Sleep(20 * time.Millisecond); return nil, nil }},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.runOnce(Scheduled{Name: "a", Run: func(context.Context, Env) (any, error) { time.Sleep(20 * time.Millisecond); return nil, nil }})
	for _, line := range strings.Split(buf.String(), "\n") {
		var rec struct {
			Msg     string
			Seconds *float64 `json:"seconds"`
			NS      *int64   `json:"duration"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Msg != "run finished" {
			continue
		}
		if rec.Seconds == nil || *rec.Seconds < 0.02 || *rec.Seconds > 5 || rec.NS != nil {
			t.Fatalf("run finished: %s", line)
		}
		return
	}
	t.Fatalf("no run finished line in %s", buf.String())
}

// syncBuffer is a bytes.Buffer safe for a logger and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
