package bronze

import "github.com/medallion-lake/medallion/bronze/timefmt"

// ParseTimestampMicros parses the default event timestamp forms (timefmt.ParseTimestampMicros):
// RFC 3339 and 'YYYY-MM-DD HH:MM:SS[.ffffff]', into microseconds since the Unix epoch (UTC).
func ParseTimestampMicros(b []byte) (int64, error) { return timefmt.ParseTimestampMicros(b) }

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
