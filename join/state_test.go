package join

import (
	"errors"
	"testing"
)

// TestStateBoundedByWatermarks runs a long steady stream (100 rows a side per second of event
// time, delays 5s, `r.t BETWEEN l.t AND l.t + 10s`): the state holds only the rows the state
// watermarks have not reached, about (delay + range + a batch) seconds of each side, and its
// memory stops growing.
func TestStateBoundedByWatermarks(t *testing.T) {
	spec := Spec{Type: FullOuter, NumKeys: 1, Condition: Between(0, 10*sec), LeftWatermark: true, RightWatermark: true}
	op, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	wm, _ := NewWatermarks(&spec, 5000, 5000)
	const perSec = 100
	var bytesAt200 int64
	id := 0
	for b := 0; b < 1000; b++ {
		var evs []event
		for i := 0; i < perSec; i++ {
			tt := int64(b)*sec + int64(i)*sec/perSec
			evs = append(evs, event{side: Left, id: id, key: id % 500, t: tt}, event{side: Right, id: id + 1, key: (id + 7) % 500, t: tt})
			id += 2
		}
		l, r := inputsOf(evs)
		wm.Observe(Left, l.EventTime)
		wm.Observe(Right, r.EventTime)
		late, evict := wm.Batch()
		if _, err := op.ProcessBatch(l, r, late, evict); err != nil {
			t.Fatal(err)
		}
		next := wm.EndBatch()
		if spec.ShouldRunNoDataBatch(next, evict) {
			late, evict = wm.Batch()
			if _, err := op.ProcessBatch(nil, nil, late, evict); err != nil {
				t.Fatal(err)
			}
			wm.EndBatch()
		}
		// Left keeps t > W - 10s - 1ms with W = now - 5s: 15 s and a batch; right t > W - 1ms.
		if b >= 20 {
			if n := op.StateRows(Left); n > perSec*(5+10+2) {
				t.Fatalf("batch %d: %d left rows in state, want at most %d", b, n, perSec*(5+10+2))
			}
			if n := op.StateRows(Right); n > perSec*(5+2) {
				t.Fatalf("batch %d: %d right rows in state, want at most %d", b, n, perSec*(5+2))
			}
		}
		if b == 200 {
			bytesAt200 = op.StateBytes(Left) + op.StateBytes(Right)
		}
	}
	if got := op.StateBytes(Left) + op.StateBytes(Right); got > 2*bytesAt200 {
		t.Fatalf("state memory grew from %d to %d bytes with a steady state size", bytesAt200, got)
	}
}

func TestWatermarksPersist(t *testing.T) {
	spec := Spec{Type: Inner, NumKeys: 1, Condition: Between(0, sec), LeftWatermark: true, RightWatermark: true}
	w, _ := NewWatermarks(&spec, 1000, 2000)
	w.Observe(Left, []int64{10 * sec, 4 * sec})
	w.Observe(Right, []int64{-1500}) // floor: -2 ms
	if next := w.EndBatch(); next != 0 {
		t.Fatalf("first batch: %d, want 0 (right node at 0)", next)
	}
	w.Observe(Right, []int64{30 * sec})
	if next := w.EndBatch(); next != 9000 {
		t.Fatalf("second batch: %d, want min(9000, 28000)", next)
	}
	b, _ := w.AppendBinary(nil)
	r, err := RestoreWatermarks(&spec, 1000, 2000, b)
	if err != nil {
		t.Fatal(err)
	}
	if l, e := r.Batch(); l != 0 || e != 9000 || r.Node(Left) != 9000 || r.Node(Right) != 28000 {
		t.Fatalf("restored %d %d nodes %d %d", l, e, r.Node(Left), r.Node(Right))
	}
	for _, bad := range [][]byte{nil, b[:len(b)-1], append(b, 0), {2, 2, 4, 2}} {
		if _, err := RestoreWatermarks(&spec, 1000, 2000, bad); !errors.Is(err, ErrBadState) {
			t.Errorf("%v: %v", bad, err)
		}
	}
	if _, err := NewWatermarks(&spec, -1, 0); !errors.Is(err, ErrBadSpec) {
		t.Errorf("negative delay: %v", err)
	}
}
