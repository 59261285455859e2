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
	Widened []string // the columns widened (EvolveOptions.TypeWidening)
	Changed bool     // a metaData action was committed
}

// EvolveOptions are the changes besides added columns that Evolve may apply.
type EvolveOptions struct {
	// TypeWidening lets Evolve widen existing top-level columns as Delta's typeWidening table
	// feature allows (Widens): the column's type is changed in place, the change is recorded in
	// its field metadata delta.typeChanges, and the protocol is upgraded to reader 3, writer 7
	// with typeWidening in readerFeatures and writerFeatures, in the same commit. The table's
	// old files keep their narrower Parquet types; every reader of the feature (and the table
	// layer's scans) reads them at the new type. A reader without the feature can no longer
	// read the table (delta-rs 1.6 refuses it), which is why this is an option.
	TypeWidening bool
	// KeepMissing keeps the table's columns that want lacks instead of refusing them as
	// removed: a table that follows an input whose columns it outlives (silver keeps a computed
	// column removed from the config, and new rows hold NULL in it, as a removed declared
	// column stays in bronze).
	KeepMissing bool
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
	return t.EvolveWith(ctx, want, props, EvolveOptions{})
}

// EvolveWith is Evolve that may also widen existing columns (opts.TypeWidening): a column of
// want whose type is a widening of the table's (Widens) and whose nullability is kept or
// relaxed gets the new type in the same one commit as the added columns, with the
// protocol and the delta.typeChanges metadata Delta's Type Widening section prescribes and the
// table property delta.enableTypeWidening=true (the protocol lets writers widen only with it).
// Every other change is refused as by Evolve. Idempotent as Evolve: a widened column compares
// equal to want on the rerun, so a crash before or after the commit converges.
func (t *Table) EvolveWith(ctx context.Context, want *txlog.StructType, props map[string]string, opts EvolveOptions) (Evolution, error) {
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
		var widen []ColumnChange
		if opts.TypeWidening {
			widen, d.Changed = splitWidenings(d.Changed)
		}
		if opts.KeepMissing {
			d.Removed = nil
		}
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
		if len(widen) > 0 {
			props = maps.Clone(props)
			if props == nil {
				props = map[string]string{}
			}
			props[PropEnableTypeWidening] = "true"
		}
		propsChanged := false
		for k, v := range props {
			if cur, ok := meta.Configuration[k]; !ok || cur != v {
				propsChanged = true
			}
		}
		if len(d.Added) == 0 && len(widen) == 0 && !propsChanged {
			return Evolution{Version: snap.Version()}, nil
		}
		if _, err := CheckWritable(snap, schema, txlog.WriteLog); err != nil {
			return Evolution{}, err
		}
		merged := withColumns(schema, target, d.Added)
		var widened []string
		for _, c := range widen {
			i := merged.FieldIndex(c.Old.Name)
			f, err := widenedField(merged.Fields[i], c.New.Type)
			if err != nil {
				return Evolution{}, err
			}
			merged.Fields[i] = f
			widened = append(widened, c.Old.Name)
		}
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
		p := snap.Protocol()
		upgraded := false
		if q, ok := protocolFor(p, merged); ok {
			p, upgraded = q, true
		}
		if len(widen) > 0 {
			if q, ok := withFeature(p, FeatureTypeWidening); ok {
				p, upgraded = q, true
			}
		}
		if upgraded {
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
		switch {
		case len(widen) > 0:
			var changes []map[string]any
			for _, c := range widen {
				changes = append(changes, map[string]any{"column": c.Old.Name, "fromType": pq.TypeString(c.Old.Type), "toType": pq.TypeString(c.New.Type)})
			}
			op = txlog.Operation{Name: "CHANGE COLUMNS", Parameters: map[string]any{"columns": jsonString(changes), "added": jsonString(cols)}}
		case len(added) > 0:
			op = txlog.Operation{Name: "ADD COLUMNS", Parameters: map[string]any{"columns": jsonString(cols)}}
		}
		v, err := tx.Commit(ctx, op)
		if errors.Is(err, txlog.ErrConflict) && attempt < 10 {
			continue // someone committed first: look again (they may have added the columns)
		}
		if err != nil {
			return Evolution{}, err
		}
		return Evolution{Version: v, Added: added, Widened: widened, Changed: true}, nil
	}
}

// FeatureTypeWidening is the Delta table feature (reader and writer) that widens a column's
// type in place.
const FeatureTypeWidening = "typeWidening"

// PropEnableTypeWidening is the table property without which Delta writers must not widen a
// column (PROTOCOL.md, "Type Widening").
const PropEnableTypeWidening = "delta.enableTypeWidening"

// typeChangesKey is the field-metadata key that records a column's type changes.
const typeChangesKey = "delta.typeChanges"

