package gold

import (
	"errors"
	"fmt"
)

// Policy combines several watermark nodes into the global watermark
// (spark.sql.streaming.multipleWatermarkPolicy).
type Policy uint8

// The multiple-watermark policies.
const (
	PolicyMin Policy = iota
	PolicyMax
)

// ErrBadWatermark is returned for an invalid delay, node or restored state.
var ErrBadWatermark = errors.New("gold: bad watermark")

// EventTimeStats are one batch's statistics of a watermark node's event times in ms, counted
// before any late filtering (they feed progress.eventTime too).
type EventTimeStats struct {
	Count         int64
	Max, Min, Sum int64
}

// Avg is the average in ms, truncated as Spark's eventTime.avg.
func (s EventTimeStats) Avg() int64 {
	if s.Count == 0 {
		return 0
	}
	return s.Sum / s.Count
}

// WatermarkTracker keeps the global event-time watermark across micro-batches (spec §3.1-3.2):
// per node candidate = batch max - delay, node values only move forward, the global starts at
// 0 and never decreases; a batch runs with the watermark computed from earlier batches only.
//
// Beyond Spark, a node whose source has been silent for longer than IdleTimeoutMs (processing
// time) stops holding back the min policy, as Flink's withIdleness does.
type WatermarkTracker struct {
	policy        Policy
	delays        []int64
	values        []int64
	lastActiveMs  []int64
	stats         []EventTimeStats
	idleTimeoutMs int64
	clockStarted  bool
	prev, cur     int64
}

// NewWatermarkTracker creates a tracker with one node per delay (ms). idleTimeoutMs <= 0
// disables idleness.
func NewWatermarkTracker(policy Policy, delaysMs []int64, idleTimeoutMs int64) (*WatermarkTracker, error) {
	if len(delaysMs) == 0 {
		return nil, fmt.Errorf("%w: no watermark node", ErrBadWatermark)
	}
	for i, d := range delaysMs {
		if d < 0 {
			return nil, fmt.Errorf("%w: node %d: delay %d ms is negative", ErrBadWatermark, i, d)
		}
	}
	if policy != PolicyMin && policy != PolicyMax {
		return nil, fmt.Errorf("%w: unknown policy %d", ErrBadWatermark, policy)
	}
	n := len(delaysMs)
	return &WatermarkTracker{
		policy: policy, delays: append([]int64(nil), delaysMs...),
		values: make([]int64, n), lastActiveMs: make([]int64, n),
		stats: make([]EventTimeStats, n), idleTimeoutMs: idleTimeoutMs,
	}, nil
}

// BatchWatermarks are the two watermarks of the current batch (ms): lateWM (the previous
// batch's, 0 for batch 0) judges late rows; evictWM (this batch's, offsets/N.batchWatermarkMs)
// evicts state.
func (w *WatermarkTracker) BatchWatermarks() (lateWM, evictWM int64) { return w.prev, w.cur }

// Stats is node's statistics for the current batch.
func (w *WatermarkTracker) Stats(node int) EventTimeStats { return w.stats[node] }

// Observe adds a column of event times (µs, valid mask nil = no nulls) seen by node in this batch.
func (w *WatermarkTracker) Observe(node int, eventTimeUs []int64, valid []bool) {
	st := &w.stats[node]
	for i, t := range eventTimeUs {
		if valid != nil && !valid[i] {
			continue
		}
		ms := floorDiv(t, 1000)
		if st.Count == 0 {
			st.Max, st.Min = ms, ms
		} else {
			st.Max, st.Min = max(st.Max, ms), min(st.Min, ms)
		}
		st.Sum += ms
		st.Count++
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && (a < 0) {
		q--
	}
	return q
}

// EndBatch closes the batch at processing time nowMs and returns nextBatchWatermarkMs, which
// the runner persists in commits/N and which becomes the next batch's eviction watermark.
func (w *WatermarkTracker) EndBatch(nowMs int64) int64 {
	if !w.clockStarted {
		// Idleness is measured from the first batch this process ran, for every node.
		for i := range w.lastActiveMs {
			w.lastActiveMs[i] = nowMs
		}
		w.clockStarted = true
	}
	for i, st := range w.stats {
		if st.Count == 0 {
			continue
		}
		w.lastActiveMs[i] = nowMs
		w.values[i] = max(w.values[i], st.Max-w.delays[i]) // a never-seen node counts as 0
	}
	next := w.cur
	if g, ok := w.combine(nowMs); ok && g > next {
		next = g
	}
	w.prev, w.cur = w.cur, next
	clear(w.stats)
	return next
}

func (w *WatermarkTracker) combine(nowMs int64) (int64, bool) {
	g, any := int64(0), false
	for i, v := range w.values {
		if w.policy == PolicyMin && w.idleTimeoutMs > 0 && nowMs-w.lastActiveMs[i] > w.idleTimeoutMs {
			continue // idle: does not hold back the others
		}
		if !any {
			g, any = v, true
		} else if w.policy == PolicyMin {
			g = min(g, v)
		} else {
			g = max(g, v)
		}
	}
	return g, any
}

// ResumeRerun prepares to re-run an uncommitted batch N: it runs with exactly
// offsets/N.batchWatermarkMs as eviction watermark and offsets/N-1's as late watermark (WM-E5).
func (w *WatermarkTracker) ResumeRerun(prevBatchWatermarkMs, batchWatermarkMs int64) error {
	if prevBatchWatermarkMs < 0 || batchWatermarkMs < prevBatchWatermarkMs {
		return fmt.Errorf("%w: restored watermarks %d, %d are not monotonic from 0", ErrBadWatermark, prevBatchWatermarkMs, batchWatermarkMs)
	}
	w.prev, w.cur = prevBatchWatermarkMs, batchWatermarkMs
	w.restoreNodes(batchWatermarkMs)
	return nil
}

// ResumeAfterCommit prepares batch N+1 after commits/N: its eviction watermark is
// max(offsets/N.batchWatermarkMs, commits/N.nextBatchWatermarkMs) and its late watermark
// offsets/N.batchWatermarkMs (WM-E5).
func (w *WatermarkTracker) ResumeAfterCommit(offsetsBatchWatermarkMs, nextBatchWatermarkMs int64) error {
	if offsetsBatchWatermarkMs < 0 || nextBatchWatermarkMs < 0 {
		return fmt.Errorf("%w: restored watermarks %d, %d are negative", ErrBadWatermark, offsetsBatchWatermarkMs, nextBatchWatermarkMs)
	}
	w.prev, w.cur = offsetsBatchWatermarkMs, max(offsetsBatchWatermarkMs, nextBatchWatermarkMs)
	w.restoreNodes(w.cur)
	return nil
}

// restoreNodes seeds node values from the global, as Spark does on restart (per-node values
// are not persisted): with the global as floor nothing can move the watermark backwards.
func (w *WatermarkTracker) restoreNodes(global int64) {
	for i := range w.values {
		w.values[i] = global
	}
	w.clockStarted = false
}
