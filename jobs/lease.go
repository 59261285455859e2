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
	l       *Leases
	job     string
	mu      sync.Mutex
	gen     int64
	ctx     context.Context
	cancel  context.CancelCauseFunc
	stopped chan struct{}
}

func genKey(job string, gen int64) string { return path.Join(job, fmt.Sprintf("%020d.json", gen)) }

// current returns the newest generation of a job's lease (-1 when there is none).
func (l *Leases) current(ctx context.Context, job string) (int64, leaseRecord, error) {
	infos, err := objstore.ListAll(ctx, l.bucket, job+"/", objstore.ListOptions{})
	if err != nil {
		return 0, leaseRecord{}, fmt.Errorf("jobs: list lease %s: %w", job, err)
	}
	for i := len(infos) - 1; i >= 0; i-- {
		var gen int64
		if _, err := fmt.Sscanf(strings.TrimPrefix(infos[i].Key, job+"/"), "%020d.json", &gen); err != nil {
			continue
		}
		data, err := objstore.ReadAll(ctx, l.bucket, infos[i].Key)
		if err != nil {
			return 0, leaseRecord{}, fmt.Errorf("jobs: read lease %s: %w", infos[i].Key, err)
		}
		var rec leaseRecord
		if err := json.Unmarshal(data, &rec); err != nil {
			// A torn or foreign object cannot hold the lease; treat it as expired.
			return gen, leaseRecord{}, nil
		}
		return gen, rec, nil
	}
	return -1, leaseRecord{}, nil
}

func (l *Leases) put(ctx context.Context, job string, gen int64, rec leaseRecord) error {
	data, _ := json.Marshal(rec)
	return objstore.PutBytesIfAbsent(ctx, l.bucket, genKey(job, gen), data)
}

// Holder reports who holds a job's lease now ("" when free), for status pages.
func (l *Leases) Holder(ctx context.Context, job string) (string, error) {
	_, rec, err := l.current(ctx, job)
	if err != nil || rec.Released || l.now().UnixMilli() >= rec.Expires {
		return "", err
	}
	return rec.Holder, nil
}

// Acquire takes the job's lease or returns ErrLeaseHeld. The lease renews itself every TTL/3
// until Release; if a renewal fails to land in time, the lease's context is cancelled with
// ErrLeaseLost so the job can stop at a safe point.
func (l *Leases) Acquire(ctx context.Context, job string) (*Lease, error) {
	gen, rec, err := l.current(ctx, job)
	if err != nil {
		return nil, err
	}
	if gen >= 0 && !rec.Released && l.now().UnixMilli() < rec.Expires && rec.Holder != "" {
		return nil, fmt.Errorf("%w: %s held by %s until %s", ErrLeaseHeld, job, rec.Holder, time.UnixMilli(rec.Expires).UTC().Format(time.RFC3339))
	}
	next := gen + 1
	err = l.put(ctx, job, next, leaseRecord{Holder: l.holder, Expires: l.now().Add(l.ttl).UnixMilli()})
	if errors.Is(err, objstore.ErrAlreadyExists) {
		return nil, fmt.Errorf("%w: %s was taken at the same moment", ErrLeaseHeld, job)
	}
	if err != nil {
		return nil, fmt.Errorf("jobs: take lease %s: %w", job, err)
	}
	lctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	lease := &Lease{l: l, job: job, gen: next, ctx: lctx, cancel: cancel, stopped: make(chan struct{})}
	go lease.renewLoop()
	l.cleanup(ctx, job, next)
	return lease, nil
}

// cleanup deletes generations well behind the current one; they decide nothing any more.
func (l *Leases) cleanup(ctx context.Context, job string, gen int64) {
	for g := gen - 10; g >= 0 && g > gen-20; g-- {
		_ = l.bucket.Delete(ctx, genKey(job, g))
	}
}

// Context is cancelled when the lease is lost or released.
func (le *Lease) Context() context.Context { return le.ctx }

func (le *Lease) renewLoop() {
	defer close(le.stopped)
	ticker := time.NewTicker(le.l.ttl / 3)
	defer ticker.Stop()
	for {
		select {
		case <-le.ctx.Done():
			return
		case <-ticker.C:
		}
		le.mu.Lock()
		next := le.gen + 1
		err := le.l.put(le.ctx, le.job, next, leaseRecord{Holder: le.l.holder, Expires: le.l.now().Add(le.l.ttl).UnixMilli()})
		if err == nil {
			le.gen = next
		}
		le.mu.Unlock()
		if errors.Is(err, objstore.ErrAlreadyExists) {
			le.cancel(fmt.Errorf("%w: %s was taken over", ErrLeaseLost, le.job))
			return
		}
		// Other errors: try again at the next tick; the lease still has two thirds of its TTL.
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
