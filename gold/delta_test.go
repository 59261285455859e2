package gold

import (
	"bytes"
	"errors"
	"math"
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

// chunkWriter collects what it is given and checks that no write exceeds max bytes by much
// (the delta is written a chunk at a time, not whole).
type chunkWriter struct {
	bytes.Buffer
	writes, largest int
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	w.writes++
	w.largest = max(w.largest, len(p))
	return w.Buffer.Write(p)
}

// TestWriteDeltaEqualsAppendDelta: the streamed delta (WriteDelta, sized by DeltaSize) is
// AppendDelta's bytes exactly, batch after batch, for float sums (exact sums, of every width),
// int sums, min and avg, in deltas small and larger than a chunk, written in several writes;
// and an aggregation with a sketch is not streamed.
func TestWriteDeltaEqualsAppendDelta(t *testing.T) {
	sliding, _ := NewWindowSpec(10*minute, 5*minute, 0)
	aggs := []AggSpec{{Fn: Count, Column: -1}, {Fn: Sum, Column: 0}, {Fn: Avg, Column: 0}, {Fn: Min, Column: 1, Int: true}, {Fn: Sum, Column: 1, Int: true}}
	op := mustAgg(t, AggConfig{Window: sliding, Mode: Append, NumKeys: 1, Aggs: aggs})
	rng := rand.New(rand.NewPCG(21, 22))
	chunked := false
	for batch := range 6 {
		in := &Input{Columns: []Column{{}, {}}}
		rows := 50 + batch*batch*1000
		for range rows {
			in.EventTime = append(in.EventTime, int64(batch)*20*minute+rng.Int64N(30*minute))
			in.Keys.Append(pq.AppendKeyString(nil, "device-"+strconv.Itoa(rng.IntN(20_000))))
			f := float64(rng.IntN(10_000)) / 100
			if rng.IntN(50) == 0 {
				f *= 1e300 // exact sums wider than a double
			}
			in.Columns[0].Float64 = append(in.Columns[0].Float64, f)
			in.Columns[1].Int64 = append(in.Columns[1].Int64, rng.Int64N(1<<40)-1<<39)
		}
		if _, err := op.ProcessBatch(in, 0, int64(batch)*20*minute/1000); err != nil {
			t.Fatal(err)
		}
		want, err := op.AppendDelta([]byte("prefix"))
		if err != nil {
			t.Fatal(err)
		}
		want = want[len("prefix"):]
		size, ok := op.DeltaSize()
		if !ok || size != len(want) {
			t.Fatalf("batch %d: DeltaSize %d, %v; AppendDelta wrote %d bytes", batch, size, ok, len(want))
		}
		var w chunkWriter
		if err := op.WriteDelta(&w, size); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(w.Bytes(), want) {
			t.Fatalf("batch %d: WriteDelta's %d bytes differ from AppendDelta's %d", batch, w.Len(), len(want))
		}
		if w.largest > deltaChunk+1024 {
			t.Fatalf("batch %d: a write of %d bytes, chunks are %d", batch, w.largest, deltaChunk)
		}
		chunked = chunked || w.writes > 2
		if err := op.WriteDelta(&chunkWriter{}, size+1); err == nil {
			t.Fatalf("batch %d: a wrong size was not an error", batch)
		}
	}
	if !chunked {
		t.Fatal("no delta took more than one chunk: the test compares too little")
	}
	sk := mustAgg(t, AggConfig{Window: sliding, Mode: Append, NumKeys: 1, Aggs: []AggSpec{{Fn: ApproxCountDistinct, Column: 0}}})
	if _, ok := sk.DeltaSize(); ok {
		t.Fatal("a sketch's delta has a size before it is encoded")
	}
}

// TestAccAppendBinaryMatchesAggValue: the state's encoder, which reads each group's cells
// straight from the pages, writes what AggValue.AppendBinary writes for the group's value, for
// every aggregate function and value kind: empty groups (only nulls), NaN, infinities, -0,
// subnormals, exact sums wider than a double, integers near the int64 range, sketches.
func TestAccAppendBinaryMatchesAggValue(t *testing.T) {
	tumbling, _ := Tumbling(5 * minute)
	var aggs []AggSpec
	for _, fn := range []Func{Count, Sum, Avg, Min, Max} {
		aggs = append(aggs, AggSpec{Fn: fn, Column: 0}, AggSpec{Fn: fn, Column: 1, Int: true})
	}
	aggs = append(aggs, AggSpec{Fn: Count, Column: -1}, AggSpec{Fn: ApproxCountDistinct, Column: 0},
		AggSpec{Fn: ApproxPercentile, Column: 0, Percentiles: []float64{0.5}})
	op := mustAgg(t, AggConfig{Window: tumbling, Mode: Append, NumKeys: 1, Aggs: aggs})
	floats := []float64{0, math.Copysign(0, -1), 1.5, -2.25, 1e300, -1e300, 5e-324, math.Inf(1),
		math.Inf(-1), math.NaN(), 0.1, 1e-310}
	ints := []int64{0, 1, -1, math.MaxInt64 / 2, math.MinInt64 / 2, 42}
	rng := rand.New(rand.NewPCG(35, 1))
	in := &Input{Columns: []Column{{Valid: []bool{}}, {Valid: []bool{}}}}
	for i := range 4000 {
		key := rng.IntN(300)
		in.Keys.Append(pq.AppendKeyString(nil, "k"+strconv.Itoa(key)))
		in.EventTime = append(in.EventTime, int64(rng.IntN(3))*5*minute+rng.Int64N(5*minute))
		// Keys 0-19 see only nulls: their sums, averages, minima and maxima are empty.
		valid := key >= 20 && rng.IntN(10) > 0
		f := float64(rng.IntN(1000)) / 8
		if key%7 == 0 || i%97 == 0 {
			f = floats[rng.IntN(len(floats))]
		}
		in.Columns[0].Float64 = append(in.Columns[0].Float64, f)
		in.Columns[0].Valid = append(in.Columns[0].Valid, valid)
		in.Columns[1].Int64 = append(in.Columns[1].Int64, ints[rng.IntN(len(ints))]+rng.Int64N(100))
		in.Columns[1].Valid = append(in.Columns[1].Valid, valid)
	}
	if _, err := op.ProcessBatch(in, 0, 0); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for s := range op.groups {
		if !op.groups[s].live() {
			continue
		}
		for j, ac := range op.accs {
			v := ac.value(int32(s), false)
			want, err := v.AppendBinary(nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ac.appendBinary([]byte("x"), int32(s))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got[1:], want) {
				t.Fatalf("group %d, aggregate %d (%s, int %v): %x, AggValue encodes %x", s, j, ac.spec.Fn, ac.spec.Int, got[1:], want)
			}
			checked++
		}
	}
	if checked < 500*len(aggs) {
		t.Fatalf("only %d values compared", checked)
	}
}
