package stream

import (
	"context"
	"fmt"

	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/stream/spec"
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
