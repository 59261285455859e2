package config

import (
	"context"
	"fmt"
	"strings"

	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/txlog"
)

// maxExpectations matches silver's bound (a row's violations are a 64-bit set).
const maxExpectations = 64

// expectations checks each expectation at load: its name and action, and its expression
// parsed and typed against the source's silver columns (the declared ones, the metadata
// columns and the transform's computed columns, which the stream computes before it judges
// the expectations), so that a typo fails here with the position rather than in the first
// batch. An expectation that reads a computed column is not typed when the transform has
// errors of its own (reported by transform). An
// expression over sqlexpr.MaxSQLBytes, MaxSQLTokens or MaxSQLDepth fails here too, naming the
// limit and the value found. Parsing and typing check v.ctx and stop when it ends.
func (v *validator) expectations(pre string, src Source) {
	if len(src.Expectations) > maxExpectations {
		v.fail(pre+"expectations", "%d expectations: expected at most %d per source", len(src.Expectations), maxExpectations)
	}
	schema, computed := expectSchema(v.ctx, src)
	seen := map[string]bool{}
	for i, e := range src.Expectations {
		path := fmt.Sprintf("%sexpectations[%d]", pre, i)
		switch {
		case e.Name == "":
			v.fail(path+".name", "required: expected a name such as non_negative_amount")
		case !goldNameRE.MatchString(e.Name):
			v.fail(path+".name", "invalid name %q: expected letters, digits, _ and -", e.Name)
		case seen[strings.ToLower(e.Name)]:
			v.fail(path+".name", "duplicate expectation %q", e.Name)
		default:
			seen[strings.ToLower(e.Name)] = true
		}
		v.enum(path+".on_violation", e.OnViolation, OnViolationWarn, OnViolationDrop, OnViolationFail)
		if strings.TrimSpace(e.Expect) == "" {
			v.fail(path+".expect", "required: expected a boolean SQL expression, e.g. \"amount >= 0\"")
			continue
		}
		x, err := sqlexpr.ParseSQLContext(v.ctx, e.Expect)
		if v.ctx.Err() != nil {
			return // stopped (a signal): validate returns ctx's error
		}
		if err != nil {
			v.fail(path+".expect", "expectation %q: %v", e.Name, err)
			continue
		}
		if schema == nil || readsAny(x, computed) {
			continue // the schema or the transform has errors of its own
		}
		_, err = sqlexpr.CompileSQLContext(v.ctx, x, schema)
		if v.ctx.Err() != nil {
			return
		}
		if err != nil {
			v.fail(path+".expect", "expectation %q: %s", e.Name, strings.TrimPrefix(err.Error(), sqlexpr.ErrBadPredicate.Error()+": "))
		}
	}
}

// expectSchema is the schema expectations are typed against: bronzeSchema and the computed
// columns. When the computed columns do not type (transform reports why), it is bronzeSchema
// and untyped names the computed columns, which an expectation then cannot be checked against.
func expectSchema(ctx context.Context, src Source) (schema *txlog.StructType, untyped map[string]bool) {
	schema = bronzeSchema(src.Schema)
	if schema == nil || len(src.Transform.Columns) == 0 {
		return schema, nil
	}
	computed, err := src.Transform.ComputedSchema(ctx, src.BronzeSchema())
	if err != nil {
		untyped = map[string]bool{}
		for _, c := range src.Transform.Columns {
			untyped[strings.ToLower(c.Name)] = true
		}
		return schema, untyped
	}
	schema.Fields = append(schema.Fields, computed...)
	return schema, nil
}

// readsAny reports whether x reads a column of names (lower-cased).
func readsAny(x sqlexpr.Expr, names map[string]bool) bool {
	for _, c := range sqlexpr.SQLColumns(x) {
		if names[strings.ToLower(c)] {
			return true
		}
	}
	return false
}

// bronzeSchema is the bronze table's schema as the config declares it, or nil when a column
// type is invalid.
func bronzeSchema(schema []Column) *txlog.StructType {
	st := &txlog.StructType{}
	for _, c := range schema {
		if c.Type.Err() != nil || c.Type.Kind == "" {
			return nil
		}
		var t txlog.DataType = txlog.PrimitiveType{Name: string(c.Type.Kind)}
		if c.Type.Kind == KindDecimal {
			t = txlog.DecimalType{Precision: c.Type.Precision, Scale: c.Type.Scale}
		}
		st.Fields = append(st.Fields, txlog.StructField{Name: c.Name, Type: t, Nullable: true})
	}
	meta := []txlog.DataType{txlog.PrimitiveType{Name: txlog.TypeString}, txlog.PrimitiveType{Name: txlog.TypeTimestamp},
		txlog.PrimitiveType{Name: txlog.TypeString}, txlog.PrimitiveType{Name: txlog.TypeLong}}
	for i, name := range bronzeColumns {
		st.Fields = append(st.Fields, txlog.StructField{Name: name, Type: meta[i], Nullable: true})
	}
	return st
}
