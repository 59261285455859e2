package source

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/txlog"
)

// sourceTable builds a table whose commits 1..len(perCommit) add perCommit[i] fake files each
// (the source reads the log only, never the files).
func sourceTable(t *testing.T, perCommit []int) (*mem.Bucket, *txlog.Log) {
	t.Helper()
	ctx := context.Background()
	b := mem.New()
	log := txlog.New(b, txlog.Options{})
	tx := log.Begin(nil)
	schema, _ := txlog.MarshalSchema(&txlog.StructType{Fields: []txlog.StructField{{Name: "x", Type: txlog.PrimitiveType{Name: "long"}, Nullable: true}}})
	tx.SetMetadata(txlog.Metadata{ID: "table-1", Format: txlog.Format{Provider: "parquet"}, SchemaString: schema, PartitionColumns: []string{}, Configuration: map[string]string{"delta.checkpointInterval": "1000"}})
	tx.SetProtocol(txlog.Protocol{MinReaderVersion: 1, MinWriterVersion: 2})
	if _, err := tx.Commit(ctx, txlog.Operation{Name: "CREATE TABLE"}); err != nil {
		t.Fatal(err)
	}
	for c, n := range perCommit {
		snap, err := log.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tx := log.Begin(snap)
		for i := 0; i < n; i++ {
			tx.Add(&txlog.Add{Path: fmt.Sprintf("v%03d-f%04d.parquet", c+1, i), PartitionValues: map[string]*string{}, Size: 1, ModificationTime: int64(c), DataChange: true})
		}
		if _, err := tx.Commit(ctx, txlog.Operation{Name: "WRITE"}); err != nil {
			t.Fatal(err)
		}
	}
	return b, log
}

func drain(t *testing.T, src *Source, start *Offset, until int64, limit ReadLimit) (batches []int, end *Offset) {
	t.Helper()
	ctx := context.Background()
	for {
		files, next, err := src.NextBatch(ctx, start, until, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			if start != nil && next != *start {
				t.Fatalf("no files but the offset moved from %v to %v", *start, next)
			}
			return batches, start
		}
		batches = append(batches, len(files))
		start = &next
	}
}

// T1: AvailableNow over 2 500 new files with maxFilesPerTrigger = 1000: 1000/1000/500.
func TestSourceT1AvailableNowRateLimit(t *testing.T) {
	b, _ := sourceTable(t, []int{500, 500, 500, 500, 500})
	src := New(b, Options{})
	// The stream already read version 0 (no files): it starts from (1, -1).
	start := &Offset{SourceVersion: 1, ReservoirID: "table-1", ReservoirVersion: 1, Index: -1}
	batches, _ := drain(t, src, start, 5, ReadLimit{MaxFiles: 1000})
	if fmt.Sprint(batches) != "[1000 1000 500]" {
		t.Fatalf("batches %v, want [1000 1000 500]", batches)
	}
}

// maxBytesPerTrigger is a soft bound (the file that reaches it ends the batch, so a batch has at
// least one file); with maxFilesPerTrigger too, whichever is reached first ends the batch.
func TestSourceMaxBytesPerTrigger(t *testing.T) {
	b, _ := sourceTable(t, []int{500, 500, 500, 500, 500}) // every file is 1 byte
	start := &Offset{SourceVersion: 1, ReservoirID: "table-1", ReservoirVersion: 1, Index: -1}
	for _, tc := range []struct {
		limit ReadLimit
		want  string
	}{
		{ReadLimit{MaxBytes: 700}, "[700 700 700 400]"},
		{ReadLimit{MaxBytes: 700, MaxFiles: 600}, "[600 600 600 600 100]"},
		{ReadLimit{MaxBytes: 900, MaxFiles: 1000}, "[900 900 700]"},
	} {
		batches, _ := drain(t, New(b, Options{}), start, 5, tc.limit)
		if got := fmt.Sprint(batches); got != tc.want {
			t.Errorf("%+v: batches %s, want %s", tc.limit, got, tc.want)
		}
	}
	small, _ := sourceTable(t, []int{3, 2})
	if batches, _ := drain(t, New(small, Options{}), start, 2, ReadLimit{MaxBytes: 1}); fmt.Sprint(batches) != "[1 1 1 1 1]" {
		t.Errorf("a limit below one file's size: batches %v, want one file each", batches)
	}
}

// T2: Once ignores the read limit: one batch of 2 500.
func TestSourceT2OnceIgnoresLimit(t *testing.T) {
	b, _ := sourceTable(t, []int{500, 500, 500, 500, 500})
	src := New(b, Options{})
	start := &Offset{SourceVersion: 1, ReservoirID: "table-1", ReservoirVersion: 1, Index: -1}
	batches, _ := drain(t, src, start, 5, ReadLimit{})
	if fmt.Sprint(batches) != "[2500]" {
		t.Fatalf("batches %v, want [2500]", batches)
	}
}

