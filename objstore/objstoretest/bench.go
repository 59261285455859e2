package objstoretest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
)

// BenchmarkSizes are the object sizes of RunBenchmarks: a Delta log entry and a data file.
var BenchmarkSizes = []int{1 << 10, 8 << 20}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

// RunBenchmarks measures Put, PutIfAbsent and Get throughput (b.SetBytes) for each of
// BenchmarkSizes on buckets from newBucket.
func RunBenchmarks(b *testing.B, newBucket func(testing.TB) objstore.Bucket) {
	ctx := context.Background()
	for _, size := range BenchmarkSizes {
		data := payload(uint64(size), size)
		b.Run("Put/"+sizeName(size), func(b *testing.B) {
			bkt := newBucket(b)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				key := fmt.Sprintf("bench/put/%06d", i)
				i++
				if err := bkt.Put(ctx, key, bytes.NewReader(data), int64(size)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("PutIfAbsent/"+sizeName(size), func(b *testing.B) {
			bkt := newBucket(b)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				key := fmt.Sprintf("bench/pia/%020d.json", i)
				i++
				if err := bkt.PutIfAbsent(ctx, key, bytes.NewReader(data), int64(size)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("Get/"+sizeName(size), func(b *testing.B) {
			bkt := newBucket(b)
			if err := objstore.PutBytes(ctx, bkt, "bench/get", data); err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, size+1)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				rc, err := bkt.Get(ctx, "bench/get")
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.ReadFull(rc, buf)
				rc.Close()
				if err != io.ErrUnexpectedEOF || n != size {
					b.Fatalf("read %d bytes (%v), want %d", n, err, size)
				}
			}
		})
	}
}
