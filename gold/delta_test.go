package gold

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/medallion-lake/medallion/pq"
)

// TestDeltaReplayEqualsSnapshot runs random batches (out-of-order times, late rows, several
// keys, evictions) and checks, after every batch, that the first snapshot plus every delta
// so far replays to the live operator's snapshot, byte for byte, in every output mode, for
// tumbling and sliding windows and with sketches.
func TestDeltaReplayEqualsSnapshot(t *testing.T) {
	tumbling, _ := Tumbling(5 * minute)
	sliding, _ := NewWindowSpec(10*minute, 5*minute, 0)
	aggs := []AggSpec{{Fn: Count, Column: -1}, {Fn: Sum, Column: 0}, {Fn: Min, Column: 0},
		{Fn: ApproxCountDistinct, Column: 0}, {Fn: ApproxPercentile, Column: 0, Percentiles: []float64{0.5}}}
	for _, mode := range []Mode{Append, Update, Complete} {
		for name, w := range map[string]WindowSpec{"tumbling": tumbling, "sliding": sliding} {
			cfg := AggConfig{Window: w, Mode: mode, NumKeys: 1, Aggs: aggs}
			live := mustAgg(t, cfg)
			base, err := live.AppendSnapshot(nil)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(11, uint64(mode)))
			var deltas [][]byte
			late, now := int64(0), int64(60*minute)
			for batch := range 40 {
				in := &Input{Columns: []Column{{}}}
				for range 1 + rng.IntN(60) {
					in.EventTime = append(in.EventTime, now-rng.Int64N(20*minute))
					in.Keys.Append(pq.AppendKeyString(nil, "k"+strconv.Itoa(rng.IntN(5))))
					in.Columns[0].Float64 = append(in.Columns[0].Float64, float64(rng.IntN(100)))
				}
				evict := now/1000 - 12*minute/1000
				if _, err := live.ProcessBatch(in, late, max(evict, late)); err != nil {
					t.Fatal(err)
				}
				d, err := live.AppendDelta(nil)
				if err != nil {
					t.Fatal(err)
				}
				deltas = append(deltas, d)
				late, now = max(evict, late), now+int64(rng.IntN(4))*minute

				replayed, err := RestoreAggregation(cfg, base)
				if err != nil {
					t.Fatal(err)
				}
				for k, d := range deltas {
					if err := replayed.ApplyDelta(d); err != nil {
						t.Fatalf("%s %s batch %d: delta %d: %v", mode, name, batch, k, err)
					}
				}
				want, _ := live.AppendSnapshot(nil)
				got, _ := replayed.AppendSnapshot(nil)
				if !bytes.Equal(got, want) {
					t.Fatalf("%s %s batch %d: snapshot + %d deltas differs from the live state (%d vs %d bytes)", mode, name, batch, len(deltas), len(got), len(want))
				}
			}
		}
	}
}

func TestDeltaRejects(t *testing.T) {
	w, _ := Tumbling(5 * minute)
	cfg := AggConfig{Window: w, Mode: Append, NumKeys: 1, Aggs: []AggSpec{{Fn: Count, Column: -1}}}
	a := mustAgg(t, cfg)
	in := &Input{EventTime: []int64{minute}, Columns: []Column{{Float64: []float64{1}}}}
	in.Keys.Append(pq.AppendKeyString(nil, "k"))
	if _, err := a.ProcessBatch(in, 0, 0); err != nil {
		t.Fatal(err)
	}
	d, err := a.AppendDelta(nil)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(d)
	bad[len(bad)/2] ^= 0xFF
	other := mustAgg(t, AggConfig{Window: w, Mode: Update, NumKeys: 1, Aggs: []AggSpec{{Fn: Count, Column: -1}}})
	for name, tc := range map[string]struct {
		a *Aggregation
		b []byte
	}{"corrupt": {mustAgg(t, cfg), bad}, "short": {mustAgg(t, cfg), d[:5]}, "other config": {other, d}, "a snapshot": {mustAgg(t, cfg), func() []byte { s, _ := a.AppendSnapshot(nil); return s }()}} {
		if err := tc.a.ApplyDelta(tc.b); !errors.Is(err, ErrBadState) {
			t.Errorf("%s: %v", name, err)
		}
	}
	sess := mustAgg(t, AggConfig{Session: &SessionSpec{Gap: minute}, Mode: Append, NumKeys: 1, Aggs: []AggSpec{{Fn: Count, Column: -1}}})
	if _, err := sess.AppendDelta(nil); err == nil || sess.SupportsDelta() {
		t.Error("session windows wrote a delta")
	}
}
