// Package backoff is the one retry wait of the code base: a jittered exponential backoff, used
// by txlog's commit retries, the S3 backend's put-if-absent retries and the late jobs' conflict
// retries. It holds no state, so a crash loses nothing.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff waits about Min·2^(attempt-1) before attempt+1, at most Max.
type Backoff struct {
	Min, Max time.Duration
}

// Delay is the wait after the attempt-th failure (from 1): the exponential step with "equal
// jitter", uniform in [d/2, d], so that writers racing for one key spread out.
func (b Backoff) Delay(attempt int) time.Duration {
	d := b.Min << min(max(attempt-1, 0), 30)
	if d > b.Max || d <= 0 {
		d = b.Max
	}
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

// Sleep waits Delay(attempt), or until ctx is done (its error).
func (b Backoff) Sleep(ctx context.Context, attempt int) error {
	return Sleep(ctx, b.Delay(attempt))
}

// Sleep waits d, or until ctx is done (its error).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
