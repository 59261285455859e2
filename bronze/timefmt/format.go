package timefmt

import (
	"errors"
	"fmt"
	"strings"

	"github.com/medallion-lake/medallion/internal/dtpattern"
)

// ErrFormat is wrapped by every error New returns for a pattern or unit it refuses,
// so that config validation can tell a bad pattern from other failures.
var ErrFormat = errors.New("bad timestamp format")

// Epoch units of a timestamp column (config `unit:`), as Spark's timestamp_seconds,
// timestamp_millis and timestamp_micros read them (ns has no Spark function: it is floored to
// microseconds, as Spark floors the nanoseconds of an instant).
const (
	UnitSeconds = "s"
	UnitMillis  = "ms"
	UnitMicros  = "us"
	UnitNanos   = "ns"
)

// The instants a timestamp column holds: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z,
// the years the default forms accept (Spark's range is wider; see docs/config.md).
const (
	minMicros = -62135596800 * 1_000_000
	maxMicros = 253402300800*1_000_000 - 1
)

// Parser reads the values of one timestamp column: the default forms of
// ParseTimestampMicros, a Spark datetime pattern (config `format:`) or epoch numbers (config
// `unit:`). The pattern is compiled once, by New; parsing a value does no pattern work
// and allocates nothing. A nil *Parser is the default forms. Safe for concurrent use.
type Parser struct {
	format string
	unit   string
	elems  []tsElem
	// What the pattern has, looked up once: the resolver needs it per row.
	hasH12, hasAmPm, hasOffset bool
	zones                      *zoneCache // VV patterns only
}

// New compiles a column's format or unit (at most one of them set; both empty gives
// nil, the default forms). Errors wrap ErrFormat and name the offending pattern letter.
func New(format, unit string) (*Parser, error) {
	switch {
	case format != "" && unit != "":
		return nil, fmt.Errorf("%w: format and unit are exclusive", ErrFormat)
	case unit != "":
		switch unit {
		case UnitSeconds, UnitMillis, UnitMicros, UnitNanos:
			return &Parser{unit: unit}, nil
		}
		return nil, fmt.Errorf("%w: unit %q: expected s, ms, us or ns", ErrFormat, unit)
	case format != "":
		elems, err := compilePattern(format)
		if err != nil {
			return nil, err
		}
		p := &Parser{format: format, elems: elems}
		for _, e := range elems {
			switch {
			case e.op == opNum && e.field == fHour12:
				p.hasH12 = true
			case e.op == opAmPm:
				p.hasAmPm = true
			case e.op == opOffset:
				p.hasOffset = true
			case e.op == opZoneID:
				p.zones = &zoneCache{}
			}
		}
		return p, nil
	}
	return nil, nil
}

// Format is the Spark datetime pattern, "" when there is none.
func (p *Parser) Format() string {
	if p == nil {
		return ""
	}
	return p.format
}

// Unit is the epoch unit, "" when there is none.
func (p *Parser) Unit() string {
	if p == nil {
		return ""
	}
	return p.unit
}

// Expected says what the parser accepts, for reject details and errors.
func (p *Parser) Expected() string {
	switch {
	case p == nil:
		return "RFC 3339 (2024-05-01T12:07:00Z, optional fraction, offset Z, +HH:MM, +HHMM or +HH) or 'YYYY-MM-DD HH:MM:SS[.ffffff]' (UTC)"
	case p.unit != "":
		return "epoch " + map[string]string{UnitSeconds: "seconds", UnitMillis: "milliseconds", UnitMicros: "microseconds", UnitNanos: "nanoseconds"}[p.unit] + " (a number or a string of one)"
	}
	return "format " + p.format
}

// NumbersOK reports whether the column takes JSON numbers (an epoch unit).
func (p *Parser) NumbersOK() bool { return p != nil && p.unit != "" }

// Parse reads one value (the text of a string, or of a number for an epoch unit) into
// microseconds since the Unix epoch.
func (p *Parser) Parse(b []byte) (int64, error) {
	switch {
	case p == nil:
		return ParseTimestampMicros(b)
	case p.unit != "":
		return parseEpoch(b, p.unit)
	}
	return p.parsePattern(b)
}

// errBadEpoch is the error of a value that is not an epoch number in range.
var errBadEpoch = errors.New("not an epoch number in the timestamp range (years 0001-9999)")

