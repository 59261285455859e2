package late

import (
	"context"
	"fmt"

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
}

// rowAction is what a rewrite did with one target row.
type rowAction int

const (
	keepRow    rowAction = iota // unchanged (copied if its file is rewritten)
	dropRow                     // removed
	rewroteRow                  // replaced by the row the callback appended to out
)

// rewriter is a copy-on-write change of some rows of the gold table on table.Rewrite: the
// files that prune lets through are read, the files where row touches a row are rewritten
// without or with the new rows, extra rows are appended (written out whenever extra calls
// flush, so that they need not all be held at once), and everything lands in one
// WriteSerializable commit.
type rewriter struct {
	t    *table.Table
	snap *txlog.Snapshot
	a    *agg
	// st is filled by run and counted by the callbacks (Updated, Inserted, Deleted).
	st writeStats
	// compare makes run commit nothing when the rows dropped and the rows extra writes are
	// equal multisets (a replay that recomputes what gold holds). Only for callers whose row
	// callback keeps or drops rows and never rewrites one.
	compare bool
}

func (rw *rewriter) run(ctx context.Context, prune sqlexpr.Expr, row func(out *pq.Batch, b *pq.Batch, i int) (rowAction, error),
	extra func(out *pq.Batch, flush func() error) error, txn *table.AppTxn, op txlog.Operation) (writeStats, error) {
	st := &rw.st
	st.Version = -1
	snap, schema := rw.snap, rw.a.gold
	pred, err := sqlexpr.Bind(prune, schema, snap.PartitionColumns())
	if err != nil {
		return *st, fmt.Errorf("late: gold %s: %w", rw.a.cfg.Name, err)
	}
	var candidates []*txlog.Add
	for _, f := range snap.Files() {
		if pred.MayMatch(f) {
			candidates = append(candidates, f)
		}
	}
	whole, err := rw.t.FileScan(snap, nil, nil)
	if err != nil {
		return *st, fmt.Errorf("late: gold %s: %w", rw.a.cfg.Name, err)
	}
	var buf pq.ReadBuffer
	// old and added: the rows dropped and the rows written in their place, compared before
	// the commit when rw.compare is set; rewrote: a row was rewritten in place, which the
	// comparison does not follow, so the rewrite always commits.
	var old, added *rowMultiset
	var unchanged func() bool
	rewrote := false
	if rw.compare {
		old, added = newRowMultisets()
		unchanged = func() bool { return !rewrote && old.equal(added) }
	}
	res, err := rw.t.Rewrite(ctx, table.Rewrite{Snapshot: snap, Read: pred, Candidates: candidates, Txn: txn,
		// The stream's gold appends are blind and only add windows that are still open, which
		// these rewrites never touch: WriteSerializable lets them through without a conflict,
		// while any other writer's data change in the range we read conflicts and we start over.
		Isolation: txlog.WriteSerializable,
		Unchanged: unchanged,
		File: func(ctx context.Context, f *txlog.Add, _ func() ([]*pq.Batch, error)) (bool, []*pq.Batch, error) {
			out, err := pq.NewBatch(schema)
			if err != nil {
				return false, nil, err
			}
			touched := false
			// A row group at a time into one buffer (kept rows are copied into out), not the
			// whole file at once: gold files reach the 128 MB target, several times that
			// decoded, and a replay drops nearly all of their rows.
			for b, err := range whole.ReadWith(ctx, []*txlog.Add{f}, &buf) {
				if err != nil {
					return false, nil, fmt.Errorf("late: gold %s: read %s: %w", rw.a.cfg.Name, f.Path, err)
				}
				for i := range b.Len() {
					act, err := row(out, b, i)
					if err != nil {
						return false, nil, err
					}
					switch {
					case act == keepRow:
						out.AppendRow(b, i)
					case old != nil && act == dropRow:
						touched = true
						old.add(b, i)
					default:
						touched, rewrote = true, true
					}
				}
			}
			return touched, []*pq.Batch{out}, nil
		},
		InsertEach: func(ctx context.Context, write func(*pq.Batch) error) error {
			ins, err := pq.NewBatch(schema)
			if err != nil {
				return err
			}
			flush := func() error {
				if ins.Len() == 0 {
					return nil
				}
				if added != nil {
					for i := range ins.Len() {
						added.add(ins, i)
					}
				}
				if err := write(ins); err != nil {
					return err
				}
				ins.Reset()
				return nil
			}
			if err := extra(ins, flush); err != nil {
				return err
			}
			return flush()
		},
		Operation: func(res table.RewriteResult) txlog.Operation {
			if op.Metrics == nil {
				op.Metrics = map[string]int64{}
			}
			for k, v := range map[string]int64{"numTargetRowsInserted": st.Inserted, "numTargetRowsUpdated": st.Updated,
				"numTargetRowsDeleted": st.Deleted, "numTargetFilesAdded": int64(len(res.Added)), "numTargetFilesRemoved": int64(len(res.Removed)),
				"numTargetBytesAdded": res.BytesWritten, "numTargetBytesRemoved": res.BytesRemoved} {
				op.Metrics[k] = v
			}
			return op
		},
	})
	st.FilesRead, st.FilesAdded, st.FilesRemoved = res.FilesRead, len(res.Added), len(res.Removed)
	st.BytesAdded, st.BytesRemoved = res.BytesWritten, res.BytesRemoved
	if err != nil {
		return *st, fmt.Errorf("late: gold %s: %w", rw.a.cfg.Name, err)
	}
	st.Version = res.Version
	if res.Unchanged {
		st.Updated, st.Inserted, st.Deleted, st.Unchanged = 0, 0, 0, true
	}
	return *st, nil
}
