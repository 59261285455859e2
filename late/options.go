package late

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/medallion-lake/medallion/internal/backoff"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// ErrUnknownGold reports a --gold name the config does not declare.
var ErrUnknownGold = errors.New("late: unknown gold aggregation")

// Options configure merge-late and replay.
type Options struct {
	// Lake is the bucket every path of Query is relative to.
	Lake  objstore.Bucket
	Query spec.Query
	// Gold limits the job to one aggregation (empty: all).
	Gold   string
	Clock  func() time.Time
	Logger *slog.Logger
	// WriteOptions tune the gold data files written.
	WriteOptions pq.WriteOptions
	// MaxAttempts bounds the runs of one aggregation's job after conflicts with another
	// writer (default 8).
	MaxAttempts int
	// Progress, when set, follows a Replay (the other jobs do not call it): see ReplayProgress.
	Progress func(ReplayProgress)
	// Workers is how many goroutines a replay reads and aggregates silver with (0: GOMAXPROCS).
	Workers int
	// SlicePairs bounds the (row, window) pairs a replay of count, sum, avg, min and max
	// aggregates at once, as the source's statistics estimate them: the range is cut into
	// slices of whole windows, aggregated and written one after another into one commit, so
	// memory follows the slice, not the range (0: DefaultSlicePairs; < 0: one slice).
	SlicePairs int64

	// Join, when set, is the join whose joined table Query.Tables.Silver is and whose
	// checkpoint Query.Tables.Checkpoint is (JoinQuery builds that Query): its aggregations
	// were judged and emitted with the watermark the join propagates (join.Spec.
	// OutputWatermark of the batch watermark, spec/stream-joins.md §3.4), not the batch
	// watermark itself.
	Join *spec.Join

	// track carries Progress's figures down to the source reads of a replay (nil: no hook).
	track *replayTracker
	// share carries the first passes one read of silver computed for later golds of a
	// replay (nil: each gold reads for itself).
	share *replayShare
}

func (o *Options) defaults() {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 8
	}
}

// DefaultSlicePairs is Options.SlicePairs's default: about 2M groups at most, a few hundred
// MB of aggregation state over both cores' partial tables.
const DefaultSlicePairs = 2_000_000

func (o *Options) slicePairs() int64 {
	switch {
	case o.SlicePairs == 0:
		return DefaultSlicePairs
	case o.SlicePairs < 0:
		return 0
	}
	return o.SlicePairs
}

func (o *Options) workers() int {
	if o.Workers > 0 {
		return o.Workers
	}
	return runtime.GOMAXPROCS(0)
}

func (o *Options) open(p string) *table.Table {
	return table.Open(objstore.WithPrefix(o.Lake, p), table.Options{Clock: o.Clock, Write: o.WriteOptions})
}

func (o *Options) golds() ([]*spec.Aggregation, error) {
	var out []*spec.Aggregation
	for i := range o.Query.Gold {
		g := &o.Query.Gold[i]
		if o.Gold == "" || g.Name == o.Gold {
			out = append(out, g)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %q", ErrUnknownGold, o.Gold)
	}
	return out, nil
}

// retry runs fn again from scratch while it loses against a concurrent writer.
func (o *Options) retry(ctx context.Context, name string, fn func() error) error {
	var err error
	for attempt := 1; attempt <= o.MaxAttempts; attempt++ {
		if err = fn(); !errors.Is(err, txlog.ErrConflict) {
			return err
		}
		o.Logger.Info("late: concurrent gold commit, starting over", "gold", name, "attempt", attempt, "err", err)
		if err := (backoff.Backoff{Min: 10 * time.Millisecond, Max: time.Second}).Sleep(ctx, attempt); err != nil {
			return err
		}
	}
	return err
}

// eachGold runs fn for every selected aggregation, each under the conflict retry, with the
// stream's committed state. Before the stream has committed anything there is nothing to do:
// it returns no query id and no error.
func (o *Options) eachGold(ctx context.Context, what string, fn func(*spec.Aggregation, streamState) error) (string, error) {
	golds, err := o.golds()
	if err != nil {
		return "", err
	}
	st, _, err := readState(ctx, o.Lake, o.Query.Tables.Checkpoint)
	if errors.Is(err, errNoStream) {
		o.Logger.Info("late: nothing to "+what, "reason", err)
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if o.Join != nil {
		p, err := newJoinPlan(o.Join)
		if err != nil {
			return "", err
		}
		st.evictMs = p.spec.OutputWatermark(st.evictMs)
	}
	for _, g := range golds {
		if err := o.retry(ctx, g.Name, func() error { return fn(g, st) }); err != nil {
			// A data file gone is said once with its ways out, not under each caller's prefix.
			return st.queryID, table.Explained(err)
		}
	}
	return st.queryID, nil
}
