package sqlexpr

import "github.com/medallion-lake/medallion/pq"

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

// widen converts src into dst (as long), for the 32-bit columns the engine computes on as
// 64-bit ones.
func widen[To int64 | float64, From int32 | float32](dst []To, src []From) []To {
	for r, v := range src {
		dst[r] = To(v)
	}
	return dst
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
		o.i = widen(growInts(o.i, c.n), col.Int32[:c.n])
	case pq.KindFloat64:
		o.f = col.Float64[:c.n]
	case pq.KindFloat32:
		o.f = widen(growFloats(o.f, c.n), col.Float32[:c.n])
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
