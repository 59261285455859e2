package sqlexpr

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/medallion-lake/medallion/pq"
)

// Math functions: round, bround, floor, ceil, pow, sqrt, exp, the logarithms, pmod and
// signum, typed as Spark types them (round keeps an integral or double type; floor and ceil
// of a double are bigints; the rest are doubles) with its non-ANSI overflow rules (integers
// wrap, a decimal that does not fit is NULL).

type roundMode int

const (
	halfUp   roundMode = iota // round: ties away from zero
	halfEven                  // bround: ties to the even neighbour
	toFloor
	toCeil
)

// roundModeOf is the rounding mode of each function that rounds to a scale or an integer.
var roundModeOf = map[string]roundMode{"round": halfUp, "bround": halfEven, "floor": toFloor, "ceil": toCeil}

// roundBig rounds v/10^drop to an integer by mode (drop > 0).
func roundBig(v *big.Int, drop int, mode roundMode) *big.Int {
	d := pow10big(drop)
	q, r := new(big.Int).QuoRem(v, d, new(big.Int)) // truncated toward zero
	if r.Sign() == 0 {
		return q
	}
	neg := v.Sign() < 0
	up := false // away from zero
	switch mode {
	case toFloor:
		up = neg
	case toCeil:
		up = !neg
	default:
		twice := new(big.Int).Lsh(new(big.Int).Abs(r), 1)
		c := twice.Cmp(d)
		up = c > 0 || c == 0 && (mode == halfUp || q.Bit(0) == 1)
	}
	if up {
		if neg {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}

// roundToScale rounds v (scale s) to scale to by mode and returns it at scale out (out >= to
// when to >= 0; out 0 when to < 0).
func roundToScale(v *big.Int, s, to, out int, mode roundMode) *big.Int {
	if to >= s {
		return new(big.Int).Mul(v, pow10big(out-s))
	}
	q := roundBig(v, s-to, mode)
	if to < 0 {
		return q.Mul(q, pow10big(-to))
	}
	return q.Mul(q, pow10big(out-to))
}

// roundDec64 is roundToScale for a value that fits 64 bits and a drop of at most 18 digits,
// without big integers; ok is false outside that (the caller takes the exact path).
func roundDec64(d pq.Decimal128, s, to int, t sqlType, mode roundMode) (pq.Decimal128, bool) {
	v, ok := dec64(d)
	if !ok || to >= s || s-to > 18 || t.s > to && t.s-to > 18 {
		return pq.Decimal128{}, false
	}
	div := pow10[s-to]
	q, rem := v/div, v%div
	if rem != 0 {
		twice := rem * 2 // |rem| < 10^18, so twice fits
		if twice < 0 {
			twice = -twice
		}
		var up bool
		switch mode {
		case toFloor:
			up = v < 0
		case toCeil:
			up = v > 0
		default:
			up = twice > div || twice == div && (mode == halfUp || q%2 != 0)
		}
		if up {
			if v < 0 {
				q--
			} else {
				q++
			}
		}
	}
	mul := int64(1)
	switch {
	case to < 0:
		mul = pow10[-to]
	case t.s > to:
		mul = pow10[t.s-to]
	}
	w, ok := mulCheck(q, mul)
	if !ok {
		return pq.Decimal128{}, false
	}
	return pq.DecimalFromInt64(w), true
}

// wrapBits is v's low bits as a signed integer of that width (Java's intValue/longValue).
func wrapBits(v *big.Int, bits uint) int64 {
	m := new(big.Int).Lsh(big.NewInt(1), bits)
	w := new(big.Int).Mod(v, m)
	if w.Bit(int(bits)-1) == 1 {
		w.Sub(w, m)
	}
	return w.Int64()
}

// roundDouble is Spark's round of a double: the decimal Java prints for it
// (Double.toString), rounded to scale digits, read back as a double.
func roundDouble(f float64, scale int64, mode roundMode) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return f
	}
	v, s := javaDecimal(f)
	if int64(s) <= scale {
		return f
	}
	if scale < -400 {
		return 0
	}
	q := roundToScale(v, s, int(scale), max(int(scale), 0), mode)
	txt := q.String()
	if scale > 0 {
		txt += "e-" + strconv.FormatInt(scale, 10)
	}
	r, _ := strconv.ParseFloat(txt, 64) // correctly rounded, as Java's BigDecimal.doubleValue
	return r
}

