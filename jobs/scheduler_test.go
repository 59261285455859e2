package jobs

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/medallion-lake/medallion/objstore/s3/s3test"
)

// TestTwoSchedulersNeverOverlap runs the same job every second in two schedulers (two serve
// processes, each with its own lease holder) on one MinIO lake: the job never runs twice at once,
// and when the scheduler that has been winning the lease stops, the other one takes the job over.
// Which of the two wins a given tick is a race; the test asserts only what the lease guarantees.
func TestTwoSchedulersNeverOverlap(t *testing.T) {
	lake := s3test.NewTestBucket(t)
	var running, maxRunning, runs atomic.Int32
	var byHolder [2]atomic.Int32
	job := func(holder int) Func {
		return func(ctx context.Context, env Env) (any, error) {
			n := running.Add(1)
			defer running.Add(-1)
			for {
				m := maxRunning.Load()
				if n <= m || maxRunning.CompareAndSwap(m, n) {
					break
				}
			}
			runs.Add(1)
			byHolder[holder].Add(1)
			select {
			case <-time.After(700 * time.Millisecond): // longer than the gap between ticks
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return nil, nil
		}
	}
	env := Env{Config: testPipeline(t, t.TempDir(), ""), Lake: lake, Clock: time.Now}
	env.Logger = discardLogger()
	var scheds []*Scheduler
	for i, holder := range []string{"serve-a", "serve-b"} {
		s, err := NewScheduler(env, NewLeases(lake, holder, 10*time.Second, nil), prometheus.NewRegistry(),
			[]Scheduled{{Name: "merge-late", Schedule: "* * * * * *", Run: job(i)}})
		if err != nil {
			t.Fatal(err)
		}
		scheds = append(scheds, s)
		s.Start()
	}
	stopped := map[int]bool{}
	stop := func(i int) {
		if stopped[i] {
			return
		}
		stopped[i] = true
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := scheds[i].Stop(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Error(err)
		}
	}
	defer func() { stop(0); stop(1) }()
	waitFor := func(what string, done func() bool) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); !done(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: runs %d (a: %d, b: %d)", what, runs.Load(), byHolder[0].Load(), byHolder[1].Load())
			}
		}
	}
	waitFor("the job never ran three times", func() bool { return runs.Load() >= 3 })
	winner := 0
	if byHolder[1].Load() > byHolder[0].Load() {
		winner = 1
	}
	other := 1 - winner
	before := byHolder[other].Load()
	stop(winner)
	waitFor("the other scheduler never took the job over", func() bool { return byHolder[other].Load() >= before+2 })
	stop(other)
	if maxRunning.Load() != 1 {
		t.Fatalf("the job ran %d times at once", maxRunning.Load())
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
