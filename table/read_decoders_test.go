package table

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
	"github.com/medallion-lake/medallion/txlog"
)

// Decoder probes for the class of issue 25: an empty / nil / zero-count case taken for a
// different case, counts that assume present == total, off-by-one at page or row group
// boundaries. The files are written column by column with parquet-go's low-level writer
// (parquet.Row values with explicit levels), so the oracle is the input the test wrote, not
// our writer or our reader.

// decLeaf is one primitive column of a probe file: its Parquet node, its Delta type, and the
// value of row i (the Parquet value to write and the Go value Column.Value must return).
type decLeaf struct {
	name  string
	node  parquet.Node // required node; made optional by the builder
	delta string       // Delta type JSON
	val   func(i int) (parquet.Value, any)
}

func decLeaves() []decLeaf {
	words := []string{"alpha", "", "gamma", "delta-delta", "é", "zz"}
	ts := func(unit parquet.TimeUnit) parquet.Node { return parquet.Timestamp(unit) }
	return []decLeaf{
		{"i64", parquet.Leaf(parquet.Int64Type), `"long"`, func(i int) (parquet.Value, any) {
			v := int64(i%17) - 8
			return parquet.Int64Value(v), v
		}},
		{"i32", parquet.Leaf(parquet.Int32Type), `"integer"`, func(i int) (parquet.Value, any) {
			v := int32(i%19) - 9
			return parquet.Int32Value(v), v
		}},
		{"i32long", parquet.Leaf(parquet.Int32Type), `"long"`, func(i int) (parquet.Value, any) { // widening
			v := int32(i%23) - 11
			return parquet.Int32Value(v), int64(v)
		}},
		{"short", parquet.Int(16), `"short"`, func(i int) (parquet.Value, any) {
			v := int32(i%7) - 3
			return parquet.Int32Value(v), int16(v)
		}},
		{"date", parquet.Date(), `"date"`, func(i int) (parquet.Value, any) {
			v := int32(i%29) - 14
			return parquet.Int32Value(v), time.Unix(int64(v)*86400, 0).UTC()
		}},
		{"f64", parquet.Leaf(parquet.DoubleType), `"double"`, func(i int) (parquet.Value, any) {
			v := float64(i%13) * 1.25
			return parquet.DoubleValue(v), v
		}},
		{"f32", parquet.Leaf(parquet.FloatType), `"float"`, func(i int) (parquet.Value, any) {
			v := float32(i%11) / 4
			return parquet.FloatValue(v), v
		}},
		{"f32double", parquet.Leaf(parquet.FloatType), `"double"`, func(i int) (parquet.Value, any) { // widening
			v := float32(i%9) / 8
			return parquet.FloatValue(v), float64(v)
		}},
		{"str", parquet.String(), `"string"`, func(i int) (parquet.Value, any) {
			v := words[i%len(words)]
			return parquet.ByteArrayValue([]byte(v)), v
		}},
		{"bin", parquet.Leaf(parquet.ByteArrayType), `"binary"`, func(i int) (parquet.Value, any) {
			v := bytes.Repeat([]byte{byte(i)}, i%4) // includes empty values
			return parquet.ByteArrayValue(v), v
		}},
		{"tsms", ts(parquet.Millisecond), `"timestamp"`, func(i int) (parquet.Value, any) {
			v := int64(i%31)*1001 - 15000
			return parquet.Int64Value(v), time.UnixMicro(v * 1000).UTC()
		}},
		{"tsus", ts(parquet.Microsecond), `"timestamp_ntz"`, func(i int) (parquet.Value, any) {
			v := int64(i%37)*999_999 - 18_000_000
			return parquet.Int64Value(v), time.UnixMicro(v).UTC()
		}},
		{"tsns", ts(parquet.Nanosecond), `"timestamp"`, func(i int) (parquet.Value, any) {
			v := int64(i%41)*999_999_999 - 20_000_000_001 // negative, not whole micros: floor
			return parquet.Int64Value(v), time.UnixMicro(floorDivTest(v, 1000)).UTC()
		}},
		{"tsi96", parquet.Leaf(parquet.Int96Type), `"timestamp"`, func(i int) (parquet.Value, any) {
			// Julian day 2440588 is 1970-01-01; nanos of the day.
			day := uint32(2440588 - 3 + i%7)
			nanos := uint64(i%5) * 3_600_000_000_123
			v := deprecated.Int96{uint32(nanos), uint32(nanos >> 32), day}
			micros := (int64(day)-2440588)*86400_000_000 + int64(nanos/1000)
			return parquet.Int96Value(v), time.UnixMicro(micros).UTC()
		}},
		{"bool", parquet.Leaf(parquet.BooleanType), `"boolean"`, func(i int) (parquet.Value, any) {
			v := i%3 == 0
			return parquet.BooleanValue(v), v
		}},
		{"dec32", parquet.Decimal(2, 9, parquet.Int32Type), `"decimal(9,2)"`, func(i int) (parquet.Value, any) {
			v := int32(i%101) - 50
			return parquet.Int32Value(v), pq.Decimal{Unscaled: pq.DecimalFromInt64(int64(v)), Scale: 2}
		}},
		{"dec64", parquet.Decimal(3, 18, parquet.Int64Type), `"decimal(18,3)"`, func(i int) (parquet.Value, any) {
			v := int64(i%103)*1_000_000_007 - 50_000_000_000
			return parquet.Int64Value(v), pq.Decimal{Unscaled: pq.DecimalFromInt64(v), Scale: 3}
		}},
		{"decflba", parquet.Decimal(4, 30, parquet.FixedLenByteArrayType(13)), `"decimal(30,4)"`, func(i int) (parquet.Value, any) {
			d := pq.DecimalFromInt64(int64(i%107) - 53)
			return parquet.FixedLenByteArrayValue(d.Bytes(nil, 13)), pq.Decimal{Unscaled: d, Scale: 4}
		}},
	}
}

