package stream

// The tables a query writes: created before its first batch writes them, checked for the
// writer features its writes need, and written with the batch's txn.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// open opens a table of the lake with the engine's clock and wopts.
func (c *engineConfig) open(path string, wopts pq.WriteOptions) *table.Table {
	return table.Open(objstore.WithPrefix(c.lake, path), table.Options{Clock: c.clock, Write: wopts})
}

// outputs are the tables a query writes, in the order it creates and checks them.
type outputs struct {
	ts  []outTable
	aps []*aggPlan
	// golds are the aggregations' gold tables, which may lack the exact-sum columns.
	golds []*table.Table
}

func (o *outputs) add(t outTable) { o.ts = append(o.ts, t) }

// addAggs adds each aggregation's quarantine and gold table (defs their definitions);
// evolve: the quarantines follow the input's columns.
func (o *outputs) addAggs(aps []*aggPlan, golds, quars []*table.Table, defs []definedTable, evolve bool) {
	for i, ap := range aps {
		gk := txlog.WriteAppend
		if ap.complete || ap.update {
			gk = txlog.WriteChange
		}
		o.add(outTable{t: quars[i], schema: ap.qschema, path: ap.cfg.Quarantine, evolve: evolve, name: "quarantine " + ap.cfg.Quarantine, kind: txlog.WriteAppend})
		o.add(outTable{t: golds[i], schema: ap.schema, path: ap.cfg.Table, props: spec.CreateProps(defs[i].def.props(), ap.cfg.NoChangeDataFeed), name: "gold " + ap.cfg.Name + " (table " + ap.cfg.Table + ")", kind: gk})
	}
	o.aps, o.golds = aps, golds
}

// ensure creates the tables that do not exist yet, refuses, before a micro-batch writes any
// of them, a table whose writer features the query's writes would break
// (docs/table-features.md), and adds the exact-sum columns gold tables lack. wrap names the
// query in the errors of the first and the last.
func (o *outputs) ensure(ctx context.Context, wrap func(error) error) error {
	if err := createMissing(ctx, o.ts); err != nil {
		return wrap(err)
	}
	if err := checkWritable(ctx, o.ts); err != nil {
		return err
	}
	for i, ap := range o.aps {
		if err := addExactColumns(ctx, o.golds[i], ap); err != nil {
			return wrap(err)
		}
	}
	return nil
}

// addExactColumns adds to gold the internal exact-sum columns of ap's float sums and avgs
// that it lacks: a gold table created before sums were exact, or written by Spark's export.
// It is the Delta way, a metaData action adding nullable columns; the rows already there keep
// null, which stands for the exact value of their double (gold.ReadExact). Idempotent: a
// rerun after a crash finds the columns and commits nothing.
func addExactColumns(ctx context.Context, t *table.Table, ap *aggPlan) error {
	want := gold.ExactFields(ap.agg.Aggs)
	if len(want) == 0 {
		return nil
	}
	snap, err := t.Log().Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("stream: gold %s: %w", ap.cfg.Name, err)
	}
	have, err := snap.Schema()
	if err != nil {
		return fmt.Errorf("stream: gold %s: %w", ap.cfg.Name, err)
	}
	evolved := &txlog.StructType{Fields: slices.Clone(have.Fields)}
	for _, f := range want {
		if have.FieldIndex(f.Name) < 0 {
			evolved.Fields = append(evolved.Fields, f)
		}
	}
	if len(evolved.Fields) == len(have.Fields) {
		return nil
	}
	// An empty batch of the evolved schema: Append with MergeSchema commits the metaData
	// action and no file.
	b, err := pq.NewBatch(evolved)
	if err != nil {
		return fmt.Errorf("stream: gold %s: %w", ap.cfg.Name, err)
	}
	if _, err := t.Append(ctx, []*pq.Batch{b}, table.AppendOptions{MergeSchema: true}); err != nil {
		return fmt.Errorf("stream: gold %s: add the exact-sum columns: %w", ap.cfg.Name, err)
	}
	return nil
}

// checkWritable runs table.CheckWritable on each table for the kind of write the stream makes.
func checkWritable(ctx context.Context, ts []outTable) error {
	for _, o := range ts {
		snap, err := o.t.Latest(ctx)
		if err != nil {
			return fmt.Errorf("stream: %s: %w", o.name, err)
		}
		schema, err := snap.Schema()
		if err != nil {
			return fmt.Errorf("stream: %s: %w", o.name, err)
		}
		if _, err := table.CheckWritable(snap, schema, o.kind); err != nil {
			return fmt.Errorf("stream: %s: %w", o.name, err)
		}
	}
	return nil
}

