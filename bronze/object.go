package bronze

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/medallion-lake/medallion/bronze/timefmt"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// Bronze metadata columns, after the declared ones.
const (
	ColRescued      = "_rescued_data"
	ColIngestTime   = "_ingest_time"
	ColSourceFile   = "_source_file"
	ColSourceOffset = "_source_offset"
)

// Formats of landing objects.
const (
	FormatJSON = "json" // NDJSON, one object a line; ".gz" objects are gunzipped
	FormatCSV  = "csv"  // CSV with a header row; ".gz" objects are gunzipped
)

// Reasons that only whole objects or CSV records can have.
const (
	ReasonInvalidCSV       = "invalid_csv"
	ReasonCorruptGzip      = "corrupt_gzip"
	ReasonDecompressedSize = "decompressed_too_large"
	ReasonObjectMissing    = "object_missing"
	ReasonInvalidKey       = "invalid_key"
	// The object held fewer bytes than listed when it was read: it changed under the read.
	ReasonObjectChanged = "object_changed"
	// A CSV quoted field that is never closed: the rest of the object is that one record.
	ReasonUnterminatedQuote = "unterminated_quote"
)

// Limits bound what one line or object may cost. The zero value means the defaults.
type Limits struct {
	// MaxLineBytes: a longer line is rejected (reason line_too_long). Default 1 MiB.
	MaxLineBytes int
	// MaxRawBytes: how much of a rejected line's text the rejects table keeps. Default 64 KiB.
	MaxRawBytes int
	// MaxDecompressedBytes bounds a gzip object's inflated size (gzip bombs). Default 1 GiB:
	// landing objects are batches of events, and a larger inflated object is far more likely
	// a bomb, whose every GiB costs CPU; a site with larger objects raises
	// landing.max_decompressed_bytes.
	MaxDecompressedBytes int64
	// Times says how each timestamp column's values are read (config format/unit), by column
	// name; a column not in it takes the default forms of ParseTimestampMicros. It travels
	// with the limits because every decoder (files, Kafka, backfill) is built from them.
	Times map[string]*timefmt.Parser
}

func (l Limits) withDefaults() Limits {
	if l.MaxLineBytes <= 0 {
		l.MaxLineBytes = 1 << 20
	}
	if l.MaxRawBytes <= 0 {
		l.MaxRawBytes = 64 << 10
	}
	if l.MaxDecompressedBytes <= 0 {
		l.MaxDecompressedBytes = 1 << 30
	}
	return l
}

// RejectsSchema is the schema of the rejects table: one row per input that is not a record (ingest)
// or not a valid event (silver validation), with what a person needs to find and fix it.
func RejectsSchema() *txlog.StructType {
	str := func(name string, nullable bool) txlog.StructField {
		return txlog.StructField{Name: name, Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: nullable}
	}
	long := func(name string) txlog.StructField {
		return txlog.StructField{Name: name, Type: txlog.PrimitiveType{Name: txlog.TypeLong}, Nullable: false}
	}
	return &txlog.StructType{Fields: []txlog.StructField{
		str("stage", false),  // "ingest" or "validate"
		str("reason", false), // a Reason constant
		str("error", false),  // the detail, with the byte offset within the line
		str("raw", true),     // the line (truncated to MaxRawBytes at a UTF-8 boundary; invalid bytes as U+FFFD)
		long("raw_bytes"),    // the line's full length in bytes
		str("source_file", false),
		long("source_offset"),
		{Name: "rejected_at", Type: txlog.PrimitiveType{Name: txlog.TypeTimestamp}, Nullable: false},
	}}
}

// BronzeSchema is the declared columns (all nullable: bronze keeps what arrived; silver checks
// required fields) followed by the metadata columns.
func BronzeSchema(declared *txlog.StructType) *txlog.StructType {
	out := &txlog.StructType{}
	for _, f := range declared.Fields {
		f.Nullable = true
		out.Fields = append(out.Fields, f)
	}
	out.Fields = append(out.Fields,
		txlog.StructField{Name: ColRescued, Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true},
		txlog.StructField{Name: ColIngestTime, Type: txlog.PrimitiveType{Name: txlog.TypeTimestamp}, Nullable: false},
		txlog.StructField{Name: ColSourceFile, Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: false},
		txlog.StructField{Name: ColSourceOffset, Type: txlog.PrimitiveType{Name: txlog.TypeLong}, Nullable: false},
	)
	return out
}

