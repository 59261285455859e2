package stream

import (
	"context"
	"errors"
	"fmt"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/txlog"
)

// Full refresh of one gold over a join: RefreshGold's argument with the joined table in
// silver's place. The stream runs such an aggregation, in batch N, over the rows the join
// appended to the joined table in that batch (a row whose time column is null left out),
// evicting at the output watermark of offsets/N; merge-late of the join adds rows to the
// joined table and replays the windows they touch from it, so that after merge-late every
// closed window is a group-by over the joined table (invariant E over it). With the join
// stopped at a committed batch N, the refresh feeds every row of the joined table to a fresh
// aggregation of the new definition and evicts at N's output watermark: the closed windows
// are that group-by, and an open window holds every row the stream put in it (the output
// watermark only moves forward, so a row the stream appended to a window still open at N was
// in time for it). An open window may hold more: a row join merge-late added after the
// stream had passed it, which the stream's state lacks until the window closes and merge-late
// replays it from the joined table; the refresh's state has it from the start, the same rows
// the replay would give. Commit, state hand-over and crash guarantee as RefreshGold's, with
// the join's checkpoint and merge-late's txn of the join's query id.

// RefreshJoinGold rebuilds gold aggregation name of join opts.Join from its joined table (see
// above). The join must be stopped: a batch in flight, or a joined table ahead of the last
// commit, is refused with ErrRefreshRefused.
func RefreshJoinGold(ctx context.Context, opts JoinOptions, name string) (RefreshReport, error) {
	rep := RefreshReport{Name: name, Batch: -1}
	j := &opts.Join
	gi := -1
	for i := range j.Gold {
		if j.Gold[i].Name == name {
			gi = i
		}
	}
	if gi < 0 {
		return rep, fmt.Errorf("stream: join %s has no gold %s", j.Name, name)
	}
	g := &j.Gold[gi]
	if err := refreshable(g, "join "+j.Name); err != nil {
		return rep, err
	}
	rn, err := NewJoin(opts)
	if err != nil {
		return rep, err
	}
	r := rn.q
	id, h, err := refreshHead(ctx, r.e.ckpt, j.Name, name)
	if err != nil {
		return rep, err
	}
	if id != "" {
		rep.Batch = h.Last
		if h.Entry != nil {
			rep.WatermarkMs = r.outputWatermark(h.Entry.BatchWatermarkMs)
			if h.Entry.OutputWatermarkMs != nil {
				rep.WatermarkMs = *h.Entry.OutputWatermarkMs
			}
		}
	}
	p, err := r.newPlan(ctx)
	if err != nil {
		return rep, err
	}
	if p == nil {
		return rep, fmt.Errorf("%w: join %s has not run: its sources' silver tables %s and %s must both exist", ErrRefreshRefused, j.Name, j.Left.Silver, j.Right.Silver)
	}
	ap := p.agg.aggs[gi]
	outSnap, err := r.out.Latest(ctx)
	switch {
	case errors.Is(err, txlog.ErrTableNotFound):
		outSnap = nil
	case err != nil:
		return rep, fmt.Errorf("stream: refresh %s: joined table %s: %w", name, j.Table, err)
	default:
		if err := refreshCheckInput("join "+j.Name, j.Table, j.Checkpoint, id, &h, outSnap); err != nil {
			return rep, err
		}
	}
	op, err := gold.NewAggregation(ap.agg)
	if err != nil {
		return rep, fmt.Errorf("stream: gold %s: %w", name, err)
	}
	out, err := pq.NewBatch(ap.schema)
	if err != nil {
		return rep, fmt.Errorf("stream: gold %s: %w", name, err)
	}
	a := &aggRun{ap: ap, op: op, ab: &aggBuffers{}, schema: p.agg.silver, kinds: p.agg.kinds}
	if outSnap != nil {
		if rep.SilverRows, err = feedSilver(ctx, r.out, "joined table "+j.Table, outSnap, p.agg.silver, p.timeCols[gi], a, out); err != nil {
			return rep, fmt.Errorf("stream: refresh %s: %w", name, err)
		}
	}
	evict := refreshLowMs
	if rep.Batch >= 0 {
		evict = rep.WatermarkMs
	}
	state, err := refreshEvict(a, out, evict, &rep)
	if err != nil {
		return rep, err
	}
	return refreshCommit(ctx, refreshTarget{ckpt: r.e.ckpt, id: id, g: g,
		gold: r.golds[gi], quar: r.quars[gi], ap: ap}, state, out, rep)
}

// refreshable refuses the kinds of aggregation a refresh does not rebuild (of owner: a query
// or a join): output_mode update. A refresh writes the closed windows and hands the open ones
// to the stream as its state (append), or writes every group and hands every group over
// (complete: neither late rows nor eviction, the table rewritten whole each batch). An update
// gold's table holds the closed windows and the open ones, each as the last batch that changed
// it left it, which one pass of the operator does not give apart from its state; not done yet,
// the full refresh of the query rebuilds it from bronze.
func refreshable(g *spec.Aggregation, owner string) error {
	if g.OutputMode == spec.OutputUpdate {
		return fmt.Errorf("%w: gold %s has output_mode update: a refresh rebuilds append and complete mode golds, whose table is "+
			"the closed windows (append) or every window (complete), while an update gold's table holds the open windows beside "+
			"the closed ones; do a full refresh of %s instead (docs/schema-evolution.md)", ErrRefreshRefused, g.Name, owner)
	}
	return nil
}

// refreshHead reads the query id and the head of checkpoint d of query (or join) owner for a
// refresh of gold name: id "" when the query has never run; a batch not committed is refused.
func refreshHead(ctx context.Context, d *checkpoint.Dir, owner, name string) (string, checkpoint.Head, error) {
	var h checkpoint.Head
	id, err := d.ReadQueryID(ctx)
	if errors.Is(err, checkpoint.ErrNoQuery) {
		return "", h, nil
	}
	if err != nil {
		return "", h, fmt.Errorf("stream: refresh %s: %w", name, err)
	}
	if h, err = d.ReadHead(ctx); err != nil {
		return "", h, fmt.Errorf("stream: refresh %s: %w", name, err)
	}
	if h.Last >= 0 && h.Commit == nil {
		return "", h, fmt.Errorf("%w: batch %d of %s is not committed (the stream is running, or was stopped mid-batch): "+
			"stop the stream, run `medallion run stream --trigger once` to finish the batch, then refresh %s", ErrRefreshRefused, h.Last, owner, name)
	}
	return id, h, nil
}

// refreshEvict evicts the windows closed by evict from a's aggregation into out, and returns
// the state of the open ones.
func refreshEvict(a *aggRun, out *pq.Batch, evict int64, rep *RefreshReport) ([]byte, error) {
	a.rows, a.sel, a.selEvt = &silver.Rows{}, nil, nil
	in := a.input()
	in.Out = out
	res, err := a.op.ProcessBatch(in, refreshLowMs, evict)
	if err != nil {
		return nil, fmt.Errorf("stream: gold %s: %w", rep.Name, err)
	}
	rep.OpenGroups = res.NumRowsTotal
	state, err := a.op.AppendSnapshot(nil)
	if err != nil {
		return nil, fmt.Errorf("stream: gold %s state: %w", rep.Name, err)
	}
	return state, nil
}
