package table

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
	"github.com/medallion-lake/medallion/txlog"
)

// Boolean pages encoded with RLE as the Parquet spec describes them (Encodings.md, "Run
// Length Encoding / Bit-Packing Hybrid"): runs of any length with a one-byte value of 0 or 1,
// and bit-packed groups of 8, mixed freely. parquet-go v0.32.0 misreads such runs (see
// readbool.go). The encoder below is written from the spec; the oracle is the rows encoded.

// bEnc chooses how the hybrid encoder splits its input.
type bEnc int

const (
	bMixed  bEnc = iota // random runs (1..300) and bit-packed groups
	bRuns               // RLE runs only, each as long as possible up to 300
	bPacked             // bit-packed groups only
)

// hybrid encodes vals (each < 1<<width) with the RLE/bit-packed hybrid, without a length
// prefix.
func hybrid(vals []int, width int, mode bEnc, rng *rand.Rand) []byte {
	var b []byte
	for i := 0; i < len(vals); {
		run := mode == bRuns || (mode == bMixed && rng.Intn(3) > 0)
		if run {
			j := i
			for j < len(vals) && vals[j] == vals[i] && j-i < 300 {
				j++
			}
			if mode == bMixed && rng.Intn(2) == 0 {
				j = i + 1 + rng.Intn(j-i) // a shorter run: the next one repeats the value
			}
			b = binary.AppendUvarint(b, uint64(j-i)<<1)
			for k := 0; k < (width+7)/8; k++ {
				b = append(b, byte(vals[i]>>(8*k)))
			}
			i = j
			continue
		}
		groups := 1 + rng.Intn(4)
		b = binary.AppendUvarint(b, uint64(groups)<<1|1)
		// 8*groups values of width bits, LSB first; past the end, zero padding.
		var acc uint64
		nacc := 0
		for k := 0; k < 8*groups; k++ {
			v := 0
			if i+k < len(vals) {
				v = vals[i+k]
			}
			acc |= uint64(v) << nacc
			nacc += width
			for nacc >= 8 {
				b = append(b, byte(acc))
				acc >>= 8
				nacc -= 8
			}
		}
		i += 8 * groups
	}
	return b
}

func boolInts(bs []bool) []int {
	out := make([]int, len(bs))
	for i, v := range bs {
		if v {
			out[i] = 1
		}
	}
	return out
}

// bRow is one row of the test table: b boolean NOT NULL, o boolean, l array<boolean>.
type bRow struct {
	b     bool
	o     int // -1: null
	lnull bool
	l     []int // -1: null element
}

func (r bRow) want() []any {
	var o, l any
	if r.o >= 0 {
		o = r.o == 1
	}
	if !r.lnull {
		es := []any{}
		for _, e := range r.l {
			if e < 0 {
				es = append(es, nil)
			} else {
				es = append(es, e == 1)
			}
		}
		l = es
	}
	return []any{r.b, o, l}
}

// bLevels are the levels and present values of one leaf over some rows.
type bLevels struct {
	reps, defs []int
	vals       []bool
}

// leafLevels shreds rows into leaf c (0 b, 1 o, 2 l.list.element).
func leafLevels(rows []bRow, c int) bLevels {
	var lv bLevels
	for _, r := range rows {
		switch c {
		case 0:
			lv.vals = append(lv.vals, r.b)
		case 1:
			if r.o < 0 {
				lv.defs = append(lv.defs, 0)
			} else {
				lv.defs = append(lv.defs, 1)
				lv.vals = append(lv.vals, r.o == 1)
			}
		case 2:
			switch {
			case r.lnull:
				lv.reps, lv.defs = append(lv.reps, 0), append(lv.defs, 0)
			case len(r.l) == 0:
				lv.reps, lv.defs = append(lv.reps, 0), append(lv.defs, 1)
			}
			for k, e := range r.l {
				rep := 1
				if k == 0 {
					rep = 0
				}
				lv.reps = append(lv.reps, rep)
				if e < 0 {
					lv.defs = append(lv.defs, 2)
				} else {
					lv.defs = append(lv.defs, 3)
					lv.vals = append(lv.vals, e == 1)
				}
			}
		}
	}
	return lv
}

