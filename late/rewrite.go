package late

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// writeStats is what one gold commit rewrote.
type writeStats struct {
	Version      int64 `json:"version"`
	Updated      int64 `json:"windowsUpdated"`
	Inserted     int64 `json:"windowsInserted"`
	Deleted      int64 `json:"windowsDeleted"`
	FilesRead    int   `json:"filesRead"`
	FilesRemoved int   `json:"filesRemoved"`
	FilesAdded   int   `json:"filesAdded"`
	BytesRemoved int64 `json:"bytesRemoved"`
	BytesAdded   int64 `json:"bytesAdded"`
	// Unchanged: the rows the rewrite would write equal the rows it would replace, so it
	// committed nothing (Version is the version read; the counts above are zero).
	Unchanged bool `json:"unchanged,omitempty"`
	// ChangeRows are the change data feed rows the commit wrote (inserts, deletes, update
	// pre- and post-images) in ChangeFiles files, for a table whose feed is on.
	ChangeRows  int64 `json:"changeRows,omitempty"`
	ChangeFiles int   `json:"changeFiles,omitempty"`
	// skipped: the table held the commit's txn already (a rerun of a merge that landed).
	skipped bool
}

// rowAction is what a rewrite did with one target row.
type rowAction int

const (
	keepRow    rowAction = iota // unchanged (copied if its file is rewritten)
	dropRow                     // removed
	rewroteRow                  // replaced by the row the callback appended to out
)

// rowFunc decides for row i of a batch of the target table, appending to out the row that
// replaces it when it returns rewroteRow.
type rowFunc func(out *pq.Batch, i int) (rowAction, error)

// perRow is a rowFunc source for callbacks that look at the batch row by row.
func perRow(row func(out, b *pq.Batch, i int) (rowAction, error)) func(b *pq.Batch) (rowFunc, error) {
	return func(b *pq.Batch) (rowFunc, error) {
		return func(out *pq.Batch, i int) (rowAction, error) { return row(out, b, i) }, nil
	}
}

// rewrite is the one commit every output kind ends in: a copy-on-write change of some rows
// of its output table on table.Rewrite. The candidate files are read a row group at a time,
// rows decides for each of their rows, the files where it touches a row are rewritten
// without or with the new rows, extra rows are appended (written out whenever extra calls
// flush, so that they need not all be held at once), and everything lands in one
// WriteSerializable commit, carrying txn when set, so that a rerun of a merge that landed
// commits nothing.
type rewrite struct {
	// what names the table in errors ("gold NAME", "join NAME (table PATH)").
	what string
	// gone is the way out of a data file of the table gone from storage ("": none named).
	gone   string
	t      *table.Table
	snap   *txlog.Snapshot
	schema *txlog.StructType
	// read is the predicate the change read the table with (conflict detection), and
	// candidates the files offered to rows (see prunedFiles).
	read       *sqlexpr.Predicate
	candidates []*txlog.Add
	rows       func(b *pq.Batch) (rowFunc, error)
	extra      func(out *pq.Batch, flush func() error) error
	txn        *table.AppTxn
	// op is the commitInfo's operation, given what the rewrite did and its counts.
	op func(res table.RewriteResult, st *writeStats) txlog.Operation
	// compare makes run commit nothing when the rows dropped and the rows extra writes are
	// equal multisets (a replay that recomputes what gold holds). Only for callers whose row
	// callback keeps or drops rows and never rewrites one.
	compare bool
	// st is filled by run and counted by the callbacks (Updated, Inserted, Deleted); nil:
	// run keeps its own.
	st *writeStats
	// changes pairs dropped and written rows into the change feed's updates, for a table
	// whose feed is on (nil: only equal rows cancel; the rest are deletes and inserts).
	changes *changeKeys
	// rowTags, when set, tags the files the rewrite writes (gold: goldRowTags).
	rowTags *table.RowTags
}

