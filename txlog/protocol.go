package txlog

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Reader features this package (with the table layer) can read. typeWidening: the table layer
// reads files written before a column was widened at its current type; variantType: it reads
// a variant as its JSON text (a shredded one, variantShredding, is refused). Everything else, such
// as catalogManaged (catalogOwned-preview), whose commits a catalog owns, is refused by name.
var supportedReaderFeatures = []string{"columnMapping", "deletionVectors", "timestampNtz", "v2Checkpoint", "vacuumProtocolCheck",
	"typeWidening", "typeWidening-preview", "variantType", "variantType-preview"}

// Writer features this package can write under. Each one's obligations are honoured, or the
// write that would break them is refused by CheckWrite (docs/table-features.md lists how):
//   - appendOnly, changeDataFeed, generatedColumns, identityColumns, allowColumnDefaults,
//     rowTracking, clustering: refused for the kinds of write that would break them;
//   - invariants, checkConstraints (and generatedColumns when the table layer can evaluate the
//     expression): rules on every new row, evaluated by the table layer (table.RowRules);
//   - inCommitTimestamp, domainMetadata: enforced by txlog's commit itself;
//   - columnMapping, deletionVectors, timestampNtz: the table layer writes physical names and
//     field ids, applies deletion vectors to rows it copies and writes timestamp_ntz;
//   - v2Checkpoint (txlog writes no checkpoint there, which the protocol allows) and
//     vacuumProtocolCheck (vacuum runs CheckWrite);
//   - typeWidening (and its preview name): the table layer writes new files at the columns'
//     current types, applies only the type changes the protocol allows (table.Widens, recorded
//     in delta.typeChanges, with delta.enableTypeWidening) and keeps every field's metadata,
//     delta.typeChanges included, when it adds columns.
//
// Every other name, known to the protocol or not (icebergCompatV1/V2, variantType, ...),
// refuses every write.
var supportedWriterFeatures = []string{
	"appendOnly", "invariants", "checkConstraints", "generatedColumns", "allowColumnDefaults", "changeDataFeed",
	"columnMapping", "identityColumns", "deletionVectors", "rowTracking", "timestampNtz", "domainMetadata",
	"v2Checkpoint", "clustering", "vacuumProtocolCheck", "inCommitTimestamp", "typeWidening", "typeWidening-preview",
}

// maxWriterVersion is the highest writer protocol version this package writes under.
const maxWriterVersion = 7

// CheckRead reports whether a snapshot with this protocol and metadata can be read, naming
// the first unsupported version or feature (wrapping ErrUnsupportedFeature).
func CheckRead(p Protocol, m Metadata) error {
	switch p.MinReaderVersion {
	case 1:
	case 2:
		// Reader version 2 means column mapping (name or id mode).
	case 3:
		var bad []string
		for _, f := range p.ReaderFeatures {
			if !slices.Contains(supportedReaderFeatures, f) {
				bad = append(bad, f)
			}
		}
		if len(bad) > 0 {
			return fmt.Errorf("%w: reader features %s", ErrUnsupportedFeature, strings.Join(bad, ", "))
		}
	default:
		return fmt.Errorf("%w: unsupported Delta protocol reader version %d (supported: 1 to 3)", ErrUnsupportedFeature, p.MinReaderVersion)
	}
	switch mode := m.Configuration["delta.columnMapping.mode"]; mode {
	case "", "none", "name", "id":
	default:
		return fmt.Errorf("%w: columnMapping mode %q (supported: none, name, id)", ErrUnsupportedFeature, mode)
	}
	return nil
}

// WriteKind is what a write does to a table's rows. The obligations of most writer features
// depend on it: an append-only table takes appends, a change data feed needs change files only
// for changed rows, and rows a compaction merely moves keep their generated values.
type WriteKind int

const (
	// WriteLog touches no data file: vacuum, checkpoints, log cleanup, a commit of txn or
	// metadata only.
	WriteLog WriteKind = iota
	// WriteAppend adds new rows and removes none (dataChange=true adds only).
	WriteAppend
	// WriteRearrange moves rows between files without changing them: every file action has
	// dataChange=false (optimize).
	WriteRearrange
	// WriteChange removes or replaces existing rows (a remove with dataChange=true): overwrite
	// and replaceWhere, MERGE, merge-late, replay, a copy-on-write rewrite.
	WriteChange
)

func (k WriteKind) String() string {
	switch k {
	case WriteLog:
		return "log maintenance"
	case WriteAppend:
		return "append"
	case WriteRearrange:
		return "rearrange (dataChange=false)"
	case WriteChange:
		return "change of existing rows"
	}
	return "write kind " + strconv.Itoa(int(k))
}

