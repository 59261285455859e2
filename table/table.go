package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/txlog"
)

// ErrTableExists reports a Create on a table that already has a log.
var ErrTableExists = errors.New("table: table already exists")

// ErrReplaceWhereMismatch reports new rows of a replaceWhere overwrite that do not satisfy its
// predicate; nothing is committed.
var ErrReplaceWhereMismatch = errors.New("table: written data does not conform to the replaceWhere predicate")

// Table is a Delta table in a bucket rooted at the table folder.
type Table struct {
	bucket objstore.Bucket
	log    *txlog.Log
	write  pq.WriteOptions
	now    func() time.Time
	open   OpenURL // nil: files outside the table root are out of reach

	mu     sync.Mutex
	latest *txlog.Snapshot // the newest snapshot seen, refreshed from its version on

	consts changeConsts // for change writers
}

// Options configure a Table. The zero value means the defaults, which withDefaults fills in.
type Options struct {
	// Write tunes the data files the table writes (compression, row groups, file size).
	Write pq.WriteOptions
	// Clock is used for modification and deletion times and vacuum cut-offs (default
	// time.Now). Commit timestamps follow Log.Clock.
	Clock func() time.Time
	// OpenURL lets the table read files its log names by an absolute path outside its root
	// (deletion vectors of shallow clones), opening their locations with it. Nil: such files
	// are out of reach.
	OpenURL OpenURL
	// Log configures the transaction log.
	Log txlog.Options
}

// withDefaults returns o with every unset field at its default.
func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	return o
}

// Open returns the table rooted at b. It reads nothing until used.
func Open(b objstore.Bucket, opts Options) *Table {
	o := opts.withDefaults()
	return &Table{bucket: b, log: txlog.New(b, o.Log), write: o.Write, now: o.Clock, open: o.OpenURL}
}

// Log is the table's transaction log.
func (t *Table) Log() *txlog.Log { return t.log }

// Latest returns the table's latest snapshot. A Table keeps the newest snapshot it has seen
// and replays only the commits after it (txlog's Refresh), so a long-lived writer such as the
// stream pays for each new commit once instead of reloading the checkpoint every batch.
func (t *Table) Latest(ctx context.Context) (*txlog.Snapshot, error) {
	t.mu.Lock()
	prev := t.latest
	t.mu.Unlock()
	snap, err := t.log.Refresh(ctx, prev)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	// Keep the newest snapshot; one older than the one refreshed from means the table went
	// back (restored or replaced, which Refresh detected): drop what was kept.
	if t.latest == nil || snap.Version() > t.latest.Version() || (t.latest == prev && snap.Version() < prev.Version()) {
		t.latest = snap
	}
	t.mu.Unlock()
	return snap, nil
}

// Bucket is the table's bucket.
func (t *Table) Bucket() objstore.Bucket { return t.bucket }

// Create commits version 0 with the schema, partition columns and table properties. With
// delta.enableChangeDataFeed=true among them the protocol supports the change data feed
// (writer version 4, or the changeDataFeed feature at writer version 7).
func (t *Table) Create(ctx context.Context, schema *txlog.StructType, partitionCols []string, props map[string]string) (int64, error) {
	if _, err := t.log.Snapshot(ctx); err == nil {
		return 0, ErrTableExists
	} else if !errors.Is(err, txlog.ErrTableNotFound) {
		return 0, err
	}
	if _, err := NewDataWriter(t.bucket, schema, partitionCols, t.write); err != nil {
		return 0, err
	}
	// A new table's files are all at its types: a schema copied from a widened table (silver
	// created from bronze's) does not carry that table's type changes.
	ss, err := txlog.MarshalSchema(withoutTypeChanges(schema))
	if err != nil {
		return 0, err
	}
	if props == nil {
		props = map[string]string{}
	}
	created := t.now().UnixMilli()
	proto := txlog.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
	cdf := txlog.ChangeFeedOn(txlog.Metadata{Configuration: props})
	if cdf {
		// The change data feed is a writer feature of version 4, as Spark sets it when the
		// property is given at creation: readers and writers that predate table features
		// (Delta 2.x, delta-rs) take it.
		proto.MinWriterVersion = 4
	}
	if usesType(schema, txlog.TypeTimestampNTZ) {
		// Writer version 7 must list the legacy features that writer 2 implied: Spark treats
		// NOT NULL columns as invariants and refuses a table that does not list them.
		proto = txlog.Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
			ReaderFeatures: []string{"timestampNtz"}, WriterFeatures: []string{"appendOnly", "invariants", "timestampNtz"}}
		if cdf {
			proto.WriterFeatures = append(proto.WriterFeatures, "changeDataFeed")
		}
	}
	tx := t.log.Begin(nil)
	tx.SetProtocol(proto)
	tx.SetMetadata(txlog.Metadata{ID: uuid.NewString(), Format: txlog.Format{Provider: "parquet", Options: map[string]string{}},
		SchemaString: ss, PartitionColumns: append([]string{}, partitionCols...), Configuration: props, CreatedTime: &created})
	partJSON, _ := json.Marshal(append([]string{}, partitionCols...))
	propJSON, _ := json.Marshal(props)
	v, err := tx.Commit(ctx, txlog.Operation{Name: "CREATE TABLE", Parameters: map[string]any{
		"isManaged": "false", "description": nil, "partitionBy": string(partJSON), "properties": string(propJSON)}})
	if err != nil {
		if errors.Is(err, txlog.ErrConflict) {
			return 0, fmt.Errorf("%w: %v", ErrTableExists, err)
		}
		return 0, err
	}
	return v, nil
}