// FieldsOf maps declared Delta columns to line-parser fields.
func FieldsOf(declared *txlog.StructType) ([]Field, error) {
	fields := make([]Field, len(declared.Fields))
	for i, f := range declared.Fields {
		fields[i].Name = f.Name
		switch t := f.Type.(type) {
		case txlog.DecimalType:
			fields[i].Kind, fields[i].Precision, fields[i].Scale = KindDecimal, t.Precision, t.Scale
		case txlog.PrimitiveType:
			k, ok := map[string]Kind{
				txlog.TypeString: KindString, txlog.TypeLong: KindLong, txlog.TypeInteger: KindInteger,
				txlog.TypeShort: KindShort, txlog.TypeByte: KindByte, txlog.TypeDouble: KindDouble,
				txlog.TypeFloat: KindFloat, txlog.TypeBoolean: KindBoolean, txlog.TypeTimestamp: KindTimestamp,
				txlog.TypeTimestampNTZ: KindTimestampNTZ, txlog.TypeDate: KindDate, txlog.TypeBinary: KindBinary,
			}[t.Name]
			if !ok {
				return nil, fmt.Errorf("bronze: column %q: type %s cannot be read from input lines", f.Name, t.Name)
			}
			fields[i].Kind = k
		default:
			return nil, fmt.Errorf("bronze: column %q: nested type %s cannot be declared for input", f.Name, f.Type.TypeName())
		}
	}
	return fields, nil
}

// withTimes gives each timestamp field its parser from times.
func withTimes(fields []Field, times map[string]*timefmt.Parser) error {
	for name, tp := range times {
		found := false
		for i := range fields {
			if fields[i].Name == name {
				if k := fields[i].Kind; k != KindTimestamp && k != KindTimestampNTZ {
					return fmt.Errorf("bronze: column %q: a timestamp format or unit on a column that is not a timestamp", name)
				}
				fields[i].Time, found = tp, true
			}
		}
		if !found {
			return fmt.Errorf("bronze: timestamp format or unit for %q, which is not a declared column", name)
		}
	}
	return nil
}

// ObjectStats counts what one object gave. Lines = Rows + Rejected, always; BlankLines are
// lines with nothing on them, which are neither records nor errors.
type ObjectStats struct {
	Lines      int64
	Rows       int64
	Rejected   int64
	BlankLines int64
	Bytes      int64 // decompressed bytes read
	ByReason   map[string]int64
}

func (s *ObjectStats) reject(reason string) {
	s.Rejected++
	s.Lines++
	if s.ByReason == nil {
		s.ByReason = map[string]int64{}
	}
	s.ByReason[reason]++
}

// Decoder turns landing objects into bronze rows and rejects, appending to two batches. Not safe
// for concurrent use: each worker has its own.
type Decoder struct {
	limits  Limits
	fields  []Field
	parser  *LineParser
	Bronze  *pq.Batch
	Rejects *pq.Batch
	// Flush, when set, is called whenever the batches hold FlushRows rows or FlushBytes of
	// input, so that a huge object is written out in pieces instead of held in memory. It must
	// empty the batches.
	Flush     func(ctx context.Context) error
	FlushRows int
	// FlushBytes bounds the input bytes the batches hold between flushes; default
	// DefaultFlushBytes.
	FlushBytes int64
	held       int64 // input bytes appended since the last flush
	raw        []byte
	json       []byte
	csvRec     []byte    // the current CSV record, at most MaxLineBytes+2 bytes of it
	csvSrc     csvFeeder // hands one record at a time to encoding/csv
	block      []byte    // the buffer of the block being decoded (decodeLinesSerial)
	blockBytes int       // the size of NDJSON blocks; 0: blockBytes (tests cut smaller ones)
	keyFor     string    // the key escapedKey is EscapeKey of
	escapedKey string
	// pipeline, when set, decodes NDJSON blocks on other goroutines (blockPipeline).
	pipeline *blockPipeline
	// base is where the bytes being decoded start in their object (DecodeRange): offsets in
	// the tables are offsets into the object, whichever range of it a read covers.
	base int64
}

