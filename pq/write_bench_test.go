package pq_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
)

const goldWriteSchema = `{"type":"struct","fields":[
{"name":"window","type":{"type":"struct","fields":[
 {"name":"start","type":"timestamp","nullable":true,"metadata":{}},
 {"name":"end","type":"timestamp","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},
{"name":"device_id","type":"string","nullable":true,"metadata":{}},
{"name":"count","type":"long","nullable":true,"metadata":{}},
{"name":"total_amount","type":"double","nullable":true,"metadata":{}},
{"name":"late_rows","type":"long","nullable":true,"metadata":{}},
{"name":"_total_amount_exact","type":"binary","nullable":true,"metadata":{}}]}`

// goldWriteBatch is a gold file of a 100k-key stream's backlog: rows in (window, key) order,
// windows of about 30k keys each (a key has an event in few of the 5-minute windows), counts
// of a few events, sums of amounts in cents and their exact encoding.
func goldWriteBatch(tb testing.TB, rows int) *pq.Batch {
	batch, err := pq.NewBatch(pqtest.MustSchema(tb, goldWriteSchema))
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	base := int64(1_764_000_000_000_000)
	var key, exact []byte
	const perWindow = 30_000
	for i := range rows {
		start := base + int64(i/perWindow)*300_000_000
		w := batch.Columns[0]
		w.Children[0].AppendInt64(start)
		w.Children[1].AppendInt64(start + 300_000_000)
		w.AppendStruct()
		key = fmt.Appendf(key[:0], "device-%06d", (i%perWindow)*3+rng.IntN(3))
		batch.Columns[1].AppendBytes(key)
		n := 1 + rng.IntN(6)
		batch.Columns[2].AppendInt64(int64(n))
		cents := rng.Int64N(int64(n) * 50_000)
		batch.Columns[3].AppendFloat64(float64(cents) / 100)
		batch.Columns[4].AppendInt64(0)
		exact = binary.AppendUvarint(append(exact[:0], 2, 1), uint64(cents))
		batch.Columns[5].AppendBytes(exact)
	}
	return batch
}

// BenchmarkEncodeGoldShape writes one gold file of 300k rows (the stream's gold write path,
// pq.EncodeFile as table.DataWriter drives it).
func BenchmarkEncodeGoldShape(b *testing.B) {
	const rows = 300_000
	batch := goldWriteBatch(b, rows)
	b.ReportAllocs()
	cpu := pqtest.CPUClock()
	size := 0
	for b.Loop() {
		data, _, err := pq.EncodeFile(batch.Schema, []*pq.Batch{batch}, pq.WriteOptions{})
		if err != nil {
			b.Fatal(err)
		}
		size = len(data)
	}
	b.ReportMetric(float64((pqtest.CPUClock()-cpu).Nanoseconds())/float64(b.N*rows), "cpu-ns/row")
	b.ReportMetric(float64(size)/rows, "file-B/row")
}
