package gold

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// ratOracle is the exact sum of xs (finite ones) as a big.Rat, with IEEE's special-value rule,
// computed without Exact: the independent oracle of the property tests.
type ratOracle struct {
	sum                 big.Rat
	nan, posInf, negInf bool
}

func (o *ratOracle) add(f float64) {
	switch {
	case math.IsNaN(f):
		o.nan = true
	case math.IsInf(f, 1):
		o.posInf = true
	case math.IsInf(f, -1):
		o.negInf = true
	default:
		var r big.Rat
		r.SetFloat64(f)
		o.sum.Add(&o.sum, &r)
	}
}

// result is the sum (n = 1) or the mean (n > 1) correctly rounded; big.Rat.Float64 rounds to
// nearest (ties to even) and gives ±Inf beyond the double range.
func (o *ratOracle) result(n int64) float64 {
	switch {
	case o.nan || o.posInf && o.negInf:
		return math.NaN()
	case o.posInf:
		return math.Inf(1)
	case o.negInf:
		return math.Inf(-1)
	}
	q := new(big.Rat).Quo(&o.sum, new(big.Rat).SetInt64(n))
	if q.Sign() == 0 {
		return 0 // +0 for an exact zero, as Spark's sum, which starts from 0.0, gives
	}
	f, _ := q.Float64() // a negative mean too small for a double is -0, as IEEE division gives
	return f
}

// randDouble draws from a mix meant to hit every path: the fast window, cents and small
// integers, random bit patterns (subnormals, huge values, the whole exponent range), values
// that cancel one another, zeros of either sign, and values at the edges of the fast window.
func randDouble(rng *rand.Rand, prev []float64) float64 {
	switch rng.IntN(10) {
	case 0:
		return float64(rng.IntN(20001)-10000) / 100 // cents: 82.73
	case 1:
		for {
			f := math.Float64frombits(rng.Uint64())
			if !math.IsNaN(f) && !math.IsInf(f, 0) {
				return f
			}
		}
	case 2:
		if len(prev) > 0 {
			return -prev[rng.IntN(len(prev))] // cancellation
		}
		return 0
	case 3:
		// Subnormals and tiny normals.
		return math.Float64frombits(rng.Uint64N(1<<53)) * float64(1-2*rng.IntN(2))
	case 4:
		// Near the fast window's edges: exponents -64..-60 and 75..80.
		e := []int{-64, -63, -62, -61, -60, 75, 76, 77, 78, 79, 80}[rng.IntN(11)]
		return math.Ldexp(1+rng.Float64(), e) * float64(1-2*rng.IntN(2))
	case 5:
		return []float64{0, math.Copysign(0, -1), math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, 1e308, -1e308}[rng.IntN(7)]
	case 6:
		return math.Ldexp(rng.Float64(), rng.IntN(2100)-1075) * float64(1-2*rng.IntN(2))
	}
	return rng.NormFloat64() * math.Pow(10, float64(rng.IntN(30)-15))
}

// sumTree sums xs the way a stream and merge-late might: the values shuffled, split into
// random parts each summed with Add, the parts merged with AddExact in a random tree, some
// parts through an encode/decode round trip (a state file or gold's exact column).
func sumTree(t *testing.T, rng *rand.Rand, xs []float64) Exact {
	t.Helper()
	ys := append([]float64(nil), xs...)
	rng.Shuffle(len(ys), func(i, j int) { ys[i], ys[j] = ys[j], ys[i] })
	var parts []Exact
	for len(ys) > 0 {
		n := 1 + rng.IntN(len(ys))
		var p Exact
		for _, y := range ys[:n] {
			p.Add(y)
		}
		ys = ys[n:]
		if rng.IntN(3) == 0 {
			enc := p.AppendBinary(nil)
			d, rest, err := DecodeExact(enc)
			if err != nil || len(rest) != 0 {
				t.Fatalf("decode %x: %v (rest %d)", enc, err, len(rest))
			}
			p = d
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return Exact{}
	}
	for len(parts) > 1 {
		i := rng.IntN(len(parts) - 1)
		a, b := parts[i], parts[i+1]
		if rng.IntN(2) == 0 {
			a, b = b, a
		}
		a = a.Clone()
		a.AddExact(&b)
		parts = append(append(parts[:i], a), parts[i+2:]...)
	}
	return parts[0]
}

func sameFloat(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
}

func TestExactAgainstBigRat(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 6))
	rounds := 3000
	if testing.Short() {
		rounds = 500
	}
	for round := range rounds {
		n := 1 + rng.IntN(40)
		var xs []float64
		var o ratOracle
		for range n {
			x := randDouble(rng, xs)
			if round%17 == 0 && rng.IntN(20) == 0 {
				x = []float64{math.NaN(), math.Inf(1), math.Inf(-1)}[rng.IntN(3)]
			}
			xs = append(xs, x)
			o.add(x)
		}
		wantSum, wantAvg := o.result(1), o.result(int64(n))
		var enc []byte
		for order := range 4 {
			x := sumTree(t, rng, xs)
			if got := x.Float64(); !sameFloat(got, wantSum) {
				t.Fatalf("round %d order %d: sum of %v = %v (%#x), want %v (%#x)", round, order, xs, got, math.Float64bits(got), wantSum, math.Float64bits(wantSum))
			}
			if got := x.Quo(int64(n)); !sameFloat(got, wantAvg) {
				t.Fatalf("round %d order %d: avg of %v = %v, want %v", round, order, xs, got, wantAvg)
			}
			e := x.AppendBinary(nil)
			if order > 0 && !bytes.Equal(e, enc) {
				t.Fatalf("round %d: encodings of one value differ by order: %x vs %x (%v)", round, e, enc, xs)
			}
			enc = e
		}
	}
}

