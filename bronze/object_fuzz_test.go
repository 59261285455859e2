package bronze

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// FuzzDecodeObject feeds arbitrary landing objects (NDJSON or CSV, plain or gzip) to the
// decoder with small limits: it must never fail on content (only a failing reader is an
// error), and every line must be accounted for, as a bronze row or a reject with a reason.
func FuzzDecodeObject(f *testing.F) {
	seeds := []string{
		`{"event_id":"a","event_type":"x","amount":1.5,"event_time":"2024-05-01T00:00:00Z"}` + "\n",
		`{"event_id":"a","event_time":"2024-05-01 00:00:00.123456"}` + "\r\n" + `{"event_id":"b"` + "\n\n" + "not json\n",
		"{\"event_id\":\"\xff\xfe\",\"event_time\":\"2024-05-01T00:00:00+02:00\"}\n",
		`{"event_id":"a","event_time":"2024-05-01T00:00:00Z","extra":{"nested":[1,2,{"x":null}]}}`,
		"event_id,event_type,amount,event_time\na,x,1,2024-05-01T00:00:00Z\nb,\"unterminated,2,3\n",
		"event_id,event_time\n\"a\"\"b\",2024-05-01T00:00:00Z\nonly-one-field\n,,,,,,\n",
		strings.Repeat("x", 600) + "\n" + `{"event_id":"after","event_time":"2024-05-01T00:00:00Z"}` + "\n",
		"\x1f\x8b\x08\x00garbage",
		"",
	}
	for _, s := range seeds {
		f.Add([]byte(s), false, false)
		f.Add([]byte(s), true, false)
		f.Add([]byte(s), false, true)
	}
	f.Add(bytes.Repeat([]byte{0}, 1<<17), false, true) // inflates past the decompression limit
	f.Fuzz(func(t *testing.T, data []byte, csv, compress bool) {
		d, err := NewDecoder(declaredEvents(), Limits{MaxLineBytes: 512, MaxRawBytes: 64, MaxDecompressedBytes: 1 << 16})
		if err != nil {
			t.Fatal(err)
		}
		key, format := "landing/k.json", FormatJSON
		if csv {
			key, format = "landing/k.csv", FormatCSV
		}
		if compress {
			data = gz(t, data)
			key += ".gz"
		}
		st, err := d.Decode(context.Background(), bytes.NewReader(data), key, format, 1_714_565_000_000_000)
		if err != nil {
			t.Fatalf("content must never be an error, got %v", err)
		}
		if st.Lines != st.Rows+st.Rejected {
			t.Fatalf("lines %d != rows %d + rejected %d", st.Lines, st.Rows, st.Rejected)
		}
		if int64(d.Bronze.Len()) != st.Rows || int64(d.Rejects.Len()) != st.Rejected {
			t.Fatalf("batches hold %d rows and %d rejects, stats count %d and %d", d.Bronze.Len(), d.Rejects.Len(), st.Rows, st.Rejected)
		}
		var byReason int64
		for reason, n := range st.ByReason {
			if reason == "" {
				t.Fatal("a reject without a reason")
			}
			byReason += n
		}
		if byReason != st.Rejected {
			t.Fatalf("rejects by reason sum to %d, rejected %d", byReason, st.Rejected)
		}
		if st.Bytes > 1<<16 {
			t.Fatalf("read %d decompressed bytes past the %d limit", st.Bytes, 1<<16)
		}
		if err := d.Bronze.Validate(); err != nil {
			t.Fatal(err)
		}
		if err := d.Rejects.Validate(); err != nil {
			t.Fatal(err)
		}
	})
}