// javaDecimal is the decimal Java's Double.toString prints for f, as unscaled digits and
// a scale.
func javaDecimal(f float64) (*big.Int, int) {
	s := pq.JavaDouble(f, 64)
	mant, exp := s, 0
	if k := strings.IndexAny(s, "eE"); k >= 0 {
		mant = s[:k]
		e, _ := new(big.Int).SetString(s[k+1:], 10)
		exp = int(e.Int64())
	}
	whole, frac, _ := strings.Cut(mant, ".")
	v, _ := new(big.Int).SetString(whole+frac, 10)
	return v, len(frac) - exp
}

// javaPow is Java's Math.pow where it differs from Go's math.Pow: a NaN exponent gives NaN
// (Go: pow(1, NaN) = 1), and ±1 to an infinite power is NaN (Go: 1).
func javaPow(x, y float64) float64 {
	switch {
	case math.IsNaN(y):
		return math.NaN()
	case math.IsInf(y, 0) && (x == 1 || x == -1):
		return math.NaN()
	}
	return math.Pow(x, y)
}

// doubleToLong is Java's (long) of a double: NaN is 0, out-of-range values saturate.
func doubleToLong(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

func bindMathCall(ca *callArgs) (enode, bool, error) {
	name := ca.c.name
	switch name {
	case "abs":
		a := ca.args[0]
		switch {
		case a.typ().k == kString, a.typ().k == kNull:
			a = castTo(a, sqlType{k: kDouble})
		case !a.typ().numeric() && a.typ().k != kInterval:
			return nil, true, ca.errf(0, "a numeric argument, found %s", a.typ())
		}
		return &signNode{unaryNode: unaryNode{x: a}, abs: true}, true, nil
	case "round", "bround":
		e, err := bindRound(ca, roundModeOf[name])
		return e, true, err
	case "floor", "ceil":
		e, err := bindFloorCeil(ca, roundModeOf[name])
		return e, true, err
	case "mod", "pmod":
		e, err := bindMod(ca)
		return e, true, err
	case "pow", "log":
		if name == "log" && len(ca.args) == 1 {
			break
		}
		x, err := ca.double(0)
		if err != nil {
			return nil, true, err
		}
		y, err := ca.double(1)
		if err != nil {
			return nil, true, err
		}
		return floatFn([]enode{x, y}, func(r int, v []*vec) (float64, bool) {
			a, b := v[0].f[r], v[1].f[r]
			if name == "pow" {
				return javaPow(a, b), true
			}
			if a <= 0 || b <= 0 {
				return 0, false
			}
			return math.Log(b) / math.Log(a), true
		}), true, nil
	}
	switch name {
	case "sqrt", "exp", "ln", "log", "log10", "log2", "signum":
	default:
		return nil, false, nil
	}
	x, err := ca.double(0)
	if err != nil {
		return nil, true, err
	}
	return floatFn([]enode{x}, func(r int, v []*vec) (float64, bool) {
		f := v[0].f[r]
		switch name {
		case "sqrt":
			return math.Sqrt(f), true
		case "exp":
			return math.Exp(f), true
		case "signum":
			if f == 0 || math.IsNaN(f) {
				return f, true
			}
			return math.Copysign(1, f), true
		}
		if f <= 0 { // Spark's logarithms are NULL outside their domain
			return 0, false
		}
		switch name {
		case "log10":
			return math.Log10(f), true
		case "log2":
			return math.Log(f) / math.Ln2, true
		}
		return math.Log(f), true
	}), true, nil
}

func bindRound(ca *callArgs, mode roundMode) (enode, error) {
	x, err := ca.numeric(0)
	if err != nil {
		return nil, err
	}
	scale, null, err := ca.optLitInt(1, "scale", 0)
	if err != nil {
		return nil, err
	}
	if null {
		return nullOf(roundType(x.typ(), 0)), nil
	}
	// Beyond 40 digits left of the point every value the types hold rounds to 0: the bound
	// keeps 10^-scale small.
	scale = max(scale, -40)
	t := roundType(x.typ(), scale)
	switch t.k {
	case kDouble:
		return floatFn([]enode{x}, func(r int, v []*vec) (float64, bool) {
			return roundDouble(v[0].f[r], scale, mode), true
		}), nil
	case kDecimal:
		s := x.typ().s
		return decFn(t, []enode{x}, func(r int, v []*vec) (pq.Decimal128, bool) {
			if d, ok := roundDec64(v[0].d[r], s, int(scale), t, mode); ok {
				return d, decFits(d, t.p)
			}
			q := roundToScale(v[0].d[r].BigInt(), s, int(scale), t.s, mode)
			return decOf(q, t.p)
		}), nil
	}
	bits := uint(64)
	if t.k == kInt {
		bits = 32
	}
	if scale >= 0 {
		return x, nil
	}
	return intFn(t, []enode{x}, func(r int, v []*vec) (int64, bool) {
		return wrapBits(roundToScale(big.NewInt(v[0].i[r]), 0, int(scale), 0, mode), bits), true
	}), nil
}

// roundType is Spark's type of round(x, scale): integral and double types stay; a
// decimal(p, s) becomes decimal(p-s+1+min(s, scale), min(s, scale)), or for a negative
// scale decimal(max(p-s+1, 1-scale), 0), at most 38 digits.
func roundType(t sqlType, scale int64) sqlType {
	if t.k != kDecimal {
		return t
	}
	intDigits := t.p - t.s + 1
	if scale < 0 {
		return sqlType{k: kDecimal, p: int(min(max(int64(intDigits), 1-scale), maxSQLDecimal))}
	}
	s := min(int64(t.s), scale)
	return sqlType{k: kDecimal, p: int(min(int64(intDigits)+s, maxSQLDecimal)), s: int(s)}
}

func nullOf(t sqlType) enode {
	return &litNode{lit: &nLit{t: sqlType{k: kNull}, null: true}, t: t}
}

func bindFloorCeil(ca *callArgs, mode roundMode) (enode, error) {
	x, err := ca.numeric(0)
	if err != nil {
		return nil, err
	}
	switch t := x.typ(); t.k {
	case kDouble:
		return intFn(sqlType{k: kLong}, []enode{x}, func(r int, v []*vec) (int64, bool) {
			f := v[0].f[r]
			if mode == toFloor {
				return doubleToLong(math.Floor(f)), true
			}
			return doubleToLong(math.Ceil(f)), true
		}), nil
	case kDecimal:
		if t.s == 0 {
			return x, nil
		}
		out := sqlType{k: kDecimal, p: min(t.p-t.s+1, maxSQLDecimal)}
		return decFn(out, []enode{x}, func(r int, v []*vec) (pq.Decimal128, bool) {
			return decOf(roundBig(v[0].d[r].BigInt(), t.s, mode), out.p)
		}), nil
	}
	return castTo(x, sqlType{k: kLong}), nil
}

// bindMod is mod (the % operator) and pmod, Spark's positive remainder: r = a % n, and
// (r + n) % n when r is negative.
func bindMod(ca *callArgs) (enode, error) {
	a, err := ca.numeric(0)
	if err != nil {
		return nil, err
	}
	n, err := ca.numeric(1)
	if err != nil {
		return nil, err
	}
	e, err := bindArith("%", a, n)
	if err != nil || ca.c.name == "mod" {
		return e, err
	}
	rem := e.(*arithNode)
	t := rem.t
	nn := shareNode(rem.r)
	rem.r = nn
	switch t.k {
	case kDouble:
		return floatFn([]enode{rem, nn}, func(r int, v []*vec) (float64, bool) {
			x, m := v[0].f[r], v[1].f[r]
			if x < 0 {
				x = math.Mod(x+m, m)
			}
			return x, true
		}), nil
	case kDecimal:
		ns := rem.r.typ().s
		return decFn(t, []enode{rem, nn}, func(r int, v []*vec) (pq.Decimal128, bool) {
			x, m := v[0].d[r], v[1].d[r]
			if x.Hi >= 0 {
				return x, true
			}
			sum, ok := decArith("+", x, t.s, m, ns, t.s, maxSQLDecimal)
			if !ok {
				return pq.Decimal128{}, false
			}
			return decArith("%", sum, t.s, m, ns, t.s, t.p)
		}), nil
	}
	return intFn(t, []enode{rem, nn}, func(r int, v []*vec) (int64, bool) {
		x, m := v[0].i[r], v[1].i[r]
		if x >= 0 {
			return x, true
		}
		if t.k == kInt {
			return int64(int32(x+m) % int32(m)), true
		}
		return (x + m) % m, true
	}), nil
}
