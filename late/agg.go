package late

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/pq"
)

// group is one (window, keys) aggregate computed from input rows.
type group struct {
	key  string // groupKey encoding
	win  gold.Window
	keys []pq.KeyPart
	// vals are the aggregates in spec order; rows counts the (row, window) pairs.
	vals []gold.AggValue
	rows int64
}

// collector aggregates (row, window) pairs with gold's own mergeable aggregates: it feeds an
// Update-mode operator over one all-covering window whose group key carries the real window,
// so every function (sketches included) is computed exactly as the stream computes it. Each
// flush emits only the groups it updated, so the work stays proportional to the input.
type collector struct {
	a      *agg
	op     *gold.Aggregation
	in     gold.Input
	cols   []colBuf
	latest map[string]*group
}

type colBuf struct {
	kind  pq.Kind
	ints  []int64
	flts  []float64
	bin   gold.Binary
	valid []bool
	nulls bool
}

// flushRows bounds the operator's input buffers.
const flushRows = 1 << 16

func newCollector(a *agg) (*collector, error) {
	all, err := gold.Tumbling(1 << 62)
	if err != nil {
		return nil, err
	}
	specs := append(append([]gold.AggSpec(nil), a.specs...), gold.AggSpec{Fn: gold.Count, Column: -1, Name: gold.ColLateRows})
	op, err := gold.NewAggregation(gold.AggConfig{Window: all, Mode: gold.Update, Aggs: specs, NumKeys: len(a.keyNames) + 2, NoWatermark: true})
	if err != nil {
		return nil, fmt.Errorf("late: gold %s: %w", a.cfg.Name, err)
	}
	c := &collector{a: a, op: op, cols: make([]colBuf, len(a.inCols)), latest: map[string]*group{}}
	for k, kind := range a.inKinds {
		c.cols[k].kind = kind
	}
	return c, nil
}

// source is a batch of input rows with the columns an aggregation reads.
type source struct {
	b    *pq.Batch
	ev   *pq.Column
	keys []*pq.Column
	in   []*pq.Column
}

func (a *agg) source(b *pq.Batch) (*source, error) {
	s := &source{b: b, ev: b.Column(a.evName)}
	if s.ev == nil {
		return nil, fmt.Errorf("late: gold %s: input lacks the event time column %s", a.cfg.Name, a.evName)
	}
	for _, k := range a.keyNames {
		c := b.Column(k)
		if c == nil {
			return nil, fmt.Errorf("late: gold %s: input lacks the group_by column %s", a.cfg.Name, k)
		}
		s.keys = append(s.keys, c)
	}
	for _, n := range a.inCols {
		c := b.Column(n)
		if c == nil {
			return nil, fmt.Errorf("late: gold %s: input lacks the aggregate column %s", a.cfg.Name, n)
		}
		s.in = append(s.in, c)
	}
	return s, nil
}

// add counts row i of s into window w.
func (c *collector) add(s *source, i int, w gold.Window) error {
	in := &c.in
	in.Keys.Data = groupKey(in.Keys.Data, w.Start, w.End, s.keys, i)
	in.Keys.EndValue()
	in.EventTime = append(in.EventTime, 0)
	for k, col := range s.in {
		cb := &c.cols[k]
		null := col.IsNull(i)
		cb.nulls = cb.nulls || null
		cb.valid = append(cb.valid, !null)
		switch col.Kind {
		case pq.KindInt64:
			cb.ints = append(cb.ints, col.Int64[i])
		case pq.KindInt32:
			cb.ints = append(cb.ints, int64(col.Int32[i]))
		case pq.KindFloat64:
			cb.flts = append(cb.flts, col.Float64[i])
		case pq.KindFloat32:
			cb.flts = append(cb.flts, float64(col.Float32[i]))
		case pq.KindBytes:
			cb.bin.Append(col.BytesAt(i))
		default: // count(col) of another type: only nullness matters
			cb.ints = append(cb.ints, 0)
		}
	}
	if len(in.EventTime) >= flushRows {
		return c.flush()
	}
	return nil
}

