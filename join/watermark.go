package join

import (
	"encoding/binary"
	"fmt"
)

// Watermarks is the global event-time watermark of a join's two inputs (spec §2): each side
// with a watermark is a node whose value is max(its batch's max event time - delay) over the
// batches, a node never fed counts as 0, and the global is the min of the nodes (Spark's
// default multipleWatermarkPolicy), starting at 0 and never decreasing. A side without a
// watermark is no node. Unlike Spark, the node values are part of the persisted state
// (AppendBinary), so a restarted run behaves like a query that never stopped (spec §9.3).
//
// A host running other watermarked sources in the same query combines their nodes the same
// way; this type covers a query that is just the join.
type Watermarks struct {
	typ       Type
	has       [2]bool
	delayMs   [2]int64
	value     [2]int64
	batchMax  [2]int64
	batchSeen [2]bool
	late      int64
	evict     int64
}

// NewWatermarks returns the watermarks of spec's inputs, with each side's delay in ms (ignored
// for a side without a watermark).
func NewWatermarks(spec *Spec, leftDelayMs, rightDelayMs int64) (*Watermarks, error) {
	if leftDelayMs < 0 || rightDelayMs < 0 {
		return nil, fmt.Errorf("%w: negative watermark delay (%d ms, %d ms)", ErrBadSpec, leftDelayMs, rightDelayMs)
	}
	return &Watermarks{
		typ:     spec.Type,
		has:     [2]bool{spec.LeftWatermark, spec.RightWatermark},
		delayMs: [2]int64{leftDelayMs, rightDelayMs},
	}, nil
}

// Batch is the current batch's late watermark (the previous batch's eviction watermark) and
// eviction watermark.
func (w *Watermarks) Batch() (lateMs, evictMs int64) { return w.late, w.evict }

// Observe feeds a side's event times (µs) of the current batch, all of them, late rows too
// (spec §2.1).
func (w *Watermarks) Observe(side Side, eventTimeUs []int64) {
	for _, t := range eventTimeUs {
		ms := t / 1000
		if t%1000 != 0 && t < 0 {
			ms-- // floor, for times before 1970
		}
		if !w.batchSeen[side] || ms > w.batchMax[side] {
			w.batchMax[side], w.batchSeen[side] = ms, true
		}
	}
}

// ObserveInput feeds the rows of a side's batch that reach Spark's watermark node: all of them,
// late rows too, except rows with a null key on a side the join does not preserve. Spark infers
// `key IS NOT NULL` for such a side and pushes that filter below withWatermark (the physical plan
// of an inner join reads `Filter isnotnull(k)` under `EventTimeWatermark`), so those rows never
// move the watermark; on a preserved side (outer joins) they do. Verified against PySpark 3.5.8
// by tests/interop/test_join_differential.py.
func (w *Watermarks) ObserveInput(side Side, in *Input) {
	if in == nil {
		return
	}
	if in.KeyNull == nil || w.typ.preserves(side) {
		w.Observe(side, in.EventTime)
		return
	}
	for i, t := range in.EventTime {
		if !in.KeyNull[i] {
			w.Observe(side, []int64{t})
		}
	}
}

// EndBatch closes the batch and returns the next batch's eviction watermark
// (nextBatchWatermarkMs); the next batch's late watermark is this batch's eviction watermark.
func (w *Watermarks) EndBatch() int64 {
	next := w.evict
	any := false
	global := int64(0)
	for s := range w.has {
		if !w.has[s] {
			continue
		}
		if w.batchSeen[s] {
			w.value[s] = max(w.value[s], w.batchMax[s]-w.delayMs[s])
		}
		if !any || w.value[s] < global {
			global, any = w.value[s], true
		}
	}
	if any && global > next {
		next = global
	}
	w.late, w.evict = w.evict, next
	w.batchSeen = [2]bool{}
	return next
}

// Node is a side's current node value (ms).
func (w *Watermarks) Node(side Side) int64 { return w.value[side] }

// AppendBinary appends the persisted form: the node values and the current batch's two
// watermarks.
func (w *Watermarks) AppendBinary(dst []byte) ([]byte, error) {
	for _, v := range []int64{w.value[0], w.value[1], w.late, w.evict} {
		dst = binary.AppendVarint(dst, v)
	}
	return dst, nil
}

// RestoreWatermarks rebuilds Watermarks from AppendBinary bytes.
func RestoreWatermarks(spec *Spec, leftDelayMs, rightDelayMs int64, b []byte) (*Watermarks, error) {
	w, err := NewWatermarks(spec, leftDelayMs, rightDelayMs)
	if err != nil {
		return nil, err
	}
	var v [4]int64
	for i := range v {
		x, n := binary.Varint(b)
		if n <= 0 {
			return nil, fmt.Errorf("%w: watermarks field %d", ErrBadState, i)
		}
		v[i], b = x, b[n:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes after the watermarks", ErrBadState, len(b))
	}
	if v[0] < 0 || v[1] < 0 || v[2] < 0 || v[3] < v[2] {
		return nil, fmt.Errorf("%w: watermarks %v are not monotonic from 0", ErrBadState, v)
	}
	w.value, w.late, w.evict = [2]int64{v[0], v[1]}, v[2], v[3]
	return w, nil
}