// prunedFiles binds prune to the table's snapshot and returns it with the files it may
// match: what a rewrite reads.
func prunedFiles(what string, snap *txlog.Snapshot, schema *txlog.StructType, prune sqlexpr.Expr) (*sqlexpr.Predicate, []*txlog.Add, error) {
	pred, err := sqlexpr.Bind(prune, schema, snap.PartitionColumns())
	if err != nil {
		return nil, nil, fmt.Errorf("late: %s: %w", what, err)
	}
	var files []*txlog.Add
	for _, f := range snap.Files() {
		if pred.MayMatch(f) {
			files = append(files, f)
		}
	}
	return pred, files, nil
}

// mergeMetrics is the operation with the rewrite's row and file counts as Delta's MERGE
// and WRITE metrics.
func mergeMetrics(op txlog.Operation) func(res table.RewriteResult, st *writeStats) txlog.Operation {
	return func(res table.RewriteResult, st *writeStats) txlog.Operation {
		if op.Metrics == nil {
			op.Metrics = map[string]int64{}
		}
		for k, v := range map[string]int64{"numTargetRowsInserted": st.Inserted, "numTargetRowsUpdated": st.Updated,
			"numTargetRowsDeleted": st.Deleted, "numTargetFilesAdded": int64(len(res.Added)), "numTargetFilesRemoved": int64(len(res.Removed)),
			"numTargetBytesAdded": res.BytesWritten, "numTargetBytesRemoved": res.BytesRemoved} {
			op.Metrics[k] = v
		}
		return op
	}
}

