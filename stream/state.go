package stream

// The operators' state in the checkpoint: state version n+1 is written by batch n, and a
// restore walks back from a version to its nearest full snapshots and replays the deltas.

import (
	"context"
	"fmt"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/stream/checkpoint"
)

// dedupSection is the dedup state's section of a state file: its name (secDedup or
// secDedupDelta) and bytes; no name without dedup.
type dedupSection struct {
	name string
	data []byte
}

// encodeDedupSection encodes the dedup state after the batch: a full snapshot every
// min_deltas_for_snapshot versions, the batch's additions and its eviction watermark in
// between (the state can be large, a batch's change small).
func (r *Runner) encodeDedupSection(st *batchStats, evict int64) dedupSection {
	if r.ops.dedup == nil {
		return dedupSection{}
	}
	if every := r.q.State.MinDeltasForSnapshot; r.state.dedupDeltas+1 >= every || st.dedup == nil {
		r.state.dedupDeltas = 0
		return dedupSection{secDedup, r.ops.dedup.AppendSnapshot(nil)}
	}
	r.state.dedupDeltas++
	return dedupSection{secDedupDelta, silver.EncodeDedupDelta(&r.buf.rows, st.dedup.Emit, r.dedupWatermark(evict))}
}

// writeState writes state version n+1: the idleness bookkeeping, the dedup section and each
// aggregation's state or delta.
func (r *Runner) writeState(ctx context.Context, n int64, dedup dedupSection, aggs []aggStats) error {
	sections := map[string][]byte{"idle": encodeIdle(r.idle.lastDataMs, r.idle.baseWM)}
	order := []string{"idle"}
	if dedup.name != "" {
		sections[dedup.name] = dedup.data
		order = append(order, dedup.name)
	}
	order = aggSections(sections, order, r.ops.plan.aggs, aggs)
	if r.aggFullSnapshot() {
		r.state.aggDeltas = 0
	} else {
		r.state.aggDeltas++
	}
	return r.ckpt.WriteState(ctx, n+1, sections, order)
}

// aggSections adds each aggregation's state or delta to a state file's sections: a full
// snapshot every min_deltas_for_snapshot versions (and always for session windows), the groups
// the batch touched in between. It returns order with their names appended.
func aggSections(sections map[string][]byte, order []string, aps []*aggPlan, aggs []aggStats) []string {
	for i, ap := range aps {
		name := secAgg + ap.cfg.Name
		if aggs[i].delta != nil {
			name = secAggDelta + ap.cfg.Name
			sections[name] = aggs[i].delta
		} else {
			sections[name] = aggs[i].state
		}
		order = append(order, name)
	}
	return order
}

// State sections of the dedup operator and of each aggregation (the prefix, then its name):
// a full snapshot, or one batch's delta.
const (
	secDedup      = "dedup"
	secDedupDelta = "dedup-delta"
	secAgg        = "agg/"
	secAggDelta   = "agg-delta/"
)

// stateSections reads the sections of state version v; version 0, the empty state, has none
// (nil). During a restore it keeps what it read in r.state.restoring.
func (r *Runner) stateSections(ctx context.Context, v int64) (map[string][]byte, error) {
	if v == 0 {
		return nil, nil
	}
	if sections, ok := r.state.restoring[v]; ok {
		return sections, nil
	}
	sections, err := r.ckpt.ReadState(ctx, v)
	if err == nil && r.state.restoring != nil {
		r.state.restoring[v] = sections
	}
	return sections, err
}

// restoreAgg rebuilds an aggregation's state of version v: its nearest full snapshot at or
// before v, then every later delta in order. It returns the number of deltas replayed.
func restoreAgg(ctx context.Context, ap *aggPlan, v int64, sections map[string][]byte, read func(context.Context, int64) (map[string][]byte, error)) (*gold.Aggregation, int, error) {
	var deltas [][]byte
	for {
		var a *gold.Aggregation
		var err error
		if sections == nil { // version 0: the empty state
			a, err = gold.NewAggregation(ap.agg)
		} else if s, ok := sections[secAgg+ap.cfg.Name]; ok {
			a, err = gold.RestoreAggregation(ap.agg, s)
		}
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", checkpoint.StateKey(v), err)
		}
		if a != nil {
			for i := len(deltas) - 1; i >= 0; i-- {
				if err := a.ApplyDelta(deltas[i]); err != nil {
					return nil, 0, fmt.Errorf("%s: %w", checkpoint.StateKey(v+int64(len(deltas)-i)), err)
				}
			}
			return a, len(deltas), nil
		}
		s, ok := sections[secAggDelta+ap.cfg.Name]
		if !ok || v <= 0 {
			return nil, 0, fmt.Errorf("%w: %s has no state for gold %s (an aggregation added to a running query needs a new checkpoint)", checkpoint.ErrBad, checkpoint.StateKey(v), ap.cfg.Name)
		}
		deltas = append(deltas, s)
		v--
		if sections, err = read(ctx, v); err != nil {
			return nil, 0, err
		}
	}
}

// dedupWatermark is a watermark as the dedup state sees it: dedup_retention earlier, so keys
// stay in memory that long past the watermark. Both of a batch's watermarks shift alike, so a key
// leaves state only after every row that could repeat it is judged against silver instead.
func (r *Runner) dedupWatermark(wmMs int64) int64 {
	return max(0, wmMs-r.q.State.DedupRetention.Milliseconds())
}

// restoreDedup rebuilds the dedup state of version v: the nearest full snapshot at or before
// v, then every later delta in order. It returns the number of deltas replayed.
func (r *Runner) restoreDedup(ctx context.Context, cfg silver.DedupConfig, v int64, sections map[string][]byte) (*silver.Dedup, int, error) {
	var deltas [][]byte
	for {
		if sections == nil { // version 0, or a query that ran before dedup was on: empty state
			d, err := silver.NewDedup(cfg)
			if err != nil {
				return nil, 0, fmt.Errorf("stream: dedup: %w", err)
			}
			return d, 0, r.replay(d, deltas, v)
		}
		if s, ok := sections[secDedup]; ok {
			d, err := silver.RestoreDedup(cfg, s)
			if err != nil {
				return nil, 0, fmt.Errorf("stream: dedup state %s: %w", checkpoint.StateKey(v), err)
			}
			return d, len(deltas), r.replay(d, deltas, v)
		}
		s, ok := sections[secDedupDelta]
		if !ok || v <= 0 {
			return nil, 0, fmt.Errorf("%w: %s has no dedup state", checkpoint.ErrBad, checkpoint.StateKey(v))
		}
		deltas = append(deltas, s)
		v--
		var err error
		if sections, err = r.stateSections(ctx, v); err != nil {
			return nil, 0, err
		}
	}
}

func (r *Runner) replay(d *silver.Dedup, deltas [][]byte, base int64) error {
	for i := len(deltas) - 1; i >= 0; i-- {
		if err := d.ApplyDelta(deltas[i]); err != nil {
			return fmt.Errorf("%w: %s: %v", checkpoint.ErrBad, checkpoint.StateKey(base+int64(len(deltas)-i)), err)
		}
	}
	return nil
}