var bMax = [3]struct{ rep, def int }{{0, 0}, {0, 1}, {1, 3}}

// bChunkOpts is how one column chunk is written.
type bChunkOpts struct {
	v2     bool
	snappy bool
	mode   bEnc
	// plain is the probability that a page's values are PLAIN rather than RLE.
	plain float64
	// pageRows bounds the rows of a page (random 1..pageRows).
	pageRows int
	// dict writes a (boolean) dictionary page first; enc overrides the data pages' encoding.
	dict bool
	enc  *format.Encoding
}

// buildBoolFile writes the rows as row groups of the given sizes, every chunk with o.
func buildBoolFile(t testing.TB, rows []bRow, groups []int, o bChunkOpts, rng *rand.Rand) []byte {
	t.Helper()
	out := []byte("PAR1")
	var rgs []format.RowGroup
	at := 0
	for _, n := range groups {
		grows := rows[at : at+n]
		at += n
		var ccs []format.ColumnChunk
		for c := 0; c < 3; c++ {
			start := int64(len(out))
			codec := format.Uncompressed
			if o.snappy {
				codec = format.Snappy
			}
			md := format.ColumnMetaData{Type: format.Boolean, PathInSchema: [][]string{{"b"}, {"o"}, {"l", "list", "element"}}[c], Codec: codec}
			encs := map[format.Encoding]bool{}
			if bMax[c].def > 0 {
				encs[format.RLE] = true
			}
			if o.dict {
				body := []byte{1}
				h := format.PageHeader{Type: format.DictionaryPage, UncompressedPageSize: 1, CompressedPageSize: 1,
					DictionaryPageHeader: thrift.New(format.DictionaryPageHeader{NumValues: 1, Encoding: format.Plain})}
				md.DictionaryPageOffset = int64(len(out))
				out = append(out, pqtest.CompactThrift(t, &h)...)
				out = append(out, body...)
				encs[format.RLEDictionary] = true
			}
			md.DataPageOffset = int64(len(out))
			for p := 0; p < len(grows); {
				q := min(len(grows), p+1+rng.Intn(o.pageRows))
				lv := leafLevels(grows[p:q], c)
				p = q
				nv := len(lv.vals)
				if lv.defs != nil {
					nv = len(lv.defs)
				}
				enc := format.RLE
				var values []byte
				if rng.Float64() < o.plain {
					enc = format.Plain
					values = make([]byte, (len(lv.vals)+7)/8)
					for i, v := range lv.vals {
						if v {
							values[i/8] |= 1 << (i % 8)
						}
					}
				} else {
					hv := hybrid(boolInts(lv.vals), 1, o.mode, rng)
					values = binary.LittleEndian.AppendUint32(nil, uint32(len(hv)))
					values = append(values, hv...)
				}
				if o.enc != nil {
					enc = *o.enc
				}
				encs[enc] = true
				var reps, defs []byte
				if bMax[c].rep > 0 {
					reps = hybrid(lv.reps, pqtest.BitWidth(bMax[c].rep), o.mode, rng)
				}
				if bMax[c].def > 0 {
					defs = hybrid(lv.defs, pqtest.BitWidth(bMax[c].def), o.mode, rng)
				}
				var h format.PageHeader
				var body []byte
				usize := 0
				if o.v2 {
					nulls, nrows := 0, 0
					for _, d := range lv.defs {
						if d < bMax[c].def {
							nulls++
						}
					}
					for i := 0; i < nv; i++ {
						if lv.reps == nil || lv.reps[i] == 0 {
							nrows++
						}
					}
					usize = len(reps) + len(defs) + len(values)
					body = append(append(body, reps...), defs...)
					ph := format.DataPageHeaderV2{NumValues: int32(nv), NumNulls: int32(nulls), NumRows: int32(nrows), Encoding: enc,
						RepetitionLevelsByteLength: int32(len(reps)), DefinitionLevelsByteLength: int32(len(defs))}
					switch {
					case o.snappy && rng.Intn(2) == 0:
						// is_compressed left out: true by default.
						body = append(body, s2.EncodeSnappy(nil, values)...)
					case o.snappy && rng.Intn(2) == 0:
						ph.IsCompressed = thrift.New(true)
						body = append(body, s2.EncodeSnappy(nil, values)...)
					default:
						if o.snappy || rng.Intn(2) == 0 {
							ph.IsCompressed = thrift.New(false)
						}
						body = append(body, values...)
					}
					h = format.PageHeader{Type: format.DataPageV2, DataPageHeaderV2: thrift.New(ph)}
				} else {
					if reps != nil {
						body = binary.LittleEndian.AppendUint32(body, uint32(len(reps)))
						body = append(body, reps...)
					}
					if defs != nil {
						body = binary.LittleEndian.AppendUint32(body, uint32(len(defs)))
						body = append(body, defs...)
					}
					body = append(body, values...)
					usize = len(body)
					if o.snappy {
						body = s2.EncodeSnappy(nil, body)
					}
					h = format.PageHeader{Type: format.DataPage, DataPageHeader: thrift.New(format.DataPageHeader{
						NumValues: int32(nv), Encoding: enc, DefinitionLevelEncoding: format.RLE, RepetitionLevelEncoding: format.RLE})}
				}
				h.UncompressedPageSize, h.CompressedPageSize = int32(usize), int32(len(body))
				out = append(out, pqtest.CompactThrift(t, &h)...)
				out = append(out, body...)
				md.NumValues += int64(nv)
			}
			for _, e := range []format.Encoding{format.Plain, format.RLE, format.RLEDictionary, format.DeltaBinaryPacked} {
				if encs[e] {
					md.Encoding = append(md.Encoding, e)
				}
			}
			md.TotalCompressedSize = int64(len(out)) - start
			md.TotalUncompressedSize = md.TotalCompressedSize
			ccs = append(ccs, format.ColumnChunk{FileOffset: start, MetaData: md})
		}
		rgs = append(rgs, format.RowGroup{Columns: ccs, NumRows: int64(n), TotalByteSize: 1})
	}
	req, opt, rep := format.Required, format.Optional, format.Repeated
	boolean := format.Boolean
	schema := []format.SchemaElement{
		{Name: "schema", NumChildren: thrift.New(int32(3))},
		{Name: "b", Type: thrift.New(boolean), RepetitionType: thrift.New(req)},
		{Name: "o", Type: thrift.New(boolean), RepetitionType: thrift.New(opt)},
		{Name: "l", RepetitionType: thrift.New(opt), NumChildren: thrift.New(int32(1)),
			ConvertedType: thrift.New(deprecated.List), LogicalType: format.LogicalType{Value: &format.ListType{}}},
		{Name: "list", RepetitionType: thrift.New(rep), NumChildren: thrift.New(int32(1))},
		{Name: "element", Type: thrift.New(boolean), RepetitionType: thrift.New(opt)},
	}
	fmd := format.FileMetaData{Version: 1, Schema: schema, NumRows: int64(len(rows)), RowGroups: rgs}
	footer := pqtest.CompactThrift(t, &fmd)
	out = append(out, footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, "PAR1"...)
}

