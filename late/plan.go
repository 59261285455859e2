package late

import (
	"fmt"
	"strings"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/txlog"
)

// agg is one gold aggregation resolved against the schema of the rows it reads (silver's
// columns) and the schema of its gold table.
type agg struct {
	cfg      *spec.Aggregation
	window   gold.WindowSpec
	session  *gold.SessionSpec
	evName   string
	keyNames []string
	// specs are the config's aggregates in order; AggSpec.Column indexes inCols.
	specs   []gold.AggSpec
	inCols  []string
	inKinds []pq.Kind
	gold    *txlog.StructType
	// Column indexes in the gold schema: the window, the group-by keys, the first column of
	// each aggregate and late_rows.
	winCol, lateCol int
	keyCols, aggCol []int
	// exactCol is each aggregate's internal exact-sum column (gold.ExactColumn) in the gold
	// schema: -1 for an aggregate without one, or a gold table that lacks it (created before
	// sums were exact, or by Spark: see evolveGold).
	exactCol []int
	// missingExact are the exact-sum columns the gold table lacks.
	missingExact []txlog.StructField
}

func resolve(q *spec.Query, g *spec.Aggregation, in, goldSchema *txlog.StructType) (*agg, error) {
	a := &agg{cfg: g, evName: q.Rules.EventTime, keyNames: g.GroupBy, gold: goldSchema}
	if g.TimeColumn != "" {
		// An aggregation over a join windows one of the joined table's time columns.
		a.evName = g.TimeColumn
	}
	switch {
	case g.Window.Session:
		s, err := gold.NewSessionSpec(g.Window.Gap.Microseconds())
		if err != nil {
			return nil, fmt.Errorf("late: gold %s: %w", g.Name, err)
		}
		a.session = &s
	default:
		w, err := gold.NewWindowSpec(g.Window.Size.Microseconds(), g.Window.Slide.Microseconds(), g.Window.Start.Microseconds())
		if err != nil {
			return nil, fmt.Errorf("late: gold %s: %w", g.Name, err)
		}
		a.window = w
	}
	kindOf := func(what, name string) (pq.Kind, error) {
		// Under column mapping another engine may have renamed the column (the field whose
		// physical name is still name): the rows written before hold its values there, and a
		// column of that name added since is NULL in them. Replay rebuilt gold from those NULLs.
		for _, o := range in.Fields {
			if !strings.EqualFold(o.Name, name) && strings.EqualFold(o.PhysicalName(), name) {
				return 0, fmt.Errorf("late: gold %s: %s column %q of the input is its column %q, renamed by another engine "+
					"(its column mapping physical name is still %s): rename it back (ALTER TABLE ... RENAME COLUMN %s TO %s, "+
					"after dropping a column %s added since)", g.Name, what, name, o.Name, o.PhysicalName(), o.Name, name, name)
			}
		}
		f := in.Field(name)
		if f == nil {
			return 0, fmt.Errorf("late: gold %s: %s column %q is not in the input schema", g.Name, what, name)
		}
		return pq.KindOf(f.Type)
	}
	if k, err := kindOf("event time", a.evName); err != nil {
		return nil, err
	} else if k != pq.KindInt64 {
		return nil, fmt.Errorf("late: gold %s: event time column %q is not a timestamp", g.Name, a.evName)
	}
	for _, k := range g.GroupBy {
		if _, err := kindOf("group_by", k); err != nil {
			return nil, err
		}
	}
	for _, c := range g.Aggregates {
		fn, err := gold.ParseFunc(c.Fn)
		if err != nil {
			return nil, fmt.Errorf("late: gold %s aggregate %s: %w", g.Name, c.As, err)
		}
		spec := gold.AggSpec{Fn: fn, Column: -1, Name: c.As, Percentiles: c.Percentiles, RelativeAccuracy: c.RelativeAccuracy, RSD: c.RSD}
		if c.Column != "" {
			k, err := kindOf("aggregate "+c.As, c.Column)
			if err != nil {
				return nil, err
			}
			spec.Int = k == pq.KindInt64 || k == pq.KindInt32
			spec.Column = len(a.inCols)
			a.inCols = append(a.inCols, c.Column)
			a.inKinds = append(a.inKinds, k)
		}
		a.specs = append(a.specs, spec)
	}
	col := func(name string) (int, error) {
		i := goldSchema.FieldIndex(name)
		if i < 0 {
			return 0, fmt.Errorf("late: gold %s: column %q is not in the gold table", g.Name, name)
		}
		return i, nil
	}
	var err error
	if a.winCol, err = col(gold.ColWindow); err != nil {
		return nil, err
	}
	if a.lateCol, err = col(gold.ColLateRows); err != nil {
		return nil, err
	}
	for _, k := range g.GroupBy {
		i, err := col(k)
		if err != nil {
			return nil, err
		}
		a.keyCols = append(a.keyCols, i)
	}
	for _, s := range a.specs {
		i, err := col(s.Name)
		if err != nil {
			return nil, err
		}
		var extra []string
		switch s.Fn {
		case gold.Avg:
			extra = []string{s.Name + gold.SuffixSum, s.Name + gold.SuffixCount}
		case gold.ApproxCountDistinct, gold.ApproxPercentile:
			extra = []string{s.Name + gold.SuffixSketch}
		}
		for k, e := range extra {
			if goldSchema.FieldIndex(e) != i+1+k {
				return nil, fmt.Errorf("late: gold %s: column %q must follow %q in the gold table", g.Name, e, s.Name)
			}
		}
		a.aggCol = append(a.aggCol, i)
		xi := -1
		if s.ExactSum() {
			xi = goldSchema.FieldIndex(gold.ExactColumn(s.Name))
		}
		a.exactCol = append(a.exactCol, xi)
	}
	for _, f := range gold.ExactFields(a.specs) {
		if goldSchema.FieldIndex(f.Name) < 0 {
			a.missingExact = append(a.missingExact, f)
		}
	}
	return a, nil
}

// windowsOf appends the windows a row at t applies to: every window when lateWM < 0, else
// only those already closed by the late-row watermark lateWM (ms).
func (a *agg) windowsOf(dst []gold.Window, t, lateWM int64) []gold.Window {
	if lateWM < 0 {
		return a.window.Assign(dst, t)
	}
	return a.window.LateWindows(dst, t, lateWM)
}

// groupKey is the composite key of a gold row: window start, window end, then the group keys.
func groupKey(dst []byte, start, end int64, keys []*pq.Column, i int) []byte {
	dst = pq.AppendKeyInt64(dst, start)
	dst = pq.AppendKeyInt64(dst, end)
	for _, c := range keys {
		dst = pq.AppendKeyPart(dst, c, i)
	}
	return dst
}
