package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// ChangeType is a change row's _change_type.
type ChangeType string

// The change types of the Delta protocol's change data feed.
const (
	ChangeInsert    ChangeType = "insert"
	ChangeDelete    ChangeType = "delete"
	ChangePreimage  ChangeType = "update_preimage"
	ChangePostimage ChangeType = "update_postimage"
)

// The columns a change feed reader adds to the table's, after ChangeTypeColumn (the column the
// change data files themselves carry), named as Spark's table_changes names them.
const (
	CommitVersionColumn   = "_commit_version"
	CommitTimestampColumn = "_commit_timestamp"
)

// ChangeFeedProperty is the table property that turns the change data feed on.
const ChangeFeedProperty = "delta.enableChangeDataFeed"

// ErrChangeFeedOff reports a change feed read over a version at which the table did not
// record changes (the property was off); the error names the version.
var ErrChangeFeedOff = errors.New("table: change data feed is not enabled")

// ErrChangeDataGone reports a change feed read that needs a file vacuum deleted (a change
// data file, or the data file an add or remove names); the error names the file and version.
var ErrChangeDataGone = errors.New("table: change data is gone (vacuumed)")

// ChangeSet is one version's change rows: the table's columns, then _change_type,
// _commit_version, _commit_timestamp (the column names Spark's table_changes gives).
type ChangeSet struct {
	Version   int64
	Timestamp time.Time
	Rows      *pq.Batch
}

// ChangeFile is one file a version's change rows are read from.
type ChangeFile struct {
	Path            string
	PartitionValues map[string]*string
	Size            int64 // 0: unknown (a remove without size); the store is asked
	// Type is the change type of every row for an add (insert) or remove (delete); empty for
	// a change data file, whose rows carry their own _change_type.
	Type ChangeType
	// DeletionVector masks rows that are not read, as the scanner does.
	DeletionVector *txlog.DeletionVector
	// Select, when set, limits the rows read to those Select marks and Unselect (if set) does
	// not: a file re-added in the same version with another deletion vector changes only the
	// rows one vector masks and the other does not (DeletionVector is then nil).
	Select, Unselect *txlog.DeletionVector
}

// VersionChanges is the plan of one version's change rows: its commit time and the files to
// read. Files is empty for a version that changes no data.
type VersionChanges struct {
	Version   int64
	Timestamp time.Time
	Files     []ChangeFile
}

// ChangeFeed reads the change feed of a range of versions of a table. OpenChanges checks the
// range; Plan and ReadFile then read it a version and a file at a time, for callers that bound
// what they read at once (a stream's read limits). Changes reads it whole, version by version.
type ChangeFeed struct {
	t          *Table
	from, to   int64
	schema     *txlog.StructType // the table's (latest) schema: the rows' columns before the three added
	out        *txlog.StructType // schema plus the three added columns
	partitions []string
	times      map[int64]time.Time
}

// OpenChanges checks the range [from, to] (to < 0: the latest version; a to past the latest
// version is cut to it) and returns its reader. The feed must be on at from; each version's
// metadata is checked again when it is planned. Errors: txlog.ErrVersionNotFound for a range
// outside the table's versions, ErrChangeFeedOff.
func (t *Table) OpenChanges(ctx context.Context, from, to int64) (*ChangeFeed, error) {
	latest, err := t.Latest(ctx)
	if err != nil {
		return nil, err
	}
	if from < 0 {
		return nil, fmt.Errorf("%w: change feed start version %d is negative", txlog.ErrVersionNotFound, from)
	}
	if from > latest.Version() {
		return nil, fmt.Errorf("%w: change feed start version %d is after the latest version %d", txlog.ErrVersionNotFound, from, latest.Version())
	}
	if to < 0 || to > latest.Version() {
		to = latest.Version()
	}
	if to < from {
		return nil, fmt.Errorf("%w: change feed end version %d is before the start version %d", txlog.ErrVersionNotFound, to, from)
	}
	start := latest
	if from != latest.Version() {
		if start, err = t.log.SnapshotAt(ctx, from); err != nil {
			return nil, fmt.Errorf("table: change feed start version %d: %w", from, err)
		}
	}
	if !ChangeFeedOn(start) {
		if on, ok := t.feedTurnedOn(ctx, from+1, to); ok {
			return nil, fmt.Errorf("%w at version %d: it is on from version %d, start there", ErrChangeFeedOff, from, on)
		}
		return nil, fmt.Errorf("%w at version %d (set %s=true to record changes from the next version on)", ErrChangeFeedOff, from, ChangeFeedProperty)
	}
	schema, err := latest.Schema()
	if err != nil {
		return nil, err
	}
	times, err := t.log.CommitTimestamps(ctx)
	if err != nil {
		return nil, err
	}
	out := &txlog.StructType{Fields: slices.Clone(schema.Fields)}
	out.Fields = append(out.Fields,
		txlog.StructField{Name: ChangeTypeColumn, Type: txlog.PrimitiveType{Name: "string"}, Nullable: true},
		txlog.StructField{Name: CommitVersionColumn, Type: txlog.PrimitiveType{Name: "long"}, Nullable: true},
		txlog.StructField{Name: CommitTimestampColumn, Type: txlog.PrimitiveType{Name: "timestamp"}, Nullable: true})
	return &ChangeFeed{t: t, from: from, to: to, schema: schema, out: out,
		partitions: latest.PartitionColumns(), times: times}, nil
}

