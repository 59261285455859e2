package pq_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
	"github.com/medallion-lake/medallion/txlog"
)

func payloadSchema() *txlog.StructType {
	p := func(n string) txlog.DataType { return txlog.PrimitiveType{Name: n} }
	f := func(name string, t txlog.DataType) txlog.StructField {
		return txlog.StructField{Name: name, Type: t, Nullable: true}
	}
	return &txlog.StructType{Fields: []txlog.StructField{
		f("l", p(txlog.TypeLong)), f("i", p(txlog.TypeInteger)), f("d", p(txlog.TypeDouble)), f("f", p(txlog.TypeFloat)),
		f("b", p(txlog.TypeBoolean)), f("s", p(txlog.TypeString)), f("bin", p(txlog.TypeBinary)), f("dec", txlog.DecimalType{Precision: 20, Scale: 2}),
		f("day", p(txlog.TypeDate)), f("ts", p(txlog.TypeTimestamp)), f("v", p(txlog.TypeVoid)),
		f("st", &txlog.StructType{Fields: []txlog.StructField{f("a", p(txlog.TypeInteger)), f("b", p(txlog.TypeString))}}),
		f("arr", txlog.ArrayType{ElementType: p(txlog.TypeString), ContainsNull: true}),
		f("m", txlog.MapType{KeyType: p(txlog.TypeString), ValueType: p(txlog.TypeLong), ValueContainsNull: true}),
	}}
}

// payloadBatch holds a row with every kind set, a row of nulls, and one with extreme values
// and empty or nested nulls.
func payloadBatch(t testing.TB) *pq.Batch {
	t.Helper()
	b, err := pq.NewBatch(payloadSchema())
	if err != nil {
		t.Fatal(err)
	}
	c := b.Columns
	// Row 0: ordinary values.
	c[0].AppendInt64(-42)
	c[1].AppendInt32(7)
	c[2].AppendFloat64(2.5)
	c[3].AppendFloat32(-1.25)
	c[4].AppendBool(true)
	c[5].AppendString("héllo")
	c[6].AppendBytes([]byte{0, 1, 255})
	c[7].AppendDecimal(pq.Decimal128{Hi: -1, Lo: 12345})
	c[8].AppendInt32(19844)
	c[9].AppendInt64(1714564800000000)
	c[10].AppendNull()
	c[11].Children[0].AppendInt32(3)
	c[11].Children[1].AppendString("x")
	c[11].AppendStruct()
	c[12].Children[0].AppendString("a")
	c[12].Children[0].AppendNull()
	c[12].AppendList()
	c[13].Children[0].AppendString("k")
	c[13].Children[1].AppendInt64(9)
	c[13].AppendList()
	// Row 1: nulls everywhere.
	for _, col := range c {
		col.AppendNull()
	}
	// Row 2: extremes, empty values, a struct with null fields, an empty list.
	c[0].AppendInt64(-1 << 63)
	c[1].AppendInt32(-1 << 31)
	c[2].AppendFloat64(math.Copysign(0, -1))
	c[3].AppendFloat32(3.4e38)
	c[4].AppendBool(false)
	c[5].AppendString("")
	c[6].AppendBytes(nil)
	c[7].AppendDecimal(pq.Decimal128{Hi: 1 << 62, Lo: 1<<64 - 1})
	c[8].AppendInt32(-1)
	c[9].AppendInt64(1<<63 - 1)
	c[10].AppendNull()
	c[11].Children[0].AppendNull()
	c[11].Children[1].AppendNull()
	c[11].AppendStruct()
	c[12].AppendList()
	c[13].AppendList()
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRowPayloadRoundTrip: every kind of column, null or not, decodes back to the same JSON
// rendering (AppendJSONRow, an independent reader of the columns), and a payload cut short
// or run on is refused.
func TestRowPayloadRoundTrip(t *testing.T) {
	src := payloadBatch(t)
	dst, _ := pq.NewBatch(src.Schema)
	for i := range src.Len() {
		p := pq.EncodeRow(nil, src.Columns, i)
		rest, err := pq.DecodeRow(dst.Columns, p)
		if err != nil || len(rest) != 0 {
			t.Fatalf("row %d: %v, %d bytes left", i, err, len(rest))
		}
		for cut := range len(p) {
			scratch, _ := pq.NewBatch(src.Schema)
			if _, err := pq.DecodeRow(scratch.Columns, p[:cut]); !errors.Is(err, pq.ErrBadRow) {
				t.Fatalf("row %d cut at %d of %d bytes: %v, want pq.ErrBadRow", i, cut, len(p), err)
			}
		}
	}
	if err := dst.Validate(); err != nil {
		t.Fatal(err)
	}
	for i := range src.Len() {
		got, want := string(pq.AppendJSONRow(nil, dst, i)), string(pq.AppendJSONRow(nil, src, i))
		if got != want {
			t.Fatalf("row %d decodes as %s, want %s", i, got, want)
		}
	}
}

// FuzzRowPayload: no payload crashes the decoder, and whatever it accepts leaves valid
// columns.
func FuzzRowPayload(f *testing.F) {
	src := payloadBatch(f)
	for i := range src.Len() {
		f.Add(pq.EncodeRow(nil, src.Columns, i))
	}
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, p []byte) {
		b, _ := pq.NewBatch(payloadSchema())
		if _, err := pq.DecodeRow(b.Columns, p); err != nil {
			return
		}
		if err := b.Validate(); err != nil {
			t.Fatalf("accepted %x into invalid columns: %v", p, err)
		}
	})
}

