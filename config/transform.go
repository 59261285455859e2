package config

import (
	"context"
	"fmt"
	"strings"

	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/txlog"
)

// Transform is a source's silver transform (docs/transforms.md): computed columns and a row
// filter, Spark SQL over the source's columns, applied after validation's column checks and
// before dedup and the gold aggregations, so that these may name computed columns.
type Transform struct {
	// Columns are computed columns, added to silver after bronze's columns in this order. A
	// column's expression may read the source's columns and the computed columns before it.
	Columns []ComputedColumn `yaml:"columns,omitempty"`
	// Filter keeps the rows for which its expression is true. Optional.
	Filter *Filter `yaml:"filter,omitempty"`
}

// ComputedColumn is a silver column computed from a row: its type is the expression's Spark type.
type ComputedColumn struct {
	// Name is the column's name. Required; not a declared or metadata column.
	Name string `yaml:"name"`
	// Expr is a Spark SQL expression, e.g. "upper(trim(device_id))". Required.
	Expr string `yaml:"expr"`
}

// Filter is a transform's row filter: as Spark's WHERE, a row whose expression is false or NULL
// is filtered out.
type Filter struct {
	// Name names the filter in rejects (reason filtered:<name>), progress and metrics. Required.
	Name string `yaml:"name"`
	// Expr is a boolean Spark SQL expression over the source's and the computed columns.
	Expr string `yaml:"expr"`
	// OnFilter is reject (default: a filtered row goes to rejects) or drop (it is only counted).
	OnFilter string `yaml:"on_filter"`
}

// Filter actions.
const (
	OnFilterReject = "reject"
	OnFilterDrop   = "drop"
)

// IsZero reports whether the transform does nothing (so it is left out of printed configs).
func (t Transform) IsZero() bool { return len(t.Columns) == 0 && t.Filter == nil }

func defaultTransform(t *Transform) {
	if t.Filter != nil {
		setStr(&t.Filter.OnFilter, OnFilterReject)
	}
}

// ComputedSchema types the computed columns of t over base (the source's bronze columns): each
// field in order, typed by its expression; an error names the column and the position in its
// expression.
func (t Transform) ComputedSchema(ctx context.Context, base *txlog.StructType) ([]txlog.StructField, error) {
	st := &txlog.StructType{Fields: append([]txlog.StructField(nil), base.Fields...)}
	var out []txlog.StructField
	for i, c := range t.Columns {
		x, err := sqlexpr.ParseSQLContext(ctx, c.Expr)
		if err != nil {
			return nil, fmt.Errorf("transform.columns[%d] (%s): %w", i, c.Name, err)
		}
		p, err := sqlexpr.CompileColumn(ctx, x, st)
		if err != nil {
			return nil, fmt.Errorf("transform.columns[%d] (%s): %w", i, c.Name, err)
		}
		typ, _ := p.ResultType() // CompileColumn refuses what has no column type
		f := txlog.StructField{Name: c.Name, Type: typ, Nullable: true}
		st.Fields = append(st.Fields, f)
		out = append(out, f)
	}
	return out, nil
}

// columnTypeOf is the config type of a Delta type (computed columns, so that the checks of
// dedup keys, group-bys and join keys read their types as they read declared ones).
func columnTypeOf(t txlog.DataType) ColumnType {
	if d, ok := t.(txlog.DecimalType); ok {
		return ColumnType{Kind: KindDecimal, Precision: d.Precision, Scale: d.Scale}
	}
	if p, ok := t.(txlog.PrimitiveType); ok {
		return ColumnType{Kind: Kind(p.Name)}
	}
	return ColumnType{}
}

