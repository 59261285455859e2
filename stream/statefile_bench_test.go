package stream

import (
	"context"
	"io"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/stream/checkpoint"
)

// BenchmarkFirstDeltaStateFile writes the state file of a backlog's first batch, whose delta
// holds every group (256k events over 100k keys and 4 hours, a sliding 10m/5m count and float
// sum: every event opens about two groups), to a file checkpoint: "buffered" encodes the delta
// into a buffer and the file from the sections (the stream before gold.WriteDelta), "streamed"
// writes the delta into the file as it is stored (checkpoint.Section.Write). B/op is what the
// state file costs the heap; cpu-ns/group its CPU.
func BenchmarkFirstDeltaStateFile(b *testing.B) {
	const keys, rows = 100_000, 1 << 18
	spec, _ := gold.NewWindowSpec(10*60_000_000, 5*60_000_000, 0)
	op, err := gold.NewAggregation(gold.AggConfig{Window: spec, Mode: gold.Append, NumKeys: 1,
		Aggs: []gold.AggSpec{{Fn: gold.Count, Column: -1}, {Fn: gold.Sum, Column: 0}}})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	in := &gold.Input{EventTime: make([]int64, rows), Columns: []gold.Column{{Float64: make([]float64, rows)}}}
	var kb []byte
	for i := range rows {
		kb = pq.AppendKeyString(kb[:0], "device-"+strconv.Itoa(rng.IntN(keys)))
		in.Keys.Append(kb)
		in.EventTime[i] = rng.Int64N(4 * 3600_000_000)
		in.Columns[0].Float64[i] = float64(rng.IntN(10000)) / 100
	}
	if _, err := op.ProcessBatch(in, 0, 0); err != nil {
		b.Fatal(err)
	}
	lake, err := file.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	d := checkpoint.Open(lake)
	ctx := context.Background()
	idle := []byte{1, 2, 3}
	for _, mode := range []string{"buffered", "streamed"} {
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			c0 := cpuNanos()
			for i := 0; i < b.N; i++ {
				if mode == "buffered" {
					delta, err := op.AppendDelta(nil)
					if err != nil {
						b.Fatal(err)
					}
					err = d.WriteState(ctx, 1, map[string][]byte{"idle": idle, "agg-delta/g": delta}, []string{"idle", "agg-delta/g"})
					if err != nil {
						b.Fatal(err)
					}
					continue
				}
				size, ok := op.DeltaSize()
				if !ok {
					b.Fatal("no delta size")
				}
				err := d.WriteSections(ctx, 1, []checkpoint.Section{{Name: "idle", Data: idle},
					{Name: "agg-delta/g", Size: int64(size), Write: func(w io.Writer) error { return op.WriteDelta(w, size) }}})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuNanos()-c0)/float64(b.N*op.NumGroups()), "cpu-ns/group")
			b.ReportMetric(float64(op.NumGroups()), "groups")
		})
	}
}
