package bronze

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// assertValidStrings fails when any string cell of the batch is not valid UTF-8: Polars and
// pyarrow refuse a whole table for one such cell.
func assertValidStrings(t *testing.T, name string, b *pq.Batch) {
	t.Helper()
	for ci, c := range b.Columns {
		if p, ok := c.Type.(txlog.PrimitiveType); !ok || p.Name != txlog.TypeString {
			continue
		}
		for r := 0; r < b.Len(); r++ {
			if !c.IsNull(r) && !utf8.Valid(c.BytesAt(r)) {
				t.Errorf("%s: column %d row %d is not valid UTF-8: %q", name, ci, r, c.BytesAt(r))
			}
		}
	}
}

// TestDecodeValidUTF8Everywhere: hostile bytes in CSV fields, CSV header names (rescued), JSON
// lines, rescued JSON and object keys never reach a string column as invalid UTF-8, and
// nothing is lost: every line is a row or a reject.
func TestDecodeValidUTF8Everywhere(t *testing.T) {
	const ts = "2024-05-01T12:07:00Z"
	cases := []struct {
		name, key, format, data string
		rows, rejects           int64
		utf8Rejects             int64
	}{
		{"csv field", "a.csv", FormatCSV,
			"event_id,event_type,event_time\ne1,cl\xffick," + ts + "\ne2,view," + ts + "\n", 1, 1, 1},
		{"csv rescued field", "a.csv", FormatCSV,
			"event_id,extra,event_time\ne1,x\xfe," + ts + "\ne2,ok," + ts + "\n", 1, 1, 1},
		{"csv ragged field", "a.csv", FormatCSV,
			"event_id,event_time\ne1," + ts + ",\xc3\n", 0, 1, 1},
		{"csv header name", "a.csv", FormatCSV,
			"event_id,ex\xfftra,event_time\ne1,x," + ts + "\n", 1, 0, 0},
		{"json line", "a.json", FormatJSON,
			"{\"event_id\":\"e\xff1\",\"event_time\":\"" + ts + "\"}\n" + "{\"event_id\":\"e2\",\"x\xfe\":1,\"event_time\":\"" + ts + "\"}\n", 0, 2, 2},
		{"json key", "landing/bad\xffkey.json", FormatJSON,
			`{"event_id":"e1","event_time":"` + ts + `"}` + "\n" + `{"event_id":` + "\n", 1, 1, 0},
		{"csv key", "landing/bad\xc0key.csv", FormatCSV,
			"event_id,event_time\ne1," + ts + "\n\"e2\"x\n", 1, 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NewDecoder(declaredEvents(), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			st := decodeAll(t, d, []byte(tc.data), tc.key, tc.format)
			if st.Rows != tc.rows || st.Rejected != tc.rejects || st.ByReason[ReasonInvalidUTF8] != tc.utf8Rejects {
				t.Fatalf("stats %+v, want rows %d rejects %d (invalid_utf8 %d)", st, tc.rows, tc.rejects, tc.utf8Rejects)
			}
			assertValidStrings(t, "bronze", d.Bronze)
			assertValidStrings(t, "rejects", d.Rejects)
			if !utf8.ValidString(tc.key) && st.Rows > 0 {
				// An invalid key is stored Go-quoted, so it names the object unambiguously.
				if got, want := d.Bronze.Column(ColSourceFile).StringAt(0), EscapeKey(tc.key); got != want || !strings.HasPrefix(got, `"`) {
					t.Fatalf("_source_file %q, want %q", got, want)
				}
			}
		})
	}
}

// TestIngestHostileUTF8 ingests a hostile landing set (bytes that are not UTF-8 in CSV fields,
// CSV header names, JSON lines, rescued fields and object keys) end to end: every string column
// of bronze and rejects, as written to Parquet and read back, is valid UTF-8, and every landing
// line is a bronze row or a reject, exactly once.
func TestIngestHostileUTF8(t *testing.T) {
	const ts = "2024-05-01T12:07:00Z"
	for _, tc := range []struct {
		format  string
		objects map[string]string
	}{
		{FormatJSON, map[string]string{
			"landing/events/a.json": "{\"event_id\":\"e\xff1\",\"event_time\":\"" + ts + "\"}\n" +
				"{\"event_id\":\"e2\",\"extra\":\"r\xfe\",\"event_time\":\"" + ts + "\"}\n" +
				"{\"event_id\":\"e3\",\"extra\":\"ok\",\"event_time\":\"" + ts + "\"}\n\xc3\xc3\n",
			"landing/events/b\xffkey.json": "{\"event_id\":\"e4\",\"event_time\":\"" + ts + "\"}\n{\"event_id\":\n",
		}},
		{FormatCSV, map[string]string{
			"landing/events/a.csv": "event_id,ex\xfftra,event_time,amount\n" +
				"e1,x," + ts + ",1\n" + "e2,y\xfe," + ts + ",2\n" + "e3,z," + ts + ",not\xc0number\n" +
				"e4,w," + ts + ",3,\xe2\x82\n" + "e\xff5,v," + ts + ",4\n",
			"landing/events/b\xc0key.csv": "event_id,event_time\ne6," + ts + "\n\"e7\"x\n",
		}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			ctx := context.Background()
			lake := mem.New()
			want := map[string]bool{}
			for key, data := range tc.objects {
				if err := objstore.PutBytes(ctx, lake, key, []byte(data)); err != nil {
					t.Fatal(err)
				}
				var off int
				for i, l := range strings.SplitAfter(data, "\n") {
					if strings.TrimSpace(l) != "" && (tc.format == FormatJSON || i > 0) {
						want[fmt.Sprintf("%s@%d", EscapeKey(key), off)] = true
					}
					off += len(l)
				}
			}
			opts := ingestOptions()
			opts.Format = tc.format
			x, err := NewIngester(lake, opts)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := x.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Lines != int64(len(want)) || rep.Rows+rep.Rejected != rep.Lines || rep.RejectsBy[ReasonInvalidUTF8] == 0 {
				t.Fatalf("report %+v, want %d lines, some invalid_utf8", rep, len(want))
			}
			sameSet(t, tableLines(t, lake), want)
			for _, path := range []string{"bronze/events", "bronze/rejects"} {
				tbl := table.Open(objstore.WithPrefix(lake, path), table.Options{})
				for b, err := range tbl.Scan(ctx, table.ScanOptions{}) {
					if err != nil {
						t.Fatalf("scan %s: %v", path, err)
					}
					assertValidStrings(t, path, b)
				}
			}
		})
	}
}