func (rw *rewrite) run(ctx context.Context) (writeStats, error) {
	if rw.st == nil {
		rw.st = &writeStats{}
	}
	st := rw.st
	st.Version = -1
	whole, err := rw.t.FileScan(rw.snap, nil, nil)
	if err != nil {
		return *st, fmt.Errorf("late: %s: %w", rw.what, err)
	}
	// old and added: the rows dropped and the rows written in their place, compared before
	// the commit when rw.compare is set; rewrote: a row was rewritten in place, which the
	// comparison does not follow, so the rewrite always commits.
	var old, added *rowMultiset
	var unchanged func() bool
	pass := &filePass{rw: rw, whole: whole}
	if rw.compare {
		old, added = newRowMultisets()
		unchanged = func() bool { return !pass.rewrote && old.equal(added) }
	}
	// cf writes the change feed of a table that has one, telling rows apart by the hashes of
	// old and added when the rewrite compares.
	seeds := [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
	if old != nil {
		seeds = old.seeds
	}
	cf, err := rw.changeFeed(whole, seeds)
	if err != nil {
		return *st, fmt.Errorf("late: %s: %w", rw.what, err)
	}
	if cf != nil && rw.compare {
		// A replay drops about every row of its files: size the map of dropped rows for
		// them once rather than growing it a row at a time.
		cf.presize(candidateRows(rw.candidates))
	}
	pass.old, pass.cf = old, cf
	if rw.rowTags != nil && !rw.compare {
		// A merge keeps most rows of the files it rewrites: their tag sums come from the old
		// files' tags (a replay, which compares, drops every row and takes none).
		if err := pass.keepTags(); err != nil {
			return *st, fmt.Errorf("late: %s: %w", rw.what, err)
		}
	}
	res, err := rw.t.Rewrite(ctx, table.Rewrite{Snapshot: rw.snap, Read: rw.read, Candidates: rw.candidates, Txn: rw.txn,
		// The stream's appends are blind and only add rows these rewrites never touch (gold:
		// windows still open; a joined table: rows of no candidate): WriteSerializable lets
		// them through without a conflict, while any other writer's data change in what we
		// read conflicts and we start over.
		Isolation:  txlog.WriteSerializable,
		Unchanged:  unchanged,
		File:       pass.file,
		InsertEach: rw.insert(added, cf, unchanged),
		Changes:    cf.writer(),
		RowTags:    rw.rowTags,
		FileTags:   pass.fileTags,
		Operation:  func(res table.RewriteResult) txlog.Operation { return rw.op(res, st) },
	})
	st.FilesRead, st.FilesAdded, st.FilesRemoved = res.FilesRead, len(res.Added), len(res.Removed)
	st.ChangeRows, st.ChangeFiles = res.ChangeRows.Total(), len(res.ChangeFiles)
	st.BytesAdded, st.BytesRemoved = res.BytesWritten, res.BytesRemoved
	if err != nil {
		err = fmt.Errorf("late: %s: %w", rw.what, err)
		if rw.gone != "" {
			err = table.ExplainMissing(err, "late: "+rw.what, rw.gone)
		}
		return *st, err
	}
	st.Version, st.skipped = res.Version, res.Skipped
	if res.Unchanged {
		st.Updated, st.Inserted, st.Deleted, st.Unchanged = 0, 0, 0, true
	}
	return *st, nil
}

// filePass is what run's File callback keeps across the files of one rewrite: the rows it
// dropped (old, when the rewrite compares), the change feed, and whether a row was rewritten
// in place.
type filePass struct {
	rw      *rewrite
	whole   *table.FileScan
	old     *rowMultiset
	cf      *changeFeed
	rewrote bool
	buf     pq.ReadBuffer
	// rep takes the row a row function writes in place of one (see file).
	rep *pq.Batch
	// dropH and dropAt are the hashes and places of the rows dropped from the current read
	// batch, handed to the change feed a batch at a time (changeFeed.dropBatch).
	dropH  [][2]uint64
	dropAt []rowRef
	tags   fileTags
}

// file is the rewrite's table.Rewrite.File: it reads f a row group at a time, asks the
// rewrite's row function what becomes of each row, and returns the file's rows to write in
// its place when any row changed.
func (p *filePass) file(ctx context.Context, f *txlog.Add, _ func() ([]*pq.Batch, error)) (bool, []*pq.Batch, error) {
	if p.rep == nil {
		var err error
		if p.rep, err = pq.NewBatch(p.rw.schema); err != nil {
			return false, nil, err
		}
	}
	var outs []*pq.Batch
	touched := false
	p.tags.start(f)
	fi, base := int32(-1), 0 // f's index in cf, and the file's rows before b
	// A row group at a time into one buffer, not the whole file at once: gold files reach
	// the 128 MB target, several times that decoded, and a replay drops nearly all of their
	// rows. The rows to write are a batch per row group, each sized for it once.
	for b, err := range p.whole.ReadWith(ctx, []*txlog.Add{f}, &p.buf) {
		if err != nil {
			return false, nil, fmt.Errorf("late: %s: read %s: %w", p.rw.what, f.Path, err)
		}
		out, t, err := p.batch(ctx, f, b, &fi, base)
		if err != nil {
			return false, nil, err
		}
		touched = touched || t
		if out.Len() > 0 {
			outs = append(outs, out)
		}
		base += b.Len()
	}
	return touched, outs, nil
}

// batch decides for the rows of b, a batch read from f after its first base rows, and returns
// the rows to write for them and whether any changed. fi is f's index in the change feed
// (below zero until a row of f is dropped).
func (p *filePass) batch(ctx context.Context, f *txlog.Add, b *pq.Batch, fi *int32, base int) (*pq.Batch, bool, error) {
	out, err := pq.NewBatch(p.rw.schema)
	if err != nil {
		return nil, false, err
	}
	row, err := p.rw.rows(b)
	if err != nil {
		return nil, false, err
	}
	if err := p.tags.beginBatch(b, p.rep); err != nil {
		return nil, false, err
	}
	// Kept rows are most of a merge's (all but its late windows): they are copied to out in
	// runs (from kept on), each when a row that is not kept ends it; out is sized for all of
	// b at the first run (a replay, which drops every row, sizes nothing). The row function
	// writes a replacing row to rep, moved to out after the run before it.
	kept, sized, touched := -1, false, false
	appendKept := func(to int) {
		if !sized {
			for k, c := range out.Columns {
				c.Grow(b.Len(), len(b.Columns[k].Data))
			}
			sized = true
		}
		out.AppendRange(b, kept, to)
		kept = -1
	}
	for i := range b.Len() {
		act, err := row(p.rep, i)
		if err != nil {
			return nil, false, err
		}
		if act == keepRow && p.rep.Len() == 0 {
			if kept < 0 {
				kept = i
			}
			continue
		}
		if kept >= 0 {
			appendKept(i)
		}
		if p.rep.Len() > 0 {
			p.tags.added(p.rep)
			out.AppendRange(p.rep, 0, p.rep.Len())
			p.rep.Reset()
		}
		if act != keepRow {
			p.tags.removed(i)
		}
		switch act {
		case keepRow:
			out.AppendRow(b, i)
			continue
		case dropRow:
			var h [2]uint64
			if p.old != nil {
				h = p.old.add(b, i)
			}
			if p.cf != nil {
				if p.old == nil {
					h = p.cf.hash(b, i)
				}
				if *fi < 0 {
					*fi = p.cf.file(f)
				}
				p.dropH = append(p.dropH, h)
				p.dropAt = append(p.dropAt, rowRef{*fi, int32(base + i)})
			}
		default:
			p.rewrote = true
			if p.cf != nil {
				if err := p.cf.rewrote(ctx, b, i, out, out.Len()-1); err != nil {
					return nil, false, err
				}
			}
		}
		touched = true
	}
	if kept >= 0 {
		appendKept(b.Len())
	}
	if p.cf != nil {
		p.cf.dropBatch(p.dropH, p.dropAt)
		p.dropH, p.dropAt = p.dropH[:0], p.dropAt[:0]
		if err := p.cf.endBatch(ctx, b); err != nil {
			return nil, false, err
		}
		// The pre-images above and their post-images here: a batch's pairs, in row order.
		if err := p.cf.endPost(ctx, out); err != nil {
			return nil, false, err
		}
	}
	return out, touched, nil
}

// changeFeed is the rewrite's change feed writer, nil when the table's feed is off.
func (rw *rewrite) changeFeed(scan *table.FileScan, seeds [2]maphash.Seed) (*changeFeed, error) {
	w, err := rw.t.NewChangeWriter(rw.snap)
	if err != nil || w == nil {
		return nil, err
	}
	return newChangeFeed(w, rw.changes, scan, rw.schema, seeds)
}

// insert hands extra's rows to the table's writer a chunk at a time, counting them into
// added when the rewrite compares and into the change feed cf (nil: none), whose rows it
// finishes once extra is done.
//
// A replay usually recomputes what gold holds. So when the rewrite compares, has a change feed
// (whose map of dropped rows tells, row by row, whether a written row equals a dropped one) and
// records no txn (which commits even when unchanged), written rows are held back, not
// encoded, as long as each equals a dropped row: an unchanged replay writes no Parquet at all
// (at 1M events and 100k keys gold's encoding was 14% of it). The first row that differs, or a
// dropped row left over at the end, makes the rewrite a change: the rows held back are then
// read back from the old files their equals are in and written before the rest.
func (rw *rewrite) insert(added *rowMultiset, cf *changeFeed, unchanged func() bool) func(ctx context.Context, write func(*pq.Batch) error) error {
	return func(ctx context.Context, write func(*pq.Batch) error) error {
		ins, err := pq.NewBatch(rw.schema)
		if err != nil {
			return err
		}
		holding := added != nil && cf != nil && rw.txn == nil && cf.left > 0
		release := func() error {
			holding = false
			return cf.writeCancelled(ctx, write)
		}
		flush := func() error {
			if ins.Len() == 0 {
				return nil
			}
			var hashes [][2]uint64
			if added != nil {
				for i := range ins.Len() {
					h := added.add(ins, i)
					if cf != nil {
						hashes = append(hashes, h)
					}
				}
			}
			if cf != nil {
				missed, err := cf.written(ctx, ins, hashes)
				if err != nil {
					return err
				}
				if holding && len(missed) == 0 {
					ins.Reset()
					return nil
				}
				if holding {
					// The rows of ins that cancelled a dropped row are among those release
					// reads back: only the others are written from ins.
					if err := release(); err != nil {
						return err
					}
					rest, err := pq.NewBatch(rw.schema)
					if err != nil {
						return err
					}
					for _, i := range missed {
						rest.AppendRow(ins, i)
					}
					ins.Reset()
					return write(rest)
				}
			}
			if err := write(ins); err != nil {
				return err
			}
			ins.Reset()
			return nil
		}
		if err := rw.extra(ins, flush); err != nil {
			return err
		}
		if err := flush(); err != nil {
			return err
		}
		if holding && !unchanged() {
			if err := release(); err != nil {
				return err
			}
		}
		if cf != nil {
			return cf.finish(ctx)
		}
		return nil
	}
}

// rewriter is a change of the gold table of one aggregation: its table, the snapshot the
// change reads and the aggregation resolved against its schema.
type rewriter struct {
	t    *table.Table
	snap *txlog.Snapshot
	a    *agg
	// st is filled by run and counted by the callbacks (Updated, Inserted, Deleted).
	st writeStats
	// compare: see rewrite.compare.
	compare bool
	// only, when set, narrows the files the prune lets through to those it accepts (a
	// replay's plan by gold's tags: the files of the windows that changed).
	only func(*txlog.Add) bool
}

// rewrite is the change of the gold rows of the files prune lets through (see rewrite).
func (g *rewriter) rewrite(prune sqlexpr.Expr, row func(out *pq.Batch, b *pq.Batch, i int) (rowAction, error),
	extra func(out *pq.Batch, flush func() error) error, txn *table.AppTxn, op txlog.Operation) (*rewrite, error) {
	what := "gold " + g.a.cfg.Name
	pred, files, err := prunedFiles(what, g.snap, g.a.gold, prune)
	if err != nil {
		return nil, err
	}
	if g.only != nil {
		files = slices.DeleteFunc(files, func(f *txlog.Add) bool { return !g.only(f) })
	}
	return &rewrite{what: what, gone: goldFileGone(g.a.cfg.Name), t: g.t, snap: g.snap, schema: g.a.gold, read: pred, candidates: files,
		rows: perRow(row), extra: extra, txn: txn, op: mergeMetrics(op), compare: g.compare, st: &g.st,
		changes: goldChangeKeys(g.a), rowTags: goldRowTags()}, nil
}

// goldChangeKeys pairs gold rows by window and group keys: a window merge-late or replay
// recomputed is an update of it. A session is keyed by its group keys alone and pairs with a
// dropped session its window overlaps: merging late rows grows a session (or fuses several,
// the first of which is the one updated and the others deleted).
func goldChangeKeys(a *agg) *changeKeys {
	ck := &changeKeys{of: func(b *pq.Batch) (func(dst [][]byte, i int) [][]byte, error) {
		gr := goldRow{a: a}
		return func(dst [][]byte, i int) [][]byte {
			start, end, keys, ok := gr.at(b, i)
			if !ok {
				return dst
			}
			k := groupKey(nil, start, end, keys, i)
			if a.session != nil {
				k = k[windowPrefix:]
			}
			return append(dst, k)
		}, nil
	}}
	if a.session != nil {
		gr := goldRow{a: a}
		ck.fits = func(pre *pq.Batch, p int, post *pq.Batch, i int) bool {
			ps, pe, _, _ := gr.at(pre, p)
			s, e, _, _ := gr.at(post, i)
			return ps < e && s < pe
		}
	}
	return ck
}

// candidateRows is the rows the files hold by their stats (numRecords; a file without them
// counts none).
func candidateRows(files []*txlog.Add) int {
	n := 0
	for _, f := range files {
		var st struct {
			NumRecords int64 `json:"numRecords"`
		}
		if f.Stats != "" && json.Unmarshal([]byte(f.Stats), &st) == nil {
			n += int(st.NumRecords)
		}
	}
	return n
}
