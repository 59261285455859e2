package timefmt

import (
	"errors"

	"github.com/medallion-lake/medallion/pq"
)

// errBadTimestamp is returned for any text that is not one of the accepted timestamp forms.
var errBadTimestamp = errors.New("not a timestamp: want RFC 3339 (2024-05-01T12:07:00Z, optional fraction, offset Z, +HH:MM, +HHMM or +HH) or 'YYYY-MM-DD HH:MM:SS[.ffffff]' (UTC)")

// ParseTimestampMicros parses the event timestamp forms of DESIGN.md §8 into microseconds since
// the Unix epoch (UTC):
//
//	2024-05-01T12:07:00Z            RFC 3339, with or without fraction, with Z or ±HH:MM
//	2024-05-01T12:07:00.123456+02:00
//	2024-05-01T12:07:00+0200        ISO 8601 offsets without colon: ±HHMM or ±HH
//	2024-05-01 12:07:00[.ffffff]    read as UTC; a 'T' separator without offset is UTC too
//
// Fractions beyond microseconds are truncated (towards the past, as Spark does). Years 0001-9999.
// It allocates nothing: it is on the ingest hot path.
func ParseTimestampMicros(b []byte) (int64, error) {
	// Fixed prefix: YYYY-MM-DD?HH:MM:SS (19 bytes).
	if len(b) < 19 || b[4] != '-' || b[7] != '-' || (b[10] != 'T' && b[10] != 't' && b[10] != ' ') || b[13] != ':' || b[16] != ':' {
		return 0, errBadTimestamp
	}
	year, ok1 := digits(b[0:4])
	month, ok2 := digits(b[5:7])
	day, ok3 := digits(b[8:10])
	hour, ok4 := digits(b[11:13])
	minute, ok5 := digits(b[14:16])
	second, ok6 := digits(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return 0, errBadTimestamp
	}
	if year < 1 || month < 1 || month > 12 || day < 1 || day > pq.DaysInMonth(year, month) || hour > 23 || minute > 59 || second > 59 {
		return 0, errBadTimestamp
	}
	hourSecs := pq.DaysFromCivil(year, month, day)*86400 + int64(hour*3600)
	return finishTimestamp(b[19:], hourSecs+int64(minute*60+second))
}

// finishTimestamp reads what follows the seconds of a timestamp (rest: an optional fraction,
// then an optional offset) whose wall-clock time is secs seconds since the epoch.
func finishTimestamp(rest []byte, secs int64) (int64, error) {
	var frac int64
	if len(rest) > 0 && rest[0] == '.' {
		n := 1
		scale := int64(100000)
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			if n <= 6 {
				frac += int64(rest[n]-'0') * scale
				scale /= 10
			}
			n++
		}
		if n == 1 || n > 10 { // "." alone, or more than nanoseconds
			return 0, errBadTimestamp
		}
		rest = rest[n:]
	}
	var offsetSec int64
	switch {
	case len(rest) == 0:
	case len(rest) == 1 && (rest[0] == 'Z' || rest[0] == 'z'):
	case (len(rest) == 6 && rest[3] == ':' || len(rest) == 5 || len(rest) == 3) && (rest[0] == '+' || rest[0] == '-'):
		// +HH:MM, +HHMM or +HH (ISO 8601's basic and hour-only offsets).
		oh, okh := digits(rest[1:3])
		om, okm := 0, true
		if len(rest) > 3 {
			om, okm = digits(rest[len(rest)-2:])
		}
		if !okh || !okm || oh > 23 || om > 59 {
			return 0, errBadTimestamp
		}
		offsetSec = int64(oh*3600 + om*60)
		if rest[0] == '-' {
			offsetSec = -offsetSec
		}
	default:
		return 0, errBadTimestamp
	}
	return (secs-offsetSec)*1_000_000 + frac, nil
}

// HourCache parses timestamps as ParseTimestampMicros does, remembering the date and hour of
// the last one it parsed: a landing object's event times share them line after line, and a
// timestamp whose first 13 bytes (YYYY-MM-DDTHH) are the last one's needs only its minutes,
// seconds, fraction and offset read. The zero value is ready; not safe for concurrent use.
type HourCache struct {
	key  [13]byte
	secs int64 // the key's date and hour in seconds since the epoch (wall clock)
	ok   bool
}

// ParseTimestampMicros is the package's ParseTimestampMicros through the cache.
func (c *HourCache) ParseTimestampMicros(b []byte) (int64, error) {
	if !c.ok || len(b) < 19 || string(b[:13]) != string(c.key[:]) {
		us, err := ParseTimestampMicros(b)
		if err == nil {
			// Valid, so b[:13] is a valid date and hour: the seconds to the hour are
			// the value less its minutes, seconds, fraction and offset, computed again.
			year, _ := digits(b[0:4])
			month, _ := digits(b[5:7])
			day, _ := digits(b[8:10])
			hour, _ := digits(b[11:13])
			copy(c.key[:], b[:13])
			c.secs = pq.DaysFromCivil(year, month, day)*86400 + int64(hour*3600)
			c.ok = true
		}
		return us, err
	}
	if b[13] != ':' || b[16] != ':' {
		return 0, errBadTimestamp
	}
	minute, ok1 := digits(b[14:16])
	second, ok2 := digits(b[17:19])
	if !ok1 || !ok2 || minute > 59 || second > 59 {
		return 0, errBadTimestamp
	}
	return finishTimestamp(b[19:], c.secs+int64(minute*60+second))
}

// ParseDate parses a date 'YYYY-MM-DD' (years 0001-9999) into days since the Unix epoch; ok is
// false for anything else. It allocates nothing, like ParseTimestampMicros.
func ParseDate(b []byte) (days int64, ok bool) {
	if len(b) != 10 || b[4] != '-' || b[7] != '-' {
		return 0, false
	}
	y, ok1 := digits(b[0:4])
	m, ok2 := digits(b[5:7])
	d, ok3 := digits(b[8:10])
	if !(ok1 && ok2 && ok3) || y < 1 || m < 1 || m > 12 || d < 1 || d > pq.DaysInMonth(y, m) {
		return 0, false
	}
	return pq.DaysFromCivil(y, m, d), true
}

func digits(b []byte) (int, bool) {
	v := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}
