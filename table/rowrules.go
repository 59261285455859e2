package table

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/txlog"
)

// ErrRowRuleViolated reports a new row that breaks one of the table's row rules (a CHECK
// constraint, a column invariant, a generated column's expression); the message names the
// rule, its expression and the row. Nothing was committed.
var ErrRowRuleViolated = errors.New("table: row violates a table rule")

// rowRule is one rule every new row of a table must satisfy: true, not false or NULL.
type rowRule struct {
	what string       // "CHECK constraint positive", "invariant of column x", "generated column d"
	text string       // the expression the table stores
	expr sqlexpr.Expr // what is evaluated (for a generated column: value <=> expression)
}

// RowRules are the rules of a table that every row a writer adds must satisfy (PROTOCOL.md
// "Column Invariants", "CHECK Constraints", "Generated Columns"): each evaluates to true, not
// false or NULL. Rows a compaction copies unchanged are not checked again.
type RowRules struct {
	rules []rowRule
}

// Empty reports whether there is no rule to check.
func (r *RowRules) Empty() bool { return r == nil || len(r.rules) == 0 }

// quoteColumn writes a dotted column path as backtick-quoted parts, as ParseSQL reads them.
func quoteColumn(path []string) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = "`" + strings.ReplaceAll(p, "`", "``") + "`"
	}
	return strings.Join(parts, ".")
}