// parseEpoch reads a decimal number (sign, digits; for seconds also a fraction and an exponent)
// as a count of unit since the epoch. Seconds beyond microseconds are truncated towards zero, as
// Spark's timestamp_seconds does; nanoseconds are floored to microseconds.
func parseEpoch(b []byte, unit string) (int64, error) {
	i, neg := 0, false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg, i = b[0] == '-', 1
	}
	// mant holds the significant digits (leading zeros skipped), exp10 the power of ten to
	// scale them by to get micros; digits that cannot matter past 19 only shift exp10.
	var mant [40]byte
	n, exp10, sawDigit := 0, 0, false
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		sawDigit = true
		if n == 0 && b[i] == '0' {
			continue
		}
		if n == len(mant) {
			return 0, errBadEpoch
		}
		mant[n] = b[i]
		n++
	}
	if unit == UnitSeconds && i < len(b) && b[i] == '.' {
		i++
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			sawDigit = true
			exp10--
			if n == 0 && b[i] == '0' {
				continue
			}
			if n == len(mant) { // more digits than can matter: drop them (truncation)
				exp10++
				continue
			}
			mant[n] = b[i]
			n++
		}
	}
	if !sawDigit {
		return 0, errBadEpoch
	}
	if unit == UnitSeconds && i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		eneg := false
		if i < len(b) && (b[i] == '-' || b[i] == '+') {
			eneg, i = b[i] == '-', i+1
		}
		e, start := 0, i
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if e = e*10 + int(b[i]-'0'); e >= 10000 {
				return 0, errBadEpoch // no sane epoch number needs such an exponent
			}
		}
		if i == start {
			return 0, errBadEpoch
		}
		if eneg {
			e = -e
		}
		exp10 += e
	}
	if i != len(b) {
		return 0, errBadEpoch
	}
	exp10 += map[string]int{UnitSeconds: 6, UnitMillis: 3, UnitMicros: 0, UnitNanos: -3}[unit]
	digits := mant[:n]
	dropped := false
	if exp10 < 0 {
		k := -exp10
		if k > len(digits) {
			k = len(digits)
		}
		for _, c := range digits[len(digits)-k:] {
			dropped = dropped || c != '0'
		}
		digits, exp10 = digits[:len(digits)-k], 0
	}
	var v int64
	for _, c := range digits {
		if v > (maxMicros-int64(c-'0'))/10 {
			return 0, errBadEpoch
		}
		v = v*10 + int64(c-'0')
	}
	for ; exp10 > 0 && v != 0; exp10-- {
		if v > maxMicros/10 {
			return 0, errBadEpoch
		}
		v *= 10
	}
	if neg {
		v = -v
		if dropped && unit == UnitNanos { // floor, not truncation, for nanoseconds
			v--
		}
	}
	if v < minMicros || v > maxMicros {
		return 0, errBadEpoch
	}
	return v, nil
}

// tsOp is what one element of a compiled pattern reads.
type tsOp uint8

const (
	opLit    tsOp = iota // lit, case-insensitively
	opNum                // a number into field: width digits (fixed) or min..19 of them
	opYear2              // two digits, a year in 2000-2099
	opFrac               // 1..width digits of a second fraction
	opMonth              // a month name: short (width 3) or full
	opAmPm               // AM or PM
	opOffset             // a zone offset (see offsetStyle)
	opZoneID             // a zone id (VV), resolved by time.LoadLocation
)

// Fields a pattern sets.
const (
	fYear = iota
	fMonth
	fDay
	fHour   // H: 0-23
	fHour12 // h: 1-12
	fMinute
	fSecond
	fAmPm
	nFields
)

type tsElem struct {
	op    tsOp
	field int
	// width: the digits of a fixed-width number (0: variable, at least min), the maximum of a
	// fraction, 3 for a short month name.
	width, min int
	// reserve is the digits the fixed-width numbers right after a variable-width one need:
	// it leaves them that many (Java's adjacent value parsing, which Spark uses).
	reserve int
	lit     string
	// Offsets: colon between hours and minutes; minutes mandatory; the text of a zero offset.
	colon, needMin bool
	zero           string
}

