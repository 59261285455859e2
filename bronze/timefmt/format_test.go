package timefmt

import (
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"
)

// at is the oracle of the pattern tests: the instant from the standard library's calendar.
func at(y int, mo time.Month, d, h, mi, s, us int, offMin int) int64 {
	return time.Date(y, mo, d, h, mi, s, us*1000, time.FixedZone("", offMin*60)).UnixMicro()
}

func TestTimeParserPatterns(t *testing.T) {
	cases := []struct {
		format string
		ok     map[string]int64
		bad    []string
	}{
		{"dd/MM/yyyy HH:mm:ss", map[string]int64{
			"01/05/2024 12:07:00": at(2024, 5, 1, 12, 7, 0, 0, 0),
			"29/02/2024 23:59:59": at(2024, 2, 29, 23, 59, 59, 0, 0),
		}, []string{"1/05/2024 12:07:00", "01/05/2024 12:07", "01/05/2024 12:07:00 ", "29/02/2023 00:00:00",
			"01/13/2024 00:00:00", "01/05/24 12:07:00", "01/05/2024T12:07:00", "", "01/05/20245 12:07:00"}},
		{"yyyy-MM-dd'T'HH:mm:ssZ", map[string]int64{
			"2024-05-01T12:07:00+0200": at(2024, 5, 1, 12, 7, 0, 0, 120),
			"2024-05-01t12:07:00-0000": at(2024, 5, 1, 12, 7, 0, 0, 0),
		}, []string{"2024-05-01T12:07:00+02:00", "2024-05-01T12:07:00+02", "2024-05-01T12:07:00Z"}},
		{"yyyy-MM-dd HH:mm:ss.SSSXXX", map[string]int64{
			"2024-05-01 12:07:00.1Z":        at(2024, 5, 1, 12, 7, 0, 100000, 0),
			"2024-05-01 12:07:00.123+05:30": at(2024, 5, 1, 12, 7, 0, 123000, 330),
			"2024-05-01 12:07:00.12z":       at(2024, 5, 1, 12, 7, 0, 120000, 0),
			"2024-05-01 12:07:00.999-11:00": at(2024, 5, 1, 12, 7, 0, 999000, -660),
			"2024-05-01 12:07:00.000+18:00": at(2024, 5, 1, 12, 7, 0, 0, 18*60),
		}, []string{"2024-05-01 12:07:00.1234Z", "2024-05-01 12:07:00Z", "2024-05-01 12:07:00.1+0530", "2024-05-01 12:07:00.1+19:00"}},
		{"yyyy-MM-dd HH:mm:ss.SSSSSSSSSX", map[string]int64{
			"2024-05-01 12:07:00.123456789Z": at(2024, 5, 1, 12, 7, 0, 123456, 0),
			"2024-05-01 12:07:00.5+02":       at(2024, 5, 1, 12, 7, 0, 500000, 120),
			"2024-05-01 12:07:00.5+0230":     at(2024, 5, 1, 12, 7, 0, 500000, 150),
			"1969-12-31 23:59:59.9999999-01": at(1969, 12, 31, 23, 59, 59, 999999, -60),
		}, []string{"2024-05-01 12:07:00.5+02:30"}},
		{"yyyyMMddHHmmss", map[string]int64{"20240501120700": at(2024, 5, 1, 12, 7, 0, 0, 0)},
			[]string{"2024050112070", "202405011207001"}},
		{"d/M/y H:m", map[string]int64{
			"1/5/2024 9:7":     at(2024, 5, 1, 9, 7, 0, 0, 0),
			"31/12/1999 23:59": at(1999, 12, 31, 23, 59, 0, 0, 0),
			"01/05/0999 09:07": at(999, 5, 1, 9, 7, 0, 0, 0),
		}, []string{"1/5/2024 24:00", "32/1/2024 0:0", "1/5/ 2024 9:7"}},
		{"MM/dd/yy hh:mm a", map[string]int64{
			"05/01/24 12:07 AM": at(2024, 5, 1, 0, 7, 0, 0, 0),
			"05/01/24 12:07 pm": at(2024, 5, 1, 12, 7, 0, 0, 0),
			"05/01/99 01:00 PM": at(2099, 5, 1, 13, 0, 0, 0, 0),
		}, []string{"05/01/24 13:07 PM", "05/01/24 00:07 AM", "05/01/24 12:07", "05/01/2024 12:07 AM"}},
		{"dd-MMM-yyyy", map[string]int64{"01-May-2024": at(2024, 5, 1, 0, 0, 0, 0, 0), "29-FEB-2024": at(2024, 2, 29, 0, 0, 0, 0, 0)},
			[]string{"01-Mai-2024", "01-May-24", "01-05-2024"}},
		{"MMMM d, yyyy", map[string]int64{"September 9, 2024": at(2024, 9, 9, 0, 0, 0, 0, 0)}, []string{"Sep 9, 2024"}},
		{"'at' HH 'o''clock' ''yy", map[string]int64{"at 07 o'clock '24": at(2024, 1, 1, 7, 0, 0, 0, 0)}, []string{"at 07 oclock '24"}},
		{"HH:mm", map[string]int64{"00:00": 0, "23:59": at(1970, 1, 1, 23, 59, 0, 0, 0)}, nil},
		{"yyyy-MM-dd HH:mm:ss xx", map[string]int64{"2024-05-01 12:07:00 +0000": at(2024, 5, 1, 12, 7, 0, 0, 0), "2024-05-01 12:07:00 -0130": at(2024, 5, 1, 12, 7, 0, 0, -90)},
			[]string{"2024-05-01 12:07:00 Z", "2024-05-01 12:07:00 +01"}},
	}
	for _, c := range cases {
		p, err := New(c.format, "")
		if err != nil {
			t.Fatalf("%q: %v", c.format, err)
		}
		for in, want := range c.ok {
			if got, err := p.Parse([]byte(in)); err != nil || got != want {
				t.Errorf("%q on %q = %d, %v; want %d", c.format, in, got, err, want)
			}
		}
		for _, in := range c.bad {
			if got, err := p.Parse([]byte(in)); err == nil {
				t.Errorf("%q on %q = %d, want an error", c.format, in, got)
			}
		}
	}
}

