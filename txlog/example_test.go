package txlog_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/txlog"
)

// Create a table, append a file idempotently, and read the snapshot back.
func Example() {
	ctx := context.Background()
	log := txlog.New(mem.New(), txlog.Options{}) // any objstore.Bucket rooted at the table folder

	create := log.Begin(nil)
	create.SetMetadata(txlog.Metadata{
		SchemaString:     `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"day","type":"date","nullable":true,"metadata":{}}]}`,
		PartitionColumns: []string{"day"},
	})
	if _, err := create.Commit(ctx, txlog.Operation{Name: "CREATE TABLE"}); err != nil {
		panic(err)
	}

	// An idempotent writer: skip the batch if its txn version is already in the table.
	appendBatch := func(batch int64) {
		snap, err := log.Snapshot(ctx)
		if err != nil {
			panic(err)
		}
		if v, ok := snap.TxnVersion("ingest"); ok && v >= batch {
			fmt.Println("batch", batch, "already committed")
			return
		}
		day := "2024-03-01"
		tx := log.Begin(snap)
		tx.SetTxn("ingest", batch)
		tx.Add(&txlog.Add{Path: "day=2024-03-01/part-00000.parquet", PartitionValues: map[string]*string{"day": &day}, Size: 1045, DataChange: true})
		v, err := tx.Commit(ctx, txlog.Operation{Name: "WRITE", Parameters: map[string]any{"mode": "Append"}})
		if err != nil {
			panic(err)
		}
		fmt.Println("batch", batch, "committed as version", v)
	}
	appendBatch(7)
	appendBatch(7)

	snap, err := log.Snapshot(ctx)
	if err != nil {
		panic(err)
	}
	for _, f := range snap.Files() {
		fmt.Println(snap.Version(), f.Path, *f.PartitionValues["day"])
	}
	// Output:
	// batch 7 committed as version 1
	// batch 7 already committed
	// 1 day=2024-03-01/part-00000.parquet 2024-03-01
}

// A read-modify-write transaction records what it read; a concurrent commit that changed that
// data makes it fail with a conflict error instead of silently overwriting.
func ExampleTransaction_Commit_conflict() {
	ctx := context.Background()
	log := txlog.New(mem.New(), txlog.Options{})
	create := log.Begin(nil)
	create.SetMetadata(txlog.Metadata{SchemaString: `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}`})
	create.Add(&txlog.Add{Path: "a.parquet", Size: 1, DataChange: true})
	if _, err := create.Commit(ctx, txlog.Operation{Name: "CREATE TABLE AS SELECT"}); err != nil {
		panic(err)
	}
	read, _ := log.Snapshot(ctx)

	rewrite := func(name string) error {
		tx := log.Begin(read)
		tx.ReadWholeTable()
		tx.Remove(&txlog.Remove{Path: "a.parquet", DataChange: true})
		tx.Add(&txlog.Add{Path: name, Size: 1, DataChange: true})
		_, err := tx.Commit(ctx, txlog.Operation{Name: "UPDATE"})
		return err
	}
	fmt.Println(rewrite("b.parquet"))
	err := rewrite("c.parquet")
	fmt.Println(errors.Is(err, txlog.ErrConflict), errors.Is(err, txlog.ErrConcurrentDeleteDelete))
	// Output:
	// <nil>
	// true true
}
