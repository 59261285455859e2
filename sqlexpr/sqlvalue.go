package sqlexpr

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// Values of any type: a Program evaluates to a column of its expression's type, for computed
// columns (not only the booleans of predicates).

// ResultType is the Delta type of the program's value: integer, long, double, decimal(p,s),
// string, binary, boolean, date or timestamp; a NULL literal is typed string. An interval
// (a difference of timestamps) has no column type: ok is false.
func (p *Program) ResultType() (t txlog.DataType, ok bool) {
	st := p.root.typ()
	if st.k == kDecimal {
		return txlog.DecimalType{Precision: st.p, Scale: st.s}, true
	}
	if name, ok := storedAs[st.k]; ok {
		return txlog.PrimitiveType{Name: name}, true
	}
	return nil, false
}

// storedAs is the Delta primitive type a column of each of the engine's kinds is stored as
// (decimals carry their precision and scale; an interval has none).
var storedAs = map[sqlKind]string{
	kInt:       txlog.TypeInteger,
	kLong:      txlog.TypeLong,
	kDouble:    txlog.TypeDouble,
	kString:    txlog.TypeString,
	kNull:      txlog.TypeString,
	kBinary:    txlog.TypeBinary,
	kBool:      txlog.TypeBoolean,
	kDate:      txlog.TypeDate,
	kTimestamp: txlog.TypeTimestamp,
}

// Deterministic reports whether the program's value depends on its rows alone: false when
// it reads current_timestamp() (the only function of the time it runs at the language keeps,
// for expectations).
func (p *Program) Deterministic() bool { return !p.usesNow }

// EvalColumn evaluates the program over every row of b (a batch of the bound schema) into a
// new column of ResultType that b's rows do not share, with current_timestamp() = now. A NULL
// row holds the zero value (what a column of pq holds for it), whatever the evaluator left.
func (p *Program) EvalColumn(b *pq.Batch, now time.Time) (*pq.Column, error) {
	t, ok := p.ResultType()
	if !ok {
		return nil, fmt.Errorf("%w: %s has type %s, which no column can hold", ErrBadPredicate, shortenSQL(p.text), p.root.typ())
	}
	col, err := pq.NewColumn(t)
	if err != nil {
		return nil, err
	}
	ctx := &evalCtx{b: b, n: b.Len(), nowUs: now.UnixMicro()}
	v := p.root.eval(ctx)
	n := ctx.n
	k := p.root.typ().k
	if k == kNull {
		for range n {
			col.AppendNull()
		}
		return col, nil
	}
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
	switch k {
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

// CompileSQLValue binds a parsed SQL expression of any type to schema (CompileSQL asks for a
// boolean), for EvalColumn: a computed column's expression.
func CompileSQLValue(ctx context.Context, e Expr, schema *txlog.StructType) (*Program, error) {
	return compileProgram(ctx, e, schema, func(n sqlNode, t sqlType) error {
		if t.k == kInterval {
			return typeErr(n, "a value a column can hold, found %s (subtract timestamps with unix_micros)", t)
		}
		return nil
	})
}

// CompileColumn binds e to schema as CompileSQLValue does, for a column a table stores (a
// silver transform's computed column): an expression whose type is NULL (an untyped NULL
// literal) has no column type and is refused with its position, as Spark refuses such a
// column in a table.
func CompileColumn(ctx context.Context, e Expr, schema *txlog.StructType) (*Program, error) {
	p, err := CompileSQLValue(ctx, e, schema)
	if err != nil {
		return nil, err
	}
	if p.root.typ().k == kNull {
		return nil, typeErr(e.(*sqlPred).root, "a value with a column type (cast it, e.g. CAST(NULL AS string)), found %s", p.root.typ())
	}
	return p, nil
}
