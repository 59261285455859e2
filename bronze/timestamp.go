package bronze

import "github.com/medallion-lake/medallion/bronze/timefmt"

// ParseTimestampMicros parses the default event timestamp forms (timefmt.ParseTimestampMicros):
// RFC 3339 and 'YYYY-MM-DD HH:MM:SS[.ffffff]', into microseconds since the Unix epoch (UTC).
func ParseTimestampMicros(b []byte) (int64, error) { return timefmt.ParseTimestampMicros(b) }
