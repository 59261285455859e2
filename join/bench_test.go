package join

import (
	"encoding/binary"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// benchPayload is the size of a buffered row's payload: an encoded silver row of a handful of
// columns (ids, a timestamp, a short string).
const benchPayload = 40

// benchSide builds n rows of one side: 8-byte keys (as table's int64 key encoding is 9) and
// payloads of benchPayload bytes, event times spread over [t0, t0+span).
func benchSide(rng *rand.Rand, n int, keys func(i int) uint64, t0, span int64) *Input {
	in := &Input{EventTime: make([]int64, n)}
	payload := make([]byte, benchPayload)
	var k [8]byte
	for i := 0; i < n; i++ {
		in.EventTime[i] = t0 + rng.Int64N(span)
		binary.BigEndian.PutUint64(k[:], keys(i))
		in.Keys.Append(k[:])
		binary.BigEndian.PutUint64(payload, uint64(i))
		in.Rows.Append(payload)
	}
	return in
}

// BenchmarkJoinThroughput is the impressions/clicks shape of issue 18 in steady state: a left
// outer join, clicks within [0, 1h] of their impression, watermark delays 10m and 20m, one
// micro-batch a minute of event time. Each batch brings 2^15 impressions with fresh ids and
// 2^15 clicks, half of them on an impression of the last hour. rows/s counts both sides;
// hot-key puts every unmatched click on one key.
func BenchmarkJoinThroughput(b *testing.B) {
	for _, tc := range []struct {
		perBatch int
		hot      bool
	}{{1 << 12, false}, {1 << 15, false}, {1 << 12, true}} {
		perBatch := tc.perBatch
		name := "batch=" + strconv.Itoa(perBatch)
		if tc.hot {
			// The unmatched clicks all share one key: a chain of a few hundred thousand rows
			// that eviction must unlink from anywhere, not only from its oldest end.
			name += "/hot-key"
		}
		b.Run(name, func(b *testing.B) {
			spec := Spec{Type: LeftOuter, NumKeys: 1, Condition: Between(0, int64(time.Hour/time.Microsecond)),
				LeftWatermark: true, RightWatermark: true}
			op, err := New(spec)
			if err != nil {
				b.Fatal(err)
			}
			wm, _ := NewWatermarks(&spec, 10*60_000, 20*60_000)
			rng := rand.New(rand.NewPCG(1, 1))
			minute := int64(time.Minute / time.Microsecond)
			const t0 = int64(1_714_564_800_000_000) // 2024-05-01T12:00Z
			// Prebuild a lap of batches, replayed with times shifted by a lap and keys by a
			// lap's worth of ids, so that every batch joins fresh impressions.
			const distinct = 16
			type pair struct {
				l, r   *Input
				lk, rk []uint64
			}
			var batches []pair
			next := uint64(0)
			const noImpression = 1 << 62
			for i := 0; i < distinct; i++ {
				base := next
				p := pair{}
				for j := 0; j < perBatch; j++ {
					p.lk = append(p.lk, base+uint64(j))
					if j%2 == 0 && base > 0 { // a click on a recent impression
						p.rk = append(p.rk, base-1-uint64(rng.IntN(min(int(base), perBatch*10))))
					} else {
						k := noImpression + base + uint64(j) // an impression not in state
						if tc.hot {
							k = noImpression
						}
						p.rk = append(p.rk, k)
					}
				}
				next += uint64(perBatch)
				p.l = benchSide(rng, perBatch, func(j int) uint64 { return p.lk[j] }, t0+int64(i)*minute, minute)
				p.r = benchSide(rng, perBatch, func(j int) uint64 { return p.rk[j] }, t0+int64(i)*minute, minute)
				batches = append(batches, p)
			}
			var out int64
			var wall time.Duration
			var cpu int64
			run := func(i int) {
				p := batches[i%distinct]
				lap := int64(i / distinct)
				shift := lap * distinct * minute
				for _, in := range []*Input{p.l, p.r} {
					for j := range in.EventTime {
						in.EventTime[j] += shift
					}
				}
				for j, k := range p.lk {
					binary.BigEndian.PutUint64(p.l.Keys.Data[8*j:], k+uint64(lap)*next)
				}
				for j, k := range p.rk {
					if k != noImpression {
						k += uint64(lap) * next
					}
					binary.BigEndian.PutUint64(p.r.Keys.Data[8*j:], k)
				}
				c0, w0 := cpuNanos(), time.Now()
				wm.Observe(Left, p.l.EventTime)
				wm.Observe(Right, p.r.EventTime)
				late, evict := wm.Batch()
				res, err := op.ProcessBatch(p.l, p.r, late, evict)
				if err != nil {
					b.Fatal(err)
				}
				out += int64(len(res.Rows))
				wm.EndBatch()
				wall += time.Since(w0)
				cpu += cpuNanos() - c0
				for _, in := range []*Input{p.l, p.r} {
					for j := range in.EventTime {
						in.EventTime[j] -= shift
					}
				}
			}
			// Warm up to steady state: the state holds about 80 minutes of impressions.
			for i := 0; i < 6*distinct; i++ {
				run(i)
			}
			wall, cpu, out = 0, 0, 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				run(6*distinct + i)
			}
			rows := float64(b.N) * float64(2*perBatch)
			stateRows := int64(op.StateRows(Left) + op.StateRows(Right))
			stateBytes := op.StateBytes(Left) + op.StateBytes(Right)
			b.ReportMetric(rows/wall.Seconds(), "rows/s")
			b.ReportMetric(float64(cpu)/rows, "cpu-ns/row")
			b.ReportMetric(float64(wall.Nanoseconds())/rows, "wall-ns/row")
			b.ReportMetric(float64(out)/float64(b.N), "out-rows/batch")
			b.ReportMetric(float64(stateRows), "state-rows")
			if stateRows > 0 {
				b.ReportMetric(float64(stateBytes)/float64(stateRows), "state-B/row")
			}
			sinkOut = out
		})
	}
}

var sinkOut int64

// BenchmarkStateBytesPerRow buffers 2^20 rows with distinct 8-byte keys and 40-byte payloads on
// one side (nothing evicted) and reports the state's bytes per buffered row, all buffers at
// capacity: Spark's state store takes roughly 700-1,400 for such a row.
func BenchmarkStateBytesPerRow(b *testing.B) {
	for _, keysPerRow := range []string{"distinct", "shared-by-16"} {
		b.Run(keysPerRow, func(b *testing.B) {
			const n = 1 << 20
			rng := rand.New(rand.NewPCG(2, 2))
			in := benchSide(rng, n, func(i int) uint64 {
				if keysPerRow == "distinct" {
					return uint64(i)
				}
				return uint64(i / 16)
			}, 0, 3600_000_000)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				op, err := New(Spec{Type: LeftOuter, NumKeys: 1, Condition: Between(0, 3600_000_000), LeftWatermark: true, RightWatermark: true})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := op.ProcessBatch(in, nil, 0, 0); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(op.StateBytes(Left))/float64(op.StateRows(Left)), "state-B/row")
				b.ReportMetric(float64(op.StateBytes(Left)-int64(n*(1+benchPayload)))/float64(op.StateRows(Left)), "overhead-B/row")
			}
		})
	}
}
