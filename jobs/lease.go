package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/medallion-lake/medallion/objstore"
)

// ErrLeaseHeld reports that another holder has a live lease on the job.
var ErrLeaseHeld = errors.New("jobs: lease held by another process")

// ErrLeaseLost reports that a holder could not renew in time and another took the lease over.
var ErrLeaseLost = errors.New("jobs: lease lost")

// A lease is a chain of generations under _leases/<job>/: generation G is the object
// %020d.json holding {holder, expires, released}. The newest generation is the lease. Taking,
// renewing and releasing a lease each create the next generation with put-if-absent, so exactly
// one process wins every step, on any bucket with conditional writes, and no object is ever
// overwritten. A holder that crashed simply stops renewing; its generation expires.
type leaseRecord struct {
	Holder   string `json:"holder"`
	Expires  int64  `json:"expiresMs"`
	Released bool   `json:"released,omitempty"`
}

// Leases grants job leases to one holder (a serve process).
type Leases struct {
	bucket objstore.Bucket
	holder string
	ttl    time.Duration
	now    func() time.Time
}

// NewLeases returns a lease manager for holder (unique per process) with a lease TTL.
func NewLeases(lake objstore.Bucket, holder string, ttl time.Duration, now func() time.Time) *Leases {
	if now == nil {
		now = time.Now
	}
	return &Leases{bucket: objstore.WithPrefix(lake, "_leases"), holder: holder, ttl: ttl, now: now}
}

// Lease is a held lease. Context() is cancelled when the lease is lost or released.
type Lease struct {
	l   *Leases
	job string
	mu  sync.Mutex
	gen int64
	// heldUntil is when the newest generation this holder surely wrote expires.
	heldUntil time.Time
	ctx       context.Context
	cancel    context.CancelCauseFunc
	stopped   chan struct{}
}

func genKey(job string, gen int64) string { return path.Join(job, fmt.Sprintf("%020d.json", gen)) }

// current returns the newest generation of a job's lease (-1 when there is none) and every
// generation stored, oldest first.
func (l *Leases) current(ctx context.Context, job string) (int64, leaseRecord, []int64, error) {
	infos, err := objstore.ListAll(ctx, l.bucket, job+"/", objstore.ListOptions{})
	if err != nil {
		return 0, leaseRecord{}, nil, fmt.Errorf("jobs: list lease %s: %w", job, err)
	}
	var gens []int64
	for _, info := range infos {
		var gen int64
		if _, err := fmt.Sscanf(strings.TrimPrefix(info.Key, job+"/"), "%020d.json", &gen); err == nil && genKey(job, gen) == info.Key {
			gens = append(gens, gen)
		}
	}
	if len(gens) == 0 {
		return -1, leaseRecord{}, nil, nil
	}
	gen := gens[len(gens)-1]
	rec, err := l.read(ctx, job, gen)
	if errors.Is(err, objstore.ErrNotFound) {
		// Deleted since the listing: only cleanup deletes, and only old generations.
		return gen, leaseRecord{}, gens, nil
	}
	return gen, rec, gens, err
}

// read reads one generation. A torn or foreign object cannot hold the lease: it reads as an
// expired record.
func (l *Leases) read(ctx context.Context, job string, gen int64) (leaseRecord, error) {
	data, err := objstore.ReadAll(ctx, l.bucket, genKey(job, gen))
	if err != nil {
		return leaseRecord{}, fmt.Errorf("jobs: read lease %s: %w", genKey(job, gen), err)
	}
	var rec leaseRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return leaseRecord{}, nil
	}
	return rec, nil
}

func (l *Leases) put(ctx context.Context, job string, gen int64, rec leaseRecord) error {
	data, _ := json.Marshal(rec)
	return objstore.PutBytesIfAbsent(ctx, l.bucket, genKey(job, gen), data)
}

// Holder reports who holds a job's lease now ("" when free), for status pages.
func (l *Leases) Holder(ctx context.Context, job string) (string, error) {
	_, rec, _, err := l.current(ctx, job)
	if err != nil || rec.Released || l.now().UnixMilli() >= rec.Expires {
		return "", err
	}
	return rec.Holder, nil
}

