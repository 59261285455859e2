package gold

import (
	"flag"
	"runtime"
	"strconv"
	"testing"

	"github.com/medallion-lake/medallion/pq"
)

// stateAggs are the aggregate sets the state-size test and benchmark measure.
var stateAggs = []struct {
	name string
	aggs []AggSpec
}{
	{"count", []AggSpec{{Fn: Count, Column: -1}}},
	{"sum", []AggSpec{{Fn: Sum, Column: 0}}},
	{"avg", []AggSpec{{Fn: Avg, Column: 0}}},
	{"count-sum-avg", []AggSpec{{Fn: Count, Column: -1}, {Fn: Sum, Column: 0}, {Fn: Avg, Column: 0}}},
	{"approx_count_distinct", []AggSpec{{Fn: ApproxCountDistinct, Column: 0}}},
	{"approx_percentile", []AggSpec{{Fn: ApproxPercentile, Column: 0, Percentiles: []float64{0.5, 0.9}}}},
}

// stateWindows is how many 5-minute windows each key has open: a stream with a 10-minute
// watermark delay keeps about three.
const stateWindows = 3

// stateInput is one event per (key, window) for keys keys over stateWindows tumbling
// windows, with a few distinct values per key so that sketches hold more than one.
func stateInput(keys int) *Input {
	in := &Input{Columns: []Column{{Float64: make([]float64, 0, keys*stateWindows)}}}
	var kb []byte
	for w := range stateWindows {
		for k := range keys {
			in.EventTime = append(in.EventTime, int64(w)*5*minute+int64(k%300)*second)
			kb = pq.AppendKeyString(kb[:0], "device-"+strconv.Itoa(k))
			in.Keys.Append(kb)
			in.Columns[0].Float64 = append(in.Columns[0].Float64, float64(k%97+w))
		}
	}
	return in
}

// heapAfterGC is the live heap, measured after a full collection.
func heapAfterGC() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// buildState feeds in to a new operator with aggs and returns it with the heap it grew by.
func buildState(t testing.TB, aggs []AggSpec, in *Input) (*Aggregation, int64) {
	spec, _ := Tumbling(5 * minute)
	before := heapAfterGC()
	op := mustAgg(t, AggConfig{Window: spec, Mode: Append, NumKeys: 1, Aggs: aggs})
	if _, err := op.ProcessBatch(in, 0, 0); err != nil {
		t.Fatal(err)
	}
	// The batch's own buffers are not state: drop them before measuring.
	op.pairSlot, op.pairRow, op.touched, op.winBuf = nil, nil, nil, nil
	op.res, op.emitSlots, op.rowOrder, op.keyIDsBuf, op.aggBuf = Result{}, nil, nil, nil, nil
	grown := heapAfterGC() - before
	return op, grown
}

// TestMemoryUsedBytesMatchesHeap checks the state report against what the Go runtime says the
// state took: the heap's growth from building it, measured independently of the operator's
// own accounting. The report counts capacities, so it may fall short of the heap only by the
// allocator's rounding of small objects.
func TestMemoryUsedBytesMatchesHeap(t *testing.T) {
	in := stateInput(20_000)
	for _, tc := range stateAggs {
		t.Run(tc.name, func(t *testing.T) {
			op, grown := buildState(t, tc.aggs, in)
			if op.NumGroups() != 20_000*stateWindows {
				t.Fatalf("%d groups, want %d", op.NumGroups(), 20_000*stateWindows)
			}
			got := op.MemoryUsedBytes()
			ratio := float64(got) / float64(grown)
			t.Logf("memoryUsedBytes %d, heap grew %d (%.2f), %.1f bytes/group", got, grown, ratio, float64(got)/float64(op.NumGroups()))
			if ratio < 0.8 || ratio > 1.1 {
				t.Fatalf("memoryUsedBytes %d is %.2fx the heap the state took (%d)", got, ratio, grown)
			}
			runtime.KeepAlive(op)
		})
	}
}

// TestMemoryUsedBytesFollowsEviction checks the report follows eviction: after the watermark
// passes every window the sketches are gone from it, and what is left is the tables' capacity,
// which the operator keeps for the next windows, plus its free lists (4 bytes a slot and a
// key, with append's slack).
func TestMemoryUsedBytesFollowsEviction(t *testing.T) {
	for _, tc := range stateAggs {
		t.Run(tc.name, func(t *testing.T) {
			op, _ := buildState(t, tc.aggs, stateInput(2_000))
			full, groups, keys := op.MemoryUsedBytes(), int64(op.NumGroups()), int64(op.keyIDs.Len())
			var sketches int64
			for _, ac := range op.accs {
				sketches += ac.sketchTotal
			}
			if _, err := op.ProcessBatch(&Input{Columns: []Column{{Float64: []float64{}}}}, 0, stateWindows*5*minute/1000); err != nil {
				t.Fatal(err)
			}
			if op.NumGroups() != 0 {
				t.Fatalf("%d groups left after the watermark passed every window", op.NumGroups())
			}
			after := op.MemoryUsedBytes()
			for _, ac := range op.accs {
				if ac.sketchTotal != 0 {
					t.Fatalf("sketch bytes %d left after every group left", ac.sketchTotal)
				}
			}
			if after > full-sketches+8*(groups+keys) || (sketches > 0 && full-after < sketches/2) {
				t.Fatalf("memoryUsedBytes %d -> %d after eviction (sketches held %d)", full, after, sketches)
			}
		})
	}
}

var sketchMillion = flag.Bool("gold.sketch-1m", false, "BenchmarkStateBytes: sketches at 1M keys too (3M sketches, over 1 GB)")

// BenchmarkStateBytes reports what an open group costs in state: memoryUsedBytes per group
// (bytes/group) and, measured independently, the heap the state took per group
// (heap-bytes/group), for numeric aggregates and sketches at 1k, 100k and 1M keys with three
// open windows each (sketches at 1M keys with -gold.sketch-1m). Each iteration builds the
// state afresh.
func BenchmarkStateBytes(b *testing.B) {
	for _, keys := range []int{1_000, 100_000, 1_000_000} {
		in := stateInput(keys)
		for _, tc := range stateAggs {
			if keys == 1_000_000 && tc.aggs[0].Fn >= ApproxCountDistinct && !*sketchMillion {
				continue
			}
			b.Run(tc.name+"/"+strconv.Itoa(keys)+"keys", func(b *testing.B) {
				var op *Aggregation
				var grown int64
				b.ReportAllocs()
				for b.Loop() {
					op, grown = buildState(b, tc.aggs, in)
				}
				g := float64(op.NumGroups())
				b.ReportMetric(float64(op.MemoryUsedBytes())/g, "bytes/group")
				b.ReportMetric(float64(grown)/g, "heap-bytes/group")
			})
		}
	}
}
