package silver

import (
	"context"
	"fmt"
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
