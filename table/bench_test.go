package table

import (
	"bytes"
	"context"
	"flag"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/objstore/s3/s3test"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
)

// reportCPU reports the CPU nanoseconds per row spent since start (GC included).
func reportCPU(b *testing.B, start time.Duration, rows int) {
	b.ReportMetric(float64(pqtest.CPUClock()-start)/float64(rows), "cpu-ns/row")
}

// BenchmarkEncodeEvents measures the Parquet writer on the 5-column event batch of the
// ingest hot path: rows/s on one core and allocations per row.
func BenchmarkEncodeEvents(b *testing.B) {
	for _, comp := range []string{pq.CompressionSnappy, pq.CompressionZstd} {
		b.Run(comp, func(b *testing.B) {
			const rows = 100_000
			batch := pqtest.BenchBatch(b, rows)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := pqtest.CPUClock()
			var size int
			for i := 0; i < b.N; i++ {
				data, _, err := pq.EncodeFile(batch.Schema, []*pq.Batch{batch}, pq.WriteOptions{Compression: comp})
				if err != nil {
					b.Fatal(err)
				}
				size = len(data)
			}
			b.StopTimer()
			reportCPU(b, cpu, b.N*rows)
			perRow := float64(b.Elapsed().Nanoseconds()) / float64(b.N*rows)
			b.ReportMetric(1e9/perRow, "rows/s")
			b.ReportMetric(float64(size)/rows, "bytes/row")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkDecodeEvents measures the reader on the same data.
func BenchmarkDecodeEvents(b *testing.B) {
	const rows = 100_000
	batch := pqtest.BenchBatch(b, rows)
	data, _, err := pq.EncodeFile(batch.Schema, []*pq.Batch{batch}, pq.WriteOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := pqtest.CPUClock()
	for i := 0; i < b.N; i++ {
		if _, err := pq.DecodeFile(bytes.NewReader(data), int64(len(data)), batch.Schema); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportCPU(b, cpu, b.N*rows)
	b.ReportMetric(float64(b.N*rows)/b.Elapsed().Seconds(), "rows/s")
}

var benchTableRows = flag.Int("table.rows", 200_000, "rows for the table-level benchmarks (the issue asks for 10M: -table.rows=10000000)")

// BenchmarkTable measures Append and a full Scan on the file backend and on MinIO (when the
// harness runs one): rows/s and MB/s of Parquet written and read.
func BenchmarkTable(b *testing.B) {
	backends := []struct {
		name string
		open func(b *testing.B) objstore.Bucket
	}{
		{"file", func(b *testing.B) objstore.Bucket {
			bk, err := file.New(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			return bk
		}},
		{"minio", func(b *testing.B) objstore.Bucket { return s3test.NewTestBucket(b) }},
	}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) { benchTable(b, be.open) })
	}
}

func benchTable(b *testing.B, open func(b *testing.B) objstore.Bucket) {
	ctx := context.Background()
	rows := *benchTableRows
	const perBatch = 100_000
	batch := pqtest.BenchBatch(b, min(rows, perBatch))
	var batches []*pq.Batch
	for n := 0; n < rows; n += batch.Len() {
		batches = append(batches, batch)
	}
	newTable := func(b *testing.B) *Table {
		tbl := Open(open(b), Options{})
		if _, err := tbl.Create(ctx, batch.Schema, nil, nil); err != nil {
			b.Fatal(err)
		}
		return tbl
	}
	b.Run("append", func(b *testing.B) {
		var bytes int64
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			tbl := newTable(b)
			b.StartTimer()
			r, err := tbl.Append(ctx, batches, AppendOptions{})
			if err != nil {
				b.Fatal(err)
			}
			bytes = r.BytesWritten
		}
		b.ReportMetric(float64(b.N*len(batches)*batch.Len())/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(float64(int64(b.N)*bytes)/b.Elapsed().Seconds()/1e6, "MB/s")
	})
	b.Run("scan", func(b *testing.B) {
		tbl := newTable(b)
		r, err := tbl.Append(ctx, batches, AppendOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			n := 0
			for bt, err := range tbl.Scan(ctx, ScanOptions{}) {
				if err != nil {
					b.Fatal(err)
				}
				n += bt.Len()
			}
			if n != len(batches)*batch.Len() {
				b.Fatalf("scanned %d rows", n)
			}
		}
		b.ReportMetric(float64(b.N*len(batches)*batch.Len())/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(float64(int64(b.N)*r.BytesWritten)/b.Elapsed().Seconds()/1e6, "MB/s")
	})
}

// BenchmarkDataWriterPartitioned measures a day-partitioned write of the event batch (the
// grouping must not allocate per row).
func BenchmarkDataWriterPartitioned(b *testing.B) {
	ctx := context.Background()
	batch := pqtest.BenchBatch(b, 100_000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w, err := NewDataWriter(mem.New(), batch.Schema, []string{"event_type"}, pq.WriteOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if err := w.Write(ctx, batch); err != nil {
			b.Fatal(err)
		}
		if _, err := w.Close(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch.Len())/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkScanSmallFiles scans a table of many small files, as a stream batch or a late
// job reads a few small silver files: what a data file's open costs beside its rows (the
// page readers' buffers above all, see readBufferSize).
func BenchmarkScanSmallFiles(b *testing.B) {
	ctx := context.Background()
	bk, err := file.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	batch := pqtest.BenchBatch(b, 200)
	tbl := Open(bk, Options{})
	if _, err := tbl.Create(ctx, batch.Schema, nil, nil); err != nil {
		b.Fatal(err)
	}
	const files = 40
	for range files {
		if _, err := tbl.Append(ctx, []*pq.Batch{batch}, AppendOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		n := 0
		for bt, err := range tbl.Scan(ctx, ScanOptions{}) {
			if err != nil {
				b.Fatal(err)
			}
			n += bt.Len()
		}
		if n != files*batch.Len() {
			b.Fatalf("scanned %d rows, want %d", n, files*batch.Len())
		}
	}
	b.ReportMetric(float64(b.N*files)/b.Elapsed().Seconds(), "files/s")
}

// BenchmarkRowTags measures what tagging costs a writer (RowTags: each row encoded and hashed
// into its file's per-group sums) beside the Parquet encoding it rides on: an Append of 100k
// event rows to a table in memory, without and with tags (grouped by event time, set to 100
// runs of 1000 rows, as gold's windows come).
func BenchmarkRowTags(b *testing.B) {
	const rows = 100_000
	batch := pqtest.BenchBatch(b, rows)
	ts := batch.Column("event_time").Int64
	for i := range ts {
		ts[i] = ts[0] + int64(i/1000)*300_000_000
	}
	for _, tc := range []struct {
		name string
		tags *RowTags
	}{{"plain", nil}, {"tagged", &RowTags{Group: "event_time", Exclude: []string{"source"}}}} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			tbl := Open(mem.New(), Options{})
			if _, err := tbl.Create(ctx, batch.Schema, nil, nil); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu := pqtest.CPUClock()
			for range b.N {
				if _, err := tbl.Append(ctx, []*pq.Batch{batch}, AppendOptions{RowTags: tc.tags}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			reportCPU(b, cpu, b.N*rows)
			b.ReportMetric(0, "ns/op")
		})
	}
}
