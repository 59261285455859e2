package silver

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/txlog"
)

// ReasonFilteredPrefix starts the rejects reason of a row a transform filter with on_filter
// reject filtered out (filtered:<name>).
const ReasonFilteredPrefix = "filtered:"

// Transform is a source's silver transform (docs/transforms.md): computed columns, appended to
// the bronze columns in order, and a row filter (Spark's WHERE: false or NULL filters the row
// out).
type Transform struct {
	Columns []ComputedColumn
	Filter  *Filter // nil: none
}

// ComputedColumn is a column computed by a Spark SQL expression (sqlexpr.ParseSQL) over the
// columns before it.
type ComputedColumn struct {
	Name, Expr string
}

// Filter keeps the rows whose Expr is true. Drop only counts the rows it filters out; otherwise
// they go to rejects with reason filtered:<Name>.
type Filter struct {
	Name, Expr string
	Drop       bool
}

// IsZero reports whether t does nothing.
func (t Transform) IsZero() bool { return len(t.Columns) == 0 && t.Filter == nil }

// Transformer is a Transform compiled against a bronze schema. Not safe for concurrent use (the
// programs keep their buffers).
type Transformer struct {
	t      Transform
	bronze *txlog.StructType
	out    *txlog.StructType
	cols   []*sqlexpr.Program
	filter *sqlexpr.Program
	keep   []bool
}

// NewTransformer compiles t over bronze: each computed column against bronze's columns and the
// computed ones before it, the filter against all of them. The error names the column or the
// filter and the position in its expression.
func NewTransformer(ctx context.Context, t Transform, bronze *txlog.StructType) (*Transformer, error) {
	x := &Transformer{t: t, bronze: bronze}
	st := &txlog.StructType{Fields: append([]txlog.StructField(nil), bronze.Fields...)}
	for _, c := range t.Columns {
		e, err := sqlexpr.ParseSQLContext(ctx, c.Expr)
		if err != nil {
			return nil, fmt.Errorf("silver: computed column %q: %w", c.Name, err)
		}
		p, err := sqlexpr.CompileColumn(ctx, e, st)
		if err != nil {
			return nil, fmt.Errorf("silver: computed column %q: %w", c.Name, err)
		}
		typ, _ := p.ResultType() // CompileColumn refuses what has no column type
		st = &txlog.StructType{Fields: append(st.Fields, txlog.StructField{Name: c.Name, Type: typ, Nullable: true})}
		x.cols = append(x.cols, p)
	}
	x.out = st
	if f := t.Filter; f != nil {
		e, err := sqlexpr.ParseSQLContext(ctx, f.Expr)
		if err != nil {
			return nil, fmt.Errorf("silver: filter %q: %w", f.Name, err)
		}
		if x.filter, err = sqlexpr.CompileSQLContext(ctx, e, st); err != nil {
			return nil, fmt.Errorf("silver: filter %q: %w", f.Name, err)
		}
	}
	return x, nil
}

// Schema is silver's schema: bronze's columns, then the computed ones.
func (x *Transformer) Schema() *txlog.StructType { return x.out }

// Apply returns b (a batch of the bronze schema) with the computed columns appended, evaluated
// with current_timestamp() = now (the batch timestamp, so that a rerun computes the same). b
// itself is left as it was.
func (x *Transformer) Apply(b *pq.Batch, now time.Time) (*pq.Batch, error) {
	if len(x.cols) == 0 {
		return b, nil
	}
	out := &pq.Batch{Schema: x.bronze, Columns: append([]*pq.Column(nil), b.Columns...)}
	for k, p := range x.cols {
		// Each program is bound to the columns before it: it sees out with exactly those.
		out.Schema = p.Schema()
		col, err := p.EvalColumn(out, now)
		if err != nil {
			return nil, fmt.Errorf("silver: computed column %q: %w", x.t.Columns[k].Name, err)
		}
		out.Columns = append(out.Columns, col)
	}
	out.Schema = x.out
	return out, nil
}

