package bronze

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/medallion-lake/medallion/internal/testshared"
	"github.com/medallion-lake/medallion/txlog"
)

func declaredEvents() *txlog.StructType {
	p := func(n string) txlog.PrimitiveType { return txlog.PrimitiveType{Name: n} }
	return &txlog.StructType{Fields: []txlog.StructField{
		{Name: "event_id", Type: p(txlog.TypeString), Nullable: false},
		{Name: "event_type", Type: p(txlog.TypeString), Nullable: true},
		{Name: "amount", Type: p(txlog.TypeDouble), Nullable: true},
		{Name: "event_time", Type: p(txlog.TypeTimestamp), Nullable: false},
	}}
}

// nonBlankLines is the test's own count of input lines (the oracle for accounting).
func nonBlankLines(data []byte) int64 {
	var n int64
	for _, l := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			n++
		}
	}
	return n
}

func gz(t *testing.T, data []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func decodeAll(t *testing.T, d *Decoder, data []byte, key, format string) ObjectStats {
	t.Helper()
	st, err := d.Decode(context.Background(), bytes.NewReader(data), key, format, 1_714_565_000_000_000)
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	if st.Lines != st.Rows+st.Rejected {
		t.Fatalf("%s: lines %d != rows %d + rejected %d", key, st.Lines, st.Rows, st.Rejected)
	}
	if int64(d.Bronze.Len()) < st.Rows || int64(d.Rejects.Len()) < st.Rejected {
		t.Fatalf("%s: batches hold fewer rows than counted", key)
	}
	if err := d.Bronze.Validate(); err != nil {
		t.Fatalf("bronze batch: %v", err)
	}
	if err := d.Rejects.Validate(); err != nil {
		t.Fatalf("rejects batch: %v", err)
	}
	return st
}

func TestDecodeBadInputCorpus(t *testing.T) {
	good := `{"event_id":"e1","event_type":"click","amount":1.5,"event_time":"2024-05-01T12:07:00Z"}`
	huge := `{"event_id":"big","event_type":"` + strings.Repeat("x", 10<<20) + `","event_time":"2024-05-01 12:07:00"}`
	cases := []struct {
		name       string
		data       []byte
		rows, rejs int64
		reasons    []string
	}{
		{"clean", []byte(good + "\n" + good + "\n"), 2, 0, nil},
		{"no final newline", []byte(good + "\n" + good), 2, 0, nil},
		{"crlf and blank lines", []byte(good + "\r\n\r\n   \n" + good + "\r\n"), 2, 0, nil},
		{"invalid utf8", []byte(good + "\n{\"event_id\":\"\xff\xfe\"}\n"), 1, 1, []string{ReasonInvalidUTF8}},
		{"nul bytes", []byte("\x00\x00\x00\n" + good), 1, 1, []string{ReasonInvalidJSON}},
		{"binary garbage (a PNG header: three lines)", []byte{0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, '\n'}, 0, 3, []string{ReasonInvalidUTF8, ReasonInvalidJSON}},
		{"10 MB line", []byte(good + "\n" + huge + "\n" + good + "\n"), 2, 1, []string{ReasonTooLong}},
		{"not objects", []byte("[1,2]\n42\n\"s\"\nnull\n"), 0, 4, []string{ReasonNotObject}},
		{"truncated json", []byte(`{"event_id":"e1","amount":` + "\n"), 0, 1, []string{ReasonInvalidJSON}},
		{"numbers as strings and nested", []byte(`{"event_id":7,"event_type":{"a":1},"amount":"12.5","event_time":"2024-05-01 12:07:00.123456"}` + "\n"), 1, 0, nil},
		{"timestamp forms", []byte(`{"event_id":"a","event_time":"2024-05-01T12:07:00+02:00"}` + "\n" + `{"event_id":"b","event_time":"2024-05-01 12:07"}` + "\n" + `{"event_id":"c","event_time":1714565220}` + "\n"), 3, 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NewDecoder(declaredEvents(), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			st := decodeAll(t, d, tc.data, "landing/"+tc.name+".json", FormatJSON)
			if st.Rows != tc.rows || st.Rejected != tc.rejs {
				t.Fatalf("rows=%d rejected=%d, want %d and %d (%v)", st.Rows, st.Rejected, tc.rows, tc.rejs, st.ByReason)
			}
			if st.Lines != nonBlankLines(tc.data) {
				t.Fatalf("lines %d, the input has %d non-blank lines", st.Lines, nonBlankLines(tc.data))
			}
			for _, r := range tc.reasons {
				if st.ByReason[r] == 0 {
					t.Fatalf("no reject with reason %s: %v", r, st.ByReason)
				}
			}
			// Every reject names a reason, an error text, the source and an offset inside it.
			for i := 0; i < d.Rejects.Len(); i++ {
				if d.Rejects.Columns[1].StringAt(i) == "" || d.Rejects.Columns[2].StringAt(i) == "" {
					t.Fatalf("reject %d lacks a reason or error", i)
				}
				if off := d.Rejects.Columns[6].Int64[i]; off < 0 || off >= int64(len(tc.data)) {
					t.Fatalf("reject %d offset %d outside the object", i, off)
				}
				if raw := d.Rejects.Columns[3]; !raw.IsNull(i) && len(raw.BytesAt(i)) > 64<<10 {
					t.Fatalf("raw text kept %d bytes, over the limit", len(raw.BytesAt(i)))
				}
			}
		})
	}
}

func TestDecodeRescuesWrongTypes(t *testing.T) {
	d, _ := NewDecoder(declaredEvents(), Limits{})
	decodeAll(t, d, []byte(`{"event_id":7,"amount":"12.5","device":"d1","event_time":"2024-05-01T00:00:00Z"}`+"\n"), "k.json", FormatJSON)
	b := d.Bronze
	if !b.Columns[0].IsNull(0) || !b.Columns[2].IsNull(0) {
		t.Fatal("wrong-typed values must not be coerced")
	}
	got := b.Column(ColRescued).StringAt(0)
	if want := `{"event_id":7,"amount":"12.5","device":"d1"}`; got != want {
		t.Fatalf("rescued %s, want %s", got, want)
	}
	if b.Column(ColSourceFile).StringAt(0) != "k.json" || b.Column(ColSourceOffset).Int64[0] != 0 {
		t.Fatal("source columns wrong")
	}
}

func TestDecodeGzip(t *testing.T) {
	var data []byte
	for i := 0; i < 1000; i++ {
		data = append(data, `{"event_id":"e","event_time":"2024-05-01T12:07:00Z"}`+"\n"...)
	}
	compressed := gz(t, data)

	d, _ := NewDecoder(declaredEvents(), Limits{})
	st := decodeAll(t, d, compressed, "a.json.gz", FormatJSON)
	if st.Rows != 1000 || st.Rejected != 0 {
		t.Fatalf("gzip: %+v", st)
	}

	// Truncated: the lines before the cut are kept, the cut is one reject saying where.
	d, _ = NewDecoder(declaredEvents(), Limits{})
	st = decodeAll(t, d, compressed[:len(compressed)/2], "b.json.gz", FormatJSON)
	if st.ByReason[ReasonCorruptGzip] != 1 || st.Rows == 0 {
		t.Fatalf("truncated gzip: %+v", st)
	}

	// A gzip bomb stops at the decompression limit with a reject, not out of memory.
	bomb := gz(t, bytes.Repeat([]byte("\n"), 8<<20))
	d, _ = NewDecoder(declaredEvents(), Limits{MaxDecompressedBytes: 1 << 20})
	st = decodeAll(t, d, bomb, "bomb.gz", FormatJSON)
	if st.ByReason[ReasonDecompressedSize] != 1 {
		t.Fatalf("bomb: %+v", st)
	}
	if detail := string(d.Rejects.Columns[2].Data); !strings.Contains(detail, "landing.max_decompressed_bytes") || !strings.Contains(detail, "1048576") {
		t.Fatalf("bomb: the reject should name the limit and its setting: %q", detail)
	}
	if got := (Limits{}).withDefaults().MaxDecompressedBytes; got != 1<<30 {
		t.Fatalf("default decompressed cap %d, want 1 GiB", got)
	}

	// Not gzip at all, though named .gz.
	d, _ = NewDecoder(declaredEvents(), Limits{})
	st = decodeAll(t, d, []byte("plain text\n"), "c.gz", FormatJSON)
	if st.ByReason[ReasonCorruptGzip] != 1 {
		t.Fatalf("fake gzip: %+v", st)
	}
}

func TestDecodeReadFailureIsAnErrorNotARejects(t *testing.T) {
	d, _ := NewDecoder(declaredEvents(), Limits{})
	boom := errors.New("connection reset")
	_, err := d.Decode(context.Background(), &failingReader{data: []byte(`{"event_id":"e"}` + "\n"), err: boom}, "k.json", FormatJSON, 0)
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want the read error", err)
	}
	if d.Rejects.Len() != 0 {
		t.Fatal("a failed read must not produce rejects")
	}
}

