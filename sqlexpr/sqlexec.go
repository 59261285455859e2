package sqlexpr

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/medallion-lake/medallion/pq"
)

// The SQL evaluator is vectorized: every node computes its whole column of values and nulls
// from its children's columns in a tight loop per operator and type, and keeps its output
// buffers for the next batch. No row walks the tree.

// vec is a node's output over the n rows of a batch. Only the slice of the node's type is
// used: b (boolean), i (int, bigint, date, timestamp, interval), d (decimal unscaled), f
// (double), off/data (string, binary: row r is data[off[r]:off[r+1]]).
type vec struct {
	null []bool // nil: no row is null
	b    []bool
	i    []int64
	f    []float64
	off  []int32
	data []byte
	d    []pq.Decimal128 // decimal unscaled values
}

func (v *vec) isNull(r int) bool { return v.null != nil && v.null[r] }

func (v *vec) nullSlice(n int) []bool {
	if v.null == nil {
		return nil
	}
	return v.null[:n]
}

func (v *vec) str(r int) []byte { return v.data[v.off[r]:v.off[r+1]] }

type evalCtx struct {
	b     *pq.Batch
	n     int
	nowUs int64
}

// enode is a bound, typed node.
type enode interface {
	typ() sqlType
	eval(c *evalCtx) *vec
}

func growBools(s []bool, n int) []bool {
	if cap(s) < n {
		return make([]bool, n)
	}
	return s[:n]
}

func growInts(s []int64, n int) []int64 {
	if cap(s) < n {
		return make([]int64, n)
	}
	return s[:n]
}

func growDecs(s []pq.Decimal128, n int) []pq.Decimal128 {
	if cap(s) < n {
		return make([]pq.Decimal128, n)
	}
	return s[:n]
}