func (c *collector) flush() error {
	in := &c.in
	in.Columns = in.Columns[:0]
	for k := range c.cols {
		cb := &c.cols[k]
		var gc gold.Column
		switch cb.kind {
		case pq.KindFloat64, pq.KindFloat32:
			gc.Float64 = append([]float64{}, cb.flts...)
		case pq.KindBytes:
			gc.Bytes = &cb.bin
		default:
			gc.Int64 = append([]int64{}, cb.ints...)
		}
		if cb.nulls {
			gc.Valid = cb.valid
		}
		in.Columns = append(in.Columns, gc)
	}
	res, err := c.op.ProcessBatch(in, 0, 0)
	if err != nil {
		return fmt.Errorf("late: gold %s: %w", c.a.cfg.Name, err)
	}
	for _, r := range res.Rows {
		g := c.latest[r.Key]
		if g == nil {
			parts, err := pq.DecodeKey(r.Key)
			if err != nil || len(parts) != len(c.a.keyNames)+2 {
				return fmt.Errorf("late: gold %s: bad group key (%v)", c.a.cfg.Name, err)
			}
			start, _ := parts[0].(int64)
			end, _ := parts[1].(int64)
			g = &group{key: r.Key, win: gold.Window{Start: start, End: end}, keys: parts[2:]}
			c.latest[r.Key] = g
		}
		// Update mode hands out cloned states, valid after the next batch; the slice is ours.
		n := len(r.Aggs) - 1
		g.vals, g.rows = append(g.vals[:0], r.Aggs[:n]...), r.Aggs[n].N
	}
	in.EventTime = in.EventTime[:0]
	in.Keys.Reset()
	for k := range c.cols {
		cb := &c.cols[k]
		cb.ints, cb.flts, cb.valid, cb.nulls = cb.ints[:0], cb.flts[:0], cb.valid[:0], false
		cb.bin.Reset()
	}
	return nil
}

// groups flushes and returns every group, ordered by window then key bytes.
func (c *collector) groups() ([]*group, error) {
	if err := c.flush(); err != nil {
		return nil, err
	}
	out := make([]*group, 0, len(c.latest))
	for _, g := range c.latest {
		out = append(out, g)
	}
	slices.SortFunc(out, func(x, y *group) int {
		return cmp.Or(cmp.Compare(x.win.Start, y.win.Start), cmp.Compare(x.win.End, y.win.End), strings.Compare(x.key, y.key))
	})
	return out, nil
}

// appendRow writes one gold row: window, keys, the aggregates in the gold layout and late_rows.
func (a *agg) appendRow(out *pq.Batch, win gold.Window, keys []pq.KeyPart, vals []gold.AggValue, lateRows int64) error {
	set := make([]bool, len(out.Columns))
	w := out.Columns[a.winCol]
	w.AppendStruct()
	w.Children[0].AppendInt64(win.Start)
	w.Children[1].AppendInt64(win.End)
	set[a.winCol] = true
	for k, ci := range a.keyCols {
		pq.AppendKeyValue(out.Columns[ci], keys[k])
		set[ci] = true
	}
	var sketch []byte
	for si := range a.specs {
		ci := a.aggCol[si]
		n, sk, err := gold.AppendAggregate(out.Columns[ci:], &a.specs[si], &vals[si], sketch)
		if err != nil {
			return fmt.Errorf("late: gold %s aggregate %s: %w", a.cfg.Name, a.specs[si].Name, err)
		}
		sketch = sk
		for k := range n {
			set[ci+k] = true
		}
		if xi := a.exactCol[si]; xi >= 0 {
			sketch = gold.AppendExact(out.Columns[xi], &vals[si], sketch)
			set[xi] = true
		}
	}
	out.Columns[a.lateCol].AppendInt64(lateRows)
	set[a.lateCol] = true
	for i, ok := range set {
		if !ok {
			out.Columns[i].AppendNull()
		}
	}
	return nil
}

