package table

import (
	"context"
	"slices"
	"testing"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// A Table keeps its latest snapshot between batches; when the table goes back (restored from
// an older backup) it drops it: Latest reports the version the table has, the rows are the
// backup's, and the next append commits after it.
func TestLatestAfterRestore(t *testing.T) {
	ctx := context.Background()
	tbl, b := newTable(t, nil, Options{})
	for i := range 3 {
		if _, err := tbl.Append(ctx, []*pq.Batch{events(t, "a", i*10, 10)}, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if s, err := tbl.Latest(ctx); err != nil || s.Version() != 3 {
		t.Fatalf("latest = %v, %v; want version 3", s, err)
	}
	for _, v := range []int64{2, 3} { // the backup holds versions 0..1
		if err := b.Delete(ctx, txlog.CommitKey(v)); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if s, err := tbl.Latest(ctx); err != nil || s.Version() != 1 {
			t.Fatalf("latest after the restore = %v, %v; want version 1", s, err)
		}
	}
	if got, want := scanIDs(t, tbl, ScanOptions{}), ids("a", 0, 10); !slices.Equal(got, want) {
		t.Errorf("rows after the restore = %v, want %v", got, want)
	}
	r, err := tbl.Append(ctx, []*pq.Batch{events(t, "b", 0, 5)}, AppendOptions{})
	if err != nil || r.Version != 2 {
		t.Fatalf("append after the restore = %+v, %v; want version 2", r, err)
	}
}