type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func TestDecodeCSV(t *testing.T) {
	csvData := "event_id,event_type,amount,event_time,extra\n" +
		"e1,click,1.5,2024-05-01 12:07:00,x\n" +
		"e2,,not-a-number,2024-05-01T12:07:00Z,y\n" +
		"e3,view\n" +
		"e4,view,2,2024-05-01T12:07:00Z,z,ragged\n" +
		"e5,\"bad\"quote,1,2024-05-01T12:07:00Z,w\n"
	d, _ := NewDecoder(declaredEvents(), Limits{})
	st := decodeAll(t, d, []byte(csvData), "a.csv", FormatCSV)
	if st.Rows != 4 || st.Rejected != 1 || st.ByReason[ReasonInvalidCSV] != 1 {
		t.Fatalf("csv: %+v", st)
	}
	b := d.Bronze
	resc := b.Column(ColRescued)
	if got := resc.StringAt(1); got != `{"amount":"not-a-number","extra":"y"}` {
		t.Fatalf("row 2 rescued %s", got)
	}
	if !b.Columns[1].IsNull(1) || !b.Columns[3].IsNull(2) {
		t.Fatal("empty and missing CSV fields must be null")
	}
	if got := resc.StringAt(3); got != `{"extra":"z","_c5":"ragged"}` {
		t.Fatalf("ragged row rescued %s", got)
	}
}