// FeatureError is a write refused because of a table feature (or protocol version) whose
// obligations this writer would not honour. It wraps ErrUnsupportedFeature.
type FeatureError struct {
	// Feature is the table feature's name ("changeDataFeed"), or "writer version N".
	Feature string
	// Kind is the write that was refused.
	Kind WriteKind
	// Why says what the feature requires that this write would break.
	Why string
	// WayOut says how to go on.
	WayOut string
}

func (e *FeatureError) Error() string {
	msg := fmt.Sprintf("%s: %s refused by table feature %s: %s", ErrUnsupportedFeature, e.Kind, e.Feature, e.Why)
	if e.WayOut != "" {
		msg += "; " + e.WayOut
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrUnsupportedFeature) true.
func (e *FeatureError) Unwrap() error { return ErrUnsupportedFeature }

// impliedWriterFeatures are the features writer versions 2 to 6 stand for (PROTOCOL.md "Writer
// Version Requirements"); each version has those of the versions below it.
var impliedWriterFeatures = []struct {
	version  int
	features []string
}{
	{2, []string{"appendOnly", "invariants"}},
	{3, []string{"checkConstraints"}},
	{4, []string{"changeDataFeed", "generatedColumns"}},
	{5, []string{"columnMapping"}},
	{6, []string{"identityColumns"}},
}

// EffectiveWriterFeatures returns the writer features the protocol supports: the writerFeatures list at
// writer version 7, the features versions 2 to 6 imply below it.
func (p Protocol) EffectiveWriterFeatures() []string {
	if p.MinWriterVersion >= 7 {
		return slices.Clone(p.WriterFeatures)
	}
	var out []string
	for _, v := range impliedWriterFeatures {
		if p.MinWriterVersion >= v.version {
			out = append(out, v.features...)
		}
	}
	return out
}

// SupportsWriterFeature reports whether the protocol supports a writer feature, listed at
// writer version 7 or implied by versions 2 to 6.
func (p Protocol) SupportsWriterFeature(name string) bool {
	return slices.Contains(p.EffectiveWriterFeatures(), name)
}

// fieldsWithMetadata returns the dotted paths of the schema's fields (nested structs, array
// elements and map values included) that carry a field-metadata key equal to key, or starting
// with it when key ends in ".".
func fieldsWithMetadata(schema *StructType, key string) []string {
	var out []string
	var walkType func(prefix string, t DataType)
	walkStruct := func(prefix string, st *StructType) {
		for _, f := range st.Fields {
			for k := range f.Metadata {
				if k == key || strings.HasSuffix(key, ".") && strings.HasPrefix(k, key) {
					out = append(out, prefix+f.Name)
					break
				}
			}
			walkType(prefix+f.Name+".", f.Type)
		}
	}
	walkType = func(prefix string, t DataType) {
		switch x := t.(type) {
		case *StructType:
			walkStruct(prefix, x)
		case *ArrayType:
			walkType(prefix, x.ElementType)
		case *MapType:
			walkType(prefix, x.KeyType)
			walkType(prefix, x.ValueType)
		}
	}
	if schema != nil {
		walkStruct("", schema)
	}
	return out
}

// CheckWrite reports whether this package may make a write of this kind to a table with this
// protocol and metadata, honouring every writer feature the protocol supports (PROTOCOL.md,
// "Writer Requirements for ..."). A refusal is a *FeatureError naming the feature, what it
// requires and the way out; unknown features and versions wrap ErrUnsupportedFeature too.
//
// Row rules are the caller's: a write of rows (WriteAppend, WriteChange) to a table with column
// invariants, CHECK constraints or generated columns is accepted here only because the table
// layer evaluates them on every new row (table.RowRules) and refuses what it cannot evaluate.
func CheckWrite(p Protocol, m Metadata, kind WriteKind) error {
	if p.MinWriterVersion > maxWriterVersion || p.MinWriterVersion < 1 {
		return &FeatureError{Feature: fmt.Sprintf("writer version %d", p.MinWriterVersion), Kind: kind,
			Why:    fmt.Sprintf("this writer implements Delta protocol writer versions 1 to %d", maxWriterVersion),
			WayOut: "write the table with an engine that supports it"}
	}
	if p.MinWriterVersion == 7 {
		var bad []string
		for _, f := range p.WriterFeatures {
			if !slices.Contains(supportedWriterFeatures, f) {
				bad = append(bad, f)
			}
		}
		if len(bad) > 0 {
			return &FeatureError{Feature: strings.Join(bad, ", "), Kind: kind,
				Why:    "this writer does not implement these writer features, so it cannot keep their rules",
				WayOut: "write the table with an engine that supports them, or drop them (ALTER TABLE ... DROP FEATURE) if nothing depends on them; docs/table-features.md lists what medallion honours"}
		}
	}
	writesRows := kind == WriteAppend || kind == WriteChange
	writesFiles := writesRows || kind == WriteRearrange
	conf := m.Configuration
	var schema *StructType // parsed only for the features that look into column metadata
	if m.SchemaString != "" && writesRows && (p.SupportsWriterFeature("identityColumns") || p.SupportsWriterFeature("allowColumnDefaults")) {
		s, err := m.Schema()
		if err != nil {
			return err
		}
		schema = s
	}
	for _, f := range p.EffectiveWriterFeatures() {
		var err *FeatureError
		switch f {
		case "appendOnly":
			// PROTOCOL.md "Append-only Tables": no change or removal of data; rearranging is allowed.
			if conf["delta.appendOnly"] == "true" && kind == WriteChange {
				err = &FeatureError{Why: "delta.appendOnly=true: new commits must not change or remove rows",
					WayOut: "only appends and optimize may write this table; to change rows, lift the restriction first: ALTER TABLE ... SET TBLPROPERTIES (delta.appendOnly=false)"}
			}
		case "changeDataFeed":
			// "Writer Requirements for AddCDCFile": an operation that changes existing rows must
			// write their change rows (cdc actions, _change_data/ files). table.Rewrite, the one
			// path that changes rows, writes them in the same commit; appends (read as inserts)
			// and dataChange=false rewrites need none. The commit itself refuses a change that
			// carries no change rows (Transaction.checkChangeData), for any writer that would not.
		case "generatedColumns":
			// Rows a rearrange copies keep their values; new rows are checked by the table layer
			// (table.RowRules), which refuses expressions it cannot evaluate.
		case "identityColumns":
			if cols := fieldsWithMetadata(schema, "delta.identity."); len(cols) > 0 && writesRows {
				err = &FeatureError{Why: fmt.Sprintf("identity column %s: new rows need fresh identity values and a new delta.identity.highWaterMark, which this writer does not generate", strings.Join(cols, ", ")),
					WayOut: "write the table with Spark, or write medallion's rows to a table without identity columns"}
			}
		case "allowColumnDefaults":
			if cols := fieldsWithMetadata(schema, "CURRENT_DEFAULT"); len(cols) > 0 && writesRows {
				err = &FeatureError{Why: fmt.Sprintf("column %s has a default (CURRENT_DEFAULT): rows that lack it must get the default's value, which this writer does not compute", strings.Join(cols, ", ")),
					WayOut: "drop the default (ALTER TABLE ... ALTER COLUMN c DROP DEFAULT), or write the table with Spark"}
			}
		case "rowTracking":
			// "Writer Requirements for Row Tracking": every add needs a fresh baseRowId (with the
			// delta.rowTracking high-water mark) and defaultRowCommitVersion, and copied rows keep
			// their row ids through materialized columns.
			if writesFiles {
				err = &FeatureError{Why: "every new data file needs baseRowId and defaultRowCommitVersion (and copied rows their materialized row ids), which this writer does not assign",
					WayOut: "write the table with Spark, or drop the feature: ALTER TABLE ... DROP FEATURE rowTracking"}
			}
		case "clustering":
			// "Writer Requirements for Clustered Table": files need stats on the clustering columns
			// (the table layer checks its stats cover them); only a clustering implementation
			// may recluster files, and this compaction is not one.
			if kind == WriteRearrange {
				err = &FeatureError{Why: "a clustered (liquid clustering) table is compacted by a clustering implementation, which medallion's optimize is not: it would merge clustered files into unclustered ones",
					WayOut: "run OPTIMIZE on it with Spark or delta-rs, and leave it out of medallion's optimize"}
			}
		}
		if err != nil {
			err.Feature, err.Kind = f, kind
			return err
		}
	}
	if p.SupportsWriterFeature("columnMapping") {
		switch mode := conf["delta.columnMapping.mode"]; mode {
		case "", "none", "name", "id":
		default:
			return &FeatureError{Feature: "columnMapping", Kind: kind, Why: fmt.Sprintf("mode %q is not one this writer knows (none, name, id)", mode),
				WayOut: "write the table with an engine that supports it"}
		}
	}
	return nil
}

// ChangeFeedOn reports whether the table's change data feed is on (see changeFeedOn): its
// commits that change existing rows must carry their change rows.
func ChangeFeedOn(m Metadata) bool { return changeFeedOn(m.Configuration) }

// checkChangeData refuses a commit that changes existing rows of a table whose change data
// feed is on without carrying their change rows: readers of the feed would take its adds and
// removes as inserts and deletes of every row of those files. A commit that only moves rows
// (dataChange=false) or appends needs none.
func (tx *Transaction) checkChangeData(m Metadata, kind WriteKind) error {
	if kind != WriteChange || !changeFeedOn(m.Configuration) || len(tx.cdcs) > 0 {
		return nil
	}
	return &FeatureError{Feature: "changeDataFeed", Kind: kind,
		Why:    "delta.enableChangeDataFeed=true: a commit that changes existing rows must carry their change rows (cdc files under _change_data/), and this one carries none",
		WayOut: "write the change through table.Rewrite, which writes them, or turn the feed off: ALTER TABLE ... SET TBLPROPERTIES (delta.enableChangeDataFeed=false)"}
}

// changeFeedOn reports whether the change data feed is on. The property alone decides: the
// change-feed readers of Spark and delta-rs read it, so a table with the property set is
// treated as having the feed even if its protocol failed to list the feature.
func changeFeedOn(conf map[string]string) bool {
	return strings.EqualFold(conf["delta.enableChangeDataFeed"], "true")
}

// checkColumnMapping verifies a metadata action a commit writes under column mapping name or
// id mode: every field (nested too) has a unique id and physical name, no id above
// delta.columnMapping.maxColumnId, as "Writer Requirements for Column Mapping" demands of
// new columns.
func checkColumnMapping(m Metadata) error {
	mode := m.Configuration["delta.columnMapping.mode"]
	if mode != "name" && mode != "id" {
		return nil
	}
	schema, err := m.Schema()
	if err != nil {
		return err
	}
	maxID := int64(-1)
	if s, ok := m.Configuration["delta.columnMapping.maxColumnId"]; ok {
		if maxID, err = strconv.ParseInt(s, 10, 64); err != nil {
			return fmt.Errorf("%w: delta.columnMapping.maxColumnId %q is not a number", ErrInvalidTransaction, s)
		}
	}
	ids, names := map[int64]string{}, map[string]string{}
	var check func(prefix string, t DataType) error
	check = func(prefix string, t DataType) error {
		switch x := t.(type) {
		case *StructType:
			for _, f := range x.Fields {
				path := prefix + f.Name
				var id int64
				if json.Unmarshal(f.Metadata["delta.columnMapping.id"], &id) != nil || f.Metadata["delta.columnMapping.id"] == nil {
					return &FeatureError{Feature: "columnMapping", Why: fmt.Sprintf("column %s has no delta.columnMapping.id under mode %s", path, mode),
						WayOut: "a column added to a column-mapped table needs an id above delta.columnMapping.maxColumnId and a physical name; add it with Spark (ALTER TABLE ... ADD COLUMN)"}
				}
				phys := f.PhysicalName()
				if _, ok := f.Metadata["delta.columnMapping.physicalName"]; !ok {
					return &FeatureError{Feature: "columnMapping", Why: fmt.Sprintf("column %s has no delta.columnMapping.physicalName under mode %s", path, mode),
						WayOut: "add the column with Spark (ALTER TABLE ... ADD COLUMN)"}
				}
				if other, dup := ids[id]; dup {
					return fmt.Errorf("%w: columns %s and %s share column mapping id %d", ErrInvalidTransaction, other, path, id)
				}
				if maxID >= 0 && id > maxID {
					return fmt.Errorf("%w: column %s has column mapping id %d above delta.columnMapping.maxColumnId %d", ErrInvalidTransaction, path, id, maxID)
				}
				key := prefix + "\x00" + phys
				if other, dup := names[key]; dup {
					return fmt.Errorf("%w: columns %s and %s share physical name %s", ErrInvalidTransaction, other, path, phys)
				}
				ids[id], names[key] = path, path
				if err := check(path+".", f.Type); err != nil {
					return err
				}
			}
		case *ArrayType:
			return check(prefix, x.ElementType)
		case *MapType:
			if err := check(prefix, x.KeyType); err != nil {
				return err
			}
			return check(prefix, x.ValueType)
		}
		return nil
	}
	return check("", schema)
}

// HasFeature reports whether the protocol lists a table feature (reader or writer side).
func (p Protocol) HasFeature(name string) bool {
	return slices.Contains(p.ReaderFeatures, name) || slices.Contains(p.WriterFeatures, name)
}
