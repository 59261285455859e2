package table

import (
	"bytes"
	"math"
	"math/big"
	"reflect"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/txlog"
)

const allTypesSchema = `{"type":"struct","fields":[
{"name":"s","type":"string","nullable":true,"metadata":{}},
{"name":"l","type":"long","nullable":true,"metadata":{}},
{"name":"i","type":"integer","nullable":true,"metadata":{}},
{"name":"sh","type":"short","nullable":true,"metadata":{}},
{"name":"by","type":"byte","nullable":true,"metadata":{}},
{"name":"d","type":"double","nullable":true,"metadata":{}},
{"name":"f","type":"float","nullable":true,"metadata":{}},
{"name":"b","type":"boolean","nullable":true,"metadata":{}},
{"name":"bin","type":"binary","nullable":true,"metadata":{}},
{"name":"dt","type":"date","nullable":true,"metadata":{}},
{"name":"ts","type":"timestamp","nullable":true,"metadata":{}},
{"name":"ntz","type":"timestamp_ntz","nullable":true,"metadata":{}},
{"name":"dec","type":"decimal(38,10)","nullable":true,"metadata":{}},
{"name":"dsmall","type":"decimal(5,2)","nullable":true,"metadata":{}},
{"name":"window","type":{"type":"struct","fields":[{"name":"start","type":"timestamp","nullable":true,"metadata":{}},{"name":"end","type":"timestamp","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},
{"name":"arr","type":{"type":"array","elementType":"integer","containsNull":true},"nullable":true,"metadata":{}},
{"name":"m","type":{"type":"map","keyType":"string","valueType":"long","valueContainsNull":true},"nullable":true,"metadata":{}},
{"name":"as","type":{"type":"array","elementType":{"type":"struct","fields":[{"name":"val","type":"integer","nullable":true,"metadata":{}}]},"containsNull":true},"nullable":true,"metadata":{}},
{"name":"req","type":"long","nullable":false,"metadata":{}}
]}`

func mustSchema(t testing.TB, s string) *txlog.StructType {
	t.Helper()
	st, err := txlog.ParseSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func mustDec(t testing.TB, s string, scale int) Decimal128 {
	t.Helper()
	d, err := ParseDecimal(s, scale)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// allTypesRows appends rows covering nulls, extremes, pre-1970 and year-9999 instants, and
// returns the expected Go values typed out independently of the reader.
func allTypesBatch(t testing.TB) (*Batch, [][]any) {
	b, err := NewBatch(mustSchema(t, allTypesSchema))
	if err != nil {
		t.Fatal(err)
	}
	c := b.Columns
	pre1970 := time.Date(1969, 7, 20, 20, 17, 40, 123456000, time.UTC)
	y9999 := time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
	maxDec := "9999999999999999999999999999.9999999999"
	// row 0: ordinary values
	c[0].AppendString("héllo")
	c[1].AppendInt64(math.MaxInt64)
	c[2].AppendInt32(math.MinInt32)
	c[3].AppendInt32(-32768)
	c[4].AppendInt32(127)
	c[5].AppendFloat64(-1.5e300)
	c[6].AppendFloat32(3.25)
	c[7].AppendBool(true)
	c[8].AppendBytes([]byte{0, 1, 255})
	c[9].AppendInt32(-719162) // 0001-01-01
	c[10].AppendTime(pre1970)
	c[11].AppendTime(y9999)
	c[12].AppendDecimal(mustDec(t, maxDec, 10))
	c[13].AppendDecimal(mustDec(t, "-999.99", 2))
	c[14].Children[0].AppendTime(time.Unix(0, 0))
	c[14].Children[1].AppendTime(time.Unix(300, 0))
	c[14].AppendStruct()
	c[15].Children[0].AppendInt32(1)
	c[15].Children[0].AppendNull()
	c[15].Children[0].AppendInt32(3)
	c[15].AppendList()
	c[16].Children[0].AppendString("a")
	c[16].Children[1].AppendInt64(-1)
	c[16].Children[0].AppendString("b")
	c[16].Children[1].AppendNull()
	c[16].AppendList()
	c[17].Children[0].Children[0].AppendInt32(7)
	c[17].Children[0].AppendStruct()
	c[17].Children[0].AppendNull()
	c[17].AppendList()
	c[18].AppendInt64(0)
	// row 1: all nulls (except the required column), empty list and map
	for k := 0; k < 15; k++ {
		c[k].AppendNull()
	}
	c[15].AppendList()
	c[16].AppendList()
	c[17].AppendNull()
	c[18].AppendInt64(math.MinInt64)
	// row 2: zero values (which must not become null), struct with null fields
	c[0].AppendString("")
	c[1].AppendInt64(0)
	c[2].AppendInt32(0)
	c[3].AppendInt32(0)
	c[4].AppendInt32(-128)
	c[5].AppendFloat64(0)
	c[6].AppendFloat32(0)
	c[7].AppendBool(false)
	c[8].AppendBytes(nil)
	c[9].AppendInt32(2932896) // 9999-12-31
	c[10].AppendTime(y9999)
	c[11].AppendTime(pre1970)
	c[12].AppendDecimal(mustDec(t, "-"+maxDec, 10))
	c[13].AppendDecimal(mustDec(t, "0", 2))
	c[14].Children[0].AppendNull()
	c[14].Children[1].AppendNull()
	c[14].AppendStruct()
	c[15].AppendNull()
	c[16].AppendNull()
	c[17].AppendList()
	c[18].AppendInt64(42)

	dec := func(s string, scale int) Decimal {
		r, _ := new(big.Rat).SetString(s)
		r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
		d, _ := DecimalFromBigInt(r.Num())
		return Decimal{d, scale}
	}
	want := [][]any{
		{"héllo", int64(math.MaxInt64), int32(math.MinInt32), int16(-32768), int8(127), -1.5e300, float32(3.25), true, []byte{0, 1, 255},
			time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), pre1970, y9999, dec(maxDec, 10), dec("-999.99", 2),
			[]Field{{"start", time.Unix(0, 0).UTC()}, {"end", time.Unix(300, 0).UTC()}},
			[]any{int32(1), nil, int32(3)}, []KV{{"a", int64(-1)}, {"b", nil}},
			[]any{[]Field{{"val", int32(7)}}, nil}, int64(0)},
		{nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, []any{}, []KV{}, nil, int64(math.MinInt64)},
		{"", int64(0), int32(0), int16(0), int8(-128), 0.0, float32(0), false, []byte{},
			time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), y9999, pre1970, dec("-"+maxDec, 10), dec("0", 2),
			[]Field{{"start", nil}, {"end", nil}}, nil, nil, []any{}, int64(42)},
	}
	return b, want
}

