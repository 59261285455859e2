package bronze

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// PropDeclaredSchema is the bronze table property that records the source's declared columns
// as a Delta schema string (a required column NOT NULL), written when the table is created or
// evolved. Bronze's own columns are all nullable, so without it a `required: true` added to
// an existing column could not be told from the old definition.
const PropDeclaredSchema = "medallion.declaredSchema"

// ErrSchemaChange reports a change of a source's declared schema that Delta cannot apply to
// the tables written under the old one: a column removed, renamed, retyped or made required.
var ErrSchemaChange = errors.New("bronze: unsupported schema change")

// SchemaPolicy is what a change of the declared schema may do to an existing bronze table
// besides adding columns.
type SchemaPolicy struct {
	// TypeWidening lets a declared column's type be widened in place as Delta's typeWidening
	// table feature allows (table.Widens; the config's schema_evolution.type_widening). Off, a
	// widening is refused like every other type change, because a table with that reader
	// feature can no longer be read by delta-rs 1.6 or Polars.
	TypeWidening bool
	// Pinned are the declared columns that a stateful definition uses (the dedup keys, the
	// event time, a gold aggregation's group_by, aggregate column or time column, a join's keys
	// and time), each with what uses it. Their values are in the query's state encoded at the
	// column's type, so their type is never widened in place.
	Pinned map[string]string
}

// DeclaredSchemaProps are the table properties a bronze table is created with.
func DeclaredSchemaProps(declared *txlog.StructType) (map[string]string, error) {
	s, err := txlog.MarshalSchema(declared)
	if err != nil {
		return nil, err
	}
	return map[string]string{PropDeclaredSchema: s}, nil
}

// EvolveTable brings an existing bronze table (at path, for errors) in line with the declared
// columns: a declared column the table lacks is added (nullable; older rows read null) with
// one metaData commit before any row that carries it is written, and the declared schema is
// recorded in PropDeclaredSchema. want is the whole bronze schema (BronzeSchema or
// KafkaBronzeSchema of declared). A declared column removed, retyped or made required is
// refused with ErrSchemaChange naming the column, both definitions and the ways out. A table
// from before PropDeclaredSchema existed adopts the declared schema (the property is written
// once) after the same checks on its columns' types. Idempotent: a crash after the commit
// finds nothing left to do.
//
// With policy.TypeWidening, a declared column widened as Delta allows (and not policy.Pinned)
// is widened in bronze in the same one commit (table.EvolveWith): protocol reader 3 / writer 7
// with typeWidening, the change recorded in the field's delta.typeChanges.
func EvolveTable(ctx context.Context, tbl *table.Table, path string, want, declared *txlog.StructType, policy SchemaPolicy) (table.Evolution, error) {
	snap, err := tbl.Latest(ctx)
	if err != nil {
		return table.Evolution{}, fmt.Errorf("bronze: open %s: %w", path, err)
	}
	schema, err := snap.Schema()
	if err != nil {
		return table.Evolution{}, fmt.Errorf("bronze: schema of %s: %w", path, err)
	}
	old, err := recordedDeclared(snap.Metadata(), schema, declared)
	if err != nil {
		return table.Evolution{}, fmt.Errorf("bronze: table %s: %w", path, err)
	}
	if err := declaredChangeError(path, old, declared, policy); err != nil {
		return table.Evolution{}, err
	}
	for _, f := range want.Fields {
		if schema.Field(f.Name) == nil && declared.Field(f.Name) == nil {
			return table.Evolution{}, fmt.Errorf("bronze: table %s has no column %s, which this ingest writes itself: "+
				"it was written by another kind of ingest (files or Kafka); give the source its own bronze table", path, f.Name)
		}
	}
	props, err := DeclaredSchemaProps(declared)
	if err != nil {
		return table.Evolution{}, err
	}
	ev, err := tbl.EvolveWith(ctx, want, props, table.EvolveOptions{TypeWidening: policy.TypeWidening})
	if err != nil {
		return table.Evolution{}, fmt.Errorf("bronze: evolve %s: %w", path, err)
	}
	return ev, nil
}

// recordedDeclared is the declared schema a bronze table was last written under: its
// PropDeclaredSchema, or for a table from before the property its columns minus bronze's own,
// with the requiredness of declared (it cannot be known).
func recordedDeclared(meta txlog.Metadata, schema, declared *txlog.StructType) (*txlog.StructType, error) {
	if s, ok := meta.Configuration[PropDeclaredSchema]; ok {
		old, err := txlog.ParseSchema(s)
		if err != nil {
			return nil, fmt.Errorf("property %s: %w", PropDeclaredSchema, err)
		}
		return old, nil
	}
	old := &txlog.StructType{}
	own := BronzeSchema(&txlog.StructType{})
	kafka := KafkaBronzeSchema(&txlog.StructType{})
	for _, f := range schema.Fields {
		if own.Field(f.Name) != nil || kafka.Field(f.Name) != nil {
			continue
		}
		if d := declared.Field(f.Name); d != nil {
			f.Nullable = d.Nullable
		}
		old.Fields = append(old.Fields, f)
	}
	return old, nil
}