func usesType(t txlog.DataType, name string) bool {
	switch v := t.(type) {
	case *txlog.StructType:
		for _, f := range v.Fields {
			if usesType(f.Type, name) {
				return true
			}
		}
	case txlog.ArrayType:
		return usesType(v.ElementType, name)
	case txlog.MapType:
		return usesType(v.KeyType, name) || usesType(v.ValueType, name)
	}
	return t.TypeName() == name
}

// AppTxn identifies an idempotent write: the commit carries txn(AppID, Version) and is
// skipped when the table already has a version >= Version for AppID.
type AppTxn struct {
	AppID   string
	Version int64
}

// AppendOptions tune Append and Overwrite.
type AppendOptions struct {
	Txn *AppTxn
	// MergeSchema lets Append add the batches' columns that the table lacks (schema
	// evolution). New columns must be nullable; existing ones keep their types.
	MergeSchema bool
	// RowTags, when set, tags every file the append writes (see RowTagKey).
	RowTags *RowTags
}

// mergeSchema returns schema plus the top-level columns of the batches it lacks, and whether
// anything was added.
func mergeSchema(schema *txlog.StructType, batches []*pq.Batch) (*txlog.StructType, bool, error) {
	out := &txlog.StructType{Fields: append([]txlog.StructField(nil), schema.Fields...)}
	changed := false
	for _, b := range batches {
		for _, f := range b.Schema.Fields {
			if out.FieldIndex(f.Name) >= 0 {
				continue
			}
			for _, g := range out.Fields {
				if strings.EqualFold(g.Name, f.Name) {
					return nil, false, fmt.Errorf("%w: column %s differs from %s only in case", pq.ErrSchemaMismatch, f.Name, g.Name)
				}
			}
			if !f.Nullable {
				return nil, false, fmt.Errorf("%w: new column %s must be nullable to be added", pq.ErrSchemaMismatch, f.Name)
			}
			out.Fields = append(out.Fields, f)
			changed = true
		}
	}
	return out, changed, nil
}

// Result describes a commit.
type Result struct {
	Version int64
	// Skipped is true when an idempotent write found its txn already committed.
	Skipped      bool
	Added        []*txlog.Add
	Removed      []*txlog.Remove
	RowsWritten  int64
	BytesWritten int64
}

// writeSnapshot is the snapshot (and its schema) a write with the idempotent txn (nil: none)
// starts from. When the txn is already committed there, a rerun of the batch, res is the
// write's result, Skipped: it writes nothing.
func (t *Table) writeSnapshot(ctx context.Context, txn *AppTxn) (snap *txlog.Snapshot, schema *txlog.StructType, res Result, err error) {
	snap, schema, err = t.snapshotFor(ctx)
	if err != nil {
		return nil, nil, Result{}, err
	}
	if txn != nil {
		if v, ok := snap.TxnVersion(txn.AppID); ok && v >= txn.Version {
			return snap, schema, Result{Version: snap.Version(), Skipped: true}, nil
		}
	}
	return snap, schema, Result{}, nil
}

