package gold

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// Exact is the exact sum of float64 values: no rounding happens while adding, so the sum is
// the same whatever the order of the additions and however partial sums are merged, and it
// is rounded once, correctly (to nearest, ties to even), when it is read. A float sum or avg
// keeps one per group in the stream's state, in replay's and merge-late's aggregation and,
// encoded, in gold beside the public double: that is what makes gold equal to a batch
// recomputation bit for bit (docs/exact-sums.md).
//
// The value is fast·2^exactFastLSB + wide·2^exactWideLSB, both fixed-point two's complement
// integers. fast is 256 bits wide and takes every double whose exponent lies in [-62, 77]
// (about 2.2e-19 to 3e23 in magnitude): adding one is a shift and four adds with carry, and
// since each such addend is below 2^192, 2^63 of them (more than a count can reach) cannot
// overflow it. Zeros, subnormals, values outside that range, NaN and ±Inf take the slow path
// into wide, a superaccumulator over the whole double range (34 limbs) allocated the first
// time one arrives. NaN and infinities are flags, as in IEEE sums: any NaN, or both +Inf and
// -Inf, give NaN; +Inf (-Inf) alone gives +Inf (-Inf). A finite exact sum beyond the double
// range rounds to ±Inf.
//
// An Exact owns its wide part: copies made with = share it, so only one of them may be added
// to afterwards (Clone for an independent copy).
type Exact struct {
	fast [exactFastLimbs]uint64
	wide *exactWide
}

// exactWide is the slow part of an Exact: a fixed-point two's complement integer in units of
// 2^-1074 (the least subnormal) over 34 limbs, 2176 bits: a double's 53 bits shifted by up
// to 2045, plus 63 bits of carries and the sign; and the special values seen.
type exactWide struct {
	limbs               [exactWideLimbs]uint64
	nan, posInf, negInf bool
}

const (
	exactFastLimbs = 4
	exactWideLimbs = 34
	// exactWideLSB is the weight exponent of bit 0 of wide: the least subnormal.
	exactWideLSB = -1074
	// exactFastLSB is the weight exponent of bit 0 of fast, chosen 64-aligned with wide's so
	// that fast's limb k is wide's limb exactFastAt+k.
	exactFastLSB = exactWideLSB + 64*exactFastAt
	exactFastAt  = 15
	// A normal double with biased exponent eb is m·2^(eb-1075) for its 53-bit significand m:
	// m·2^s in fast's units with s = eb - exactFastBias. s in [0, exactFastMaxShift] keeps
	// m·2^s below 2^192.
	exactFastBias     = 1075 + exactFastLSB
	exactFastMaxShift = 192 - 53
	// exactMaxBits bounds a decoded value's magnitude: a sum of 2^63 doubles stays below
	// 2^(1024+63).
	exactMaxBits = 1024 + 63
)

// Add adds f exactly.
func (x *Exact) Add(f float64) {
	b := math.Float64bits(f)
	s := uint(b>>52&0x7ff) - exactFastBias
	if s > exactFastMaxShift {
		x.addSlow(b)
		return
	}
	m := b&(1<<52-1) | 1<<52
	// Negative: add the two's complement, ^a + 1, with the +1 as the first carry. Shifts of
	// 64 or more give 0 in Go, which places m in the limbs it covers without branches.
	neg := b >> 63
	mask := -neg
	var c uint64
	x.fast[0], c = bits.Add64(x.fast[0], (m<<s)^mask, neg)
	x.fast[1], c = bits.Add64(x.fast[1], (m<<(s-64)|m>>(64-s))^mask, c)
	x.fast[2], c = bits.Add64(x.fast[2], (m<<(s-128)|m>>(128-s))^mask, c)
	x.fast[3], _ = bits.Add64(x.fast[3], mask, c)
}

// addSlow adds the double with bits b that fast does not take.
func (x *Exact) addSlow(b uint64) {
	eb, frac, neg := b>>52&0x7ff, b&(1<<52-1), b>>63 != 0
	switch {
	case eb == 0x7ff:
		w := x.ensureWide()
		switch {
		case frac != 0:
			w.nan = true
		case neg:
			w.negInf = true
		default:
			w.posInf = true
		}
	case eb == 0:
		if frac != 0 { // subnormal: frac·2^-1074
			addShifted(x.ensureWide().limbs[:], frac, 0, neg)
		}
	default:
		addShifted(x.ensureWide().limbs[:], frac|1<<52, uint(eb-1), neg)
	}
}

