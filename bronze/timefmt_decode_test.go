package bronze

import (
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/bronze/timefmt"
	"github.com/medallion-lake/medallion/txlog"
)

// TestDecodeTimeFormats: a column's unit or format reaches the NDJSON and CSV decoders (Kafka
// records go through the same decoder): epoch numbers as JSON numbers and as strings, a
// pattern, and values that do not parse kept in _rescued_data with the column null.
func TestDecodeTimeFormats(t *testing.T) {
	ms, err := timefmt.New("", timefmt.UnitMillis)
	if err != nil {
		t.Fatal(err)
	}
	pat, err := timefmt.New("dd/MM/yyyy HH:mm", "")
	if err != nil {
		t.Fatal(err)
	}
	ts := txlog.PrimitiveType{Name: txlog.TypeTimestamp}
	declared := &txlog.StructType{Fields: []txlog.StructField{
		{Name: "id", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true},
		{Name: "event_time", Type: ts, Nullable: true},
		{Name: "seen_at", Type: ts, Nullable: true},
	}}
	limits := Limits{Times: map[string]*timefmt.Parser{"event_time": ms, "seen_at": pat}}
	at := time.Date(2024, 5, 1, 12, 7, 0, 0, time.UTC).UnixMicro()
	type want struct {
		ev, seen int64 // -1: null
		rescued  string
	}
	for _, c := range []struct {
		format, data string
		want         []want
	}{
		{FormatJSON, strings.Join([]string{
			`{"id":"a","event_time":1714565220000,"seen_at":"01/05/2024 12:07"}`,
			`{"id":"b","event_time":"-1","seen_at":"1/05/2024 12:07"}`,
			`{"id":"c","event_time":1714565220000.5,"seen_at":null}`,
			`{"id":"d","event_time":"2024-05-01T12:07:00Z","seen_at":7}`,
		}, "\n") + "\n", []want{
			{at, at, ""},
			{-1000, -1, `{"seen_at":"1/05/2024 12:07"}`},
			{-1, -1, `{"event_time":1714565220000.5}`},
			{-1, -1, `{"event_time":"2024-05-01T12:07:00Z","seen_at":7}`},
		}},
		{FormatCSV, "id,event_time,seen_at\na, 1714565220000 ,01/05/2024 12:07\nb,x,01-05-2024 12:07\n", []want{
			{at, at, ""},
			{-1, -1, `{"event_time":"x","seen_at":"01-05-2024 12:07"}`},
		}},
	} {
		d, err := NewDecoder(declared, limits)
		if err != nil {
			t.Fatal(err)
		}
		decodeAll(t, d, []byte(c.data), "k", c.format)
		b := d.Bronze
		if b.Len() != len(c.want) {
			t.Fatalf("%s: %d rows, want %d", c.format, b.Len(), len(c.want))
		}
		for i, w := range c.want {
			for k, v := range []int64{w.ev, w.seen} {
				col := b.Columns[1+k]
				if (v == -1) != col.IsNull(i) || v != -1 && col.Int64[i] != v {
					t.Errorf("%s row %d column %d: null %v value %d, want %d", c.format, i, 1+k, col.IsNull(i), col.Int64[i], v)
				}
			}
			resc := b.Column(ColRescued)
			if got := ""; !resc.IsNull(i) && resc.StringAt(i) != w.rescued || resc.IsNull(i) && w.rescued != got {
				t.Errorf("%s row %d: rescued %q, want %q", c.format, i, resc.StringAt(i), w.rescued)
			}
		}
	}
	if _, err := NewDecoder(declared, Limits{Times: map[string]*timefmt.Parser{"id": ms}}); err == nil {
		t.Error("a unit on a string column was accepted")
	}
}
