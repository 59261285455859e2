package gold

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/medallion-lake/medallion/pq"
)

const benchBatch = 1 << 16

func BenchmarkWindowAssign(b *testing.B) {
	for _, tc := range []struct {
		name              string
		size, slide, strt int64
	}{
		{"tumbling", 5 * minute, 5 * minute, 0},
		{"sliding-10m-5m", 10 * minute, 5 * minute, 0},
		{"sliding-12m-5m-2m", 12 * minute, 5 * minute, 2 * minute},
	} {
		b.Run(tc.name, func(b *testing.B) {
			spec, _ := NewWindowSpec(tc.size, tc.slide, tc.strt)
			times := benchTimes(benchBatch)
			buf := make([]Window, 0, 4)
			n := 0
			b.ReportAllocs()
			b.ResetTimer()
			c0 := cpuNanos()
			for i := 0; i < b.N; i++ {
				for _, t := range times {
					buf = spec.Assign(buf[:0], t)
					n += len(buf)
				}
			}
			reportCPU(b, c0, b.N*benchBatch)
			sink = n
		})
	}
}

var sink int

// benchTimes spreads events over 15 minutes: with a 10-minute watermark and 5-minute windows
// that is the span of open windows a stream keeps in steady state.
func benchTimes(n int) []int64 {
	rng := rand.New(rand.NewPCG(7, 7))
	ts := make([]int64, n)
	for i := range ts {
		ts[i] = at(12, 0) + rng.Int64N(15*minute)
	}
	return ts
}

// BenchmarkAggregate is window assignment + hash aggregation (count, sum, avg) of a 64k-event
// batch over 1k or 100k keys, in steady state (every group already in state).
func BenchmarkAggregate(b *testing.B) {
	for _, keys := range []int{1_000, 100_000} {
		for _, win := range []string{"tumbling", "sliding"} {
			b.Run(strconv.Itoa(keys)+"keys-"+win, func(b *testing.B) {
				spec, _ := Tumbling(5 * minute)
				if win == "sliding" {
					spec, _ = NewWindowSpec(10*minute, 5*minute, 0)
				}
				op := mustAgg(b, AggConfig{Window: spec, Mode: Append, NumKeys: 1, Aggs: []AggSpec{
					{Fn: Count, Column: -1}, {Fn: Sum, Column: 0}, {Fn: Avg, Column: 0},
				}})
				rng := rand.New(rand.NewPCG(1, 1))
				in := &Input{EventTime: benchTimes(benchBatch), Columns: []Column{{Float64: make([]float64, benchBatch)}}}
				var kb []byte
				for i := 0; i < benchBatch; i++ {
					kb = pq.AppendKeyString(kb[:0], "user-"+strconv.Itoa(rng.IntN(keys)))
					in.Keys.Append(kb)
					in.Columns[0].Float64[i] = float64(i % 100)
				}
				// Warm up so the measured batches run in steady state.
				for i := 0; i < 1+keys/benchBatch*4; i++ {
					if _, err := op.ProcessBatch(in, 0, 0); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				c0 := cpuNanos()
				for i := 0; i < b.N; i++ {
					if _, err := op.ProcessBatch(in, 0, 0); err != nil {
						b.Fatal(err)
					}
				}
				reportCPU(b, c0, b.N*benchBatch)
				b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds()/1e6, "wall-Mevents/s")
			})
		}
	}
}

// BenchmarkStreamAppend is the steady state of a running stream: each 64k-event batch covers
// the next 10 s of event time (in random order, up to 1 minute out of order), the watermark
// (delay 10 minutes) advances, and closed windows are emitted and evicted into gold's columns:
// through Result.Rows rendered row by row ("rows", the stream before Input.Out), or straight
// from the state ("columns", Input.Out, the stream now).
func BenchmarkStreamAppend(b *testing.B) {
	for _, keys := range []int{1_000, 100_000} {
		for _, emit := range []string{"rows", "columns"} {
			benchStreamAppend(b, keys, emit)
		}
	}
}

