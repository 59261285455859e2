package pq_test

import (
	"bytes"
	"errors"
	"fmt"
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
	rows := flatRows(n, func(_ int, word string) string { return word + "-plain" }, -2000, -5_000_500)
	buf := writeFlat(t, rows)
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

// flatWindow and flatPair are structs of primitive leaves, read field by field without the
// assembler (readFlatStruct): an optional struct with optional, dictionary and plain fields,
// and a required one.
type flatWindow struct {
	Start int64   `parquet:"start,timestamp(microsecond)"`
	End   *int64  `parquet:"end,optional"`
	Name  *string `parquet:"name,optional,dict"`
}

type flatPair struct {
	X float64 `parquet:"x"`
	Y int32   `parquet:"y,dict"`
}

type flatStructRow struct {
	ID int64       `parquet:"id"`
	W  *flatWindow `parquet:"w,optional"`
	P  flatPair    `parquet:"p"`
}

const flatStructSchema = `{"type":"struct","fields":[
{"name":"id","type":"long","nullable":false,"metadata":{}},
{"name":"w","type":{"type":"struct","fields":[
 {"name":"start","type":"timestamp","nullable":false,"metadata":{}},
 {"name":"gone","type":"long","nullable":true,"metadata":{}},
 {"name":"end","type":"long","nullable":true,"metadata":{}},
 {"name":"name","type":"string","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},
{"name":"p","type":{"type":"struct","fields":[
 {"name":"y","type":"long","nullable":false,"metadata":{}},
 {"name":"x","type":"double","nullable":false,"metadata":{}}]},"nullable":false,"metadata":{}}]}`

// TestReadFlatStructs checks structs of primitive leaves against the rows parquet-go wrote:
// null structs apart from structs of null fields, a field the file lacks (always null), fields
// in another order than the file's, a widened field, dictionary and plain pages, several pages
// and row groups.
func TestReadFlatStructs(t *testing.T) {
	const n = 4000
	words := []string{"alpha", "", "gamma", "é"}
	rows := make([]flatStructRow, n)
	for i := range rows {
		r := &rows[i]
		r.ID = int64(i)
		r.P = flatPair{X: float64(i) / 4, Y: int32(i % 7)}
		if i%5 == 2 {
			continue // a null window
		}
		w := &flatWindow{Start: int64(i) * 1000}
		if i%3 != 0 {
			e := int64(i)*1000 + 300
			w.End = &e
		}
		if i%4 != 1 {
			s := words[i%len(words)]
			w.Name = &s
		}
		r.W = w
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[flatStructRow](&buf, parquet.PageBufferSize(600), parquet.MaxRowsPerRowGroup(1500))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	batches, err := pq.DecodeFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()), pqtest.MustSchema(t, flatStructSchema))
	if err != nil {
		t.Fatal(err)
	}
	if len(batches) < 3 {
		t.Fatalf("got %d row groups, want at least 3", len(batches))
	}
	i := 0
	for _, b := range batches {
		if err := b.Validate(); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < b.Len(); k, i = k+1, i+1 {
			r := rows[i]
			id, win, p := b.Columns[0], b.Columns[1], b.Columns[2]
			if id.Int64[k] != r.ID || p.IsNull(k) || p.Children[0].Int64[k] != int64(r.P.Y) || p.Children[1].Float64[k] != r.P.X {
				t.Fatalf("row %d: id %d, p (%d, %v), want %+v", i, id.Int64[k], p.Children[0].Int64[k], p.Children[1].Float64[k], r)
			}
			start, gone, end, name := win.Children[0], win.Children[1], win.Children[2], win.Children[3]
			if win.IsNull(k) != (r.W == nil) || !gone.IsNull(k) {
				t.Fatalf("row %d: window null %v (gone null %v), want %v", i, win.IsNull(k), gone.IsNull(k), r.W == nil)
			}
			if r.W == nil {
				if !start.IsNull(k) || !end.IsNull(k) || !name.IsNull(k) {
					t.Fatalf("row %d: a null window has a field set", i)
				}
				continue
			}
			if start.IsNull(k) || start.Int64[k] != r.W.Start {
				t.Fatalf("row %d: start %d, want %d", i, start.Int64[k], r.W.Start)
			}
			if end.IsNull(k) != (r.W.End == nil) || (r.W.End != nil && end.Int64[k] != *r.W.End) {
				t.Fatalf("row %d: end %d null=%v, want %v", i, end.Int64[k], end.IsNull(k), r.W.End)
			}
			if name.IsNull(k) != (r.W.Name == nil) || (r.W.Name != nil && name.StringAt(k) != *r.W.Name) {
				t.Fatalf("row %d: name %q null=%v, want %v", i, name.StringAt(k), name.IsNull(k), r.W.Name)
			}
		}
	}
	if i != n {
		t.Fatalf("read %d rows, want %d", i, n)
	}
}

