package sqlexpr

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
)

// TestCompileColumn: a value expression becomes a column of its Spark type, row by row as
// Spark computes it (expected values written by hand from Spark's rules), nulls included.
func TestCompileColumn(t *testing.T) {
	b := sqlTestBatch(t)
	schema := pqtest.MustSchema(t, sqlTestSchema)
	cases := []struct {
		expr, typ string
		want      []string // per row, as JSON
	}{
		{"upper(trim(name))", "string", []string{`"ALICE"`, `"BOB"`, `null`, `"X_Y%Z"`, `"ÜNÏCODE"`}},
		{"id * 10 + 1", "long", []string{`11`, `21`, `31`, `41`, `-49`}},
		{"qty + 1", "integer", []string{`4`, `1`, `null`, `-2147483648`, `-2147483647`}},
		{"amount * 2", "double", []string{`21`, `-2`, `null`, `"NaN"`, `0`}},
		{"price * 2", "decimal(12,2)", []string{`25.00`, `0.00`, `null`, `199999999.98`, `-0.02`}},
		{"coalesce(qty, -1)", "integer", []string{`3`, `0`, `-1`, `2147483647`, `-2147483648`}},
		{"coalesce(st.code, 'none')", "string", []string{`"DE"`, `"FR"`, `"none"`, `"none"`, `"de"`}},
		{"length(name)", "integer", []string{`5`, `4`, `null`, `8`, `7`}},
		{"amount > 0", "boolean", []string{`true`, `false`, `null`, `true`, `false`}},
		{"ts", "timestamp", []string{`"2024-03-01T10:00:00Z"`, `"2024-03-01T11:30:00Z"`, `null`, `"2024-03-02T00:00:00Z"`, `"1970-01-01T00:00:00Z"`}},
		{"d", "date", []string{`"2024-03-01"`, `"2024-02-29"`, `null`, `"2024-03-02"`, `"1970-01-01"`}},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			e, err := ParseSQL(c.expr)
			if err != nil {
				t.Fatal(err)
			}
			p, err := CompileColumn(context.Background(), e, schema)
			if err != nil {
				t.Fatal(err)
			}
			if typ, _ := p.ResultType(); typ.TypeName() != c.typ {
				t.Fatalf("type %s, want %s", typ.TypeName(), c.typ)
			}
			col, err := p.EvalColumn(b, sqlTestNow)
			if err != nil {
				t.Fatal(err)
			}
			if col.Len != b.Len() {
				t.Fatalf("%d rows, want %d", col.Len, b.Len())
			}
			for i, w := range c.want {
				if got := string(pq.AppendJSONValue(nil, col, i)); got != w {
					t.Errorf("row %d: %s, want %s", i, got, w)
				}
			}
		})
	}
}

// TestCompileColumnRefusesUntyped: NULL alone has no column type; the error says how to give it one.
func TestCompileColumnRefusesUntyped(t *testing.T) {
	e, err := ParseSQL("NULL")
	if err != nil {
		t.Fatal(err)
	}
	_, err = CompileColumn(context.Background(), e, pqtest.MustSchema(t, sqlTestSchema))
	if !errors.Is(err, ErrBadPredicate) || !strings.Contains(err.Error(), "CAST(NULL AS string)") {
		t.Fatalf("err = %v", err)
	}
}
