package pq_test

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
)

// otherWriterRow is shaped the way other writers lay files out: millisecond and nanosecond
// timestamps, an INT64 decimal, a legacy unannotated repeated field, and a column (renamed)
// that a column-mapping table knows by its physical name.
type otherWriterRow struct {
	Millis  int64   `parquet:"millis,timestamp(millisecond)"`
	Nanos   int64   `parquet:"nanos,timestamp(nanosecond)"`
	Dec     int64   `parquet:"dec,decimal(2:12)"`
	Legacy  []int32 `parquet:"legacy"`
	Physcol string  `parquet:"col-5f42"`
}

func TestReadOtherWritersLayouts(t *testing.T) {
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[otherWriterRow](&buf)
	ts := time.Date(1969, 12, 31, 23, 59, 59, 999000000, time.UTC)
	rows := []otherWriterRow{
		{Millis: ts.UnixMilli(), Nanos: ts.UnixNano() + 1500, Dec: -12345, Legacy: []int32{1, 2}, Physcol: "x"},
		{Millis: 0, Nanos: 0, Dec: 0, Legacy: nil, Physcol: "y"},
	}
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	schema := pqtest.MustSchema(t, `{"type":"struct","fields":[
		{"name":"millis","type":"timestamp","nullable":true,"metadata":{}},
		{"name":"nanos","type":"timestamp","nullable":true,"metadata":{}},
		{"name":"dec","type":"decimal(12,2)","nullable":true,"metadata":{}},
		{"name":"legacy","type":{"type":"array","elementType":"integer","containsNull":false},"nullable":true,"metadata":{}},
		{"name":"logical name","type":"string","nullable":true,"metadata":{"delta.columnMapping.id":5,"delta.columnMapping.physicalName":"col-5f42"}},
		{"name":"absent","type":"long","nullable":true,"metadata":{}}]}`)
	got, err := pq.DecodeFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()), schema)
	if err != nil {
		t.Fatal(err)
	}
	b := got[0]
	want := [][]any{
		{ts, ts.Add(1 * time.Microsecond), pq.Decimal{Unscaled: pq.DecimalFromInt64(-12345), Scale: 2}, []any{int32(1), int32(2)}, "x", nil},
		{time.Unix(0, 0).UTC(), time.Unix(0, 0).UTC(), pq.Decimal{Unscaled: pq.DecimalFromInt64(0), Scale: 2}, []any{}, "y", nil},
	}
	for i := range want {
		if g, w := pqtest.CanonRows([][]any{b.Row(i)}), pqtest.CanonRows(want[i:i+1]); !slices.Equal(g, w) {
			t.Errorf("row %d: got %v, want %v", i, g, w)
		}
	}
	// A type the file cannot hold is an error naming the column.
	bad := pqtest.MustSchema(t, `{"type":"struct","fields":[{"name":"col-5f42","type":"long","nullable":true,"metadata":{}}]}`)
	if _, err := pq.DecodeFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()), bad); err == nil || !bytes.Contains([]byte(err.Error()), []byte("col-5f42")) {
		t.Errorf("want an error naming the column, got %v", err)
	}
	if _, err := pq.DecodeFile(bytes.NewReader(buf.Bytes()[:buf.Len()/2]), int64(buf.Len()/2), schema); err == nil {
		t.Error("a truncated file must fail")
	}
}