func benchStreamAppend(b *testing.B, keys int, emit string) {
	{
		b.Run(strconv.Itoa(keys)+"keys-"+emit, func(b *testing.B) {
			spec, _ := Tumbling(5 * minute)
			aggs := []AggSpec{{Fn: Count, Column: -1}, {Fn: Sum, Column: 0}, {Fn: Avg, Column: 0}}
			op := mustAgg(b, AggConfig{Window: spec, Mode: Append, NumKeys: 1, Aggs: aggs})
			schema := goldSchema(aggs)
			tr, _ := NewWatermarkTracker(PolicyMin, []int64{10 * 60 * 1000}, 0)
			rng := rand.New(rand.NewPCG(1, 1))
			in := &Input{EventTime: make([]int64, benchBatch), Columns: []Column{{Float64: make([]float64, benchBatch)}}}
			var kb []byte
			for i := 0; i < benchBatch; i++ {
				kb = pq.AppendKeyString(kb[:0], "user-"+strconv.Itoa(rng.IntN(keys)))
				in.Keys.Append(kb)
				in.Columns[0].Float64[i] = float64(i % 100)
			}
			offsets := make([]int64, benchBatch)
			for i := range offsets {
				offsets[i] = rng.Int64N(10*second) - rng.Int64N(minute)
			}
			base := at(12, 0)
			step := func() {
				for i, o := range offsets {
					in.EventTime[i] = base + o
				}
				base += 10 * second
				late, evict := tr.BatchWatermarks()
				tr.Observe(0, in.EventTime, nil)
				if emit == "columns" {
					gb, err := pq.NewBatch(schema)
					if err != nil {
						b.Fatal(err)
					}
					in.Out = gb
				}
				res, err := op.ProcessBatch(in, late, evict)
				if err != nil {
					b.Fatal(err)
				}
				if emit == "rows" {
					// What the stream did with the rows before Input.Out: render them as columns.
					rowsBatch(b, schema, aggs, res.Rows)
				}
				tr.EndBatch(0)
			}
			for i := 0; i < 200; i++ { // past the first evictions
				step()
			}
			b.ReportAllocs()
			b.ResetTimer()
			c0 := cpuNanos()
			for i := 0; i < b.N; i++ {
				step()
			}
			reportCPU(b, c0, b.N*benchBatch)
			b.ReportMetric(float64(op.NumGroups()), "groups")
		})
	}
}

// BenchmarkAppendSnapshot writes the full state of an aggregation holding 100k keys in three
// open 5-minute windows (300k groups): the checkpoint the stream writes after every batch.
func BenchmarkAppendSnapshot(b *testing.B) {
	spec, _ := Tumbling(5 * minute)
	op := mustAgg(b, AggConfig{Window: spec, Mode: Append, NumKeys: 1, Aggs: []AggSpec{
		{Fn: Count, Column: -1}, {Fn: Sum, Column: 0},
	}})
	const keys = 100_000
	in := &Input{Columns: []Column{{Float64: make([]float64, 0, 3*keys)}}}
	var kb []byte
	rng := rand.New(rand.NewPCG(2, 2))
	for w := range 3 {
		for k := range keys {
			in.EventTime = append(in.EventTime, int64(w)*5*minute+rng.Int64N(5*minute))
			kb = pq.AppendKeyString(kb[:0], "device-"+strconv.Itoa(k))
			in.Keys.Append(kb)
			in.Columns[0].Float64 = append(in.Columns[0].Float64, 1)
		}
	}
	if _, err := op.ProcessBatch(in, 0, 0); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var buf []byte
	for b.Loop() {
		var err error
		if buf, err = op.AppendSnapshot(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(buf))/(3*keys), "bytes/group")
}