func (t *Table) snapshotFor(ctx context.Context) (*txlog.Snapshot, *txlog.StructType, error) {
	snap, err := t.Latest(ctx)
	if err != nil {
		return nil, nil, err
	}
	schema, err := snap.Schema()
	if err != nil {
		return nil, nil, err
	}
	return snap, schema, nil
}

// CheckWritable checks, before any data file is written, that a write of this kind may go to
// the table: every writer feature of its protocol is honoured or the write is refused, naming
// the feature and the way out (txlog.CheckWrite, plus the rules only this layer can judge: the
// row rules it can evaluate, stats on clustering columns). It returns the row rules (CHECK
// constraints, column invariants, generated columns) every new row must satisfy; DataWriters
// from newWriter check them, other writers call DataWriter.SetRowRules.
func CheckWritable(snap *txlog.Snapshot, schema *txlog.StructType, kind txlog.WriteKind) (*RowRules, error) {
	p, m := snap.Protocol(), snap.Metadata()
	if err := txlog.CheckWrite(p, m, kind); err != nil {
		return nil, err
	}
	if kind != txlog.WriteAppend && kind != txlog.WriteChange {
		return nil, nil
	}
	err := checkClusteringStats(snap, schema)
	var rules *RowRules
	if err == nil {
		rules, err = rowRulesOf(m, schema)
	}
	if fe := (*txlog.FeatureError)(nil); errors.As(err, &fe) {
		fe.Kind = kind
	}
	return rules, err
}

func (t *Table) newWriter(snap *txlog.Snapshot, schema *txlog.StructType, kind txlog.WriteKind) (*DataWriter, error) {
	rules, err := CheckWritable(snap, schema, kind)
	if err != nil {
		return nil, err
	}
	opts := t.write
	if opts.StatsColumns == 0 {
		opts.StatsColumns = statsColumns(snap.Metadata().Configuration)
	}
	w, err := NewDataWriter(t.bucket, schema, snap.PartitionColumns(), opts)
	if err != nil {
		return nil, err
	}
	w.now = t.now
	if err := w.SetRowRules(rules); err != nil {
		return nil, err
	}
	return w, nil
}

func partitionByJSON(cols []string) string {
	b, _ := json.Marshal(append([]string{}, cols...))
	return string(b)
}

// Append writes batches as new files and commits them in one atomic blind append.
func (t *Table) Append(ctx context.Context, batches []*pq.Batch, opts AppendOptions) (Result, error) {
	snap, schema, res, err := t.writeSnapshot(ctx, opts.Txn)
	if err != nil || res.Skipped {
		return res, err
	}
	var newMeta *txlog.Metadata
	if opts.MergeSchema {
		merged, changed, err := mergeSchema(schema, batches)
		if err != nil {
			return Result{}, err
		}
		if changed {
			ss, err := txlog.MarshalSchema(merged)
			if err != nil {
				return Result{}, err
			}
			m := snap.Metadata()
			m.SchemaString = ss
			newMeta, schema = &m, merged
		}
	}
	w, err := t.newWriter(snap, schema, txlog.WriteAppend)
	if err != nil {
		return Result{}, err
	}
	if err := t.setRowTags(w, snap, schema, opts.RowTags); err != nil {
		return Result{}, err
	}
	for _, b := range batches {
		if err := w.Write(ctx, b); err != nil {
			return Result{}, err
		}
	}
	adds, err := w.Close(ctx)
	if err != nil {
		return Result{}, err
	}
	return t.commitAppend(ctx, snap, newMeta, adds, opts)
}

// Writer returns a DataWriter for the latest schema, for callers that write files in
// parallel (one writer per goroutine; a DataWriter is not safe for concurrent use) and then
// commit them together with CommitFiles. Check HasTxn first to skip a batch already committed.
func (t *Table) Writer(ctx context.Context) (*DataWriter, error) {
	snap, err := t.Latest(ctx)
	if err != nil {
		return nil, err
	}
	return t.WriterAt(snap)
}

// WriterAt is Writer for the schema of a snapshot the caller already holds, so that writers
// started together share one look at the log.
func (t *Table) WriterAt(snap *txlog.Snapshot) (*DataWriter, error) {
	schema, err := snap.Schema()
	if err != nil {
		return nil, err
	}
	return t.newWriter(snap, schema, txlog.WriteAppend)
}

// HasTxn reports whether the table already records txn (a version >= txn.Version for its app).
func (t *Table) HasTxn(ctx context.Context, txn AppTxn) (bool, error) {
	snap, err := t.Latest(ctx)
	if err != nil {
		return false, err
	}
	v, ok := snap.TxnVersion(txn.AppID)
	return ok && v >= txn.Version, nil
}

