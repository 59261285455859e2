package table

import (
	"context"
	"fmt"
	"maps"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// Replace is a whole-table overwrite that may change the schema: Delta's
// `CREATE OR REPLACE TABLE ... AS SELECT` on an existing table (same table id, history kept).
type Replace struct {
	// Snapshot is the version replaced; a commit after it conflicts (the whole table is read).
	Snapshot *txlog.Snapshot
	// Schema is the table's new schema; the rows are written with it.
	Schema *txlog.StructType
	// Props are set in the table's configuration (the others are kept).
	Props map[string]string
	// Rows are the table's new rows.
	Rows []*pq.Batch
	// Txns are recorded in the commit (no check: the caller checks its own positions).
	Txns []AppTxn
}

// Replace removes every file of rp.Snapshot and adds rp.Rows under rp.Schema, in one commit
// that also sets the new metadata. Data files are written before the commit, so a crash leaves
// the table as it was. No change data files are written (txlog's ReplaceAllRows): a reader of
// the change feed gets the commit's removes as deletes and its adds as inserts, which is the
// change exactly, as Delta infers it for an overwrite.
func (t *Table) Replace(ctx context.Context, rp Replace) (Result, error) {
	snap := rp.Snapshot
	schemaJSON, err := txlog.MarshalSchema(rp.Schema)
	if err != nil {
		return Result{}, fmt.Errorf("table: replace: %w", err)
	}
	w, err := t.newWriter(snap, rp.Schema, txlog.WriteChange)
	if err != nil {
		return Result{}, fmt.Errorf("table: replace: %w", err)
	}
	for _, b := range rp.Rows {
		if err := w.Write(ctx, b); err != nil {
			return Result{}, fmt.Errorf("table: replace: %w", err)
		}
	}
	adds, err := w.Close(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("table: replace: %w", err)
	}
	meta := snap.Metadata()
	meta.SchemaString = schemaJSON
	meta.Configuration = maps.Clone(meta.Configuration)
	if meta.Configuration == nil {
		meta.Configuration = map[string]string{}
	}
	maps.Copy(meta.Configuration, rp.Props)
	tx := t.log.Begin(snap)
	tx.ReplaceAllRows()
	tx.SetMetadata(meta)
	var removed int64
	for _, a := range snap.Files() {
		tx.Remove(t.RemoveOf(a, true))
		removed += a.Size
	}
	tx.Add(adds...)
	for _, x := range rp.Txns {
		tx.SetTxn(x.AppID, x.Version)
	}
	v, err := tx.Commit(ctx, txlog.Operation{Name: "CREATE OR REPLACE TABLE AS SELECT",
		Parameters: map[string]any{"isManaged": "false", "partitionBy": partitionByJSON(snap.PartitionColumns())},
		Metrics: map[string]int64{"numFiles": int64(len(adds)), "numOutputRows": w.Rows(), "numOutputBytes": w.Bytes(),
			"numRemovedFiles": int64(len(snap.Files())), "numRemovedBytes": removed}})
	if err != nil {
		t.dropUnreferenced(ctx, adds, nil)
		return Result{}, fmt.Errorf("table: replace: %w", err)
	}
	return Result{Version: v, Added: adds, RowsWritten: w.Rows(), BytesWritten: w.Bytes()}, nil
}