const boolSchema = `{"type":"struct","fields":[
{"name":"b","type":"boolean","nullable":false,"metadata":{}},
{"name":"o","type":"boolean","nullable":true,"metadata":{}},
{"name":"l","type":{"type":"array","elementType":"boolean","containsNull":true},"nullable":true,"metadata":{}}]}`

// checkBoolFile reads data with DecodeFile and a FileScan (all columns, then each one alone)
// and compares every row with rows.
func checkBoolFile(t *testing.T, data []byte, rows []bRow) {
	t.Helper()
	schema, err := txlog.ParseSchema(boolSchema)
	if err != nil {
		t.Fatal(err)
	}
	// check compares the batches read so far (from row *i on) with rows.
	check := func(label string, b *pq.Batch, cols []int, i *int) {
		t.Helper()
		for k := 0; k < b.Len(); k++ {
			if *i >= len(rows) {
				t.Fatalf("%s: more than %d rows", label, len(rows))
			}
			want := rows[*i].want()
			for bc, c := range cols {
				if got := b.Columns[bc].Value(k); !reflect.DeepEqual(got, want[c]) {
					t.Fatalf("%s: row %d column %s: got %#v, want %#v", label, *i, schema.Fields[c].Name, got, want[c])
				}
			}
			*i++
		}
	}
	done := func(label string, i int) {
		t.Helper()
		if i != len(rows) {
			t.Fatalf("%s: %d rows, want %d", label, i, len(rows))
		}
	}
	batches, err := pq.DecodeFile(bytes.NewReader(data), int64(len(data)), schema)
	if err != nil {
		t.Fatalf("DecodeFile: %v", err)
	}
	i := 0
	for _, b := range batches {
		check("DecodeFile", b, []int{0, 1, 2}, &i)
	}
	done("DecodeFile", i)

	ctx := context.Background()
	bucket := mem.New()
	if err := objstore.PutBytes(ctx, bucket, "f.parquet", data); err != nil {
		t.Fatal(err)
	}
	add := &txlog.Add{Path: "f.parquet", Size: int64(len(data))}
	for _, cols := range [][]int{{0, 1, 2}, {2}, {1}, {0}} {
		var names []string
		for _, c := range cols {
			names = append(names, schema.Fields[c].Name)
		}
		fs := &FileScan{Bucket: bucket, Schema: schema, Columns: names}
		label := fmt.Sprintf("FileScan %v", names)
		i := 0
		for b, err := range fs.Read(ctx, []*txlog.Add{add}) {
			if err != nil {
				t.Fatalf("%s: %v", label, err)
			}
			check(label, b, cols, &i)
		}
		done(label, i)
	}
}

