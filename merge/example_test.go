package merge_test

import (
	"context"
	"fmt"

	"github.com/medallion-lake/medallion/merge"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// Upsert counts: add the source count to matching keys, insert the others.
func ExampleRun() {
	ctx := context.Background()
	schema, _ := txlog.ParseSchema(`{"type":"struct","fields":[
		{"name":"key","type":"string","nullable":true,"metadata":{}},
		{"name":"count","type":"long","nullable":true,"metadata":{}}]}`)
	rows := func(kv ...any) *pq.Batch {
		b, _ := pq.NewBatch(schema)
		for i := 0; i < len(kv); i += 2 {
			b.Columns[0].AppendString(kv[i].(string))
			b.Columns[1].AppendInt64(int64(kv[i+1].(int)))
		}
		return b
	}
	t := table.Open(mem.New(), table.Options{})
	t.Create(ctx, schema, nil, nil)
	t.Append(ctx, []*pq.Batch{rows("a", 1, "b", 2)}, table.AppendOptions{})

	res, err := merge.Run(ctx, t, merge.Spec{
		Source: []*pq.Batch{rows("b", 10, "c", 3)},
		Keys:   []string{"key"},
		Matched: []merge.Matched{{Set: map[string]merge.Value{
			"count": func(tg, s merge.Row) any { return tg.Get("count").(int64) + s.Get("count").(int64) },
		}}},
		NotMatched: []merge.NotMatched{{}},
		Txn:        &table.AppTxn{AppID: "merge-late", Version: 1},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("updated", res.Updated, "inserted", res.Inserted, "copied", res.Copied)
	for b, _ := range t.Scan(ctx, table.ScanOptions{Filter: sqlexpr.Ge("count", 3)}) {
		for i := 0; i < b.Len(); i++ {
			fmt.Println(string(pq.AppendJSONRow(nil, b, i)))
		}
	}
	// Unordered output:
	// updated 1 inserted 1 copied 1
	// {"key":"b","count":12}
	// {"key":"c","count":3}
}
