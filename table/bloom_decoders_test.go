package table

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
	"github.com/medallion-lake/medallion/txlog"
)

// Bloom filter look-ups (FileScan.MayContain) where a filtered column is null in whole row
// groups or in the whole file: the filter of such a chunk holds no value (or is not written),
// which must answer "absent" (or "maybe") for non-null keys, never fail, and must not hide the
// row groups where the key is.
func TestDecodersBloomAllNullChunks(t *testing.T) {
	ctx := context.Background()
	schema := pqtest.MustSchema(t, `{"type":"struct","fields":[
{"name":"k","type":"string","nullable":true,"metadata":{}},
{"name":"n","type":"long","nullable":true,"metadata":{}},
{"name":"i","type":"integer","nullable":true,"metadata":{}}]}`)
	const rows, rg = 1000, 250
	b, err := pq.NewBatch(schema)
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < rows; r++ {
		if g := r / rg; g == 0 || g == 2 { // k null in row groups 0 and 2
			b.Columns[0].AppendNull()
		} else {
			b.Columns[0].AppendString(fmt.Sprintf("key-%d", r))
		}
		b.Columns[1].AppendNull() // n null everywhere
		if r == rows-1 {
			b.Columns[2].AppendInt32(42) // i: only the very last row
		} else {
			b.Columns[2].AppendNull()
		}
	}
	data, _, err := pq.EncodeFile(schema, []*pq.Batch{b}, pq.WriteOptions{RowGroupRows: rg, BloomFilterColumns: []string{"k", "n", "i"}})
	if err != nil {
		t.Fatal(err)
	}
	// A file with the same columns written by parquet-go directly, with the null chunks of
	// another writer (and its filter sizing).
	type pgRow struct {
		K *string `parquet:"k,optional"`
		N *int64  `parquet:"n,optional"`
		I *int32  `parquet:"i,optional"`
	}
	var pg []pgRow
	for r := 0; r < rows; r++ {
		var row pgRow
		if g := r / rg; g != 0 && g != 2 {
			s := fmt.Sprintf("key-%d", r)
			row.K = &s
		}
		if r == rows-1 {
			v := int32(42)
			row.I = &v
		}
		pg = append(pg, row)
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[pgRow](&buf, parquet.MaxRowsPerRowGroup(rg), parquet.BloomFilters(
		parquet.SplitBlockFilter(10, "k"), parquet.SplitBlockFilter(10, "n"), parquet.SplitBlockFilter(10, "i")))
	if _, err := w.Write(pg); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	bucket := mem.New()
	for name, file := range map[string][]byte{"ours.parquet": data, "parquet-go.parquet": buf.Bytes()} {
		t.Run(name, func(t *testing.T) {
			if err := objstore.PutBytes(ctx, bucket, name, file); err != nil {
				t.Fatal(err)
			}
			f, err := parquet.OpenFile(bytes.NewReader(file), int64(len(file)))
			if err != nil {
				t.Fatal(err)
			}
			if len(f.RowGroups()) != rows/rg {
				t.Fatalf("%d row groups, want %d", len(f.RowGroups()), rows/rg)
			}
			add := &txlog.Add{Path: name, Size: int64(len(file))}
			fs := &FileScan{Bucket: bucket, Schema: schema}
			keys := func(col string, vals ...any) *pq.Batch {
				kb, err := pq.NewBatch(&txlog.StructType{Fields: []txlog.StructField{*schema.Field(col)}})
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range vals {
					if err := kb.Columns[0].AppendValue(v); err != nil {
						t.Fatal(err)
					}
				}
				return kb
			}
			// k: keys of row groups 1 and 3 are found; keys of the null row groups are not
			// in the file at all.
			got, err := fs.MayContain(ctx, add, keys("k", "key-250", "key-499", "key-750", "key-999", nil))
			if err != nil {
				t.Fatal(err)
			}
			for i, g := range got {
				if !g {
					t.Errorf("k key %d: present key ruled out", i)
				}
			}
			absent := []any{}
			for r := 0; r < 40; r++ {
				absent = append(absent, fmt.Sprintf("key-%d", r)) // rows whose k is null
			}
			got, err = fs.MayContain(ctx, add, keys("k", absent...))
			if err != nil {
				t.Fatal(err)
			}
			fp := 0
			for _, g := range got {
				if g {
					fp++
				}
			}
			if fp > 4 {
				t.Errorf("k: %d of %d absent keys may be present", fp, len(absent))
			}
			// n: null in every row; a non-null key is in no row (a filter of no values, or
			// none at all: "maybe"), and asking must not fail.
			got, err = fs.MayContain(ctx, add, keys("n", int64(0), int64(7), nil))
			if err != nil {
				t.Fatalf("n (all null): %v", err)
			}
			if !got[2] {
				t.Errorf("n: a null key must answer maybe")
			}
			t.Logf("n (all null) answers %v", got)
			// i: only the last row of the last row group.
			got, err = fs.MayContain(ctx, add, keys("i", int32(42), int32(43)))
			if err != nil {
				t.Fatal(err)
			}
			if !got[0] {
				t.Errorf("i: the last row's value is ruled out")
			}
		})
	}
}
