package gold

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/medallion-lake/medallion/pq"
)

// BenchmarkSharedKeys is a 64k-event batch through the bench pipeline's two aggregations (a
// tumbling 5m and a sliding 10m/5m count + float sum over one key column), in steady state
// (every group already in state, nothing evicted): "own", each with a key table of its own,
// interns every row's key twice; "shared" interns it once (KeyShare.Intern) and both
// aggregations read the ids. cpu-ns/event is per event of the batch, both aggregations.
func BenchmarkSharedKeys(b *testing.B) {
	for _, keys := range []int{1_000, 100_000} {
		rng := rand.New(rand.NewPCG(5, 5))
		in := &Input{EventTime: benchTimes(benchBatch), Columns: []Column{{Float64: make([]float64, benchBatch)}}}
		var kb []byte
		for i := range benchBatch {
			kb = pq.AppendKeyString(kb[:0], "device-"+strconv.Itoa(rng.IntN(keys)))
			in.Keys.Append(kb)
			in.Columns[0].Float64[i] = float64(rng.IntN(10000)) / 100
		}
		for _, shared := range []bool{false, true} {
			name := strconv.Itoa(keys/1000) + "kkeys-own"
			if shared {
				name = strconv.Itoa(keys/1000) + "kkeys-shared"
			}
			b.Run(name, func(b *testing.B) {
				cfgs := sharePairConfigs(b, Append)
				ops := []*Aggregation{mustAgg(b, cfgs[0]), mustAgg(b, cfgs[1])}
				var ks *KeyShare
				if shared {
					var err error
					if ks, err = ShareKeys(ops); err != nil {
						b.Fatal(err)
					}
				}
				run := func() {
					in.KeyIDs, in.KeyHashes = nil, nil
					if ks != nil {
						in.KeyIDs, in.KeyHashes = ks.Intern(&in.Keys)
					}
					for _, op := range ops {
						if _, err := op.ProcessBatch(in, 0, 0); err != nil {
							b.Fatal(err)
						}
					}
					if ks != nil {
						ks.Settle()
					}
				}
				run() // every group in state
				b.ReportAllocs()
				b.ResetTimer()
				c0 := cpuNanos()
				for range b.N {
					run()
				}
				reportCPU(b, c0, b.N*benchBatch)
			})
		}
	}
}

// BenchmarkKeyShareIntern is KeyShare.Intern alone on a 256k-row batch whose keys (fixed
// width, as gen writes device ids) the table already holds, at 1k and 100k keys: the look-up
// a row that the stream pays once a batch for its golds.
func BenchmarkKeyShareIntern(b *testing.B) {
	for _, keys := range []int{1_000, 100_000} {
		b.Run(strconv.Itoa(keys/1000)+"kkeys", func(b *testing.B) {
			rng := rand.New(rand.NewPCG(6, 6))
			var in Binary
			var kb []byte
			for range 1 << 18 {
				kb = pq.AppendKeyString(kb[:0], fmt.Sprintf("device-%05d", rng.IntN(keys)))
				in.Append(kb)
			}
			op := mustAgg(b, sharePairConfigs(b, Append)[0])
			ks, err := ShareKeys([]*Aggregation{op})
			if err != nil {
				b.Fatal(err)
			}
			ks.Intern(&in) // every key in the table
			b.ReportAllocs()
			b.ResetTimer()
			c0 := cpuNanos()
			for range b.N {
				ks.Intern(&in)
			}
			reportCPU(b, c0, b.N*in.Len())
		})
	}
}
