package table

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/objstore/s3/s3test"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
	"github.com/medallion-lake/medallion/txlog"
)

// BenchmarkAppendAge measures the CPU of one small append (a streaming batch: snapshot
// refresh, Parquet write, commit, the periodic checkpoint and log cleanup) on a young table
// (10 versions) and an old one (10,000 versions), on the file backend and on MinIO (when the
// harness runs one). The aim of issue 35 is that the two cost the same within 10%: compare
// cpu-ms/op of the v10 and v10000 rows of one run. CPU is this process's only (MinIO's own
// is not counted).
func BenchmarkAppendAge(b *testing.B) {
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
		for _, versions := range []int64{10, 10_000} {
			b.Run(fmt.Sprintf("%s/v%d", be.name, versions), func(b *testing.B) {
				batch := pqtest.BenchBatch(b, 1000)
				bucket := be.open(b)
				agedTable(b, bucket, batch, versions)
				tbl := Open(bucket, Options{})
				ctx := context.Background()
				if _, err := tbl.Latest(ctx); err != nil { // a run's first load is not per batch
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				cpu, sys := pqtest.CPUClock(), sysClock()
				for i := 0; i < b.N; i++ {
					if _, err := tbl.Append(ctx, []*pq.Batch{batch}, AppendOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(pqtest.CPUClock()-cpu)/1e6/float64(b.N), "cpu-ms/op")
				b.ReportMetric(float64(sysClock()-sys)/1e6/float64(b.N), "sys-ms/op") // the kernel's share
			})
		}
	}
}

// sysClock is the process's system (kernel) CPU time so far: on the file backend, what the
// file system spends on a large directory shows there.
func sysClock() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Stime.Nano())
}

// agedTable gives bucket a table of the batch's schema at version versions-1, built fast: the
// log is written in memory (version 0 by Create, then one small commit per version carrying a
// streaming writer's txn, so the live file set stays empty and only the log's length differs),
// checkpointed at its last version as a writer checkpointing every 10 versions would have, and
// copied to bucket with parallel puts.
func agedTable(b *testing.B, bucket objstore.Bucket, batch *pq.Batch, versions int64) {
	b.Helper()
	ctx := context.Background()
	m := mem.New()
	t := Open(m, Options{Log: txlog.Options{NoAutoCheckpoint: true}})
	if _, err := t.Create(ctx, batch.Schema, nil, nil); err != nil {
		b.Fatal(err)
	}
	blind := true
	start := time.Now().UnixMilli()
	for v := int64(1); v < versions; v++ {
		data, err := txlog.MarshalActions([]txlog.Action{
			{CommitInfo: &txlog.CommitInfo{Timestamp: start + v, Operation: "STREAMING UPDATE", IsBlindAppend: &blind,
				EngineInfo: "bench"}},
			{Txn: &txlog.Txn{AppID: "bench-query", Version: v}},
		})
		if err != nil {
			b.Fatal(err)
		}
		if err := objstore.PutBytesIfAbsent(ctx, m, txlog.CommitKey(v), data); err != nil {
			b.Fatal(err)
		}
	}
	if versions > 1 {
		snap, err := t.Log().SnapshotAt(ctx, versions-1)
		if err != nil {
			b.Fatal(err)
		}
		if err := t.Log().Checkpoint(ctx, snap); err != nil {
			b.Fatal(err)
		}
	}
	infos, err := objstore.ListAll(ctx, m, "", objstore.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(infos))
	sem := make(chan struct{}, 16)
	for _, info := range infos {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			data, err := objstore.ReadAll(ctx, m, info.Key)
			if err == nil {
				err = objstore.PutBytes(ctx, bucket, info.Key, data)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}
