package bronze

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/medallion-lake/medallion/bronze/timefmt"
	"github.com/medallion-lake/medallion/pq"
)

// Kind is the declared type of a column, as the line parser sees it.
type Kind uint8

// The kinds the NDJSON parser fills. Integer kinds differ only in their range check.
const (
	KindString Kind = iota
	KindLong
	KindInteger
	KindShort
	KindByte
	KindDouble
	KindFloat
	KindBoolean
	KindTimestamp    // microseconds since the epoch, UTC
	KindTimestampNTZ // microseconds since the epoch of the wall clock
	KindDate         // days since the epoch
	KindDecimal      // a JSON number or numeric string, at the field's Precision and Scale
	KindBinary       // a base64 string (standard encoding), decoded
)

// Field is one declared column.
type Field struct {
	Name string
	Kind Kind
	// Precision and Scale of a KindDecimal column.
	Precision, Scale int
	// Time reads a timestamp column's values (its format or unit); nil: the default forms.
	Time *timefmt.Parser
}

// Reject reasons: what a person can act on. A line with one of these is not a record at all and
// goes to the rejects table.
const (
	ReasonInvalidJSON = "invalid_json"
	ReasonNotObject   = "not_an_object"
	ReasonInvalidUTF8 = "invalid_utf8"
	ReasonTooLong     = "line_too_long"
	ReasonTooDeep     = "nested_too_deep"
	ReasonFuture      = "future"
)

// LineError says why a line is not a record, and where.
type LineError struct {
	Reason string // one of the Reason constants
	Offset int    // byte offset within the line
	Detail string
}

func (e *LineError) Error() string {
	return fmt.Sprintf("%s at byte %d: %s", e.Reason, e.Offset, e.Detail)
}

// Value is one parsed cell. Which field is meaningful depends on the column's Kind.
type Value struct {
	Valid bool // false: null or absent
	Int   int64
	Float float64
	Bool  bool
	Dec   pq.Decimal128
	// string bytes: line[strStart:strEnd], or scratch[strStart:strEnd] when inScratch
	strStart, strEnd int
	inScratch        bool
}

// LineParser turns one NDJSON line into typed cells for a declared schema, without allocating
// per line in the steady state. Keys that are not declared, values of the wrong type and
// repeated keys are kept verbatim in the rescued-data JSON object, so nothing is lost.
// A LineParser is not safe for concurrent use; use one per goroutine.
type LineParser struct {
	fields  []Field
	index   map[string]int
	vals    []Value
	line    []byte
	scratch []byte
	rescued []byte
	pos     int
	// order[k] is the declared field the k-th key of the last line named (-1: none): lines
	// of one source list their keys in one order, so the k-th key of this line is checked
	// against that field's name first, which costs a comparison instead of a map look-up.
	order []int
	// plainName[j] is whether field j's name is bytes a JSON string holds as they are (no
	// quote, backslash or control character; valid UTF-8): then a key whose raw bytes are
	// the name followed by a quote is that name, without scanning it as a string.
	plainName []bool
	// hours parses default-form timestamps, remembering the last one's date and hour.
	hours timefmt.HourCache
}

// NewLineParser builds a parser for the declared fields. Names must be unique.
func NewLineParser(fields []Field) (*LineParser, error) {
	p := &LineParser{fields: fields, index: make(map[string]int, len(fields)), vals: make([]Value, len(fields)),
		plainName: make([]bool, len(fields))}
	for i, f := range fields {
		p.plainName[i] = isPlainName(f.Name)
		if _, dup := p.index[f.Name]; dup {
			return nil, fmt.Errorf("bronze: duplicate column %q", f.Name)
		}
		if f.Kind > KindBinary {
			return nil, fmt.Errorf("bronze: column %q: unsupported kind %d", f.Name, f.Kind)
		}
		p.index[f.Name] = i
	}
	return p, nil
}

// Value returns cell i of the last parsed line.
func (p *LineParser) Value(i int) *Value { return &p.vals[i] }

// Str returns the bytes of a KindString or KindBinary cell of the last parsed line. The bytes are
// valid until the next Parse call.
func (p *LineParser) Str(i int) []byte {
	v := &p.vals[i]
	if v.inScratch {
		return p.scratch[v.strStart:v.strEnd]
	}
	return p.line[v.strStart:v.strEnd]
}

// Rescued returns the rescued-data JSON object of the last parsed line, or nil when every key
// fitted the schema. Valid until the next Parse call.
func (p *LineParser) Rescued() []byte {
	if len(p.rescued) == 0 {
		return nil
	}
	return p.rescued
}

