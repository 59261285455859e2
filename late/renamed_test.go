package late

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/txlog"
)

// TestResolveRefusesRenamedColumn: Spark renamed silver's amount to amt under column mapping
// and someone added a new amount column: replay resolved sum(amount) against the new column,
// NULL in every row written before, and rebuilt gold with their totals gone, without an error.
func TestResolveRefusesRenamedColumn(t *testing.T) {
	mapped := func(name, phys string, id int, typ string) txlog.StructField {
		return txlog.StructField{Name: name, Type: txlog.PrimitiveType{Name: typ}, Nullable: true, Metadata: map[string]json.RawMessage{
			"delta.columnMapping.id": json.RawMessage(strings.Repeat("1", id)), "delta.columnMapping.physicalName": json.RawMessage(`"` + phys + `"`)}}
	}
	in := &txlog.StructType{Fields: []txlog.StructField{
		mapped("ts", "ts", 1, txlog.TypeTimestamp), mapped("amt", "amount", 2, txlog.TypeDouble), mapped("amount", "col-x", 3, txlog.TypeDouble)}}
	dbl := txlog.PrimitiveType{Name: txlog.TypeDouble}
	fn, err := gold.ParseFunc("sum")
	if err != nil {
		t.Fatal(err)
	}
	fields := append([]txlog.StructField{gold.WindowField()}, gold.AggregateFields(fn, "total", dbl, dbl)...)
	goldSchema := &txlog.StructType{Fields: append(fields, gold.LateRowsField())}
	q := &spec.Query{Rules: silver.Rules{EventTime: "ts"}}
	_, err = resolve(q, &spec.Aggregation{Name: "g", Window: spec.Window{Size: 5 * time.Minute, Slide: 5 * time.Minute},
		Aggregates: []spec.Aggregate{{Fn: "sum", Column: "amount", As: "total"}}}, in, goldSchema)
	if err == nil || !strings.Contains(err.Error(), "RENAME COLUMN amt TO amount") {
		t.Fatalf("resolve = %v, want the rename named", err)
	}
}
