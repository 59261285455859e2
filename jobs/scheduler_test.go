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
// processes, each with its own lease holder) on one MinIO lake, for a few seconds: the job never
// runs twice at once, and both schedulers get to run it.
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
	time.Sleep(6 * time.Second)
	for _, s := range scheds {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := s.Stop(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Error(err)
		}
		cancel()
	}
	if maxRunning.Load() != 1 {
		t.Fatalf("the job ran %d times at once", maxRunning.Load())
	}
	if runs.Load() < 3 || byHolder[0].Load() == 0 || byHolder[1].Load() == 0 {
		t.Fatalf("runs %d (a: %d, b: %d): both schedulers should have run the job", runs.Load(), byHolder[0].Load(), byHolder[1].Load())
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