// CommitFiles commits files written by Writer as one blind append (skipped, like Append, when
// the txn is already recorded; the files then stay unreferenced until vacuum).
func (t *Table) CommitFiles(ctx context.Context, adds []*txlog.Add, opts AppendOptions) (Result, error) {
	snap, err := t.Latest(ctx)
	if err != nil {
		return Result{}, err
	}
	if opts.Txn != nil {
		if v, ok := snap.TxnVersion(opts.Txn.AppID); ok && v >= opts.Txn.Version {
			return Result{Version: snap.Version(), Skipped: true}, nil
		}
	}
	return t.commitAppend(ctx, snap, nil, adds, opts)
}

func (t *Table) commitAppend(ctx context.Context, snap *txlog.Snapshot, newMeta *txlog.Metadata, adds []*txlog.Add, opts AppendOptions) (Result, error) {
	var rows, bytes int64
	for _, a := range adds {
		bytes += a.Size
		if n, ok := statsRecords(a.Stats); ok {
			rows += n
		}
	}
	tx := t.log.Begin(snap)
	if newMeta != nil {
		tx.SetMetadata(*newMeta)
	}
	tx.Add(adds...)
	if opts.Txn != nil {
		tx.SetTxn(opts.Txn.AppID, opts.Txn.Version)
	}
	v, err := tx.Commit(ctx, txlog.Operation{Name: "WRITE",
		Parameters: map[string]any{"mode": "Append", "partitionBy": partitionByJSON(snap.PartitionColumns())},
		Metrics:    map[string]int64{"numFiles": int64(len(adds)), "numOutputRows": rows, "numOutputBytes": bytes}})
	if err != nil {
		return Result{}, err
	}
	return Result{Version: v, Added: adds, RowsWritten: rows, BytesWritten: bytes}, nil
}

// statsRecords reads numRecords from an add's stats.
func statsRecords(stats string) (int64, bool) {
	var s struct {
		NumRecords *int64 `json:"numRecords"`
	}
	if stats == "" || json.Unmarshal([]byte(stats), &s) != nil || s.NumRecords == nil {
		return 0, false
	}
	return *s.NumRecords, true
}

// ScanOptions select what Scan reads.
type ScanOptions struct {
	// Version reads that version (time travel); nil reads the latest.
	Version *int64
	// Timestamp reads the latest version committed at or before it.
	Timestamp *time.Time
	// Columns projects (nil: every column, in schema order).
	Columns []string
	// Filter skips files and drops rows for which it is not true.
	Filter sqlexpr.Expr
}

// Snapshot resolves the version a ScanOptions asks for.
func (t *Table) Snapshot(ctx context.Context, opts ScanOptions) (*txlog.Snapshot, error) {
	switch {
	case opts.Version != nil:
		return t.log.SnapshotAt(ctx, *opts.Version)
	case opts.Timestamp != nil:
		return t.log.SnapshotAsOf(ctx, *opts.Timestamp)
	}
	return t.Latest(ctx)
}

// Scan yields the table's rows in batches.
func (t *Table) Scan(ctx context.Context, opts ScanOptions) iter.Seq2[*pq.Batch, error] {
	return func(yield func(*pq.Batch, error) bool) {
		snap, err := t.Snapshot(ctx, opts)
		if err != nil {
			yield(nil, err)
			return
		}
		fs, err := t.fileScan(snap, opts.Columns, opts.Filter)
		if err != nil {
			yield(nil, err)
			return
		}
		for b, err := range fs.Read(ctx, snap.Files()) {
			if !yield(b, err) || err != nil {
				return
			}
		}
	}
}

// FileScan returns the scanner of a snapshot, for callers that choose files themselves.
func (t *Table) fileScan(snap *txlog.Snapshot, cols []string, filter sqlexpr.Expr) (*FileScan, error) {
	schema, err := snap.Schema()
	if err != nil {
		return nil, err
	}
	fs := &FileScan{Bucket: t.bucket, Schema: schema, PartitionCols: snap.PartitionColumns(), Columns: cols, OpenURL: t.open}
	if filter != nil {
		if fs.Filter, err = sqlexpr.Bind(filter, schema, snap.PartitionColumns()); err != nil {
			return nil, err
		}
	}
	return fs, nil
}