// csvFeeder is the source of the decoder's csv.Reader: one record, then io.EOF until the next.
type csvFeeder struct{ b []byte }

func (f *csvFeeder) Read(p []byte) (int, error) {
	if len(f.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, f.b)
	f.b = f.b[n:]
	return n, nil
}

// maybeFlush hands full batches to Flush.
// size is the input bytes of the record just appended: rows are bounded by count and by the
// input they hold, so that lines near max_line_bytes (a million-digit decimal is one, kept
// whole in _rescued_data) cannot pile up FlushRows of them, gigabytes, in memory.
func (d *Decoder) maybeFlush(ctx context.Context, size int64) error {
	d.held += size
	if d.Flush == nil || (d.Bronze.Len()+d.Rejects.Len() < d.FlushRows && d.held < d.flushBytes()) {
		return nil
	}
	d.held = 0
	return d.Flush(ctx)
}

// flushBytes is FlushBytes or its default.
func (d *Decoder) flushBytes() int64 {
	if d.FlushBytes > 0 {
		return d.FlushBytes
	}
	return DefaultFlushBytes
}

// DefaultFlushBytes is how much input a decoder holds as rows before it flushes, by default.
const DefaultFlushBytes = 32 << 20

// NewDecoder builds a decoder for the declared columns.
func NewDecoder(declared *txlog.StructType, limits Limits) (*Decoder, error) {
	fields, err := FieldsOf(declared)
	if err != nil {
		return nil, err
	}
	if err := withTimes(fields, limits.Times); err != nil {
		return nil, err
	}
	p, err := NewLineParser(fields)
	if err != nil {
		return nil, err
	}
	bronze, err := pq.NewBatch(BronzeSchema(declared))
	if err != nil {
		return nil, err
	}
	rejects, err := pq.NewBatch(RejectsSchema())
	if err != nil {
		return nil, err
	}
	return &Decoder{limits: limits.withDefaults(), fields: fields, parser: p, Bronze: bronze, Rejects: rejects}, nil
}

// ioError marks a failure of the underlying object read (network, context): retry the batch,
// never reject the data.
type ioError struct{ err error }

func (e *ioError) Error() string { return e.err.Error() }
func (e *ioError) Unwrap() error { return e.err }

// trackingReader remembers the underlying reader's own errors, so that a decompression error can
// be told apart from a failed read of the object.
type trackingReader struct {
	r   io.Reader
	err error
}

func (t *trackingReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && err != io.EOF {
		t.err = err
	}
	return n, err
}

// Decode reads one object. key is its landing key (for _source_file), format one of the Format
// constants, ingestTime the batch's fixed ingest time in microseconds (fixed per batch, so a
// re-run writes the same rows). An error means the object could not be read (retry); bad
// content is never an error, it becomes rejects.
func (d *Decoder) Decode(ctx context.Context, r io.Reader, key, format string, ingestTime int64) (ObjectStats, error) {
	return d.DecodeRange(ctx, r, key, format, ingestTime, 0)
}

