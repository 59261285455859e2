package pq_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
	"github.com/medallion-lake/medallion/txlog"
)

func TestStatsGolden(t *testing.T) {
	b, _ := pqtest.AllTypesBatch(t)
	_, stats, err := pq.EncodeFile(b.Schema, []*pq.Batch{b}, pq.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"numRecords":3,` +
		`"minValues":{"s":"","l":0,"i":-2147483648,"sh":-32768,"by":-128,"d":-1.5e+300,"f":0,"dt":"0001-01-01",` +
		`"ts":"1969-07-20T20:17:40.123Z","ntz":"1969-07-20T20:17:40.123","dec":-9999999999999999999999999999.9999999999,"dsmall":-999.99,` +
		`"window":{"start":"1970-01-01T00:00:00.000Z","end":"1970-01-01T00:05:00.000Z"},"req":-9223372036854775808},` +
		`"maxValues":{"s":"héllo","l":9223372036854775807,"i":0,"sh":0,"by":127,"d":0,"f":3.25,"dt":"9999-12-31",` +
		`"dec":9999999999999999999999999999.9999999999,"dsmall":0.00,` +
		`"window":{"start":"1970-01-01T00:00:00.000Z","end":"1970-01-01T00:05:00.000Z"},"req":42},` +
		`"nullCount":{"s":1,"l":1,"i":1,"sh":1,"by":1,"d":1,"f":1,"b":1,"bin":1,"dt":1,"ts":1,"ntz":1,"dec":1,"dsmall":1,` +
		`"window":{"start":2,"end":2},"req":0}}`
	// ts max 9999-12-31T23:59:59.999999 rounds up past year 9999, so it is left out rather
	// than written as a value that is not an upper bound.
	if stats != want {
		t.Errorf("stats:\ngot  %s\nwant %s", stats, want)
	}
	if !json.Valid([]byte(stats)) {
		t.Error("stats are not valid JSON")
	}
}

func TestFormatStatsTimestamp(t *testing.T) {
	cases := []struct {
		us     int64
		up     bool
		want   string
		wantOK bool
		ntz    bool
	}{
		{0, false, "1970-01-01T00:00:00.000Z", true, false},
		{1, false, "1970-01-01T00:00:00.000Z", true, false},
		{1, true, "1970-01-01T00:00:00.001Z", true, false},
		{-1, false, "1969-12-31T23:59:59.999Z", true, false},
		{-1, true, "1970-01-01T00:00:00.000Z", true, false},
		{-1000, true, "1969-12-31T23:59:59.999Z", true, false},
		{1234567, true, "1970-01-01T00:00:01.235", true, true},
		{time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC).UnixMicro(), true, "", false, false},
		{time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC).UnixMicro(), false, "9999-12-31T23:59:59.999Z", true, false},
	}
	for _, c := range cases {
		got, ok := pq.FormatStatsTimestamp(c.us, c.up, c.ntz)
		if got != c.want || ok != c.wantOK {
			t.Errorf("FormatStatsTimestamp(%d, up=%v) = %q %v, want %q %v", c.us, c.up, got, ok, c.want, c.wantOK)
		}
	}
}

func TestStringStatsTruncation(t *testing.T) {
	long := strings.Repeat("a", 40)
	emoji := strings.Repeat("b", 32) + "😈x"
	cases := []struct{ in, min, max string }{
		{"short", "short", "short"},
		{long, strings.Repeat("a", 32), strings.Repeat("a", 32) + "\ufffd"},
		// The 33rd character sorts above U+FFFD: the prefix grows to keep an upper bound.
		{emoji, strings.Repeat("b", 32), strings.Repeat("b", 32) + "😈\ufffd"},
	}
	for _, c := range cases {
		if got := string(pq.TruncateMin([]byte(c.in))); got != c.min {
			t.Errorf("min(%q) = %q, want %q", c.in, got, c.min)
		}
		got := string(pq.TruncateMax([]byte(c.in)))
		if got != c.max {
			t.Errorf("max(%q) = %q, want %q", c.in, got, c.max)
		}
		if got < c.in {
			t.Errorf("max(%q) = %q is not an upper bound", c.in, got)
		}
	}
}

func TestStatsSkipNaNAndLimitColumns(t *testing.T) {
	s := pqtest.MustSchema(t, `{"type":"struct","fields":[{"name":"a","type":"double","nullable":true,"metadata":{}},
		{"name":"b","type":"long","nullable":true,"metadata":{}},{"name":"c","type":"long","nullable":true,"metadata":{}}]}`)
	b, _ := pq.NewBatch(s)
	b.Columns[0].AppendFloat64(math.NaN())
	b.Columns[1].AppendInt64(5)
	b.Columns[2].AppendInt64(6)
	_, stats, err := pq.EncodeFile(s, []*pq.Batch{b}, pq.WriteOptions{StatsColumns: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"numRecords":1,"minValues":{"b":5},"maxValues":{"b":5},"nullCount":{"a":0,"b":0}}`
	if stats != want {
		t.Errorf("got %s, want %s", stats, want)
	}
}

