package pq_test

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
)

const flatFieldsSchema = `{"type":"struct","fields":[
{"name":"w","type":{"type":"struct","fields":[
 {"name":"a","type":"long","nullable":true,"metadata":{}},
 {"name":"b","type":"long","nullable":false,"metadata":{}},
 {"name":"s","type":"string","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},
{"name":"r","type":{"type":"struct","fields":[
 {"name":"x","type":"double","nullable":true,"metadata":{}}]},"nullable":false,"metadata":{}}]}`

// A struct of primitive fields is shredded a field at a time when none of a run's structs is
// null, and a value at a time otherwise: both must give every leaf the definition levels the
// Parquet spec does, which parquet-go's own row reader checks here (rows whose fields are null
// in present structs, null structs in one run of rows only, runs of ShredChunk rows).
func TestWriteFlatStructLevels(t *testing.T) {
	const rows = 3*pq.ShredChunk + 100
	nullStruct := func(i int) bool { return i >= pq.ShredChunk+10 && i < pq.ShredChunk+50 }
	batch, err := pq.NewBatch(pqtest.MustSchema(t, flatFieldsSchema))
	if err != nil {
		t.Fatal(err)
	}
	w, r := batch.Columns[0], batch.Columns[1]
	for i := range rows {
		if nullStruct(i) {
			w.AppendNull() // appends its fields' placeholders too
		} else {
			if i%7 == 0 {
				w.Children[0].AppendNull()
			} else {
				w.Children[0].AppendInt64(int64(i))
			}
			w.Children[1].AppendInt64(int64(-i))
			if i%5 == 0 {
				w.Children[2].AppendNull()
			} else {
				w.Children[2].AppendBytes(fmt.Appendf(nil, "s%d", i))
			}
			w.AppendStruct()
		}
		if i%3 == 0 {
			r.Children[0].AppendNull()
		} else {
			r.Children[0].AppendFloat64(float64(i) / 4)
		}
		r.AppendStruct()
	}
	data, _, err := pq.EncodeFile(batch.Schema, []*pq.Batch{batch}, pq.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	got := make([]parquet.Row, 0, rows)
	for _, rg := range f.RowGroups() {
		rr := rg.Rows()
		buf := make([]parquet.Row, 512)
		for {
			n, err := rr.ReadRows(buf)
			for _, row := range buf[:n] {
				got = append(got, row.Clone())
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		rr.Close()
	}
	if len(got) != rows {
		t.Fatalf("read %d rows, want %d", len(got), rows)
	}
	// want is a leaf's value and definition level, worked out from the spec: w optional (1),
	// w.a and w.s optional (2), w.b required (1); r required (0), r.x optional (1).
	type leaf struct {
		def  int
		null bool
		v    string
	}
	for i, row := range got {
		var want [4]leaf
		switch {
		case nullStruct(i):
			want = [4]leaf{{0, true, ""}, {0, true, ""}, {0, true, ""}, {}}
		default:
			want[0] = leaf{2, false, fmt.Sprint(i)}
			if i%7 == 0 {
				want[0] = leaf{1, true, ""}
			}
			want[1] = leaf{1, false, fmt.Sprint(-i)}
			want[2] = leaf{2, false, fmt.Sprintf("s%d", i)}
			if i%5 == 0 {
				want[2] = leaf{1, true, ""}
			}
		}
		want[3] = leaf{1, false, fmt.Sprint(float64(i) / 4)}
		if i%3 == 0 {
			want[3] = leaf{0, true, ""}
		}
		if len(row) != 4 {
			t.Fatalf("row %d: %d leaf values, want 4", i, len(row))
		}
		for c, v := range row {
			g := leaf{v.DefinitionLevel(), v.IsNull(), ""}
			if !v.IsNull() {
				g.v = v.String()
			}
			if g != want[c] {
				t.Fatalf("row %d leaf %d: got %+v, want %+v", i, c, g, want[c])
			}
		}
	}
}
