package jobs

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/objstore/s3/s3test"
)

func TestLeaseExclusive(t *testing.T) {
	ctx := context.Background()
	lake := mem.New()
	a := NewLeases(lake, "a", time.Minute, nil)
	b := NewLeases(lake, "b", time.Minute, nil)
	la, err := a.Acquire(ctx, "ingest")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx, "ingest"); !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("second holder got %v, want ErrLeaseHeld", err)
	}
	if _, err := b.Acquire(ctx, "stream"); err != nil {
		t.Fatalf("another job's lease must be free: %v", err)
	}
	if h, _ := b.Holder(ctx, "ingest"); h != "a" {
		t.Fatalf("holder %q, want a", h)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if la.Context().Err() == nil {
		t.Fatal("a released lease's context must be done")
	}
	if _, err := b.Acquire(ctx, "ingest"); err != nil {
		t.Fatalf("after release: %v", err)
	}
}

// A holder that stops renewing (crashed) loses the lease once it expires; if it wakes up, its
// next renewal finds the lease taken and its context is cancelled with ErrLeaseLost.
func TestLeaseExpiryAndTakeover(t *testing.T) {
	ctx := context.Background()
	lake := mem.New()
	var nowMs atomic.Int64
	nowMs.Store(1_000_000)
	clock := func() time.Time { return time.UnixMilli(nowMs.Load()) }
	ttl := 1500 * time.Millisecond // renewals every 500 ms of real time: b acquires long before a renews
	a := NewLeases(lake, "a", ttl, clock)
	b := NewLeases(lake, "b", ttl, clock)
	la, err := a.Acquire(ctx, "merge-late")
	if err != nil {
		t.Fatal(err)
	}
	// Renewals happen on real time; advance the lease clock far past the TTL so b sees the
	// lease as expired no matter what a renewed.
	nowMs.Add(10 * ttl.Milliseconds())
	lb, err := b.Acquire(ctx, "merge-late")
	if err != nil {
		t.Fatalf("expired lease not taken over: %v", err)
	}
	select {
	case <-la.Context().Done():
		if cause := context.Cause(la.Context()); !errors.Is(cause, ErrLeaseLost) {
			t.Fatalf("cause %v, want ErrLeaseLost", cause)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the old holder was not told it lost the lease")
	}
	if lb.Context().Err() != nil {
		t.Fatal("the new holder must keep its lease")
	}
	_ = lb.Release(ctx)
}

// Many processes race for one lease: exactly one wins each round, in memory and on MinIO.
func TestLeaseRace(t *testing.T) {
	t.Run("mem", func(t *testing.T) { leaseRace(t, mem.New()) })
	t.Run("s3", func(t *testing.T) { leaseRace(t, s3test.NewTestBucket(t)) })
}

func leaseRace(t *testing.T, lake objstore.Bucket) {
	ctx := context.Background()
	for round := 0; round < 10; round++ {
		var wg sync.WaitGroup
		var winners atomic.Int32
		var won *Lease
		var mu sync.Mutex
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, err := NewLeases(lake, string(rune('a'+i)), time.Minute, nil).Acquire(ctx, "vacuum")
				if err == nil {
					winners.Add(1)
					mu.Lock()
					won = l
					mu.Unlock()
				} else if !errors.Is(err, ErrLeaseHeld) {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if winners.Load() != 1 {
			t.Fatalf("round %d: %d winners", round, winners.Load())
		}
		if err := won.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
