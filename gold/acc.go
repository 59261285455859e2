package gold

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/axiomhq/hyperloglog"
)

// cell is the state of a sum, avg, min or max: the count of inputs and the value, a float's
// bits or an int64 as the spec says. count and the sketches keep only a count (ns).
type cell struct {
	n int64
	v uint64
}

// acc is one aggregate's state for every group slot, column by column, so a batch updates it
// in one tight loop per aggregate instead of one dynamic call per (row, aggregate). Each
// function keeps only what it needs: 8 bytes a group for count, 16 for sum, avg, min and max
// (count and value on one cache line), 40 more for the exact sum of a float sum or avg, 8 and
// a pointer for a sketch.
type acc struct {
	spec  *AggSpec
	wide  bool // usesCells(spec.Fn)
	exact bool // xs holds the sums (spec.ExactSum())
	// ns, cells and xs are paged (pages.go): they grow one slot a group and never move.
	ns    paged[int64] // count, approx_count_distinct, approx_percentile
	cells paged[cell]  // sum, avg, min, max
	// xs are the exact sums of a float sum or avg (cells then keep only the counts).
	xs  paged[Exact]
	hll []*hyperloglog.Sketch
	dd  []*ddsketch.DDSketch
	tmp [8]byte
	// sketchBytes is each slot's sketch footprint as last measured (after every batch that
	// touched it), sketchTotal their sum: the state report counts what sketches hold without
	// walking every one of them each batch.
	sketchBytes []int64
	sketchTotal int64
	seen        map[uintptr]bool
}

// usesCells says whether fn keeps a value beside its count.
func usesCells(fn Func) bool { return fn == Sum || fn == Avg || fn == Min || fn == Max }

// measure refreshes slot s's sketch footprint.
func (a *acc) measure(s int32) {
	var n int64
	switch {
	case a.hll != nil && a.hll[s] != nil:
		n = sketchSize(a.hll[s], a.seen)
	case a.dd != nil && a.dd[s] != nil:
		n = sketchSize(a.dd[s], a.seen)
	}
	a.sketchTotal += n - a.sketchBytes[s]
	a.sketchBytes[s] = n
}

func newAcc(spec *AggSpec) *acc {
	a := &acc{spec: spec, wide: usesCells(spec.Fn), exact: spec.ExactSum()}
	if spec.Fn == ApproxCountDistinct || spec.Fn == ApproxPercentile {
		a.seen = map[uintptr]bool{}
	}
	return a
}

// grow makes room for slot s (slots are allocated densely from 0).
func (a *acc) grow(s int32) {
	if a.wide {
		a.cells.grow(int(s) + 1)
		if a.exact {
			a.xs.grow(int(s) + 1)
		}
	} else {
		a.ns.grow(int(s) + 1)
	}
	// A sketch's pointer and footprint stay in slices: only the sketch functions have them.
	for a.seen != nil && int(s) >= len(a.sketchBytes) {
		if a.spec.Fn == ApproxCountDistinct {
			a.hll = append(a.hll, nil)
		}
		if a.spec.Fn == ApproxPercentile {
			a.dd = append(a.dd, nil)
		}
		a.sketchBytes = append(a.sketchBytes, 0)
	}
}

// clear resets slot s for reuse by a new group.
func (a *acc) clear(s int32) {
	if a.wide {
		*a.cells.at(s) = cell{}
	} else {
		*a.ns.at(s) = 0
	}
	if a.exact {
		*a.xs.at(s) = Exact{} // drops, never changes, a wide part an emitted value may share
	}
	if a.hll != nil {
		a.hll[s] = nil
	}
	if a.dd != nil {
		a.dd[s] = nil
	}
	if a.seen != nil {
		a.sketchTotal -= a.sketchBytes[s]
		a.sketchBytes[s] = 0
	}
}

func (a *acc) checkColumn(c *Column) error {
	sp := a.spec
	switch sp.Fn {
	case Sum, Avg, Min, Max:
		if sp.Int && c.Int64 == nil || !sp.Int && c.Float64 == nil {
			return fmt.Errorf("%w: aggregate %q wants an %s column", ErrBadInput, sp.Name, map[bool]string{true: "int64", false: "float64"}[sp.Int])
		}
	case ApproxPercentile:
		if c.Int64 == nil && c.Float64 == nil {
			return fmt.Errorf("%w: aggregate %q wants a numeric column", ErrBadInput, sp.Name)
		}
	}
	return nil
}