// TestExactRounding pins the cases the random draws may miss: ties to even, the carry into
// the next binade, subnormal results, overflow, the 82.73.
func TestExactRounding(t *testing.T) {
	ulp1 := math.Nextafter(1, 2) - 1
	cases := []struct {
		name string
		xs   []float64
	}{
		{"tie to even down", []float64{1, ulp1 / 2}},
		{"tie to even up", []float64{1 + ulp1, ulp1 / 2}},
		{"above the tie", []float64{1, ulp1 / 2, math.SmallestNonzeroFloat64}},
		{"below the tie", []float64{1, ulp1 / 2, -math.SmallestNonzeroFloat64}},
		{"carry into the next binade", []float64{2 - ulp1, ulp1 / 2}},
		{"subnormal result", []float64{math.Ldexp(1, -1000), -math.Ldexp(1, -1000), 3 * math.SmallestNonzeroFloat64}},
		{"negative mean underflows", []float64{-math.SmallestNonzeroFloat64}},
		{"subnormal tie", []float64{math.Ldexp(1, -1022), -math.Ldexp(1, -1022) + math.SmallestNonzeroFloat64, math.Ldexp(1, -1080)}},
		{"overflow", []float64{math.MaxFloat64, math.MaxFloat64}},
		{"overflow undone", []float64{math.MaxFloat64, math.MaxFloat64, -math.MaxFloat64}},
		{"rounds up to overflow", []float64{math.MaxFloat64, math.Ldexp(1, 970)}},
		{"just below overflow", []float64{math.MaxFloat64, math.Ldexp(1, 969)}},
		{"cents", []float64{82.7, 0.01, 0.02, -0.01, 0.01}},
		{"catastrophic cancellation", []float64{1e20, 1, -1e20}},
		{"negative zeros", []float64{math.Copysign(0, -1), math.Copysign(0, -1)}},
		{"empty", nil},
		{"nan", []float64{1, math.NaN()}},
		{"inf minus inf", []float64{math.Inf(1), 5, math.Inf(-1)}},
		{"inf", []float64{math.Inf(1), -math.MaxFloat64}},
		{"-inf", []float64{math.Inf(-1), math.MaxFloat64, math.MaxFloat64}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var o ratOracle
			var x Exact
			for _, f := range c.xs {
				o.add(f)
				x.Add(f)
			}
			if got, want := x.Float64(), o.result(1); !sameFloat(got, want) {
				t.Fatalf("sum %v = %v (%#x), want %v (%#x)", c.xs, got, math.Float64bits(got), want, math.Float64bits(want))
			}
			for _, n := range []int64{1, 3, 7, 1 << 40} {
				if got, want := x.Quo(n), o.result(n); !sameFloat(got, want) {
					t.Fatalf("sum %v / %d = %v, want %v", c.xs, n, got, want)
				}
			}
			d, _, err := DecodeExact(x.AppendBinary(nil))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := d.Float64(), o.result(1); !sameFloat(got, want) {
				t.Fatalf("decoded sum = %v, want %v", got, want)
			}
		})
	}
}

// TestExactManyAdds adds one value many times, past the carries of every fast limb, and
// compares with the product computed by big.Rat.
func TestExactManyAdds(t *testing.T) {
	for _, f := range []float64{82.73, -0.1, math.Ldexp(1.5, 77), math.Ldexp(1.25, -62), 1e-300, 3e300} {
		var x Exact
		const n = 100000
		for range n {
			x.Add(f)
		}
		var r big.Rat
		r.SetFloat64(f)
		r.Mul(&r, new(big.Rat).SetInt64(n))
		want, _ := r.Float64()
		if got := x.Float64(); !sameFloat(got, want) {
			t.Errorf("%v·%d = %v, want %v", f, n, got, want)
		}
		if got := x.Quo(n); !sameFloat(got, f) {
			t.Errorf("avg of %d copies of %v = %v", n, f, got)
		}
	}
}