// sameValue is the test's own notion of value equality, independent of the codec: the same
// kind (one column), both null, or both present with bit-equal floats, equal bytes, equal
// decimals and children equal in order.
func sameValue(c *pq.Column, i, j int) bool {
	ni, nj := c.Kind == pq.KindNull || c.IsNull(i), c.Kind == pq.KindNull || c.IsNull(j)
	if ni || nj {
		return ni == nj
	}
	switch c.Kind {
	case pq.KindInt64:
		return c.Int64[i] == c.Int64[j]
	case pq.KindInt32:
		return c.Int32[i] == c.Int32[j]
	case pq.KindFloat64:
		return math.Float64bits(c.Float64[i]) == math.Float64bits(c.Float64[j])
	case pq.KindFloat32:
		return math.Float32bits(c.Float32[i]) == math.Float32bits(c.Float32[j])
	case pq.KindBool:
		return c.Bool[i] == c.Bool[j]
	case pq.KindBytes:
		return bytes.Equal(c.BytesAt(i), c.BytesAt(j))
	case pq.KindDecimal:
		return c.Decimal[i] == c.Decimal[j]
	case pq.KindStruct:
		for _, ch := range c.Children {
			if !sameValue(ch, i, j) {
				return false
			}
		}
		return true
	case pq.KindList, pq.KindMap:
		si, ei := c.ListRange(i)
		sj, ej := c.ListRange(j)
		if ei-si != ej-sj {
			return false
		}
		for k := range ei - si {
			for _, ch := range c.Children {
				if !sameValue(ch, si+k, sj+k) {
					return false
				}
			}
		}
		return true
	}
	panic(fmt.Sprintf("kind %d", c.Kind))
}

func sameRow(cols []*pq.Column, i, j int) bool {
	for _, c := range cols {
		if !sameValue(c, i, j) {
			return false
		}
	}
	return true
}

// checkIdentity asserts, over every pair of rows of b, that the rows encode alike exactly when
// sameRow says they are equal, for the whole row and for each column alone; it returns how
// many equal and distinct pairs it saw.
func checkIdentity(t *testing.T, b *pq.Batch) (equal, distinct int) {
	t.Helper()
	sets := [][]*pq.Column{b.Columns}
	names := []string{"the whole row"}
	for k, c := range b.Columns {
		sets = append(sets, []*pq.Column{c})
		names = append(names, "column "+b.Schema.Fields[k].Name)
	}
	for s, cols := range sets {
		enc := make([][]byte, b.Len())
		for i := range enc {
			enc[i] = pq.EncodeRow(nil, cols, i)
		}
		for i := range enc {
			for j := range enc {
				want := sameRow(cols, i, j)
				if got := bytes.Equal(enc[i], enc[j]); got != want {
					t.Fatalf("rows %d and %d, %s: encodings equal %v, values equal %v\n%s\n%s",
						i, j, names[s], got, want, pq.AppendJSONRow(nil, b, i), pq.AppendJSONRow(nil, b, j))
				}
				if want {
					equal++
				} else {
					distinct++
				}
			}
		}
	}
	return equal, distinct
}

