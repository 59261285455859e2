package report

import (
	"context"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// TestTableStatusLatestChangeVersion: a table with the change feed on shows its newest version
// with change rows (an optimize after it does not count); one without shows the feed off.
func TestTableStatusLatestChangeVersion(t *testing.T) {
	ctx := context.Background()
	lake := mem.New()
	schema := &txlog.StructType{Fields: []txlog.StructField{{Name: "id", Type: txlog.PrimitiveType{Name: "long"}, Nullable: true}}}
	for path, props := range map[string]map[string]string{"gold/on": {table.ChangeFeedProperty: "true"}, "gold/off": nil} {
		tbl := table.Open(objstore.WithPrefix(lake, path), table.Options{})
		if _, err := tbl.Create(ctx, schema, nil, props); err != nil {
			t.Fatal(err)
		}
		for id := range int64(2) { // v1, v2: appends (inserts)
			b, err := pq.NewBatch(schema)
			if err != nil {
				t.Fatal(err)
			}
			b.Columns[0].AppendInt64(id)
			if _, err := tbl.Append(ctx, []*pq.Batch{b}, table.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tbl.Optimize(ctx, table.OptimizeOptions{}); err != nil { // v3: dataChange=false
			t.Fatal(err)
		}
	}
	out := []TableStatus{{Role: "gold on", Path: "gold/on"}, {Role: "gold off", Path: "gold/off"}}
	if err := tableStatuses(ctx, lake, out); err != nil {
		t.Fatal(err)
	}
	if on := out[0]; !on.ChangeFeed || on.Version != 3 || on.ChangeVersion != 2 {
		t.Errorf("feed on: %+v; want version 3, latest change version 2", on)
	}
	if off := out[1]; off.ChangeFeed || off.Version != 3 {
		t.Errorf("feed off: %+v", off)
	}
}