// TestDecodeAccountingRandom: random mixes of good, bad and blank lines, plain and gzipped; lines
// in = rows + rejects, exactly, with the test's own line count as the oracle.
func TestDecodeAccountingRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	pieces := []string{
		`{"event_id":"a","event_time":"2024-05-01T12:07:00Z","amount":3}`,
		`{"event_id":"b","bogus":[1,{"x":null}]}`,
		`{"event_id":`, "\xff\xfe\xfd", "", "   ", `[]`, `{"a":"\u12"}`,
		`{"event_id":"c","event_time":"2024-05-01 25:00:00"}`,
	}
	for round := 0; round < 50; round++ {
		var buf bytes.Buffer
		for i := rng.IntN(200); i > 0; i-- {
			buf.WriteString(pieces[rng.IntN(len(pieces))])
			if rng.IntN(10) == 0 {
				buf.WriteString("\r")
			}
			buf.WriteString("\n")
		}
		data := buf.Bytes()
		key := "r.json"
		payload := data
		if round%2 == 1 {
			key, payload = "r.json.gz", gz(t, data)
		}
		d, _ := NewDecoder(declaredEvents(), Limits{})
		st := decodeAll(t, d, payload, key, FormatJSON)
		if st.Lines != nonBlankLines(data) {
			t.Fatalf("round %d: %d lines accounted, input has %d", round, st.Lines, nonBlankLines(data))
		}
	}
}

