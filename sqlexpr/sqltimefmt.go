package sqlexpr

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/medallion-lake/medallion/internal/dtpattern"
)

// A small subset of Spark's datetime patterns, for to_date, to_timestamp, unix_timestamp and
// from_unixtime: yyyy (four digits), yy (2000-2099), MM/M, dd/d, HH/H, mm/m, ss/s, S.. (a
// fraction of exactly that many digits), XXX/XX/X and Z (offsets), 'quoted text' and any other
// non-letter as itself. Any other letter is refused when the expression is bound. A value
// must match the whole pattern; one that does not is NULL, as in Spark without ANSI mode.

type dtField struct {
	letter byte // 0: literal
	count  int
	lit    string
}

const dtLetters = "yMdHmsSXZ"

func compileDatetimePattern(p string) ([]dtField, error) {
	var out []dtField
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '\'':
			text, end, ok := dtpattern.Quoted(p, i)
			if !ok {
				return nil, fmt.Errorf("unclosed quote in pattern %q", p)
			}
			if end == i+2 {
				text = "'" // '' is a quote
			}
			out = append(out, dtField{lit: text})
			i = end
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(p) && p[j] == c {
				j++
			}
			n := j - i
			ok := strings.IndexByte(dtLetters, c) >= 0
			switch c {
			case 'y':
				ok = n == 2 || n == 4
			case 'M', 'd', 'H', 'm', 's':
				ok = n <= 2
			case 'X':
				ok = n <= 3
			case 'Z':
				ok = n == 1
			}
			if !ok {
				return nil, fmt.Errorf("pattern letters %q are not supported by the engine (it supports yyyy, yy, MM, M, dd, d, HH, H, mm, m, ss, s, S..., X, XX, XXX, Z and 'text')", p[i:j])
			}
			out = append(out, dtField{letter: c, count: n})
			i = j
		default:
			out = append(out, dtField{lit: string(c)})
			i++
		}
	}
	return out, nil
}

// digits reads between lo and hi ASCII digits of s from i.
func digits(s string, i, lo, hi int) (int, int, bool) {
	j := i
	v := 0
	for j < len(s) && j-i < hi && s[j] >= '0' && s[j] <= '9' {
		v = v*10 + int(s[j]-'0')
		j++
	}
	return v, j, j-i >= lo
}

// parseDatetime reads s by the pattern as a UTC timestamp (microseconds).
func parseDatetime(fs []dtField, s string) (int64, bool) {
	year, month, day, hour, minute, sec, frac, off := 1970, 1, 1, 0, 0, 0, 0, 0
	i := 0
	var ok bool
	for _, f := range fs {
		if f.letter == 0 {
			if !strings.HasPrefix(s[i:], f.lit) {
				return 0, false
			}
			i += len(f.lit)
			continue
		}
		lo, hi := f.count, f.count
		if f.count == 1 {
			hi = 2
		}
		switch f.letter {
		case 'y':
			year, i, ok = digits(s, i, f.count, f.count)
			if f.count == 2 {
				year += 2000
			}
		case 'M':
			month, i, ok = digits(s, i, lo, hi)
		case 'd':
			day, i, ok = digits(s, i, lo, hi)
		case 'H':
			hour, i, ok = digits(s, i, lo, hi)
		case 'm':
			minute, i, ok = digits(s, i, lo, hi)
		case 's':
			sec, i, ok = digits(s, i, lo, hi)
		case 'S':
			frac, i, ok = digits(s, i, f.count, f.count)
			for n := f.count; n < 6; n++ {
				frac *= 10
			}
			for n := f.count; n > 6; n-- {
				frac /= 10
			}
		case 'X', 'Z':
			off, i, ok = parseOffset(s, i, f)
		}
		if !ok {
			return 0, false
		}
	}
	if i != len(s) || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || sec > 59 {
		return 0, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, 0, time.UTC)
	if t.Day() != day { // 31 April and the like do not roll over: Spark refuses them
		return 0, false
	}
	return (t.Unix()-int64(off))*usPerSec + int64(frac), true
}

// parseOffset reads a zone offset: X accepts Z or +HH[mm], XX Z or +HHmm, XXX Z or +HH:mm,
// Z +HHmm; the result is in seconds east of UTC.
func parseOffset(s string, i int, f dtField) (int, int, bool) {
	if f.letter == 'X' && i < len(s) && s[i] == 'Z' {
		return 0, i + 1, true
	}
	if i >= len(s) || s[i] != '+' && s[i] != '-' {
		return 0, i, false
	}
	sign := 1
	if s[i] == '-' {
		sign = -1
	}
	h, j, ok := digits(s, i+1, 2, 2)
	if !ok {
		return 0, i, false
	}
	m := 0
	switch {
	case f.letter == 'X' && f.count == 1:
		if mm, k, ok := digits(s, j, 2, 2); ok {
			m, j = mm, k
		}
	case f.letter == 'X' && f.count == 3:
		if j >= len(s) || s[j] != ':' {
			return 0, i, false
		}
		if m, j, ok = digits(s, j+1, 2, 2); !ok {
			return 0, i, false
		}
	default:
		if m, j, ok = digits(s, j, 2, 2); !ok {
			return 0, i, false
		}
	}
	if h > 18 || m > 59 {
		return 0, i, false
	}
	return sign * (h*3600 + m*60), j, true
}