// outTable is a table a query writes, with the schema the query writes it with.
type outTable struct {
	t      *table.Table
	schema *txlog.StructType
	path   string // for errors
	// evolve: the table follows its input's schema (silver follows bronze, a quarantine
	// silver), so columns added upstream are added to it before a row carries them.
	evolve bool
	// props are the table properties it is created with (its PropDefinition).
	props map[string]string
	// name names it in errors; kind is the write the query makes to it.
	name string
	kind txlog.WriteKind
}

// createMissing creates each table that does not exist yet with its schema, and evolves
// those that follow their input to its columns (table.EvolveWith: a metaData commit that adds
// the new, nullable columns and widens the columns its input widened, before any row of them
// is written; nothing when they are there).
func createMissing(ctx context.Context, ts []outTable) error {
	for _, o := range ts {
		// Latest: the snapshot stays cached for the batch's writes, which refresh it.
		_, err := o.t.Latest(ctx)
		switch {
		case errors.Is(err, txlog.ErrTableNotFound):
			if _, err := o.t.Create(ctx, o.schema, nil, o.props); err != nil && !errors.Is(err, table.ErrTableExists) {
				return fmt.Errorf("stream: create table %s: %w", o.path, err)
			}
		case err != nil:
			return fmt.Errorf("stream: open table %s: %w", o.path, err)
		}
		if o.evolve {
			if err := checkRenamed(ctx, o); err != nil {
				return err
			}
			// A widening reaches silver only through bronze, which widens only what the
			// config lets it (or another engine did): follow it.
			// A column the table has and the input lacks is a computed column removed from the
			// config: it stays, NULL in new rows (docs/schema-evolution.md).
			if _, err := o.t.EvolveWith(ctx, o.schema, nil, table.EvolveOptions{TypeWidening: true, KeepMissing: true}); err != nil {
				return fmt.Errorf("stream: table %s cannot take the columns of its input: %w; "+
					"see docs/schema-evolution.md for the ways out", o.path, err)
			}
		}
	}
	return nil
}

// checkRenamed refuses a table that follows its input when another engine renamed one of its
// columns (Spark's ALTER TABLE RENAME COLUMN under column mapping): the input's column is then
// missing by name but still the physical name of the renamed field. Taken for a new column, the
// rows written before the rename have it NULL (or, once someone added it back as the old error
// advised, replay and refresh aggregated them as NULL: gold lost their values without an error).
func checkRenamed(ctx context.Context, o outTable) error {
	snap, err := o.t.Latest(ctx)
	if err != nil {
		return fmt.Errorf("stream: open table %s: %w", o.path, err)
	}
	if mode := snap.Metadata().Configuration["delta.columnMapping.mode"]; mode != "name" && mode != "id" {
		return nil
	}
	have, err := snap.Schema()
	if err != nil {
		return fmt.Errorf("stream: table %s: %w", o.path, err)
	}
	for _, in := range o.schema.Fields {
		for _, f := range have.Fields {
			if strings.EqualFold(f.Name, in.Name) || !strings.EqualFold(f.PhysicalName(), in.Name) {
				continue
			}
			added := ""
			if have.FieldIndex(in.Name) >= 0 {
				added = fmt.Sprintf(", after dropping the column %s added since (ALTER TABLE ... DROP COLUMN %s)", in.Name, in.Name)
			}
			return fmt.Errorf("stream: table %s: column %s of its input is the table's column %s, renamed by another engine "+
				"(its column mapping physical name is still %s): the rows written before hold its values under %s; "+
				"rename it back: ALTER TABLE ... RENAME COLUMN %s TO %s%s", o.path, in.Name, f.Name, f.PhysicalName(), f.Name, f.Name, in.Name, added)
		}
	}
	return nil
}

// write appends (or, for complete mode, overwrites the whole table) with the batch's txn.
func write(ctx context.Context, t *table.Table, batches []*pq.Batch, txn *table.AppTxn, overwrite bool) (table.Result, error) {
	if overwrite {
		return t.Overwrite(ctx, sqlexpr.And(), batches, table.AppendOptions{Txn: txn})
	}
	return t.Append(ctx, batches, table.AppendOptions{Txn: txn})
}

// writeGold appends a batch of gold rows as write does, tagging each file with its rows'
// hashes by window (table.RowTagKey, as merge-late and replay tag theirs): a replay then
// tells the stream's windows unchanged without reading them.
func writeGold(ctx context.Context, t *table.Table, b *pq.Batch, txn *table.AppTxn, overwrite bool) (table.Result, error) {
	if overwrite || b.Schema.FieldIndex(gold.ColWindow) < 0 {
		return write(ctx, t, []*pq.Batch{b}, txn, overwrite)
	}
	return t.Append(ctx, []*pq.Batch{b}, table.AppendOptions{Txn: txn,
		RowTags: &table.RowTags{Group: gold.ColWindow, Exclude: []string{gold.ColLateRows}}})
}
