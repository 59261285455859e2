package gold

import (
	"math"

	"github.com/medallion-lake/medallion/pq"
)

// Gold's value columns are filled a column at a time: for each column one loop over the
// emitted slots, reading one page array of the state front to back. A row at a time, each
// aggregate's value went through an AggValue (an exact sum copied, rounded to its double,
// then its limbs read again for the exact column), 7% of a 100k-key stream's CPU.

// appendValueColumns appends the emitted groups slots (in slot order) to every gold column but
// the keys': the window, each aggregate's columns, late_rows (column late) and the exact sums
// after it.
func (a *Aggregation) appendValueColumns(cols []*pq.Column, late int, slots []int32) error {
	w := cols[0]
	starts, ends := w.Children[0], w.Children[1]
	starts.Grow(len(slots), 0)
	ends.Grow(len(slots), 0)
	size := a.cfg.Window.Size
	for _, s := range slots {
		start := a.groups[s].start
		end := start + size
		if a.ends != nil {
			end = a.ends[s]
		}
		starts.AppendInt64(start)
		ends.AppendInt64(end)
		w.AppendStruct()
	}
	ci, xi := 1+a.cfg.NumKeys, late+1
	for _, ac := range a.accs {
		var exact *pq.Column
		if ac.exact {
			exact, xi = cols[xi], xi+1
		}
		n, err := a.appendAccColumns(cols[ci:], exact, ac, slots)
		if err != nil {
			return err
		}
		ci += n
	}
	lr := cols[late]
	lr.Grow(len(slots), 0)
	for range slots {
		lr.AppendInt64(0) // ColLateRows: the stream's rows absorbed no late row yet
	}
	return nil
}

// appendAccColumns appends aggregate ac's value of each slot to its columns cols[0:n] (and its
// exact sum to exact, when it keeps one) and returns n. Counts, sums, mins and maxes are read
// straight from the pages, a float sum's double and exact encoding from one reading of its
// limbs (Exact.appendSumBinary); averages and sketches go through AggValue and
// AppendAggregate a row at a time, as the rows of merge-late and replay do.
func (a *Aggregation) appendAccColumns(cols []*pq.Column, exact *pq.Column, ac *acc, slots []int32) (int, error) {
	direct := ac.hll == nil && ac.dd == nil && ac.seen == nil
	c := cols[0]
	switch {
	case direct && ac.spec.Fn == Count && !ac.wide:
		c.Grow(len(slots), 0)
		for _, s := range slots {
			c.AppendInt64(*ac.ns.at(s))
		}
		return 1, nil
	case direct && ac.wide && (ac.spec.Fn == Sum || ac.spec.Fn == Min || ac.spec.Fn == Max):
		c.Grow(len(slots), 0)
		if exact != nil {
			// A sum of amounts encodes in about 10 bytes (the 100k-key stream: 9.8 on average).
			exact.Grow(len(slots), 10*len(slots))
			a.appendExactSums(c, exact, ac, slots)
			return 1, nil
		}
		for _, s := range slots {
			cl := ac.cells.at(s)
			switch {
			case cl.n == 0:
				c.AppendNull()
			case !ac.spec.Int:
				c.AppendFloat64(math.Float64frombits(cl.v))
			case c.Kind == pq.KindInt32:
				c.AppendInt32(int32(cl.v))
			default:
				c.AppendInt64(int64(cl.v))
			}
		}
		return 1, nil
	}
	for _, s := range slots {
		v := ac.value(s, false)
		var err error
		if _, a.scratch, err = AppendAggregate(cols, ac.spec, &v, a.scratch); err != nil {
			return 0, err
		}
		if exact != nil {
			a.scratch = AppendExact(exact, &v, a.scratch)
		}
	}
	return aggregateWidth(ac.spec.Fn), nil
}

// appendExactSums appends a float sum's double to c and its exact encoding to exact (both null
// for a group without input), as appendNumber and AppendExact write value(s). The encoding goes
// straight into exact's bytes (AppendBytes(nil) then closes the row over them): encoded into a
// scratch first, each sum's bytes were copied once more on their way out. Writing the rows in
// output order from a slot-order scratch instead, to save the permutation's two copies as
// well, cost 8% more (BenchmarkEmitColumns): the permutation's copies are bulk ones, and
// the rows appended one at a time in random order cost more than they do.
func (a *Aggregation) appendExactSums(c, exact *pq.Column, ac *acc, slots []int32) {
	for _, s := range slots {
		if ac.cells.at(s).n == 0 {
			c.AppendNull()
			exact.AppendNull()
			continue
		}
		var f float64
		f, exact.Data = ac.xs.at(s).appendRounded(exact.Data)
		c.AppendFloat64(f)
		exact.AppendBytes(nil)
	}
}
