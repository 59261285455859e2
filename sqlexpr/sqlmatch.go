package sqlexpr

import (
	"bytes"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/medallion-lake/medallion/pq"
)

// Set and pattern membership: IN over a literal list (hashed when the list is long) and LIKE.

// IN

type inNode struct {
	x    enode
	list []enode
	not  bool
	out  vec
	set  *inSet // the literal items, built at the first evaluation
	// nulls is out.null's buffer when a list item may be NULL: out.null is nil when no row
	// is (Program.Eval's contract), and the buffer is kept for the next batch.
	nulls []bool
}

func (n *inNode) typ() sqlType { return sqlType{k: kBool} }

func equalAt(t sqlType, a *vec, i int, b *vec, j int) bool {
	switch t.k {
	case kDouble:
		return compareDoubles(a.f[i], b.f[j]) == 0
	case kBool, kNull:
		return a.b[i] == b.b[j]
	case kString, kBinary:
		return bytes.Equal(a.str(i), b.str(j))
	case kDecimal:
		return a.d[i] == b.d[j]
	}
	return a.i[i] == b.i[j]
}

// inSet holds the literal items of an IN list, cast to the list's type, for a lookup per row
// that does not grow with the list: a hash set above smallInList items (a 20,000-item list
// is one lookup, not 20,000 comparisons), the values themselves below, where comparing a few
// is cheaper than hashing. Non-literal items are compared row by row (dynamic).
type inSet struct {
	t       sqlType
	hasNull bool    // a NULL literal: a row that matches nothing is NULL
	dynamic []enode // items that are not literals
	hashed  bool    // the literals are in the map of t's kind, else in the slice

	// int, bigint, date, timestamp, interval; booleans as 0 and 1
	ints     []int64
	intSet   map[int64]struct{}
	floats   []float64
	floatSet map[float64]struct{}
	nan      bool // NaN is among the doubles (Spark: NaN equals NaN; a map never finds it)
	decs     []pq.Decimal128
	decSet   map[pq.Decimal128]struct{}
	strs     [][]byte
	strSet   map[string]struct{}
}

// smallInList is the size up to which an IN list's numbers are compared one by one;
// smallStringInList that of strings, where hashing wins sooner (BenchmarkSQLInListEval: 4
// ids hashed take 12 ns a row, compared 17).
const (
	smallInList       = 8
	smallStringInList = 2
)

func newInSet(t sqlType, list []enode) *inSet {
	s := &inSet{t: t}
	var lits []*vec
	for _, e := range list {
		switch v := literalScalar(e); {
		case v == nil:
			s.dynamic = append(s.dynamic, e)
		case v.isNull(0):
			s.hasNull = true
		default:
			lits = append(lits, v)
		}
	}
	// Booleans have two values: their list is compared one by one, whatever its length.
	small := smallInList
	if t.k == kString || t.k == kBinary {
		small = smallStringInList
	}
	s.hashed = len(lits) > small && t.k != kBool && t.k != kNull
	for _, v := range lits {
		switch t.k {
		case kString, kBinary:
			s.strs = append(s.strs, v.str(0))
		case kDouble:
			if math.IsNaN(v.f[0]) {
				s.nan = true
			} else {
				s.floats = append(s.floats, v.f[0])
			}
		case kDecimal:
			s.decs = append(s.decs, v.d[0])
		case kBool, kNull:
			s.ints = append(s.ints, int64(b2i(v.b[0])))
		default:
			s.ints = append(s.ints, v.i[0])
		}
	}
	if !s.hashed {
		return s
	}
	// -0.0 == 0.0 as map keys too, as in compareDoubles; NaN is kept aside.
	s.floatSet = setOf(s.floats, func(f float64) float64 { return f })
	s.decSet = setOf(s.decs, func(d pq.Decimal128) pq.Decimal128 { return d })
	s.strSet = setOf(s.strs, func(b []byte) string { return string(b) })
	s.intSet = setOf(s.ints, func(i int64) int64 { return i })
	s.floats, s.decs, s.strs, s.ints = nil, nil, nil, nil
	return s
}