// TestExactMergeOverflowsFast merges decoded values that sit at the top of the fast window
// until their sum passes it: the overflow must go to the wide part, not wrap.
func TestExactMergeOverflowsFast(t *testing.T) {
	// Decode M·2^E with M·2^(E-exactFastLSB) just under 2^192, then add it to itself 2^70
	// times by doubling: past 2^255 in fast units.
	e76 := ExactOf(math.Ldexp(1, 76))
	x, _, err := DecodeExact(e76.AppendBinary(nil))
	if err != nil || x.wide != nil {
		t.Fatalf("2^76 should decode into fast: %v", err)
	}
	for range 70 {
		y := x.Clone()
		x.AddExact(&y)
	}
	if got, want := x.Float64(), math.Ldexp(1, 146); got != want {
		t.Fatalf("2^76·2^70 = %v, want %v", got, want)
	}
	if y, _, err := DecodeExact(x.AppendBinary(nil)); err != nil || y.Float64() != math.Ldexp(1, 146) {
		t.Fatalf("round trip: %v, %v", y.Float64(), err)
	}
}

func TestDecodeExactRejectsBadBytes(t *testing.T) {
	x1 := ExactOf(1)
	one := x1.AppendBinary(nil)
	for _, b := range [][]byte{
		nil,
		{0x10},
		{exactNeg | exactNaN},
		{0, 0},
		{0, 0, 1},             // a significand byte missing
		{0, 2, 0},             // zero with an exponent
		{0, 0, 1, 2},          // even significand
		{0, 0, 2, 0, 1},       // leading zero byte
		{0, 0xfe, 0x3f, 1, 1}, // exponent far below the least subnormal
		{0, 0x80, 0x11, 1, 1}, // 2^1088: beyond any sum of doubles
		one[:len(one)-1],
	} {
		if _, _, err := DecodeExact(b); err == nil {
			t.Errorf("DecodeExact(%x) accepted", b)
		}
	}
}

// BenchmarkExactAdd compares the hot path of an exact sum with a float64 sum over the same
// values (cents in the fast window).
func BenchmarkExactAdd(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	xs := make([]float64, 4096)
	for i := range xs {
		xs[i] = float64(rng.IntN(100000)-50000) / 100
	}
	b.Run("float64", func(b *testing.B) {
		var s float64
		for i := 0; b.Loop(); i++ {
			s += xs[i&4095]
		}
		_ = s
	})
	b.Run("exact", func(b *testing.B) {
		var x Exact
		for i := 0; b.Loop(); i++ {
			x.Add(xs[i&4095])
		}
		_ = x.Float64()
	})
}

// appendV1Value is an AggValue as state format version 1 wrote it, before sums were exact:
// function, flags, count, the float's bits, the int.
func appendV1Value(dst []byte, fn Func, n int64, f float64) []byte {
	dst = append(dst, byte(fn), 0)
	dst = binary.AppendVarint(dst, n)
	dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(f))
	return binary.AppendVarint(dst, 0)
}

// TestRestoreVersion1State: a snapshot written before sums were exact (format version 1, a
// float sum as its double only) restores, its sum taken as the exact value of that double, and
// the operator goes on summing exactly from there.
func TestRestoreVersion1State(t *testing.T) {
	spec, err := NewWindowSpec(10*minute, 10*minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := AggConfig{Window: spec, Mode: Append, NumKeys: 1, Aggs: []AggSpec{{Fn: Count, Column: -1}, {Fn: Sum, Column: 0}, {Fn: Avg, Column: 0}}}
	op := mustAgg(t, cfg)
	old := 0.1 + 0.2 // 0.30000000000000004, what float order left in the state
	b := append([]byte(snapshotMagic), 1)
	b = op.cfg.appendFingerprint(b)
	b = binary.AppendUvarint(b, 1)
	b = binary.AppendVarint(b, 0)
	b = binary.AppendVarint(b, 10*minute)
	key := []byte("k")
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = appendV1Value(b, Count, 2, 0)
	b = appendV1Value(b, Sum, 2, old)
	b = appendV1Value(b, Avg, 2, old)
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	restored, err := RestoreAggregation(cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	in := &Input{EventTime: []int64{minute}, Columns: []Column{{Float64: []float64{0.3}}}}
	in.Keys.Append(key)
	res, err := restored.ProcessBatch(in, 0, 20*minute/1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 {
		t.Fatalf("%d rows emitted, want 1", len(res.Rows))
	}
	var o ratOracle
	o.add(old)
	o.add(0.3)
	row := res.Rows[0]
	if got, want := row.Aggs[1].Result(&cfg.Aggs[1]).(float64), o.result(1); !sameFloat(got, want) {
		t.Errorf("sum %v, want %v", got, want)
	}
	if got, want := row.Aggs[2].Result(&cfg.Aggs[2]).(float64), o.result(3); !sameFloat(got, want) {
		t.Errorf("avg %v, want %v", got, want)
	}
	// The snapshot it writes now is version 2 and carries the exact sum.
	snap, err := restored.AppendSnapshot(nil)
	if err != nil {
		t.Fatal(err)
	}
	if snap[len(snapshotMagic)] != snapshotVersion {
		t.Errorf("snapshot version %d, want %d", snap[len(snapshotMagic)], snapshotVersion)
	}
}
