package pq_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
)

// TestRowGroupRowsMatchesTheWholeGroup reads row ranges of row groups of many small pages
// (every layout readFlat takes: dictionary and plain, nulls) page by page, with and without
// the offset index loaded, and checks each against the same rows of the whole group: ranges
// that start and end inside pages, span several, and cover the group.
func TestRowGroupRowsMatchesTheWholeGroup(t *testing.T) {
	const n = 5000
	rows := flatRows(n, func(i int, word string) string { return fmt.Sprintf("%s-%d", word, i) }, 0, 0)
	buf := writeFlat(t, rows)
	schema := pqtest.MustSchema(t, flatSchema)
	rangeSets := [][][2]int64{
		{{0, 1}},
		{{5, 6}, {100, 400}, {401, 402}, {1000, 1800}},
		{{0, 1800}},
		{{17, 1201}},
		{{1799, 1800}},
	}
	for _, indexed := range []bool{false, true} {
		f, err := pq.OpenParquet(bytes.NewReader(buf.Bytes()), int64(buf.Len()), parquet.SkipPageIndex(true))
		if err != nil {
			t.Fatal(err)
		}
		fr, err := pq.NewFileReader(f, schema)
		if err != nil {
			t.Fatal(err)
		}
		for g, rg := range f.RowGroups() {
			if indexed {
				for _, cc := range rg.ColumnChunks() {
					if _, err := cc.OffsetIndex(); err != nil {
						t.Fatal(err)
					}
				}
			}
			whole, err := fr.RowGroup(g)
			if err != nil {
				t.Fatal(err)
			}
			pages := 0
			if oi, err := rg.ColumnChunks()[5].OffsetIndex(); err == nil {
				pages = oi.NumPages()
			}
			if pages < 10 {
				t.Fatalf("row group %d: column p has %d pages, want many", g, pages)
			}
			for _, ranges := range rangeSets {
				var want [][]any
				for _, r := range ranges {
					for i := r[0]; i < min(r[1], int64(whole.Len())); i++ {
						want = append(want, whole.Row(int(i)))
					}
				}
				if ranges[len(ranges)-1][1] > rg.NumRows() {
					continue
				}
				got, err := fr.RowGroupRows(g, ranges)
				if err != nil {
					t.Fatalf("row group %d, ranges %v: %v", g, ranges, err)
				}
				if got.Len() != len(want) {
					t.Fatalf("row group %d, ranges %v: %d rows, want %d", g, ranges, got.Len(), len(want))
				}
				for k := range want {
					if a, b := fmt.Sprint(got.Row(k)), fmt.Sprint(want[k]); a != b {
						t.Fatalf("indexed %v, row group %d, ranges %v, row %d: %s, want %s", indexed, g, ranges, k, a, b)
					}
				}
			}
		}
	}
}

// TestRowGroupRowsRejectsBadRanges checks that ranges out of order or past the group fail.
func TestRowGroupRowsRejectsBadRanges(t *testing.T) {
	batch := pqtest.BenchBatch(t, 3000)
	data, _, err := pq.EncodeFile(batch.Schema, []*pq.Batch{batch}, pq.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := pq.OpenParquet(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pq.NewFileReader(f, batch.Schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, ranges := range [][][2]int64{{{0, 3001}}, {{10, 5}}, {{0, 10}, {5, 20}}, {{-1, 2}}} {
		if _, err := fr.RowGroupRows(0, ranges); err == nil {
			t.Fatalf("ranges %v: no error", ranges)
		}
	}
}