// DecodeRange reads the bytes of one object from byte base on (what was appended to an object
// after an earlier read): as Decode, with offsets counted from the start of the object. A range
// that does not start the object has no byte-order mark, and is gzip only if a new gzip member
// starts there.
func (d *Decoder) DecodeRange(ctx context.Context, r io.Reader, key, format string, ingestTime, base int64) (ObjectStats, error) {
	d.base = base
	defer func() { d.base = 0 }()
	var st ObjectStats
	tr := &trackingReader{r: r}
	// Every read of the object, and of its decompressed stream, checks ctx: a single huge line
	// or record, or a run of lines that needs no per-line work, would otherwise hold a job past
	// a signal or its timeout. bufio reads at most 256 KiB at a time, so decoding stops within
	// that many bytes of a cancellation, whatever the input.
	var src io.Reader = &ctxReader{ctx: ctx, r: tr}
	br := bufio.NewReaderSize(src, 256<<10)
	if strings.HasSuffix(key, ".gz") || isGzip(br) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			if tr.err != nil {
				return st, &ioError{fmt.Errorf("bronze: read %s: %w", key, tr.err)}
			}
			d.appendReject(&st, rejected{key: key, offset: 0}, ReasonCorruptGzip, "not a readable gzip stream: "+err.Error(), ingestTime)
			return st, nil
		}
		zr.Multistream(true)
		src = &ctxReader{ctx: ctx, r: &limitedReader{r: zr, n: d.limits.MaxDecompressedBytes}}
		br = bufio.NewReaderSize(src, 256<<10)
	}
	// A UTF-8 byte-order mark, which Windows tools put at the start of a text file, is not
	// content: skip it, so that the first line is a record and the first CSV header names its
	// column. Offsets still count it, so they stay byte offsets into the object.
	if bom, _ := br.Peek(len(utf8BOM)); base == 0 && bytes.Equal(bom, utf8BOM) {
		br.Discard(len(utf8BOM))
		st.Bytes = int64(len(utf8BOM))
	}
	var err error
	switch format {
	case FormatJSON, "":
		if d.pipeline != nil {
			err = d.pipeline.run(ctx, d, br, key, ingestTime, &st)
		} else {
			err = d.decodeLinesSerial(ctx, br, key, ingestTime, &st)
		}
	case FormatCSV:
		err = d.decodeCSV(ctx, br, key, ingestTime, &st)
	default:
		return st, fmt.Errorf("bronze: unknown landing format %q (want json or csv)", format)
	}
	if err == nil && tr.err != nil {
		// A Peek (gzip magic, byte-order mark) hands a read error to its caller only once; a
		// reader that then says EOF must not make a failed read look like a whole object.
		err = tr.err
	}
	if err == nil {
		return st, nil
	}
	var ioe *ioError
	if errors.As(err, &ioe) {
		return st, ioe
	}
	if tr.err != nil || ctx.Err() != nil {
		return st, &ioError{fmt.Errorf("bronze: read %s: %w", key, errors.Join(tr.err, ctx.Err()))}
	}
	// The bytes arrived but do not decompress: keep what was read, and record the rest.
	reason, detail := ReasonCorruptGzip, fmt.Sprintf("%v after %d decompressed bytes; the rest of the object was not read", err, st.Bytes)
	if errors.Is(err, errTooLarge) {
		reason = ReasonDecompressedSize
		detail = fmt.Sprintf("the object inflates to more than %d bytes (landing.max_decompressed_bytes); the lines in its first %d decompressed bytes were ingested, the rest was not read: split the object or raise the limit", d.limits.MaxDecompressedBytes, st.Bytes)
	}
	d.appendReject(&st, rejected{key: key, offset: st.Bytes}, reason, detail, ingestTime)
	return st, nil
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

func isGzip(br *bufio.Reader) bool {
	magic, _ := br.Peek(2)
	return len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b
}

// ctxReader fails its reads once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

var errTooLarge = errors.New("decompressed size limit reached")