// Parse parses one line (without its newline). On a *LineError the line is not a record.
func (p *LineParser) Parse(line []byte) error {
	p.line, p.pos = line, 0
	p.scratch = p.scratch[:0]
	p.rescued = p.rescued[:0]
	// A cell's other fields are read only when it is Valid, and whoever sets Valid sets them.
	for i := range p.vals {
		p.vals[i].Valid = false
	}
	p.skipSpace()
	if p.pos >= len(line) {
		return p.fail(ReasonNotObject, "empty line")
	}
	if line[p.pos] != '{' {
		if err := p.skipValue(0); err != nil {
			return err
		}
		return p.fail(ReasonNotObject, "a JSON value that is not an object")
	}
	p.pos++
	// A declared key is taken once a non-null value of its type filled it: the first such value
	// wins, and every other occurrence of the key goes to _rescued_data. A null or a value of
	// the wrong type does not take it, so {"id":null,"id":"e1"} is a record with id "e1", not a
	// null id that silver would reject. Bit per field for the first 64 fields, then a map.
	taken := uint64(0)
	var takenMore map[int]bool
	p.skipSpace()
	if p.peek() == '}' {
		p.pos++
		return p.finish()
	}
	for k := 0; ; {
		p.skipSpace()
		if p.peek() != '"' {
			return p.fail(ReasonInvalidJSON, "expected a quoted key")
		}
		keyStart := p.pos
		idx, declared := p.expectedKey(k)
		var key []byte
		if !declared {
			kStart, kEnd, kScratch, err := p.scanString()
			if err != nil {
				return err
			}
			if kScratch {
				key = p.scratch[kStart:kEnd]
			} else {
				key = line[kStart:kEnd]
			}
		}
		keyEnd := p.pos
		p.skipSpace()
		if p.peek() != ':' {
			return p.fail(ReasonInvalidJSON, "expected ':' after a key")
		}
		p.pos++
		p.skipSpace()
		valStart := p.pos
		if !declared {
			idx, declared = p.index[string(key)] // no allocation: the compiler special-cases this
			seen := idx
			if !declared {
				seen = -1
			}
			if k < len(p.order) {
				p.order[k] = seen
			} else if k < maxOrderedKeys {
				p.order = append(p.order, seen)
			}
		}
		k++
		fresh := false
		if declared {
			if idx < 64 {
				fresh = taken&(1<<idx) == 0
			} else {
				fresh = !takenMore[idx]
			}
		}
		fitted := false
		if declared && fresh {
			var err error
			fitted, err = p.parseInto(idx)
			if err != nil {
				return err
			}
			if fitted && p.vals[idx].Valid {
				if idx < 64 {
					taken |= 1 << idx
				} else {
					if takenMore == nil {
						takenMore = map[int]bool{}
					}
					takenMore[idx] = true
				}
			}
		} else if err := p.skipValue(0); err != nil {
			return err
		}
		if !fitted {
			p.rescue(line[keyStart:keyEnd], line[valStart:p.pos])
		}
		p.skipSpace()
		switch p.peek() {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return p.finish()
		default:
			return p.fail(ReasonInvalidJSON, "expected ',' or '}' after a value")
		}
	}
}

// expectedKey consumes the k-th key of the line when its raw bytes are the name of the field
// the k-th key of the last line named (LineParser.order) and that name is plain: the string's
// bytes are the name's and its closing quote follows, so it needs no scan of its own. pos is at
// the key's opening quote; ok false leaves it there.
func (p *LineParser) expectedKey(k int) (idx int, ok bool) {
	if k >= len(p.order) {
		return -1, false
	}
	j := p.order[k]
	if j < 0 || !p.plainName[j] {
		return -1, false
	}
	name := p.fields[j].Name
	start := p.pos + 1
	end := start + len(name)
	if end >= len(p.line) || p.line[end] != '"' || string(p.line[start:end]) != name {
		return -1, false
	}
	p.pos = end + 1
	return j, true
}

// isPlainName reports whether a JSON string holds name's bytes as they are: valid UTF-8, no
// quote, backslash or control character.
func isPlainName(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c == '"' || c == '\\' || c < 0x20 {
			return false
		}
	}
	return utf8.ValidString(name)
}

// maxOrderedKeys bounds the key positions whose field is remembered (LineParser.order).
const maxOrderedKeys = 256