func TestTimeParserZoneID(t *testing.T) {
	p, err := New("yyyy-MM-dd HH:mm VV", "")
	if err != nil {
		t.Fatal(err)
	}
	loc, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skipf("no zone database here: %v", err)
	}
	got, err := p.Parse([]byte("2024-07-01 12:00 Europe/Paris"))
	if want := time.Date(2024, 7, 1, 12, 0, 0, 0, loc).UnixMicro(); err != nil || got != want {
		t.Errorf("got %d, %v; want %d", got, err, want)
	}
	for _, bad := range []string{"2024-07-01 12:00 Mars/Olympus", "2024-07-01 12:00 Local", "2024-07-01 12:00 "} {
		if _, err := p.Parse([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestTimeParserRefuses(t *testing.T) {
	for format, letter := range map[string]string{
		"yyyy-MM-dd HH:mm:ss.SSS z": "'z'", "YYYY-MM-dd": "'Y'", "yyyy-ww": "'w'", "EEE, dd MMM yyyy": "'E'",
		"yyyy-MM-dd'T'HH:mm:ss[.SSS]": "'['", "yyyy-MM-dd HHH": `"HHH"`, "yyyy-MM-dd 'T": "unterminated",
		"yyyyyyy": `"yyyyyyy"`, "HH:mm a": "cannot be combined", "yyyy-MM-dd yyyy": "twice", "XXXX": `"XXXX"`,
		"SSSSSSSSSS": "9 S", "G yyyy": "'G'", "k:mm": "'k'", "D": "'D'",
	} {
		_, err := New(format, "")
		if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), letter) {
			t.Errorf("%q: %v, want an ErrFormat naming %s", format, err, letter)
		}
	}
	if _, err := New("yyyy", "ms"); !errors.Is(err, ErrFormat) {
		t.Errorf("format and unit: %v", err)
	}
	if _, err := New("", "sec"); !errors.Is(err, ErrFormat) {
		t.Errorf("unit sec: %v", err)
	}
	if p, err := New("", ""); p != nil || err != nil {
		t.Errorf("no format, no unit: %v, %v", p, err)
	}
}

func TestTimeParserUnits(t *testing.T) {
	cases := []struct {
		unit string
		ok   map[string]int64
		bad  []string
	}{
		{UnitSeconds, map[string]int64{
			"1714565220": 1714565220_000000, "-1": -1_000000, "0": 0, "1.5": 1_500000, "-1.5": -1_500000,
			"1.0000005": 1_000000, "-1.0000005": -1_000000, "1.7145652e9": 1714565200_000000, "15E-1": 1_500000,
			"+2": 2_000000, "0.000001": 1, "253402300799.999999": maxMicros, "-62135596800": minMicros,
			"000000000000000000000000000000000001": 1_000000,
		}, []string{"", "-", ".", ".5x", "1e", "1e+", "253402300800", "-62135596801", "9223372036854775807", "1 ", "0x10", "1e99999999", "NaN"}},
		{UnitMillis, map[string]int64{"1714565220123": 1714565220123_000, "-1": -1000, "0": 0},
			[]string{"1.5", "1e3", "253402300800000", "abc"}},
		{UnitMicros, map[string]int64{"1714565220123456": 1714565220123456, "-7": -7},
			[]string{"1.0", "253402300800000000"}},
		{UnitNanos, map[string]int64{"1714565220123456789": 1714565220123456, "-1": -1, "-1000": -1, "-1001": -2, "999": 0},
			[]string{"253402300800000000000", "1.5"}},
	}
	for _, c := range cases {
		p, err := New("", c.unit)
		if err != nil || !p.NumbersOK() {
			t.Fatalf("%s: %v", c.unit, err)
		}
		for in, want := range c.ok {
			if got, err := p.Parse([]byte(in)); err != nil || got != want {
				t.Errorf("%s %q = %d, %v; want %d", c.unit, in, got, err, want)
			}
		}
		for _, in := range c.bad {
			if got, err := p.Parse([]byte(in)); err == nil {
				t.Errorf("%s %q = %d, want an error", c.unit, in, got)
			}
		}
	}
}

// FuzzTimePattern: compiling any pattern either fails with ErrFormat or gives a parser that
// never panics on any value and only returns instants in range.
func FuzzTimePattern(f *testing.F) {
	for _, s := range []string{"yyyy-MM-dd HH:mm:ss", "dd/MM/yyyy", "yyyyMMdd'T'HHmmss.SSSX", "hh:mm a", "'quote''d' VV", "MMM d yy xx"} {
		f.Add(s, "2024-05-01 12:07:00")
	}
	f.Fuzz(func(t *testing.T, format, value string) {
		p, err := New(format, "")
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("%q: error %v does not wrap ErrFormat", format, err)
			}
			return
		}
		if p == nil {
			return
		}
		if us, err := p.Parse([]byte(value)); err == nil && (us < minMicros || us > maxMicros) {
			t.Fatalf("%q on %q = %d, out of range", format, value, us)
		}
	})
}

