package bronze

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"strings"
	"testing"
)

// repeatReader yields n copies of b without holding them: a huge record that the test itself
// never buffers.
type repeatReader struct {
	b byte
	n int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n {
		p = p[:r.n]
	}
	for i := range p {
		p[i] = r.b
	}
	r.n -= int64(len(p))
	return len(p), nil
}

// TestDecodeCSVRecordLimit: a CSV record longer than MaxLineBytes is rejected like a long JSON
// line, without being held whole, and decoding goes on with the next record; a quoted field
// that is never closed rejects the rest of the object as one record that says so.
func TestDecodeCSVRecordLimit(t *testing.T) {
	const limit = 1000
	const ts = "2024-05-01T12:07:00Z"
	header := "event_id,event_type,event_time\n"
	// record builds "id,<type of n bytes>,ts\n" (n+len(id)+len(ts)+2 bytes before the newline).
	record := func(id string, content int) string {
		n := content - len(id) - len(ts) - 2
		return id + "," + strings.Repeat("t", n) + "," + ts + "\n"
	}
	huge := func(prefix string, n int64, suffix string) io.Reader {
		return io.MultiReader(strings.NewReader(prefix), &repeatReader{b: 'x', n: n}, strings.NewReader(suffix))
	}
	cases := []struct {
		name    string
		in      io.Reader
		rows    int64
		reasons map[string]int64
		rawSize int64  // of the first reject
		detail  string // in the first reject's error
	}{
		{"at the limit", strings.NewReader(header + record("e1", limit) + record("e2", 40)), 2, nil, 0, ""},
		{"at the limit, CRLF", strings.NewReader(header + strings.TrimSuffix(record("e1", limit), "\n") + "\r\n" + record("e2", 40)), 2, nil, 0, ""},
		{"one byte over", strings.NewReader(header + record("e1", limit+1) + record("e2", 40)),
			1, map[string]int64{ReasonTooLong: 1}, limit + 1, "exceeds the 1000-byte limit"},
		{"quoted field over, spanning lines", strings.NewReader(header + "e1,\"" + strings.Repeat("ab\n", limit) + "\"," + ts + "\n" + record("e2", 40)),
			1, map[string]int64{ReasonTooLong: 1}, 3*limit + 6 + int64(len(ts)), "exceeds the 1000-byte limit"},
		{"64 times the limit", huge(header+"e1,", 64*limit, ","+ts+"\n"+record("e2", 40)),
			1, map[string]int64{ReasonTooLong: 1}, 64*limit + 4 + int64(len(ts)), "exceeds"},
		{"unterminated quote", strings.NewReader(header + record("e1", 40) + "e2,\"open\n" + record("e3", 40) + record("e4", 40)),
			1, map[string]int64{ReasonUnterminatedQuote: 1}, int64(len("e2,\"open\n"+record("e3", 40)+record("e4", 40))) - 1, "3 lines and"},
		{"unterminated quote, huge rest", huge(header+record("e1", 40)+"e2,\"", 64*limit, "\n"),
			1, map[string]int64{ReasonUnterminatedQuote: 1}, 64*limit + 4, "1 line and"},
		{"unterminated header quote", strings.NewReader("event_id,\"event_type\n" + record("e1", 40)),
			0, map[string]int64{ReasonUnterminatedQuote: 1}, int64(len("event_id,\"event_type\n"+record("e1", 40))) - 1, "2 lines and"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NewDecoder(declaredEvents(), Limits{MaxLineBytes: limit})
			if err != nil {
				t.Fatal(err)
			}
			st, err := d.Decode(t.Context(), tc.in, "a.csv", FormatCSV, 1)
			if err != nil {
				t.Fatal(err)
			}
			var rejected int64
			for reason, n := range tc.reasons {
				rejected += n
				if st.ByReason[reason] != n {
					t.Errorf("%s rejects %d, want %d", reason, st.ByReason[reason], n)
				}
			}
			if st.Rows != tc.rows || st.Rejected != rejected || st.Lines != st.Rows+st.Rejected {
				t.Fatalf("stats %+v, want %d rows and %d rejects", st, tc.rows, rejected)
			}
			assertValidStrings(t, "rejects", d.Rejects)
			if rejected == 0 {
				return
			}
			r := d.Rejects
			if got := r.Columns[4].Int64[0]; got != tc.rawSize {
				t.Errorf("raw_bytes %d, want %d", got, tc.rawSize)
			}
			if raw := r.Columns[3].BytesAt(0); len(raw) > limit {
				t.Errorf("the reject keeps %d bytes of raw text, more than the %d-byte limit", len(raw), limit)
			}
			if got := r.Columns[2].StringAt(0); !strings.Contains(got, tc.detail) {
				t.Errorf("error %q does not say %q", got, tc.detail)
			}
			// What the decoder held of the record is bounded by the limit, not by the record.
			if c := cap(d.csvRec); c > 2*limit+8 {
				t.Errorf("the decoder buffered %d bytes of a record; the limit is %d", c, limit)
			}
		})
	}
}