func BenchmarkDecodeNDJSON(b *testing.B) {
	var buf bytes.Buffer
	for i := 0; i < 10000; i++ {
		buf.WriteString(`{"event_id":"3f2a9c1e-77aa-4c1b-9d0e-8a1b2c3d4e5f","event_type":"purchase","amount":1234.56,"event_time":"2024-05-01T12:07:00.123456Z"}` + "\n")
	}
	data := buf.Bytes()
	d, _ := NewDecoder(declaredEvents(), Limits{})
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		d.Bronze.Reset()
		d.Rejects.Reset()
		if _, err := d.Decode(context.Background(), bytes.NewReader(data), "k", FormatJSON, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*10000)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkDecodeBlankLines: a gzip object of blank lines inflates a thousandfold; each blank
// line must cost about what scanning its bytes costs, not a line's worth of work.
func BenchmarkDecodeBlankLines(b *testing.B) {
	for _, tc := range []struct{ name, line string }{
		{"lf", "\n"},
		{"crlf", "\r\n"},
		{"spaces", "  \t \r\n"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			data := bytes.Repeat([]byte(tc.line), (16<<20)/len(tc.line))
			var buf bytes.Buffer
			w := gzip.NewWriter(&buf)
			w.Write(data)
			w.Close()
			d, _ := NewDecoder(declaredEvents(), Limits{})
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				st, err := d.Decode(context.Background(), bytes.NewReader(buf.Bytes()), "k.json.gz", FormatJSON, 0)
				if err != nil || st.BlankLines != int64(len(data)/len(tc.line)) {
					b.Fatalf("%+v %v", st, err)
				}
			}
		})
	}
}

// TestDecodeBlankLinesExact: blank lines are skipped in runs, across buffer boundaries and in
// small reads, and still counted exactly; every record and reject keeps its byte offset. Each
// round is about 7 MB decoded twice (25 CPU s for 40 rounds under -race), and every round already
// has lines longer than the 256 KiB buffer, runs of every blank kind and both readers: 10 rounds
// by default (5 under -race: one goroutine, nothing for the detector to watch), 40 with
// MEDALLION_LONG=1.
func TestDecodeBlankLinesExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 1))
	blanks := []string{"", " ", "\r", "\t \r", "\v\f", "\u00a0", " \u00a0 \r"}
	record := `{"event_id":"a","event_time":"2024-05-01T12:07:00Z"}`
	rounds := testshared.Sized(10, 5)
	if os.Getenv("MEDALLION_LONG") == "1" {
		rounds = 40
	}
	for round := 0; round < rounds; round++ {
		var buf bytes.Buffer
		var wantBlank int64
		var wantOffsets []int64 // of the records, in order
		for i := rng.IntN(3000); i > 0; i-- {
			if rng.IntN(8) == 0 {
				wantOffsets = append(wantOffsets, int64(buf.Len()))
				buf.WriteString(record)
				if rng.IntN(4) == 0 {
					buf.WriteString(strings.Repeat(" ", rng.IntN(300<<10))) // spans a buffer
				}
			} else {
				buf.WriteString(strings.Repeat(blanks[rng.IntN(len(blanks))], 1+rng.IntN(3)))
				wantBlank++
			}
			buf.WriteString("\n")
		}
		if rng.IntN(2) == 0 { // a last line without its newline
			buf.WriteString("  ")
			wantBlank++
		}
		data := buf.Bytes()
		for _, small := range []bool{false, true} {
			d, _ := NewDecoder(declaredEvents(), Limits{})
			var r io.Reader = bytes.NewReader(data)
			if small {
				r = iotest.HalfReader(r)
			}
			st, err := d.Decode(context.Background(), r, "b.json", FormatJSON, 0)
			if err != nil {
				t.Fatal(err)
			}
			if st.BlankLines != wantBlank || st.Rows != int64(len(wantOffsets)) || st.Rejected != 0 || st.Bytes != int64(len(data)) {
				t.Fatalf("round %d: %+v, want %d blank lines, %d rows, %d bytes", round, st, wantBlank, len(wantOffsets), len(data))
			}
			offsets := d.Bronze.Columns[len(d.Bronze.Columns)-1].Int64
			if !slices.Equal(offsets, wantOffsets) {
				t.Fatalf("round %d: record offsets %v, want %v", round, offsets, wantOffsets)
			}
		}
	}
}

