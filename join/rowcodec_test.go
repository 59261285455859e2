package join

import (
	"errors"
	"math"
	"testing"

	"github.com/medallion-lake/medallion/pq"
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
		p := AppendRow(nil, src.Columns, i)
		rest, err := DecodeRow(dst.Columns, p)
		if err != nil || len(rest) != 0 {
			t.Fatalf("row %d: %v, %d bytes left", i, err, len(rest))
		}
		for cut := range len(p) {
			scratch, _ := pq.NewBatch(src.Schema)
			if _, err := DecodeRow(scratch.Columns, p[:cut]); !errors.Is(err, ErrBadRow) {
				t.Fatalf("row %d cut at %d of %d bytes: %v, want ErrBadRow", i, cut, len(p), err)
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
		f.Add(AppendRow(nil, src.Columns, i))
	}
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, p []byte) {
		b, _ := pq.NewBatch(payloadSchema())
		if _, err := DecodeRow(b.Columns, p); err != nil {
			return
		}
		if err := b.Validate(); err != nil {
			t.Fatalf("accepted %x into invalid columns: %v", p, err)
		}
	})
}
