package sqlexpr

import (
	"bytes"
	"unicode"
	"unicode/utf8"

	"github.com/medallion-lake/medallion/pq"
)

// Scalar functions: length, upper/lower/trim, coalesce.

// unaryNode is what the functions of one argument share: the argument, and the output vector,
// NULL where the argument is (NULL in, NULL out).
type unaryNode struct {
	x   enode
	out vec
}

// evalArg evaluates the argument and returns it with the output vector, given its nulls.
func (n *unaryNode) evalArg(c *evalCtx) (x, o *vec) {
	x = n.x.eval(c)
	n.out.null = x.nullSlice(c.n)
	return x, &n.out
}

type lengthNode struct{ unaryNode }

// pickInto sets out[r] to row r of the argument pick(r) names (values read with col), and
// null[r] where pick names none (every argument is NULL there; out[r] is then the zero value).
func pickInto[T any](out []T, null []bool, pick func(int) *vec, col func(*vec) []T) {
	var zero T
	for r := range out {
		v := pick(r)
		null[r], out[r] = v == nil, zero
		if v != nil {
			out[r] = col(v)[r]
		}
	}
}

func (n *lengthNode) typ() sqlType { return sqlType{k: kInt} }
func (n *lengthNode) eval(c *evalCtx) *vec {
	x, o := n.evalArg(c)
	o.i = growInts(o.i, c.n)
	bin := n.x.typ().k == kBinary
	for r := range o.i {
		s := x.str(r)
		if bin {
			o.i[r] = int64(len(s))
		} else {
			o.i[r] = int64(utf8.RuneCount(s))
		}
	}
	return o
}

type strFuncNode struct {
	unaryNode
	fn string
}

func (n *strFuncNode) typ() sqlType { return sqlType{k: kString} }
func (n *strFuncNode) eval(c *evalCtx) *vec {
	x, o := n.evalArg(c)
	o.data = o.data[:0]
	o.off = append(o.off[:0], 0)
	for r := range c.n {
		s := x.str(r)
		switch n.fn {
		case "lower":
			o.data = appendCase(o.data, s, false)
		case "upper":
			o.data = appendCase(o.data, s, true)
		case "trim":
			// Spark's trim removes spaces (0x20) only.
			o.data = append(o.data, bytes.Trim(s, " ")...)
		}
		o.off = append(o.off, int32(len(o.data)))
	}
	return o
}

func appendCase(dst, s []byte, upper bool) []byte {
	ascii := true
	for _, ch := range s {
		if ch >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if !ascii {
		return appendCaseUnicode(dst, s, upper)
	}
	for _, ch := range s {
		switch {
		case upper && ch >= 'a' && ch <= 'z':
			ch -= 'a' - 'A'
		case !upper && ch >= 'A' && ch <= 'Z':
			ch += 'a' - 'A'
		}
		dst = append(dst, ch)
	}
	return dst
}

type coalesceNode struct {
	t    sqlType
	args []enode
	out  vec
}

func (n *coalesceNode) typ() sqlType { return n.t }
func (n *coalesceNode) eval(c *evalCtx) *vec {
	vs := make([]*vec, len(n.args))
	for k, a := range n.args {
		vs[k] = a.eval(c)
	}
	o := &n.out
	o.null = growBools(o.null, c.n)
	anyNull := false
	pick := func(r int) *vec {
		for _, v := range vs {
			if !v.isNull(r) {
				return v
			}
		}
		return nil
	}
	switch n.t.k {
	case kString, kBinary:
		o.data = o.data[:0]
		o.off = append(o.off[:0], 0)
		for r := range c.n {
			v := pick(r)
			o.null[r] = v == nil
			if v != nil {
				o.data = append(o.data, v.str(r)...)
			}
			o.off = append(o.off, int32(len(o.data)))
		}
	case kDouble:
		o.f = growFloats(o.f, c.n)
		pickInto(o.f[:c.n], o.null, pick, func(v *vec) []float64 { return v.f })
	case kBool, kNull:
		o.b = growBools(o.b, c.n)
		pickInto(o.b[:c.n], o.null, pick, func(v *vec) []bool { return v.b })
	case kDecimal:
		o.d = growDecs(o.d, c.n)
		pickInto(o.d[:c.n], o.null, pick, func(v *vec) []pq.Decimal128 { return v.d })
	default:
		o.i = growInts(o.i, c.n)
		pickInto(o.i[:c.n], o.null, pick, func(v *vec) []int64 { return v.i })
	}
	for _, b := range o.null[:c.n] {
		anyNull = anyNull || b
	}
	if !anyNull {
		o.null = nil
	}
	return o
}

// javaUpperSpecial are the characters Java's String.toUpperCase maps to more than one
// (SpecialCasing's unconditional mappings, the Latin ones; Greek and Armenian ones with
// ypogegrammeni are left to the one-to-one mapping).
var javaUpperSpecial = map[rune]string{'ß': "SS", 'ŉ': "ʼN", 'ǰ': "J̌", 'ﬀ': "FF", 'ﬁ': "FI", 'ﬂ': "FL",
	'ﬃ': "FFI", 'ﬄ': "FFL", 'ﬅ': "ST", 'ﬆ': "ST", 'ẖ': "H̱", 'ẗ': "T̈", 'ẘ': "W̊", 'ẙ': "Y̊", 'ẚ': "Aʾ"}

// appendCaseUnicode is Java's toUpperCase/toLowerCase (Locale.ROOT) beyond ASCII: one-to-one
// mappings, the special upper cases above, İ lowered to i and a combining dot, and a capital
// sigma at the end of a word lowered to the final ς.
func appendCaseUnicode(dst, s []byte, upper bool) []byte {
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRune(s[i:])
		switch {
		case r == utf8.RuneError && w <= 1:
			dst = append(dst, s[i:i+w]...)
		case upper:
			if m, ok := javaUpperSpecial[r]; ok {
				dst = append(dst, m...)
			} else {
				dst = utf8.AppendRune(dst, unicode.ToUpper(r))
			}
		case r == 'İ':
			dst = append(dst, "i\u0307"...)
		case r == 'Σ' && finalSigma(s, i, i+w):
			dst = append(dst, "ς"...)
		default:
			dst = utf8.AppendRune(dst, unicode.ToLower(r))
		}
		i += w
	}
	return dst
}

// finalSigma is Unicode's Final_Sigma condition, simplified: a letter before the sigma and
// none after it.
func finalSigma(s []byte, start, end int) bool {
	before, _ := utf8.DecodeLastRune(s[:start])
	after, _ := utf8.DecodeRune(s[end:])
	return start > 0 && unicode.IsLetter(before) && (end == len(s) || !unicode.IsLetter(after))
}
