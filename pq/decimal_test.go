package pq

import (
	"fmt"
	"math/big"
	"math/rand"
	"strings"
	"testing"
)

// oracleDecimal is ParseDecimal as it was, through big.Rat: the reference for exact results.
func oracleDecimal(s string, scale int) (Decimal128, bool) {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return Decimal128{}, false
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
	if !r.IsInt() {
		return Decimal128{}, false
	}
	return DecimalFromBigInt(r.Num())
}

func TestParseDecimalCases(t *testing.T) {
	for _, tc := range []struct {
		in    string
		scale int
		want  string // unscaled value; "" means an error
	}{
		{"0", 2, "0"},
		{"-0", 2, "0"},
		{"+1", 0, "1"},
		{"1.5", 2, "150"},
		{"-1.50", 1, "-15"},
		{".5", 1, "5"},
		{"5.", 0, "5"},
		{"-.5", 1, "-5"},
		{"1.e2", 0, "100"},
		{"1E+2", 0, "100"},
		{"1e-0", 0, "1"},
		{"12.5e-1", 2, "125"},
		{"0e99999999999", 2, ""}, // an absurd exponent is refused, even on zero
		{"0e999999", 2, "0"},
		{"1.25", 1, ""},
		{"1e", 0, ""},
		{".e2", 0, ""},
		{"", 0, ""},
		{"abc", 0, ""},
		{"1/2", 1, "5"},  // a fraction, as big.Rat always took it
		{"1_0", 0, "10"}, // underscores, likewise
		{"0x10", 0, "16"},
		{"99999999999999999999999999999999999999", 0, "99999999999999999999999999999999999999"},
		{"170141183460469231731687303715884105727", 0, "170141183460469231731687303715884105727"}, // 2^127-1
		{"170141183460469231731687303715884105728", 0, ""},                                        // 2^127
		{"-170141183460469231731687303715884105727", 0, "-170141183460469231731687303715884105727"},
		{"-170141183460469231731687303715884105728", 0, ""},
		{"1e38", 0, "100000000000000000000000000000000000000"},
		{"1e39", 0, ""},
		{"0.00000000000000000000000000000000000000000000000001e50", 0, "1"},
		{"1" + strings.Repeat("0", 1000) + "e-1000", 2, "100"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			d, err := ParseDecimal(tc.in, tc.scale)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("ParseDecimal(%q, %d) = %s, want an error", tc.in, tc.scale, d.BigInt())
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseDecimal(%q, %d): %v", tc.in, tc.scale, err)
			}
			if got := d.BigInt().String(); got != tc.want {
				t.Fatalf("ParseDecimal(%q, %d) = %s, want %s", tc.in, tc.scale, got, tc.want)
			}
		})
	}
}

// randomDecimalText builds texts of the plain form, often near the edges (many digits, zeros,
// exponents that shift digits across the point), and sometimes invalid.
func randomDecimalText(r *rand.Rand) string {
	var b strings.Builder
	switch r.Intn(3) {
	case 0:
		b.WriteByte('-')
	case 1:
		if r.Intn(4) == 0 {
			b.WriteByte('+')
		}
	}
	digits := func(n int) {
		lead := r.Intn(3) == 0
		for i := 0; i < n; i++ {
			if lead && r.Intn(2) == 0 || r.Intn(5) == 0 {
				b.WriteByte('0')
				continue
			}
			lead = false
			b.WriteByte(byte('0' + r.Intn(10)))
		}
	}
	digits(r.Intn(42))
	if r.Intn(2) == 0 {
		b.WriteByte('.')
		digits(r.Intn(42))
	}
	if r.Intn(3) == 0 {
		b.WriteByte("eE"[r.Intn(2)])
		if r.Intn(2) == 0 {
			b.WriteByte("+-"[r.Intn(2)])
		}
		b.WriteString(fmt.Sprint(r.Intn(60)))
	}
	return b.String()
}

// TestParseDecimalMatchesBigRat: the linear parser gives exactly what big.Rat gave, for every
// text both accept, and refuses what big.Rat refused.
func TestParseDecimalMatchesBigRat(t *testing.T) {
	r := rand.New(rand.NewSource(23))
	n := 200000
	if testing.Short() {
		n = 20000
	}
	valid := 0
	for i := 0; i < n; i++ {
		s := randomDecimalText(r)
		scale := r.Intn(39)
		want, wantOK := oracleDecimal(s, scale)
		got, err := ParseDecimal(s, scale)
		if (err == nil) != wantOK {
			t.Fatalf("ParseDecimal(%q, %d): err %v, big.Rat ok=%v", s, scale, err, wantOK)
		}
		if wantOK {
			valid++
			if got != want {
				t.Fatalf("ParseDecimal(%q, %d) = %s, big.Rat gives %s", s, scale, got.BigInt(), want.BigInt())
			}
		}
	}
	if valid < n/10 {
		t.Fatalf("only %d of %d random texts were valid: the generator misses the point", valid, n)
	}
}

// TestParseDecimalHugeRefused: a million-digit value is refused with a short message (it used
// to cost about 70 s through big.Rat and quote the whole value in its error).
// TestDecimalNeg checks Neg against big.Int negation at the carries between the two words
// and at the ends of the 128-bit range; -2^127, which has no negation, comes back unchanged.
func TestDecimalNeg(t *testing.T) {
	minD := Decimal128{Hi: -1 << 63}
	for _, d := range []Decimal128{
		{}, {Lo: 1}, {Hi: -1, Lo: ^uint64(0)}, {Lo: ^uint64(0)}, {Hi: 1}, {Hi: 1, Lo: 1},
		{Hi: -1}, {Hi: -1 << 62, Lo: 12345}, {Hi: 1<<63 - 1, Lo: ^uint64(0)}, minD,
	} {
		got := d.Neg()
		if d == minD {
			if got != minD {
				t.Errorf("%v.Neg() = %v, want itself", d, got)
			}
			continue
		}
		want, ok := DecimalFromBigInt(new(big.Int).Neg(d.BigInt()))
		if !ok || got != want {
			t.Errorf("%v (%s).Neg() = %v (%s), want %v", d, d.BigInt(), got, got.BigInt(), want)
		}
	}
}

func TestParseDecimalHugeRefused(t *testing.T) {
	for _, s := range []string{
		strings.Repeat("9", 1_000_000),
		"-" + strings.Repeat("9", 1_000_000) + ".5",
		"0." + strings.Repeat("0", 1_000_000) + "1",
		"1" + strings.Repeat("0", 1_000_000),
	} {
		_, err := ParseDecimal(s, 2)
		if err == nil {
			t.Fatalf("a %d-byte value was accepted", len(s))
		}
		if len(err.Error()) > 256 {
			t.Fatalf("error of %d bytes for a %d-byte value: it should name the problem, not quote the value", len(err.Error()), len(s))
		}
	}
}

func BenchmarkParseDecimalHuge(b *testing.B) {
	s := strings.Repeat("9", 100_000)
	b.SetBytes(int64(len(s)))
	for i := 0; i < b.N; i++ {
		if _, err := ParseDecimal(s, 2); err == nil {
			b.Fatal("accepted")
		}
	}
}

func BenchmarkParseDecimalHugeBigRat(b *testing.B) {
	s := strings.Repeat("9", 100_000)
	b.SetBytes(int64(len(s)))
	for i := 0; i < b.N; i++ {
		if _, ok := oracleDecimal(s, 2); ok {
			b.Fatal("accepted")
		}
	}
}

func BenchmarkParseDecimal(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := ParseDecimal("-12345678901234567890.12", 2); err != nil {
			b.Fatal(err)
		}
	}
}
