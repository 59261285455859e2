package table

import (
	"context"
	"fmt"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/txlog"
)

// Rewrite is one copy-on-write change of a table: MERGE, replaceWhere (Overwrite) and the
// late-data jobs are all one. Each candidate file is offered to File, which reads it if it
// needs to and says whether the file is replaced and by which rows; Insert's rows are written
// after every file; then one commit removes the replaced files and adds the new ones. Data
// files are written under unique names before that commit, so a crash leaves the table as it
// was (vacuum removes the orphans later).
type Rewrite struct {
	// Snapshot is the version the rewrite reads; the commit conflicts with what later commits
	// changed in what it read.
	Snapshot *txlog.Snapshot
	// Read is the predicate the rewrite read the table with, for conflict detection; nil: the
	// whole table.
	Read *sqlexpr.Predicate
	// Candidates are the files offered to File (usually those Read may match).
	Candidates []*txlog.Add
	// File decides for one candidate: replace it (removed, with rows written in its place) or
	// leave it. read returns the file's rows.
	File func(ctx context.Context, f *txlog.Add, read func() ([]*pq.Batch, error)) (replace bool, rows []*pq.Batch, err error)
	// Insert, when set, returns rows to add after every file was seen.
	Insert func() ([]*pq.Batch, error)
	// InsertEach, when set, adds rows after Insert's by handing them to write a batch at a
	// time: each is encoded before write returns, so the caller may reuse or drop it and the
	// rows of a large rewrite need not all be held at once. Still one commit at the end.
	InsertEach func(ctx context.Context, write func(*pq.Batch) error) error
	// Txn makes the commit idempotent: a table holding it already is not rewritten again.
	Txn *AppTxn
	// ExtraTxns are recorded in the commit too, without Txn's check: a writer that keeps
	// more than one position in the table (a derived table's upstream version and the
	// watermark it emitted to) and checks them itself before it writes.
	ExtraTxns []AppTxn
	// Isolation is the commit's isolation level ("": txlog's default).
	Isolation txlog.IsolationLevel
	// KeepEmpty commits even when nothing changes and Txn is nil (replaceWhere records the
	// overwrite); otherwise such a rewrite returns the snapshot's version without a commit.
	KeepEmpty bool
	// Operation builds the commitInfo's operation from what the rewrite did.
	Operation func(res RewriteResult) txlog.Operation
	// Unchanged, when set and Txn is nil, is asked once every file and insert was written,
	// just before the commit: true says the rows written equal the rows replaced, so the
	// commit would only move rows between files. Nothing is committed then (a replay that
	// recomputes what the table holds must not add a version and files for readers' caches
	// and vacuum) and the files written are deleted, best effort: a crash or failed delete
	// leaves them unreferenced, as any rewrite that dies before its commit, for vacuum.
	Unchanged func() bool
	// NoDataChange marks the commit's adds and removes dataChange=false: the rows written hold
	// what the rows removed held, only arranged otherwise (a backfill that moves rescued
	// values into their columns), so streaming readers of the table skip the commit instead
	// of failing on its removes or reading its rows twice.
	NoDataChange bool
	// Changes, for a table whose change data feed is on (ChangeFeedOn), is the caller's own
	// account of the change rows (from NewChangeWriter on Snapshot): it writes each change
	// row (insert, delete, update_preimage/update_postimage pairs) while File, Insert and
	// InsertEach run, and Rewrite commits its files with the data. Nil: Rewrite computes the
	// change rows itself, exactly, as the multiset difference of the rows the replaced files
	// held and the rows written (deletes and inserts; copied rows give nothing), reading the
	// replaced files File did not read. Either way a rewrite whose change rows are none only
	// moved rows: its adds and removes are committed with dataChange=false, so that readers
	// of the feed see nothing. A NoDataChange rewrite writes the change rows of Changes
	// alone (none without it): a backfill that moves values between the columns of a table
	// with the feed on records each row it moves as an update pair there, while its adds and
	// removes stay dataChange=false for the table's streaming readers.
	Changes *ChangeWriter
	// RowTags, when set, tags every file the rewrite writes (see RowTagKey).
	RowTags *RowTags
	// FileTags, when set with RowTags, is asked right after File replaced f, in File's
	// goroutine, for the sums of the row hashes of the rows File returned (DataWriter's
	// WriteTagged); false: the writer hashes them. A File that keeps most of f's rows has
	// their sums from f's tag and need hash only the rows it changed.
	FileTags func(f *txlog.Add) (GroupSums, bool)
}

// RewriteResult is what a Rewrite did.
type RewriteResult struct {
	// Version is the committed version, or the snapshot's when nothing was committed.
	Version int64
	Skipped bool // the table held Txn already
	// Unchanged: Rewrite.Unchanged said so and nothing was committed (Added and Removed are
	// empty, the files written deleted).
	Unchanged    bool
	FilesRead    int // candidates offered to File
	Added        []*txlog.Add
	Removed      []*txlog.Remove
	BytesRemoved int64
	RowsWritten  int64
	BytesWritten int64
	// ChangeFiles are the change data files committed (none when the table's change data feed
	// is off or the rewrite changed no row), and ChangeRows their rows by change type.
	ChangeFiles []*txlog.CDC
	ChangeRows  ChangeCounts
}

