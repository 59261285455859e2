package late

import (
	"context"
	"errors"
	"fmt"

	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// The reconciler. Every job of this package is one loop over an output table, whatever the
// table holds:
//
//   - find what the input affects: in merge-late mode the rows the quarantine's unmerged
//     versions hold (delta, openDelta), in replay mode a range of event time; a kind turns
//     them into its own unit (windows, the sessions of some keys, the joined rows of some
//     input values);
//   - recompute those rows from the inputs: sessions and joined rows from silver, a window's
//     new value in merge-late as its old one plus the late rows' exact delta (the aggregates
//     are mergeable, so that is the value recomputing the window gives) and in replay from
//     silver or bronze;
//   - rewrite them in one copy-on-write commit (rewrite.run), carrying in merge-late mode the
//     txn(AppIDPrefix + query id, quarantine version) that makes a rerun commit nothing.
//
// Each kind of output is a plug-in (outputKind) that says how to find and how to recompute:
// windowAgg (tumbling and sliding windows), sessionAgg (session windows), joinOutput (a
// joined table; merge-late only: a replay of a join is the replay of its aggregations). An
// aggregation over a join is windowAgg or sessionAgg over the joined table (JoinQuery) with
// the join's output watermark (Options.Join); MergeLateJoin replays its windows after fixing
// the joined table. The job drivers (MergeLate, Replay, MergeLateJoin) read the stream's
// state, pick the kind for each output and run reconcile under the conflict retry.

// outputKind is one kind of output table reconcile keeps right, in the mode it was made
// for. S is what find finds affected, handed on to recompute and committed.
type outputKind[S any] interface {
	// find says what the run's input affects; ok false: nothing (the report says why).
	find(ctx context.Context) (s S, ok bool, err error)
	// recompute computes the affected rows anew from the inputs and returns the rewrite that
	// puts them in place (nil: nothing to commit).
	recompute(ctx context.Context, s S) (*rewrite, error)
	// committed records what the rewrite did in the kind's report.
	committed(ctx context.Context, s S, ws writeStats)
}

// reconcile runs one pass of k: find, recompute, rewrite in one commit.
func reconcile[S any](ctx context.Context, k outputKind[S]) error {
	s, ok, err := k.find(ctx)
	if err != nil || !ok {
		return err
	}
	rw, err := k.recompute(ctx, s)
	if err != nil || rw == nil {
		return err
	}
	ws, err := rw.run(ctx)
	if err != nil {
		return err
	}
	k.committed(ctx, s, ws)
	return nil
}

// delta is what merge-late has not merged yet of an output's quarantine: the output table and
// its quarantine at their latest snapshots, and the quarantine versions (from, to] (from: the
// version the output's txn(appID) records, -1 for none).
type delta struct {
	out, q         *table.Table
	outSnap, qSnap *txlog.Snapshot
	appID          string
	from, to       int64
}

// deltaState says how far openDelta got.
type deltaState int

const (
	deltaOpen         deltaState = iota // both tables read: (from, to] is what to merge
	deltaNoOutput                       // the output table does not exist yet
	deltaNoQuarantine                   // nothing was ever quarantined
)

// deltaTables names an output and its quarantine for openDelta.
type deltaTables struct {
	out, quarantine string // table paths
	outWhat, qWhat  string // how errors name them
	// checkWrap prefixes the errors of the stream's table checks ("": none).
	checkWrap string
	// guard, when set, refuses a snapshot as soon as it is read (a join's batch written
	// but not committed).
	guard func(which string, snap *txlog.Snapshot) error
}

// openDelta reads an output table and its quarantine, with the version merge-late merged up
// to (from the output's txn), and refuses tables behind the stream's last commit or a
// quarantine behind that version.
func openDelta(ctx context.Context, opts *Options, st streamState, dt deltaTables) (*delta, deltaState, error) {
	d := &delta{out: opts.open(dt.out), q: opts.open(dt.quarantine), appID: AppIDPrefix + st.queryID, from: -1, to: -1}
	var err error
	d.outSnap, err = d.out.Log().Snapshot(ctx)
	if errors.Is(err, txlog.ErrTableNotFound) {
		return d, deltaNoOutput, nil
	}
	if err != nil {
		return d, deltaNoOutput, fmt.Errorf("late: %s: %w", dt.outWhat, err)
	}
	if dt.guard != nil {
		if err := dt.guard("joined table", d.outSnap); err != nil {
			return d, deltaNoOutput, err
		}
	}
	if v, ok := d.outSnap.TxnVersion(d.appID); ok {
		d.from = v
	}
	d.qSnap, err = d.q.Log().Snapshot(ctx)
	if errors.Is(err, txlog.ErrTableNotFound) {
		return d, deltaNoQuarantine, nil
	}
	if err != nil {
		return d, deltaNoQuarantine, fmt.Errorf("late: %s: %w", dt.qWhat, err)
	}
	if dt.guard != nil {
		if err := dt.guard("quarantine", d.qSnap); err != nil {
			return d, deltaNoQuarantine, err
		}
	}
	if err := errors.Join(st.check(dt.out, d.outSnap), st.check(dt.quarantine, d.qSnap)); err != nil {
		if dt.checkWrap != "" {
			err = fmt.Errorf("%s: %w", dt.checkWrap, err)
		}
		return d, deltaOpen, err
	}
	d.to = d.qSnap.Version()
	if d.to < d.from {
		return d, deltaOpen, quarantineBehind(dt.quarantine, dt.out, d.appID, d.to, d.from)
	}
	return d, deltaOpen, nil
}

// txn is the commit's txn: the quarantine version merged.
func (d *delta) txn() *table.AppTxn { return &table.AppTxn{AppID: d.appID, Version: d.to} }