// transform checks a source's transform at load, before stream: the computed columns' names,
// their expressions parsed and typed in order (a reference to a later computed column is named
// as such), and the filter's; each valid computed column joins cols, so that stream.dedup,
// stream.event_time, gold group_by and aggregate columns and join keys may name it.
func (v *validator) transform(pre string, src Source, cols *colSet) {
	t := src.Transform
	pre += "transform."
	var st *txlog.StructType
	if base := src.SilverSchema(); base != nil {
		st = &txlog.StructType{Fields: append([]txlog.StructField(nil), base.Fields...)}
	}
	index := map[string]int{} // lower-cased computed name -> position
	for i, c := range t.Columns {
		if _, dup := index[strings.ToLower(c.Name)]; !dup && c.Name != "" {
			index[strings.ToLower(c.Name)] = i
		}
	}
	ok := true // every column so far typed: the later ones (and the filter) can be typed
	for i, c := range t.Columns {
		path := fmt.Sprintf("%scolumns[%d]", pre, i)
		if !v.computedName(path+".name", c.Name, i, index, cols) {
			ok = false
		}
		x := v.parseTransformExpr(path+".expr", fmt.Sprintf("computed column %q", c.Name), c.Expr)
		if x == nil {
			ok = false
			continue
		}
		if v.forwardRef(path+".expr", c.Name, x, i, index, t.Columns, cols) {
			ok = false
			continue
		}
		if st == nil || !ok {
			continue // the schema or an earlier column has errors of its own
		}
		p, err := sqlexpr.CompileColumn(v.ctx, x, st)
		if v.ctx.Err() != nil {
			return
		}
		if err != nil {
			v.fail(path+".expr", "computed column %q: %s", c.Name, strings.TrimPrefix(err.Error(), sqlexpr.ErrBadPredicate.Error()+": "))
			ok = false
			continue
		}
		if !v.clockFree(path+".expr", fmt.Sprintf("computed column %q", c.Name), p) {
			ok = false
			continue
		}
		typ, _ := p.ResultType() // CompileColumn refuses what has no column type
		st.Fields = append(st.Fields, txlog.StructField{Name: c.Name, Type: typ, Nullable: true})
		col := Column{Name: c.Name, Type: columnTypeOf(typ)}
		cols.byName[c.Name] = col
		cols.list = append(cols.list, col)
	}
	if t.Filter == nil {
		return
	}
	f := *t.Filter
	fpre := pre + "filter"
	v.name(fpre+".name", f.Name, "a name such as no_test_traffic")
	v.enum(fpre+".on_filter", f.OnFilter, OnFilterReject, OnFilterDrop)
	x := v.parseTransformExpr(fpre+".expr", fmt.Sprintf("filter %q", f.Name), f.Expr)
	if x == nil || st == nil || !ok {
		return
	}
	p, err := sqlexpr.CompileSQLContext(v.ctx, x, st)
	if v.ctx.Err() != nil {
		return
	}
	if err != nil {
		v.fail(fpre+".expr", "filter %q: %s", f.Name, strings.TrimPrefix(err.Error(), sqlexpr.ErrBadPredicate.Error()+": "))
		return
	}
	v.clockFree(fpre+".expr", fmt.Sprintf("filter %q", f.Name), p)
}

// computedName checks a computed column's name: required, a valid column name, none of the
// source's columns (declared or metadata), not twice.
func (v *validator) computedName(path, name string, i int, index map[string]int, cols *colSet) bool {
	switch {
	case name == "":
		v.fail(path, "required: expected a column name such as region")
	case strings.TrimSpace(name) != name || strings.ContainsAny(name, ".`\x00\n"):
		v.fail(path, "invalid column name %q: no surrounding spaces, dots, backticks or control characters", name)
	case isBronzeColumn(name):
		v.fail(path, "%q is reserved for bronze metadata", name)
	case index[strings.ToLower(name)] != i:
		v.fail(path, "duplicate computed column %q (already transform.columns[%d]; names are case-insensitive, as in Spark)", name, index[strings.ToLower(name)])
	default:
		for _, c := range cols.list {
			if strings.EqualFold(c.Name, name) {
				v.fail(path, "computed column %q has the name of a declared column %q: choose another name", name, c.Name)
				return false
			}
		}
		return true
	}
	return false
}

// parseTransformExpr parses a transform expression; nil (with the problem reported) when it is
// empty or does not parse, or when v.ctx ended.
func (v *validator) parseTransformExpr(path, what, text string) sqlexpr.Expr {
	if strings.TrimSpace(text) == "" {
		v.fail(path, "required: expected a Spark SQL expression for %s, e.g. \"upper(trim(device_id))\"", what)
		return nil
	}
	x, err := sqlexpr.ParseSQLContext(v.ctx, text)
	if v.ctx.Err() != nil {
		return nil
	}
	if err != nil {
		v.fail(path, "%s: %v", what, err)
		return nil
	}
	return x
}

// clockFree fails (and reports false) an expression that reads current_timestamp(): a computed
// value must depend on the row alone, so that a replay from bronze and the Spark export
// compute the same one.
func (v *validator) clockFree(path, what string, p *sqlexpr.Program) bool {
	if p.Deterministic() {
		return true
	}
	v.fail(path, "%s: current_timestamp() is not allowed in a transform: a computed value must depend on the row alone, so that a replay from bronze and the Spark export compute the same one (use _ingest_time or the event time)", what)
	return false
}

// forwardRef reports (and fails) an expression of the i-th computed column that reads itself
// or a computed column defined after it: columns are computed in order.
func (v *validator) forwardRef(path, name string, x sqlexpr.Expr, i int, index map[string]int, list []ComputedColumn, cols *colSet) bool {
	for _, ref := range sqlexpr.SQLColumns(x) {
		j, ok := index[strings.ToLower(ref)]
		if !ok || j < i {
			continue
		}
		if _, declared := cols.byName[ref]; declared && j != i {
			continue // a declared column of that name wins (and the name is refused above)
		}
		if j == i {
			v.fail(path, "computed column %q reads itself", name)
		} else {
			v.fail(path, "computed column %q reads computed column %q, defined after it (transform.columns[%d]): columns are computed in order, so move %q before %q",
				name, list[j].Name, j, list[j].Name, name)
		}
		return true
	}
	return false
}
