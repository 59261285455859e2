package gold

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// TestStateBufferSizedOnce: a delta or snapshot of many groups is written into one buffer
// allocated at its size (groupSize), not grown by doubling, which copied it over and over and
// left the stream holding up to twice its size. For numeric aggregates the size is exact, up
// to the header's bound and the allocator's rounding. Values cover every varint length (negative, zero,
// large) and integer sums.
func TestStateBufferSizedOnce(t *testing.T) {
	if raceEnabled {
		t.Skip("counts allocations, which the race detector adds to; make go-test runs it without -race")
	}
	spec, _ := Tumbling(5 * minute)
	rng := rand.New(rand.NewPCG(7, 7))
	for _, tc := range []struct {
		name string
		aggs []AggSpec
		col  Column
	}{
		{"count-sum-avg", []AggSpec{{Fn: Count, Column: -1}, {Fn: Sum, Column: 0}, {Fn: Avg, Column: 0}, {Fn: Min, Column: 0}}, Column{Float64: []float64{}}},
		{"int-sum", []AggSpec{{Fn: Sum, Column: 0, Int: true}, {Fn: Max, Column: 0, Int: true}}, Column{Int64: []int64{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := mustAgg(t, AggConfig{Window: spec, Mode: Append, NumKeys: 1, Aggs: tc.aggs})
			in := &Input{Columns: []Column{tc.col}}
			for i := range 30_000 {
				in.EventTime = append(in.EventTime, rng.Int64N(3*hour)-hour)
				in.Keys.Append([]byte("k" + string(rune('a'+i%7)) + string(make([]byte, rng.IntN(200)))))
				v := rng.Int64N(1<<62) - 1<<61
				if rng.IntN(3) == 0 {
					v = rng.Int64N(100)
				}
				if tc.col.Int64 != nil {
					in.Columns[0].Int64 = append(in.Columns[0].Int64, v/4096)
				} else {
					in.Columns[0].Float64 = append(in.Columns[0].Float64, float64(v)/math.Pi)
				}
			}
			if _, err := op.ProcessBatch(in, 0, 0); err != nil {
				t.Fatal(err)
			}
			if op.NumGroups() < 100 {
				t.Fatalf("only %d groups", op.NumGroups())
			}
			for _, enc := range []struct {
				name   string
				f      func([]byte) ([]byte, error)
				allocs float64 // the buffer, plus the snapshot's key ranks, ranked ids, sort entries and slots
			}{{"delta", op.AppendDelta, 1}, {"snapshot", op.AppendSnapshot, 5}} {
				var out []byte
				allocs := testing.AllocsPerRun(3, func() {
					var err error
					if out, err = enc.f(nil); err != nil {
						t.Fatal(err)
					}
				})
				// The slack: the header's varint bounds and the allocator's rounding (pages).
				if allocs != enc.allocs || cap(out) > len(out)+len(out)/100+2*binary.MaxVarintLen64 {
					t.Errorf("%s: %v allocations (want %v), %d bytes in a buffer of %d", enc.name, allocs, enc.allocs, len(out), cap(out))
				}
			}
		})
	}
}
