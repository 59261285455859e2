package bronze

import (
	"errors"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/txlog"
)

func declaredOf(cols ...txlog.StructField) *txlog.StructType { return &txlog.StructType{Fields: cols} }

func col(name string, t txlog.DataType, required bool) txlog.StructField {
	return txlog.StructField{Name: name, Type: t, Nullable: !required}
}

func prim(name string) txlog.DataType { return txlog.PrimitiveType{Name: name} }

// TestDeclaredChanges: additions and a dropped `required` pass; every other change is
// ErrSchemaChange naming the column and both definitions, and a widening Delta allows says so
// and names the opt-in. With the opt-in (SchemaPolicy.TypeWidening) exactly the widenings
// pass, unless a stateful definition pins the column.
func TestDeclaredChanges(t *testing.T) {
	old := declaredOf(col("id", prim(txlog.TypeString), true), col("n", prim(txlog.TypeInteger), false),
		col("d", txlog.DecimalType{Precision: 10, Scale: 2}, false), col("day", prim(txlog.TypeDate), false))
	for _, tc := range []struct {
		name string
		new  *txlog.StructType
		says string // "": accepted
	}{
		{"same", old, ""},
		{"added", declaredOf(append(append([]txlog.StructField{}, old.Fields...), col("x", prim(txlog.TypeString), true))...), ""},
		{"required dropped", declaredOf(col("id", prim(txlog.TypeString), false), old.Fields[1], old.Fields[2], old.Fields[3]), ""},
		{"int to long", declaredOf(old.Fields[0], col("n", prim(txlog.TypeLong), false), old.Fields[2], old.Fields[3]),
			"column n changed from {type: integer} to {type: long} (a widening Delta's typeWidening table feature allows, not applied by default: " +
				"a table with that reader feature can no longer be read by delta-rs 1.6 nor by Polars"},
		{"int to double", declaredOf(old.Fields[0], col("n", prim(txlog.TypeDouble), false), old.Fields[2], old.Fields[3]), "(a widening"},
		{"int to decimal(10,0)", declaredOf(old.Fields[0], col("n", txlog.DecimalType{Precision: 10}, false), old.Fields[2], old.Fields[3]), "(a widening"},
		{"int to decimal(9,0)", declaredOf(old.Fields[0], col("n", txlog.DecimalType{Precision: 9}, false), old.Fields[2], old.Fields[3]), "to {type: decimal(9,0)}. Only"},
		{"decimal(10,2) to (12,3)", declaredOf(old.Fields[0], old.Fields[1], col("d", txlog.DecimalType{Precision: 12, Scale: 3}, false), old.Fields[3]), "(a widening"},
		{"decimal(10,2) to (11,4)", declaredOf(old.Fields[0], old.Fields[1], col("d", txlog.DecimalType{Precision: 11, Scale: 4}, false), old.Fields[3]), "to {type: decimal(11,4)}. Only"},
		{"date to timestamp_ntz", declaredOf(old.Fields[0], old.Fields[1], old.Fields[2], col("day", prim(txlog.TypeTimestampNTZ), false)), "(a widening"},
		{"int to short", declaredOf(old.Fields[0], col("n", prim(txlog.TypeShort), false), old.Fields[2], old.Fields[3]), "to {type: short}. Only"},
		{"int to string", declaredOf(old.Fields[0], col("n", prim(txlog.TypeString), false), old.Fields[2], old.Fields[3]), "to {type: string}. Only"},
		{"required added", declaredOf(old.Fields[0], col("n", prim(txlog.TypeInteger), true), old.Fields[2], old.Fields[3]),
			"column n changed from {type: integer} to {type: integer, required: true}. Only"},
		{"removed", declaredOf(old.Fields[0], old.Fields[2], old.Fields[3]), "column n ({type: integer}) was removed"},
		{"renamed", declaredOf(old.Fields[0], col("m", prim(txlog.TypeInteger), false), old.Fields[2], old.Fields[3]), "was removed (renamed to m?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			widens := strings.Contains(tc.says, "(a widening")
			err := declaredChangeError("bronze/x", old, tc.new, SchemaPolicy{})
			if tc.says == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			} else if !errors.Is(err, ErrSchemaChange) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "bronze/x") ||
				widens && !strings.Contains(err.Error(), "set `schema_evolution: {type_widening: true}` for the source") {
				t.Fatalf("error %v, want ErrSchemaChange saying %q", err, tc.says)
			}
			// Opted in: the widenings pass, everything else is refused as before.
			err = declaredChangeError("bronze/x", old, tc.new, SchemaPolicy{TypeWidening: true})
			if tc.says == "" || widens {
				if err != nil {
					t.Fatalf("opted in, refused: %v", err)
				}
			} else if !errors.Is(err, ErrSchemaChange) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("opted in: error %v, want ErrSchemaChange saying %q", err, tc.says)
			}
			// Opted in, but a definition's state holds the column: refused, saying which.
			pinned := SchemaPolicy{TypeWidening: true, Pinned: map[string]string{"n": "the dedup key (stream.dedup)",
				"d": "gold g's group_by", "day": "gold g's group_by"}}
			err = declaredChangeError("bronze/x", old, tc.new, pinned)
			if widens && (!errors.Is(err, ErrSchemaChange) || !strings.Contains(err.Error(), "cannot be widened in place")) {
				t.Fatalf("pinned: error %v, want a refusal of the widening", err)
			}
		})
	}
}