func (p *LineParser) finish() error {
	p.skipSpace()
	if p.pos != len(p.line) {
		return p.fail(ReasonInvalidJSON, "trailing data after the object")
	}
	if len(p.rescued) > 0 {
		p.rescued = append(p.rescued, '}')
	}
	return nil
}

func (p *LineParser) rescue(rawKey, rawVal []byte) {
	if len(p.rescued) == 0 {
		p.rescued = append(p.rescued, '{')
	} else {
		p.rescued = append(p.rescued, ',')
	}
	p.rescued = append(p.rescued, rawKey...)
	p.rescued = append(p.rescued, ':')
	p.rescued = append(p.rescued, rawVal...)
}

// parseInto parses the value at pos into cell idx. It reports false (and consumes the value)
// when the value is valid JSON of the wrong type, so the caller rescues it.
func (p *LineParser) parseInto(idx int) (bool, error) {
	v := &p.vals[idx]
	c := p.peek()
	if c == 'n' {
		if err := p.literal("null"); err != nil {
			return false, err
		}
		return true, nil // explicit null fits every column
	}
	switch p.fields[idx].Kind {
	case KindString:
		if c != '"' {
			return false, p.skipValue(0)
		}
		s, e, scr, err := p.scanString()
		if err != nil {
			return false, err
		}
		v.Valid, v.strStart, v.strEnd, v.inScratch = true, s, e, scr
		return true, nil
	case KindBoolean:
		switch c {
		case 't':
			if err := p.literal("true"); err != nil {
				return false, err
			}
			v.Valid, v.Bool = true, true
			return true, nil
		case 'f':
			if err := p.literal("false"); err != nil {
				return false, err
			}
			v.Valid, v.Bool = true, false
			return true, nil
		}
		return false, p.skipValue(0)
	case KindLong, KindInteger, KindShort, KindByte:
		if c != '-' && (c < '0' || c > '9') {
			return false, p.skipValue(0)
		}
		start := p.pos
		isInt, err := p.scanNumber()
		if err != nil {
			return false, err
		}
		if !isInt {
			return false, nil
		}
		n, err := strconv.ParseInt(bytesToString(p.line[start:p.pos]), 10, 64)
		if err != nil || !inRange(p.fields[idx].Kind, n) {
			return false, nil
		}
		v.Valid, v.Int = true, n
		return true, nil
	case KindDouble, KindFloat:
		if c != '-' && (c < '0' || c > '9') {
			return false, p.skipValue(0)
		}
		start := p.pos
		if _, err := p.scanNumber(); err != nil {
			return false, err
		}
		f, ok := parseFloat(p.line[start:p.pos], p.fields[idx].Kind)
		if !ok {
			return false, nil
		}
		v.Valid, v.Float = true, f
		return true, nil
	case KindDecimal:
		return p.parseDecimal(v, p.fields[idx], c)
	case KindBinary:
		return p.parseBinary(v, c)
	case KindTimestamp, KindTimestampNTZ, KindDate:
		// Inline rather than a method of its own, as decimals and binary are: event times are
		// on every line, and the call costs the ingest hot path a few percent.
		if c != '"' {
			return p.parseEpochNumber(v, p.fields[idx].Time, c)
		}
		s, e, scr, err := p.scanString()
		if err != nil {
			return false, err
		}
		text := p.line[s:e]
		if scr {
			text = p.scratch[s:e]
		}
		if p.fields[idx].Kind == KindDate {
			days, ok := timefmt.ParseDate(text)
			if !ok {
				return false, nil
			}
			v.Valid, v.Int = true, days
			return true, nil
		}
		var us int64
		var terr error
		if tp := p.fields[idx].Time; tp == nil {
			us, terr = p.hours.ParseTimestampMicros(text)
		} else {
			us, terr = tp.Parse(text)
		}
		if terr != nil {
			return false, nil
		}
		v.Valid, v.Int = true, us
		return true, nil
	}
	return false, p.skipValue(0)
}

// parseEpochNumber parses a JSON number into a timestamp cell whose column takes epoch numbers
// (unit:); any other column, or a value that is not a number, does not fit.
func (p *LineParser) parseEpochNumber(v *Value, tp *timefmt.Parser, c byte) (bool, error) {
	if !tp.NumbersOK() || (c != '-' && (c < '0' || c > '9')) {
		return false, p.skipValue(0)
	}
	start := p.pos
	if _, err := p.scanNumber(); err != nil {
		return false, err
	}
	us, err := tp.Parse(p.line[start:p.pos])
	if err != nil {
		return false, nil
	}
	v.Valid, v.Int = true, us
	return true, nil
}

