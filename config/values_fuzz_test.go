package config

import (
	"testing"
	"time"
)

// FuzzParseDuration: never a panic; an accepted duration prints as text that parses back to
// the same value, and a negative duration is never accepted silently as positive.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"10m", "1h30m", "7d", "1d12h", "0s", "500ms", "-5m", "", "d", "99999999999d", "1.5h", " 10m ", "1e3s", "2562047h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		back, err := ParseDuration(d.String())
		if err != nil {
			t.Fatalf("%q parsed to %v, whose text %q does not parse: %v", s, d.Duration, d.String(), err)
		}
		if back.Duration != d.Duration {
			t.Fatalf("%q: %v prints as %q, which parses to %v", s, d.Duration, d.String(), back.Duration)
		}
	})
}

// FuzzParseByteSize: never a panic; accepted sizes round-trip (the sign is Validate's business:
// it names the field).
func FuzzParseByteSize(f *testing.F) {
	for _, s := range []string{"1MiB", "128MiB", "64KB", "0", "1", "1.5GB", "-1", "9223372036854775807", "9999999999GiB", "MiB", "1 MiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseByteSize(s)
		if err != nil {
			return
		}
		back, err := ParseByteSize(b.String())
		if err != nil || back.Bytes != b.Bytes {
			t.Fatalf("%q = %d bytes prints as %q, which parses to %d (%v)", s, b.Bytes, b.String(), back.Bytes, err)
		}
	})
}

// FuzzParseSchedule: never a panic; an accepted schedule always has a next run after now.
func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{"@every 1m", "@every 1s", "0 * * * *", "*/5 * * * * *", "30 2 * * *", "@hourly", "@every 0s", "@every -1s", "0 0 31 2 *", "", "* * * * * * *", "60 * * * *", "TZ=Europe/Paris 0 3 * * *"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		sched, err := ParseSchedule(s)
		if err != nil {
			return
		}
		if next := sched.Next(now); !next.IsZero() && !next.After(now) {
			t.Fatalf("%q: next run %v is not after %v", s, next, now)
		}
	})
}

// FuzzParseTrigger and FuzzParseColumnType: never a panic; accepted values round-trip.
func FuzzParseTrigger(f *testing.F) {
	for _, s := range []string{"once", "available-now", "processing-time=30s", "processing-time=0s", "processing-time=", "processing-time=-1s", "ONCE", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tr, err := ParseTrigger(s)
		if err != nil {
			return
		}
		back, err := ParseTrigger(tr.String())
		if err != nil || back.String() != tr.String() {
			t.Fatalf("%q prints as %q, which parses to %q (%v)", s, tr.String(), back.String(), err)
		}
	})
}

func FuzzParseColumnType(f *testing.F) {
	for _, s := range []string{"string", "long", "decimal(10,2)", "decimal(38,38)", "decimal(39,0)", "decimal(-1,0)", "decimal(10)", "timestamp_ntz", "array<string>", "DOUBLE", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ct, err := ParseColumnType(s)
		if err != nil {
			return
		}
		back, err := ParseColumnType(ct.String())
		if err != nil || back.String() != ct.String() {
			t.Fatalf("%q prints as %q, which parses to %q (%v)", s, ct.String(), back.String(), err)
		}
	})
}
