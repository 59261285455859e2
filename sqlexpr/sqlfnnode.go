package sqlexpr

import "github.com/medallion-lake/medallion/pq"

// fnNode is the shape most scalar functions share: its arguments are evaluated column by
// column, then one kernel fills the whole output column. Unless keepNulls, a row where any
// argument is NULL is NULL (Spark's NULL in, NULL out) and the kernel skips it; the kernel
// may make more rows NULL (setNull), as Spark does for values out of a function's domain.
type fnNode struct {
	t         sqlType
	args      []enode
	keepNulls bool
	kernel    func(n int, a []*vec, o *vec)
	vs        []*vec
	nb        []bool // the output's nulls buffer, kept between batches
	out       vec
}

func (f *fnNode) typ() sqlType { return f.t }

func (f *fnNode) eval(c *evalCtx) *vec {
	if f.vs == nil {
		f.vs = make([]*vec, len(f.args))
	}
	var nulls [4][]bool
	ns := nulls[:0]
	for i, a := range f.args {
		f.vs[i] = a.eval(c)
		ns = append(ns, f.vs[i].nullSlice(c.n))
	}
	o := &f.out
	o.null = nil
	if !f.keepNulls {
		o.null = mergeNulls(f.nb, c.n, ns...)
		if o.null != nil {
			f.nb = o.null
		}
	}
	f.kernel(c.n, f.vs, o)
	return o
}

// setNull makes row r of o NULL, allocating o's nulls on the first.
func setNull(o *vec, n, r int) {
	if o.null == nil {
		o.null = make([]bool, n)
	}
	o.null[r] = true
}

// strOut fills o with n strings: row r is f(r, dst) appended to dst, or NULL when o is NULL
// there already or f says !ok.
func strOut(n int, o *vec, f func(r int, dst []byte) ([]byte, bool)) {
	o.data = o.data[:0]
	o.off = append(o.off[:0], 0)
	for r := range n {
		if !o.isNull(r) {
			d, ok := f(r, o.data)
			if ok {
				o.data = d
			} else {
				setNull(o, n, r)
			}
		}
		o.off = append(o.off, int32(len(o.data)))
	}
}

// numOut fills o's values of one kind (ints, doubles, booleans, decimals) with f's, as strOut.
func numOut[T any](n int, o *vec, vals *[]T, f func(r int) (T, bool)) {
	var zero T
	if cap(*vals) < n {
		*vals = make([]T, n)
	}
	*vals = (*vals)[:n]
	out := *vals
	for r := range n {
		out[r] = zero
		if o.isNull(r) {
			continue
		}
		v, ok := f(r)
		if !ok {
			setNull(o, n, r)
			continue
		}
		out[r] = v
	}
}

func intOut(n int, o *vec, f func(r int) (int64, bool))         { numOut(n, o, &o.i, f) }
func floatOut(n int, o *vec, f func(r int) (float64, bool))     { numOut(n, o, &o.f, f) }
func boolOut(n int, o *vec, f func(r int) (bool, bool))         { numOut(n, o, &o.b, f) }
func decOut(n int, o *vec, f func(r int) (pq.Decimal128, bool)) { numOut(n, o, &o.d, f) }
