package source

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// changeTable makes a table (id long) with the feed on or off: v1 appends ids 1,2 (one file),
// v2 appends 3, v3 appends 4 and 5 in two files, v4 deletes v1's file by hand (a remove with
// dataChange=true and no change files: its rows are read as deletes).
func changeTable(t *testing.T, feed bool) (*mem.Bucket, string) {
	t.Helper()
	ctx := context.Background()
	b := mem.New()
	tbl := table.Open(b, table.Options{})
	schema := &txlog.StructType{Fields: []txlog.StructField{{Name: "id", Type: txlog.PrimitiveType{Name: "long"}, Nullable: true}}}
	props := map[string]string{}
	if feed {
		props[table.ChangeFeedProperty] = "true"
	}
	if _, err := tbl.Create(ctx, schema, nil, props); err != nil {
		t.Fatal(err)
	}
	var first *txlog.Add
	for _, files := range [][][]int64{{{1, 2}}, {{3}}, {{4}, {5}}} {
		var batches []*pq.Batch
		for _, ids := range files {
			batch, err := pq.NewBatch(schema)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				batch.Columns[0].AppendInt64(id)
			}
			batches = append(batches, batch)
		}
		// One DataWriter per batch: one file each.
		var adds []*txlog.Add
		for _, batch := range batches {
			w, err := tbl.Writer(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write(ctx, batch); err != nil {
				t.Fatal(err)
			}
			a, err := w.Close(ctx)
			if err != nil {
				t.Fatal(err)
			}
			adds = append(adds, a...)
		}
		if _, err := tbl.CommitFiles(ctx, adds, table.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = adds[0]
		}
	}
	data, err := txlog.MarshalActions([]txlog.Action{{Remove: tbl.RemoveOf(first, true)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := objstore.PutBytesIfAbsent(ctx, b, txlog.CommitKey(4), data); err != nil {
		t.Fatal(err)
	}
	snap, err := tbl.Log().Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return b, snap.Metadata().ID
}

// drainChanges reads batches until one is empty, returning each batch's rows as
// "id|change|version" (sorted within the batch) and the last offset.
func drainChanges(t *testing.T, src *ChangeSource, start *Offset, until int64, limit ReadLimit) ([][]string, *Offset) {
	t.Helper()
	var batches [][]string
	for {
		got, next, err := src.NextBatch(context.Background(), start, until, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			if start != nil && next != *start {
				t.Fatalf("no files but the offset moved from %v to %v", *start, next)
			}
			return batches, start
		}
		var rows []string
		for _, cr := range got {
			for r := 0; r < cr.Rows.Len(); r++ {
				rows = append(rows, fmt.Sprintf("%d|%s|%d", cr.Rows.Column("id").Int64[r],
					cr.Rows.Column(table.ChangeTypeColumn).StringAt(r), cr.Rows.Column(table.CommitVersionColumn).Int64[r]))
			}
		}
		slices.Sort(rows)
		batches = append(batches, rows)
		start = &next
	}
}

// TestChangeSourceVersionsAndLimits: from a starting version the stream delivers each version's
// change rows in order (inserts of appends, the deletes of a removed file), one file a batch under
// maxFilesPerTrigger=1, and the same rows again from any offset it returned (a restart).
func TestChangeSourceVersionsAndLimits(t *testing.T) {
	b, id := changeTable(t, true)
	src := NewChanges(b, table.Options{})
	start := StartAt(id, 1)
	batches, end := drainChanges(t, src, &start, 4, ReadLimit{MaxFiles: 1})
	want := [][]string{{"1|insert|1", "2|insert|1"}, {"3|insert|2"}, {"4|insert|3"}, {"5|insert|3"}, {"1|delete|4", "2|delete|4"}}
	if fmt.Sprint(batches) != fmt.Sprint(want) {
		t.Fatalf("batches\n got %v\nwant %v", batches, want)
	}
	if end == nil || end.ReservoirVersion != 5 || end.Index != -1 {
		t.Fatalf("end offset %+v, want version 5 index -1", end)
	}
	// From the middle of version 3 (after its first file): the rest, in one batch.
	mid := Offset{SourceVersion: 1, ReservoirID: id, ReservoirVersion: 3, Index: 0}
	if batches, _ := drainChanges(t, src, &mid, 4, ReadLimit{}); fmt.Sprint(batches) != fmt.Sprint([][]string{{"1|delete|4", "2|delete|4", "5|insert|3"}}) {
		t.Fatalf("from (3, 0): %v", batches)
	}
	// maxBytesPerTrigger is soft: the file that reaches it ends the batch.
	if batches, _ := drainChanges(t, src, &start, 4, ReadLimit{MaxBytes: 1}); len(batches) != 5 {
		t.Fatalf("MaxBytes 1: %d batches, want one a file (5)", len(batches))
	}
	// Nothing new: the offset stays.
	got, next, err := src.NextBatch(context.Background(), end, 4, ReadLimit{})
	if err != nil || len(got) != 0 || next != *end {
		t.Fatalf("past the end: %d rows, offset %+v, %v", len(got), next, err)
	}
}

// TestChangeSourceFreshStream: a stream without an offset starts with the snapshot at the
// version it first sees, as inserts stamped with that version, then goes on with the changes.
func TestChangeSourceFreshStream(t *testing.T) {
	b, _ := changeTable(t, true)
	src := NewChanges(b, table.Options{})
	got, next, err := src.NextBatch(context.Background(), nil, 3, ReadLimit{})
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, cr := range got {
		for r := 0; r < cr.Rows.Len(); r++ {
			rows = append(rows, fmt.Sprintf("%d|%s|%d", cr.Rows.Column("id").Int64[r],
				cr.Rows.Column(table.ChangeTypeColumn).StringAt(r), cr.Rows.Column(table.CommitVersionColumn).Int64[r]))
		}
	}
	slices.Sort(rows)
	if want := []string{"1|insert|3", "2|insert|3", "3|insert|3", "4|insert|3", "5|insert|3"}; !slices.Equal(rows, want) {
		t.Fatalf("snapshot rows %v, want %v", rows, want)
	}
	batches, _ := drainChanges(t, src, &next, 4, ReadLimit{})
	if fmt.Sprint(batches) != fmt.Sprint([][]string{{"1|delete|4", "2|delete|4"}}) {
		t.Fatalf("after the snapshot: %v", batches)
	}
}

// TestChangeSourceFeedOff: a table without the feed is refused with table.ErrChangeFeedOff.
func TestChangeSourceFeedOff(t *testing.T) {
	b, id := changeTable(t, false)
	start := StartAt(id, 1)
	if _, _, err := NewChanges(b, table.Options{}).NextBatch(context.Background(), &start, 4, ReadLimit{}); !errors.Is(err, table.ErrChangeFeedOff) {
		t.Fatalf("feed off: %v", err)
	}
}