// Acquire takes the job's lease or returns ErrLeaseHeld. The lease renews itself every TTL/3
// until Release. If renewals keep failing, for any reason, the lease's context is cancelled
// with ErrLeaseLost a sixth of the TTL before the last renewal that landed expires, so the job
// stops at a safe point while the lease is still its own; if another holder took it over, at
// the first renewal that finds out.
func (l *Leases) Acquire(ctx context.Context, job string) (*Lease, error) {
	gen, rec, gens, err := l.current(ctx, job)
	if err != nil {
		return nil, err
	}
	if gen >= 0 && !rec.Released && l.now().UnixMilli() < rec.Expires && rec.Holder != "" {
		return nil, fmt.Errorf("%w: %s held by %s until %s", ErrLeaseHeld, job, rec.Holder, time.UnixMilli(rec.Expires).UTC().Format(time.RFC3339))
	}
	next := gen + 1
	expires := l.now().Add(l.ttl)
	err = l.put(ctx, job, next, leaseRecord{Holder: l.holder, Expires: expires.UnixMilli()})
	if errors.Is(err, objstore.ErrAlreadyExists) {
		return nil, fmt.Errorf("%w: %s was taken at the same moment", ErrLeaseHeld, job)
	}
	if err != nil {
		return nil, fmt.Errorf("jobs: take lease %s: %w", job, err)
	}
	lctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	lease := &Lease{l: l, job: job, gen: next, heldUntil: expires, ctx: lctx, cancel: cancel, stopped: make(chan struct{})}
	go lease.renewLoop()
	for _, g := range gens {
		l.cleanup(ctx, job, g, next)
	}
	return lease, nil
}

// keepGenerations is how many generations behind the newest are kept. Only older ones are
// deleted: a holder reads the newest and writes the one after, so a deleted generation must be
// far behind anything a live holder could still try to create (and a holder whose lease expired
// stops before writing at all).
const keepGenerations = 10

// cleanup deletes generation gen if it is well behind newest: it decides nothing any more.
// Best effort: a failed delete is retried by the next Acquire, which sees every generation.
func (l *Leases) cleanup(ctx context.Context, job string, gen, newest int64) {
	if gen <= newest-keepGenerations {
		_ = l.bucket.Delete(ctx, genKey(job, gen))
	}
}

// Context is cancelled when the lease is lost or released.
func (le *Lease) Context() context.Context { return le.ctx }

func (le *Lease) renewLoop() {
	defer close(le.stopped)
	every := le.l.ttl / 3
	margin := le.l.ttl / 6
	wait := every
	var lastErr error
	for {
		timer := time.NewTimer(wait)
		select {
		case <-le.ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		le.mu.Lock()
		left := le.heldUntil.Add(-margin).Sub(le.l.now())
		if left <= 0 {
			le.mu.Unlock()
			le.cancel(fmt.Errorf("%w: %s could not be renewed before it expires (last error: %v); stopping while it is still ours", ErrLeaseLost, le.job, lastErr))
			return
		}
		next := le.gen + 1
		expires := le.l.now().Add(le.l.ttl)
		// A renewal that hangs must not outlive the lease.
		rctx, cancel := context.WithTimeout(le.ctx, left)
		err := le.l.put(rctx, le.job, next, leaseRecord{Holder: le.l.holder, Expires: expires.UnixMilli()})
		if errors.Is(err, objstore.ErrAlreadyExists) {
			// Either another holder took over, or an earlier attempt whose answer was lost
			// did land: the generation says which.
			if rec, rerr := le.l.read(rctx, le.job, next); rerr == nil && rec.Holder == le.l.holder && !rec.Released {
				err, expires = nil, time.UnixMilli(rec.Expires)
			} else if rerr == nil {
				cancel()
				le.mu.Unlock()
				le.cancel(fmt.Errorf("%w: %s was taken over by %s", ErrLeaseLost, le.job, rec.Holder))
				return
			} else {
				err = rerr
			}
		}
		if err == nil {
			le.gen, le.heldUntil = next, expires
			le.l.cleanup(rctx, le.job, next-keepGenerations, next)
			wait, lastErr = every, nil
		} else {
			// Try again soon: the lease still has most of its TTL, and the check above stops
			// the job in time if the store stays unreachable.
			wait, lastErr = max(every/4, time.Millisecond), err
		}
		cancel()
		le.mu.Unlock()
	}
}

// Release gives the lease up so another process may take it at once.
func (le *Lease) Release(ctx context.Context) error {
	le.cancel(nil)
	<-le.stopped
	le.mu.Lock()
	defer le.mu.Unlock()
	err := le.l.put(ctx, le.job, le.gen+1, leaseRecord{Holder: le.l.holder, Released: true})
	if errors.Is(err, objstore.ErrAlreadyExists) {
		return nil // someone took it over already
	}
	if err != nil {
		return fmt.Errorf("jobs: release lease %s: %w", le.job, err)
	}
	le.gen++
	return nil
}
