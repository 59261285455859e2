package gold

import (
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/pq"
)

// BenchmarkStateDelta sizes and writes the state delta of a backlog's first batch, whose
// delta holds every group (256k events over 100k keys and 4 hours, a sliding 10m/5m count and
// float sum, so exact sums: about 500k groups), as the stream does after each batch:
// DeltaSize, then WriteDelta into the state file (io.Discard here, so only the encoding is
// measured). "size" is DeltaSize alone; "one-by-one" without reading the groups ahead.
// cpu-ns/group is the CPU a delta's group costs.
func BenchmarkStateDelta(b *testing.B) {
	const keys, rows = 100_000, 1 << 18
	spec, _ := NewWindowSpec(10*minute, 5*minute, 0)
	op := mustAgg(b, AggConfig{Window: spec, Mode: Append, NumKeys: 1,
		Aggs: []AggSpec{{Fn: Count, Column: -1}, {Fn: Sum, Column: 0}}})
	rng := rand.New(rand.NewPCG(3, 3))
	in := &Input{EventTime: make([]int64, rows), Columns: []Column{{Float64: make([]float64, rows)}}}
	var kb []byte
	for i := range rows {
		kb = pq.AppendKeyString(kb[:0], "device-"+strconv.Itoa(rng.IntN(keys)))
		in.Keys.Append(kb)
		in.EventTime[i] = rng.Int64N(4 * 60 * minute)
		in.Columns[0].Float64[i] = float64(rng.IntN(10000)) / 100
	}
	if _, err := op.ProcessBatch(in, 0, 0); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"size", "size+write", "size/one-by-one", "size+write/one-by-one"} {
		b.Run(mode, func(b *testing.B) {
			if strings.HasSuffix(mode, "/one-by-one") {
				// Without reading the groups ahead (loadGroupsAhead), as below loadAheadEntries.
				defer func(n int) { loadAheadEntries = n }(loadAheadEntries)
				loadAheadEntries = math.MaxInt
				mode = strings.TrimSuffix(mode, "/one-by-one")
			}
			b.ReportAllocs()
			c0 := cpuNanos()
			for i := 0; i < b.N; i++ {
				size, ok := op.DeltaSize()
				if !ok {
					b.Fatal("no delta size")
				}
				if mode == "size" {
					continue
				}
				if err := op.WriteDelta(io.Discard, size); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuNanos()-c0)/float64(b.N*op.NumGroups()), "cpu-ns/group")
			b.ReportMetric(float64(op.NumGroups()), "groups")
		})
	}
}
