package timefmt

import (
	"testing"
	"time"
)

func TestParseTimestampMicros(t *testing.T) {
	utc := func(s string) int64 {
		// The oracle is the standard library's parser, independent of ours.
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999-0700", "2006-01-02T15:04:05.999999999-07", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999"} {
			if tm, err := time.Parse(layout, s); err == nil {
				return tm.UnixMicro()
			}
		}
		t.Fatalf("oracle cannot parse %q", s)
		return 0
	}
	valid := []string{
		"2024-05-01T12:07:00Z",
		"2024-05-01T12:07:00.5Z",
		"2024-05-01T12:07:00.123456Z",
		"2024-05-01T12:07:00.123456789Z",
		"2024-05-01T12:07:00+02:00",
		"2024-05-01T12:07:00.25-07:30",
		"2024-05-01 12:07:00",
		"2024-05-01 12:07:00.000001",
		"2024-05-01T12:07:00",
		"1969-12-31T23:59:59.999999Z",
		"1900-02-28 00:00:00",
		"2000-02-29T00:00:00Z",
		"0001-01-01T00:00:00Z",
		"9999-12-31T23:59:59.999999Z",
		"1970-01-01T00:00:00Z",
		"2024-05-01T12:07:00+0200",
		"2024-05-01T12:07:00.5-0730",
		"2024-05-01T12:07:00+02",
		"2024-05-01T12:07:00-11",
	}
	for _, s := range valid {
		got, err := ParseTimestampMicros([]byte(s))
		if err != nil {
			t.Errorf("%q: %v", s, err)
			continue
		}
		if want := utc(s); got != want {
			t.Errorf("%q = %d, want %d", s, got, want)
		}
	}
	invalid := []string{
		"", "2024-05-01", "2024-05-01T12:07", "2024-13-01T00:00:00Z", "2023-02-29T00:00:00Z",
		"2024-05-01T24:00:00Z", "2024-05-01T12:60:00Z", "2024-05-01T12:07:60Z", "2024-05-01T12:07:00.Z",
		"2024-05-01T12:07:00+02:0", "2024-05-01T12:07:00+2", "2024-05-01T12:07:00+020", "2024-05-01T12:07:00 UTC", "2024/05/01 12:07:00", "0000-01-01T00:00:00Z",
		"2024-05-01T12:07:00.1234567890Z", "1714565220", "2024-05-01X12:07:00Z", "2024-05-01T12:07:00Zjunk",
	}
	for _, s := range invalid {
		if v, err := ParseTimestampMicros([]byte(s)); err == nil {
			t.Errorf("%q parsed as %d, want an error", s, v)
		}
	}
}

func FuzzParseTimestampMicros(f *testing.F) {
	for _, s := range []string{"2024-05-01T12:07:00Z", "2024-05-01 12:07:00.123456", "1969-12-31T23:59:59.999999-01:00", "9999-12-31T23:59:59Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTimestampMicros([]byte(s))
		if err != nil {
			return
		}
		// Whatever we accept, the standard library must read the same instant, after the one
		// normalisation we allow (a space or no offset means UTC).
		norm := []byte(s)
		if norm[10] == ' ' || norm[10] == 't' {
			norm[10] = 'T'
		}
		str := string(norm)
		// Offsets without colon (+HHMM, +HH) become RFC 3339's +HH:MM.
		if n := len(str); n >= 24 && (str[n-5] == '+' || str[n-5] == '-') {
			str = str[:n-2] + ":" + str[n-2:]
		} else if n >= 22 && (str[n-3] == '+' || str[n-3] == '-') {
			str += ":00"
		}
		if n := len(str); n == 19 || (n > 20 && str[19] == '.' && !hasZone(str)) {
			str += "Z"
		}
		tm, perr := time.Parse(time.RFC3339Nano, str)
		if perr != nil {
			if len(str) > 0 && (str[len(str)-1] == 'z') {
				return // lower-case z: we accept it, RFC 3339 allows it, Go does not
			}
			t.Fatalf("%q accepted (%d) but time.Parse(%q) fails: %v", s, got, str, perr)
		}
		if want := tm.UnixMicro(); want != got && tm.Nanosecond()%1000 == 0 {
			t.Fatalf("%q = %d, time.Parse says %d", s, got, want)
		}
	})
}

func hasZone(s string) bool {
	last := s[len(s)-1]
	return last == 'Z' || last == 'z' || (len(s) >= 6 && (s[len(s)-6] == '+' || s[len(s)-6] == '-'))
}

func BenchmarkParseTimestampMicros(b *testing.B) {
	in := []byte("2024-05-01T12:07:00.123456Z")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseTimestampMicros(in); err != nil {
			b.Fatal(err)
		}
	}
}