// boolRuns returns n booleans in runs of random lengths 1..300.
func boolRuns(rng *rand.Rand, n int) []bool {
	out := make([]bool, 0, n)
	v := rng.Intn(2) == 0
	for len(out) < n {
		k := 1 + rng.Intn(300)
		if rng.Intn(4) == 0 {
			k = 1 + rng.Intn(9)
		}
		for j := 0; j < k && len(out) < n; j++ {
			out = append(out, v)
		}
		v = !v
	}
	return out
}

// randomBoolRows returns n rows: runs of booleans (so that RLE runs are long) with a random
// density of nulls, of null lists, of empty lists and of null elements.
func randomBoolRows(rng *rand.Rand, n int) []bRow {
	bits := boolRuns(rng, 4*n)
	next := 0
	bit := func() int {
		v := 0
		if bits[next%len(bits)] {
			v = 1
		}
		next++
		return v
	}
	pnull := []float64{0, 0.05, 0.5, 0.95, 1}[rng.Intn(5)]
	nullRun := 0
	rows := make([]bRow, n)
	for i := range rows {
		r := bRow{b: bit() == 1, o: bit()}
		// Nulls come alone or in runs.
		if nullRun > 0 || rng.Float64() < pnull {
			if nullRun == 0 && rng.Intn(4) == 0 {
				nullRun = rng.Intn(40)
			}
			if nullRun > 0 {
				nullRun--
			}
			r.o = -1
		}
		switch k := rng.Intn(10); {
		case k == 0 || (pnull == 1 && k < 5):
			r.lnull = true
		case k == 1:
			r.l = []int{}
		default:
			for e := rng.Intn(6); e > 0; e-- {
				v := bit()
				if rng.Float64() < pnull {
					v = -1
				}
				r.l = append(r.l, v)
			}
		}
		rows[i] = r
	}
	return rows
}

func boolOptsName(o bChunkOpts) string {
	s := "v1"
	if o.v2 {
		s = "v2"
	}
	if o.snappy {
		s += "/snappy"
	}
	return s + fmt.Sprintf("/mode%d/plain%.1f", o.mode, o.plain)
}