// CheckDeclared refuses, without writing anything, declared columns that the bronze table at
// path cannot take (EvolveTable's refusals), so that a job that reads bronze (the stream) stops
// at start as ingest would. A missing table, or columns only added, pass.
func CheckDeclared(ctx context.Context, tbl *table.Table, path string, declared *txlog.StructType, policy SchemaPolicy) error {
	snap, err := tbl.Latest(ctx)
	if errors.Is(err, txlog.ErrTableNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("bronze: open %s: %w", path, err)
	}
	schema, err := snap.Schema()
	if err != nil {
		return fmt.Errorf("bronze: schema of %s: %w", path, err)
	}
	old, err := recordedDeclared(snap.Metadata(), schema, declared)
	if err != nil {
		return fmt.Errorf("bronze: table %s: %w", path, err)
	}
	return declaredChangeError(path, old, declared, policy)
}

// EnsureBronzeTable creates the bronze table at path (schema want, the declared schema recorded
// in PropDeclaredSchema, and the table properties extra) when it is missing, and evolves it
// with EvolveTable when it exists, so that no row of a new column is written before the table
// has the column. An existing table keeps its properties.
func EnsureBronzeTable(ctx context.Context, tbl *table.Table, path string, want, declared *txlog.StructType, policy SchemaPolicy, extra map[string]string) error {
	_, err := tbl.Log().Snapshot(ctx)
	if errors.Is(err, txlog.ErrTableNotFound) {
		props, perr := DeclaredSchemaProps(declared)
		if perr != nil {
			return perr
		}
		for k, v := range extra {
			props[k] = v
		}
		if _, err := tbl.Create(ctx, want, nil, props); err != nil && !errors.Is(err, table.ErrTableExists) {
			return fmt.Errorf("bronze: create %s: %w", path, err)
		}
		// Created by this call, or by another meanwhile, perhaps under another schema: both
		// end in the check below.
	} else if err != nil {
		return fmt.Errorf("bronze: open %s: %w", path, err)
	}
	_, err = EvolveTable(ctx, tbl, path, want, declared, policy)
	return err
}

// declaredChangeError is nil when declared only adds columns to old (or drops `required`, or
// widens a column that policy lets be widened), and otherwise an ErrSchemaChange that names
// every other change and the ways out.
func declaredChangeError(path string, old, declared *txlog.StructType, policy SchemaPolicy) error {
	d := table.DiffSchema(old, declared)
	var other []table.ColumnChange
	for _, c := range d.Changed {
		if !policy.TypeWidening || !widening(c) || policy.Pinned[c.Old.Name] != "" {
			other = append(other, c)
		}
	}
	d.Changed = other
	if d.Compatible() {
		return nil
	}
	var what []string
	for _, f := range d.Removed {
		s := fmt.Sprintf("column %s (%s) was removed", f.Name, declaredString(f))
		// A rename looks like a removal and an addition at the same place.
		if i := old.FieldIndex(f.Name); i < len(declared.Fields) && old.Field(declared.Fields[i].Name) == nil {
			s += fmt.Sprintf(" (renamed to %s? Delta tables without column mapping cannot rename a column)", declared.Fields[i].Name)
		}
		what = append(what, s)
	}
	for _, c := range d.Changed {
		s := fmt.Sprintf("column %s changed from %s to %s", c.Old.Name, declaredString(c.Old), declaredString(c.New))
		switch {
		case !widening(c):
		case policy.Pinned[c.Old.Name] != "":
			s += fmt.Sprintf(" (a widening Delta's typeWidening table feature allows, but the column is %s: "+
				"the query's state holds its values encoded at the old type, so it cannot be widened in place; "+
				"a new column, or new tables for the source and a full refresh of its query, is the way)", policy.Pinned[c.Old.Name])
		case !policy.TypeWidening:
			s += " (a widening Delta's typeWidening table feature allows, not applied by default: a table with that " +
				"reader feature can no longer be read by delta-rs 1.6 nor by Polars, which reads through delta-rs; " +
				"to widen bronze, silver and the quarantines in place anyway, set `schema_evolution: {type_widening: true}` " +
				"for the source, see docs/schema-evolution.md)"
		}
		what = append(what, s)
	}
	return fmt.Errorf("%w: bronze table %s was written with another `schema:`: %s. "+
		"Only new columns can be added to an existing table: keep the old definition and add a new column "+
		"(for example a new name with the new type), or give the source new tables (new tables.bronze and "+
		"tables.silver paths and a new stream checkpoint) and ingest again. See docs/schema-evolution.md",
		ErrSchemaChange, path, strings.Join(what, "; "))
}

// widening reports whether c only widens the column's type as Delta's typeWidening allows,
// keeping or relaxing its requiredness.
func widening(c table.ColumnChange) bool {
	return table.Widens(c.Old.Type, c.New.Type) && (c.New.Nullable || !c.Old.Nullable)
}

// declaredString renders a declared column as the config writes it: "{type: long, required: true}".
func declaredString(f txlog.StructField) string {
	s := "{type: " + f.Type.TypeName()
	if !f.Nullable {
		s += ", required: true"
	}
	return s + "}"
}