// identityEdgeBatch holds rows that differ only where a lossy encoding would merge them: NaN
// payloads, -0 and 0, the empty string or binary and null, an empty list and a null one, a
// struct of nulls and a null struct, decimals differing in one half, timestamps a microsecond
// apart; and an exact duplicate of each, so that equal rows are checked too.
func identityEdgeBatch(t *testing.T) *pq.Batch {
	t.Helper()
	p := func(n string) txlog.DataType { return txlog.PrimitiveType{Name: n} }
	f := func(name string, typ txlog.DataType) txlog.StructField {
		return txlog.StructField{Name: name, Type: typ, Nullable: true}
	}
	schema := &txlog.StructType{Fields: []txlog.StructField{
		f("d", p(txlog.TypeDouble)), f("f", p(txlog.TypeFloat)), f("s", p(txlog.TypeString)),
		f("bin", p(txlog.TypeBinary)), f("dec", txlog.DecimalType{Precision: 38, Scale: 4}),
		f("ts", p(txlog.TypeTimestamp)), f("i", p(txlog.TypeInteger)),
		f("st", &txlog.StructType{Fields: []txlog.StructField{f("a", p(txlog.TypeLong)), f("b", p(txlog.TypeString))}}),
		f("arr", txlog.ArrayType{ElementType: p(txlog.TypeString), ContainsNull: true}),
	}}
	b, err := pq.NewBatch(schema)
	if err != nil {
		t.Fatal(err)
	}
	c := b.Columns
	nan0, nan1 := math.Float64frombits(0x7ff8000000000000), math.Float64frombits(0x7ff8000000000001)
	nan32a, nan32b := math.Float32frombits(0x7fc00000), math.Float32frombits(0x7fc00001)
	type row struct {
		d    *float64
		f    *float32
		s    *string
		bin  []byte // nil: null
		dec  *pq.Decimal128
		ts   *int64
		i    *int32
		st   int // 0 null, 1 both fields null, 2 {0, ""}
		list int // 0 null, 1 empty, 2 [null], 3 [""]
	}
	f64 := func(v float64) *float64 { return &v }
	f32 := func(v float32) *float32 { return &v }
	str := func(v string) *string { return &v }
	dec := func(hi int64, lo uint64) *pq.Decimal128 { return &pq.Decimal128{Hi: hi, Lo: lo} }
	i64 := func(v int64) *int64 { return &v }
	i32 := func(v int32) *int32 { return &v }
	rows := []row{
		{},
		{d: f64(0), f: f32(0), s: str(""), bin: []byte{}, dec: dec(0, 0), ts: i64(0), i: i32(0), st: 1, list: 1},
		{d: f64(math.Copysign(0, -1)), f: f32(float32(math.Copysign(0, -1))), s: str("\x00"), bin: []byte{0}, dec: dec(-1, 1<<64-1), ts: i64(1), i: i32(-1), st: 2, list: 2},
		{d: f64(nan0), f: f32(nan32a), s: str("a"), bin: []byte("a"), dec: dec(1, 0), ts: i64(-1), i: i32(1 << 30), st: 2, list: 3},
		{d: f64(nan1), f: f32(nan32b), s: str("ab"), bin: []byte("ab"), dec: dec(0, 1), ts: i64(1714564800000000), i: i32(-1 << 31), st: 1, list: 2},
		{d: f64(math.Inf(-1)), f: f32(float32(math.Inf(1))), s: str("b"), bin: []byte{0, 0}, dec: dec(-1<<63, 0), ts: i64(1714564800000001), i: i32(1<<31 - 1), st: 0, list: 1},
	}
	for range 2 { // every row twice
		for _, r := range rows {
			if r.d == nil {
				c[0].AppendNull()
			} else {
				c[0].AppendFloat64(*r.d)
			}
			if r.f == nil {
				c[1].AppendNull()
			} else {
				c[1].AppendFloat32(*r.f)
			}
			if r.s == nil {
				c[2].AppendNull()
			} else {
				c[2].AppendString(*r.s)
			}
			if r.bin == nil {
				c[3].AppendNull()
			} else {
				c[3].AppendBytes(r.bin)
			}
			if r.dec == nil {
				c[4].AppendNull()
			} else {
				c[4].AppendDecimal(*r.dec)
			}
			if r.ts == nil {
				c[5].AppendNull()
			} else {
				c[5].AppendInt64(*r.ts)
			}
			if r.i == nil {
				c[6].AppendNull()
			} else {
				c[6].AppendInt32(*r.i)
			}
			switch r.st {
			case 0:
				c[7].AppendNull()
			case 1:
				c[7].Children[0].AppendNull()
				c[7].Children[1].AppendNull()
				c[7].AppendStruct()
			case 2:
				c[7].Children[0].AppendInt64(0)
				c[7].Children[1].AppendString("")
				c[7].AppendStruct()
			}
			switch r.list {
			case 0:
				c[8].AppendNull()
			case 1:
				c[8].AppendList()
			case 2:
				c[8].Children[0].AppendNull()
				c[8].AppendList()
			case 3:
				c[8].Children[0].AppendString("")
				c[8].AppendList()
			}
		}
	}
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEncodeRowIdentity: the codec is the row identity late/ compares rows by (the join merge
// and replay's unchanged-row multiset), so over one schema two rows encode alike exactly when
// their values are equal (by sameValue, not by the codec): NaN payloads, -0, empty versus null
// and nested nulls kept apart, on hand-made edge rows, on the payload rows of every kind, and on
// random nested batches with few distinct values per column.
func TestEncodeRowIdentity(t *testing.T) {
	eq, ne := checkIdentity(t, identityEdgeBatch(t))
	if eq == 0 || ne == 0 {
		t.Fatalf("edge rows: %d equal and %d distinct pairs, want both", eq, ne)
	}
	checkIdentity(t, payloadBatch(t))
	r := rand.New(rand.NewPCG(31, 7))
	for range 30 {
		schema := pqtest.RandomSchema(r, true)
		b, _, err := pqtest.RandomBatch(r, schema, 24)
		if err != nil {
			t.Fatal(err)
		}
		e, n := checkIdentity(t, b)
		eq, ne = eq+e, ne+n
	}
	t.Logf("%d equal and %d distinct pairs", eq, ne)
}

// TestEncodeRowBytes pins the persisted payload format (join state snapshots and deltas hold
// it) to bytes worked out by hand from its definition, so that a change to the codec cannot
// pass unnoticed: it needs a new state format.
func TestEncodeRowBytes(t *testing.T) {
	p := func(n string) txlog.DataType { return txlog.PrimitiveType{Name: n} }
	f := func(name string, typ txlog.DataType) txlog.StructField {
		return txlog.StructField{Name: name, Type: typ, Nullable: true}
	}
	schema := &txlog.StructType{Fields: []txlog.StructField{
		f("l", p(txlog.TypeLong)), f("i", p(txlog.TypeInteger)), f("d", p(txlog.TypeDouble)),
		f("f", p(txlog.TypeFloat)), f("b", p(txlog.TypeBoolean)), f("s", p(txlog.TypeString)),
		f("dec", txlog.DecimalType{Precision: 20, Scale: 2}),
		f("st", &txlog.StructType{Fields: []txlog.StructField{f("a", p(txlog.TypeInteger))}}),
		f("arr", txlog.ArrayType{ElementType: p(txlog.TypeLong), ContainsNull: true}),
		f("v", p(txlog.TypeVoid)),
	}}
	b, err := pq.NewBatch(schema)
	if err != nil {
		t.Fatal(err)
	}
	c := b.Columns
	c[0].AppendInt64(-42)   // zigzag 83 = 0x53
	c[1].AppendInt32(300)   // zigzag 600 = 0xd8 0x04
	c[2].AppendFloat64(1.5) // 0x3ff8000000000000, little-endian
	c[3].AppendNull()
	c[4].AppendBool(true)
	c[5].AppendString("hé") // 3 bytes
	c[6].AppendDecimal(pq.Decimal128{Hi: -1, Lo: 2})
	c[7].Children[0].AppendInt32(-1) // zigzag 1
	c[7].AppendStruct()
	c[8].Children[0].AppendInt64(1)
	c[8].Children[0].AppendNull()
	c[8].AppendList()
	c[9].AppendNull()
	want := []byte{
		1, 0x53,
		1, 0xd8, 0x04,
		1, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f,
		0,
		1, 1,
		1, 3, 'h', 0xc3, 0xa9,
		1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 0, 0, 0,
		1, 1, 1,
		1, 2, 1, 2, 0,
		0,
	}
	if got := pq.EncodeRow(nil, c, 0); !bytes.Equal(got, want) {
		t.Fatalf("payload\n got %x\nwant %x", got, want)
	}
}