func floorDivTest(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// decPattern says which rows of a column are present.
type decPattern struct {
	name    string
	present func(i, n int) bool
}

var decPatterns = []decPattern{
	{"allnull", func(i, n int) bool { return false }},
	{"allpresent", func(i, n int) bool { return true }},
	{"sparse", func(i, n int) bool { return i%97 == 5 }},
	{"runs", func(i, n int) bool { return (i/300)%2 == 1 }},
	{"halfnull", func(i, n int) bool { return i < n/2 }}, // trailing pages all null
	{"lastonly", func(i, n int) bool { return i == n-1 }},
	{"firstonly", func(i, n int) bool { return i == 0 }},
	{"alternate", func(i, n int) bool { return i%2 == 0 }},
}

// decFile is a generated probe file and what reading it must give.
type decFile struct {
	data   []byte
	schema *txlog.StructType
	want   [][]any // want[c][row]
	names  []string
}

type decOpts struct {
	rows     int
	dict     bool
	pageV    int
	pageBuf  int
	rgRows   int64
	required bool // also emit required (non-optional) columns
}

// buildDecFile writes one optional column per leaf and pattern (and a required one per leaf
// when asked) with the given writer settings.
func buildDecFile(t testing.TB, o decOpts) *decFile {
	t.Helper()
	type col struct {
		name    string
		leaf    decLeaf
		pat     *decPattern // nil: required
		nodeOpt parquet.Node
	}
	var cols []col
	for _, l := range decLeaves() {
		node := l.node
		if o.dict {
			if l.node.Type().Kind() != parquet.Boolean {
				node = parquet.Encoded(node, &parquet.RLEDictionary)
			}
		} else {
			node = parquet.Encoded(node, &parquet.Plain)
		}
		for k := range decPatterns {
			p := &decPatterns[k]
			cols = append(cols, col{l.name + "_" + p.name, l, p, parquet.Optional(node)})
		}
		if o.required {
			cols = append(cols, col{l.name + "_req", l, nil, parquet.Required(node)})
		}
	}
	g := parquet.Group{}
	for _, c := range cols {
		g[c.name] = c.nodeOpt
	}
	schema := parquet.NewSchema("probe", g)
	// parquet.Group orders its fields by name: map each column to its leaf index.
	leafIdx := map[string]int{}
	for i, path := range schema.Columns() {
		leafIdx[path[0]] = i
	}
	opts := []parquet.WriterOption{schema, parquet.DataPageVersion(o.pageV)}
	if o.pageBuf > 0 {
		opts = append(opts, parquet.PageBufferSize(o.pageBuf))
	}
	if o.rgRows > 0 {
		opts = append(opts, parquet.MaxRowsPerRowGroup(o.rgRows))
	}
	var buf bytes.Buffer
	w := parquet.NewWriter(&buf, opts...)
	f := &decFile{want: make([][]any, len(cols))}
	var fields []string
	rows := make([]parquet.Row, 0, o.rows)
	for i := 0; i < o.rows; i++ {
		row := make(parquet.Row, len(cols))
		for k, c := range cols {
			ci := leafIdx[c.name]
			pv, gv := c.leaf.val(i)
			switch {
			case c.pat == nil:
				row[ci] = pv.Level(0, 0, ci)
				f.want[k] = append(f.want[k], gv)
			case c.pat.present(i, o.rows):
				row[ci] = pv.Level(0, 1, ci)
				f.want[k] = append(f.want[k], gv)
			default:
				row[ci] = parquet.NullValue().Level(0, 0, ci)
				f.want[k] = append(f.want[k], nil)
			}
		}
		rows = append(rows, row)
	}
	if _, err := w.WriteRows(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range cols {
		nullable := c.pat != nil
		fields = append(fields, fmt.Sprintf(`{"name":%q,"type":%s,"nullable":%v,"metadata":{}}`, c.name, c.leaf.delta, nullable))
		f.names = append(f.names, c.name)
	}
	s, err := txlog.ParseSchema(`{"type":"struct","fields":[` + strings.Join(fields, ",") + `]}`)
	if err != nil {
		t.Fatal(err)
	}
	f.schema = s
	f.data = buf.Bytes()
	return f
}

// TestDecodersFlatNullPatterns reads every primitive type under every null pattern, with
// dictionary and plain pages, data page v1 and v2, tiny pages (so whole pages are null, or
// hold one value) and several row groups, through the fast path (readFlat) and the general
// path (the same leaf asked for twice, which readFlat must not take).
func TestDecodersFlatNullPatterns(t *testing.T) {
	for _, dict := range []bool{true, false} {
		for _, pv := range []int{1, 2} {
			for _, rg := range []int64{0, 700} {
				o := decOpts{rows: 2100, dict: dict, pageV: pv, pageBuf: 256, rgRows: rg, required: true}
				label := fmt.Sprintf("dict=%v/v%d/rg=%d", dict, pv, rg)
				t.Run(label, func(t *testing.T) {
					f := buildDecFile(t, o)
					checkPages(t, f.data)
					batches, err := pq.DecodeFile(bytes.NewReader(f.data), int64(len(f.data)), f.schema)
					if err != nil {
						t.Fatalf("flat: %v", err)
					}
					pqtest.CheckDecoded(t, "flat", batches, f.want, f.names)

					// The general path: each field asked for twice (second time by a
					// differently cased name, matched case-insensitively).
					dup := &txlog.StructType{}
					var want [][]any
					var names []string
					for k, fd := range f.schema.Fields {
						up := fd
						up.Name = strings.ToUpper(fd.Name)
						dup.Fields = append(dup.Fields, fd, up)
						want = append(want, f.want[k], f.want[k])
						names = append(names, fd.Name, up.Name)
					}
					batches, err = pq.DecodeFile(bytes.NewReader(f.data), int64(len(f.data)), dup)
					if err != nil {
						t.Fatalf("general: %v", err)
					}
					pqtest.CheckDecoded(t, "general", batches, want, names)

					// ReadWith: one buffer reused across row groups whose null layouts differ
					// (a column with nulls after one without, and the reverse).
					ctx := context.Background()
					bucket := mem.New()
					if err := objstore.PutBytes(ctx, bucket, "f.parquet", f.data); err != nil {
						t.Fatal(err)
					}
					fs := &FileScan{Bucket: bucket, Schema: f.schema}
					var rb pq.ReadBuffer
					got := make([][]any, len(f.want))
					for b, err := range fs.ReadWith(ctx, []*txlog.Add{{Path: "f.parquet", Size: int64(len(f.data))}}, &rb) {
						if err != nil {
							t.Fatalf("ReadWith: %v", err)
						}
						for c, col := range b.Columns {
							for i := 0; i < col.Len; i++ {
								got[c] = append(got[c], col.Value(i))
							}
						}
					}
					for c := range got {
						if len(got[c]) != len(f.want[c]) {
							t.Fatalf("ReadWith: column %s: %d rows, want %d", f.names[c], len(got[c]), len(f.want[c]))
						}
						for i := range got[c] {
							if !pqtest.SameValue(got[c][i], f.want[c][i]) {
								t.Fatalf("ReadWith: column %s row %d: got %#v, want %#v", f.names[c], i, got[c][i], f.want[c][i])
							}
						}
					}
				})
			}
		}
	}
}

// checkPages makes sure the file really has the layouts the test is about: all-null pages
// of a dictionary-encoded column, and pages that hold a single value.
func checkPages(t *testing.T, data []byte) {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	allNull, pages := 0, 0
	for _, rg := range f.RowGroups() {
		for _, cc := range rg.ColumnChunks() {
			ps := cc.Pages()
			for {
				p, err := ps.ReadPage()
				if err != nil {
					break
				}
				pages++
				if p.NumValues() > 0 && p.NumNulls() == p.NumValues() {
					allNull++
				}
			}
			ps.Close()
		}
	}
	if allNull == 0 || pages < 2*len(f.RowGroups())*len(f.Schema().Columns()) {
		t.Fatalf("probe file has %d pages, %d of them all null: not the layout under test", pages, allNull)
	}
}
