package bronze

import (
	"context"
	"fmt"
	"testing"

	"github.com/medallion-lake/medallion/gen"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
)

// BenchmarkIngest measures the whole ingest job (list, decode, Parquet encode, commit) over
// generated landing data in memory, with one worker and with one per core: events/s, and the
// ratio between them shows how well encoding spreads over the cores.
func BenchmarkIngest(b *testing.B) {
	const lines = 400_000
	ctx := context.Background()
	landing := mem.New()
	o := gen.DefaultOptions()
	o.Lines, o.Files, o.Prefix = lines, 8, "landing/events/"
	if _, err := gen.Generate(ctx, landing, o); err != nil {
		b.Fatal(err)
	}
	objs, err := objstore.ListAll(ctx, landing, "", objstore.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	for _, o := range objs {
		size += o.Size
	}
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				lake := mem.New()
				for _, o := range objs {
					data, _ := objstore.ReadAll(ctx, landing, o.Key)
					_ = objstore.PutBytes(ctx, lake, o.Key, data)
				}
				opts := ingestOptions()
				opts.MaxFilesPerTrigger, opts.FlushRows, opts.Workers = 1000, 1<<16, workers
				x, err := NewIngester(lake, opts)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				rep, err := x.Run(ctx)
				if err != nil || rep.Lines != lines {
					b.Fatalf("%+v %v", rep, err)
				}
			}
			b.ReportMetric(float64(b.N)*lines/b.Elapsed().Seconds(), "events/s")
		})
	}
}