// TestCSVRecordsSplitLikeEncodingCSV: the record splitter cuts where encoding/csv does, so
// that parsing each record alone gives what parsing the whole object gives, errors included.
func TestCSVRecordsSplitLikeEncodingCSV(t *testing.T) {
	inputs := []string{
		"a,b\nc,d\n",
		"a,b\nc,d",
		"a,\"b\nc\",d\ne,f\n",
		"a,\"b\"\"c\",d\r\ne,f\r\n",
		"\n\r\na,b\n\n\nc\n\r",
		"a,b\"c,d\ne\n",
		"a,\"b\"c,d\ne\n",
		"a,\"b\nc\"x,d\ne\n",
		"a,\"b\"\r\nc\n",
		"a,\"b\"\rx\nc\n",
		"a,\"b\"\r",
		"a,\"b\"",
		"\"\",\"\"\n,,\n",
		" \n\t\n",
		"a,\"\"\"\n\"\"\"\n",
		"x\ry\nz\r\r\n",
		"a,\"b\nc\n",
		"a,b\n\"c\"\"",
	}
	for _, in := range inputs {
		want := parseAll(csv.NewReader(strings.NewReader(in)))
		var got []string
		br := newTestBufio(in)
		var rec []byte
		for {
			var info csvRecordInfo
			var err error
			rec, info, err = readCSVRecord(br, rec[:0], 1<<20)
			if err != nil && err != io.EOF {
				t.Fatal(err)
			}
			if info.size == 0 {
				break
			}
			if !info.blank {
				got = append(got, parseAll(csv.NewReader(bytes.NewReader(rec)))...)
			}
			if err == io.EOF {
				break
			}
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%q: split %q, encoding/csv %q", in, got, want)
		}
	}
}

func newTestBufio(s string) *bufio.Reader {
	return bufio.NewReaderSize(strings.NewReader(s), 16) // the smallest: records span buffers
}

func parseAll(cr *csv.Reader) []string {
	cr.FieldsPerRecord = -1
	var out []string
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return out
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			out = append(out, "ERR "+pe.Err.Error())
			continue
		}
		out = append(out, strings.Join(rec, "\x00"))
	}
}

// FuzzCSVSplit: for any input, cutting records with readCSVRecord and parsing each alone gives
// what encoding/csv gives for the whole input.
func FuzzCSVSplit(f *testing.F) {
	for _, s := range []string{"a,b\nc", "a,\"b\nc\"\r\nd", "a\"b\n\"x\"y\n", "\r\n\r", "\"\"\"\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		want := parseAll(csv.NewReader(strings.NewReader(in)))
		var got []string
		br := newTestBufio(in)
		var rec []byte
		for {
			var info csvRecordInfo
			var err error
			rec, info, err = readCSVRecord(br, rec[:0], len(in)+2)
			if info.size > 0 && !info.blank {
				got = append(got, parseAll(csv.NewReader(bytes.NewReader(rec)))...)
			}
			if err != nil || info.size == 0 {
				break
			}
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("%q: split %q, encoding/csv %q", in, got, want)
		}
	})
}

// TestDecodeCSVRejectedHeader: when the header is rejected, the records after it cannot be
// matched to columns, but each is still accounted for as a reject, never dropped unseen.
func TestDecodeCSVRejectedHeader(t *testing.T) {
	const ts = "2024-05-01T12:07:00Z"
	rest := "e1,t," + ts + "\n\ne2,t," + ts + "\n"
	for _, tc := range []struct {
		name, header, reason string
	}{
		{"too long", "event_id," + strings.Repeat("h", 2000) + ",event_time\n", ReasonTooLong},
		{"bad quote", "event_id,\"event\"type,event_time\n", ReasonInvalidCSV},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NewDecoder(declaredEvents(), Limits{MaxLineBytes: 1000})
			if err != nil {
				t.Fatal(err)
			}
			st := decodeAll(t, d, []byte(tc.header+rest), "a.csv", FormatCSV)
			if st.Rows != 0 || st.Rejected != 3 || st.ByReason[tc.reason] < 1 || st.BlankLines != 1 {
				t.Fatalf("stats %+v: want the header and both records rejected, one blank line", st)
			}
			if got := d.Rejects.Columns[2].StringAt(2); !strings.Contains(got, "header") {
				t.Fatalf("a record after a rejected header says %q", got)
			}
		})
	}
}