// TestDecodersRLEBooleans: spec-encoded RLE boolean pages (v1 and v2, required, optional and
// in a list, snappy and uncompressed) read back as the booleans encoded.
func TestDecodersRLEBooleans(t *testing.T) {
	// Runs of lengths around the multiples of 8 up to 300, alternating values, then a
	// stretch of single values.
	var bits []bool
	v := true
	for _, n := range []int{1, 2, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 127, 128, 129, 255, 256, 257, 299, 300, 5, 1, 1, 1, 1, 11} {
		for j := 0; j < n; j++ {
			bits = append(bits, v)
		}
		v = !v
	}
	for i := 0; i < 50; i++ {
		bits = append(bits, i%3 == 0)
	}
	var rows []bRow
	for i, b := range bits {
		r := bRow{b: b, o: boolInts(bits[(i+7)%len(bits):])[0]}
		if i%13 == 5 || (i >= 400 && i < 700) {
			r.o = -1
		}
		switch i % 5 {
		case 0:
			r.lnull = i%10 == 0
		case 1:
			r.l = []int{}
		default:
			r.l = boolInts(bits[i : i+min(len(bits)-i, i%7)])
			if len(r.l) > 2 && i%3 == 0 {
				r.l[1] = -1
			}
		}
		rows = append(rows, r)
	}
	for _, v2 := range []bool{false, true} {
		for _, snappy := range []bool{false, true} {
			for _, mode := range []bEnc{bMixed, bRuns, bPacked} {
				for _, plain := range []float64{0, 0.5} {
					o := bChunkOpts{v2: v2, snappy: snappy, mode: mode, plain: plain, pageRows: 700}
					t.Run(boolOptsName(o), func(t *testing.T) {
						rng := rand.New(rand.NewSource(int64(len(rows)) + int64(mode)))
						data := buildBoolFile(t, rows, []int{len(rows) - 1000, 1000}, o, rng)
						checkBoolFile(t, data, rows)
					})
				}
			}
		}
	}
}

// TestDecodersRLEBooleansRandom: random booleans with a random null layout, random page
// splits and encodings, compared row by row.
func TestDecodersRLEBooleansRandom(t *testing.T) {
	iters := 40
	if testing.Short() {
		iters = 8
	}
	for seed := 0; seed < iters; seed++ {
		rng := rand.New(rand.NewSource(int64(seed)))
		o := bChunkOpts{v2: rng.Intn(2) == 0, snappy: rng.Intn(2) == 0, mode: bEnc(rng.Intn(3)),
			plain: []float64{0, 0, 0.3}[rng.Intn(3)], pageRows: 1 + rng.Intn(2000)}
		n := rng.Intn(3000)
		rows := randomBoolRows(rng, n)
		var groups []int
		for left := n; left > 0 || len(groups) == 0; {
			k := min(left, rng.Intn(n+1))
			groups = append(groups, k)
			left -= k
		}
		t.Run(fmt.Sprintf("seed%d/%s", seed, boolOptsName(o)), func(t *testing.T) {
			data := buildBoolFile(t, rows, groups, o, rng)
			checkBoolFile(t, data, rows)
		})
	}
}

// TestDecodersRLEBooleansUnsupported: a dictionary page or an unknown encoding in a boolean
// chunk that takes our decoder is a bad data file naming the column.
func TestDecodersRLEBooleansUnsupported(t *testing.T) {
	schema, err := txlog.ParseSchema(boolSchema)
	if err != nil {
		t.Fatal(err)
	}
	rows := randomBoolRows(rand.New(rand.NewSource(1)), 50)
	delta := format.DeltaBinaryPacked
	for name, o := range map[string]bChunkOpts{
		"dictionary": {dict: true, pageRows: 10},
		"delta":      {enc: &delta, pageRows: 10},
	} {
		t.Run(name, func(t *testing.T) {
			data := buildBoolFile(t, rows, []int{50}, o, rand.New(rand.NewSource(2)))
			only := &txlog.StructType{Fields: []txlog.StructField{*schema.Field("o")}}
			_, err := pq.DecodeFile(bytes.NewReader(data), int64(len(data)), only)
			if !errors.Is(err, pq.ErrBadDataFile) || !strings.Contains(err.Error(), "column o") {
				t.Fatalf("got %v, want ErrBadDataFile naming column o", err)
			}
		})
	}
}
