package late

import (
	"context"
	"errors"
	"fmt"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/stream/checkpoint"
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
	var found bool
	var err error
	if d.outSnap, found, err = dt.snapshot(ctx, d.out, dt.outWhat, "joined table"); err != nil || !found {
		return d, deltaNoOutput, err
	}
	if v, ok := d.outSnap.TxnVersion(d.appID); ok {
		d.from = v
	}
	if d.qSnap, found, err = dt.snapshot(ctx, d.q, dt.qWhat, "quarantine"); err != nil || !found {
		return d, deltaNoQuarantine, err
	}
	if err := errors.Join(st.check(ctx, dt.out, d.out.Log(), d.outSnap, d.appID), st.check(ctx, dt.quarantine, d.q.Log(), d.qSnap)); err != nil {
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

// snapshot reads t's latest snapshot (found false: the table does not exist yet), refused by
// the guard when it has one.
func (dt deltaTables) snapshot(ctx context.Context, t *table.Table, what, which string) (*txlog.Snapshot, bool, error) {
	snap, err := t.Log().Snapshot(ctx)
	if errors.Is(err, txlog.ErrTableNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("late: %s: %w", what, err)
	}
	if dt.guard != nil {
		if err := dt.guard(which, snap); err != nil {
			return nil, false, err
		}
	}
	return snap, true, nil
}

// quarantineBehind is the checkpoint.ErrTableBehind of quarantine q at version has, whose
// rows target records as merged up to version merged under appID (a deleted _delta_log entry,
// a restore from an older backup): merging on would take the rows the stream writes into
// those versions again as merged.
func quarantineBehind(q, target, appID string, has, merged int64) error {
	return fmt.Errorf("late: %w: quarantine %s is at version %d, but %s holds txn(%s) for version %d; recover the "+
		"stream first (its run refuses and names the recovery: medallion recover rollback --config F --query NAME, "+
		"docs/recovery.md), then run merge-late", checkpoint.ErrTableBehind, q, has, target, appID, merged)
}

// errCommitCleanedUp: log cleanup removed a quarantine commit before merge-late read it. Each
// caller names its way out, which differs between an aggregation and a join.
var errCommitCleanedUp = errors.New("is no longer in the log (cleaned up before it was merged)")

// addedFiles lists the files the commits from..to (inclusive) added with dataChange: the rows
// those versions appended (compactions, with dataChange false, only move rows already seen).
func addedFiles(ctx context.Context, b objstore.Bucket, from, to int64) ([]*txlog.Add, error) {
	var out []*txlog.Add
	for v := max(from, 0); v <= to; v++ {
		data, err := objstore.ReadAll(ctx, b, txlog.CommitKey(v))
		if errors.Is(err, objstore.ErrNotFound) {
			return nil, fmt.Errorf("commit %d %w", v, errCommitCleanedUp)
		}
		if err != nil {
			return nil, err
		}
		actions, err := txlog.ParseActions(data)
		if err != nil {
			return nil, fmt.Errorf("commit %d: %w", v, err)
		}
		for _, a := range actions {
			if a.Add != nil && a.Add.DataChange {
				out = append(out, a.Add)
			}
		}
	}
	return out, nil
}