// addShifted adds ±m·2^s to the two's complement integer l.
func addShifted(l []uint64, m uint64, s uint, neg bool) {
	i, sh := int(s/64), s%64
	lo, hi := m<<sh, m>>(64-sh)
	var mask, c uint64
	if neg {
		mask, c = ^uint64(0), 1
	}
	l[i], c = bits.Add64(l[i], lo^mask, c)
	for k := i + 1; k < len(l); k++ {
		a := mask
		if k == i+1 {
			a = hi ^ mask
		} else if c == mask&1 {
			// Nothing left to carry (adding 0, or all ones plus a carry, changes nothing).
			break
		}
		l[k], c = bits.Add64(l[k], a, c)
	}
}

// addLimbs adds the two's complement integer o, placed at limb at, to l (o sign-extended).
func addLimbs(l []uint64, at int, o []uint64) {
	mask := -(o[len(o)-1] >> 63)
	var c uint64
	for k := at; k < len(l); k++ {
		a := mask
		if k-at < len(o) {
			a = o[k-at]
		} else if c == mask&1 {
			break
		}
		l[k], c = bits.Add64(l[k], a, c)
	}
}

func (x *Exact) ensureWide() *exactWide {
	if x.wide == nil {
		x.wide = new(exactWide)
	}
	return x.wide
}

// AddExact adds o exactly (merging two partial sums).
func (x *Exact) AddExact(o *Exact) {
	if o.wide != nil {
		w := x.ensureWide()
		w.nan = w.nan || o.wide.nan
		w.posInf = w.posInf || o.wide.posInf
		w.negInf = w.negInf || o.wide.negInf
		addLimbs(w.limbs[:], 0, o.wide.limbs[:])
	}
	var t [exactFastLimbs]uint64
	var c uint64
	for k := range t {
		t[k], c = bits.Add64(x.fast[k], o.fast[k], c)
	}
	sx, so, st := x.fast[3]>>63, o.fast[3]>>63, t[3]>>63
	if sx == so && st != sx {
		// Cannot happen for sums of fewer than 2^63 doubles, but a decoded value may sit
		// near the bound: the overflow goes to wide, which has room for it.
		addLimbs(x.ensureWide().limbs[:], exactFastAt, o.fast[:])
		return
	}
	x.fast = t
}

// Clone returns a copy of x that shares nothing with it.
func (x *Exact) Clone() Exact {
	c := *x
	if x.wide != nil {
		w := *x.wide
		c.wide = &w
	}
	return c
}

// ExactOf is the exact value of f.
func ExactOf(f float64) Exact {
	var x Exact
	x.Add(f)
	return x
}

// special returns the special result of x (NaN or ±Inf), if it has one.
func (x *Exact) special() (float64, bool) {
	w := x.wide
	switch {
	case w == nil:
		return 0, false
	case w.nan || w.posInf && w.negInf:
		return math.NaN(), true
	case w.posInf:
		return math.Inf(1), true
	case w.negInf:
		return math.Inf(-1), true
	}
	return 0, false
}

// total is the finite part of x as one two's complement integer over buf with the weight
// exponent of its bit 0: fast's own four limbs unless wide is in use.
func (x *Exact) total(buf *[exactWideLimbs]uint64) ([]uint64, int) {
	if x.wide == nil {
		copy(buf[:], x.fast[:])
		return buf[:exactFastLimbs], exactFastLSB
	}
	*buf = x.wide.limbs
	addLimbs(buf[:], exactFastAt, x.fast[:])
	return buf[:], exactWideLSB
}

// magnitude turns the two's complement l into its absolute value in place and says whether
// it was negative.
func magnitude(l []uint64) bool {
	if l[len(l)-1]>>63 == 0 {
		return false
	}
	negate(l)
	return true
}

// negate negates the two's complement integer l in place.
func negate(l []uint64) {
	c := uint64(1)
	for k := range l {
		l[k], c = bits.Add64(^l[k], 0, c)
	}
}

// Float64 is x correctly rounded to a float64 (to nearest, ties to even; an exact zero is
// +0, as Spark's sum, which starts from 0.0, gives).
func (x *Exact) Float64() float64 {
	if f, ok := x.special(); ok {
		return f
	}
	var buf [exactWideLimbs]uint64
	l, lsb := x.total(&buf)
	neg := magnitude(l)
	return roundMagnitude(l, lsb, false, neg)
}

// Quo is x/n correctly rounded to a float64 (avg: the exact sum divided by the count, rounded
// once), for n >= 1.
func (x *Exact) Quo(n int64) float64 {
	if f, ok := x.special(); ok {
		return f
	}
	if n <= 0 {
		return math.NaN()
	}
	var buf [exactWideLimbs]uint64
	l, lsb := x.total(&buf)
	neg := magnitude(l)
	// Two zero limbs below the magnitude give the quotient at least 65 bits more than the
	// 53 it keeps, so the round bit is a quotient bit and the remainder only a sticky bit.
	var q [exactWideLimbs + 2]uint64
	num := q[:len(l)+2]
	copy(num[2:], l)
	var r uint64
	for k := len(num) - 1; k >= 0; k-- {
		num[k], r = bits.Div64(r, num[k], uint64(n))
	}
	return roundMagnitude(num, lsb-128, r != 0, neg)
}