func TestRoundTripAllTypes(t *testing.T) {
	for _, comp := range []string{CompressionSnappy, CompressionZstd} {
		t.Run(comp, func(t *testing.T) {
			b, want := allTypesBatch(t)
			if err := b.Validate(); err != nil {
				t.Fatal(err)
			}
			data, stats, err := EncodeFile(b.Schema, []*Batch{b}, WriteOptions{Compression: comp})
			if err != nil {
				t.Fatal(err)
			}
			if len(stats) == 0 {
				t.Fatal("no stats")
			}
			got, err := DecodeFile(bytes.NewReader(data), int64(len(data)), b.Schema)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Len() != len(want) {
				t.Fatalf("got %d batches", len(got))
			}
			for r := range want {
				row := got[0].Row(r)
				for k := range want[r] {
					if !reflect.DeepEqual(row[k], want[r][k]) {
						t.Errorf("row %d column %s: got %#v, want %#v", r, b.Schema.Fields[k].Name, row[k], want[r][k])
					}
				}
			}
		})
	}
}

func TestAppendValueRoundTrip(t *testing.T) {
	b, want := allTypesBatch(t)
	out, _ := NewBatch(b.Schema)
	for r := range want {
		for k, v := range want[r] {
			if err := out.Columns[k].AppendValue(v); err != nil {
				t.Fatalf("row %d column %s: %v", r, b.Schema.Fields[k].Name, err)
			}
		}
	}
	for r := range want {
		if !reflect.DeepEqual(out.Row(r), want[r]) {
			t.Errorf("row %d: got %v, want %v", r, out.Row(r), want[r])
		}
	}
	if err := out.Columns[2].AppendValue(int64(math.MaxInt32) + 1); err == nil {
		t.Error("overflow accepted")
	}
	if err := out.Columns[0].AppendValue(3.5); err == nil {
		t.Error("a float accepted in a string column")
	}
}

func TestCompareValues(t *testing.T) {
	cases := []struct {
		a, b any
		want int
		ok   bool
	}{
		{int64(1), int64(2), -1, true},
		{"b", "a", 1, true},
		{time.Unix(5, 0), time.Unix(5, 0), 0, true},
		{Decimal{DecimalFromInt64(150), 2}, Decimal{DecimalFromInt64(15), 1}, 0, true},
		{false, true, -1, true},
		{[]byte{1}, []byte{1, 0}, -1, true},
		{int64(1), int32(1), 0, false},
		{[]any{}, []any{}, 0, false},
	}
	for _, c := range cases {
		got, ok := CompareValues(c.a, c.b)
		if got != c.want || ok != c.ok {
			t.Errorf("CompareValues(%v, %v) = %d %v, want %d %v", c.a, c.b, got, ok, c.want, c.ok)
		}
	}
}
