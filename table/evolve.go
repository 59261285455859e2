package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// ErrIncompatibleSchema reports a wanted schema that is not the table's schema plus nullable
// columns: a column removed, renamed, retyped or made NOT NULL. Delta readers map Parquet
// columns by name, so such a change would make old files read wrong or not at all; the ways
// out are a new column or a new table.
var ErrIncompatibleSchema = errors.New("table: incompatible schema change")

// SchemaDiff is how a wanted schema differs from a table's, top-level column by column (by
// exact name).
type SchemaDiff struct {
	Added   []txlog.StructField // in want, not in the table
	Removed []txlog.StructField // in the table, not in want
	Changed []ColumnChange      // in both with another type or nullability
}

// ColumnChange is a column that is in both schemas with different definitions.
type ColumnChange struct {
	Old, New txlog.StructField
}

// Compatible reports whether the diff only adds columns.
func (d SchemaDiff) Compatible() bool { return len(d.Removed) == 0 && len(d.Changed) == 0 }

// Error describes the changes that are not additions, for an ErrIncompatibleSchema.
func (d SchemaDiff) Error() string {
	var parts []string
	for _, f := range d.Removed {
		parts = append(parts, fmt.Sprintf("column %s (%s) is gone", f.Name, FieldString(f)))
	}
	for _, c := range d.Changed {
		parts = append(parts, fmt.Sprintf("column %s changed from %s to %s", c.Old.Name, FieldString(c.Old), FieldString(c.New)))
	}
	return strings.Join(parts, "; ")
}

// FieldString renders a column's definition as "string", "long NOT NULL".
func FieldString(f txlog.StructField) string {
	s := pq.TypeString(f.Type)
	if !f.Nullable {
		s += " NOT NULL"
	}
	return s
}

// DiffSchema compares a table's schema with a wanted one. A column that only becomes nullable
// is no change worth a commit and not reported; one that becomes NOT NULL is.
func DiffSchema(table, want *txlog.StructType) SchemaDiff {
	var d SchemaDiff
	for _, f := range want.Fields {
		old := table.Field(f.Name)
		switch {
		case old == nil:
			d.Added = append(d.Added, f)
		case !TypeEqual(old.Type, f.Type) || (old.Nullable && !f.Nullable):
			d.Changed = append(d.Changed, ColumnChange{Old: *old, New: f})
		}
	}
	for _, f := range table.Fields {
		if want.Field(f.Name) == nil {
			d.Removed = append(d.Removed, f)
		}
	}
	return d
}

// TypeEqual reports whether two types are the same Delta type (nested nullability included).
func TypeEqual(a, b txlog.DataType) bool {
	js := func(t txlog.DataType) string {
		s, err := txlog.MarshalSchema(&txlog.StructType{Fields: []txlog.StructField{{Name: "c", Type: t, Nullable: true}}})
		if err != nil {
			return "?" + t.TypeName()
		}
		return s
	}
	return js(a) == js(b)
}

// Evolution is what Evolve committed.
type Evolution struct {
	Version int64    // the metaData commit, or the version already there when nothing changed
	Added   []string // the columns added
	Changed bool     // a metaData action was committed
}

