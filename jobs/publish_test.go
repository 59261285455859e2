package jobs

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/medallion-lake/medallion/objstore/file"
)

// TestPublishScheduling: with sinks, serve's publish job runs after every job that changes
// tables (stream, merge-late, replay) unless jobs.publish says otherwise; without, there is no
// publish job. A job chained after several runs after each of them.
func TestPublishScheduling(t *testing.T) {
	sinks := "sinks: [{name: s, table: gold/events_5m, topic: t}]\n"
	cases := []struct {
		extra, schedule, after string
		scheduled              bool
	}{
		{"", "", "", false},
		{sinks, "", "stream,merge-late,replay", true},
		{sinks + `jobs: {publish: {schedule: "@every 5m"}}`, "@every 5m", "", true},
		{sinks + `jobs: {publish: {after: merge_late}}`, "", "merge-late", true},
	}
	for _, tc := range cases {
		env := Env{Config: testPipeline(t, t.TempDir(), tc.extra)}
		i := slices.IndexFunc(Catalog(env), func(j Scheduled) bool { return j.Name == "publish" })
		if (i >= 0) != tc.scheduled {
			t.Fatalf("%q: publish scheduled %v, want %v", tc.extra, i >= 0, tc.scheduled)
		}
		if i >= 0 {
			j := Catalog(env)[i]
			if j.Schedule != tc.schedule || j.After != tc.after || j.Run == nil {
				t.Errorf("%q: publish %+v, want schedule %q after %q", tc.extra, j, tc.schedule, tc.after)
			}
		}
	}

	lake, err := file.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	job := func(name string) Func {
		return func(context.Context, Env) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, name)
			return nil, nil
		}
	}
	env := Env{Config: testPipeline(t, t.TempDir(), ""), Lake: lake, Clock: time.Now, Logger: discardLogger()}
	s, err := NewScheduler(env, NewLeases(lake, "serve-a", 10*time.Second, nil), prometheus.NewRegistry(), []Scheduled{
		{Name: "a", Schedule: "@every 1h", Run: job("a")},
		{Name: "c", Schedule: "@every 1h", Run: job("c")},
		{Name: "p", After: "a,c", Run: job("p")},
	})
	if err != nil {
		t.Fatal(err)
	}
	runs := func() int64 {
		for _, st := range s.Statuses() {
			if st.Name == "p" {
				return st.Runs
			}
		}
		return 0
	}
	for i, first := range []string{"a", "c"} {
		s.runOnce(Scheduled{Name: first, Run: job(first)})
		deadline := time.Now().Add(30 * time.Second)
		for runs() != int64(i+1) {
			if time.Now().After(deadline) {
				t.Fatalf("p did not run after %s: ran %v", first, order)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(order, " "); got != "a p c p" {
		t.Errorf("runs %q, want a p c p", got)
	}
}
