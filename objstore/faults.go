package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// ErrInjected is the default error of an injected fault. It is not a sentinel a backend ever
// returns: a caller sees it as an unexplained failure whose outcome is unknown.
var ErrInjected = errors.New("objstore: injected fault")

// Fault describes one rule of a FaultPlan. A call matches when its operation and key match;
// the rule then fires on the Nth matching call, or at random with probability Rate.
type Fault struct {
	// Op is the operation (OpGet, OpPut, ...); empty matches every operation.
	Op string
	// KeyPrefix restricts the rule to keys (List: prefixes) starting with it.
	KeyPrefix string
	// Nth fires on the Nth matching call only (1-based). Zero means use Rate.
	Nth int
	// Rate fires on this fraction of matching calls, drawn from the plan's seeded generator.
	Rate float64
	// Delay sleeps this long (or until the context ends) before the call.
	Delay time.Duration
	// Err is returned when the rule fires. If both Err and Delay are zero, ErrInjected is
	// returned; a Delay alone only slows the call down.
	Err error
	// After runs the real operation first and then returns the error: the write (or delete)
	// happened but the caller cannot know, like a timeout after S3 stored the object.
	After bool
}

// FaultPlan is the set of rules a fault-injecting bucket applies; the first rule that fires
// decides the call.
type FaultPlan struct {
	// Seed makes Rate-based rules reproducible for a given sequence of calls.
	Seed   uint64
	Faults []Fault
}

// FaultBucket injects the faults of a plan into the calls of a wrapped bucket.
type FaultBucket struct {
	b     Bucket
	plan  FaultPlan
	mu    sync.Mutex
	rng   *rand.Rand
	seen  []int // matching calls per rule
	fired int
}

// WithFaults wraps b with the fault plan, for reliability tests of the code above storage.
func WithFaults(b Bucket, plan FaultPlan) *FaultBucket {
	return &FaultBucket{
		b:    b,
		plan: plan,
		rng:  rand.New(rand.NewPCG(plan.Seed, plan.Seed^0x5851f42d4c957f2d)),
		seen: make([]int, len(plan.Faults)),
	}
}

// Fired reports how many faults were injected so far; a test loop that fails call i = 1, 2, ...
// stops when a run completes with nothing fired.
func (f *FaultBucket) Fired() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fired
}

// pick returns the rule that fires for this call, if any.
func (f *FaultBucket) pick(op, key string) (Fault, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// Every matching rule counts the call, so each rule's Nth means the same call whatever
	// the other rules do.
	var chosen Fault
	found := false
	for i, r := range f.plan.Faults {
		if (r.Op != "" && r.Op != op) || !strings.HasPrefix(key, r.KeyPrefix) {
			continue
		}
		f.seen[i]++
		fire := false
		if r.Nth > 0 {
			fire = f.seen[i] == r.Nth
		} else if r.Rate > 0 {
			fire = f.rng.Float64() < r.Rate
		}
		if fire && !found {
			chosen, found = r, true
			f.fired++
		}
	}
	return chosen, found
}

// before applies the delay and returns the error to report, or nil to go on normally.
func (f *FaultBucket) before(ctx context.Context, op, key string) (Fault, error) {
	r, ok := f.pick(op, key)
	if !ok {
		return Fault{}, nil
	}
	if r.Delay > 0 {
		t := time.NewTimer(r.Delay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-t.C:
		}
	}
	switch {
	case r.Err != nil:
		return r, fmt.Errorf("objstore: %s %s: %w", op, key, r.Err)
	case r.Delay == 0:
		return r, fmt.Errorf("objstore: %s %s: %w", op, key, ErrInjected)
	}
	return r, nil
}

// call runs do under the rule for (op, key).
func (f *FaultBucket) call(ctx context.Context, op, key string, do func() error) error {
	r, err := f.before(ctx, op, key)
	if err == nil {
		return do()
	}
	if r.After && ctx.Err() == nil {
		_ = do() // its outcome is what the caller must not learn
	}
	return err
}

// Get implements Bucket.
func (f *FaultBucket) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	var rc io.ReadCloser
	err := f.call(ctx, OpGet, key, func() (err error) { rc, err = f.b.Get(ctx, key); return err })
	if err != nil && rc != nil {
		rc.Close()
		rc = nil
	}
	return rc, err
}

// GetRange implements Bucket.
func (f *FaultBucket) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	var rc io.ReadCloser
	err := f.call(ctx, OpGetRange, key, func() (err error) { rc, err = f.b.GetRange(ctx, key, offset, length); return err })
	if err != nil && rc != nil {
		rc.Close()
		rc = nil
	}
	return rc, err
}

// Put implements Bucket.
func (f *FaultBucket) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	return f.call(ctx, OpPut, key, func() error { return f.b.Put(ctx, key, r, size) })
}

// PutIfAbsent implements Bucket.
func (f *FaultBucket) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) error {
	return f.call(ctx, OpPutIfAbsent, key, func() error { return f.b.PutIfAbsent(ctx, key, r, size) })
}

// Delete implements Bucket.
func (f *FaultBucket) Delete(ctx context.Context, key string) error {
	return f.call(ctx, OpDelete, key, func() error { return f.b.Delete(ctx, key) })
}

// Stat implements Bucket.
func (f *FaultBucket) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	var info ObjectInfo
	err := f.call(ctx, OpStat, key, func() (err error) { info, err = f.b.Stat(ctx, key); return err })
	if err != nil {
		return ObjectInfo{}, err
	}
	return info, nil
}

// List implements Bucket. A fault with After yields the whole listing and then the error, like
// a connection lost on the last page.
func (f *FaultBucket) List(ctx context.Context, prefix string, opts ListOptions) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		r, err := f.before(ctx, OpList, prefix)
		if err != nil && !r.After {
			yield(ObjectInfo{}, err)
			return
		}
		for info, lerr := range f.b.List(ctx, prefix, opts) {
			if !yield(info, lerr) || lerr != nil {
				return
			}
		}
		if err != nil {
			yield(ObjectInfo{}, err)
		}
	}
}

// Close closes the wrapped bucket; no fault is injected into it.
func (f *FaultBucket) Close() error { return f.b.Close() }