func setOf[V any, K comparable](vals []V, key func(V) K) map[K]struct{} {
	if len(vals) == 0 {
		return nil
	}
	m := make(map[K]struct{}, len(vals))
	for _, v := range vals {
		m[key(v)] = struct{}{}
	}
	return m
}

// lookup sets found[r] to whether row r of x equals a literal item, for the n rows (a null
// row's answer is meaningless). One loop per type and representation, no per-item dispatch.
func (s *inSet) lookup(x *vec, n int, found []bool) {
	switch s.t.k {
	case kString, kBinary:
		for r := range n {
			v := x.str(r)
			if s.hashed {
				_, found[r] = s.strSet[string(v)]
				continue
			}
			found[r] = false
			for _, w := range s.strs {
				if len(v) == len(w) && string(v) == string(w) {
					found[r] = true
					break
				}
			}
		}
	case kDouble:
		for r, v := range x.f[:n] {
			switch {
			case math.IsNaN(v):
				found[r] = s.nan
			case s.hashed:
				_, found[r] = s.floatSet[v]
			default:
				found[r] = false
				for _, w := range s.floats {
					if v == w {
						found[r] = true
						break
					}
				}
			}
		}
	case kDecimal:
		lookupIn(x.d[:n], s.hashed, s.decSet, s.decs, found)
	case kBool, kNull:
		for r, v := range x.b[:n] {
			found[r] = false
			for _, w := range s.ints {
				if int64(b2i(v)) == w {
					found[r] = true
					break
				}
			}
		}
	default:
		lookupIn(x.i[:n], s.hashed, s.intSet, s.ints, found)
	}
}

// lookupIn sets found[r] to whether vals[r] is an item: in set when the items are hashed, else
// in the short list items.
func lookupIn[T comparable](vals []T, hashed bool, set map[T]struct{}, items []T, found []bool) {
	if hashed {
		for r, v := range vals {
			_, found[r] = set[v]
		}
		return
	}
	for r, v := range vals {
		found[r] = slices.Contains(items, v)
	}
}

// eval follows SQL: true when x equals an item; else NULL when x or an item is NULL; else
// false. NOT IN negates that, NULL staying NULL.
func (n *inNode) eval(c *evalCtx) *vec {
	t := n.x.typ()
	if n.set == nil {
		n.set = newInSet(t, n.list)
	}
	set := n.set
	x := n.x.eval(c)
	o := &n.out
	o.b = growBools(o.b, c.n)
	set.lookup(x, c.n, o.b)
	if !set.hasNull && len(set.dynamic) == 0 {
		// Only non-null literals, the common case: NULL exactly where x is.
		o.null = x.nullSlice(c.n)
		for r, found := range o.b {
			o.b[r] = found != n.not && !x.isNull(r)
		}
		return o
	}
	items := make([]*vec, len(set.dynamic))
	for k, e := range set.dynamic {
		items[k] = e.eval(c)
	}
	n.nulls = growBools(n.nulls, c.n)
	o.null = n.nulls
	anyNull := false
	for r, found := range o.b {
		if x.isNull(r) {
			o.b[r], o.null[r] = false, true
			anyNull = true
			continue
		}
		sawNull := set.hasNull
		for _, it := range items {
			if found {
				break
			}
			if it.isNull(r) {
				sawNull = true
				continue
			}
			found = equalAt(t, x, r, it, r)
		}
		o.null[r] = !found && sawNull
		anyNull = anyNull || o.null[r]
		o.b[r] = found != n.not && !o.null[r]
	}
	if !anyNull {
		o.null = nil
	}
	return o
}

// LIKE

type likeTok struct {
	kind byte // 'c' a character, '_' any one character, '%' any run
	r    rune
}

type likePattern struct {
	toks []likeTok
	// fast paths: the pattern is text alone, text%, %text or %text%
	mode  byte // 'g' general, '=' exact, '^' prefix, '$' suffix, '*' contains
	plain []byte
}