// scanText scans a string value and returns its text: in the line, or in scratch when it had
// escapes.
func (p *LineParser) scanText() ([]byte, error) {
	s, e, scr, err := p.scanString()
	if err != nil {
		return nil, err
	}
	if scr {
		return p.scratch[s:e], nil
	}
	return p.line[s:e], nil
}

// parseDecimal is parseInto for a decimal column: a JSON number or a string holding one.
func (p *LineParser) parseDecimal(v *Value, f Field, c byte) (bool, error) {
	var text []byte
	switch {
	case c == '"':
		var err error
		if text, err = p.scanText(); err != nil {
			return false, err
		}
	case c == '-' || (c >= '0' && c <= '9'):
		start := p.pos
		if _, err := p.scanNumber(); err != nil {
			return false, err
		}
		text = p.line[start:p.pos]
	default:
		return false, p.skipValue(0)
	}
	if !isPlainDecimal(text) {
		return false, nil
	}
	d, err := pq.ParseDecimal(string(text), f.Scale)
	if err != nil || !fitsPrecision(d, f.Precision) {
		return false, nil
	}
	v.Valid, v.Dec = true, d
	return true, nil
}

// parseBinary is parseInto for a binary column: a base64 string, decoded into scratch.
func (p *LineParser) parseBinary(v *Value, c byte) (bool, error) {
	if c != '"' {
		return false, p.skipValue(0)
	}
	text, err := p.scanText()
	if err != nil {
		return false, err
	}
	start := len(p.scratch)
	p.scratch = append(p.scratch, make([]byte, base64.StdEncoding.DecodedLen(len(text)))...)
	n, derr := base64.StdEncoding.Decode(p.scratch[start:], text)
	if derr != nil {
		p.scratch = p.scratch[:start]
		return false, nil
	}
	p.scratch = p.scratch[:start+n]
	v.Valid, v.strStart, v.strEnd, v.inScratch = true, start, start+n, true
	return true, nil
}

// parseFloat converts a scanned JSON number for a double or float column; ok is false when the
// column cannot hold it.
func parseFloat(text []byte, k Kind) (float64, bool) {
	if k == KindDouble {
		if f, ok := exactDecimal(text); ok {
			return f, true
		}
	}
	bits := 64
	if k == KindFloat {
		bits = 32
	}
	f, err := strconv.ParseFloat(bytesToString(text), bits)
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// exactDecimal converts a JSON number without an exponent whose digits, the point left out,
// are an integer below 2^53 and whose fraction has at most 22 digits (amounts such as 21.96):
// both that integer and the power of ten are exact doubles, so one division rounds correctly
// (Clinger's fast path) and gives strconv.ParseFloat's result, bit for bit, without its
// general reader. ok is false for any other text, which strconv reads.
func exactDecimal(b []byte) (f float64, ok bool) {
	i, neg := 0, false
	if len(b) > 0 && b[0] == '-' {
		i, neg = 1, true
	}
	var mant uint64
	digits, frac, point := 0, 0, false
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9':
			mant = mant*10 + uint64(c-'0')
			digits++
			if point {
				frac++
			}
		case c == '.' && !point:
			point = true
		default:
			return 0, false
		}
	}
	if digits == 0 || digits > 15 || frac > 22 {
		return 0, false
	}
	f = float64(mant) / exactPow10[frac]
	if neg {
		f = -f
	}
	return f, true
}

// exactPow10 holds the powers of ten that are exact doubles.
var exactPow10 = [23]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// isPlainDecimal accepts [+-]digits[.digits][(e|E)[+-]digits] and nothing else (no
// fractions like "1/2", no hex, no separators).
func isPlainDecimal(b []byte) bool {
	i := 0
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		i++
	}
	d := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	intDigits := i - d
	fracDigits := 0
	if i < len(b) && b[i] == '.' {
		i++
		f := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		fracDigits = i - f
	}
	if intDigits+fracDigits == 0 {
		return false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		e := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == e || i-e > 4 { // exponents beyond 9999 cannot fit decimal(38) anyway
			return false
		}
	}
	return i == len(b)
}

// fitsPrecision reports whether an unscaled value has at most precision digits.
func fitsPrecision(d pq.Decimal128, precision int) bool {
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(precision)), nil)
	return new(big.Int).Abs(d.BigInt()).Cmp(limit) < 0
}

