package pq_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
)

// Integer columns of few distinct values get a dictionary (gold's window bounds, counts and
// late_rows), the others stay PLAIN, and a bloom-filtered one never gets one; the file reads
// back to the rows written.
func TestIntDictionaryChoice(t *testing.T) {
	const rows = 5000
	batch := goldWriteBatch(t, rows)
	cases := []struct {
		name  string
		opts  pq.WriteOptions
		dicts map[string]bool // leaf path -> has a dictionary page
	}{
		{"default", pq.WriteOptions{}, map[string]bool{
			"window.start": true, "window.end": true, "device_id": false, "count": true,
			"total_amount": false, "late_rows": true, "_total_amount_exact": false}},
		{"bloom on count", pq.WriteOptions{BloomFilterColumns: []string{"count", "device_id"}}, map[string]bool{
			"window.start": true, "window.end": true, "device_id": false, "count": false,
			"total_amount": false, "late_rows": true, "_total_amount_exact": false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data, _, err := pq.EncodeFile(batch.Schema, []*pq.Batch{batch}, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			for _, rg := range f.Metadata().RowGroups {
				for _, cc := range rg.Columns {
					path := cc.MetaData.PathInSchema
					name := path[0]
					if len(path) > 1 {
						name += "." + path[1]
					}
					dict := slices.Contains(cc.MetaData.Encoding, format.RLEDictionary)
					if dict != tc.dicts[name] {
						t.Errorf("column %s: encodings %v, want a dictionary: %v", name, cc.MetaData.Encoding, tc.dicts[name])
					}
				}
			}
			got, err := pq.DecodeFile(bytes.NewReader(data), int64(len(data)), batch.Schema)
			if err != nil {
				t.Fatal(err)
			}
			i := 0
			for _, b := range got {
				for k := range b.Len() {
					for c := range batch.Columns {
						if w, g := batch.Columns[c].Value(i), b.Columns[c].Value(k); !pqtest.SameValue(w, g) {
							t.Fatalf("row %d column %d: got %v, want %v", i, c, g, w)
						}
					}
					i++
				}
			}
			if i != rows {
				t.Fatalf("read %d rows, want %d", i, rows)
			}
		})
	}
}
