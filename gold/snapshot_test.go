package gold

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
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

// TestSnapshotOrderByWindowAndKey checks the order snapshots store groups in (snapshotOrder,
// which sorts by key rank) against a sort on the keys' bytes, on slots reused in a random
// order by evictions and on keys that are prefixes of one another, for time and session
// windows, with a key table of the aggregation's own and one shared by two aggregations.
func TestSnapshotOrderByWindowAndKey(t *testing.T) {
	w, _ := NewWindowSpec(10*minute, 5*minute, 0)
	cfgs := map[string]AggConfig{
		"sliding": {Window: w, Mode: Append, NumKeys: 1, Aggs: []AggSpec{{Fn: Count, Column: -1}}},
		"session": {Session: &SessionSpec{Gap: 3 * minute}, Mode: Append, NumKeys: 1, Aggs: []AggSpec{{Fn: Count, Column: -1}}},
	}
	keys := []string{"", "a", "ab", "abc", "b", "ba", "a\x00", "zz", "device-10", "device-9", "device-100"}
	for name, cfg := range cfgs {
		for _, shared := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s shared=%v", name, shared), func(t *testing.T) {
				a, other := mustAgg(t, cfg), mustAgg(t, cfg)
				var ks *KeyShare
				if shared {
					var err error
					if ks, err = ShareKeys([]*Aggregation{a, other}); err != nil {
						t.Skip(err)
					}
				}
				rng := rand.New(rand.NewPCG(7, 7))
				evict := int64(0)
				for batch := range 6 {
					in := &Input{}
					for range 200 {
						in.EventTime = append(in.EventTime, int64(batch)*20*minute+rng.Int64N(40*minute))
						in.Keys.Append([]byte(keys[rng.IntN(len(keys))]))
					}
					if ks != nil {
						in.KeyIDs, in.KeyHashes = ks.Intern(&in.Keys)
					}
					if _, err := a.ProcessBatch(in, evict, evict); err != nil {
						t.Fatal(err)
					}
					if ks != nil {
						ks.Settle()
					}
					evict = int64(batch) * 20 * minute / 1000 // ms
					checkSnapshotOrder(t, a)
				}
			})
		}
	}
}

func checkSnapshotOrder(t *testing.T, a *Aggregation) {
	t.Helper()
	type group struct {
		start, end int64
		key        string
	}
	var want []group
	for s := range a.groups {
		if a.groups[s].live() {
			w := a.window(int32(s))
			want = append(want, group{w.Start, w.End, a.key(a.groups[s].key)})
		}
	}
	slices.SortFunc(want, func(x, y group) int {
		return cmp.Or(cmp.Compare(x.start, y.start), cmp.Compare(x.end, y.end), strings.Compare(x.key, y.key))
	})
	slots := a.snapshotOrder()
	if len(slots) != len(want) || len(want) == 0 {
		t.Fatalf("%d slots in the snapshot order, %d live groups", len(slots), len(want))
	}
	for i, s := range slots {
		w := a.window(s)
		if got := (group{w.Start, w.End, a.key(a.groups[s].key)}); got != want[i] {
			t.Fatalf("group %d of the snapshot is %+v, want %+v", i, got, want[i])
		}
	}
}
