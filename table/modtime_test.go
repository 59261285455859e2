package table

import (
	"context"
	"testing"

	"github.com/medallion-lake/medallion/txlog"
)

// TestSequenceModTimes: a commit's files get strictly increasing modification times in the
// order listed, above every file of the table, whatever times their writers gave them, so that
// a snapshot's Delta-stream order (modification time, then path) is the commit order.
func TestSequenceModTimes(t *testing.T) {
	ctx := context.Background()
	tbl, _ := newTable(t, nil, Options{})
	snap, err := tbl.Log().Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.Log().Begin(snap)
	tx.Add(&txlog.Add{Path: "old-1.parquet", ModificationTime: 9000, DataChange: true},
		&txlog.Add{Path: "old-2.parquet", ModificationTime: 7000, DataChange: true})
	if _, err := tx.Commit(ctx, txlog.Operation{Name: "WRITE"}); err != nil {
		t.Fatal(err)
	}
	if snap, err = tbl.Log().Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	// Written in parallel: the last listed finished first; two share a millisecond.
	adds := []*txlog.Add{{Path: "z.parquet", ModificationTime: 8000}, {Path: "a.parquet", ModificationTime: 12000},
		{Path: "m.parquet", ModificationTime: 12000}, {Path: "b.parquet", ModificationTime: 5000}}
	SequenceModTimes(snap, adds)
	want := []int64{9001, 12000, 12001, 12002}
	for i, a := range adds {
		if a.ModificationTime != want[i] {
			t.Fatalf("file %d (%s) has modification time %d, want %d", i, a.Path, a.ModificationTime, want[i])
		}
	}
}