// rowRulesOf collects the table's row rules, parsed and bound to schema. A rule this package
// cannot evaluate refuses the table, naming the feature, the rule and its expression: writing
// without it would break what other engines guarantee their users.
//
// The protocol makes a rule binding from writer version 2 (invariants), 3 (CHECK constraints)
// or 4 (generated columns), or with the feature listed; a rule stored on a table whose protocol
// lacks it is checked all the same (delta-rs does too): its writer meant it, and holding rows
// to it loses nothing another engine would accept from a correct writer.
func rowRulesOf(m txlog.Metadata, schema *txlog.StructType) (*RowRules, error) {
	rr := &RowRules{}
	refuse := func(feature, what, text string, err error) error {
		return &txlog.FeatureError{Feature: feature, Kind: txlog.WriteAppend,
			Why:    fmt.Sprintf("%s (%s) must hold for every new row, and medallion cannot evaluate it: %v", what, text, err),
			WayOut: "write the table with Spark, or drop the rule (ALTER TABLE ... DROP CONSTRAINT for a CHECK constraint)"}
	}
	add := func(feature, what, text, check string) error {
		e, err := sqlexpr.ParseSQL(check)
		if err == nil {
			_, err = sqlexpr.CompileSQL(e, schema)
		}
		if err != nil {
			return refuse(feature, what, text, err)
		}
		rr.rules = append(rr.rules, rowRule{what: what, text: text, expr: e})
		return nil
	}
	var names []string
	for k := range m.Configuration {
		if strings.HasPrefix(k, "delta.constraints.") {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		text := m.Configuration[k]
		if err := add("checkConstraints", "CHECK constraint "+strings.TrimPrefix(k, "delta.constraints."), text, text); err != nil {
			return nil, err
		}
	}
	var walk func(path []string, st *txlog.StructType) error
	walk = func(path []string, st *txlog.StructType) error {
		for _, f := range st.Fields {
			col := append(slices.Clip(path), f.Name)
			name := strings.Join(col, ".")
			if raw, ok := f.Metadata["delta.invariants"]; ok {
				text, err := invariantExpression(raw)
				if err != nil {
					return refuse("invariants", "the invariant of column "+name, string(raw), err)
				}
				if err := add("invariants", "the invariant of column "+name, text, text); err != nil {
					return err
				}
			}
			if raw, ok := f.Metadata["delta.generationExpression"]; ok {
				var text string
				if err := json.Unmarshal(raw, &text); err != nil {
					return refuse("generatedColumns", "generated column "+name, string(raw), err)
				}
				// (value <=> expression) IS TRUE, in the operators ParseSQL knows: both NULL, or
				// both set and equal (false AND NULL is false, so the whole is never NULL).
				c := quoteColumn(col)
				check := fmt.Sprintf("(%s IS NULL AND (%s) IS NULL) OR (%s IS NOT NULL AND (%s) IS NOT NULL AND %s = (%s))", c, text, c, text, c, text)
				if err := add("generatedColumns", "generated column "+name, text, check); err != nil {
					return err
				}
			}
			if sub, ok := f.Type.(*txlog.StructType); ok {
				if err := walk(col, sub); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(nil, schema); err != nil {
		return nil, err
	}
	return rr, nil
}

// invariantExpression reads delta.invariants: a JSON string holding
// {"expression": {"expression": "<SQL>"}}.
func invariantExpression(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("delta.invariants is not a JSON string: %w", err)
	}
	var v struct {
		Expression struct {
			Expression string `json:"expression"`
		} `json:"expression"`
	}
	if err := json.Unmarshal([]byte(s), &v); err != nil || v.Expression.Expression == "" {
		return "", fmt.Errorf("delta.invariants %s has no expression.expression", s)
	}
	return v.Expression.Expression, nil
}

// boundRule is a rule compiled for one writer's schema (a Program is not safe for concurrent
// use, so each DataWriter has its own).
type boundRule struct {
	rule rowRule
	prog *sqlexpr.Program
}

func (r *RowRules) bind(schema *txlog.StructType) ([]boundRule, error) {
	if r.Empty() {
		return nil, nil
	}
	out := make([]boundRule, len(r.rules))
	for i, rule := range r.rules {
		p, err := sqlexpr.CompileSQL(rule.expr, schema)
		if err != nil {
			return nil, fmt.Errorf("table: %s (%s): %w", rule.what, rule.text, err)
		}
		out[i] = boundRule{rule: rule, prog: p}
	}
	return out, nil
}

// checkRows evaluates every rule over the rows of view (nil rows: all of them) and names the
// first row that is not true.
func checkRows(rules []boundRule, view *pq.Batch, rows []int, now time.Time) error {
	for _, br := range rules {
		value, null := br.prog.Eval(view, now)
		bad := func(r int) bool { return !value[r] || null != nil && null[r] }
		first := -1
		if rows == nil {
			for r := range value {
				if bad(r) {
					first = r
					break
				}
			}
		} else {
			for _, r := range rows {
				if bad(r) {
					first = r
					break
				}
			}
		}
		if first >= 0 {
			got := "false"
			if null != nil && null[first] {
				got = "NULL"
			}
			return fmt.Errorf("%w: %s (%s) is %s for the row {%s}; nothing was committed: fix the rows or the rule", ErrRowRuleViolated, br.rule.what, br.rule.text, got, describeRow(view, first))
		}
	}
	return nil
}

// checkClusteringStats: on a clustered table (writer feature clustering), every new file must
// carry stats for the clustering columns ("Writer Requirements for Clustered Table"). This
// writer's stats cover the first delta.dataSkippingNumIndexedCols leaf columns, so a clustering
// column past them refuses the write.
func checkClusteringStats(snap *txlog.Snapshot, schema *txlog.StructType) error {
	if !snap.Protocol().SupportsWriterFeature("clustering") {
		return nil
	}
	d, ok := snap.Domain("delta.clustering")
	if !ok || d.Removed {
		return nil
	}
	var conf struct {
		ClusteringColumns []json.RawMessage `json:"clusteringColumns"`
	}
	if err := json.Unmarshal([]byte(d.Configuration), &conf); err != nil {
		return &txlog.FeatureError{Feature: "clustering", Why: fmt.Sprintf("the delta.clustering domain %q does not parse: %v", d.Configuration, err)}
	}
	limit := statsColumns(snap.Metadata().Configuration)
	for _, raw := range conf.ClusteringColumns {
		// Spark writes each column as a path (["a","b"]); the protocol's example as a string.
		var path []string
		if err := json.Unmarshal(raw, &path); err != nil {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return &txlog.FeatureError{Feature: "clustering", Why: fmt.Sprintf("clustering column %s does not parse", raw)}
			}
			path = []string{s}
		}
		leaf, ok := leafIndex(schema, path)
		if !ok {
			return &txlog.FeatureError{Feature: "clustering", Why: fmt.Sprintf("clustering column %s is not a column of the table", strings.Join(path, "."))}
		}
		if limit >= 0 && leaf >= limit {
			return &txlog.FeatureError{Feature: "clustering",
				Why:    fmt.Sprintf("new files must carry stats on clustering column %s, and medallion's stats cover the first %d leaf columns (delta.dataSkippingNumIndexedCols)", strings.Join(path, "."), limit),
				WayOut: "raise delta.dataSkippingNumIndexedCols past that column"}
		}
	}
	return nil
}

// leafIndex is the position of a column among the schema's leaf columns, in the order stats
// count them; path parts are logical or physical (column mapping) names.
func leafIndex(schema *txlog.StructType, path []string) (int, bool) {
	n := 0
	var walk func(st *txlog.StructType, path []string) (int, bool)
	walk = func(st *txlog.StructType, path []string) (int, bool) {
		for i := range st.Fields {
			f := &st.Fields[i]
			sub, isStruct := f.Type.(*txlog.StructType)
			if len(path) > 0 && (f.Name == path[0] || f.PhysicalName() == path[0]) {
				if len(path) == 1 {
					return n, true
				}
				if isStruct {
					return walk(sub, path[1:])
				}
				return 0, false
			}
			if isStruct {
				walk(sub, nil)
			} else {
				n++
			}
		}
		return 0, false
	}
	return walk(schema, path)
}

// describeRow renders a row as name=value pairs for an error message.
func describeRow(b *pq.Batch, r int) string {
	vals := b.Row(r)
	parts := make([]string, len(vals))
	for i, v := range vals {
		if v == nil {
			v = "NULL"
		}
		parts[i] = fmt.Sprintf("%s=%v", b.Schema.Fields[i].Name, v)
	}
	return strings.Join(parts, ", ")
}