// Evolve gives the table the columns of want that it lacks (they must be nullable), placed after the
// column that precedes them in want (as ALTER TABLE ADD COLUMNS ... AFTER), and sets the
// configuration entries props, in one commit of a metaData action (and of a protocol action
// when a new column's type needs a table feature). Existing rows read the new columns as null.
// It commits nothing when the table has them already, so it is idempotent: a crash before or
// after its commit converges on the rerun. A wanted schema that removes a column or changes
// an existing one is refused with ErrIncompatibleSchema and the SchemaDiff (errors.As) naming
// it. A concurrent commit is retried from the new latest version. A nil want keeps the
// table's schema and only sets props.
func (t *Table) Evolve(ctx context.Context, want *txlog.StructType, props map[string]string) (Evolution, error) {
	for attempt := 0; ; attempt++ {
		snap, err := t.Latest(ctx)
		if err != nil {
			return Evolution{}, err
		}
		schema, err := snap.Schema()
		if err != nil {
			return Evolution{}, err
		}
		target := want
		if target == nil {
			target = schema
		}
		d := DiffSchema(schema, target)
		if !d.Compatible() {
			return Evolution{}, &SchemaChangeError{Diff: d}
		}
		for _, f := range d.Added {
			if !f.Nullable {
				return Evolution{}, fmt.Errorf("%w: new column %s is NOT NULL, and rows the table holds already would have it null; add it nullable", ErrIncompatibleSchema, f.Name)
			}
			for _, g := range schema.Fields {
				if strings.EqualFold(f.Name, g.Name) {
					return Evolution{}, fmt.Errorf("%w: new column %s differs from column %s only in case, and Delta column names are case-insensitive", ErrIncompatibleSchema, f.Name, g.Name)
				}
			}
		}
		meta := snap.Metadata()
		propsChanged := false
		for k, v := range props {
			if cur, ok := meta.Configuration[k]; !ok || cur != v {
				propsChanged = true
			}
		}
		if len(d.Added) == 0 && !propsChanged {
			return Evolution{Version: snap.Version()}, nil
		}
		if _, err := CheckWritable(snap, schema, txlog.WriteLog); err != nil {
			return Evolution{}, err
		}
		merged := withColumns(schema, target, d.Added)
		ss, err := txlog.MarshalSchema(merged)
		if err != nil {
			return Evolution{}, err
		}
		meta.SchemaString = ss
		meta.Configuration = maps.Clone(meta.Configuration)
		if meta.Configuration == nil {
			meta.Configuration = map[string]string{}
		}
		maps.Copy(meta.Configuration, props)
		tx := t.log.Begin(snap)
		if p, ok := protocolFor(snap.Protocol(), merged); ok {
			tx.SetProtocol(p)
		}
		tx.SetMetadata(meta)
		var added []string
		var cols []map[string]any
		for _, f := range d.Added {
			added = append(added, f.Name)
			cols = append(cols, map[string]any{"column": map[string]any{"name": f.Name, "type": pq.TypeString(f.Type), "nullable": true, "metadata": map[string]any{}}})
		}
		op := txlog.Operation{Name: "SET TBLPROPERTIES", Parameters: map[string]any{"properties": jsonString(props)}}
		if len(added) > 0 {
			op = txlog.Operation{Name: "ADD COLUMNS", Parameters: map[string]any{"columns": jsonString(cols)}}
		}
		v, err := tx.Commit(ctx, op)
		if errors.Is(err, txlog.ErrConflict) && attempt < 10 {
			continue // someone committed first: look again (they may have added the columns)
		}
		if err != nil {
			return Evolution{}, err
		}
		return Evolution{Version: v, Added: added, Changed: true}, nil
	}
}

// SchemaChangeError is an ErrIncompatibleSchema with the changes that make it so.
type SchemaChangeError struct{ Diff SchemaDiff }

func (e *SchemaChangeError) Error() string {
	return ErrIncompatibleSchema.Error() + ": " + e.Diff.Error()
}

// Unwrap makes the error an ErrIncompatibleSchema.
func (e *SchemaChangeError) Unwrap() error { return ErrIncompatibleSchema }

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// withColumns is schema with the columns added (made nullable), each placed after the
// nearest column before it in want that schema holds, or first when none is.
func withColumns(schema, want *txlog.StructType, added []txlog.StructField) *txlog.StructType {
	out := &txlog.StructType{Fields: slices.Clone(schema.Fields)}
	for _, f := range added {
		f.Nullable = true
		at := 0
		wi := want.FieldIndex(f.Name)
		for k := wi - 1; k >= 0; k-- {
			if i := out.FieldIndex(want.Fields[k].Name); i >= 0 {
				at = i + 1
				break
			}
		}
		out.Fields = slices.Insert(out.Fields, at, f)
	}
	return out
}

// protocolFor is the protocol a table with schema needs, when p falls short of it: a
// timestamp_ntz column needs the timestampNtz feature (reader 3, writer 7), as Create gives it.
func protocolFor(p txlog.Protocol, schema *txlog.StructType) (txlog.Protocol, bool) {
	if !usesType(schema, txlog.TypeTimestampNTZ) || slices.Contains(p.ReaderFeatures, "timestampNtz") {
		return p, false
	}
	out := txlog.Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
		ReaderFeatures: slices.Clone(p.ReaderFeatures), WriterFeatures: slices.Clone(p.WriterFeatures)}
	if p.MinWriterVersion < 7 {
		// The legacy features that the old writer version implied, as Create lists them.
		out.WriterFeatures = legacyWriterFeatures(p.MinWriterVersion)
	}
	if p.MinReaderVersion == 2 {
		out.ReaderFeatures = append(out.ReaderFeatures, "columnMapping")
	}
	out.ReaderFeatures = append(out.ReaderFeatures, "timestampNtz")
	out.WriterFeatures = append(out.WriterFeatures, "timestampNtz")
	return out, true
}

// legacyWriterFeatures are the features writer version v implies (Delta's table of legacy
// protocol versions).
func legacyWriterFeatures(v int) []string {
	var fs []string
	if v >= 2 {
		fs = append(fs, "appendOnly", "invariants")
	}
	if v >= 3 {
		fs = append(fs, "checkConstraints")
	}
	if v >= 4 {
		fs = append(fs, "changeDataFeed", "generatedColumns")
	}
	if v >= 5 {
		fs = append(fs, "columnMapping")
	}
	if v >= 6 {
		fs = append(fs, "identityColumns")
	}
	return fs
}