func inRange(k Kind, n int64) bool {
	switch k {
	case KindInteger:
		return n >= math.MinInt32 && n <= math.MaxInt32
	case KindShort:
		return n >= math.MinInt16 && n <= math.MaxInt16
	case KindByte:
		return n >= math.MinInt8 && n <= math.MaxInt8
	}
	return true
}

func bytesToString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func (p *LineParser) fail(reason, detail string) error {
	return &LineError{Reason: reason, Offset: p.pos, Detail: detail}
}

func (p *LineParser) peek() byte {
	if p.pos < len(p.line) {
		return p.line[p.pos]
	}
	return 0
}

func (p *LineParser) skipSpace() {
	for p.pos < len(p.line) {
		switch p.line[p.pos] {
		case ' ', '\t', '\r', '\n':
			p.pos++
		default:
			return
		}
	}
}

func (p *LineParser) literal(word string) error {
	if len(p.line)-p.pos < len(word) || string(p.line[p.pos:p.pos+len(word)]) != word {
		return p.fail(ReasonInvalidJSON, "invalid literal")
	}
	p.pos += len(word)
	return nil
}

// scanString consumes a JSON string at pos and returns its decoded bytes' location. Strings
// without escapes are not copied; strings with escapes are decoded into scratch.
func (p *LineParser) scanString() (start, end int, inScratch bool, err error) {
	line := p.line
	p.pos++ // opening quote
	start = p.pos
	i := p.pos
	// Eight bytes at a time while none of them ends the fast path: most strings are short
	// ASCII without escapes, and this is most of the parser's time.
	for i+8 <= len(line) && !hasSpecialByte(binary.LittleEndian.Uint64(line[i:])) {
		i += 8
	}
	for ; i < len(line); i++ {
		c := line[i]
		if !stringSpecial[c] {
			continue
		}
		switch {
		case c == '"':
			p.pos = i + 1
			return start, i, false, nil
		case c == '\\':
			p.pos = i
			return p.scanEscaped(start)
		case c < 0x20:
			p.pos = i
			return 0, 0, false, p.fail(ReasonInvalidJSON, "control character in a string")
		default: // c >= utf8.RuneSelf
			r, size := utf8.DecodeRune(line[i:])
			if r == utf8.RuneError && size <= 1 {
				p.pos = i
				return 0, 0, false, p.fail(ReasonInvalidUTF8, "invalid UTF-8 in a string")
			}
			i += size - 1
		}
	}
	p.pos = len(line)
	return 0, 0, false, p.fail(ReasonInvalidJSON, "unterminated string")
}

// hasSpecialByte reports whether any byte of w is one of stringSpecial's: a quote, a
// backslash, below 0x20 or at least 0x80. The has-zero-byte test ((x-0x01..)&^x&0x80..) is
// exact about whether some byte matches, which is all the caller needs.
func hasSpecialByte(w uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	quote := w ^ (lo * '"')
	bslash := w ^ (lo * '\\')
	return ((quote-lo)&^quote|(bslash-lo)&^bslash|(w-lo*0x20)&^w|w)&hi != 0
}

// stringSpecial marks the bytes that end the fast path inside a string: the quote, the
// backslash, control characters and the start of multi-byte UTF-8.
var stringSpecial = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf
	}
	return t
}()

func (p *LineParser) scanEscaped(start int) (int, int, bool, error) {
	line := p.line
	sStart := len(p.scratch)
	p.scratch = append(p.scratch, line[start:p.pos]...)
	for p.pos < len(line) {
		c := line[p.pos]
		switch {
		case c == '"':
			p.pos++
			return sStart, len(p.scratch), true, nil
		case c == '\\':
			if p.pos+1 >= len(line) {
				return 0, 0, false, p.fail(ReasonInvalidJSON, "unterminated escape")
			}
			e := line[p.pos+1]
			p.pos += 2
			switch e {
			case '"', '\\', '/':
				p.scratch = append(p.scratch, e)
			case 'b':
				p.scratch = append(p.scratch, '\b')
			case 'f':
				p.scratch = append(p.scratch, '\f')
			case 'n':
				p.scratch = append(p.scratch, '\n')
			case 'r':
				p.scratch = append(p.scratch, '\r')
			case 't':
				p.scratch = append(p.scratch, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return 0, 0, false, p.fail(ReasonInvalidJSON, "invalid \\u escape")
				}
				if utf16.IsSurrogate(r) {
					// A lone surrogate cannot be UTF-8; pair it or replace it (as encoding/json does).
					r2 := utf8.RuneError
					if p.pos+1 < len(line) && line[p.pos] == '\\' && line[p.pos+1] == 'u' {
						save := p.pos
						p.pos += 2
						if lo, ok := p.hex4(); ok && utf16.DecodeRune(r, lo) != utf8.RuneError {
							r2 = utf16.DecodeRune(r, lo)
						} else {
							p.pos = save
						}
					}
					r = r2
				}
				p.scratch = utf8.AppendRune(p.scratch, r)
			default:
				p.pos -= 2
				return 0, 0, false, p.fail(ReasonInvalidJSON, "invalid escape")
			}
		case c < 0x20:
			return 0, 0, false, p.fail(ReasonInvalidJSON, "control character in a string")
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(line[p.pos:])
			if r == utf8.RuneError && size <= 1 {
				return 0, 0, false, p.fail(ReasonInvalidUTF8, "invalid UTF-8 in a string")
			}
			p.scratch = append(p.scratch, line[p.pos:p.pos+size]...)
			p.pos += size
		default:
			p.scratch = append(p.scratch, c)
			p.pos++
		}
	}
	return 0, 0, false, p.fail(ReasonInvalidJSON, "unterminated string")
}