type limitedReader struct {
	r io.Reader
	n int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

func (d *Decoder) line(st *ObjectStats, key string, offset int64, line []byte, size int64, ingestTime int64) {
	body := trimEOL(line)
	if len(body) == 0 || (asciiSpace[body[0]] != 0 || body[0] >= utf8.RuneSelf) && len(bytes.TrimSpace(body)) == 0 {
		st.BlankLines++
		return
	}
	contentSize := size - int64(len(line)-len(body))
	if contentSize > int64(d.limits.MaxLineBytes) {
		d.appendReject(st, rejected{key: key, offset: offset, raw: body, rawSize: contentSize}, ReasonTooLong, fmt.Sprintf("line of %d bytes exceeds the %d-byte limit", contentSize, d.limits.MaxLineBytes), ingestTime)
		return
	}
	if err := d.parser.Parse(body); err != nil {
		var le *LineError
		reason, detail := ReasonInvalidJSON, err.Error()
		if errors.As(err, &le) {
			reason = le.Reason
		}
		d.appendReject(st, rejected{key: key, offset: offset, raw: body, rawSize: contentSize}, reason, detail, ingestTime)
		return
	}
	d.appendParsed(key, offset, ingestTime)
	st.Rows++
	st.Lines++
}

// trimEOL is bytes.TrimRight(b, "\r\n") without building a cutset each line (it showed at 4%
// of the decode).
func trimEOL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// appendParsed moves the parser's cells into the bronze batch.
func (d *Decoder) appendParsed(key string, offset, ingestTime int64) {
	appendCells(d.Bronze.Columns, d.parser)
	d.appendMeta(d.parser.Rescued(), key, offset, ingestTime)
}

// appendCells appends the cells of p's last line to cols, one a field of p, in order (null where
// a cell is not valid). The one switch from parsed cells to column values: ingest and the
// backfill of rescued values append alike, and a row costs one call, not one a cell.
func appendCells(cols []*pq.Column, p *LineParser) {
	for i, f := range p.fields {
		v := &p.vals[i]
		c := cols[i]
		if !v.Valid {
			c.AppendNull()
			continue
		}
		switch f.Kind {
		case KindString, KindBinary:
			c.AppendBytes(p.Str(i))
		case KindLong, KindTimestamp, KindTimestampNTZ:
			c.AppendInt64(v.Int)
		case KindInteger, KindShort, KindByte, KindDate:
			c.AppendInt32(int32(v.Int))
		case KindDouble:
			c.AppendFloat64(v.Float)
		case KindFloat:
			c.AppendFloat32(float32(v.Float))
		case KindBoolean:
			c.AppendBool(v.Bool)
		case KindDecimal:
			c.AppendDecimal(v.Dec)
		}
	}
}

func (d *Decoder) appendMeta(rescued []byte, key string, offset, ingestTime int64) {
	n := len(d.fields)
	cols := d.Bronze.Columns
	if rescued == nil {
		cols[n].AppendNull()
	} else {
		cols[n].AppendBytes(rescued)
	}
	cols[n+1].AppendInt64(ingestTime)
	if key != d.keyFor || d.keyFor == "" {
		d.keyFor, d.escapedKey = key, EscapeKey(key) // once per object, not per row
	}
	cols[n+2].AppendString(d.escapedKey)
	cols[n+3].AppendInt64(d.base + offset)
}

// rejected is what a reject row says of the record: the object, the byte offset, and the
// record's text (nil: none) with its full size.
type rejected struct {
	key     string
	offset  int64
	raw     []byte
	rawSize int64
}

func (d *Decoder) appendReject(st *ObjectStats, r rejected, reason, detail string, ingestTime int64) {
	st.reject(reason)
	key, offset, raw, rawSize := r.key, r.offset, r.raw, r.rawSize
	c := d.Rejects.Columns
	c[0].AppendString("ingest")
	c[1].AppendString(reason)
	// The detail can quote the key or input bytes; keep the column readable by every engine.
	c[2].AppendString(strings.ToValidUTF8(detail, "\uFFFD"))
	if raw == nil {
		c[3].AppendNull()
	} else {
		c[3].AppendBytes(d.safeRaw(raw))
	}
	c[4].AppendInt64(rawSize)
	c[5].AppendString(EscapeKey(key))
	c[6].AppendInt64(d.base + offset)
	c[7].AppendInt64(ingestTime)
}

// safeRaw truncates at a UTF-8 boundary and replaces invalid bytes, so the rejects table holds
// valid strings every engine can read.
func (d *Decoder) safeRaw(raw []byte) []byte {
	if len(raw) > d.limits.MaxRawBytes {
		cut := d.limits.MaxRawBytes
		for cut > 0 && !utf8.RuneStart(raw[cut]) {
			cut--
		}
		raw = raw[:cut]
	}
	if utf8.Valid(raw) {
		return raw
	}
	d.raw = append(d.raw[:0], bytes.ToValidUTF8(raw, []byte("\uFFFD"))...)
	return d.raw
}

// EscapeKey is how a landing key is stored in _source_file and the rejects' source_file. S3
// keys are bytes, and a key that is not valid UTF-8 would make the whole table unreadable to
// Polars and pyarrow, so such a key is stored Go-quoted (strconv.Quote: "landing/a\xff.json",
// with the quotes), which is valid UTF-8, names the exact bytes, and cannot be mistaken for an
// ordinary key. Valid keys are stored as they are.
func EscapeKey(key string) string {
	if utf8.ValidString(key) {
		return key
	}
	return strconv.Quote(key)
}

// decodeCSV reads CSV with a header row. Empty fields are null (Spark's default); header columns
// that are not declared, values that do not convert, and fields beyond the header are rescued.
//
// Records are cut by readCSVRecord and bounded like JSON lines: a record longer than
// MaxLineBytes is rejected (line_too_long) without being held, and decoding goes on with the
// next one; a quoted field that is never closed turns the rest of the object into one record,
// rejected as unterminated_quote with the lines and bytes it swallowed. Only records within
// the limit reach encoding/csv, one at a time, so it never holds more than the limit either.
func (d *Decoder) decodeCSV(ctx context.Context, br *bufio.Reader, key string, ingestTime int64, st *ObjectStats) error {
	d.csvSrc.b = nil
	cr := csv.NewReader(&d.csvSrc)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	var header []string
	var index []int     // header position -> declared field, or -1
	offset := st.Bytes  // past a byte-order mark, which the offsets count
	line := int64(1)    // of the record's first line, for error details
	var badHeader int64 // the line of a rejected header: every later record is rejected too
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var info csvRecordInfo
		var rerr error
		d.csvRec, info, rerr = readCSVRecord(br, d.csvRec[:0], d.limits.MaxLineBytes+2)
		if rerr != nil && rerr != io.EOF {
			return rerr
		}
		recOffset, recLine := offset, line
		offset += info.size
		line += info.lines
		st.Bytes = offset
		if info.blank {
			st.BlankLines++
		}
		if info.size > 0 && !info.blank {
			if d.csvOne(st, cr, info, &header, &index, badHeader, key, recOffset, recLine, ingestTime) && header == nil && badHeader == 0 {
				badHeader = recLine
			}
			if ferr := d.maybeFlush(ctx, info.size); ferr != nil {
				return &ioError{ferr}
			}
		}
		if rerr == io.EOF {
			return nil
		}
	}
}

