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
	"github.com/medallion-lake/medallion/table"
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
	rn, err := NewJoin(opts)
	if err != nil {
		return RefreshReport{Name: name, Batch: -1}, err
	}
	return refreshGold(ctx, rn.q, name)
}

func (r *joinQuery) refreshIdentity() (string, []spec.Aggregation, *checkpoint.Dir, string) {
	return "join " + r.j.Name, r.j.Gold, r.e.ckpt, r.j.Checkpoint
}

// refreshWatermarkMs is the output watermark the batch recorded (or, before the join recorded
// one, the one its batch watermark gives).
func (r *joinQuery) refreshWatermarkMs(e *checkpoint.Offsets) int64 {
	if e.OutputWatermarkMs != nil {
		return *e.OutputWatermarkMs
	}
	return r.outputWatermark(e.BatchWatermarkMs)
}

func (r *joinQuery) refreshPlan(ctx context.Context, gi int) (refreshInput, string, *aggPlan, refreshTarget, error) {
	j := r.j
	p, err := r.newPlan(ctx)
	if err != nil {
		return refreshInput{}, "", nil, refreshTarget{}, err
	}
	if p == nil {
		return refreshInput{}, "", nil, refreshTarget{}, fmt.Errorf("%w: join %s has not run: its sources' silver tables %s and %s must both exist",
			ErrRefreshRefused, j.Name, j.Left.Silver, j.Right.Silver)
	}
	ap := p.agg.aggs[gi]
	what := "joined table " + j.Table
	in := refreshInput{t: r.out, path: j.Table, what: what, schema: p.agg.silver, kinds: p.agg.kinds, tc: p.timeCols[gi]}
	return in, what, ap, refreshTarget{ckpt: r.e.ckpt, gold: r.golds[gi], quar: r.quars[gi], ap: ap}, nil
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

// refreshInput is the table a refresh reads: silver, or a join's joined table (at path; what
// names it; snap nil: it does not exist yet), with its schema, column kinds and the time column.
type refreshInput struct {
	t      *table.Table
	path   string
	what   string
	snap   *txlog.Snapshot
	schema *txlog.StructType
	kinds  []pq.Kind
	tc     int
}

// refreshPass feeds every row of in to a fresh aggregation of ap, evicts at the watermark of
// the batch the refresh rebuilds from (rep.Batch; before the first: nothing), and returns
// the state left and the table's rows: the windows evicted (append), every group (complete).
// For update mode the table also holds the open windows, which the eviction does not emit: a
// second pass of the same aggregation in complete mode gives every group for the table, the
// update mode one the state.
func refreshPass(ctx context.Context, in refreshInput, ap *aggPlan, rep *RefreshReport) ([]byte, *pq.Batch, error) {
	evict := refreshLowMs
	if rep.Batch >= 0 {
		evict = rep.WatermarkMs
	}
	run := func(ap *aggPlan, out *pq.Batch) ([]byte, error) {
		op, err := gold.NewAggregation(ap.agg)
		if err != nil {
			return nil, fmt.Errorf("stream: gold %s: %w", rep.Name, err)
		}
		a := &aggRun{ap: ap, op: op, ab: &aggBuffers{}, schema: in.schema, kinds: in.kinds}
		if in.snap != nil {
			if rep.SilverRows, err = feedSilver(ctx, in.t, in.what, in.snap, in.schema, in.tc, a, out); err != nil {
				return nil, fmt.Errorf("stream: refresh %s: %w", rep.Name, err)
			}
		}
		return refreshEvict(a, out, evict, rep)
	}
	out, err := pq.NewBatch(ap.schema)
	if err != nil {
		return nil, nil, fmt.Errorf("stream: gold %s: %w", rep.Name, err)
	}
	if !ap.update {
		state, err := run(ap, out)
		return state, out, err
	}
	all := *ap
	all.agg.Mode, all.update, all.complete = gold.Complete, false, true
	if _, err := run(&all, out); err != nil {
		return nil, nil, err
	}
	groups := int64(out.Len())
	scratch, err := pq.NewBatch(ap.schema)
	if err != nil {
		return nil, nil, fmt.Errorf("stream: gold %s: %w", rep.Name, err)
	}
	state, err := run(ap, scratch)
	if err == nil && scratch.Len() > 0 {
		err = fmt.Errorf("stream: refresh %s: an update mode eviction emitted %d rows", rep.Name, scratch.Len())
	}
	if err == nil && rep.OpenGroups > groups {
		err = fmt.Errorf("stream: refresh %s: %d groups open, more than the %d of the complete pass", rep.Name, rep.OpenGroups, groups)
	}
	return state, out, err
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
