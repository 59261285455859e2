package table

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

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
	schema := rp.Schema
	if mode := snap.Metadata().Configuration["delta.columnMapping.mode"]; mode == "name" || mode == "id" {
		// Readers of a column-mapped table find each column by its physical name (or id), and a
		// commit must give every field both: the new schema takes them from the old field of
		// the same name. Without them a refresh of a gold that Spark had column-mapped was
		// refused for a column the table already has. A new field gets none, and the commit
		// refuses it.
		if old, err := snap.Schema(); err == nil {
			schema = keepColumnMapping(schema, old)
		}
	}
	schemaJSON, err := txlog.MarshalSchema(schema)
	if err != nil {
		return Result{}, fmt.Errorf("table: replace: %w", err)
	}
	w, err := t.newWriter(snap, schema, txlog.WriteChange)
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

// keepColumnMapping is s with the column mapping metadata (id, physical name) of old's fields
// of the same name, nested structs too, as Delta matches names: without regard to case.
func keepColumnMapping(s, old *txlog.StructType) *txlog.StructType {
	out := &txlog.StructType{Fields: make([]txlog.StructField, len(s.Fields))}
	for i, f := range s.Fields {
		f.Metadata = maps.Clone(f.Metadata)
		for _, o := range old.Fields {
			if !strings.EqualFold(o.Name, f.Name) {
				continue
			}
			for k, v := range o.Metadata {
				if strings.HasPrefix(k, "delta.columnMapping.") {
					if f.Metadata == nil {
						f.Metadata = map[string]json.RawMessage{}
					}
					f.Metadata[k] = v
				}
			}
			if st, ok := f.Type.(*txlog.StructType); ok {
				if ot, ok := o.Type.(*txlog.StructType); ok {
					f.Type = keepColumnMapping(st, ot)
				}
			}
			break
		}
		out.Fields[i] = f
	}
	return out
}
