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
		for _, put := range []struct {
			name, keyFormat string
			put             func(bkt objstore.Bucket, ctx context.Context, key string, r io.Reader, size int64) error
		}{
			{"Put", "bench/put/%06d", objstore.Bucket.Put},
			{"PutIfAbsent", "bench/pia/%020d.json", objstore.Bucket.PutIfAbsent},
		} {
			b.Run(put.name+"/"+sizeName(size), func(b *testing.B) {
				bkt := newBucket(b)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					key := fmt.Sprintf(put.keyFormat, i)
					i++
					if err := put.put(bkt, ctx, key, bytes.NewReader(data), int64(size)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
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