// formatDatetime writes a UTC timestamp by the pattern (from_unixtime).
func formatDatetime(dst []byte, fs []dtField, us int64) []byte {
	t := time.UnixMicro(us).UTC()
	pad := func(v, n int) {
		s := strconv.Itoa(v)
		for k := len(s); k < n; k++ {
			dst = append(dst, '0')
		}
		dst = append(dst, s...)
	}
	for _, f := range fs {
		switch f.letter {
		case 0:
			dst = append(dst, f.lit...)
		case 'y':
			if f.count == 2 {
				pad(t.Year()%100, 2)
			} else {
				pad(t.Year(), 4)
			}
		case 'M':
			pad(int(t.Month()), f.count)
		case 'd':
			pad(t.Day(), f.count)
		case 'H':
			pad(t.Hour(), f.count)
		case 'm':
			pad(t.Minute(), f.count)
		case 's':
			pad(t.Second(), f.count)
		case 'S':
			v := fmt.Sprintf("%06d", t.Nanosecond()/1000)
			for len(v) < f.count {
				v += "0"
			}
			dst = append(dst, v[:f.count]...)
		case 'X':
			dst = append(dst, 'Z')
		case 'Z':
			dst = append(dst, "+0000"...)
		}
	}
	return dst
}

// defaultDatetimePattern is Spark's default for unix_timestamp and from_unixtime.
const defaultDatetimePattern = "yyyy-MM-dd HH:mm:ss"

func bindTimeParse(ca *callArgs) (enode, error) {
	name := ca.c.name
	if name == "unix_timestamp" && len(ca.args) == 0 {
		return nil, &SQLError{Pos: ca.c.at, Found: "unix_timestamp()", Expected: "unix_timestamp(a timestamp or string): without an argument it is the current time, which a replay would not reproduce"}
	}
	pattern := ""
	if len(ca.args) > 1 {
		p, null, err := ca.litStr(1, "datetime pattern (a string literal)")
		if err != nil {
			return nil, err
		}
		if null {
			return nullOf(timeParseType(name)), nil
		}
		pattern = p
	} else if name == "unix_timestamp" || name == "from_unixtime" {
		pattern = defaultDatetimePattern
	}
	var fs []dtField
	if pattern != "" {
		var err error
		if fs, err = compileDatetimePattern(pattern); err != nil {
			return nil, ca.errf(1, "a datetime pattern the engine supports: %v", err)
		}
	}
	if name == "from_unixtime" {
		a := ca.args[0]
		if k := a.typ().k; k != kInt && k != kLong && k != kNull && k != kString {
			return nil, ca.errf(0, "a bigint number of seconds, found %s", a.typ())
		}
		return strFn([]enode{castTo(a, sqlType{k: kLong})}, func(r int, v []*vec, dst []byte) ([]byte, bool) {
			us, ok := mulCheck(v[0].i[r], usPerSec)
			if !ok {
				return dst, false
			}
			return formatDatetime(dst, fs, us), true
		}), nil
	}
	if name == "to_date" && fs == nil {
		return ca.date(0) // Spark's to_date(x) is cast(x AS date)
	}
	var ts enode
	var err error
	if k := ca.args[0].typ().k; k == kString && fs != nil {
		ts = intFn(sqlType{k: kTimestamp}, []enode{ca.args[0]}, func(r int, v []*vec) (int64, bool) {
			return parseDatetime(fs, string(v[0].str(r)))
		})
	} else if ts, err = ca.timestamp(0); err != nil {
		return nil, err
	}
	switch name {
	case "to_date":
		return intFn(sqlType{k: kDate}, []enode{ts}, func(r int, v []*vec) (int64, bool) {
			return floorDiv(v[0].i[r], usPerDay), true
		}), nil
	case "unix_timestamp":
		return intFn(sqlType{k: kLong}, []enode{ts}, func(r int, v []*vec) (int64, bool) {
			return v[0].i[r] / usPerSec, true // Spark truncates here (unix_seconds floors)
		}), nil
	}
	return ts, nil
}

func timeParseType(name string) sqlType {
	switch name {
	case "to_date":
		return sqlType{k: kDate}
	case "unix_timestamp":
		return sqlType{k: kLong}
	case "from_unixtime":
		return sqlType{k: kString}
	}
	return sqlType{k: kTimestamp}
}
