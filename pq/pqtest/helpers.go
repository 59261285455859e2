package pqtest

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go/encoding/thrift"

	"github.com/medallion-lake/medallion/pq"
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

// MustSchema parses a Delta schema JSON, failing t on an error.
func MustSchema(t testing.TB, s string) *txlog.StructType {
	t.Helper()
	st, err := txlog.ParseSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func mustDec(t testing.TB, s string, scale int) pq.Decimal128 {
	t.Helper()
	d, err := pq.ParseDecimal(s, scale)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// AllTypesBatch returns a batch of every column type with rows covering nulls, extremes,
// pre-1970 and year-9999 instants, and the expected Go values typed out independently of the
// reader.
func AllTypesBatch(t testing.TB) (*pq.Batch, [][]any) {
	b, err := pq.NewBatch(MustSchema(t, allTypesSchema))
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

	dec := func(s string, scale int) pq.Decimal {
		r, _ := new(big.Rat).SetString(s)
		r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
		d, _ := pq.DecimalFromBigInt(r.Num())
		return pq.Decimal{Unscaled: d, Scale: scale}
	}
	want := [][]any{
		{"héllo", int64(math.MaxInt64), int32(math.MinInt32), int16(-32768), int8(127), -1.5e300, float32(3.25), true, []byte{0, 1, 255},
			time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), pre1970, y9999, dec(maxDec, 10), dec("-999.99", 2),
			[]pq.Field{{Name: "start", Value: time.Unix(0, 0).UTC()}, {Name: "end", Value: time.Unix(300, 0).UTC()}},
			[]any{int32(1), nil, int32(3)}, []pq.KV{{Key: "a", Value: int64(-1)}, {Key: "b", Value: nil}},
			[]any{[]pq.Field{{Name: "val", Value: int32(7)}}, nil}, int64(0)},
		{nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, []any{}, []pq.KV{}, nil, int64(math.MinInt64)},
		{"", int64(0), int32(0), int16(0), int8(-128), 0.0, float32(0), false, []byte{},
			time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), y9999, pre1970, dec("-"+maxDec, 10), dec("0", 2),
			[]pq.Field{{Name: "start", Value: nil}, {Name: "end", Value: nil}}, nil, nil, []any{}, int64(42)},
	}
	return b, want
}

// BenchSchema is the 5-column event schema of the ingest hot path.
const BenchSchema = `{"type":"struct","fields":[
{"name":"event_id","type":"string","nullable":false,"metadata":{}},
{"name":"event_type","type":"string","nullable":true,"metadata":{}},
{"name":"amount","type":"double","nullable":true,"metadata":{}},
{"name":"event_time","type":"timestamp","nullable":false,"metadata":{}},
{"name":"source","type":"string","nullable":true,"metadata":{}}]}`

// BenchBatch returns n rows of BenchSchema, as ingest sees them.
func BenchBatch(b testing.TB, n int) *pq.Batch {
	batch, err := pq.NewBatch(MustSchema(b, BenchSchema))
	if err != nil {
		b.Fatal(err)
	}
	types := []string{"click", "view", "purchase", "signup"}
	base := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC).UnixMicro()
	var id []byte
	for i := 0; i < n; i++ {
		id = fmt.Appendf(id[:0], "evt-%012d", i)
		batch.Columns[0].AppendBytes(id)
		batch.Columns[1].AppendString(types[i%len(types)])
		batch.Columns[2].AppendFloat64(float64(i%1000) * 0.25)
		batch.Columns[3].AppendInt64(base + int64(i)*1_000_037)
		batch.Columns[4].AppendString("landing/events/part-0001.json")
	}
	return batch
}

// CPUClock reads the process's user+system CPU time: on a loaded shared machine, CPU per row
// is the stable measure where wall time is not.
func CPUClock() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// CheckDecoded compares the batches of a whole decoded file with the wanted columns
// (want[c] holds column c's values in the forms Column.Value returns), naming label,
// the column and the first row that differs.
func CheckDecoded(t testing.TB, label string, batches []*pq.Batch, want [][]any, names []string) {
	t.Helper()
	for c := range want {
		var got []any
		for _, b := range batches {
			col := b.Columns[c]
			if col.Len != b.Len() {
				t.Errorf("%s: column %s: Len %d, batch %d", label, names[c], col.Len, b.Len())
			}
			for i := 0; i < col.Len; i++ {
				got = append(got, col.Value(i))
			}
		}
		if len(got) != len(want[c]) {
			t.Errorf("%s: column %s: %d rows, want %d", label, names[c], len(got), len(want[c]))
			continue
		}
		for i := range got {
			if !SameValue(got[i], want[c][i]) {
				t.Errorf("%s: column %s row %d: got %#v, want %#v", label, names[c], i, got[i], want[c][i])
				break
			}
		}
	}
}

// SameValue is reflect.DeepEqual, except that two NaN doubles are the same and byte slices
// compare by content.
func SameValue(a, b any) bool {
	if fa, ok := a.(float64); ok {
		if fb, ok := b.(float64); ok {
			return fa == fb || (math.IsNaN(fa) && math.IsNaN(fb))
		}
	}
	if ba, ok := a.([]byte); ok {
		if bb, ok := b.([]byte); ok {
			return bytes.Equal(ba, bb)
		}
	}
	return reflect.DeepEqual(a, b)
}

// CompactThrift encodes v (a parquet-go format struct: a page header, a footer) with Thrift's
// compact protocol, as Parquet files store them, for tests that build files byte by byte.
func CompactThrift(t testing.TB, v any) []byte {
	t.Helper()
	b, err := thrift.Marshal(new(thrift.CompactProtocol), v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// BitWidth is the number of bits the RLE/bit-packed hybrid encoding uses for levels or
// indexes up to max (0 for max 0).
func BitWidth(max int) int {
	w := 0
	for 1<<w <= max {
		w++
	}
	return w
}

// Canon renders a value (in the forms Column.Value returns) as text, for order-independent
// row comparison.
func Canon(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case time.Time:
		return x.UTC().Format("2006-01-02T15:04:05.999999Z")
	case pq.Decimal:
		return x.String()
	case []byte:
		return "0x" + hex.EncodeToString(x)
	case []pq.Field:
		parts := make([]string, len(x))
		for i, f := range x {
			parts[i] = f.Name + ":" + Canon(f.Value)
		}
		return "{" + strings.Join(parts, ",") + "}"
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = Canon(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case []pq.KV:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = Canon(e.Key) + "=" + Canon(e.Value)
		}
		return "map{" + strings.Join(parts, ",") + "}"
	case string:
		return fmt.Sprintf("%q", x)
	}
	return fmt.Sprintf("%T(%v)", v, v)
}

// CanonRows renders each row with Canon, sorted, so that two row sets compare whatever their
// order.
func CanonRows(rows [][]any) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		parts := make([]string, len(r))
		for k, v := range r {
			parts[k] = Canon(v)
		}
		out[i] = strings.Join(parts, "|")
	}
	slices.Sort(out)
	return out
}
