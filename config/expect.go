package config

import (
	"fmt"
	"strings"

	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/txlog"
)

// maxExpectations matches silver's bound (a row's violations are a 64-bit set).
const maxExpectations = 64

// expectations checks each expectation at load: its name and action, and its expression
// parsed and typed against the source's bronze columns (the declared ones and the metadata
// columns), so that a typo fails here with the position rather than in the first batch. An
// expression over sqlexpr.MaxSQLBytes, MaxSQLTokens or MaxSQLDepth fails here too, naming the
// limit and the value found. Parsing and typing check v.ctx and stop when it ends.
func (v *validator) expectations(pre string, src Source) {
	if len(src.Expectations) > maxExpectations {
		v.fail(pre+"expectations", "%d expectations: expected at most %d per source", len(src.Expectations), maxExpectations)
	}
	schema := bronzeSchema(src.Schema)
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
		if schema == nil {
			continue // the schema has errors of its own
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
