package pq_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
)

// flatRow covers every physical layout readFlat decodes: dictionary and plain pages,
// required and optional columns with nulls, timestamp units, and widening reads.
type flatRow struct {
	L  *int64   `parquet:"l,optional,dict"`
	I  int32    `parquet:"i,dict"`
	D  *float64 `parquet:"d,optional,dict"`
	F  float32  `parquet:"f,dict"`
	S  *string  `parquet:"s,optional,dict"`
	P  *string  `parquet:"p,optional,plain"`
	Ms int64    `parquet:"ms,timestamp(millisecond)"`
	Ns int64    `parquet:"ns,timestamp(nanosecond)"`
	LI int32    `parquet:"li"`
	FD float32  `parquet:"fd"`
}

const flatSchema = `{"type":"struct","fields":[
{"name":"l","type":"long","nullable":true,"metadata":{}},
{"name":"i","type":"integer","nullable":false,"metadata":{}},
{"name":"d","type":"double","nullable":true,"metadata":{}},
{"name":"f","type":"float","nullable":false,"metadata":{}},
{"name":"s","type":"string","nullable":true,"metadata":{}},
{"name":"p","type":"string","nullable":true,"metadata":{}},
{"name":"ms","type":"timestamp","nullable":false,"metadata":{}},
{"name":"ns","type":"timestamp","nullable":false,"metadata":{}},
{"name":"li","type":"long","nullable":false,"metadata":{}},
{"name":"fd","type":"double","nullable":false,"metadata":{}}]}`

func TestReadFlatLayouts(t *testing.T) {
	const n = 5000
	words := []string{"alpha", "", "gamma", "delta-delta", "é"}
	rows := make([]flatRow, n)
	for i := range rows {
		r := &rows[i]
		if i%7 != 3 {
			l, d := int64(i%13)-6, float64(i%5)*1.5
			r.L, r.D = &l, &d
		}
		if i%11 != 0 {
			s := words[i%len(words)]
			r.S = &s
		}
		if i%3 != 0 {
			p := words[(i/3)%len(words)] + "-plain"
			r.P = &p
		}
		r.I, r.F = int32(i%9), float32(i%4)/4
		r.Ms, r.Ns = int64(i)*1001-2000, int64(i)*999_999-5_000_500
		r.LI, r.FD = int32(-i), float32(i)/8
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[flatRow](&buf, parquet.PageBufferSize(512), parquet.MaxRowsPerRowGroup(1800),
		parquet.DataPageVersion(1))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	schema := pqtest.MustSchema(t, flatSchema)
	batches, err := pq.DecodeFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()), schema)
	if err != nil {
		t.Fatal(err)
	}
	if len(batches) < 3 {
		t.Fatalf("got %d row groups, want at least 3", len(batches))
	}
	floorMicros := func(ns int64) int64 {
		if ns < 0 && ns%1000 != 0 {
			return ns/1000 - 1
		}
		return ns / 1000
	}
	i := 0
	for _, b := range batches {
		if err := b.Validate(); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < b.Len(); k, i = k+1, i+1 {
			r := rows[i]
			c := b.Columns
			if (r.L == nil) != c[0].IsNull(k) || (r.L != nil && c[0].Int64[k] != *r.L) {
				t.Fatalf("row %d: l = %v null=%v, want %v", i, c[0].Int64[k], c[0].IsNull(k), r.L)
			}
			if (r.D == nil) != c[2].IsNull(k) || (r.D != nil && c[2].Float64[k] != *r.D) {
				t.Fatalf("row %d: d = %v, want %v", i, c[2].Float64[k], r.D)
			}
			if (r.S == nil) != c[4].IsNull(k) || (r.S != nil && c[4].StringAt(k) != *r.S) {
				t.Fatalf("row %d: s = %q null=%v, want %v", i, c[4].StringAt(k), c[4].IsNull(k), r.S)
			}
			if (r.P == nil) != c[5].IsNull(k) || (r.P != nil && c[5].StringAt(k) != *r.P) {
				t.Fatalf("row %d: p = %q, want %v", i, c[5].StringAt(k), r.P)
			}
			if c[1].Int32[k] != r.I || c[3].Float32[k] != r.F {
				t.Fatalf("row %d: i, f = %d, %v, want %d, %v", i, c[1].Int32[k], c[3].Float32[k], r.I, r.F)
			}
			if c[6].Int64[k] != r.Ms*1000 || c[7].Int64[k] != floorMicros(r.Ns) {
				t.Fatalf("row %d: ms, ns = %d, %d, want %d, %d", i, c[6].Int64[k], c[7].Int64[k], r.Ms*1000, floorMicros(r.Ns))
			}
			if c[8].Int64[k] != int64(r.LI) || c[9].Float64[k] != float64(r.FD) {
				t.Fatalf("row %d: li, fd = %d, %v", i, c[8].Int64[k], c[9].Float64[k])
			}
		}
	}
	if i != n {
		t.Fatalf("read %d rows, want %d", i, n)
	}
}

// TestReadFlatTruncated checks that a file cut short fails with ErrBadDataFile, not a panic.
func TestReadFlatTruncated(t *testing.T) {
	batch := pqtest.BenchBatch(t, 3000)
	data, _, err := pq.EncodeFile(batch.Schema, []*pq.Batch{batch}, pq.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Damage the middle of the data pages, keeping the footer intact.
	bad := bytes.Clone(data)
	for k := 100; k < len(bad)/2; k += 37 {
		bad[k] ^= 0x5a
	}
	_, err = pq.DecodeFile(bytes.NewReader(bad), int64(len(bad)), batch.Schema)
	if !errors.Is(err, pq.ErrBadDataFile) {
		t.Fatalf("err = %v, want ErrBadDataFile", err)
	}
}
