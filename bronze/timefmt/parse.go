package timefmt

import (
	"errors"
	"sync"
	"time"

	"github.com/medallion-lake/medallion/pq"
)

// errNoMatch is the error of a value a pattern does not read; the caller says which pattern.
var errNoMatch = errors.New("does not match the timestamp format")

var monthNames = [12]string{"january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"}

// zoneCache caches time.LoadLocation per zone id for a VV pattern: loading reads the zone
// database, far too slow to do per row. Bounded: only ids that load are kept, at most 1024.
type zoneCache struct {
	mu sync.Mutex
	m  map[string]*time.Location
}

func (z *zoneCache) load(id []byte) (*time.Location, bool) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if loc, ok := z.m[string(id)]; ok {
		return loc, true
	}
	if len(z.m) >= 1024 || string(id) == "Local" || len(id) == 0 {
		return nil, false
	}
	loc, err := time.LoadLocation(string(id))
	if err != nil {
		return nil, false
	}
	if z.m == nil {
		z.m = map[string]*time.Location{}
	}
	z.m[string(id)] = loc
	return loc, true
}

// parsePattern reads b with the compiled pattern: the whole of b must match (Spark 3 parses
// strictly), every field in range, the day valid for its month. Missing fields default as in
// Spark: 1970-01-01 00:00:00, UTC when the pattern has no offset.
func (p *Parser) parsePattern(b []byte) (int64, error) {
	var v [nFields]int
	v[fYear], v[fMonth], v[fDay] = 1970, 1, 1
	var frac, offset int64
	var loc *time.Location
	pos := 0
	for k := range p.elems {
		e := &p.elems[k]
		switch e.op {
		case opLit:
			if len(b)-pos < len(e.lit) || !equalFold(b[pos:pos+len(e.lit)], e.lit) {
				return 0, errNoMatch
			}
			pos += len(e.lit)
		case opNum, opYear2:
			end := pos
			for end < len(b) && b[end] >= '0' && b[end] <= '9' {
				end++
			}
			n := end - pos
			switch {
			case e.width > 0:
				if n < e.width {
					return 0, errNoMatch
				}
				n = e.width
			default:
				n -= e.reserve
				if n < e.min || n > 18 {
					return 0, errNoMatch
				}
			}
			x := 0
			for _, c := range b[pos : pos+n] {
				x = x*10 + int(c-'0')
			}
			if e.op == opYear2 {
				x += 2000
			}
			v[e.field] = x
			pos += n
		case opFrac:
			n := 0
			scale := int64(100000)
			for pos+n < len(b) && n < e.width && b[pos+n] >= '0' && b[pos+n] <= '9' {
				frac += int64(b[pos+n]-'0') * scale
				scale /= 10
				n++
			}
			if n == 0 {
				return 0, errNoMatch
			}
			pos += n
		case opMonth:
			m, n := matchMonth(b[pos:], e.width == 3)
			if m == 0 {
				return 0, errNoMatch
			}
			v[fMonth] = m
			pos += n
		case opAmPm:
			if len(b)-pos < 2 || (b[pos+1] != 'M' && b[pos+1] != 'm') {
				return 0, errNoMatch
			}
			switch b[pos] {
			case 'A', 'a':
				v[fAmPm] = 0
			case 'P', 'p':
				v[fAmPm] = 1
			default:
				return 0, errNoMatch
			}
			pos += 2
		case opOffset:
			off, n, ok := parseOffset(b[pos:], e)
			if !ok {
				return 0, errNoMatch
			}
			offset = off
			pos += n
		case opZoneID:
			end := pos
			for end < len(b) && zoneIDByte(b[end]) {
				end++
			}
			z, ok := p.zones.load(b[pos:end])
			if !ok {
				return 0, errNoMatch
			}
			loc = z
			pos = end
		}
	}
	if pos != len(b) {
		return 0, errNoMatch
	}
	return p.resolve(&v, frac, offset, loc)
}

// resolve checks the fields (Java's STRICT resolver, which Spark uses) and makes the instant.
func (p *Parser) resolve(v *[nFields]int, frac, offset int64, loc *time.Location) (int64, error) {
	year, month, day := v[fYear], v[fMonth], v[fDay]
	if year < 1 || year > 9999 || month < 1 || month > 12 || day < 1 || day > pq.DaysInMonth(year, month) {
		return 0, errNoMatch
	}
	hour := v[fHour]
	if p.hasH12 {
		h := v[fHour12]
		if h < 1 || h > 12 {
			return 0, errNoMatch
		}
		hour = h%12 + 12*v[fAmPm]
	} else if p.hasAmPm && v[fAmPm] == 1 {
		hour = 12 // Spark: "a" alone (no hour) means 12:00 for PM
	}
	if hour > 23 || v[fMinute] > 59 || v[fSecond] > 59 {
		return 0, errNoMatch
	}
	secs := pq.DaysFromCivil(year, month, day)*86400 + int64(hour*3600+v[fMinute]*60+v[fSecond]) - offset
	if loc != nil && !p.hasOffset {
		secs = time.Date(year, time.Month(month), day, hour, v[fMinute], v[fSecond], 0, loc).Unix()
	}
	us := secs*1_000_000 + frac
	if us < minMicros || us > maxMicros {
		return 0, errNoMatch
	}
	return us, nil
}

// parseOffset reads an offset of style e at the start of b: its seconds east of UTC and length.
func parseOffset(b []byte, e *tsElem) (int64, int, bool) {
	if len(b) >= len(e.zero) && equalFold(b[:len(e.zero)], e.zero) {
		return 0, len(e.zero), true
	}
	if len(b) < 3 || (b[0] != '+' && b[0] != '-') {
		return 0, 0, false
	}
	hh, ok := digits(b[1:3])
	if !ok {
		return 0, 0, false
	}
	n, mm := 3, 0
	rest := b[3:]
	if e.colon {
		if len(rest) >= 3 && rest[0] == ':' {
			if m, ok := digits(rest[1:3]); ok {
				mm, n = m, 6
			}
		}
	} else if len(rest) >= 2 {
		if m, ok := digits(rest[:2]); ok {
			mm, n = m, 5
		}
	}
	if e.needMin && n == 3 || hh > 18 || mm > 59 || hh == 18 && mm > 0 {
		return 0, 0, false
	}
	off := int64(hh*3600 + mm*60)
	if b[0] == '-' {
		off = -off
	}
	return off, n, true
}

// matchMonth reads an English month name (short or full, any case) at the start of b.
func matchMonth(b []byte, short bool) (int, int) {
	for i, name := range monthNames {
		if short {
			name = name[:3]
		}
		if len(b) >= len(name) && equalFold(b[:len(name)], name) {
			return i + 1, len(name)
		}
	}
	return 0, 0
}

func zoneIDByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '/' || c == '_' || c == '-' || c == '+'
}

// equalFold compares ASCII case-insensitively, as Spark's formatters parse (parseCaseInsensitive).
func equalFold(b []byte, s string) bool {
	for i := 0; i < len(s); i++ {
		x, y := b[i], s[i]
		if x >= 'A' && x <= 'Z' {
			x += 'a' - 'A'
		}
		if y >= 'A' && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