// valuesOf reads row i of a gold batch back into mergeable aggregates. A sum, min or max only
// needs to know whether it saw any input, so its count is 1 when it is not null. A float
// sum's or avg's exact sum comes from its exact column, or is the exact value of the double
// where that is null or missing (gold.ReadExact).
func (a *agg) valuesOf(b *pq.Batch, i int) ([]gold.AggValue, int64, error) {
	vals := make([]gold.AggValue, len(a.specs))
	for si := range a.specs {
		spec, v, ci := &a.specs[si], &vals[si], a.aggCol[si]
		v.Fn, v.Int = spec.Fn, spec.Int
		switch spec.Fn {
		case gold.Count, gold.Sum, gold.Min, gold.Max:
			readContractAgg(v, b.Columns[ci], nil, nil, i)
		case gold.Avg:
			readContractAgg(v, nil, b.Columns[ci+1], b.Columns[ci+2], i)
		case gold.ApproxCountDistinct, gold.ApproxPercentile:
			sk := b.Columns[ci+1]
			if sk.IsNull(i) {
				continue
			}
			d, _, err := gold.DecodeAggValue(sk.BytesAt(i))
			if err != nil {
				return nil, 0, fmt.Errorf("late: gold %s aggregate %s: sketch of row %d: %w", a.cfg.Name, spec.Name, i, err)
			}
			*v = d
		}
		if spec.ExactSum() && v.N > 0 {
			var exact *pq.Column
			if xi := a.exactCol[si]; xi >= 0 {
				exact = b.Columns[xi]
			}
			if err := readExactSum(v, exact, i); err != nil {
				return nil, 0, fmt.Errorf("late: gold %s column %s of row %d: %w", a.cfg.Name, gold.ExactColumn(spec.Name), i, err)
			}
		}
	}
	return vals, intAt(b.Columns[a.lateCol], i), nil
}

// readContractAgg reads row i of one aggregate of the gold row contract into v (Fn and Int
// set): a count's value; a sum, min or max from val when it is not null, with count 1 (merging
// only needs to know it saw input); an avg from its _sum and _count columns (val unused).
// Sketches and a float sum's exact column are read by the callers (readExactSum).
func readContractAgg(v *gold.AggValue, val, avgSum, avgCount *pq.Column, i int) {
	switch v.Fn {
	case gold.Count:
		v.N = intAt(val, i)
	case gold.Sum, gold.Min, gold.Max:
		if !val.IsNull(i) {
			v.N = 1
			readNumber(val, i, v)
		}
	case gold.Avg:
		v.N = intAt(avgCount, i)
		if !avgSum.IsNull(i) {
			readNumber(avgSum, i, v)
		}
	}
}

// readExactSum sets v.X, the exact sum of a float sum or avg, from row i of its exact column;
// where that is nil (an older table) or null, it is the exact value of the double (gold.ReadExact).
func readExactSum(v *gold.AggValue, exact *pq.Column, i int) error {
	var enc []byte
	if exact != nil && !exact.IsNull(i) {
		enc = exact.BytesAt(i)
	}
	x, err := gold.ReadExact(enc, v.F)
	if err != nil {
		return err
	}
	v.X = x
	return nil
}

func intAt(c *pq.Column, i int) int64 {
	if c.IsNull(i) {
		return 0
	}
	switch c.Kind {
	case pq.KindInt64:
		return c.Int64[i]
	case pq.KindInt32:
		return int64(c.Int32[i])
	}
	return 0
}

func readNumber(c *pq.Column, i int, v *gold.AggValue) {
	switch c.Kind {
	case pq.KindInt64:
		v.I = c.Int64[i]
	case pq.KindInt32:
		v.I = int64(c.Int32[i])
	case pq.KindFloat64:
		v.F = c.Float64[i]
	case pq.KindFloat32:
		v.F = float64(c.Float32[i])
	}
}

// goldRow reads gold rows' windows and group-by key columns (reusing one slice of them).
type goldRow struct {
	a    *agg
	keys []*pq.Column
}

// at returns row i's window and key columns; ok false for a row without a whole window.
func (r *goldRow) at(b *pq.Batch, i int) (start, end int64, keys []*pq.Column, ok bool) {
	win := b.Columns[r.a.winCol]
	if win.IsNull(i) || win.Children[0].IsNull(i) || win.Children[1].IsNull(i) {
		return 0, 0, nil, false
	}
	r.keys = r.keys[:0]
	for _, ci := range r.a.keyCols {
		r.keys = append(r.keys, b.Columns[ci])
	}
	return win.Children[0].Int64[i], win.Children[1].Int64[i], r.keys, true
}

// goldRowFunc decides for a gold row with a whole window, given its window and key columns.
type goldRowFunc func(out, b *pq.Batch, i int, start, end int64, keys []*pq.Column) (rowAction, error)

// rows is a rewrite's row callback that keeps the rows without a whole window and hands the
// others to fn.
func (r *goldRow) rows(fn goldRowFunc) func(out, b *pq.Batch, i int) (rowAction, error) {
	return func(out, b *pq.Batch, i int) (rowAction, error) {
		start, end, keys, ok := r.at(b, i)
		if !ok {
			return keepRow, nil
		}
		return fn(out, b, i, start, end, keys)
	}
}
