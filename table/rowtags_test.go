package table

import (
	"context"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

var eventTags = RowTags{Group: "event_time", Exclude: []string{"amount"}}

// hashScan is the oracle of a table's tags: its rows read back and hashed one by one.
func hashScan(t *testing.T, tbl *Table, h *RowHasher) (GroupSums, int64) {
	t.Helper()
	sums, rows := GroupSums{}, int64(0)
	for b, err := range tbl.Scan(context.Background(), ScanOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Len() {
			rows++
			if g, hash, ok := h.Row(b.Columns, i); ok {
				sums.Add(g, hash)
			}
		}
	}
	return sums, rows
}

// eventHasher returns tbl's snapshot, schema and row hasher for eventTags.
func eventHasher(t *testing.T, tbl *Table) (*txlog.Snapshot, *txlog.StructType, *RowHasher) {
	t.Helper()
	snap, err := tbl.Log().Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	schema, err := snap.Schema()
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewRowHasher(snap, schema, eventTags)
	if err != nil {
		t.Fatal(err)
	}
	return snap, schema, h
}

// matchScan checks that tag sums got equal the hashes of tbl's rows read back (hashScan),
// which number rows in groups groups.
func matchScan(t *testing.T, tbl *Table, h *RowHasher, got GroupSums, rows int64, groups int) {
	t.Helper()
	want, n := hashScan(t, tbl, h)
	if n != rows || len(want) != groups || len(got) != len(want) {
		t.Fatalf("%d rows and %d groups read back (want %d and %d); the tags hold %d groups", n, len(want), rows, groups, len(got))
	}
	for g, s := range want {
		if got[g] != s {
			t.Errorf("group %d: the tags sum to %x, the rows read back hash to %x", g, got[g], s)
		}
	}
}

// TestRowTags: the tags an append writes sum, over the files, to the hashes of the rows read
// back; the excluded column does not move them; and a tag is trusted only as it was written
// for this table, schema and file.
func TestRowTags(t *testing.T) {
	ctx := context.Background()
	tbl, _ := newTable(t, nil, Options{})
	for _, from := range []int{0, 5} { // two files; hour 5 of the first reappears in the second
		if _, err := tbl.Append(ctx, []*pq.Batch{events(t, "a", from, 6)}, AppendOptions{RowTags: &eventTags}); err != nil {
			t.Fatal(err)
		}
	}
	snap, schema, h := eventHasher(t, tbl)
	got := GroupSums{}
	for _, f := range snap.Files() {
		sums, ok := h.Trusted(f)
		if !ok {
			t.Fatalf("%s: tag %q not trusted", f.Path, f.Tags[RowTagKey])
		}
		for g, s := range sums {
			got.Add(g, s)
		}
	}
	matchScan(t, tbl, h, got, 12, 11)
	// The excluded column does not enter a row's hash; any other column does.
	b := events(t, "a", 0, 1)
	_, h0, _ := h.Row(b.Columns, 0)
	b.Columns[2].Float64[0]++
	if _, h1, _ := h.Row(b.Columns, 0); h1 != h0 {
		t.Error("the excluded column changed the row's hash")
	}
	b.Columns[1].Data[0]++
	if _, h2, _ := h.Row(b.Columns, 0); h2 == h0 {
		t.Error("a hashed column did not change the row's hash")
	}

	f := snap.Files()[0]
	with := func(edit func(a *txlog.Add)) *txlog.Add {
		c := *f
		c.Tags = map[string]string{RowTagKey: f.Tags[RowTagKey]}
		edit(&c)
		return &c
	}
	other, _ := newTable(t, nil, Options{}) // same schema, another table id: another key
	osnap, err := other.Log().Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	oh, err := NewRowHasher(osnap, schema, eventTags)
	if err != nil {
		t.Fatal(err)
	}
	wider := &txlog.StructType{Fields: append(append([]txlog.StructField{}, schema.Fields...),
		txlog.StructField{Name: "extra", Type: txlog.PrimitiveType{Name: txlog.TypeLong}, Nullable: true})}
	wh, err := NewRowHasher(snap, wider, eventTags)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		h    *RowHasher
		a    *txlog.Add
	}{
		{"no tag", h, with(func(a *txlog.Add) { a.Tags = nil })},
		{"unknown format", h, with(func(a *txlog.Add) { a.Tags[RowTagKey] = "r9" + a.Tags[RowTagKey][2:] })},
		{"row count off", h, with(func(a *txlog.Add) { a.Stats = strings.Replace(a.Stats, `"numRecords":6`, `"numRecords":5`, 1) })},
		{"no stats", h, with(func(a *txlog.Add) { a.Stats = "" })},
		{"deletion vector", h, with(func(a *txlog.Add) {
			a.DeletionVector = &txlog.DeletionVector{StorageType: "u", PathOrInlineDv: "ab", SizeInBytes: 1, Cardinality: 1}
		})},
		{"bad group", h, with(func(a *txlog.Add) { a.Tags[RowTagKey] += " x:00" })},
		{"another table's key", oh, f},
		{"another schema", wh, f},
	} {
		if _, ok := tc.h.Trusted(tc.a); ok {
			t.Errorf("%s: trusted", tc.name)
		}
	}
	if _, ok := h.Trusted(with(func(*txlog.Add) {})); !ok {
		t.Error("an unedited copy is not trusted: the cases above prove nothing")
	}
	if !strings.Contains(f.Stats, `"numRecords":6`) {
		t.Fatalf("stats %s: the row count case edits nothing", f.Stats)
	}
}

// TestRowTagsTooManyGroups: a file of more groups than a tag may hold has no tag (read when
// it matters), and the rest of the write is unchanged.
func TestRowTagsTooManyGroups(t *testing.T) {
	ctx := context.Background()
	tbl, _ := newTable(t, nil, Options{})
	if _, err := tbl.Append(ctx, []*pq.Batch{events(t, "a", 0, maxTagGroups+1)}, AppendOptions{RowTags: &eventTags}); err != nil {
		t.Fatal(err)
	}
	snap, err := tbl.Log().Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range snap.Files() {
		if _, ok := f.Tags[RowTagKey]; ok {
			t.Errorf("%s has a tag of %d bytes", f.Path, len(f.Tags[RowTagKey]))
		}
	}
	if n := len(scanIDs(t, tbl, ScanOptions{})); n != maxTagGroups+1 {
		t.Errorf("%d rows read back", n)
	}
}