func (p *LineParser) hex4() (rune, bool) {
	if len(p.line)-p.pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range p.line[p.pos : p.pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	p.pos += 4
	return r, true
}

// scanNumber consumes a JSON number and reports whether it is an integer (no fraction or exponent).
func (p *LineParser) scanNumber() (bool, error) {
	line := p.line
	i := p.pos
	if i < len(line) && line[i] == '-' {
		i++
	}
	var ok bool
	switch {
	case i < len(line) && line[i] == '0':
		i++
	case i < len(line) && line[i] >= '1' && line[i] <= '9':
		i, _ = digitRun(line, i)
	default:
		return p.badNumber(i)
	}
	isInt := true
	if i < len(line) && line[i] == '.' {
		isInt = false
		if i, ok = digitRun(line, i+1); !ok {
			return p.badNumber(i)
		}
	}
	if i < len(line) && (line[i] == 'e' || line[i] == 'E') {
		isInt = false
		i++
		if i < len(line) && (line[i] == '+' || line[i] == '-') {
			i++
		}
		if i, ok = digitRun(line, i); !ok {
			return p.badNumber(i)
		}
	}
	p.pos = i
	return isInt, nil
}

// digitRun returns the end of the run of digits that starts at i of line; ok is false when
// there is none (a fraction or an exponent without digits).
func digitRun(line []byte, i int) (end int, ok bool) {
	end = i
	for end < len(line) && line[end] >= '0' && line[end] <= '9' {
		end++
	}
	return end, end > i
}

// badNumber fails the line at column i, where a number went wrong.
func (p *LineParser) badNumber(i int) (bool, error) {
	p.pos = i
	return false, p.fail(ReasonInvalidJSON, "invalid number")
}

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = 512

// skipValue consumes and validates any JSON value.
func (p *LineParser) skipValue(depth int) error {
	if depth > maxDepth {
		return p.fail(ReasonTooDeep, "nesting deeper than 512 levels")
	}
	p.skipSpace()
	switch c := p.peek(); {
	case c == '"':
		_, _, _, err := p.scanString()
		return err
	case c == '{' || c == '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		p.pos++
		p.skipSpace()
		if p.peek() == closing {
			p.pos++
			return nil
		}
		for {
			p.skipSpace()
			if c == '{' {
				if p.peek() != '"' {
					return p.fail(ReasonInvalidJSON, "expected a quoted key")
				}
				if _, _, _, err := p.scanString(); err != nil {
					return err
				}
				p.skipSpace()
				if p.peek() != ':' {
					return p.fail(ReasonInvalidJSON, "expected ':' after a key")
				}
				p.pos++
			}
			if err := p.skipValue(depth + 1); err != nil {
				return err
			}
			p.skipSpace()
			switch p.peek() {
			case ',':
				p.pos++
			case closing:
				p.pos++
				return nil
			default:
				return p.fail(ReasonInvalidJSON, "expected ',' or a closing bracket")
			}
		}
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		_, err := p.scanNumber()
		return err
	case c == 0 && p.pos >= len(p.line):
		return p.fail(ReasonInvalidJSON, "unexpected end of line")
	default:
		if c >= utf8.RuneSelf && !utf8.Valid(p.line[p.pos:]) {
			return p.fail(ReasonInvalidUTF8, "invalid UTF-8")
		}
		return p.fail(ReasonInvalidJSON, fmt.Sprintf("unexpected character %q", c))
	}
}