// TestStringEncodings locks in Spark-compatible encodings: dictionary for repetitive strings,
// PLAIN for ids, never DELTA_LENGTH_BYTE_ARRAY, and data page v1.
func TestStringEncodings(t *testing.T) {
	b := pqtest.BenchBatch(t, 5000)
	data, _, err := pq.EncodeFile(b.Schema, []*pq.Batch{b}, pq.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]format.Encoding{"event_id": format.Plain, "event_type": format.RLEDictionary, "source": format.RLEDictionary}
	for _, c := range f.Metadata().RowGroups[0].Columns {
		name := c.MetaData.PathInSchema[0]
		for _, enc := range c.MetaData.Encoding {
			if enc == format.DeltaLengthByteArray || enc == format.DeltaByteArray {
				t.Errorf("%s uses %s", name, enc)
			}
		}
		if w, ok := want[name]; ok && !slices.Contains(c.MetaData.Encoding, w) {
			t.Errorf("%s encodings %v, want %s", name, c.MetaData.Encoding, w)
		}
		if w, ok := want[name]; ok && w == format.Plain && slices.Contains(c.MetaData.Encoding, format.RLEDictionary) {
			t.Errorf("%s is dictionary-encoded", name)
		}
	}
	for _, kv := range f.Metadata().KeyValueMetadata {
		if kv.Key == "org.apache.spark.version" {
			return
		}
	}
	t.Error("no org.apache.spark.version key")
}

// TestMinMaxBytesAgainstSort checks the prefix shortcut of minMaxBytes on strings built to
// tie on their first eight bytes: empty ones, zero bytes, 0xff, prefixes of each other.
func TestMinMaxBytesAgainstSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	alphabet := []byte{0, 1, 'a', 'b', 0xfe, 0xff}
	for round := range 500 {
		col, err := pq.NewColumn(txlog.PrimitiveType{Name: txlog.TypeString})
		if err != nil {
			t.Fatal(err)
		}
		n := 1 + rng.IntN(40)
		var vals []string
		for range n {
			v := make([]byte, rng.IntN(11))
			for j := range v {
				v[j] = alphabet[rng.IntN(len(alphabet))]
			}
			vals = append(vals, string(v))
			col.AppendString(string(v))
		}
		// Every other round selects a shuffled subset of rows instead of all of them.
		var rows []int
		want := vals
		if round%2 == 1 {
			rows = rng.Perm(n)[:1+rng.IntN(n)]
			want = nil
			for _, i := range rows {
				want = append(want, vals[i])
			}
		}
		mn, mx := pq.MinMaxBytes(col, rows, 0, len(want))
		if got, exp := string(col.BytesAt(mn)), slices.Min(want); got != exp {
			t.Fatalf("round %d: min %q, want %q (of %q)", round, got, exp, want)
		}
		if got, exp := string(col.BytesAt(mx)), slices.Max(want); got != exp {
			t.Fatalf("round %d: max %q, want %q (of %q)", round, got, exp, want)
		}
	}
}

// TestStatsFromFooterRowGroups: the integer and string min/max that come from the file's
// column chunk statistics span every row group, skip nulls (a row group whose values are all
// null, a column of nulls only), and match the values' own least and greatest.
func TestStatsFromFooterRowGroups(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	s := &txlog.StructType{Fields: []txlog.StructField{
		{Name: "l", Type: txlog.PrimitiveType{Name: txlog.TypeLong}, Nullable: true},
		{Name: "i", Type: txlog.PrimitiveType{Name: txlog.TypeInteger}, Nullable: true},
		{Name: "s", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true},
		{Name: "n", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true},
	}}
	b, err := pq.NewBatch(s)
	if err != nil {
		t.Fatal(err)
	}
	const rows, group = 3000, 700
	var ls, is []int64
	var ss []string
	for r := range rows {
		if rng.IntN(10) == 0 {
			b.Columns[0].AppendNull()
		} else {
			v := rng.Int64() - rng.Int64()
			ls = append(ls, v)
			b.Columns[0].AppendInt64(v)
		}
		if r < group || rng.IntN(10) == 0 { // the first row group's i: all null
			b.Columns[1].AppendNull()
		} else {
			v := int32(rng.Uint32())
			is = append(is, int64(v))
			b.Columns[1].AppendInt32(v)
		}
		v := make([]byte, rng.IntN(6))
		for k := range v {
			v[k] = byte('a' + rng.IntN(26))
		}
		ss = append(ss, string(v))
		b.Columns[2].AppendString(string(v))
		b.Columns[3].AppendNull()
	}
	_, stats, err := pq.EncodeFile(s, []*pq.Batch{b}, pq.WriteOptions{RowGroupRows: group})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Min   map[string]any   `json:"minValues"`
		Max   map[string]any   `json:"maxValues"`
		Nulls map[string]int64 `json:"nullCount"`
	}
	dec := json.NewDecoder(strings.NewReader(stats))
	dec.UseNumber()
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	num := func(v int64) any { return json.Number(strconv.FormatInt(v, 10)) }
	want := map[string][2]any{
		"l": {num(slices.Min(ls)), num(slices.Max(ls))},
		"i": {num(slices.Min(is)), num(slices.Max(is))},
		"s": {slices.Min(ss), slices.Max(ss)},
	}
	for name, mm := range want {
		if got.Min[name] != mm[0] || got.Max[name] != mm[1] {
			t.Errorf("%s: min %v max %v, want %v %v", name, got.Min[name], got.Max[name], mm[0], mm[1])
		}
	}
	if _, ok := got.Min["n"]; ok || got.Nulls["n"] != rows || got.Nulls["l"] != int64(rows-len(ls)) || got.Nulls["i"] != int64(rows-len(is)) {
		t.Errorf("nulls %v, min of n %v; want n all null, l %d, i %d", got.Nulls, got.Min["n"], rows-len(ls), rows-len(is))
	}
}
