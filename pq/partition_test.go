package pq_test

import (
	"math"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
	"github.com/medallion-lake/medallion/txlog"
)

func TestJavaDouble(t *testing.T) {
	cases := []struct {
		f    float64
		want string
	}{
		{0, "0.0"}, {1, "1.0"}, {-2.5, "-2.5"}, {0.001, "0.001"}, {1e-4, "1.0E-4"}, {1234567, "1234567.0"},
		{1e7, "1.0E7"}, {1.5e10, "1.5E10"}, {math.NaN(), "NaN"}, {math.Inf(-1), "-Infinity"}, {2021, "2021.0"},
	}
	for _, c := range cases {
		if got := pq.JavaDouble(c.f, 64); got != c.want {
			t.Errorf("javaDouble(%v) = %q, want %q", c.f, got, c.want)
		}
	}
}

func TestPartitionDir(t *testing.T) {
	s := func(v string) *string { return &v }
	cases := []struct {
		cols []string
		vals map[string]*string
		want string
	}{
		{[]string{"x"}, map[string]*string{"x": s("A/A")}, "x=A%2FA/"},
		{[]string{"x"}, map[string]*string{"x": s("B B")}, "x=B B/"},
		{[]string{"ts"}, map[string]*string{"ts": s("2024-01-01 10:00:00")}, "ts=2024-01-01 10%3A00%3A00/"},
		{[]string{"a", "b"}, map[string]*string{"a": nil, "b": s("100%")}, "a=__HIVE_DEFAULT_PARTITION__/b=100%25/"},
		{[]string{"data"}, map[string]*string{"data": s("😈")}, "data=😈/"},
	}
	for _, c := range cases {
		if got := pq.PartitionDir(c.cols, c.vals); got != c.want {
			t.Errorf("PartitionDir(%v) = %q, want %q", c.vals, got, c.want)
		}
	}
}

func TestPartitionValueRoundTrip(t *testing.T) {
	cases := []struct {
		typ  string
		text string // the serialized form we write
		also []string
	}{
		{"string", "A/A", nil},
		{"long", "-7", nil},
		{"integer", "42", nil},
		{"short", "-32768", nil},
		{"byte", "127", nil},
		{"double", "1.0E-4", []string{"0.0001"}},
		{"float", "2021.0", nil},
		{"decimal(10,2)", "123.45", nil},
		{"boolean", "true", []string{"TRUE"}},
		{"date", "1969-12-31", nil},
		{"timestamp", "2024-01-01T10:00:00.000000Z", []string{"2024-01-01 10:00:00", "2024-01-01T11:00:00+01:00"}},
		{"timestamp_ntz", "2021-11-18 02:30:00.123456", nil},
	}
	for _, c := range cases {
		st := pqtest.MustSchema(t, `{"type":"struct","fields":[{"name":"p","type":"`+c.typ+`","nullable":true,"metadata":{}}]}`)
		typ := st.Fields[0].Type
		for _, in := range append([]string{c.text}, c.also...) {
			col, _ := pq.NewColumn(typ)
			v := in
			if err := pq.AppendPartitionValue(typ, col, &v); err != nil {
				t.Fatalf("%s %q: %v", c.typ, in, err)
			}
			out, err := pq.SerializePartitionValue(typ, col, 0)
			if err != nil || out == nil || *out != c.text {
				t.Errorf("%s %q: serialized back as %v %v, want %q", c.typ, in, out, err, c.text)
			}
		}
	}
	// null and the empty string are both null
	col, _ := pq.NewColumn(txlog.PrimitiveType{Name: "string"})
	empty := ""
	pq.AppendPartitionValue(col.Type, col, nil)
	pq.AppendPartitionValue(col.Type, col, &empty)
	if !col.IsNull(0) || !col.IsNull(1) {
		t.Error("null and empty partition values must read as null")
	}
	bad := "12:00"
	dcol, _ := pq.NewColumn(txlog.PrimitiveType{Name: "date"})
	if err := pq.AppendPartitionValue(dcol.Type, dcol, &bad); err == nil {
		t.Error("a bad date partition value must fail")
	}
	us, _ := pq.ParseTimestampMicros("2021-09-08 11:11:11")
	if want := time.Date(2021, 9, 8, 11, 11, 11, 0, time.UTC).UnixMicro(); us != want {
		t.Errorf("old form read as %d, want %d (UTC)", us, want)
	}
}

func FuzzParseTimestampMicros(f *testing.F) {
	for _, s := range []string{"2024-01-01T10:00:00.000000Z", "2021-09-08 11:11:11", "2000-01-01T00:00:00.000-08:00", "x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		us, err := pq.ParseTimestampMicros(s)
		if err != nil {
			return
		}
		// A parsed timestamp re-serializes and parses to the same instant.
		back, err := pq.ParseTimestampMicros(time.UnixMicro(us).UTC().Format("2006-01-02T15:04:05.000000Z"))
		if err == nil && back != us {
			t.Errorf("%q: %d then %d", s, us, back)
		}
	})
}

func FuzzAppendPartitionValue(f *testing.F) {
	for _, s := range []string{"0", "-1", "1.5", "true", "2021-09-08", "2021-09-08 11:11:11", "123.45", "NaN", "", "1e400"} {
		for _, typ := range []string{"long", "integer", "byte", "double", "boolean", "date", "timestamp", "decimal(5,2)"} {
			f.Add(typ, s)
		}
	}
	f.Fuzz(func(t *testing.T, typ, s string) {
		st, err := txlog.ParseSchema(`{"type":"struct","fields":[{"name":"p","type":"` + typ + `","nullable":true,"metadata":{}}]}`)
		if err != nil {
			return
		}
		col, err := pq.NewColumn(st.Fields[0].Type)
		if err != nil {
			return
		}
		if err := pq.AppendPartitionValue(col.Type, col, &s); err != nil {
			return
		}
		if col.Len != 1 {
			t.Fatalf("appended %d rows", col.Len)
		}
		if _, err := pq.SerializePartitionValue(col.Type, col, 0); err != nil && !col.IsNull(0) {
			t.Fatalf("%s %q: parsed but cannot serialize: %v", typ, s, err)
		}
	})
}