// BenchmarkBacklogBatches is a stream's first two batches over a backlog with 100k keys, as
// the harness's stream-backlog stage runs them: a fresh sliding 10m/5m count+sum (float, so
// exact sums) aggregation takes 256k events spread over 4 hours of event time with the epoch's
// watermark (every group opens and stays: the state grows from nothing), then the next 4
// hours with the watermark the first batch left, which emits the first batch's groups into
// gold's columns and reuses their slots. Nearly every event opens a group here, so it measures
// what growing and emitting the state costs per group. "own-keys" interns the keys in the
// aggregation's own table; "shared-keys" takes them interned (KeyShare.Intern, outside the
// timing), as the stream's golds do, so it is the group look-ups and the emit alone.
func BenchmarkBacklogBatches(b *testing.B) {
	const keys, rows = 100_000, 1 << 18
	spec, _ := NewWindowSpec(10*minute, 5*minute, 0)
	aggs := []AggSpec{{Fn: Count, Column: -1}, {Fn: Sum, Column: 0}}
	schema := goldSchema(aggs)
	rng := rand.New(rand.NewPCG(3, 3))
	batch := func(from int64) *Input {
		in := &Input{EventTime: make([]int64, rows), Columns: []Column{{Float64: make([]float64, rows)}}}
		var kb []byte
		for i := range rows {
			// Fixed width, as gen writes device ids.
			kb = pq.AppendKeyString(kb[:0], fmt.Sprintf("device-%05d", rng.IntN(keys)))
			in.Keys.Append(kb)
			in.EventTime[i] = from + rng.Int64N(4*60*minute)
			in.Columns[0].Float64[i] = float64(rng.IntN(10000)) / 100
		}
		return in
	}
	first, second := batch(at(0, 0)), batch(at(4, 0))
	for _, shared := range []bool{false, true} {
		name := "own-keys"
		if shared {
			name = "shared-keys"
		}
		b.Run(name, func(b *testing.B) {
			var stateMB float64
			var cpu int64
			b.ReportAllocs()
			for b.Loop() {
				op := mustAgg(b, AggConfig{Window: spec, Mode: Append, NumKeys: 1, Aggs: aggs})
				var ks *KeyShare
				if shared {
					var err error
					if ks, err = ShareKeys([]*Aggregation{op}); err != nil {
						b.Fatal(err)
					}
				}
				tr, _ := NewWatermarkTracker(PolicyMin, []int64{10 * 60 * 1000}, 0)
				for _, in := range []*Input{first, second} {
					late, evict := tr.BatchWatermarks()
					tr.Observe(0, in.EventTime, nil)
					gb, err := pq.NewBatch(schema)
					if err != nil {
						b.Fatal(err)
					}
					in.Out = gb
					in.KeyIDs, in.KeyHashes = nil, nil
					if ks != nil {
						in.KeyIDs, in.KeyHashes = ks.Intern(&in.Keys)
					}
					c0 := cpuNanos()
					if _, err := op.ProcessBatch(in, late, evict); err != nil {
						b.Fatal(err)
					}
					cpu += cpuNanos() - c0
					if ks != nil {
						ks.Settle()
					}
					tr.EndBatch(0)
					stateMB = max(stateMB, float64(op.MemoryUsedBytes())/1e6)
				}
			}
			b.ReportMetric(float64(cpu)/float64(b.N*2*rows), "cpu-ns/event")
			b.ReportMetric(stateMB, "state-MB")
		})
	}
}

// BenchmarkEmitColumns writes the gold columns of a backlog batch's emit, as the stream's
// emit does once it has listed the evicted groups: about 500k groups of a sliding 10m/5m
// count and float sum (so an exact sum each) over 100k keys, in slot order, ordered
// (orderRows) and written into a fresh gold batch (writeColumns). The state is left as it is,
// so every iteration emits the same groups. cpu-ns/group is the CPU an emitted group costs.
func BenchmarkEmitColumns(b *testing.B) {
	const keys, rows = 100_000, 1 << 18
	spec, _ := NewWindowSpec(10*minute, 5*minute, 0)
	aggs := []AggSpec{{Fn: Count, Column: -1}, {Fn: Sum, Column: 0}}
	schema := goldSchema(aggs)
	op := mustAgg(b, AggConfig{Window: spec, Mode: Append, NumKeys: 1, Aggs: aggs})
	rng := rand.New(rand.NewPCG(3, 3))
	in := &Input{EventTime: make([]int64, rows), Columns: []Column{{Float64: make([]float64, rows)}}}
	var kb []byte
	for i := range rows {
		kb = pq.AppendKeyString(kb[:0], fmt.Sprintf("device-%05d", rng.IntN(keys)))
		in.Keys.Append(kb)
		in.EventTime[i] = rng.Int64N(4 * 60 * minute)
		in.Columns[0].Float64[i] = float64(rng.IntN(10000)) / 100
	}
	if _, err := op.ProcessBatch(in, 0, 0); err != nil {
		b.Fatal(err)
	}
	var slots []int32
	for s := range op.groups {
		if op.groups[s].live() {
			slots = append(slots, int32(s))
		}
	}
	b.ReportAllocs()
	var cpu int64
	for b.Loop() {
		gb, err := pq.NewBatch(schema)
		if err != nil {
			b.Fatal(err)
		}
		c0 := cpuNanos()
		perm := op.orderRows(slots)
		op.growOut(gb, len(slots))
		if err := op.writeColumns(gb, slots, perm); err != nil {
			b.Fatal(err)
		}
		op.releaseEmitBuffers(len(slots))
		cpu += cpuNanos() - c0
	}
	b.ReportMetric(float64(cpu)/float64(b.N*len(slots)), "cpu-ns/group")
}
