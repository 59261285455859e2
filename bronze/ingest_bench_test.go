package bronze

import (
	"context"
	"fmt"
	"testing"

	"github.com/medallion-lake/medallion/gen"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
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

// BenchmarkIngestObject measures what the harness's ingest stage does with one landing object a
// commit (landing.max_files_per_trigger: 1) on a file lake: one large NDJSON object decoded,
// encoded and committed, with one worker and with one per core. events/s is wall time; cpu-ns/event
// is this process's user+system CPU per line (getrusage), the figure noise disturbs least on a
// shared machine. Each iteration ingests into fresh tables and checkpoint, so the object is not
// copied between iterations.
func BenchmarkIngestObject(b *testing.B) {
	const lines = 200_000
	ctx := context.Background()
	lake, err := file.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	o := gen.DefaultOptions()
	o.Lines, o.Files, o.Prefix = lines, 1, "landing/events/"
	if _, err := gen.Generate(ctx, lake, o); err != nil {
		b.Fatal(err)
	}
	objs, err := objstore.ListAll(ctx, lake, "landing/", objstore.ListOptions{})
	if err != nil || len(objs) != 1 {
		b.Fatalf("landing: %v %v", objs, err)
	}
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			b.SetBytes(objs[0].Size)
			b.ReportAllocs()
			run := 0
			cpu := 0.0
			for b.Loop() {
				run++
				opts := ingestOptions()
				opts.MaxFilesPerTrigger, opts.FlushRows, opts.Workers = 1, 1<<16, workers
				dir := fmt.Sprintf("w%d-%d/", workers, run)
				opts.BronzePath, opts.RejectsPath, opts.CheckpointPath = dir+"bronze", dir+"rejects", dir+"ckpt"
				x, err := NewIngester(lake, opts)
				if err != nil {
					b.Fatal(err)
				}
				c0 := cpuSeconds()
				rep, err := x.Run(ctx)
				cpu += cpuSeconds() - c0
				if err != nil || rep.Lines != lines {
					b.Fatalf("%+v %v", rep, err)
				}
			}
			b.ReportMetric(float64(b.N)*lines/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(cpu*1e9/(float64(b.N)*lines), "cpu-ns/event")
		})
	}
}

// BenchmarkIngestCommits measures many small batches, the harness's 1M-event case in miniature:
// 24 landing objects of 10k lines on a file lake, one object a commit, so the per-batch costs
// (listing, claim, the synced commits, the tables' logs) weigh as much as the decoding. A batch
// commits while the next is decoded; events/s is wall time, cpu-ns/event getrusage's CPU.
func BenchmarkIngestCommits(b *testing.B) {
	const objects, perObject = 24, 10_000
	ctx := context.Background()
	lake, err := file.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	o := gen.DefaultOptions()
	o.Lines, o.Files, o.Prefix = objects*perObject, objects, "landing/events/"
	if _, err := gen.Generate(ctx, lake, o); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	run, cpu := 0, 0.0
	for b.Loop() {
		run++
		opts := ingestOptions()
		opts.MaxFilesPerTrigger, opts.FlushRows = 1, 1<<16
		dir := fmt.Sprintf("run%d/", run)
		opts.BronzePath, opts.RejectsPath, opts.CheckpointPath = dir+"bronze", dir+"rejects", dir+"ckpt"
		x, err := NewIngester(lake, opts)
		if err != nil {
			b.Fatal(err)
		}
		c0 := cpuSeconds()
		rep, err := x.Run(ctx)
		cpu += cpuSeconds() - c0
		if err != nil || rep.Lines != objects*perObject || rep.Batches != objects {
			b.Fatalf("%+v %v", rep, err)
		}
	}
	b.ReportMetric(float64(b.N)*objects*perObject/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(cpu*1e9/(float64(b.N)*objects*perObject), "cpu-ns/event")
}
