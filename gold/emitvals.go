package gold

import (
	"math"
	"slices"

	"github.com/medallion-lake/medallion/pq"
)

// Gold's value columns are filled a column at a time: for each column one loop over the
// emitted slots, reading one page array of the state front to back. A row at a time, each
// aggregate's value went through an AggValue (an exact sum copied, rounded to its double,
// then its limbs read again for the exact column), 7% of a 100k-key stream's CPU.

// appendValueColumns appends the emitted groups slots (in slot order) to every gold column but
// the keys': the window, each aggregate's columns, late_rows (column late) and the exact sums
// after it. A float sum and its exact sum are appended in output order (perm, as writeColumns
// takes it) instead, and say so in ordered (one flag a column, all false on entry).
func (a *Aggregation) appendValueColumns(cols []*pq.Column, late int, slots, perm []int32, ordered []bool) error {
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
		n, inOrder, err := a.appendAccColumns(cols[ci:], exact, ac, slots, perm)
		if err != nil {
			return err
		}
		if inOrder {
			ordered[ci], ordered[xi-1] = true, true
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
// exact sum to exact, when it keeps one) and returns n, and whether it appended them in output
// order (perm) rather than slot order. Counts, sums, mins and maxes are read straight from the
// pages, a float sum's double and exact encoding from one reading of its limbs
// (appendExactSums, in output order); averages and sketches go through AggValue and
// AppendAggregate a row at a time, as the rows of merge-late and replay do.
func (a *Aggregation) appendAccColumns(cols []*pq.Column, exact *pq.Column, ac *acc, slots, perm []int32) (int, bool, error) {
	direct := ac.hll == nil && ac.dd == nil && ac.seen == nil
	c := cols[0]
	switch {
	case direct && ac.spec.Fn == Count && !ac.wide:
		c.Grow(len(slots), 0)
		for _, s := range slots {
			c.AppendInt64(*ac.ns.at(s))
		}
		return 1, false, nil
	case direct && ac.wide && (ac.spec.Fn == Sum || ac.spec.Fn == Min || ac.spec.Fn == Max):
		c.Grow(len(slots), 0)
		if exact != nil {
			a.appendExactSums(c, exact, ac, slots, perm)
			return 1, true, nil
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
		return 1, false, nil
	}
	for _, s := range slots {
		v := ac.value(s, false)
		var err error
		if _, a.scratch, err = AppendAggregate(cols, ac.spec, &v, a.scratch); err != nil {
			return 0, false, err
		}
		if exact != nil {
			a.scratch = AppendExact(exact, &v, a.scratch)
		}
	}
	return aggregateWidth(ac.spec.Fn), false, nil
}

// appendExactSums appends a float sum's double to c and its exact encoding to exact (both null
// for a group without input), as appendNumber and AppendExact write value(s), in output order:
// row i is slots[perm[i]]. The sums are read in slot order (the state front to back) and
// encoded straight into a slot-order scratch, whose bytes are then copied once, in output
// order, into exact. Encoded into the column in slot order and permuted there, each sum's
// bytes were copied three times (scratch to column, column to the permutation's copy, back).
func (a *Aggregation) appendExactSums(c, exact *pq.Column, ac *acc, slots, perm []int32) {
	p := &a.permBuf
	// A sum of amounts encodes in about 10 bytes (the 100k-key stream: 9.8 on average).
	data := slices.Grow(p.data[:0], 10*len(slots))
	sums := slices.Grow(p.sums[:0], len(slots))
	for _, s := range slots {
		e := exactSum{from: int32(len(data))}
		if ac.cells.at(s).n != 0 {
			e.f, data = ac.xs.at(s).appendRounded(data)
		}
		e.to = int32(len(data))
		sums = append(sums, e)
	}
	exact.Grow(len(perm), len(data))
	for _, j := range perm {
		e := &sums[j]
		if e.from == e.to {
			c.AppendNull()
			exact.AppendNull()
			continue
		}
		c.AppendFloat64(e.f)
		exact.AppendBytes(data[e.from:e.to])
	}
	p.data, p.sums = data, sums
}

// exactSum is a group's rounded sum and where its exact encoding lies in appendExactSums'
// scratch (from == to: a null; an encoding is never empty), side by side so that the rows
// taken in output order find both in one cache line.
type exactSum struct {
	f        float64
	from, to int32
}
