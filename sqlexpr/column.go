package sqlexpr

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// ColumnProgram is a SQL expression of any type bound to a schema, evaluated into a new
// column: a computed column of a silver transform. It shares the evaluator of Program
// (vectorized, Spark's implicit casts and null semantics); only its result is a column of
// values rather than a truth value per row. Not safe for concurrent use.
//
// This file only adds to the package (the transform wiring needed a value-typed result,
// which Program, boolean by contract, does not give).
type ColumnProgram struct {
	text   string
	schema *txlog.StructType
	root   enode
	typ    txlog.DataType
}

// CompileColumn binds a parsed SQL expression to schema as CompileSQL does, without asking
// for a boolean. The result type is the expression's Spark type; an expression whose type is
// NULL (an untyped NULL literal) or an interval has no column type and is refused
// (ErrBadPredicate, with the position), as Spark refuses such a column in a table.
func CompileColumn(ctx context.Context, e Expr, schema *txlog.StructType) (*ColumnProgram, error) {
	sp, ok := e.(*sqlPred)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not a SQL expression from ParseSQL", ErrBadPredicate, e)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	root, err := (&sqlBinder{ctx: ctx, s: schema}).bind(sp.root)
	if err != nil {
		return nil, err
	}
	t, ok := deltaType(root.typ())
	if !ok {
		return nil, typeErr(sp.root, "a value with a column type (cast it, e.g. CAST(NULL AS string)), found %s", root.typ())
	}
	return &ColumnProgram{text: sp.String(), schema: schema, root: root, typ: t}, nil
}

// Type is the Delta type of the computed column.
func (p *ColumnProgram) Type() txlog.DataType { return p.typ }

// String is the expression's text.
func (p *ColumnProgram) String() string { return p.text }

// deltaType maps an evaluator type to the Delta type of a column holding it.
func deltaType(t sqlType) (txlog.DataType, bool) {
	prim := func(name string) txlog.DataType { return txlog.PrimitiveType{Name: name} }
	switch t.k {
	case kBool:
		return prim(txlog.TypeBoolean), true
	case kInt:
		return prim(txlog.TypeInteger), true
	case kLong:
		return prim(txlog.TypeLong), true
	case kDouble:
		return prim(txlog.TypeDouble), true
	case kDecimal:
		return txlog.DecimalType{Precision: t.p, Scale: t.s}, true
	case kString:
		return prim(txlog.TypeString), true
	case kBinary:
		return prim(txlog.TypeBinary), true
	case kDate:
		return prim(txlog.TypeDate), true
	case kTimestamp:
		return prim(txlog.TypeTimestamp), true
	}
	return nil, false
}

// Eval evaluates the expression over every row of b (a batch of the bound schema), with
// current_timestamp() = now, into a new column of Type() that b's rows do not share. A NULL
// row holds the zero value (what a column of pq holds for it), whatever the evaluator left.
func (p *ColumnProgram) Eval(b *pq.Batch, now time.Time) (*pq.Column, error) {
	ctx := &evalCtx{b: b, n: b.Len(), nowUs: now.UnixMicro()}
	v := p.root.eval(ctx)
	col, err := pq.NewColumn(p.typ)
	if err != nil {
		return nil, err
	}
	n := ctx.n
	var null []bool
	if v.null != nil {
		null = v.null[:n]
		if slices.Contains(null, true) {
			col.Nulls = slices.Clone(null)
		} else {
			null = nil
		}
	}
	// Whole columns at once: the values are copied, then the NULL rows zeroed.
	switch k := p.root.typ().k; k {
	case kBool:
		col.Bool = slices.Clone(v.b[:n])
		zeroNulls(col.Bool, null)
	case kInt, kDate:
		col.Int32 = make([]int32, n)
		for r, x := range v.i[:n] {
			col.Int32[r] = int32(x)
		}
		zeroNulls(col.Int32, null)
	case kLong, kTimestamp:
		col.Int64 = slices.Clone(v.i[:n])
		zeroNulls(col.Int64, null)
	case kDouble:
		col.Float64 = slices.Clone(v.f[:n])
		zeroNulls(col.Float64, null)
	case kDecimal:
		col.Decimal = slices.Clone(v.d[:n])
		zeroNulls(col.Decimal, null)
	case kString, kBinary:
		col.Offsets = slices.Grow(col.Offsets, n)
		col.Data = make([]byte, 0, int(v.off[n]-v.off[0]))
		for r := range n {
			if null == nil || !null[r] {
				col.Data = append(col.Data, v.str(r)...)
			}
			col.Offsets = append(col.Offsets, int32(len(col.Data)))
		}
	}
	col.Len = n
	return col, nil
}

func zeroNulls[T any](vals []T, null []bool) {
	var zero T
	for r, isNull := range null {
		if isNull {
			vals[r] = zero
		}
	}
}

// Schema is the schema the program was bound to.
func (p *ColumnProgram) Schema() *txlog.StructType { return p.schema }