func growFloats(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// mergeNulls sets dst[r] when any source is null at r; nil when no source has nulls.
func mergeNulls(dst []bool, n int, srcs ...[]bool) []bool {
	var first []bool
	count := 0
	for _, s := range srcs {
		if s != nil {
			count++
			first = s
		}
	}
	if count == 0 {
		return nil
	}
	dst = growBools(dst, n)
	copy(dst, first[:n])
	if count > 1 {
		for _, s := range srcs {
			if s == nil {
				continue
			}
			for r := range n {
				dst[r] = dst[r] || s[r]
			}
		}
	}
	return dst
}

// column nodes

type colNode struct {
	path []int
	t    sqlType
	out  vec
}

func (n *colNode) typ() sqlType { return n.t }

func (n *colNode) eval(c *evalCtx) *vec {
	col := c.b.Columns[n.path[0]]
	for _, p := range n.path[1:] {
		if col == nil {
			break
		}
		col = col.Children[p]
	}
	o := &n.out
	if col == nil { // a view that did not read the column: every row is null
		o.null = growBools(o.null, c.n)
		for r := range o.null {
			o.null[r] = true
		}
		fillZero(o, n.t, c.n)
		return o
	}
	switch {
	case len(col.Nulls) >= c.n:
		o.null = col.Nulls[:c.n]
	case len(col.Nulls) == 0:
		o.null = nil
	default:
		o.null = growBools(o.null, c.n)
		k := copy(o.null, col.Nulls)
		clear(o.null[k:])
	}
	switch col.Kind {
	case pq.KindInt64:
		o.i = col.Int64[:c.n]
	case pq.KindInt32:
		o.i = growInts(o.i, c.n)
		for r, v := range col.Int32[:c.n] {
			o.i[r] = int64(v)
		}
	case pq.KindFloat64:
		o.f = col.Float64[:c.n]
	case pq.KindFloat32:
		o.f = growFloats(o.f, c.n)
		for r, v := range col.Float32[:c.n] {
			o.f[r] = float64(v)
		}
	case pq.KindBool:
		o.b = col.Bool[:c.n]
	case pq.KindBytes:
		o.off, o.data = col.Offsets, col.Data
	case pq.KindDecimal:
		o.d = col.Decimal[:c.n]
	}
	return o
}

func fillZero(o *vec, t sqlType, n int) {
	switch t.k {
	case kBool, kNull:
		o.b = growBools(o.b, n)
		clear(o.b)
	case kDouble:
		o.f = growFloats(o.f, n)
		clear(o.f)
	case kString, kBinary:
		o.off = o.off[:0]
		for range n + 1 {
			o.off = append(o.off, 0)
		}
		o.data = o.data[:0]
	case kDecimal:
		o.d = growDecs(o.d, n)
		clear(o.d)
	default:
		o.i = growInts(o.i, n)
		clear(o.i)
	}
}

// literals

type litNode struct {
	lit   *nLit
	t     sqlType // the type after an implicit cast; zero: the literal's own
	one   *vec    // the (cast) value, one row
	out   vec
	n     int
	ready bool
}

func (n *litNode) typ() sqlType {
	if n.t == (sqlType{}) {
		return n.lit.t
	}
	return n.t
}

// scalar is the literal's value as a one-row vector, cast to the node's type.
func (n *litNode) scalar() *vec {
	if n.one != nil {
		return n.one
	}
	raw := &vec{}
	l := n.lit
	switch l.t.k {
	case kNull:
		raw.null = []bool{true}
		raw.b = []bool{false}
	case kBool:
		raw.b = []bool{l.b}
	case kDouble:
		raw.f = []float64{l.f}
	case kString:
		raw.off, raw.data = []int32{0, int32(len(l.s))}, []byte(l.s)
	case kDecimal:
		raw.d = []pq.Decimal128{l.dec}
	default:
		raw.i = []int64{l.i}
	}
	if n.typ() != l.t {
		cv := &vec{}
		castVec(raw, l.t, n.typ(), 1, cv)
		raw = cv
	}
	n.one = raw
	return raw
}

func (n *litNode) eval(c *evalCtx) *vec {
	if n.ready && n.n == c.n {
		return &n.out
	}
	one := n.scalar()
	broadcast(one, n.typ(), c.n, &n.out)
	n.ready, n.n = true, c.n
	return &n.out
}

// broadcast repeats row 0 of one n times into o.
func broadcast(one *vec, t sqlType, n int, o *vec) {
	if one.isNull(0) {
		o.null = growBools(o.null, n)
		for r := range o.null {
			o.null[r] = true
		}
		fillZero(o, t, n)
		return
	}
	o.null = nil
	switch t.k {
	case kBool, kNull:
		o.b = growBools(o.b, n)
		for r := range o.b {
			o.b[r] = one.b[0]
		}
	case kDouble:
		o.f = growFloats(o.f, n)
		for r := range o.f {
			o.f[r] = one.f[0]
		}
	case kString, kBinary:
		// Rows cannot share bytes under offsets: the value is repeated.
		v := one.str(0)
		o.data = o.data[:0]
		o.off = append(o.off[:0], 0)
		for range n {
			o.data = append(o.data, v...)
			o.off = append(o.off, int32(len(o.data)))
		}
	case kDecimal:
		o.d = growDecs(o.d, n)
		for r := range o.d {
			o.d[r] = one.d[0]
		}
	default:
		o.i = growInts(o.i, n)
		for r := range o.i {
			o.i[r] = one.i[0]
		}
	}
}

// literalScalar returns the one-row value of e when it is a literal.
func literalScalar(e enode) *vec {
	if l, ok := e.(*litNode); ok {
		return l.scalar()
	}
	return nil
}

// now

type nowNode struct {
	out vec
}

func (n *nowNode) typ() sqlType { return sqlType{k: kTimestamp} }
func (n *nowNode) eval(c *evalCtx) *vec {
	n.out.null = nil
	n.out.i = growInts(n.out.i, c.n)
	for r := range n.out.i {
		n.out.i[r] = c.nowUs
	}
	return &n.out
}

// sharedNode is a node that several parents read (BETWEEN's two comparisons): it evaluates
// x once per evaluation and hands every parent the same vector.
type sharedNode struct {
	x    enode
	last *evalCtx // the evaluation out belongs to; kept alive, so a new one differs
	out  *vec
}

// shareNode wraps x for several parents; columns and literals are cheap to read twice and
// stay as they are (castTo casts literals at bind time).
func shareNode(x enode) enode {
	switch x.(type) {
	case *colNode, *litNode:
		return x
	}
	return &sharedNode{x: x}
}

func (n *sharedNode) typ() sqlType { return n.x.typ() }

func (n *sharedNode) eval(c *evalCtx) *vec {
	if n.last != c {
		n.out, n.last = n.x.eval(c), c
	}
	return n.out
}

// boolean logic

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
		for r, v := range x.d[:n] {
			if s.hashed {
				_, found[r] = s.decSet[v]
				continue
			}
			found[r] = false
			for _, w := range s.decs {
				if v == w {
					found[r] = true
					break
				}
			}
		}
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
		for r, v := range x.i[:n] {
			if s.hashed {
				_, found[r] = s.intSet[v]
				continue
			}
			found[r] = false
			for _, w := range s.ints {
				if v == w {
					found[r] = true
					break
				}
			}
		}
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

// arithmetic

type negNode struct {
	x   enode
	out vec
}

func (n *negNode) typ() sqlType { return n.x.typ() }
func (n *negNode) eval(c *evalCtx) *vec {
	x := n.x.eval(c)
	o := &n.out
	o.null = x.nullSlice(c.n)
	switch n.x.typ().k {
	case kDouble:
		o.f = growFloats(o.f, c.n)
		for r, v := range x.f[:c.n] {
			o.f[r] = -v
		}
	case kInt:
		o.i = growInts(o.i, c.n)
		for r, v := range x.i[:c.n] {
			o.i[r] = int64(-int32(v))
		}
	case kDecimal:
		o.d = growDecs(o.d, c.n)
		for r, v := range x.d[:c.n] {
			o.d[r] = decNeg(v)
		}
	default:
		o.i = growInts(o.i, c.n)
		for r, v := range x.i[:c.n] {
			o.i[r] = -v
		}
	}
	return o
}

type absNode struct {
	x   enode
	out vec
}

func (n *absNode) typ() sqlType { return n.x.typ() }
func (n *absNode) eval(c *evalCtx) *vec {
	x := n.x.eval(c)
	o := &n.out
	o.null = x.nullSlice(c.n)
	switch n.x.typ().k {
	case kDouble:
		o.f = growFloats(o.f, c.n)
		for r, v := range x.f[:c.n] {
			o.f[r] = math.Abs(v)
		}
	case kInt:
		o.i = growInts(o.i, c.n)
		for r, v := range x.i[:c.n] {
			if v < 0 {
				v = int64(-int32(v)) // abs of the smallest int wraps, as in Spark
			}
			o.i[r] = v
		}
	case kDecimal:
		o.d = growDecs(o.d, c.n)
		for r, v := range x.d[:c.n] {
			if v.Hi < 0 {
				v = decNeg(v)
			}
			o.d[r] = v
		}
	default:
		o.i = growInts(o.i, c.n)
		for r, v := range x.i[:c.n] {
			if v < 0 {
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
		case "+":
			for i := range o.f {
				o.f[i] = lf[i] + rf[i]
			}
		case "-":
			for i := range o.f {
				o.f[i] = lf[i] - rf[i]
			}
		case "*":
			for i := range o.f {
				o.f[i] = lf[i] * rf[i]
			}
		case "/":
			for i := range o.f {
				if rf[i] == 0 {
					o.f[i] = 0
					setNull(i)
					continue
				}
				o.f[i] = lf[i] / rf[i]
			}
		case "%":
			for i := range o.f {
				if rf[i] == 0 {
					o.f[i] = 0
					setNull(i)
					continue
				}
				o.f[i] = math.Mod(lf[i], rf[i])
			}
		}
	case kDecimal:
		n.evalDecimal(c, l, r, setNull)
	default:
		o.i = growInts(o.i, c.n)
		li, ri := l.i[:c.n], r.i[:c.n]
		switch n.op {
		case "+":
			for i := range o.i {
				o.i[i] = li[i] + ri[i]
			}
		case "-":
			for i := range o.i {
				o.i[i] = li[i] - ri[i]
			}
		case "*":
			for i := range o.i {
				o.i[i] = li[i] * ri[i]
			}
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

// functions

type lengthNode struct {
	x   enode
	out vec
}

func (n *lengthNode) typ() sqlType { return sqlType{k: kInt} }
func (n *lengthNode) eval(c *evalCtx) *vec {
	x := n.x.eval(c)
	o := &n.out
	o.null = x.nullSlice(c.n)
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
	fn  string
	x   enode
	out vec
}

func (n *strFuncNode) typ() sqlType { return sqlType{k: kString} }
func (n *strFuncNode) eval(c *evalCtx) *vec {
	x := n.x.eval(c)
	o := &n.out
	o.null = x.nullSlice(c.n)
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
		if upper {
			return append(dst, bytes.ToUpper(s)...)
		}
		return append(dst, bytes.ToLower(s)...)
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
		for r := range c.n {
			v := pick(r)
			o.null[r], o.f[r] = v == nil, 0
			if v != nil {
				o.f[r] = v.f[r]
			}
		}
	case kBool, kNull:
		o.b = growBools(o.b, c.n)
		for r := range c.n {
			v := pick(r)
			o.null[r], o.b[r] = v == nil, false
			if v != nil {
				o.b[r] = v.b[r]
			}
		}
	case kDecimal:
		o.d = growDecs(o.d, c.n)
		for r := range c.n {
			v := pick(r)
			o.null[r], o.d[r] = v == nil, pq.Decimal128{}
			if v != nil {
				o.d[r] = v.d[r]
			}
		}
	default:
		o.i = growInts(o.i, c.n)
		for r := range c.n {
			v := pick(r)
			o.null[r], o.i[r] = v == nil, 0
			if v != nil {
				o.i[r] = v.i[r]
			}
		}
	}
	for _, b := range o.null[:c.n] {
		anyNull = anyNull || b
	}
	if !anyNull {
		o.null = nil
	}
	return o
}

// casts

type castNode struct {
	x   enode
	t   sqlType
	out vec
}

func (n *castNode) typ() sqlType { return n.t }
func (n *castNode) eval(c *evalCtx) *vec {
	x := n.x.eval(c)
	castVec(x, n.x.typ(), n.t, c.n, &n.out)
	return &n.out
}

// castVec casts n rows of src from one type to another into dst, as Spark's Cast without
// ANSI mode: a value that does not convert is NULL.
func castVec(src *vec, from, to sqlType, n int, dst *vec) {
	dst.null = src.nullSlice(n)
	own := false // whether dst.null is dst's own buffer yet
	setNull := func(i int) {
		if !own {
			buf := growBools(nil, n)
			if dst.null != nil {
				copy(buf, dst.null)
			}
			dst.null, own = buf, true
		}
		dst.null[i] = true
	}
	isNull := func(i int) bool { return src.isNull(i) }
	if from.k == kNull {
		dst.null = growBools(nil, n)
		for i := range dst.null {
			dst.null[i] = true
		}
		fillZero(dst, to, n)
		return
	}
	switch to.k {
	case kLong, kInt:
		switch from.k {
		case kInt, kLong:
			dst.i = src.i
		case kString:
			dst.i = growInts(dst.i, n)
			for i := range n {
				dst.i[i] = 0
				if isNull(i) {
					continue
				}
				v, ok := parseSparkIntegral(src.str(i), to.k == kInt)
				if !ok {
					setNull(i)
					continue
				}
				dst.i[i] = v
			}
		default:
			fillAllNull(dst, to, n)
		}
	case kDouble:
		dst.f = growFloats(dst.f, n)
		switch from.k {
		case kInt, kLong:
			for i, v := range src.i[:n] {
				dst.f[i] = float64(v)
			}
		case kDecimal:
			for i, v := range src.d[:n] {
				dst.f[i] = decToDouble(v, from.s)
			}
		case kString:
			for i := range n {
				dst.f[i] = 0
				if isNull(i) {
					continue
				}
				f, ok := parseSparkDouble(src.str(i))
				if !ok {
					setNull(i)
					continue
				}
				dst.f[i] = f
			}
		default:
			fillAllNull(dst, to, n)
		}
	case kDecimal:
		dst.d = growDecs(dst.d, n)
		if from.k != kInt && from.k != kLong && from.k != kDecimal {
			fillAllNull(dst, to, n)
			return
		}
		for i := range n {
			dst.d[i] = pq.Decimal128{}
			if isNull(i) {
				continue
			}
			v := pq.Decimal128{}
			if from.k == kDecimal {
				v = src.d[i]
			} else {
				v = pq.DecimalFromInt64(src.i[i])
			}
			d, ok := decRescale(v, from.s, to.s, to.p) // from.s is 0 for integers
			if !ok {
				setNull(i)
				continue
			}
			dst.d[i] = d
		}
	case kTimestamp:
		dst.i = growInts(dst.i, n)
		switch from.k {
		case kDate:
			for i, v := range src.i[:n] {
				dst.i[i] = v * 86400e6
			}
		case kString:
			for i := range n {
				dst.i[i] = 0
				if isNull(i) {
					continue
				}
				us, ok := parseTimestampString(string(src.str(i)))
				if !ok {
					setNull(i)
					continue
				}
				dst.i[i] = us
			}
		default:
			fillAllNull(dst, to, n)
		}
	case kDate:
		dst.i = growInts(dst.i, n)
		if from.k != kString {
			fillAllNull(dst, to, n)
			return
		}
		for i := range n {
			dst.i[i] = 0
			if isNull(i) {
				continue
			}
			d, ok := parseDateString(string(src.str(i)))
			if !ok {
				setNull(i)
				continue
			}
			dst.i[i] = d
		}
	case kBool:
		dst.b = growBools(dst.b, n)
		if from.k != kString {
			fillAllNull(dst, to, n)
			return
		}
		for i := range n {
			dst.b[i] = false
			if isNull(i) {
				continue
			}
			switch strings.ToLower(strings.TrimSpace(string(src.str(i)))) {
			case "t", "true", "y", "yes", "1":
				dst.b[i] = true
			case "f", "false", "n", "no", "0":
			default:
				setNull(i)
			}
		}
	case kString, kBinary:
		if from.k == kString || from.k == kBinary {
			dst.off, dst.data = src.off, src.data
			return
		}
		dst.data = dst.data[:0]
		dst.off = append(dst.off[:0], 0)
		for i := range n {
			if !isNull(i) {
				dst.data = appendSQLString(dst.data, src, from, i)
			}
			dst.off = append(dst.off, int32(len(dst.data)))
		}
	default:
		fillAllNull(dst, to, n)
	}
}

func fillAllNull(dst *vec, t sqlType, n int) {
	dst.null = growBools(nil, n)
	for i := range dst.null {
		dst.null[i] = true
	}
	fillZero(dst, t, n)
}

// decimalToDouble is exact-then-rounded, like Java's BigDecimal.doubleValue.
func decimalToDouble(v int64, scale int) float64 {
	if scale == 0 {
		return float64(v)
	}
	if v > -(1<<53) && v < 1<<53 && scale <= 22 {
		return float64(v) / math.Pow10(scale)
	}
	f, _ := strconv.ParseFloat(pq.FormatDecimal(pq.Decimal128{Hi: v >> 63, Lo: uint64(v)}, scale), 64)
	return f
}

// appendSQLString appends row i of src (of type t) as Spark casts it to a string.
func appendSQLString(dst []byte, src *vec, t sqlType, i int) []byte {
	switch t.k {
	case kBool:
		return strconv.AppendBool(dst, src.b[i])
	case kInt, kLong:
		return strconv.AppendInt(dst, src.i[i], 10)
	case kDouble:
		return append(dst, javaDoubleString(src.f[i])...)
	case kDecimal:
		return append(dst, pq.FormatDecimal(src.d[i], t.s)...)
	case kDate:
		return append(dst, formatDate(src.i[i])...)
	case kTimestamp:
		return append(dst, formatTimestampSQL(src.i[i])...)
	}
	return dst
}

// parseSparkIntegral is Spark's cast of a string to an int or bigint: surrounding
// whitespace is ignored, a fraction is truncated, anything else (or overflow) is NULL.
func parseSparkIntegral(b []byte, int32Range bool) (int64, bool) {
	s := strings.TrimFunc(string(b), isSQLSpace)
	if s == "" {
		return 0, false
	}
	whole, frac, hasDot := strings.Cut(s, ".")
	if hasDot {
		for _, ch := range frac {
			if ch < '0' || ch > '9' {
				return 0, false
			}
		}
	}
	digits := strings.TrimLeft(whole, "+-")
	if len(whole)-len(digits) > 1 || digits == "" && !hasDot || digits == "" && frac == "" {
		return 0, false
	}
	for _, ch := range digits {
		if ch < '0' || ch > '9' {
			return 0, false
		}
	}
	if digits == "" {
		return 0, true
	}
	v, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return 0, false
	}
	if int32Range && (v < math.MinInt32 || v > math.MaxInt32) {
		return 0, false
	}
	return v, true
}

// parseSparkDouble is Spark's cast of a string to a double: Java's number syntax (with an
// optional d/f suffix), Infinity, NaN (any case), surrounding whitespace ignored.
func parseSparkDouble(b []byte) (float64, bool) {
	s := strings.TrimFunc(string(b), isSQLSpace)
	switch strings.ToLower(strings.TrimLeft(s, "+-")) {
	case "inf", "infinity":
		if strings.HasPrefix(s, "-") {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case "nan":
		return math.NaN(), true
	}
	if n := len(s); n > 1 && strings.ContainsRune("dDfF", rune(s[n-1])) {
		s = s[:n-1]
	}
	if s == "" || strings.ContainsAny(s, "_xXpPiInN") {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false
	}
	return f, true
}
