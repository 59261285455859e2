package jobs

import (
	"context"
	"errors"
	"io"
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

// flakyLeases is a lake whose lease writes can be made to fail (like an unreachable store),
// hang until their context ends, or land and then report a failure (a lost answer).
type flakyLeases struct {
	objstore.Bucket
	mode atomic.Int32 // 0 normal, 1 fail, 2 hang, 3 land then fail (once)
}

const (
	leaseOK = iota
	leaseFail
	leaseHang
	leaseLostAnswer
)

func (f *flakyLeases) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) error {
	switch f.mode.Load() {
	case leaseFail:
		return errors.New("connect: connection refused")
	case leaseHang:
		<-ctx.Done()
		return ctx.Err()
	case leaseLostAnswer:
		f.mode.Store(leaseOK)
		if err := f.Bucket.PutIfAbsent(ctx, key, r, size); err != nil {
			return err
		}
		return errors.New("read: connection reset by peer")
	}
	return f.Bucket.PutIfAbsent(ctx, key, r, size)
}

// TestLeaseStopsBeforeExpiryWhenRenewalsFail: a holder whose renewals keep failing, whether
// refused at once or hanging, has its context cancelled with ErrLeaseLost before its lease
// expires, so its job stops while no one else can hold the lease. Before, only a renewal that
// found the lease taken (412) stopped it, and a holder cut off from the store ran on past its
// expiry, beside the process that took the lease over.
func TestLeaseStopsBeforeExpiryWhenRenewalsFail(t *testing.T) {
	for name, mode := range map[string]int32{"refused": leaseFail, "hanging": leaseHang} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			lake := &flakyLeases{Bucket: mem.New()}
			// The holder stops ttl/6 before expiry; 6 s leaves a second for a loaded machine
			// (race detector, every package at once) to schedule the renewal goroutine.
			ttl := 6 * time.Second
			l, err := NewLeases(lake, "a", ttl, nil).Acquire(context.Background(), "stream")
			if err != nil {
				t.Fatal(err)
			}
			expires := time.Now().Add(ttl) // no later than the expiry Acquire wrote
			lake.mode.Store(mode)
			var stoppedAt atomic.Int64
			context.AfterFunc(l.Context(), func() { stoppedAt.Store(time.Now().UnixNano()) })
			select {
			case <-l.Context().Done():
			case <-time.After(3 * ttl):
				t.Fatal("the lease context was never cancelled while every renewal failed")
			}
			if cause := context.Cause(l.Context()); !errors.Is(cause, ErrLeaseLost) {
				t.Fatalf("cause %v, want ErrLeaseLost", cause)
			}
			for stoppedAt.Load() == 0 {
				time.Sleep(time.Millisecond)
			}
			if at := time.Unix(0, stoppedAt.Load()); !at.Before(expires) {
				t.Fatalf("stopped %v after the lease expired", at.Sub(expires))
			}
		})
	}
}

// TestLeaseRenewalWithLostAnswer: a renewal that landed but whose answer was lost is recognised
// as the holder's own on the next attempt; the lease is kept.
func TestLeaseRenewalWithLostAnswer(t *testing.T) {
	lake := &flakyLeases{Bucket: mem.New()}
	ttl := 1200 * time.Millisecond // a loaded machine may delay a renewal by a few hundred ms
	l, err := NewLeases(lake, "a", ttl, nil).Acquire(context.Background(), "optimize")
	if err != nil {
		t.Fatal(err)
	}
	lake.mode.Store(leaseLostAnswer)
	time.Sleep(3 * ttl) // several renewals, the first of them with its answer lost
	if l.Context().Err() != nil {
		t.Fatalf("lease lost after a renewal whose answer was lost: %v", context.Cause(l.Context()))
	}
	if lake.mode.Load() != leaseOK {
		t.Fatal("no renewal was attempted")
	}
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestLeaseOldGenerationsCleanedUp: neither many short runs nor one long run leaves more than a
// few lease generations behind. Before, Acquire deleted a window of ten generations only, and
// a long run's renewals were never deleted.
func TestLeaseOldGenerationsCleanedUp(t *testing.T) {
	ctx := context.Background()
	lake := mem.New()
	count := func() int {
		infos, err := objstore.ListAll(ctx, lake, "_leases/ingest/", objstore.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(infos)
	}
	leases := NewLeases(lake, "a", time.Minute, nil)
	for i := 0; i < 60; i++ {
		l, err := leases.Acquire(ctx, "ingest")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(); n > keepGenerations+2 {
		t.Fatalf("%d generations left after 60 runs, want at most %d", n, keepGenerations+2)
	}
	// One long run: renewals every 200 ms (a third of the TTL, on real timers). The lease's
	// clock runs at a tenth of real time, so it expires only when the renewing goroutine has
	// not run for 5 s: a loaded machine (CI at load 40 and more) delays it by hundreds of
	// milliseconds, which lost the lease on the real clock.
	start := time.Now()
	slow := func() time.Time { return start.Add(time.Since(start) / 10) }
	l, err := NewLeases(lake, "a", 600*time.Millisecond, slow).Acquire(ctx, "ingest")
	if err != nil {
		t.Fatal(err)
	}
	gen := func() int64 { l.mu.Lock(); defer l.mu.Unlock(); return l.gen }
	for gen0 := gen(); gen() < gen0+2*keepGenerations+2; {
		if l.Context().Err() != nil {
			t.Fatalf("lease lost: %v", context.Cause(l.Context()))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := count(); n > keepGenerations+2 {
		t.Fatalf("%d generations left during a long run, want at most %d", n, keepGenerations+2)
	}
	_ = l.Release(ctx)
}
