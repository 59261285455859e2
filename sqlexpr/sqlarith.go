package sqlexpr

import (
	"math"

	"github.com/medallion-lake/medallion/pq"
)

// Arithmetic: unary minus, abs, and + - * / % as Spark evaluates them without ANSI mode
// (division or remainder by zero is null, integers wrap, a decimal result that does not fit is null).

// signNode is unary minus, or abs (which negates only the negative values).
type signNode struct {
	unaryNode
	abs bool
}

func (n *signNode) typ() sqlType { return n.x.typ() }
func (n *signNode) eval(c *evalCtx) *vec {
	x, o := n.evalArg(c)
	switch n.x.typ().k {
	case kDouble:
		o.f = growFloats(o.f, c.n)
		for r, v := range x.f[:c.n] {
			if n.abs {
				o.f[r] = math.Abs(v) // +0.0 for -0.0
			} else {
				o.f[r] = -v
			}
		}
	case kInt:
		o.i = growInts(o.i, c.n)
		for r, v := range x.i[:c.n] {
			if !n.abs || v < 0 {
				v = int64(-int32(v)) // the smallest int wraps, as in Spark
			}
			o.i[r] = v
		}
	case kDecimal:
		o.d = growDecs(o.d, c.n)
		for r, v := range x.d[:c.n] {
			if !n.abs || v.Hi < 0 {
				v = v.Neg()
			}
			o.d[r] = v
		}
	default:
		o.i = growInts(o.i, c.n)
		for r, v := range x.i[:c.n] {
			if !n.abs || v < 0 {
				v = -v
			}
			o.i[r] = v
		}
	}
	return o
}

type arithNode struct {
	op   string
	l, r enode
	t    sqlType
	out  vec
}

func (n *arithNode) typ() sqlType { return n.t }

var pow10 = func() [19]int64 {
	var p [19]int64
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// mulCheck multiplies with overflow detection.
func mulCheck(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	p := a * b
	if p/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		return 0, false
	}
	return p, true
}

func addCheck(a, b int64) (int64, bool) {
	s := a + b
	if (a > 0 && b > 0 && s < 0) || (a < 0 && b < 0 && s >= 0) {
		return 0, false
	}
	return s, true
}

func (n *arithNode) eval(c *evalCtx) *vec {
	l, r := n.l.eval(c), n.r.eval(c)
	o := &n.out
	o.null = mergeNulls(o.null, c.n, l.nullSlice(c.n), r.nullSlice(c.n))
	setNull := func(i int) {
		if o.null == nil {
			o.null = growBools(o.null, c.n)
			clear(o.null)
		}
		o.null[i] = true
	}
	switch n.t.k {
	case kDouble:
		o.f = growFloats(o.f, c.n)
		lf, rf := l.f[:c.n], r.f[:c.n]
		switch n.op {
		case "+", "-", "*":
			addSubMul(n.op, o.f, lf, rf)
		case "/", "%":
			div := n.op == "/"
			for i := range o.f {
				switch {
				case rf[i] == 0:
					o.f[i] = 0
					setNull(i)
				case div:
					o.f[i] = lf[i] / rf[i]
				default:
					o.f[i] = math.Mod(lf[i], rf[i])
				}
			}
		}
	case kDecimal:
		n.evalDecimal(c, l, r, setNull)
	default:
		o.i = growInts(o.i, c.n)
		li, ri := l.i[:c.n], r.i[:c.n]
		switch n.op {
		case "+", "-", "*":
			addSubMul(n.op, o.i, li, ri)
		case "%":
			for i := range o.i {
				if ri[i] == 0 {
					o.i[i] = 0
					setNull(i)
					continue
				}
				if ri[i] == -1 {
					o.i[i] = 0
					continue
				}
				o.i[i] = li[i] % ri[i]
			}
		}
		if n.t.k == kInt {
			for i, v := range o.i {
				o.i[i] = int64(int32(v))
			}
		}
	}
	return o
}

// addSubMul computes o = l op r element-wise for op +, - or * (integers wrap, as Spark's
// without ANSI mode). Instantiated per element type, each loop stays a tight loop.
func addSubMul[T int64 | float64](op string, o, l, r []T) {
	switch op {
	case "+":
		for i := range o {
			o[i] = l[i] + r[i]
		}
	case "-":
		for i := range o {
			o[i] = l[i] - r[i]
		}
	case "*":
		for i := range o {
			o[i] = l[i] * r[i]
		}
	}
}

// evalDecimal computes decimal arithmetic exactly (decArith); a result that does not fit its
// type's precision is NULL, as Spark's overflow without ANSI mode.
func (n *arithNode) evalDecimal(c *evalCtx, l, r *vec, setNull func(int)) {
	o := &n.out
	o.d = growDecs(o.d, c.n)
	ls, rs := n.l.typ().s, n.r.typ().s
	ld, rd := l.d[:c.n], r.d[:c.n]
	for i := range o.d {
		o.d[i] = pq.Decimal128{}
		if o.null != nil && o.null[i] {
			continue
		}
		v, ok := decArith(n.op, ld[i], ls, rd[i], rs, n.t.s, n.t.p)
		if !ok {
			setNull(i)
			continue
		}
		o.d[i] = v
	}
}