// feedTurnedOn finds the first version of [from, to] whose metadata turns the feed on, so that
// an error can say where a readable range starts. Any failure reads as not found.
func (t *Table) feedTurnedOn(ctx context.Context, from, to int64) (int64, bool) {
	for v := from; v <= to; v++ {
		actions, err := txlog.ReadActions(ctx, t.bucket, v)
		if err != nil {
			return 0, false
		}
		if ca := classify(actions); ca.metadata != nil && txlog.ChangeFeedOn(*ca.metadata) {
			return v, true
		}
	}
	return 0, false
}

// Range is the range of versions the feed reads, both ends included.
func (f *ChangeFeed) Range() (from, to int64) { return f.from, f.to }

// Timestamp is version v's commit time as the change rows carry it (zero when the log no
// longer has the version's commit).
func (f *ChangeFeed) Timestamp(v int64) time.Time { return f.times[v] }

// Schema is the schema of the change rows: the table's columns, then _change_type,
// _commit_version and _commit_timestamp.
func (f *ChangeFeed) Schema() *txlog.StructType { return f.out }

// Changes reads the change feed of versions [from, to] (to < 0: latest) in version order;
// a version that changes no data yields nothing. Errors: ErrChangeFeedOff (the feed was
// not on at some version of the range: the error names the version), ErrChangeDataGone (a
// file the range needs was vacuumed: named), txlog.ErrVersionNotFound for a version outside
// the table's. Each version's rows are read whole into one batch; a caller that must bound its
// memory reads with OpenChanges, Plan and ReadFile instead.
func (t *Table) Changes(ctx context.Context, from, to int64) iter.Seq2[ChangeSet, error] {
	return func(yield func(ChangeSet, error) bool) {
		f, err := t.OpenChanges(ctx, from, to)
		if err != nil {
			yield(ChangeSet{}, err)
			return
		}
		for v := f.from; v <= f.to; v++ {
			vc, err := f.Plan(ctx, v)
			if err != nil {
				yield(ChangeSet{}, err)
				return
			}
			if len(vc.Files) == 0 {
				continue
			}
			var parts []*pq.Batch
			for _, cf := range vc.Files {
				b, err := f.ReadFile(ctx, vc, cf)
				if err != nil {
					yield(ChangeSet{}, err)
					return
				}
				if b.Len() > 0 {
					parts = append(parts, b)
				}
			}
			if len(parts) == 0 {
				continue
			}
			rows, err := f.concat(parts)
			if err != nil {
				yield(ChangeSet{}, err)
				return
			}
			if !yield(ChangeSet{Version: v, Timestamp: vc.Timestamp, Rows: rows}, nil) {
				return
			}
		}
	}
}

