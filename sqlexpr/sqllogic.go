package sqlexpr

import (
	"bytes"
	"math"
)

// Boolean logic with SQL three-valued nulls (NOT, AND, OR), IS [NOT] NULL, and the
// comparisons (=, <>, <, <=, >, >=) that feed them.

type notNode struct {
	x   enode
	out vec
}

func (n *notNode) typ() sqlType { return sqlType{k: kBool} }
func (n *notNode) eval(c *evalCtx) *vec {
	x := n.x.eval(c)
	n.out.b = growBools(n.out.b, c.n)
	for r, v := range x.b[:c.n] {
		n.out.b[r] = !v
	}
	n.out.null = x.nullSlice(c.n)
	return &n.out
}

type logicNode struct {
	and   bool
	l, r  enode
	out   vec
	zeros []bool
}

// noNulls is an all-false null slice of n rows, for the loop over an operand without nulls.
func (n *logicNode) noNulls(rows int) []bool {
	if len(n.zeros) < rows {
		n.zeros = make([]bool, rows)
	}
	return n.zeros
}

func (n *logicNode) typ() sqlType { return sqlType{k: kBool} }

// eval is Kleene's logic: false AND null is false, true OR null is true, otherwise a null
// operand makes the result null.
func (n *logicNode) eval(c *evalCtx) *vec {
	l, r := n.l.eval(c), n.r.eval(c)
	o := &n.out
	o.b = growBools(o.b, c.n)
	lb, rb := l.b[:c.n], r.b[:c.n]
	if l.null == nil && r.null == nil {
		o.null = nil
		if n.and {
			for i := range o.b {
				o.b[i] = lb[i] && rb[i]
			}
		} else {
			for i := range o.b {
				o.b[i] = lb[i] || rb[i]
			}
		}
		return o
	}
	o.null = growBools(o.null, c.n)
	lnull, rnull := l.null, r.null
	if lnull == nil {
		lnull = n.noNulls(c.n)
	}
	if rnull == nil {
		rnull = n.noNulls(c.n)
	}
	lnull, rnull = lnull[:c.n], rnull[:c.n]
	if n.and {
		for i := range o.b {
			ln, rn := lnull[i], rnull[i]
			lf, rf := !ln && !lb[i], !rn && !rb[i]
			o.b[i] = !ln && !rn && lb[i] && rb[i]
			o.null[i] = !lf && !rf && (ln || rn)
		}
	} else {
		for i := range o.b {
			ln, rn := lnull[i], rnull[i]
			v := (lb[i] && !ln) || (rb[i] && !rn)
			o.b[i] = v
			o.null[i] = !v && (ln || rn)
		}
	}
	return o
}

type isNullNode struct {
	x   enode
	not bool
	out vec
}

func (n *isNullNode) typ() sqlType { return sqlType{k: kBool} }
func (n *isNullNode) eval(c *evalCtx) *vec {
	x := n.x.eval(c)
	o := &n.out
	o.null = nil
	o.b = growBools(o.b, c.n)
	for r := range o.b {
		o.b[r] = x.isNull(r) != n.not
	}
	return o
}

// comparisons

type cmpNode struct {
	op   string
	l, r enode
	t    sqlType
	lit  *vec // the right side's value when it is a literal
	cmp  []int8
	out  vec
}

func newCmpNode(op string, l, r enode) enode {
	n := &cmpNode{op: op, l: l, r: r, t: l.typ()}
	n.lit = literalScalar(r)
	return n
}

func (n *cmpNode) typ() sqlType { return sqlType{k: kBool} }

// compareDoubles orders doubles as Spark does: NaN equals NaN and is above every number,
// and -0.0 equals 0.0.
func compareDoubles(a, b float64) int8 {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a == b:
		return 0
	}
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	}
	return -1
}

func b2i(b bool) int8 {
	if b {
		return 1
	}
	return 0
}

func (n *cmpNode) eval(c *evalCtx) *vec {
	l := n.l.eval(c)
	o := &n.out
	cmp := n.cmp[:0]
	if cap(cmp) < c.n {
		cmp = make([]int8, c.n)
	}
	cmp = cmp[:c.n]
	n.cmp = cmp
	var r *vec
	if n.lit != nil {
		if n.lit.isNull(0) {
			o.null = growBools(o.null, c.n)
			for i := range o.null {
				o.null[i] = true
			}
			o.b = growBools(o.b, c.n)
			clear(o.b)
			return o
		}
		o.null = l.nullSlice(c.n)
		switch n.t.k {
		case kDouble:
			s := n.lit.f[0]
			for i, v := range l.f[:c.n] {
				cmp[i] = compareDoubles(v, s)
			}
		case kBool:
			s := b2i(n.lit.b[0])
			for i, v := range l.b[:c.n] {
				cmp[i] = b2i(v) - s
			}
		case kString, kBinary:
			s := n.lit.str(0)
			for i := range cmp {
				cmp[i] = int8(bytes.Compare(l.str(i), s))
			}
		case kDecimal:
			s := n.lit.d[0]
			for i, v := range l.d[:c.n] {
				cmp[i] = int8(v.Cmp(s))
			}
		default:
			s := n.lit.i[0]
			for i, v := range l.i[:c.n] {
				cmp[i] = b2i(v > s) - b2i(v < s)
			}
		}
	} else {
		r = n.r.eval(c)
		o.null = mergeNulls(o.null, c.n, l.nullSlice(c.n), r.nullSlice(c.n))
		switch n.t.k {
		case kDouble:
			rf := r.f[:c.n]
			for i, v := range l.f[:c.n] {
				cmp[i] = compareDoubles(v, rf[i])
			}
		case kBool:
			rb := r.b[:c.n]
			for i, v := range l.b[:c.n] {
				cmp[i] = b2i(v) - b2i(rb[i])
			}
		case kString, kBinary:
			for i := range cmp {
				cmp[i] = int8(bytes.Compare(l.str(i), r.str(i)))
			}
		case kDecimal:
			rd := r.d[:c.n]
			for i, v := range l.d[:c.n] {
				cmp[i] = int8(v.Cmp(rd[i]))
			}
		default:
			ri := r.i[:c.n]
			for i, v := range l.i[:c.n] {
				cmp[i] = b2i(v > ri[i]) - b2i(v < ri[i])
			}
		}
	}
	o.b = growBools(o.b, c.n)
	switch n.op {
	case "=":
		for i, v := range cmp {
			o.b[i] = v == 0
		}
	case "<>":
		for i, v := range cmp {
			o.b[i] = v != 0
		}
	case "<":
		for i, v := range cmp {
			o.b[i] = v < 0
		}
	case "<=":
		for i, v := range cmp {
			o.b[i] = v <= 0
		}
	case ">":
		for i, v := range cmp {
			o.b[i] = v > 0
		}
	case ">=":
		for i, v := range cmp {
			o.b[i] = v >= 0
		}
	}
	return o
}