// compilePattern turns a Spark datetime pattern into elements. It accepts the subset of Spark's
// letters listed in docs/config.md and refuses every other letter, naming it.
func compilePattern(pat string) ([]tsElem, error) {
	var out []tsElem
	lit := func(s string) {
		if n := len(out); n > 0 && out[n-1].op == opLit {
			out[n-1].lit += s
			return
		}
		out = append(out, tsElem{op: opLit, lit: s})
	}
	seen := [nFields]bool{}
	for i := 0; i < len(pat); {
		c := pat[i]
		if c == '\'' {
			if i+1 < len(pat) && pat[i+1] == '\'' {
				lit("'")
				i += 2
				continue
			}
			text, end, ok := dtpattern.Quoted(pat, i)
			if !ok {
				return nil, fmt.Errorf("%w: pattern %q: unterminated quote", ErrFormat, pat)
			}
			if text != "" {
				lit(text)
			}
			i = end
			continue
		}
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			if strings.IndexByte("[]{}#", c) >= 0 {
				return nil, fmt.Errorf("%w: pattern %q: %q (optional sections and reserved characters) is not supported", ErrFormat, pat, c)
			}
			lit(string(c))
			i++
			continue
		}
		n := 1
		for i+n < len(pat) && pat[i+n] == c {
			n++
		}
		e, err := letterElem(pat, c, n)
		if err != nil {
			return nil, err
		}
		if e.op != opLit && e.op != opOffset && e.op != opZoneID {
			f := e.field
			if e.op == opFrac {
				f = -1
			}
			if f >= 0 {
				if seen[f] {
					return nil, fmt.Errorf("%w: pattern %q: letter %q appears twice", ErrFormat, pat, c)
				}
				seen[f] = true
			}
		}
		out = append(out, e)
		i += n
	}
	if seen[fHour] && (seen[fHour12] || seen[fAmPm]) {
		return nil, fmt.Errorf("%w: pattern %q: H (hour 0-23) cannot be combined with h or a", ErrFormat, pat)
	}
	// Adjacent value parsing: a variable-width number followed directly by fixed-width ones
	// leaves their digits to them ("yyyyMMdd" reads 20240501).
	for k := range out {
		if out[k].op != opNum || out[k].width != 0 {
			continue
		}
		for j := k + 1; j < len(out) && (out[j].op == opNum && out[j].width > 0 || out[j].op == opYear2); j++ {
			out[k].reserve += max(out[j].width, 2)
		}
	}
	return out, nil
}

// letterElem is the element of a run of n letters c.
func letterElem(pat string, c byte, n int) (tsElem, error) {
	bad := func(why string) (tsElem, error) {
		return tsElem{}, fmt.Errorf("%w: pattern %q: %s", ErrFormat, pat, why)
	}
	num := func(f int) (tsElem, error) {
		switch n {
		case 1:
			return tsElem{op: opNum, field: f, min: 1}, nil
		case 2:
			return tsElem{op: opNum, field: f, width: 2}, nil
		}
		return bad(fmt.Sprintf("%q: at most 2 letters", strings.Repeat(string(c), n)))
	}
	switch c {
	case 'y', 'u':
		switch {
		case n == 2:
			return tsElem{op: opYear2, field: fYear, width: 2}, nil
		case n > 6:
			return bad(fmt.Sprintf("%q: at most 6 letters", strings.Repeat(string(c), n)))
		case n >= 4:
			// Spark's yyyy..yyyyyy: exactly n digits unsigned (a longer year needs a sign,
			// and is outside 0001-9999 anyway).
			return tsElem{op: opNum, field: fYear, width: n}, nil
		}
		return tsElem{op: opNum, field: fYear, min: n}, nil
	case 'M', 'L':
		switch n {
		case 3:
			return tsElem{op: opMonth, field: fMonth, width: 3}, nil
		case 4:
			return tsElem{op: opMonth, field: fMonth}, nil
		}
		return num(fMonth)
	case 'd':
		return num(fDay)
	case 'H':
		return num(fHour)
	case 'h':
		return num(fHour12)
	case 'm':
		return num(fMinute)
	case 's':
		return num(fSecond)
	case 'S':
		if n > 9 {
			return bad("more than 9 S (fraction digits)")
		}
		return tsElem{op: opFrac, width: n}, nil
	case 'a':
		if n != 1 {
			return bad("'a' is one letter")
		}
		return tsElem{op: opAmPm, field: fAmPm}, nil
	case 'X', 'x', 'Z':
		return offsetElem(pat, c, n)
	case 'V':
		if n != 2 {
			return bad("zone id is VV")
		}
		return tsElem{op: opZoneID}, nil
	}
	return bad(fmt.Sprintf("unsupported pattern letter %q", c))
}

// offsetElem is the element of an offset letter run, as Java's DateTimeFormatter (which Spark
// uses) defines them: X +HHmm, XX +HHMM, XXX +HH:MM, each also Z for zero; x/xx/xxx the same
// with +00, +0000, +00:00 for zero; Z, ZZ, ZZZ +HHMM. Lower-case mm: minutes optional.
func offsetElem(pat string, c byte, n int) (tsElem, error) {
	e := tsElem{op: opOffset}
	switch {
	case n == 1:
		e.zero = "+00"
	case n == 2:
		e.needMin, e.zero = true, "+0000"
	case n == 3:
		e.needMin, e.colon, e.zero = true, true, "+00:00"
	default:
		return tsElem{}, fmt.Errorf("%w: pattern %q: %q is not supported (use X, XX, XXX, x, xx, xxx or Z)", ErrFormat, pat, strings.Repeat(string(c), n))
	}
	switch c {
	case 'X':
		e.zero = "Z"
	case 'Z':
		e.needMin, e.colon, e.zero = true, false, "+0000"
	}
	return e, nil
}