// csvOne turns one record into a row or a reject; the first record is the header. refused:
// the record was rejected. badHeader, when not 0, is the line of the object's rejected header:
// the records cannot be matched to columns, so each is rejected, and counted, too.
func (d *Decoder) csvOne(st *ObjectStats, cr *csv.Reader, info csvRecordInfo, header *[]string, index *[]int, badHeader int64, key string, offset, line, ingestTime int64) (refused bool) {
	isHeader := *header == nil && badHeader == 0
	what := "record"
	if isHeader {
		what = "header"
	}
	kept := d.csvRec[:min(int64(len(d.csvRec)), info.content, int64(d.limits.MaxLineBytes))]
	rej := rejected{key: key, offset: offset, raw: kept, rawSize: info.content}
	switch {
	case badHeader != 0 && !info.unterminated && info.content <= int64(d.limits.MaxLineBytes):
		d.appendReject(st, rej, ReasonInvalidCSV, fmt.Sprintf(
			"record at line %d: the object's header (line %d) was rejected, so its fields cannot be matched to columns", line, badHeader), ingestTime)
		return true
	case info.unterminated:
		d.appendReject(st, rej, ReasonUnterminatedQuote, fmt.Sprintf(
			"a quoted field of the %s at line %d is never closed: the rest of the object, %s and %d bytes, is rejected as this one record",
			what, line, plural(info.lines, "line"), info.size), ingestTime)
		return true
	case info.content > int64(d.limits.MaxLineBytes):
		d.appendReject(st, rej, ReasonTooLong, fmt.Sprintf("%s at line %d of %d bytes exceeds the %d-byte limit",
			what, line, info.content, d.limits.MaxLineBytes), ingestTime)
		return true
	}
	d.csvSrc.b = d.csvRec
	rec, err := cr.Read()
	d.csvSrc.b = nil
	if err != nil {
		var pe *csv.ParseError
		detail := err.Error()
		if errors.As(err, &pe) {
			// encoding/csv numbers only the lines it was given; number them in the object.
			detail = fmt.Sprintf("%s at line %d, column %d: %v", what, line+int64(pe.Line-pe.StartLine), pe.Column, pe.Err)
		}
		d.appendReject(st, rej, ReasonInvalidCSV, detail, ingestTime)
		return true
	}
	if isHeader {
		*header = append([]string{}, rec...)
		*index = make([]int, len(rec))
		for i, h := range rec {
			(*index)[i] = -1
			for j, f := range d.fields {
				if f.Name == h {
					(*index)[i] = j
				}
			}
		}
		return false
	}
	if i, at := invalidUTF8Field(rec); i >= 0 {
		// As on the JSON path: a record with bytes that are not UTF-8 is rejected whole,
		// not stored (string columns must hold valid UTF-8) nor silently repaired.
		name := "_c" + strconv.Itoa(i)
		if i < len(*header) {
			name = (*header)[i]
		}
		d.appendReject(st, rej, ReasonInvalidUTF8,
			fmt.Sprintf("field %d (%s) is not valid UTF-8 at byte %d of the field", i+1, name, at), ingestTime)
		return true
	}
	d.csvRecord(rec, *header, *index, key, offset, ingestTime)
	st.Rows++
	st.Lines++
	return false
}

