package table

import (
	"context"
	"fmt"
	"testing"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// taggedRows are batches of 100 groups (event hours) each, two of them over ShredChunk rows so
// that a file can roll over in the middle of a batch.
func taggedRows(t *testing.T) []*pq.Batch {
	t.Helper()
	big := func(prefix string, copies int) *pq.Batch {
		b := events(t, prefix, 0, 100)
		for k := range copies {
			e := events(t, fmt.Sprintf("%s%d", prefix, k), 0, 100)
			b.AppendRange(e, 0, e.Len())
		}
		return b
	}
	return []*pq.Batch{big("a", 60), events(t, "b", 50, 100), big("c", 45)}
}

// sumsOf hashes rows one by one, as the writer's tags do.
func sumsOf(t *testing.T, schema *txlog.StructType, h *RowHasher, rows []*pq.Batch) GroupSums {
	t.Helper()
	s := GroupSums{}
	for _, b := range rows {
		cols, err := pq.Conform(schema, b)
		if err != nil {
			t.Fatal(err)
		}
		h.SumRows(s, cols, b.Len())
	}
	return s
}

// TestWriteTaggedMatchesHashing: the tags of files written by WriteTagged from sums handed to
// it are those of the same rows hashed one by one as they are written, with rows hashed before
// and after in the same files, whether the write stays in one file or rolls over in the middle
// of a batch and between batches; sums that do not match the rows' groups leave no tag.
func TestWriteTaggedMatchesHashing(t *testing.T) {
	ctx := context.Background()
	tbl, bucket := newTable(t, nil, Options{})
	_, schema, h := eventHasher(t, tbl)
	rows := taggedRows(t)
	write := func(target int64, tagged bool, sums GroupSums) []*txlog.Add {
		t.Helper()
		w, err := NewDataWriter(bucket, schema, nil, pq.WriteOptions{TargetFileSize: target})
		if err != nil {
			t.Fatal(err)
		}
		w.SetRowTags(h)
		if err := w.Write(ctx, events(t, "pre", 0, 5)); err != nil {
			t.Fatal(err)
		}
		if tagged {
			err = w.WriteTagged(ctx, rows, sums)
		} else {
			err = writeAll(ctx, w, rows)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(ctx, events(t, "post", 3, 5)); err != nil {
			t.Fatal(err)
		}
		adds, err := w.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return adds
	}
	for _, target := range []int64{1 << 30, 1} { // one file; a file every ShredChunk rows
		want, got := write(target, false, nil), write(target, true, sumsOf(t, schema, h, rows))
		if target == 1 && len(want) < 4 {
			t.Fatalf("target %d: %d files: no roll over to test", target, len(want))
		}
		if len(got) != len(want) {
			t.Fatalf("target %d: %d files tagged, %d hashed", target, len(got), len(want))
		}
		for i := range want {
			if w, g := want[i].Tags[RowTagKey], got[i].Tags[RowTagKey]; w == "" || g != w {
				t.Errorf("target %d, file %d: tag from sums\n%q\nhashed\n%q", target, i, g, w)
			}
		}
	}
	for name, edit := range map[string]func(GroupSums){
		"a group no row holds": func(s GroupSums) { s.Add(-1, [2]uint64{1, 0}) },
		"a group missing":      func(s GroupSums) { delete(s, rows[1].Columns[3].Int64[0]) },
	} {
		sums := sumsOf(t, schema, h, rows)
		edit(sums)
		if got := write(1<<30, true, sums); len(got) != 1 || got[0].Tags[RowTagKey] != "" {
			t.Errorf("sums with %s: %d files, tag %q (want one untagged)", name, len(got), got[0].Tags[RowTagKey])
		}
	}
}