// compileLike parses a LIKE pattern with Spark's escape character \: \%, \_ and \\ are
// literal; an escape before any other character, or at the end, is invalid.
func compileLike(p []byte) (*likePattern, bool) {
	lp := &likePattern{}
	s := string(p)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch r {
		case '\\':
			if i >= len(s) {
				return nil, false
			}
			nr, nsize := utf8.DecodeRuneInString(s[i:])
			if nr != '%' && nr != '_' && nr != '\\' {
				return nil, false
			}
			i += nsize
			lp.toks = append(lp.toks, likeTok{'c', nr})
		case '%':
			if k := len(lp.toks); k > 0 && lp.toks[k-1].kind == '%' {
				continue
			}
			lp.toks = append(lp.toks, likeTok{'%', 0})
		case '_':
			lp.toks = append(lp.toks, likeTok{'_', 0})
		default:
			lp.toks = append(lp.toks, likeTok{'c', r})
		}
	}
	lp.mode = 'g'
	toks := lp.toks
	lead := len(toks) > 0 && toks[0].kind == '%'
	trail := len(toks) > 0 && toks[len(toks)-1].kind == '%'
	inner := toks
	if lead {
		inner = inner[1:]
	}
	if trail && len(inner) > 0 {
		inner = inner[:len(inner)-1]
	}
	plain := true
	var text []byte
	for _, t := range inner {
		if t.kind != 'c' {
			plain = false
			break
		}
		text = utf8.AppendRune(text, t.r)
	}
	if plain && len(toks) > 0 {
		lp.plain = text
		switch {
		case lead && trail:
			lp.mode = '*'
		case lead:
			lp.mode = '$'
		case trail:
			lp.mode = '^'
		default:
			lp.mode = '='
		}
	} else if len(toks) == 0 {
		lp.mode, lp.plain = '=', nil
	}
	return lp, true
}

func (lp *likePattern) match(s []byte) bool {
	switch lp.mode {
	case '=':
		return bytes.Equal(s, lp.plain)
	case '^':
		return bytes.HasPrefix(s, lp.plain)
	case '$':
		return bytes.HasSuffix(s, lp.plain)
	case '*':
		return bytes.Contains(s, lp.plain)
	}
	// A wildcard match with one backtrack point: the last %, which is enough because a
	// later % can absorb whatever an earlier one would have.
	p := lp.toks
	pi, si, starP, starS := 0, 0, -1, 0
	for si < len(s) {
		r, size := utf8.DecodeRune(s[si:])
		if pi < len(p) {
			switch t := p[pi]; t.kind {
			case '%':
				starP, starS = pi, si
				pi++
				continue
			case '_':
				pi++
				si += size
				continue
			default:
				if t.r == r {
					pi++
					si += size
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		_, sz := utf8.DecodeRune(s[starS:])
		starS += sz
		pi, si = starP+1, starS
	}
	for pi < len(p) && p[pi].kind == '%' {
		pi++
	}
	return pi == len(p)
}

type likeNode struct {
	x, pat enode
	fixed  *likePattern // a literal pattern, compiled once
	badLit bool         // a literal pattern with an invalid escape
	last   []byte
	lastP  *likePattern
	out    vec
}

func newLikeNode(x, pat enode) *likeNode {
	n := &likeNode{x: x, pat: pat}
	if s := literalScalar(pat); s != nil && !s.isNull(0) {
		lp, ok := compileLike(s.str(0))
		n.fixed, n.badLit = lp, !ok
	}
	return n
}

func (n *likeNode) typ() sqlType { return sqlType{k: kBool} }

func (n *likeNode) eval(c *evalCtx) *vec {
	x := n.x.eval(c)
	o := &n.out
	o.b = growBools(o.b, c.n)
	if n.fixed != nil {
		o.null = x.nullSlice(c.n)
		for r := range c.n {
			o.b[r] = !x.isNull(r) && n.fixed.match(x.str(r))
		}
		return o
	}
	p := n.pat.eval(c)
	o.null = growBools(o.null, c.n)
	for r := range c.n {
		if x.isNull(r) || p.isNull(r) {
			o.b[r], o.null[r] = false, true
			continue
		}
		ps := p.str(r)
		if n.lastP == nil || !bytes.Equal(ps, n.last) {
			n.last = append(n.last[:0], ps...)
			n.lastP, _ = compileLike(ps)
		}
		if n.lastP == nil { // an invalid escape: Spark fails the query; we answer NULL
			o.b[r], o.null[r] = false, true
			continue
		}
		o.b[r], o.null[r] = n.lastP.match(x.str(r)), false
	}
	return o
}