// RemoveOf is the remove action of a data file the table drops or replaces at the table's
// clock (dataChange false: a compaction that moves rows without changing them).
func (t *Table) RemoveOf(a *txlog.Add, dataChange bool) *txlog.Remove {
	ts := t.now().UnixMilli()
	size := a.Size
	return &txlog.Remove{Path: a.Path, DeletionTimestamp: &ts, DataChange: dataChange, ExtendedFileMetadata: true,
		PartitionValues: a.PartitionValues, Size: &size, Stats: a.Stats, Tags: a.Tags, DeletionVector: a.DeletionVector,
		BaseRowID: a.BaseRowID, DefaultRowCommitVersion: a.DefaultRowCommitVersion}
}

// Rewrite runs rw: its new files are written with the table's write options.
func (t *Table) Rewrite(ctx context.Context, rw Rewrite) (RewriteResult, error) {
	snap := rw.Snapshot
	res := RewriteResult{Version: -1}
	if rw.Txn != nil {
		if v, ok := snap.TxnVersion(rw.Txn.AppID); ok && v >= rw.Txn.Version {
			return RewriteResult{Version: snap.Version(), Skipped: true}, nil
		}
	}
	schema, err := snap.Schema()
	if err != nil {
		return res, err
	}
	w, err := t.newWriter(snap, schema, txlog.WriteChange)
	if err != nil {
		return res, err
	}
	w.dataChange = !rw.NoDataChange
	if err := t.setRowTags(w, snap, schema, rw.RowTags); err != nil {
		return res, err
	}
	cf, err := t.rewriteChanges(snap, schema, rw)
	if err != nil {
		return res, err
	}
	fs := &FileScan{Bucket: t.bucket, Schema: schema, PartitionCols: snap.PartitionColumns(), OpenURL: t.open}
	var read []string
	for _, f := range rw.Candidates {
		read = append(read, f.Path)
	}
	res.FilesRead = len(rw.Candidates)
	// File decides for the next file while the rows of the last are encoded and written:
	// reading and deciding, encoding and hashing are each about half of a rewrite's CPU, so
	// a copy-on-write of many files keeps both cores busy.
	err = pipeFiles(ctx, rw.Candidates, func(ctx context.Context, f *txlog.Add) (decided, error) {
		return decideFile(ctx, fs, rw, f)
	}, func(d decided) error {
		if !d.replace {
			return nil
		}
		if err := w.WriteTagged(ctx, d.rows, d.sums); err != nil {
			return err
		}
		if cf.diff != nil {
			old, err := d.read()
			if err != nil {
				return err
			}
			if err := cf.diff.file(old, d.rows); err != nil {
				return err
			}
		}
		res.Removed = append(res.Removed, t.RemoveOf(d.f, !rw.NoDataChange))
		res.BytesRemoved += d.f.Size
		return nil
	})
	if err != nil {
		return res, err
	}
	if rw.Insert != nil {
		rows, err := rw.Insert()
		if err != nil {
			return res, err
		}
		if err := writeAll(ctx, w, rows); err != nil {
			return res, err
		}
		if err := cf.insert(rows); err != nil {
			return res, err
		}
	}
	if rw.InsertEach != nil {
		if err := rw.InsertEach(ctx, func(b *pq.Batch) error {
			if err := cf.insert([]*pq.Batch{b}); err != nil {
				return err
			}
			return w.Write(ctx, b)
		}); err != nil {
			return res, err
		}
	}
	if res.Added, err = w.Close(ctx); err != nil {
		return res, err
	}
	res.RowsWritten, res.BytesWritten = w.Rows(), w.Bytes()
	if res.ChangeFiles, res.ChangeRows, err = cf.close(ctx); err != nil {
		return res, err
	}
	if rw.Unchanged != nil && rw.Txn == nil && rw.Unchanged() {
		t.dropUnreferenced(ctx, res.Added, res.ChangeFiles)
		return RewriteResult{Version: snap.Version(), Unchanged: true, FilesRead: res.FilesRead}, nil
	}
	if len(res.Added) == 0 && len(res.Removed) == 0 && rw.Txn == nil && !rw.KeepEmpty {
		t.dropUnreferenced(ctx, nil, res.ChangeFiles)
		res.Version, res.ChangeFiles, res.ChangeRows = snap.Version(), nil, ChangeCounts{}
		return res, nil
	}
	if cf.on && len(res.ChangeFiles) == 0 {
		// No row changed: the commit only moves rows between files.
		for _, a := range res.Added {
			a.DataChange = false
		}
		for _, r := range res.Removed {
			r.DataChange = false
		}
	}
	if res.Version, err = t.commitRewrite(ctx, rw, res, read); err != nil {
		return res, fmt.Errorf("table: rewrite: %w", err)
	}
	return res, nil
}