// Plan reads version v's commit and returns the files its change rows come from, as Delta's
// readers choose them: the version's change data files when it has any; else the rows of its
// adds with dataChange=true (inserts) and of its removes with dataChange=true (deletes),
// except a MERGE whose metrics say it changed no row; a file removed and added again with
// another deletion vector contributes only the rows whose mask changed. A version with only
// dataChange=false actions (optimize) has no files. A metadata action that turns the feed
// off is ErrChangeFeedOff.
func (f *ChangeFeed) Plan(ctx context.Context, v int64) (VersionChanges, error) {
	if v < f.from || v > f.to {
		return VersionChanges{}, fmt.Errorf("%w: version %d is outside the change feed range %d..%d", txlog.ErrVersionNotFound, v, f.from, f.to)
	}
	data, err := objstore.ReadAll(ctx, f.t.bucket, txlog.CommitKey(v))
	if errors.Is(err, objstore.ErrNotFound) {
		return VersionChanges{}, fmt.Errorf("%w: commit %d is gone (log cleanup removed it): %w", txlog.ErrVersionNotFound, v, err)
	}
	if err != nil {
		return VersionChanges{}, fmt.Errorf("table: read commit %d: %w", v, err)
	}
	actions, err := txlog.ParseActions(data)
	if err != nil {
		return VersionChanges{}, fmt.Errorf("table: commit %d: %w", v, err)
	}
	vc := VersionChanges{Version: v, Timestamp: f.times[v]}
	ca := classify(actions)
	if ca.metadata != nil && !txlog.ChangeFeedOn(*ca.metadata) {
		return VersionChanges{}, fmt.Errorf("%w at version %d: that commit turned %s off", ErrChangeFeedOff, v, ChangeFeedProperty)
	}
	if len(ca.cdcs) > 0 {
		for _, c := range ca.cdcs {
			vc.Files = append(vc.Files, ChangeFile{Path: c.Path, PartitionValues: c.PartitionValues, Size: c.Size})
		}
		return vc, nil
	}
	if mergeChangedNothing(ca.info) {
		return vc, nil
	}
	files, err := f.inferredFiles(ctx, v, ca.adds, ca.removes)
	if err != nil {
		return VersionChanges{}, err
	}
	vc.Files = files
	return vc, nil
}

// changeActions are the actions of a commit that decide its change rows.
type changeActions struct {
	metadata *txlog.Metadata
	cdcs     []*txlog.CDC
	adds     []*txlog.Add    // dataChange=true
	removes  []*txlog.Remove // dataChange=true
	info     *txlog.CommitInfo
}

func classify(actions []txlog.Action) changeActions {
	var ca changeActions
	for _, a := range actions {
		switch {
		case a.MetaData != nil:
			ca.metadata = a.MetaData
		case a.CDC != nil:
			ca.cdcs = append(ca.cdcs, a.CDC)
		case a.Add != nil && a.Add.DataChange:
			ca.adds = append(ca.adds, a.Add)
		case a.Remove != nil && a.Remove.DataChange:
			ca.removes = append(ca.removes, a.Remove)
		case a.CommitInfo != nil:
			ca.info = a.CommitInfo
		}
	}
	return ca
}

// hasChanges reports whether the commit has change rows to read (files, at least).
func (ca changeActions) hasChanges() bool {
	return len(ca.cdcs) > 0 || (len(ca.adds)+len(ca.removes) > 0 && !mergeChangedNothing(ca.info))
}

// LatestChangeVersion returns the newest version of snap's table, among the lookBack versions
// up to snap's, whose change feed has files to read (change data files, or data-changing adds
// and removes): the version a change feed consumer has to reach. found is false when the feed
// is off at snap, or no version of the window (with the feed on) changed data. It reads only
// commit files, newest first, and stops at the first with changes.
func (t *Table) LatestChangeVersion(ctx context.Context, snap *txlog.Snapshot, lookBack int) (v int64, found bool, err error) {
	if !ChangeFeedOn(snap) {
		return -1, false, nil
	}
	sawMetadata := false
	for v := snap.Version(); v >= 0 && v > snap.Version()-int64(lookBack); v-- {
		data, err := objstore.ReadAll(ctx, t.bucket, txlog.CommitKey(v))
		if errors.Is(err, objstore.ErrNotFound) {
			return -1, false, nil // log cleanup removed the older commits
		}
		if err != nil {
			return -1, false, fmt.Errorf("table: read commit %d: %w", v, err)
		}
		actions, err := txlog.ParseActions(data)
		if err != nil {
			return -1, false, fmt.Errorf("table: commit %d: %w", v, err)
		}
		ca := classify(actions)
		if ca.metadata != nil && !txlog.ChangeFeedOn(*ca.metadata) {
			return -1, false, nil // the feed was off from here down
		}
		if ca.hasChanges() {
			if sawMetadata && ca.metadata == nil {
				// A later commit set the metadata: whether the feed was on here is the
				// metadata in force at v.
				at, err := t.log.SnapshotAt(ctx, v)
				if err != nil {
					return -1, false, err
				}
				if !ChangeFeedOn(at) {
					return -1, false, nil
				}
			}
			return v, true, nil
		}
		sawMetadata = sawMetadata || ca.metadata != nil
	}
	return -1, false, nil
}

