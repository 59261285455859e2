package bronze

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestExactDecimalMatchesStrconv: wherever the fast path takes a number it gives
// strconv.ParseFloat's double bit for bit, and it takes the amounts the generator writes.
func TestExactDecimalMatchesStrconv(t *testing.T) {
	cases := []string{"0", "-0", "0.0", "-0.0", "21.96", "7.12", "-3", "0.1", "0.3", "1.005",
		"999999999999999", "9999999999999999", "123456789012345.6", "0.0000000000000000000001",
		"0.00000000000000000000001", "4503599627370497", "1e5", "1.5E-3", "12345.678901234"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		var b strings.Builder
		if r.IntN(4) == 0 {
			b.WriteByte('-')
		}
		n := 1 + r.IntN(18)
		point := r.IntN(n + 1)
		for k := range n {
			if k == point && k > 0 {
				b.WriteByte('.')
			}
			d := byte('0' + r.IntN(10))
			if k == 0 && n > 1 && point != 1 {
				d = byte('1' + r.IntN(9))
			}
			b.WriteByte(d)
		}
		cases = append(cases, b.String())
	}
	taken := 0
	for _, s := range cases {
		got, ok := exactDecimal([]byte(s))
		if !ok {
			continue
		}
		taken++
		want, err := strconv.ParseFloat(s, 64)
		if err != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%s: fast path %v (%x), strconv %v (%x, %v)", s, got, math.Float64bits(got), want, math.Float64bits(want), err)
		}
	}
	for _, s := range []string{"21.96", "-0", "1234.56"} {
		if _, ok := exactDecimal([]byte(s)); !ok {
			t.Errorf("%s: not taken by the fast path", s)
		}
	}
	for _, s := range []string{"1e5", "9999999999999999", "0.00000000000000000000001"} {
		if _, ok := exactDecimal([]byte(s)); ok {
			t.Errorf("%s: taken by the fast path, which cannot convert it exactly", s)
		}
	}
	if taken < len(cases)/4 {
		t.Errorf("fast path took %d of %d numbers", taken, len(cases))
	}
}

// TestLineParserKeyOrder: a line whose keys start as the last line's did is parsed as a line of
// its own: a key that only begins with an expected name, a name written with escapes, a name
// cut by the line's end and keys in another order give what the parser gives from scratch.
func TestLineParserKeyOrder(t *testing.T) {
	first := `{"event_id":"e1","event_type":"click","amount":12.5,"event_time":"2024-05-01T12:07:00Z"}`
	for _, line := range []string{
		first,
		`{"event_idx":"e2","event_type":"click"}`,
		`{"event_i":"e2","event_type":"click"}`,
		`{"event\u005fid":"e3","event_type":"view"}`,
		`{"event_type":"view","event_id":"e4"}`,
		`{"event_id`,
		`{"event_id"`,
		`{"event_id":`,
		`{"event_id" :"e5", "event_type" : "share"}`,
		`{"amount":1,"event_id":"e6"}`,
		`{"event_id":"e7","event_id":"e8"}`,
	} {
		fresh, _ := NewLineParser(testFields)
		warm, _ := NewLineParser(testFields)
		if err := warm.Parse([]byte(first)); err != nil {
			t.Fatal(err)
		}
		errFresh, errWarm := fresh.Parse([]byte(line)), warm.Parse([]byte(line))
		if (errFresh == nil) != (errWarm == nil) || errFresh != nil && errFresh.Error() != errWarm.Error() {
			t.Fatalf("%s: warm parser error %v, fresh %v", line, errWarm, errFresh)
		}
		if errFresh != nil {
			continue
		}
		if string(fresh.Rescued()) != string(warm.Rescued()) {
			t.Fatalf("%s: rescued %s, fresh %s", line, warm.Rescued(), fresh.Rescued())
		}
		for i, f := range testFields {
			a, b := fresh.Value(i), warm.Value(i)
			if a.Valid != b.Valid || a.Valid && (f.Kind == KindString && string(fresh.Str(i)) != string(warm.Str(i)) || a.Int != b.Int || a.Float != b.Float) {
				t.Fatalf("%s: %s: warm %+v %q, fresh %+v %q", line, f.Name, *b, warm.Str(i), *a, fresh.Str(i))
			}
		}
		checkAgainstOracle(t, warm, []byte(line))
	}
}