// TestDecodeSkipsByteOrderMark: a UTF-8 byte-order mark at the start of an object is not
// content. It used to make the first JSON line invalid_json and the first CSV header name
// "\ufeffevent_id", which rescued that column in every row. Offsets still count it.
func TestDecodeSkipsByteOrderMark(t *testing.T) {
	const bom = "\xEF\xBB\xBF"
	jsonLine := `{"event_id":"e1","event_time":"2024-05-01T12:07:00Z"}` + "\n"
	jsonBody := jsonLine + `{"event_id":"e2"}` + "\n"
	csvHeader, csvLine := "event_id,event_time\n", "e1,2024-05-01T12:07:00Z\n"
	csvBody := csvHeader + csvLine + "e2,\n"
	j2, c1 := int64(3+len(jsonLine)), int64(3+len(csvHeader))
	for _, tc := range []struct {
		name, key, format, body string
		gzipped                 bool
		wantOffsets             []int64
	}{
		{"json", "a.json", FormatJSON, bom + jsonBody, false, []int64{3, j2}},
		{"json gzip", "a.json.gz", FormatJSON, bom + jsonBody, true, []int64{3, j2}},
		{"csv", "a.csv", FormatCSV, bom + csvBody, false, []int64{c1, c1 + int64(len(csvLine))}},
		{"csv gzip", "a.csv.gz", FormatCSV, bom + csvBody, true, []int64{c1, c1 + int64(len(csvLine))}},
		{"bom only", "b.json", FormatJSON, bom, false, nil},
		{"bom, blank line", "c.json", FormatJSON, bom + "\n", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload := []byte(tc.body)
			if tc.gzipped {
				payload = gz(t, payload)
			}
			d, _ := NewDecoder(declaredEvents(), Limits{})
			st := decodeAll(t, d, payload, tc.key, tc.format)
			if st.Rejected != 0 || st.Rows != int64(len(tc.wantOffsets)) || st.Bytes != int64(len(tc.body)) {
				t.Fatalf("%+v, want %d rows, no rejects, %d bytes", st, len(tc.wantOffsets), len(tc.body))
			}
			cols := d.Bronze.Columns
			if len(tc.wantOffsets) == 0 {
				return
			}
			if got := string(cols[0].Data[cols[0].Offsets[0]:cols[0].Offsets[1]]); got != "e1" {
				t.Fatalf("event_id %q, want e1", got)
			}
			if rescued := cols[len(declaredEvents().Fields)]; rescued.Len != 0 && !rescued.IsNull(0) {
				t.Fatalf("rescued data %q: the first column was not recognised", rescued.Data)
			}
			if got := cols[len(cols)-1].Int64; !slices.Equal(got, tc.wantOffsets) {
				t.Fatalf("offsets %v, want %v", got, tc.wantOffsets)
			}
		})
	}
}

// onceFailingReader returns data, then err once, then EOF: a reader whose error is not sticky.
type onceFailingReader struct {
	data   []byte
	err    error
	failed bool
}

func (r *onceFailingReader) Read(p []byte) (int, error) {
	if len(r.data) > 0 {
		n := copy(p, r.data)
		r.data = r.data[n:]
		return n, nil
	}
	if !r.failed {
		r.failed = true
		return 0, r.err
	}
	return 0, io.EOF
}

