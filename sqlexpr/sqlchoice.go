package sqlexpr

import (
	"bytes"

	"github.com/medallion-lake/medallion/pq"
)

// Functions that choose among their arguments: if, nvl2, nullif, greatest and least.

// compareAt orders row i of a against row j of b, both of type t, as Spark orders values
// (NaN above every double).
func compareAt(t sqlType, a *vec, i int, b *vec, j int) int {
	switch t.k {
	case kDouble:
		return int(compareDoubles(a.f[i], b.f[j]))
	case kBool, kNull:
		return int(b2i(a.b[i]) - b2i(b.b[j]))
	case kString, kBinary:
		return bytes.Compare(a.str(i), b.str(j))
	case kDecimal:
		return a.d[i].Cmp(b.d[j])
	}
	ai, bi := a.i[i], b.i[j]
	return int(b2i(ai > bi) - b2i(ai < bi))
}

// fillPicked fills o (type t) with row r of pick(r), NULL where pick gives nil.
func fillPicked(o *vec, t sqlType, n int, pick func(r int) *vec) {
	null := growBools(o.null, n)
	anyNull := false
	switch t.k {
	case kString, kBinary:
		o.data = o.data[:0]
		o.off = append(o.off[:0], 0)
		for r := range n {
			v := pick(r)
			null[r] = v == nil
			if v != nil {
				o.data = append(o.data, v.str(r)...)
			}
			o.off = append(o.off, int32(len(o.data)))
		}
	case kDouble:
		o.f = growFloats(o.f, n)
		pickInto(o.f[:n], null, pick, func(v *vec) []float64 { return v.f })
	case kBool, kNull:
		o.b = growBools(o.b, n)
		pickInto(o.b[:n], null, pick, func(v *vec) []bool { return v.b })
	case kDecimal:
		o.d = growDecs(o.d, n)
		pickInto(o.d[:n], null, pick, func(v *vec) []pq.Decimal128 { return v.d })
	default:
		o.i = growInts(o.i, n)
		pickInto(o.i[:n], null, pick, func(v *vec) []int64 { return v.i })
	}
	for _, b := range null[:n] {
		anyNull = anyNull || b
	}
	o.null = nil
	if anyNull {
		o.null = null
	}
}

// pickNode is a value chosen per row among its arguments by choose, given their vectors
// (nil: NULL).
type pickNode struct {
	t      sqlType
	args   []enode
	choose func(r int, a []*vec) *vec
	vs     []*vec
	nb     []bool
	out    vec
}

func (p *pickNode) typ() sqlType { return p.t }
func (p *pickNode) eval(c *evalCtx) *vec {
	if p.vs == nil {
		p.vs = make([]*vec, len(p.args))
	}
	for i, a := range p.args {
		p.vs[i] = a.eval(c)
	}
	p.out.null = p.nb
	fillPicked(&p.out, p.t, c.n, func(r int) *vec { return p.choose(r, p.vs) })
	if p.out.null != nil {
		p.nb = p.out.null
	}
	return &p.out
}

// isTrue is row r of a boolean vector: true and not NULL.
func isTrue(v *vec, r int) bool { return !v.isNull(r) && v.b[r] }

func bindChoiceCall(ca *callArgs) (enode, bool, error) {
	args := ca.args
	switch ca.c.name {
	case "coalesce":
		t := args[0].typ()
		for i, a := range args[1:] {
			w, ok := widerCommon(t, a.typ())
			if !ok {
				return nil, true, typeErr(ca.c.args[i+1], "arguments of coalesce of one type, found %s and %s", t, a.typ())
			}
			t = w
		}
		n := &coalesceNode{t: t}
		for _, a := range args {
			n.args = append(n.args, castTo(a, t))
		}
		return n, true, nil
	case "if", "nvl2":
		var cond enode
		if ca.c.name == "if" {
			if k := args[0].typ().k; k != kBool && k != kNull {
				return nil, true, ca.errf(0, "a boolean condition, found %s", args[0].typ())
			}
			cond = castTo(args[0], sqlType{k: kBool})
		} else {
			cond = &isNullNode{x: args[0], not: true}
		}
		t, ok := widerCommon(args[1].typ(), args[2].typ())
		if !ok {
			return nil, true, ca.errf(2, "values of one type, found %s and %s", args[1].typ(), args[2].typ())
		}
		return &pickNode{t: t, args: []enode{cond, castTo(args[1], t), castTo(args[2], t)}, choose: func(r int, v []*vec) *vec {
			w := v[2]
			if isTrue(v[0], r) {
				w = v[1]
			}
			if w.isNull(r) {
				return nil
			}
			return w
		}}, true, nil
	case "nullif":
		// Spark: if(a = b, NULL, a), typed as a.
		t, ok := cmpCommon(args[0].typ(), args[1].typ())
		if !ok {
			return nil, true, ca.errf(1, "a value comparable with %s, found %s", args[0].typ(), args[1].typ())
		}
		if t.k == kNull {
			t = sqlType{k: kBool}
		}
		x := shareNode(args[0])
		eq := newCmpNode("=", castTo(x, t), castTo(args[1], t))
		return &pickNode{t: args[0].typ(), args: []enode{eq, x}, choose: func(r int, v []*vec) *vec {
			if isTrue(v[0], r) || v[1].isNull(r) {
				return nil
			}
			return v[1]
		}}, true, nil
	case "greatest", "least":
		t := args[0].typ()
		for i, a := range args[1:] {
			w, ok := commonEitherWay(t, a.typ())
			if !ok || w.k == kInterval {
				return nil, true, ca.errf(i+1, "arguments of one type (strings do not mix with other types), found %s and %s", t, a.typ())
			}
			t = w
		}
		if t.k == kNull {
			t = sqlType{k: kString}
		}
		sign := 1
		if ca.c.name == "least" {
			sign = -1
		}
		cast := make([]enode, len(args))
		for i, a := range args {
			cast[i] = castTo(a, t)
		}
		return &pickNode{t: t, args: cast, choose: func(r int, v []*vec) *vec {
			var best *vec
			for _, a := range v {
				if !a.isNull(r) && (best == nil || sign*compareAt(t, a, r, best, r) > 0) {
					best = a
				}
			}
			return best
		}}, true, nil
	}
	return nil, false, nil
}
