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
func (r *sourceQuery) encodeDedupSection(st *batchStats, evict int64) dedupSection {
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
func (r *sourceQuery) writeState(ctx context.Context, n int64, dedup dedupSection, aggs []aggStats) error {
	secs := []checkpoint.Section{{Name: "idle", Data: encodeIdle(r.idle.lastDataMs, r.idle.baseWM)}}
	if dedup.name != "" {
		secs = append(secs, checkpoint.Section{Name: dedup.name, Data: dedup.data})
	}
	secs = aggSections(secs, r.ops.plan.aggs, aggs)
	if r.aggFullSnapshot() {
		r.state.aggDeltas = 0
	} else {
		r.state.aggDeltas++
	}
	return r.e.ckpt.WriteSections(ctx, n+1, secs)
}

// aggSections appends each aggregation's state or delta to a state file's sections: a full
// snapshot every min_deltas_for_snapshot versions (and always for session windows), the groups
// the batch touched in between, encoded as the file is written when it can be (writeDelta).
func aggSections(secs []checkpoint.Section, aps []*aggPlan, aggs []aggStats) []checkpoint.Section {
	for i, ap := range aps {
		switch a := &aggs[i]; {
		case a.writeDelta != nil:
			secs = append(secs, checkpoint.Section{Name: secAggDelta + ap.cfg.Name, Size: a.deltaSize, Write: a.writeDelta})
		case a.delta != nil:
			secs = append(secs, checkpoint.Section{Name: secAggDelta + ap.cfg.Name, Data: a.delta})
		default:
			secs = append(secs, checkpoint.Section{Name: secAgg + ap.cfg.Name, Data: a.state})
		}
	}
	return secs
}

// State sections of the dedup operator and of each aggregation (the prefix, then its name):
// a full snapshot, or one batch's delta.
const (
	secDedup      = "dedup"
	secDedupDelta = "dedup-delta"
	secAgg        = "agg/"
	secAggDelta   = "agg-delta/"
)

// chain is how an operator's state is kept in the state files: a full snapshot every
// state.min_deltas_for_snapshot versions, one batch's delta (section delta) in between.
type chain[T any] struct {
	// open returns the state of version v from its full snapshot in sections (nil sections:
	// version 0, the empty state), or ok false when v holds no snapshot.
	open  func(v int64, sections map[string][]byte) (state T, ok bool, err error)
	delta string
	// apply applies the delta that version v holds.
	apply func(state T, delta []byte, v int64) error
	// missing is the error for a version with neither a snapshot nor a delta.
	missing func(v int64) error
}

// openSnapshot is the open of a chain whose version 0 is fresh() and whose full snapshots
// are the section key, read back with load; fail wraps their errors with the version.
func openSnapshot[T any](key string, fresh func() (T, error), load func([]byte) (T, error), fail func(v int64, err error) error) func(int64, map[string][]byte) (T, bool, error) {
	return func(v int64, sections map[string][]byte) (T, bool, error) {
		var state T
		var err error
		switch s, ok := sections[key]; {
		case sections == nil: // version 0: the empty state
			state, err = fresh()
		case ok:
			state, err = load(s)
		default:
			return state, false, nil
		}
		if err != nil {
			return state, false, fail(v, err)
		}
		return state, true, nil
	}
}

// restore rebuilds the state of version v: its nearest full snapshot at or before v, then
// every later delta in order. It returns the number of deltas replayed and whether the chain
// started from the empty state of version 0.
func (c chain[T]) restore(ctx context.Context, v int64, sections map[string][]byte, read func(context.Context, int64) (map[string][]byte, error)) (T, int, bool, error) {
	var deltas [][]byte
	for {
		state, ok, err := c.open(v, sections)
		if err != nil {
			return state, 0, false, err
		}
		if ok {
			for i := len(deltas) - 1; i >= 0; i-- {
				if err := c.apply(state, deltas[i], v+int64(len(deltas)-i)); err != nil {
					return state, 0, false, err
				}
			}
			return state, len(deltas), sections == nil, nil
		}
		s, ok := sections[c.delta]
		if !ok || v <= 0 {
			return state, 0, false, c.missing(v)
		}
		deltas = append(deltas, s)
		v--
		if sections, err = read(ctx, v); err != nil {
			return state, 0, false, err
		}
	}
}

// restoreAggs rebuilds the state of version v of each aggregation and returns the most
// deltas one of them replayed.
// refreshed[i], when set, is aggregation i's state of version v as a full refresh left it
// (refreshedState): its chain, written under the definition before the refresh, is not read.
func restoreAggs(ctx context.Context, aps []*aggPlan, v int64, sections map[string][]byte, read func(context.Context, int64) (map[string][]byte, error),
	refreshed []*gold.Aggregation) ([]*gold.Aggregation, int, error) {
	aggs := make([]*gold.Aggregation, len(aps))
	most := 0
	for i, ap := range aps {
		if i < len(refreshed) && refreshed[i] != nil {
			aggs[i] = refreshed[i]
			continue
		}
		fail := func(v int64, err error) error { return fmt.Errorf("%s: %w", checkpoint.StateKey(v), err) }
		c := chain[*gold.Aggregation]{
			open: openSnapshot(secAgg+ap.cfg.Name,
				func() (*gold.Aggregation, error) { return gold.NewAggregation(ap.agg) },
				func(s []byte) (*gold.Aggregation, error) { return gold.RestoreAggregation(ap.agg, s) }, fail),
			delta: secAggDelta + ap.cfg.Name,
			apply: func(a *gold.Aggregation, delta []byte, v int64) error {
				if err := a.ApplyDelta(delta); err != nil {
					return fail(v, err)
				}
				return nil
			},
			missing: func(v int64) error {
				// A gold added is a change of the query's definition, and its way out is the
				// refresh, not a new checkpoint: the query's tables hold its batches' txns under
				// the old query id, so a new id would read bronze again into them and count
				// every row twice.
				return fmt.Errorf("%w: gold %s was added to a query that already ran: %s has no state for it. "+
					"Stop the stream and run `medallion run refresh --table %s`: it builds the table and the stream's state of it "+
					"from what the query already wrote; do not point the query at a new checkpoint, which would read "+
					"bronze again into the existing tables and count its rows twice (docs/schema-evolution.md)",
					ErrDefinitionChanged, ap.cfg.Name, checkpoint.StateKey(v), ap.cfg.Name)
			},
		}
		var deltas int
		var err error
		if aggs[i], deltas, _, err = c.restore(ctx, v, sections, read); err != nil {
			return nil, 0, fmt.Errorf("gold %s state: %w", ap.cfg.Name, err)
		}
		most = max(most, deltas)
	}
	return aggs, most, nil
}

// dedupWatermark is a watermark as the dedup state sees it: dedup_retention earlier, so keys
// stay in memory that long past the watermark. Both of a batch's watermarks shift alike, so a key
// leaves state only after every row that could repeat it is judged against silver instead.
func (r *sourceQuery) dedupWatermark(wmMs int64) int64 {
	return max(0, wmMs-r.q.State.DedupRetention.Milliseconds())
}

// restoreDedup rebuilds the dedup state of version v: the nearest full snapshot at or before
// v, then every later delta in order. It returns the number of deltas replayed since that
// snapshot (0 when the chain starts from the empty state).
func (r *sourceQuery) restoreDedup(ctx context.Context, cfg silver.DedupConfig, v int64, sections map[string][]byte) (*silver.Dedup, int, error) {
	c := chain[*silver.Dedup]{
		open: func(v int64, sections map[string][]byte) (*silver.Dedup, bool, error) {
			if sections == nil { // version 0, or a query that ran before dedup was on: empty state
				d, err := silver.NewDedup(cfg)
				if err != nil {
					return nil, false, fmt.Errorf("stream: dedup: %w", err)
				}
				return d, true, nil
			}
			s, ok := sections[secDedup]
			if !ok {
				return nil, false, nil
			}
			d, err := silver.RestoreDedup(cfg, s)
			if err != nil {
				return nil, false, fmt.Errorf("stream: dedup state %s: %w", checkpoint.StateKey(v), err)
			}
			return d, true, nil
		},
		delta: secDedupDelta,
		apply: func(d *silver.Dedup, delta []byte, v int64) error {
			if err := d.ApplyDelta(delta); err != nil {
				return fmt.Errorf("%w: %s: %v", checkpoint.ErrBad, checkpoint.StateKey(v), err)
			}
			return nil
		},
		missing: func(v int64) error {
			return fmt.Errorf("%w: %s has no dedup state", checkpoint.ErrBad, checkpoint.StateKey(v))
		},
	}
	d, deltas, fromEmpty, err := c.restore(ctx, v, sections, r.e.stateSections)
	if fromEmpty {
		deltas = 0
	}
	return d, deltas, err
}
