package txlog

import (
	"context"
	"fmt"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/objstore/s3/s3test"
)

// bigTable writes a table of numFiles adds spread over commits of perCommit adds each, written
// straight to the bucket (the commit path is benchmarked separately).
func bigTable(b *testing.B, numFiles, perCommit int, checkpoint bool) *mem.Bucket {
	b.Helper()
	ctx := context.Background()
	bucket := mem.New()
	l := New(bucket, Options{NoAutoCheckpoint: true})
	createTable(b, l, true, map[string]string{PropCheckpointInterval: "1000000"})
	v := int64(1)
	for i := 0; i < numFiles; i += perCommit {
		actions := []Action{{CommitInfo: &CommitInfo{Operation: "WRITE"}}}
		for j := i; j < min(i+perCommit, numFiles); j++ {
			day := fmt.Sprintf("2024-01-%02d", j%28+1)
			a := fileAdd(fmt.Sprintf("day=%s/part-%05d-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0.c000.snappy.parquet", day, j), day)
			a.Stats = `{"numRecords":1000,"minValues":{"id":1},"maxValues":{"id":1000},"nullCount":{"id":0}}`
			actions = append(actions, Action{Add: a})
		}
		data, err := MarshalActions(actions)
		if err != nil {
			b.Fatal(err)
		}
		if err := objstore.PutBytes(ctx, bucket, CommitKey(v), data); err != nil {
			b.Fatal(err)
		}
		v++
	}
	if checkpoint {
		snap, err := l.Snapshot(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Checkpoint(ctx, snap); err != nil {
			b.Fatal(err)
		}
	}
	return bucket
}

func benchmarkSnapshot(b *testing.B, checkpoint bool) {
	const numFiles = 100_000
	bucket := bigTable(b, numFiles, 1000, checkpoint)
	l := New(bucket, Options{})
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		snap, err := l.Snapshot(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if len(snap.Files()) != numFiles {
			b.Fatalf("files = %d", len(snap.Files()))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/numFiles, "ns/add")
}

// BenchmarkSnapshot100kAddsJSON loads a table of 100k adds from 100 JSON commits.
func BenchmarkSnapshot100kAddsJSON(b *testing.B) { benchmarkSnapshot(b, false) }

// BenchmarkSnapshot100kAddsCheckpoint loads the same table from one Parquet checkpoint.
func BenchmarkSnapshot100kAddsCheckpoint(b *testing.B) { benchmarkSnapshot(b, true) }

// BenchmarkRefresh100kAdds brings a 100k-file snapshot up to date with one new commit.
func BenchmarkRefresh100kAdds(b *testing.B) {
	ctx := context.Background()
	bucket := bigTable(b, 100_000, 1000, true)
	l := New(bucket, Options{NoAutoCheckpoint: true})
	prev, err := l.Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	tx := l.Begin(prev)
	tx.Add(fileAdd("new", "2024-01-01"))
	if _, err := tx.Commit(ctx, Operation{Name: "WRITE"}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		snap, err := l.Refresh(ctx, prev)
		if err != nil || len(snap.Files()) != 100_001 {
			b.Fatalf("refresh: %v", err)
		}
	}
}

// BenchmarkCommitFile measures one blind-append commit (snapshot + put-if-absent) on the file
// backend, checkpointing every 10 commits as the default table does.
func BenchmarkCommitFile(b *testing.B) {
	bucket, err := file.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer bucket.Close()
	benchmarkCommit(b, bucket)
}

func benchmarkCommit(b *testing.B, bucket objstore.Bucket) {
	ctx := context.Background()
	l := New(bucket, Options{})
	createTable(b, l, false, nil)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		snap, err := l.Snapshot(ctx)
		if err != nil {
			b.Fatal(err)
		}
		tx := l.Begin(snap)
		tx.Add(fileAdd(fmt.Sprintf("f%d", i), "x"))
		if _, err := tx.Commit(ctx, Operation{Name: "WRITE"}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkCommitS3 is BenchmarkCommitFile against the MinIO test server.
func BenchmarkCommitS3(b *testing.B) {
	benchmarkCommit(b, s3test.NewTestBucket(b))
}