// roundMagnitude rounds m·2^lsb (m little-endian limbs; sticky: something nonzero lies below
// m's bit 0) to the nearest float64, ties to even, with the sign neg.
func roundMagnitude(m []uint64, lsb int, sticky, neg bool) float64 {
	top := len(m) - 1
	for top >= 0 && m[top] == 0 {
		top--
	}
	if top < 0 {
		return 0
	}
	width := top*64 + bits.Len64(m[top])
	e := width - 1 + lsb // the exponent of the leading bit
	sign := 1.0
	if neg {
		sign = -1
	}
	if e > 1023 {
		return math.Inf(int(sign))
	}
	p := max(e-52, -1074) // the exponent of the result's last bit
	sh := p - lsb
	if sh <= 0 {
		// At most 53 bits, all representable: exact (sticky is never set with so few).
		return sign * math.Ldexp(float64(m[0]), lsb)
	}
	q := bitsAt(m, sh)
	half := bitsAt(m, sh-1)&1 != 0
	if half && (sticky || q&1 != 0 || anyBelow(m, sh-1)) {
		q++ // may carry to 2^53 (or from the subnormals to 2^-1022): still exact
	}
	// q·2^p as a double's bits, without math.Ldexp: a normal q in [2^52, 2^53) has the
	// biased exponent p+1075 and the fraction q-2^52, which is (p+1074)<<52 + q; a subnormal
	// (p = -1074, q < 2^52) is q itself; and a carry to q = 2^53 (or to 2^52 from the
	// subnormals) lands in the exponent, up to +Inf's bits when it passes the largest double.
	b := uint64(p+1074)<<52 + q
	if neg {
		b |= 1 << 63
	}
	return math.Float64frombits(b)
}

// bitsAt returns the 64 bits of m from bit pos up.
func bitsAt(m []uint64, pos int) uint64 {
	i, b := pos/64, uint(pos%64)
	if i >= len(m) {
		return 0
	}
	v := m[i] >> b
	if b != 0 && i+1 < len(m) {
		v |= m[i+1] << (64 - b)
	}
	return v
}

// anyBelow says whether any of m's bits below pos is set.
func anyBelow(m []uint64, pos int) bool {
	i, b := pos/64, uint(pos%64)
	for k := 0; k < i && k < len(m); k++ {
		if m[k] != 0 {
			return true
		}
	}
	return i < len(m) && m[i]&(1<<b-1) != 0
}

// Exact's encoding flags.
const (
	exactNeg    = 1
	exactNaN    = 2
	exactPosInf = 4
	exactNegInf = 8
)

// AppendBinary appends x's canonical encoding: equal values give equal bytes, however they
// were summed. A flags byte (sign, NaN, +Inf, -Inf), then for a finite value without special
// flags its odd significand M and exponent E (x = ±M·2^E): E as a varint, M as a uvarint
// length and big-endian bytes. Zero is the flags byte 0, E 0 and no bytes; a special value
// is its flags alone (its finite part no longer matters).
func (x *Exact) AppendBinary(dst []byte) []byte {
	if w := x.wide; w != nil && (w.nan || w.posInf || w.negInf) {
		var f byte
		if w.nan {
			f |= exactNaN
		}
		if w.posInf {
			f |= exactPosInf
		}
		if w.negInf {
			f |= exactNegInf
		}
		return append(dst, f)
	}
	var buf [exactWideLimbs]uint64
	l, lsb := x.total(&buf)
	return appendMagnitude(dst, l, lsb, magnitude(l))
}

// appendSumBinary appends what AggValue.AppendBinary appends after the count for a float sum
// or avg whose exact sum is x: the rounded sum's 8 bytes (Float64), the integer part (0) and
// x's encoding (AppendBinary), from one reading of x's limbs instead of one for each.
func (x *Exact) appendSumBinary(dst []byte) []byte {
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	f, dst := x.appendRounded(dst)
	binary.BigEndian.PutUint64(dst[at:], math.Float64bits(f))
	return dst
}

// appendRounded appends x's encoding (AppendBinary) and returns x rounded to a float64
// (Float64), from one reading of x's limbs.
func (x *Exact) appendRounded(dst []byte) (float64, []byte) {
	if f, ok := x.special(); ok {
		return f, x.AppendBinary(dst)
	}
	var buf [exactWideLimbs]uint64
	l, lsb := x.total(&buf)
	neg := magnitude(l)
	return roundMagnitude(l, lsb, false, neg), appendMagnitude(dst, l, lsb, neg)
}