// commitRewrite commits what a rewrite wrote (res) over its snapshot, having read the files
// read and rw.Read.
func (t *Table) commitRewrite(ctx context.Context, rw Rewrite, res RewriteResult, read []string) (int64, error) {
	tx := t.log.Begin(rw.Snapshot)
	if rw.Isolation != "" {
		tx.SetIsolation(rw.Isolation)
	}
	if rw.Read == nil {
		tx.ReadWholeTable()
	} else {
		tx.ReadPredicate(rw.Read.String(), rw.Read.MayMatchPartition)
	}
	tx.ReadFiles(read...)
	tx.Remove(res.Removed...)
	tx.Add(res.Added...)
	tx.AddCDC(res.ChangeFiles...)
	if rw.Txn != nil {
		tx.SetTxn(rw.Txn.AppID, rw.Txn.Version)
	}
	for _, x := range rw.ExtraTxns {
		tx.SetTxn(x.AppID, x.Version)
	}
	return tx.Commit(ctx, rw.Operation(res))
}

// decided is File's answer for one candidate f; read returns its rows (read once).
type decided struct {
	f       *txlog.Add
	replace bool
	rows    []*pq.Batch
	read    func() ([]*pq.Batch, error)
	sums    GroupSums // the row tag sums of rows (Rewrite.FileTags), nil: hashed as written
}

// decideFile asks rw.File about f, whose rows are read once for File and the change rows.
func decideFile(ctx context.Context, fs *FileScan, rw Rewrite, f *txlog.Add) (decided, error) {
	var old []*pq.Batch
	read := func() ([]*pq.Batch, error) {
		if old == nil {
			var err error
			if old, err = fs.ReadFile(ctx, f); err != nil {
				return nil, err
			}
		}
		return old, nil
	}
	replace, rows, err := rw.File(ctx, f, read)
	d := decided{f: f, replace: replace, rows: rows, read: read}
	if err == nil && replace && rw.FileTags != nil && rw.RowTags != nil {
		if sums, ok := rw.FileTags(f); ok {
			d.sums = sums
		}
	}
	return d, err
}

// pipeFiles calls decide on each file in order in a goroutine of its own and write on each
// answer in order in the caller's, one answer ahead: decide for file k+1 runs while write
// takes file k. The first error stops both and is returned.
func pipeFiles(ctx context.Context, files []*txlog.Add, decide func(context.Context, *txlog.Add) (decided, error), write func(decided) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan decided, 1)
	var derr error
	go func() {
		defer close(ch)
		for _, f := range files {
			d, err := decide(ctx, f)
			if err != nil {
				derr = err
				return
			}
			select {
			case ch <- d:
			case <-ctx.Done():
				return
			}
		}
	}()
	var werr error
	for d := range ch {
		if werr == nil {
			if werr = write(d); werr != nil {
				cancel() // the decider stops at its next send; the loop drains what it sent
			}
		}
	}
	if werr != nil {
		return werr
	}
	if derr != nil {
		return derr
	}
	return ctx.Err()
}

func writeAll(ctx context.Context, w *DataWriter, rows []*pq.Batch) error {
	for _, b := range rows {
		if err := w.Write(ctx, b); err != nil {
			return err
		}
	}
	return nil
}

// dropUnreferenced deletes files a rewrite wrote and will not commit, best effort: a file no
// version names is an orphan vacuum removes anyway.
func (t *Table) dropUnreferenced(ctx context.Context, adds []*txlog.Add, cdcs []*txlog.CDC) {
	for _, a := range adds {
		_ = t.bucket.Delete(ctx, a.Path)
	}
	for _, c := range cdcs {
		_ = t.bucket.Delete(ctx, c.Path)
	}
}

// rewriteChanges is how a rewrite writes its change rows: not at all (feed off, or a
// NoDataChange rewrite), through the caller's writer, or by the default difference.
type rewriteChanges struct {
	on   bool
	w    *ChangeWriter
	diff *rowDiff // nil: the caller writes the rows (or none are written)
}

func (t *Table) rewriteChanges(snap *txlog.Snapshot, schema *txlog.StructType, rw Rewrite) (*rewriteChanges, error) {
	if !ChangeFeedOn(snap) {
		return &rewriteChanges{}, nil
	}
	if rw.Changes != nil {
		return &rewriteChanges{on: true, w: rw.Changes}, nil
	}
	if rw.NoDataChange {
		return &rewriteChanges{}, nil
	}
	w, err := t.newChangeWriter(snap, schema)
	if err != nil {
		return nil, err
	}
	d, err := newRowDiff(schema)
	if err != nil {
		return nil, err
	}
	return &rewriteChanges{on: true, w: w, diff: d}, nil
}

func (c *rewriteChanges) insert(rows []*pq.Batch) error {
	if c.diff == nil {
		return nil
	}
	return c.diff.insert(rows)
}

func (c *rewriteChanges) close(ctx context.Context) ([]*txlog.CDC, ChangeCounts, error) {
	if !c.on {
		return nil, ChangeCounts{}, nil
	}
	if c.diff != nil {
		if err := c.diff.write(ctx, c.w); err != nil {
			return nil, ChangeCounts{}, err
		}
	}
	cdcs, err := c.w.close(ctx)
	return cdcs, c.w.Counts(), err
}
