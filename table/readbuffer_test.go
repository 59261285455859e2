package table

import (
	"context"
	"slices"
	"testing"

	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
	"github.com/medallion-lake/medallion/txlog"
)

// TestReadWithSharedBuffer reads files of every type, with and without nulls, small and large,
// through one ReadBuffer and checks each batch, rendered before the next is read, against a
// plain Read.
func TestReadWithSharedBuffer(t *testing.T) {
	ctx := context.Background()
	all, _ := pqtest.AllTypesBatch(t)
	tbl := Open(mem.New(), Options{})
	if _, err := tbl.Create(ctx, all.Schema, nil, nil); err != nil {
		t.Fatal(err)
	}
	// Files of 1, all and 3x all rows, so that a later file needs more room than the last.
	one, err := pq.NewBatch(all.Schema)
	if err != nil {
		t.Fatal(err)
	}
	one.AppendRow(all, all.Len()-1)
	for _, bs := range [][]*pq.Batch{{all}, {one}, {all, all, all}} {
		if _, err := tbl.Append(ctx, bs, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := tbl.FileScan(snap, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	render := func(b *pq.Batch) []string {
		var rows []string
		for i := range b.Len() {
			rows = append(rows, string(pq.AppendJSONRow(nil, b, i)))
		}
		return rows
	}
	var want, got []string
	for b, err := range fs.Read(ctx, snap.Files()) {
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, render(b)...)
	}
	var buf pq.ReadBuffer
	for _, add := range snap.Files() {
		for b, err := range fs.ReadWith(ctx, []*txlog.Add{add}, &buf) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, render(b)...)
		}
	}
	if len(want) != 5*all.Len()-(all.Len()-1) || !slices.Equal(got, want) {
		t.Fatalf("shared buffer read %d rows, plain read %d:\n%q\n%q", len(got), len(want), got, want)
	}
}