// FuzzTimeValue: what the pattern parser accepts, Go's time.Parse with the equivalent layout
// reads as the same instant (an independent implementation of the same fixed-width pattern).
func FuzzTimeValue(f *testing.F) {
	p, err := New("dd/MM/yyyy HH:mm:ss.SSSSSSXXX", "")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"01/05/2024 12:07:00.5Z", "29/02/2024 23:59:59.123456+05:30", "01/01/0001 00:00:00.0-01:00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := p.Parse([]byte(s))
		if err != nil {
			return
		}
		tm, perr := time.Parse("02/01/2006 15:04:05.999999Z07:00", s)
		if perr != nil {
			if strings.HasSuffix(s, "z") || strings.Contains(s, "T") {
				return // lower-case z, t: Spark parses case-insensitively, Go does not
			}
			t.Fatalf("%q accepted (%d), time.Parse: %v", s, got, perr)
		}
		if want := tm.UnixMicro(); want != got {
			t.Fatalf("%q = %d, time.Parse says %d", s, got, want)
		}
	})
}

// FuzzEpochSeconds: what unit s accepts equals the exact rational value times 10^6, truncated
// towards zero (big.Rat is the oracle).
func FuzzEpochSeconds(f *testing.F) {
	for _, s := range []string{"1714565220", "-1.5", "1.7145652e9", "0.0000005", "-253402300799.9999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseEpoch([]byte(s), UnitSeconds)
		if err != nil {
			return
		}
		r, ok := new(big.Rat).SetString(strings.TrimPrefix(s, "+"))
		if !ok {
			t.Fatalf("%q accepted (%d), big.Rat cannot read it", s, got)
		}
		r.Mul(r, big.NewRat(1_000_000, 1))
		want := new(big.Int).Quo(r.Num(), r.Denom()) // Quo truncates towards zero
		if !want.IsInt64() || want.Int64() != got {
			t.Fatalf("%q = %d, want %s", s, got, want)
		}
	})
}

func BenchmarkTimeParser(b *testing.B) {
	p, err := New("dd/MM/yyyy HH:mm:ss.SSSXXX", "")
	if err != nil {
		b.Fatal(err)
	}
	in := []byte("01/05/2024 12:07:00.123+02:00")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Parse(in); err != nil {
			b.Fatal(err)
		}
	}
}