// FileScan returns a scanner over a snapshot of this table.
func (t *Table) FileScan(snap *txlog.Snapshot, cols []string, filter sqlexpr.Expr) (*FileScan, error) {
	return t.fileScan(snap, cols, filter)
}

// Overwrite replaces the rows matching predicate with batches in one commit (Delta's
// replaceWhere): files entirely inside the predicate are removed, files straddling it are
// rewritten without the matching rows, and every new row must satisfy the predicate, or
// nothing is committed (ErrReplaceWhereMismatch). A nil predicate overwrites the whole table.
func (t *Table) Overwrite(ctx context.Context, predicate sqlexpr.Expr, batches []*pq.Batch, opts AppendOptions) (Result, error) {
	whole := predicate == nil
	if whole {
		predicate = sqlexpr.And()
	}
	snap, schema, res, err := t.writeSnapshot(ctx, opts.Txn)
	if err != nil || res.Skipped {
		return res, err
	}
	pred, err := sqlexpr.Bind(predicate, schema, snap.PartitionColumns())
	if err != nil {
		return Result{}, err
	}
	for _, b := range batches {
		cols, err := pq.Conform(schema, b)
		if err != nil {
			return Result{}, err
		}
		view := &pq.Batch{Schema: schema, Columns: cols}
		for i, ok := range pred.Eval(view) {
			if !ok {
				return Result{}, fmt.Errorf("%w '%s': row %d is %v", ErrReplaceWhereMismatch, pred, i, view.Row(i))
			}
		}
	}
	var candidates []*txlog.Add
	for _, a := range snap.Files() {
		if pred.MayMatch(a) {
			candidates = append(candidates, a)
		}
	}
	var deletedRows, copiedRows, newRows int64
	scanned := false
	rw := Rewrite{Snapshot: snap, Read: pred, Candidates: candidates, Txn: opts.Txn, KeepEmpty: true,
		// Every file the predicate may match is replaced: those entirely inside it by nothing,
		// the others by their rows outside it.
		File: func(ctx context.Context, a *txlog.Add, read func() ([]*pq.Batch, error)) (bool, []*pq.Batch, error) {
			if pred.AllMatch(a) {
				return true, nil, nil
			}
			scanned = true
			parts, err := read()
			if err != nil {
				return false, nil, err
			}
			kept := make([]*pq.Batch, 0, len(parts))
			for _, b := range parts {
				match := pred.Eval(b)
				keep := make([]bool, len(match))
				for i, m := range match {
					keep[i] = !m
					if m {
						deletedRows++
					} else {
						copiedRows++
					}
				}
				kept = append(kept, b.Filter(keep))
			}
			return true, kept, nil
		},
		Insert: func() ([]*pq.Batch, error) {
			for _, b := range batches {
				newRows += int64(b.Len())
			}
			return batches, nil
		},
		Operation: func(res RewriteResult) txlog.Operation {
			metrics := map[string]int64{"numFiles": int64(len(res.Added)), "numOutputRows": newRows + copiedRows, "numOutputBytes": res.BytesWritten,
				"numRemovedFiles": int64(len(res.Removed)), "numRemovedBytes": res.BytesRemoved, "numAddedChangeFiles": int64(len(res.ChangeFiles))}
			if scanned {
				metrics["numDeletedRows"] = deletedRows
				metrics["numCopiedRows"] = copiedRows
			}
			params := map[string]any{"mode": "Overwrite", "partitionBy": partitionByJSON(snap.PartitionColumns())}
			if !whole {
				params["predicate"] = pred.String()
			}
			return txlog.Operation{Name: "WRITE", Parameters: params, Metrics: metrics}
		},
	}
	if whole {
		rw.Read = nil
	}
	rwr, err := t.Rewrite(ctx, rw)
	if err != nil {
		return Result{}, err
	}
	return Result{Version: rwr.Version, Added: rwr.Added, Removed: rwr.Removed, RowsWritten: rwr.RowsWritten, BytesWritten: rwr.BytesWritten}, nil
}

// isHidden reports whether a key is outside Delta's data area (a path segment starting with
// "_" or ".", except partition directories "col=value" whose column starts with "_").
func isHidden(key string) bool {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, ".") || (strings.HasPrefix(s, "_") && (i == len(segs)-1 || !strings.Contains(s, "="))) {
			return true
		}
	}
	return false
}
