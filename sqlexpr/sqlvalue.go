package sqlexpr

import (
	"context"
	"fmt"
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
	switch st := p.root.typ(); st.k {
	case kInt:
		return txlog.PrimitiveType{Name: txlog.TypeInteger}, true
	case kLong:
		return txlog.PrimitiveType{Name: txlog.TypeLong}, true
	case kDouble:
		return txlog.PrimitiveType{Name: txlog.TypeDouble}, true
	case kDecimal:
		return txlog.DecimalType{Precision: st.p, Scale: st.s}, true
	case kString, kNull:
		return txlog.PrimitiveType{Name: txlog.TypeString}, true
	case kBinary:
		return txlog.PrimitiveType{Name: txlog.TypeBinary}, true
	case kBool:
		return txlog.PrimitiveType{Name: txlog.TypeBoolean}, true
	case kDate:
		return txlog.PrimitiveType{Name: txlog.TypeDate}, true
	case kTimestamp:
		return txlog.PrimitiveType{Name: txlog.TypeTimestamp}, true
	}
	return nil, false
}

// Deterministic reports whether the program's value depends on its rows alone: false when
// it reads current_timestamp() (the only function of the time it runs at the language keeps,
// for expectations).
func (p *Program) Deterministic() bool { return !p.usesNow }

// EvalColumn evaluates the program over every row of b into a new column of ResultType, with
// current_timestamp() = now.
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
	k := p.root.typ().k
	for r := range ctx.n {
		if v.isNull(r) || k == kNull {
			col.AppendNull()
			continue
		}
		switch k {
		case kInt, kDate:
			col.AppendInt32(int32(v.i[r]))
		case kLong, kTimestamp:
			col.AppendInt64(v.i[r])
		case kDouble:
			col.AppendFloat64(v.f[r])
		case kDecimal:
			col.AppendDecimal(v.d[r])
		case kString, kBinary:
			col.AppendBytes(v.str(r))
		case kBool:
			col.AppendBool(v.b[r])
		}
	}
	return col, nil
}

// CompileSQLValue binds a parsed SQL expression of any type to schema (CompileSQL asks for a
// boolean), for EvalColumn: a computed column's expression.
func CompileSQLValue(ctx context.Context, e Expr, schema *txlog.StructType) (*Program, error) {
	sp, ok := e.(*sqlPred)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not a SQL expression from ParseSQL", ErrBadPredicate, e)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	bd := &sqlBinder{ctx: ctx, s: schema}
	root, err := bd.bind(sp.root)
	if err != nil {
		return nil, err
	}
	if root.typ().k == kInterval {
		return nil, typeErr(sp.root, "a value a column can hold, found %s (subtract timestamps with unix_micros)", root.typ())
	}
	return &Program{text: sp.String(), schema: schema, root: root, usesNow: bd.usesNow}, nil
}