// T3: a batch that ends on the last file of version 41 ends at (42, -1, false); with no new
// commit the next batch is empty and its end equals its start.
func TestSourceT3EndOffset(t *testing.T) {
	perCommit := make([]int, 41)
	for i := range perCommit {
		perCommit[i] = 2
	}
	b, _ := sourceTable(t, perCommit)
	src := New(b, Options{})
	ctx := context.Background()
	start := Offset{SourceVersion: 1, ReservoirID: "table-1", ReservoirVersion: 41, Index: -1}
	files, end, err := src.NextBatch(ctx, &start, 41, ReadLimit{})
	if err != nil {
		t.Fatal(err)
	}
	want := Offset{SourceVersion: 1, ReservoirID: "table-1", ReservoirVersion: 42, Index: -1, IsStartingVersion: false}
	if len(files) != 2 || end != want {
		t.Fatalf("got %d files ending at %v, want 2 ending at %v", len(files), end, want)
	}
	files, again, err := src.NextBatch(ctx, &end, 41, ReadLimit{})
	if err != nil || len(files) != 0 || again != end {
		t.Fatalf("no new commit: %d files, end %v (%v), want none and %v", len(files), again, err, end)
	}
}

// A fresh stream reads the snapshot first (ordered by modification time, then path), then later
// commits, each file exactly once, whatever the batch size.
func TestSourceSnapshotThenCommits(t *testing.T) {
	ctx := context.Background()
	for _, maxFiles := range []int{0, 1, 2, 3, 5} {
		b, log := sourceTable(t, []int{3, 0, 4})
		src := New(b, Options{})
		seen := map[string]bool{}
		var start *Offset
		collect := func(until int64) {
			for {
				files, end, err := src.NextBatch(ctx, start, until, ReadLimit{MaxFiles: maxFiles})
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range files {
					if seen[f.Add.Path] {
						t.Fatalf("max %d: %s delivered twice", maxFiles, f.Add.Path)
					}
					seen[f.Add.Path] = true
				}
				start = &end
				if len(files) == 0 {
					return
				}
			}
		}
		collect(3)
		if len(seen) != 7 {
			t.Fatalf("max %d: %d files from the snapshot, want 7", maxFiles, len(seen))
		}
		// Two more commits arrive; the stream reads only them.
		snap, _ := log.Snapshot(ctx)
		tx := log.Begin(snap)
		tx.Add(&txlog.Add{Path: fmt.Sprintf("late-%d.parquet", maxFiles), PartitionValues: map[string]*string{}, Size: 1, DataChange: true})
		if _, err := tx.Commit(ctx, txlog.Operation{Name: "WRITE"}); err != nil {
			t.Fatal(err)
		}
		v, _, _ := src.Latest(ctx)
		collect(v)
		if len(seen) != 8 || !seen[fmt.Sprintf("late-%d.parquet", maxFiles)] {
			t.Fatalf("max %d: %d files after the new commit, want 8", maxFiles, len(seen))
		}
	}
}

func TestSourceRemovesStopTheStream(t *testing.T) {
	b, log := sourceTable(t, []int{2})
	ctx := context.Background()
	snap, _ := log.Snapshot(ctx)
	tx := log.Begin(snap)
	tx.Remove(&txlog.Remove{Path: "v001-f0000.parquet", DataChange: true})
	if _, err := tx.Commit(ctx, txlog.Operation{Name: "DELETE"}); err != nil {
		t.Fatal(err)
	}
	start := Offset{SourceVersion: 1, ReservoirID: "table-1", ReservoirVersion: 2, Index: -1}
	if _, _, err := New(b, Options{}).NextBatch(ctx, &start, 2, ReadLimit{}); !errors.Is(err, ErrDataRemoved) {
		t.Fatalf("got %v, want ErrDataRemoved", err)
	}
	if _, _, err := New(b, Options{IgnoreDeletes: true}).NextBatch(ctx, &start, 2, ReadLimit{}); err != nil {
		t.Fatalf("ignore_deletes: %v", err)
	}
	// Compaction (dataChange=false) is not a change: it delivers nothing and does not stop.
	snap, _ = log.Snapshot(ctx)
	tx = log.Begin(snap)
	tx.Remove(&txlog.Remove{Path: "v001-f0001.parquet", DataChange: false})
	tx.Add(&txlog.Add{Path: "compacted.parquet", PartitionValues: map[string]*string{}, Size: 1, DataChange: false})
	if _, err := tx.Commit(ctx, txlog.Operation{Name: "OPTIMIZE"}); err != nil {
		t.Fatal(err)
	}
	start = Offset{SourceVersion: 1, ReservoirID: "table-1", ReservoirVersion: 3, Index: -1}
	files, _, err := New(b, Options{}).NextBatch(ctx, &start, 3, ReadLimit{})
	if err != nil || len(files) != 0 {
		t.Fatalf("compaction: %d files, %v", len(files), err)
	}
}