// appendMagnitude appends the encoding of the finite value ±l·2^lsb (l a magnitude, neg its
// sign) as AppendBinary writes it.
func appendMagnitude(dst []byte, l []uint64, lsb int, neg bool) []byte {
	var f byte
	if neg {
		f = exactNeg
	}
	low := 0
	for low < len(l) && l[low] == 0 {
		low++
	}
	if low == len(l) {
		return append(dst, 0, 0, 0)
	}
	z := low*64 + bits.TrailingZeros64(l[low])
	dst = append(dst, f)
	dst = binary.AppendVarint(dst, int64(lsb+z))
	// M = l >> z, written big-endian without leading zero bytes.
	top := len(l) - 1
	for l[top] == 0 {
		top--
	}
	width := top*64 + bits.Len64(l[top]) - z
	n := (width + 7) / 8
	dst = binary.AppendUvarint(dst, uint64(n))
	// Byte k of M is bits z+8k.. of l: read them a 64-bit word at a time.
	for k := n - 1; k >= 0; {
		j := k / 8
		w := bitsAt(l, z+64*j)
		for ; k >= 8*j; k-- {
			dst = append(dst, byte(w>>(8*(k-8*j))))
		}
	}
	return dst
}

// encodedLen is len(x.AppendBinary(nil)), computed without encoding: state buffers are
// sized before they are filled.
func (x *Exact) encodedLen() int {
	if w := x.wide; w != nil && (w.nan || w.posInf || w.negInf) {
		return 1
	}
	var buf [exactWideLimbs]uint64
	l, lsb := x.total(&buf)
	magnitude(l)
	low := 0
	for low < len(l) && l[low] == 0 {
		low++
	}
	if low == len(l) {
		return 3
	}
	z := low*64 + bits.TrailingZeros64(l[low])
	top := len(l) - 1
	for l[top] == 0 {
		top--
	}
	n := (top*64 + bits.Len64(l[top]) - z + 7) / 8
	return 1 + varintLen(int64(lsb+z)) + uvarintLen(uint64(n)) + n
}

// DecodeExact decodes one AppendBinary encoding and returns the bytes after it.
func DecodeExact(b []byte) (Exact, []byte, error) {
	var x Exact
	if len(b) < 1 {
		return x, nil, fmt.Errorf("%w: exact sum truncated", ErrBadState)
	}
	f := b[0]
	if f&^0xf != 0 || f&exactNeg != 0 && f != exactNeg {
		return x, nil, fmt.Errorf("%w: exact sum flags %#x", ErrBadState, f)
	}
	b = b[1:]
	if f != 0 && f != exactNeg {
		w := x.ensureWide()
		w.nan, w.posInf, w.negInf = f&exactNaN != 0, f&exactPosInf != 0, f&exactNegInf != 0
		return x, b, nil
	}
	e, k := binary.Varint(b)
	if k <= 0 {
		return x, nil, fmt.Errorf("%w: exact sum exponent truncated", ErrBadState)
	}
	b = b[k:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return x, nil, fmt.Errorf("%w: exact sum significand truncated", ErrBadState)
	}
	mb, rest := b[k:k+int(n)], b[k+int(n):]
	if n == 0 {
		if f != 0 || e != 0 {
			return x, nil, fmt.Errorf("%w: exact zero is not canonical", ErrBadState)
		}
		return x, rest, nil
	}
	if mb[0] == 0 || mb[len(mb)-1]&1 == 0 {
		return x, nil, fmt.Errorf("%w: exact sum significand is not canonical", ErrBadState)
	}
	width := int64(len(mb)-1)*8 + int64(bits.Len8(mb[0]))
	if e < exactWideLSB || e+width > exactMaxBits {
		return x, nil, fmt.Errorf("%w: exact sum 2^%d·(%d bits) is outside the range of a sum of doubles", ErrBadState, e, width)
	}
	// Into fast when it fits below 2^192 there (as an addend would), else into wide.
	var l []uint64
	var s int64
	if e >= exactFastLSB && e-exactFastLSB+width <= 192 {
		l, s = x.fast[:], e-exactFastLSB
	} else {
		l, s = x.ensureWide().limbs[:], e-exactWideLSB
	}
	// Byte j from the end of mb has weight 2^(8j) in M.
	for j := range len(mb) {
		pos := s + 8*int64(j)
		v := uint64(mb[len(mb)-1-j])
		l[pos/64] |= v << (pos % 64)
		if pos%64 > 56 && pos/64+1 < int64(len(l)) {
			l[pos/64+1] |= v >> (64 - pos%64)
		}
	}
	if f == exactNeg {
		negate(l)
	}
	return x, rest, nil
}
