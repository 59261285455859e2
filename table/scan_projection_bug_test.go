package table

import (
	"context"
	"testing"

	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/txlog"
)

// Regression: Scan with a Filter and a projection that leaves out the table's first column
// panicked, because the filter's view of the batch had a nil first column and Batch.Len read it.
func TestScanFilterProjectionWithoutFirstColumn(t *testing.T) {
	ctx := context.Background()
	long := txlog.PrimitiveType{Name: txlog.TypeLong}
	schema := &txlog.StructType{Fields: []txlog.StructField{
		{Name: "a", Type: long, Nullable: true},
		{Name: "b", Type: long, Nullable: true},
	}}
	tbl := Open(mem.New(), Options{})
	if _, err := tbl.Create(ctx, schema, nil, nil); err != nil {
		t.Fatal(err)
	}
	b, _ := pq.NewBatch(schema)
	for i := int64(0); i < 10; i++ {
		b.Columns[0].AppendInt64(i)
		b.Columns[1].AppendInt64(100 + i)
	}
	if _, err := tbl.Append(ctx, []*pq.Batch{b}, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	var got []int64
	for out, err := range tbl.Scan(ctx, ScanOptions{Columns: []string{"b"}, Filter: sqlexpr.Ge("b", int64(105))}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, out.Columns[0].Int64...)
	}
	if len(got) != 5 || got[0] != 105 || got[4] != 109 {
		t.Fatalf("got %v, want 105..109", got)
	}
}
