package table

import (
	"bytes"
	"context"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
	"github.com/medallion-lake/medallion/txlog"
)

// TestColumnMappingWriteRead writes a table whose schema uses column mapping (name mode) and
// checks physical names in the file, the stats and the partition values.
func TestColumnMappingWriteRead(t *testing.T) {
	ctx := context.Background()
	schema := pqtest.MustSchema(t, `{"type":"struct","fields":[
		{"name":"id","type":"long","nullable":true,"metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-a"}},
		{"name":"p","type":"string","nullable":true,"metadata":{"delta.columnMapping.id":2,"delta.columnMapping.physicalName":"col-b"}}]}`)
	b := mem.New()
	w, err := NewDataWriter(b, schema, []string{"p"}, pq.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	batch, _ := pq.NewBatch(schema)
	batch.Columns[0].AppendInt64(7)
	batch.Columns[1].AppendString("q")
	if err := w.Write(ctx, batch); err != nil {
		t.Fatal(err)
	}
	adds, err := w.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a := adds[0]
	if v := a.PartitionValues["col-b"]; v == nil || *v != "q" {
		t.Errorf("partition values %v", a.PartitionValues)
	}
	if want := `{"numRecords":1,"minValues":{"col-a":7},"maxValues":{"col-a":7},"nullCount":{"col-a":0}}`; a.Stats != want {
		t.Errorf("stats %s, want %s", a.Stats, want)
	}
	data, _ := objstore.ReadAll(ctx, b, a.Path)
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if f.Root().Column("col-a") == nil || f.Root().Column("col-a").ID() != 1 {
		t.Errorf("file schema %s", f.Schema())
	}
	fs := &FileScan{Bucket: b, Schema: schema, PartitionCols: []string{"p"}}
	var rows [][]any
	for bt, err := range fs.Read(ctx, []*txlog.Add{a}) {
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, bt.Row(0))
	}
	if len(rows) != 1 || rows[0][0] != int64(7) || rows[0][1] != "q" {
		t.Errorf("rows %v", rows)
	}
}