func plural(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.FormatInt(n, 10) + " " + word + "s"
}

// invalidUTF8Field returns the index of the first field that is not valid UTF-8 and the byte
// offset of the first bad byte within it, or -1.
func invalidUTF8Field(rec []string) (int, int) {
	for i, v := range rec {
		if utf8.ValidString(v) {
			continue
		}
		for at := 0; at < len(v); {
			r, size := utf8.DecodeRuneInString(v[at:])
			if r == utf8.RuneError && size <= 1 {
				return i, at
			}
			at += size
		}
	}
	return -1, 0
}

func (d *Decoder) csvRecord(rec, header []string, index []int, key string, offset, ingestTime int64) {
	cols := d.Bronze.Columns
	filled := make([]bool, len(d.fields))
	d.json = d.json[:0]
	rescue := func(name, value string) {
		if len(d.json) == 0 {
			d.json = append(d.json, '{')
		} else {
			d.json = append(d.json, ',')
		}
		d.json = pq.AppendJSONString(d.json, name)
		d.json = append(d.json, ':')
		d.json = pq.AppendJSONString(d.json, value)
	}
	for i, v := range rec {
		if i >= len(header) {
			rescue("_c"+strconv.Itoa(i), v)
			continue
		}
		j := index[i]
		if j < 0 || filled[j] {
			rescue(header[i], v)
			continue
		}
		filled[j] = true
		if v == "" {
			cols[j].AppendNull()
			continue
		}
		if !appendText(cols[j], d.fields[j], v) {
			cols[j].AppendNull()
			rescue(header[i], v)
		}
	}
	for j := range d.fields {
		if !filled[j] {
			cols[j].AppendNull()
		}
	}
	var rescued []byte
	if len(d.json) > 0 {
		d.json = append(d.json, '}')
		rescued = d.json
	}
	d.appendMeta(rescued, key, offset, ingestTime)
}

// appendText converts a CSV field to the column's type; false when it does not convert.
func appendText(c *pq.Column, f Field, v string) bool {
	switch f.Kind {
	case KindString:
		c.AppendString(v)
	case KindBinary:
		c.AppendString(v) // CSV carries binary as text
	case KindLong, KindInteger, KindShort, KindByte:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || !inRange(f.Kind, n) {
			return false
		}
		if f.Kind == KindLong {
			c.AppendInt64(n)
		} else {
			c.AppendInt32(int32(n))
		}
	case KindDouble, KindFloat:
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return false
		}
		if f.Kind == KindDouble {
			c.AppendFloat64(x)
		} else {
			c.AppendFloat32(float32(x))
		}
	case KindBoolean:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			c.AppendBool(true)
		case "false":
			c.AppendBool(false)
		default:
			return false
		}
	case KindTimestamp, KindTimestampNTZ:
		us, err := f.Time.Parse([]byte(strings.TrimSpace(v)))
		if err != nil {
			return false
		}
		c.AppendInt64(us)
	case KindDate:
		days, ok := timefmt.ParseDate([]byte(strings.TrimSpace(v)))
		if !ok {
			return false
		}
		c.AppendInt32(int32(days))
	case KindDecimal:
		t := []byte(strings.TrimSpace(v))
		if !isPlainDecimal(t) {
			return false
		}
		dec, err := pq.ParseDecimal(string(t), f.Scale)
		if err != nil || !fitsPrecision(dec, f.Precision) {
			return false
		}
		c.AppendDecimal(dec)
	default:
		return false
	}
	return true
}