// splitWidenings separates the changes that only widen a column's type (keeping or relaxing
// its nullability) from the others.
func splitWidenings(changes []ColumnChange) (widen, other []ColumnChange) {
	for _, c := range changes {
		if Widens(c.Old.Type, c.New.Type) && (c.New.Nullable || !c.Old.Nullable) {
			widen = append(widen, c)
		} else {
			other = append(other, c)
		}
	}
	return widen, other
}

// widenedField is f with type to and the change appended to its delta.typeChanges (the
// entries it has are kept, as writers must preserve them).
func widenedField(f txlog.StructField, to txlog.DataType) (txlog.StructField, error) {
	var changes []map[string]any
	if raw, ok := f.Metadata[typeChangesKey]; ok {
		if err := json.Unmarshal(raw, &changes); err != nil {
			return f, fmt.Errorf("%w: column %s: field metadata %s is not a list: %v", ErrIncompatibleSchema, f.Name, typeChangesKey, err)
		}
	}
	changes = append(changes, map[string]any{"fromType": pq.TypeString(f.Type), "toType": pq.TypeString(to)})
	raw, err := json.Marshal(changes)
	if err != nil {
		return f, err
	}
	f.Metadata = maps.Clone(f.Metadata)
	if f.Metadata == nil {
		f.Metadata = map[string]json.RawMessage{}
	}
	f.Metadata[typeChangesKey] = raw
	f.Type = to
	return f, nil
}

// withoutTypeChanges is schema without the delta.typeChanges of its top-level fields: the
// columns of a new table, or new columns of a table, copied from a widened one, whose files
// hold only the current types.
func withoutTypeChanges(schema *txlog.StructType) *txlog.StructType {
	out := &txlog.StructType{Fields: slices.Clone(schema.Fields)}
	for i, f := range out.Fields {
		if _, ok := f.Metadata[typeChangesKey]; ok {
			f.Metadata = maps.Clone(f.Metadata)
			delete(f.Metadata, typeChangesKey)
			out.Fields[i] = f
		}
	}
	return out
}

// Widens reports whether Delta's typeWidening feature allows changing a column from old to
// new (PROTOCOL.md, "Type Widening"): byte, short and int to a wider integer, to double or to a
// decimal with at least 10 integer digits (long: 20); float to double; date to timestamp_ntz; a
// decimal to one whose precision and scale both grow by k1 >= k2 >= 0 (one of them by more
// than zero).
func Widens(old, new txlog.DataType) bool {
	rank := map[string]int{txlog.TypeByte: 1, txlog.TypeShort: 2, txlog.TypeInteger: 3, txlog.TypeLong: 4}
	o, n := old.TypeName(), new.TypeName()
	od, oDec := old.(txlog.DecimalType)
	nd, nDec := new.(txlog.DecimalType)
	switch {
	case rank[o] > 0 && rank[n] > rank[o]:
		return true
	case rank[o] > 0 && rank[o] <= 3 && n == txlog.TypeDouble:
		return true
	case rank[o] > 0 && nDec:
		// Decimal(10 + k1, k2) with k1 >= k2 >= 0 for byte, short and int; 20 for long.
		digits := 10
		if rank[o] == 4 {
			digits = 20
		}
		return nd.Precision-nd.Scale >= digits
	case o == txlog.TypeFloat && n == txlog.TypeDouble:
		return true
	case o == txlog.TypeDate && n == txlog.TypeTimestampNTZ:
		return true
	case oDec && nDec:
		k1, k2 := nd.Precision-od.Precision, nd.Scale-od.Scale
		return k2 >= 0 && k1 >= k2 && k1 > 0
	}
	return false
}

// withFeature is p with the table feature name as a reader and writer feature (reader 3,
// writer 7, the legacy features the old versions implied listed), and whether it had to change.
func withFeature(p txlog.Protocol, name string) (txlog.Protocol, bool) {
	if p.MinReaderVersion >= 3 && p.MinWriterVersion >= 7 && slices.Contains(p.ReaderFeatures, name) && slices.Contains(p.WriterFeatures, name) {
		return p, false
	}
	out := txlog.Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
		ReaderFeatures: slices.Clone(p.ReaderFeatures), WriterFeatures: slices.Clone(p.WriterFeatures)}
	if p.MinWriterVersion < 7 {
		out.WriterFeatures = legacyWriterFeatures(p.MinWriterVersion)
	}
	if p.MinReaderVersion == 2 && !slices.Contains(out.ReaderFeatures, "columnMapping") {
		out.ReaderFeatures = append(out.ReaderFeatures, "columnMapping")
	}
	if !slices.Contains(out.ReaderFeatures, name) {
		out.ReaderFeatures = append(out.ReaderFeatures, name)
	}
	if !slices.Contains(out.WriterFeatures, name) {
		out.WriterFeatures = append(out.WriterFeatures, name)
	}
	return out, true
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
	for _, f := range withoutTypeChanges(&txlog.StructType{Fields: added}).Fields {
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