const goldShapeSchema = `{"type":"struct","fields":[
{"name":"window","type":{"type":"struct","fields":[
 {"name":"start","type":"timestamp","nullable":true,"metadata":{}},
 {"name":"end","type":"timestamp","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},
{"name":"device_id","type":"string","nullable":true,"metadata":{}},
{"name":"n","type":"long","nullable":true,"metadata":{}},
{"name":"total","type":"double","nullable":true,"metadata":{}},
{"name":"late_rows","type":"long","nullable":true,"metadata":{}}]}`

// BenchmarkDecodeGoldShape decodes a file shaped as a gold table of 100k keys (a window
// struct, a string key, a count, a sum and late_rows), which a replay reads back whole: the
// window struct is what the assembler decoded a value at a time before readFlatStruct.
func BenchmarkDecodeGoldShape(b *testing.B) {
	const rows = 200_000
	batch, err := pq.NewBatch(pqtest.MustSchema(b, goldShapeSchema))
	if err != nil {
		b.Fatal(err)
	}
	base := int64(1_764_000_000_000_000)
	var key []byte
	for i := range rows {
		start := base + int64(i/100_000)*300_000_000
		w := batch.Columns[0]
		w.Children[0].AppendInt64(start)
		w.Children[1].AppendInt64(start + 300_000_000)
		w.AppendStruct()
		key = fmt.Appendf(key[:0], "device-%06d", (i*7919)%100_000)
		batch.Columns[1].AppendBytes(key)
		batch.Columns[2].AppendInt64(int64(i % 37))
		batch.Columns[3].AppendFloat64(float64(i) * 0.5)
		batch.Columns[4].AppendInt64(0)
	}
	data, _, err := pq.EncodeFile(batch.Schema, []*pq.Batch{batch}, pq.WriteOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu := pqtest.CPUClock()
	for b.Loop() {
		if _, err := pq.DecodeFile(bytes.NewReader(data), int64(len(data)), batch.Schema); err != nil {
			b.Fatal(err)
		}
	}
	// CPU time, not wall: on a shared machine the wall time is mostly the wait for a core.
	b.ReportMetric(float64((pqtest.CPUClock()-cpu).Nanoseconds())/float64(b.N*rows), "cpu-ns/row")
}

// flatRows is n rows in every layout readFlat takes: nulls in l, d, s and p at different
// strides, repeated values for the dictionaries, p's plain strings from plain(i, word), and
// timestamps from msBase and nsBase.
func flatRows(n int, plain func(i int, word string) string, msBase, nsBase int64) []flatRow {
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
			p := plain(i, words[(i/3)%len(words)])
			r.P = &p
		}
		r.I, r.F = int32(i%9), float32(i%4)/4
		r.Ms, r.Ns = int64(i)*1001+msBase, int64(i)*999_999+nsBase
		r.LI, r.FD = int32(-i), float32(i)/8
	}
	return rows
}

// writeFlat writes rows as Parquet in small pages (512 bytes) and row groups of 1800 rows, so
// that a few thousand rows make many pages and several groups.
func writeFlat(t testing.TB, rows []flatRow) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[flatRow](&buf, parquet.PageBufferSize(512), parquet.MaxRowsPerRowGroup(1800),
		parquet.DataPageVersion(1))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}