// ApplyFilter evaluates the filter over b (a batch of Schema()) and marks in c the rows it
// filters out, among those the other rules keep. Call it after Expectations.Apply.
func (x *Transformer) ApplyFilter(c *Check, b *pq.Batch, now time.Time) {
	if x.filter == nil {
		return
	}
	val, null := x.filter.Eval(b, now)
	x.keep = append(x.keep[:0], val...)
	for i := range x.keep {
		if null != nil && null[i] {
			x.keep[i] = false
		}
	}
	c.transform, c.keep = x, x.keep
}

// filtered reports whether the filter filters row i out.
func (c *Check) filtered(i int) bool { return c.keep != nil && !c.keep[i] }

// Dropped reports whether row i passes validation but is filtered out by a filter with
// on_filter drop: it goes neither to silver nor to rejects, and is counted.
func (c *Check) Dropped(i int) bool {
	return c.filtered(i) && c.transform.t.Filter.Drop && c.Reject(i) == ""
}

// filterReason is the rejects reason of row i when the filter (on_filter reject) filters it out.
func (c *Check) filterReason(i int) string {
	if c.filtered(i) && !c.transform.t.Filter.Drop {
		return ReasonFilteredPrefix + c.transform.t.Filter.Name
	}
	return ""
}

// Recompute recomputes the computed columns of b, a batch of a table that holds silver's
// columns by name (silver or a quarantine, after backfill-columns moved values into its
// bronze columns): b with each computed column as the expressions give it from the row's
// columns now, and the rows where any value changed, in order (b itself and none when none
// did). The expressions depend on the row alone (config refuses current_timestamp() in a
// transform), so a rerun recomputes the same values and changes nothing. A computed column b
// lacks, or holds at another type, is an error: the table must be evolved to Schema() first.
func (x *Transformer) Recompute(b *pq.Batch) (*pq.Batch, []int, error) {
	if len(x.cols) == 0 {
		return b, nil, nil
	}
	in := &pq.Batch{Schema: x.bronze}
	for _, f := range x.bronze.Fields {
		c := b.Column(f.Name)
		if c == nil {
			return nil, nil, fmt.Errorf("silver: recompute the computed columns: the table has no column %s", f.Name)
		}
		in.Columns = append(in.Columns, c)
	}
	out, err := x.Apply(in, time.Time{})
	if err != nil {
		return nil, nil, err
	}
	n := len(x.bronze.Fields)
	cols := append([]*pq.Column(nil), b.Columns...)
	changed := make([]bool, b.Len())
	for k, c := range x.t.Columns {
		ci := b.Schema.FieldIndex(c.Name)
		want := x.out.Fields[n+k].Type
		if ci < 0 || !reflect.DeepEqual(b.Schema.Fields[ci].Type, want) {
			return nil, nil, fmt.Errorf("silver: recompute computed column %q: the table does not hold it as %s", c.Name, want.TypeName())
		}
		now := out.Columns[n+k]
		for i := range changed {
			if !changed[i] && !cellEqual(b.Columns[ci], now, i) {
				changed[i] = true
			}
		}
		cols[ci] = now
	}
	var rows []int
	for i, c := range changed {
		if c {
			rows = append(rows, i)
		}
	}
	if len(rows) == 0 {
		return b, nil, nil
	}
	return &pq.Batch{Schema: b.Schema, Columns: cols}, rows, nil
}

// cellEqual reports whether row i holds the same value in a and b, two columns of one scalar
// type (NaN equals NaN: a recomputed NaN is no change).
func cellEqual(a, b *pq.Column, i int) bool {
	if a.IsNull(i) || b.IsNull(i) {
		return a.IsNull(i) == b.IsNull(i)
	}
	switch a.Kind {
	case pq.KindInt64:
		return a.Int64[i] == b.Int64[i]
	case pq.KindInt32:
		return a.Int32[i] == b.Int32[i]
	case pq.KindFloat64:
		return math.Float64bits(a.Float64[i]) == math.Float64bits(b.Float64[i])
	case pq.KindFloat32:
		return math.Float32bits(a.Float32[i]) == math.Float32bits(b.Float32[i])
	case pq.KindBool:
		return a.Bool[i] == b.Bool[i]
	case pq.KindDecimal:
		return a.Decimal[i] == b.Decimal[i]
	case pq.KindBytes:
		return bytes.Equal(a.BytesAt(i), b.BytesAt(i))
	}
	return false
}