// TestDecodeReadErrorDuringPeek: looking for a byte-order mark peeks at the first bytes, and a
// peek hands a read error over only once; the read must still fail, not end as a short object.
func TestDecodeReadErrorDuringPeek(t *testing.T) {
	boom := errors.New("connection reset")
	d, _ := NewDecoder(declaredEvents(), Limits{})
	_, err := d.Decode(context.Background(), &onceFailingReader{data: []byte(`{"`), err: boom}, "k.json", FormatJSON, 0)
	if !errors.Is(err, boom) { // the batch is retried whole; what was decoded is dropped
		t.Fatalf("got %v, want the read error", err)
	}
}

// TestDecodeHugeDecimalIsRescued: a decimal(38,2) value of a million digits (which cost about
// 70 s of CPU through big.Rat) does not fit its column: the row is kept, the column is null
// and the value is in _rescued_data under the column's name, as for any value that does not fit.
func TestDecodeHugeDecimalIsRescued(t *testing.T) {
	declared := &txlog.StructType{Fields: []txlog.StructField{
		{Name: "id", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true},
		{Name: "price", Type: txlog.DecimalType{Precision: 38, Scale: 2}, Nullable: true},
	}}
	huge := strings.Repeat("9", 1_000_000)
	for _, tc := range []struct{ name, key, format, body string }{
		{"json number", "a.json", FormatJSON, `{"id":"a","price":` + huge + "}\n"},
		{"json string", "b.json", FormatJSON, `{"id":"b","price":"` + huge + `.5"}` + "\n"},
		{"csv", "c.csv", FormatCSV, "id,price\nc," + huge + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NewDecoder(declared, Limits{MaxLineBytes: 2 << 20})
			if err != nil {
				t.Fatal(err)
			}
			st := decodeAll(t, d, []byte(tc.body), tc.key, tc.format)
			if st.Rows != 1 || st.Rejected != 0 {
				t.Fatalf("%+v, want the row kept", st)
			}
			price, rescued := d.Bronze.Columns[1], d.Bronze.Columns[2]
			if !price.IsNull(0) || rescued.IsNull(0) || !bytes.Contains(rescued.Data, []byte(`"price":`)) {
				t.Fatalf("price null %v, rescued %.40q: want the value rescued under its column", price.IsNull(0), rescued.Data)
			}
		})
	}
}

// TestDecodeFlushesByBytes: lines near the line limit (here decimals of a million digits, which
// go whole into _rescued_data) are flushed by the input they hold, not only every FlushRows
// rows. Before, 200 such lines (200 MB) peaked at 846 MB of RSS in ingest, and FlushRows (65,536)
// of them would have been 64 GB.
func TestDecodeFlushesByBytes(t *testing.T) {
	d, err := NewDecoder(declaredEvents(), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	line := `{"event_id":"d","amount":` + strings.Repeat("7", 1_000_000) + `,"event_time":"2024-05-01T12:00:00Z"}` + "\n"
	const n, limit = 20, 4 << 20
	maxHeld, flushes := 0, 0
	d.FlushRows, d.FlushBytes = 1<<16, limit
	d.Flush = func(context.Context) error {
		maxHeld = max(maxHeld, d.Bronze.Len()+d.Rejects.Len())
		flushes++
		d.Bronze.Reset()
		d.Rejects.Reset()
		return nil
	}
	st, err := d.Decode(context.Background(), strings.NewReader(strings.Repeat(line, n)), "big.json", FormatJSON, 0)
	if err != nil || st.Lines != n {
		t.Fatalf("%+v %v", st, err)
	}
	if perFlush := limit/len(line) + 1; flushes < n/perFlush || maxHeld > perFlush {
		t.Fatalf("%d flushes holding up to %d rows of %d bytes; want a flush every %d rows (%d bytes)", flushes, maxHeld, len(line), perFlush, limit)
	}
}
