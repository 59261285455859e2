package sqlexpr

import (
	"math/big"
	"strconv"

	"github.com/medallion-lake/medallion/pq"
)

// Decimal arithmetic of the SQL evaluator, on 128-bit unscaled values (Spark's decimals go to
// 38 digits). Values that fit 64 bits take int64 paths; the rest go through math/big.

// pow10Dec[k] is 10^k, k <= 38.
var pow10Dec = func() (p [39]pq.Decimal128) {
	v := big.NewInt(1)
	for k := range p {
		p[k], _ = pq.DecimalFromBigInt(v)
		v.Mul(v, big.NewInt(10))
	}
	return p
}()

// dec64 returns d as an int64 when it fits.
func dec64(d pq.Decimal128) (int64, bool) {
	lo := int64(d.Lo)
	return lo, d.Hi == lo>>63
}

// decFits reports whether |d| < 10^p (p <= 38).
func decFits(d pq.Decimal128, p int) bool {
	if p > 38 {
		return true
	}
	if d.Hi < 0 {
		d = d.Neg()
		if d.Hi < 0 { // the most negative value
			return false
		}
	}
	return d.Cmp(pow10Dec[p]) < 0
}

// decOf packs a big integer that fits precision p.
func decOf(v *big.Int, p int) (pq.Decimal128, bool) {
	d, ok := pq.DecimalFromBigInt(v)
	return d, ok && decFits(d, p)
}

// decRescale moves d from scale from to scale to (rounding half up when it drops digits) and
// checks the result against precision p.
func decRescale(d pq.Decimal128, from, to, p int) (pq.Decimal128, bool) {
	if to == from {
		return d, decFits(d, p)
	}
	if v, ok := dec64(d); ok && to > from && to-from <= 18 {
		if w, ok := mulCheck(v, pow10[to-from]); ok {
			r := pq.DecimalFromInt64(w)
			return r, decFits(r, p)
		}
	}
	b := d.BigInt()
	if to > from {
		b.Mul(b, pow10big(to-from))
	} else {
		b = quoRoundHalfUp(b, pow10big(from-to))
	}
	return decOf(b, p)
}

// quoRoundHalfUp is a/b rounded half away from zero (Java's ROUND_HALF_UP), b > 0 or < 0.
func quoRoundHalfUp(a, b *big.Int) *big.Int {
	q, r := new(big.Int).QuoRem(a, b, new(big.Int))
	r.Abs(r).Lsh(r, 1)
	if r.CmpAbs(b) >= 0 {
		if a.Sign()*b.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}

// decArith computes a (scale as) op b (scale bs) at result scale rs and precision rp; false
// when the result overflows rp (or the divisor is zero): Spark's NULL without ANSI mode.
func decArith(op string, a pq.Decimal128, as int, b pq.Decimal128, bs int, rs, rp int) (pq.Decimal128, bool) {
	av, aok := dec64(a)
	bv, bok := dec64(b)
	if aok && bok {
		switch op {
		case "+", "-", "%":
			s := max(as, bs)
			if s-as <= 18 && s-bs <= 18 {
				x, ok1 := mulCheck(av, pow10[s-as])
				y, ok2 := mulCheck(bv, pow10[s-bs])
				if ok1 && ok2 && s == rs {
					var v int64
					ok := true
					switch op {
					case "+":
						v, ok = addCheck(x, y)
					case "-":
						if y == -1<<63 {
							ok = false
						} else {
							v, ok = addCheck(x, -y)
						}
					case "%":
						if y == 0 {
							return pq.Decimal128{}, false
						}
						if y != -1 {
							v = x % y
						}
					}
					if ok {
						d := pq.DecimalFromInt64(v)
						return d, decFits(d, rp)
					}
				}
			}
		case "*":
			if as+bs == rs {
				if v, ok := mulCheck(av, bv); ok {
					d := pq.DecimalFromInt64(v)
					return d, decFits(d, rp)
				}
			}
		}
	}
	x, y := a.BigInt(), b.BigInt()
	switch op {
	case "+", "-", "%":
		s := max(as, bs)
		x.Mul(x, pow10big(s-as))
		y.Mul(y, pow10big(s-bs))
		switch op {
		case "+":
			x.Add(x, y)
		case "-":
			x.Sub(x, y)
		default:
			if y.Sign() == 0 {
				return pq.Decimal128{}, false
			}
			x.Rem(x, y) // truncated: the sign of the dividend, as Java's BigDecimal.remainder
		}
		if s != rs {
			return decRescale(packWide(x), s, rs, rp)
		}
		return decOf(x, rp)
	case "*":
		x.Mul(x, y)
		if shift := as + bs - rs; shift > 0 {
			x = quoRoundHalfUp(x, pow10big(shift))
		} else if shift < 0 {
			x.Mul(x, pow10big(-shift))
		}
		return decOf(x, rp)
	case "/":
		if y.Sign() == 0 {
			return pq.Decimal128{}, false
		}
		// a/10^as / (b/10^bs) at scale rs = a * 10^(rs-as+bs) / b
		if e := rs - as + bs; e >= 0 {
			x.Mul(x, pow10big(e))
		} else {
			y.Mul(y, pow10big(-e))
		}
		return decOf(quoRoundHalfUp(x, y), rp)
	}
	return pq.Decimal128{}, false
}

// packWide packs an intermediate value for decRescale; one too wide for 128 bits becomes a
// value decRescale's precision check refuses.
func packWide(v *big.Int) pq.Decimal128 {
	d, ok := pq.DecimalFromBigInt(v)
	if !ok {
		return pq.Decimal128{Hi: -1 << 63}
	}
	return d
}

// decToDouble is exact-then-rounded, like Java's BigDecimal.doubleValue.
func decToDouble(d pq.Decimal128, scale int) float64 {
	if v, ok := dec64(d); ok {
		return decimalToDouble(v, scale)
	}
	f, _ := strconv.ParseFloat(pq.FormatDecimal(d, scale), 64)
	return f
}