// update folds input rows[k] into slots[k] for every k.
func (a *acc) update(slots, rows []int32, c *Column) error {
	sp := a.spec
	if sp.Fn == Count && sp.Column < 0 {
		for _, s := range slots {
			*a.ns.at(s)++
		}
		return nil
	}
	hasNulls := c.Valid != nil
	switch sp.Fn {
	case Count:
		for k, s := range slots {
			if !hasNulls || c.Valid[rows[k]] {
				*a.ns.at(s)++
			}
		}
	case Sum, Avg:
		if sp.Int {
			for k, s := range slots {
				if r := rows[k]; !hasNulls || c.Valid[r] {
					cl := a.cells.at(s)
					cl.v = uint64(int64(cl.v) + c.Int64[r])
					cl.n++
				}
			}
		} else {
			for k, s := range slots {
				if r := rows[k]; !hasNulls || c.Valid[r] {
					a.xs.at(s).Add(c.Float64[r])
					a.cells.at(s).n++
				}
			}
		}
	case Min, Max:
		isMin := sp.Fn == Min
		for k, s := range slots {
			r := rows[k]
			if hasNulls && !c.Valid[r] {
				continue
			}
			cl := a.cells.at(s)
			if sp.Int {
				x := c.Int64[r]
				if cl.n == 0 || (isMin && x < int64(cl.v)) || (!isMin && x > int64(cl.v)) {
					cl.v = uint64(x)
				}
			} else if x := c.Float64[r]; cl.n == 0 {
				cl.v = math.Float64bits(x)
			} else {
				cl.v = math.Float64bits(pickFloat(sp.Fn, math.Float64frombits(cl.v), x))
			}
			cl.n++
		}
	case ApproxCountDistinct:
		for k, s := range slots {
			r := rows[k]
			if hasNulls && !c.Valid[r] {
				continue
			}
			sk := a.hll[s]
			if sk == nil {
				var err error
				if sk, err = hyperloglog.NewSketch(sp.hllPrecision(), true); err != nil {
					return fmt.Errorf("gold: aggregate %q: %w", sp.Name, err)
				}
				a.hll[s] = sk
			}
			switch {
			case c.Bytes != nil:
				sk.Insert(c.Bytes.Value(int(r)))
			case c.Int64 != nil:
				binary.LittleEndian.PutUint64(a.tmp[:], uint64(c.Int64[r]))
				sk.Insert(a.tmp[:])
			default:
				x := c.Float64[r]
				if x == 0 {
					x = 0 // -0 and 0 are one value
				}
				binary.LittleEndian.PutUint64(a.tmp[:], math.Float64bits(x))
				sk.Insert(a.tmp[:])
			}
			*a.ns.at(s)++
		}
	case ApproxPercentile:
		for k, s := range slots {
			r := rows[k]
			if hasNulls && !c.Valid[r] {
				continue
			}
			x := 0.0
			if c.Int64 != nil {
				x = float64(c.Int64[r])
			} else if x = c.Float64[r]; math.IsNaN(x) || math.IsInf(x, 0) {
				continue // DDSketch cannot place them; Spark's percentile_approx skips NaN too
			}
			sk := a.dd[s]
			if sk == nil {
				var err error
				if sk, err = ddsketch.NewDefaultDDSketch(sp.relAcc()); err != nil {
					return fmt.Errorf("gold: aggregate %q: %w", sp.Name, err)
				}
				a.dd[s] = sk
			}
			if err := sk.Add(x); err != nil {
				return fmt.Errorf("gold: aggregate %q: add %v: %w", sp.Name, x, err)
			}
			*a.ns.at(s)++
		}
	}
	return nil
}

// appendBinary appends slot s as AggValue.AppendBinary encodes value(s, false), read straight
// from the pages: a state delta or snapshot encodes every group it holds, and building an
// AggValue for each (copying the exact sum, rounding it, then reading its limbs again to encode
// them) was most of what writing a delta cost. Sketches still go through AggValue.
func (a *acc) appendBinary(dst []byte, s int32) ([]byte, error) {
	if a.seen != nil {
		v := a.value(s, false)
		return v.AppendBinary(dst)
	}
	var flags byte
	if a.spec.Int {
		flags |= 1
	}
	if a.exact {
		flags |= 4
	}
	dst = append(dst, byte(a.spec.Fn), flags)
	if !a.wide {
		dst = binary.AppendVarint(dst, *a.ns.at(s))
		return append(dst, 0, 0, 0, 0, 0, 0, 0, 0, 0), nil // F 0 (8 bytes), I 0 (a byte)
	}
	c := a.cells.at(s)
	dst = binary.AppendVarint(dst, c.n)
	switch {
	case a.exact:
		return a.xs.at(s).appendSumBinary(dst), nil
	case a.spec.Int:
		dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
		return binary.AppendVarint(dst, int64(c.v)), nil
	default: // a float min or max: the cell holds the double's bits
		dst = binary.BigEndian.AppendUint64(dst, c.v)
		return append(dst, 0), nil
	}
}

// value is slot s as an AggValue; sketches are shared unless clone is set.
func (a *acc) value(s int32, clone bool) AggValue {
	v := AggValue{Fn: a.spec.Fn, Int: a.spec.Int}
	if a.wide {
		c := a.cells.at(s)
		v.N = c.n
		switch {
		case a.spec.Int:
			v.I = int64(c.v)
		case a.exact:
			v.X = *a.xs.at(s)
			if clone {
				v.X = v.X.Clone()
			}
			v.F = v.X.Float64()
		default:
			v.F = math.Float64frombits(c.v)
		}
	} else {
		v.N = *a.ns.at(s)
	}
	if a.hll != nil && a.hll[s] != nil {
		v.HLL = a.hll[s]
		if clone {
			v.HLL = v.HLL.Clone()
		}
	}
	if a.dd != nil && a.dd[s] != nil {
		v.DD = a.dd[s]
		if clone {
			v.DD = v.DD.Copy()
		}
	}
	return v
}

func (a *acc) set(s int32, v AggValue) {
	if a.wide {
		x := math.Float64bits(v.F)
		if a.spec.Int {
			x = uint64(v.I)
		}
		*a.cells.at(s) = cell{n: v.N, v: x}
		if a.exact {
			*a.xs.at(s) = v.X
		}
	} else {
		*a.ns.at(s) = v.N
	}
	if a.hll != nil {
		a.hll[s] = v.HLL
	}
	if a.dd != nil {
		a.dd[s] = v.DD
	}
	if a.seen != nil {
		a.measure(s)
	}
}

// mergeSlot folds slot src into dst (session fusion).
func (a *acc) mergeSlot(dst, src int32) error {
	v := a.value(dst, false)
	o := a.value(src, false)
	if err := v.Merge(&o); err != nil {
		return err
	}
	a.set(dst, v)
	return nil
}