// mergeChangedNothing is Delta's guard for a MERGE that rewrote files without changing a row
// (dataChange=true, no change data files): its metrics say 0 rows inserted, updated and
// deleted, and its feed is empty rather than every row of the rewritten files.
func mergeChangedNothing(info *txlog.CommitInfo) bool {
	if info == nil || info.Operation != "MERGE" {
		return false
	}
	for _, k := range []string{"numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted"} {
		raw, ok := info.OperationMetrics[k]
		if !ok {
			return false
		}
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				return false
			}
			n = json.Number(s)
		}
		if n.String() != "0" {
			return false
		}
	}
	return true
}

// inferredFiles turns a version's data-changing adds and removes into change files: inserts
// and deletes, and for a path both removed and added (a new deletion vector) the rows whose
// mask changed. A remove without partition values takes them from the add it removes.
func (f *ChangeFeed) inferredFiles(ctx context.Context, v int64, adds []*txlog.Add, removes []*txlog.Remove) ([]ChangeFile, error) {
	added := map[string]*txlog.Add{}
	for _, a := range adds {
		added[a.Path] = a
	}
	removed := map[string]bool{}
	var out []ChangeFile
	var prev *txlog.Snapshot
	for _, r := range removes {
		removed[r.Path] = true
		pv := r.PartitionValues
		if pv == nil && len(f.partitions) > 0 && v > 0 {
			if prev == nil {
				var err error
				if prev, err = f.t.log.SnapshotAt(ctx, v-1); err != nil {
					return nil, fmt.Errorf("table: partition values of %s removed at version %d: %w", r.Path, v, err)
				}
			}
			for _, a := range prev.Files() {
				if a.Path == r.Path {
					pv = a.PartitionValues
					break
				}
			}
		}
		size := int64(0)
		if r.Size != nil {
			size = *r.Size
		}
		if a, ok := added[r.Path]; ok {
			// The same file stays with another mask: deleted = masked now and not before;
			// inserted = masked before and not now (a restore).
			if a.DeletionVector != nil {
				out = append(out, ChangeFile{Path: r.Path, PartitionValues: a.PartitionValues, Size: a.Size, Type: ChangeDelete,
					Select: a.DeletionVector, Unselect: r.DeletionVector})
			}
			if r.DeletionVector != nil {
				out = append(out, ChangeFile{Path: r.Path, PartitionValues: a.PartitionValues, Size: a.Size, Type: ChangeInsert,
					Select: r.DeletionVector, Unselect: a.DeletionVector})
			}
			continue
		}
		out = append(out, ChangeFile{Path: r.Path, PartitionValues: pv, Size: size, Type: ChangeDelete, DeletionVector: r.DeletionVector})
	}
	for _, a := range adds {
		if removed[a.Path] {
			continue
		}
		out = append(out, ChangeFile{Path: a.Path, PartitionValues: a.PartitionValues, Size: a.Size, Type: ChangeInsert, DeletionVector: a.DeletionVector})
	}
	return out, nil
}

// ReadFile reads the change rows of one file of a planned version, in the feed's schema.
// A missing file is ErrChangeDataGone.
func (f *ChangeFeed) ReadFile(ctx context.Context, vc VersionChanges, cf ChangeFile) (*pq.Batch, error) {
	read := f.schema
	if cf.Type == "" {
		read = &txlog.StructType{Fields: append(slices.Clone(f.schema.Fields), f.out.Fields[len(f.schema.Fields)])}
	}
	fs := &FileScan{Bucket: f.t.bucket, Schema: read, PartitionCols: f.partitions, OpenURL: f.t.open}
	add := &txlog.Add{Path: cf.Path, PartitionValues: cf.PartitionValues, Size: cf.Size, DeletionVector: cf.DeletionVector}
	gone := func(err error) error {
		if errors.Is(err, objstore.ErrNotFound) {
			what := cf.Path
			if cf.DeletionVector != nil || cf.Select != nil {
				what += " (or its deletion vector)"
			}
			return fmt.Errorf("%w: %s, named by version %d, is missing: %w", ErrChangeDataGone, what, vc.Version, err)
		}
		return fmt.Errorf("table: change feed version %d, file %s: %w", vc.Version, cf.Path, err)
	}
	var sel, unsel map[uint64]bool
	if cf.Select != nil {
		var err error
		if sel, err = f.rowSet(ctx, cf.Select); err != nil {
			return nil, gone(err)
		}
		if cf.Unselect != nil {
			if unsel, err = f.rowSet(ctx, cf.Unselect); err != nil {
				return nil, gone(err)
			}
		}
	}
	var parts []*pq.Batch
	row := uint64(0)
	for b, err := range fs.Read(ctx, []*txlog.Add{add}) {
		if err != nil {
			return nil, gone(err)
		}
		if sel != nil {
			keep := make([]bool, b.Len())
			for r := range keep {
				keep[r] = sel[row+uint64(r)] && !unsel[row+uint64(r)]
			}
			row += uint64(b.Len())
			b = b.Filter(keep)
		}
		part, err := f.changeBatch(b, cf.Type, vc)
		if err != nil {
			return nil, err
		}
		parts = append(parts, part)
	}
	return f.concat(parts)
}

