package table

import (
	"context"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
	"github.com/medallion-lake/medallion/txlog"
)

// TestReplaceChangesSchemaAndRows: Replace swaps a change-feed table's schema and rows in one
// commit that keeps the table id, the other properties and the txns, and adds its own; the
// change feed of that version deletes every old row and inserts every new one. A
// ReplaceAllRows commit that keeps a file is refused.
func TestReplaceChangesSchemaAndRows(t *testing.T) {
	ctx := context.Background()
	tbl := Open(mem.New(), Options{})
	if _, err := tbl.Create(ctx, pqtest.MustSchema(t, eventSchema), nil, map[string]string{ChangeFeedProperty: "true", "keep": "me"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Append(ctx, []*pq.Batch{events(t, "a", 0, 3)}, AppendOptions{Txn: &AppTxn{AppID: "q", Version: 7}}); err != nil {
		t.Fatal(err)
	}
	before, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	newSchema := pqtest.MustSchema(t, `{"type":"struct","fields":[{"name":"k","type":"string","nullable":true,"metadata":{}},{"name":"n","type":"long","nullable":true,"metadata":{}}]}`)
	rows, err := pq.NewBatch(newSchema)
	if err != nil {
		t.Fatal(err)
	}
	rows.Columns[0].AppendString("x")
	rows.Columns[1].AppendInt64(42)
	res, err := tbl.Replace(ctx, Replace{Snapshot: before, Schema: newSchema, Props: map[string]string{"def": "new"}, Rows: []*pq.Batch{rows},
		Txns: []AppTxn{{AppID: "r", Version: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := snap.Schema()
	a, _ := txlog.MarshalSchema(got)
	b, _ := txlog.MarshalSchema(newSchema)
	conf := snap.Metadata().Configuration
	if res.Version != 2 || a != b || snap.Metadata().ID != before.Metadata().ID || conf["keep"] != "me" || conf["def"] != "new" {
		t.Fatalf("after replace: version %d, schema %s, metadata %+v", res.Version, a, snap.Metadata())
	}
	if v, _ := snap.TxnVersion("q"); v != 7 {
		t.Errorf("txn q %d, want 7 (kept)", v)
	}
	if v, _ := snap.TxnVersion("r"); v != 3 {
		t.Errorf("txn r %d, want 3", v)
	}
	var n int
	for bt, err := range tbl.Scan(ctx, ScanOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		n += bt.Len()
		if bt.Len() > 0 && (bt.Columns[0].BytesAt(0) == nil || string(bt.Columns[0].BytesAt(0)) != "x" || bt.Columns[1].Int64[0] != 42) {
			t.Errorf("row %v", bt.Row(0))
		}
	}
	if n != 1 {
		t.Errorf("%d rows after replace, want 1", n)
	}
	kinds := map[string]int{}
	for cs, err := range tbl.Changes(ctx, 2, 2) {
		if err != nil {
			t.Fatal(err)
		}
		c := cs.Rows.Column("_change_type")
		for i := range cs.Rows.Len() {
			kinds[string(c.BytesAt(i))]++
		}
	}
	if kinds["delete"] != 3 || kinds["insert"] != 1 || len(kinds) != 2 {
		t.Errorf("changes of the replace: %v, want 3 deletes and 1 insert", kinds)
	}

	// A commit that says it replaces all rows but keeps a file.
	if _, err := tbl.Append(ctx, []*pq.Batch{rows}, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	snap, _ = tbl.Latest(ctx)
	tx := tbl.Log().Begin(snap)
	tx.ReplaceAllRows()
	tx.Remove(tbl.RemoveOf(snap.Files()[0], true))
	if _, err := tx.Commit(ctx, txlog.Operation{Name: "WRITE"}); err == nil || !strings.Contains(err.Error(), "keeps file") {
		t.Errorf("a partial replace-all commit: %v", err)
	}
}

// TestReplaceKeepsColumnMapping: a table Spark column-mapped (mode name) is replaced under a
// schema without mapping metadata, as `run refresh` builds a gold's: each column keeps its id
// and physical name, the new rows are written under the physical names, and readers see them.
// Before, the commit was refused ("column window has no delta.columnMapping.id"), and a gold
// Spark had column-mapped could not be refreshed.
func TestReplaceKeepsColumnMapping(t *testing.T) {
	ctx := context.Background()
	type row struct {
		A int64  `parquet:"col-aaa"`
		B string `parquet:"col-bbb"`
	}
	b := mem.New()
	handTable(t, b, `{"minReaderVersion":2,"minWriterVersion":5}`, `{"type":"struct","fields":[
{"name":"user_id","type":"long","nullable":true,"metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-aaa"}},
{"name":"name","type":"string","nullable":true,"metadata":{"delta.columnMapping.id":2,"delta.columnMapping.physicalName":"col-bbb"}}]}`,
		map[string]string{"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "2"},
		handFile{path: "part-0.parquet", data: parquetOf(t, []row{{1, "ann"}})})
	tbl := Open(b, Options{})
	before, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	plain := pqtest.MustSchema(t, `{"type":"struct","fields":[{"name":"user_id","type":"long","nullable":true,"metadata":{}},{"name":"name","type":"string","nullable":true,"metadata":{}}]}`)
	rows, err := pq.NewBatch(plain)
	if err != nil {
		t.Fatal(err)
	}
	rows.Columns[0].AppendInt64(2)
	rows.Columns[1].AppendString("bob")
	if _, err := tbl.Replace(ctx, Replace{Snapshot: before, Schema: plain, Rows: []*pq.Batch{rows}}); err != nil {
		t.Fatal(err)
	}
	got, err := scanJSON(t, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{`{"user_id":2,"name":"bob"}`}; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows %v, want %v", got, want)
	}
	snap, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := snap.Schema()
	if s.Fields[0].PhysicalName() != "col-aaa" || s.Fields[1].PhysicalName() != "col-bbb" {
		t.Errorf("physical names %s, %s after replace, want col-aaa, col-bbb", s.Fields[0].PhysicalName(), s.Fields[1].PhysicalName())
	}
	if len(plain.Fields[0].Metadata) != 0 {
		t.Errorf("the caller's schema changed: %v", plain.Fields[0].Metadata)
	}
}
