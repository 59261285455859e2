package gold

import (
	"bytes"
	"errors"
	"testing"
)

// TestSnapshotRestoreContinuesIdentically stops vector WM (plus sketches and keys) after each
// batch, restores a copy from the snapshot and checks both continue with identical output and
// identical snapshots.
func TestSnapshotRestoreContinuesIdentically(t *testing.T) {
	w, _ := NewWindowSpec(10*minute, 5*minute, 0)
	cfgs := map[string]AggConfig{
		"sliding": {Window: w, Mode: Append, NumKeys: 1, Aggs: []AggSpec{
			{Fn: Count, Column: -1}, {Fn: Sum, Column: 0}, {Fn: Max, Column: 0},
			{Fn: ApproxCountDistinct, Column: 0}, {Fn: ApproxPercentile, Column: 0, Percentiles: []float64{0.5}},
		}},
		"session": {Session: &SessionSpec{Gap: 3 * minute}, Mode: Append, NumKeys: 1, Aggs: []AggSpec{{Fn: Count, Column: -1}, {Fn: Avg, Column: 0}}},
	}
	for name, cfg := range cfgs {
		t.Run(name, func(t *testing.T) {
			for stopAfter := 0; stopAfter < len(wmBatches); stopAfter++ {
				a := mustAgg(t, cfg)
				var b *Aggregation
				late := int64(0)
				for i, times := range wmBatches {
					in := &Input{EventTime: times, Columns: []Column{{Float64: make([]float64, len(times))}}}
					for j := range times {
						in.Keys.Append([]byte{byte('k' + j%2)})
						in.Columns[0].Float64[j] = float64(i*10 + j)
					}
					evict := late + int64(i)*60_000 + msAt(12, 0)
					ra, err := a.ProcessBatch(in, late, evict)
					if err != nil {
						t.Fatal(err)
					}
					gotA := rowsDump(t, ra.Rows)
					if b != nil {
						rb, err := b.ProcessBatch(in, late, evict)
						if err != nil {
							t.Fatal(err)
						}
						if gotB := rowsDump(t, rb.Rows); !bytes.Equal(gotA, gotB) {
							t.Fatalf("batch %d: restored operator emitted different rows", i)
						}
						sa, _ := a.AppendSnapshot(nil)
						sb, _ := b.AppendSnapshot(nil)
						if !bytes.Equal(sa, sb) {
							t.Fatalf("batch %d: snapshots differ", i)
						}
					}
					late = evict
					if i == stopAfter {
						snap, err := a.AppendSnapshot(nil)
						if err != nil {
							t.Fatal(err)
						}
						if b, err = RestoreAggregation(cfg, snap); err != nil {
							t.Fatal(err)
						}
						again, _ := b.AppendSnapshot(nil)
						if !bytes.Equal(snap, again) {
							t.Fatal("restore then snapshot changed the bytes")
						}
					}
				}
			}
		})
	}
}

func rowsDump(t *testing.T, rows []OutRow) []byte {
	var out []byte
	for _, r := range rows {
		out = append(out, r.Window.String()...)
		out = append(out, r.Key...)
		for _, v := range r.Aggs {
			var err error
			if out, err = v.AppendBinary(out); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

func TestRestoreRejects(t *testing.T) {
	cfg := countCfg(Append)
	a := mustAgg(t, cfg)
	if _, err := a.ProcessBatch(&Input{EventTime: []int64{at(12, 7)}}, 0, 0); err != nil {
		t.Fatal(err)
	}
	snap, _ := a.AppendSnapshot(nil)
	flipped := bytes.Clone(snap)
	flipped[len(flipped)/2] ^= 1
	other := countCfg(Update)
	for name, tc := range map[string]struct {
		cfg AggConfig
		b   []byte
	}{
		"corrupt":   {cfg, flipped},
		"truncated": {cfg, snap[:len(snap)-1]},
		"empty":     {cfg, nil},
		"other cfg": {other, snap},
	} {
		if _, err := RestoreAggregation(tc.cfg, tc.b); !errors.Is(err, ErrBadState) {
			t.Errorf("%s: err = %v, want ErrBadState", name, err)
		}
	}
}

func FuzzRestoreAggregation(f *testing.F) {
	a, _ := NewAggregation(countCfg(Append))
	a.ProcessBatch(&Input{EventTime: []int64{at(12, 7), at(12, 14)}}, 0, 0)
	snap, _ := a.AppendSnapshot(nil)
	f.Add(snap)
	f.Add([]byte(snapshotMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := RestoreAggregation(countCfg(Append), b); err != nil && !errors.Is(err, ErrBadState) {
			t.Fatalf("error %v is not ErrBadState", err)
		}
	})
}
