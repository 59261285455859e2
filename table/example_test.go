package table_test

import (
	"context"
	"fmt"
	"time"

	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// Create a partitioned table, append a batch idempotently, and scan it back with a filter.
func Example() {
	ctx := context.Background()
	schema, _ := txlog.ParseSchema(`{"type":"struct","fields":[
		{"name":"event_id","type":"string","nullable":false,"metadata":{}},
		{"name":"event_type","type":"string","nullable":true,"metadata":{}},
		{"name":"event_time","type":"timestamp","nullable":false,"metadata":{}}]}`)
	t := table.Open(mem.New(), table.Options{})
	if _, err := t.Create(ctx, schema, []string{"event_type"}, nil); err != nil {
		panic(err)
	}
	b, _ := pq.NewBatch(schema)
	for i, typ := range []string{"click", "view", "click"} {
		b.Columns[0].AppendString(fmt.Sprintf("e%d", i))
		b.Columns[1].AppendString(typ)
		b.Columns[2].AppendTime(time.Date(2024, 3, 1, 8, i, 0, 0, time.UTC))
	}
	txn := &table.AppTxn{AppID: "ingest", Version: 1}
	r1, _ := t.Append(ctx, []*pq.Batch{b}, table.AppendOptions{Txn: txn})
	r2, _ := t.Append(ctx, []*pq.Batch{b}, table.AppendOptions{Txn: txn}) // a retry: skipped
	fmt.Println("version", r1.Version, "files", len(r1.Added), "retry skipped", r2.Skipped)

	for batch, err := range t.Scan(ctx, table.ScanOptions{Filter: sqlexpr.Eq("event_type", "click")}) {
		if err != nil {
			panic(err)
		}
		for i := 0; i < batch.Len(); i++ {
			fmt.Println(string(pq.AppendJSONRow(nil, batch, i)))
		}
	}
	// Output:
	// version 1 files 2 retry skipped true
	// {"event_id":"e0","event_type":"click","event_time":"2024-03-01T08:00:00Z"}
	// {"event_id":"e2","event_type":"click","event_time":"2024-03-01T08:02:00Z"}
}