// changeBatch lays b (the table's columns, plus _change_type for a change data file) out in
// the feed's schema without copying its columns: the change type (when the file gives none),
// version and commit time are added as columns of one repeated value.
func (f *ChangeFeed) changeBatch(b *pq.Batch, typ ChangeType, vc VersionChanges) (*pq.Batch, error) {
	n, rows := len(f.schema.Fields), b.Len()
	out := &pq.Batch{Schema: f.out, Columns: make([]*pq.Column, 0, len(f.out.Fields))}
	out.Columns = append(out.Columns, b.Columns[:n]...)
	if typ == "" {
		out.Columns = append(out.Columns, b.Columns[n])
	} else {
		c, err := pq.NewColumn(f.out.Fields[n].Type)
		if err != nil {
			return nil, err
		}
		c.Grow(rows, rows*len(typ))
		for range rows {
			c.AppendString(string(typ))
		}
		out.Columns = append(out.Columns, c)
	}
	for _, v := range []int64{vc.Version, vc.Timestamp.UnixMicro()} {
		c, err := pq.NewColumn(f.out.Fields[len(out.Columns)].Type)
		if err != nil {
			return nil, err
		}
		c.Int64 = slices.Repeat([]int64{v}, rows)
		c.Len = rows
		out.Columns = append(out.Columns, c)
	}
	if vc.Timestamp.IsZero() { // the log no longer dates the version
		ts := out.Columns[n+2]
		ts.Nulls = slices.Repeat([]bool{true}, rows)
	}
	return out, nil
}

// concat joins batches of the feed's schema into one; one batch is returned as is. Each part
// is copied whole with Batch.AppendRange (flat kinds slice by slice, nested ones row by row).
func (f *ChangeFeed) concat(parts []*pq.Batch) (*pq.Batch, error) {
	if len(parts) == 1 {
		return parts[0], nil
	}
	out, err := pq.NewBatch(f.out)
	if err != nil {
		return nil, err
	}
	for _, p := range parts {
		out.AppendRange(p, 0, p.Len())
	}
	return out, nil
}

// rowSet loads a deletion vector as the set of row indexes it marks.
func (f *ChangeFeed) rowSet(ctx context.Context, dv *txlog.DeletionVector) (map[uint64]bool, error) {
	rows, err := LoadDeletionVectorFrom(ctx, f.t.bucket, f.t.open, dv)
	if err != nil {
		return nil, err
	}
	set := make(map[uint64]bool, len(rows))
	for _, r := range rows {
		set[r] = true
	}
	return set, nil
}

// VersionAt returns the first version committed at or after ts (Spark's startingTimestamp for
// the change feed). A time after the latest commit is txlog.ErrVersionNotFound.
func (t *Table) VersionAt(ctx context.Context, ts time.Time) (int64, error) {
	times, err := t.log.CommitTimestamps(ctx)
	if err != nil {
		return 0, err
	}
	best := int64(-1)
	var latest int64 = -1
	var latestAt time.Time
	for v, at := range times {
		if v > latest {
			latest, latestAt = v, at
		}
		if !at.Before(ts) && (best < 0 || v < best) {
			best = v
		}
	}
	if best < 0 {
		if latest < 0 {
			return 0, fmt.Errorf("%w: no commit files", txlog.ErrVersionNotFound)
		}
		return 0, fmt.Errorf("%w: timestamp %s is after the latest commit (version %d at %s)", txlog.ErrVersionNotFound,
			ts.UTC().Format(time.RFC3339Nano), latest, latestAt.Format(time.RFC3339Nano))
	}
	return best, nil
}
