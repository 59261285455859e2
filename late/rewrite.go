package late

import (
	"context"
	"fmt"
	"time"

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
}

// rowAction is what a rewrite did with one target row.
type rowAction int

const (
	keepRow    rowAction = iota // unchanged (copied if its file is rewritten)
	dropRow                     // removed
	rewroteRow                  // replaced by the row the callback appended to out
)

// rewriter is a copy-on-write change of some rows of the gold table: the files that prune
// lets through are read, the files where row touches a row are rewritten without or with the
// new rows, extra rows are appended, and everything lands in one WriteSerializable commit.
type rewriter struct {
	t     *table.Table
	snap  *txlog.Snapshot
	a     *agg
	now   func() time.Time
	wopts table.WriteOptions
	// st is filled by run and counted by the callbacks (Updated, Inserted, Deleted).
	st writeStats
}

func (rw *rewriter) run(ctx context.Context, prune table.Expr, row func(out *table.Batch, b *table.Batch, i int) (rowAction, error),
	extra func(out *table.Batch) error, txn *table.AppTxn, op txlog.Operation) (writeStats, error) {
	st := &rw.st
	st.Version = -1
	snap, schema := rw.snap, rw.a.gold
	pred, err := table.Bind(prune, schema, snap.PartitionColumns())
	if err != nil {
		return *st, fmt.Errorf("late: gold %s: %w", rw.a.cfg.Name, err)
	}
	fs, err := rw.t.FileScan(snap, nil, nil)
	if err != nil {
		return *st, fmt.Errorf("late: gold %s: %w", rw.a.cfg.Name, err)
	}
	w, err := table.NewDataWriter(rw.t.Bucket(), schema, snap.PartitionColumns(), rw.wopts)
	if err != nil {
		return *st, err
	}
	var read []string
	var removes []*txlog.Remove
	for _, f := range snap.Files() {
		if !pred.MayMatch(f) {
			continue
		}
		read = append(read, f.Path)
		st.FilesRead++
		parts, err := fs.ReadFile(ctx, f)
		if err != nil {
			return *st, fmt.Errorf("late: gold %s: %w", rw.a.cfg.Name, err)
		}
		out, err := table.NewBatch(schema)
		if err != nil {
			return *st, err
		}
		touched := false
		for _, b := range parts {
			for i := range b.Len() {
				act, err := row(out, b, i)
				if err != nil {
					return *st, err
				}
				if act == keepRow {
					out.AppendRow(b, i)
				} else {
					touched = true
				}
			}
		}
		if !touched {
			continue
		}
		if out.Len() > 0 {
			if err := w.Write(ctx, out); err != nil {
				return *st, fmt.Errorf("late: gold %s: %w", rw.a.cfg.Name, err)
			}
		}
		ts := rw.now().UnixMilli()
		size := f.Size
		removes = append(removes, &txlog.Remove{Path: f.Path, DeletionTimestamp: &ts, DataChange: true, ExtendedFileMetadata: true,
			PartitionValues: f.PartitionValues, Size: &size, Stats: f.Stats, Tags: f.Tags, DeletionVector: f.DeletionVector,
			BaseRowID: f.BaseRowID, DefaultRowCommitVersion: f.DefaultRowCommitVersion})
		st.BytesRemoved += f.Size
	}
	ins, err := table.NewBatch(schema)
	if err != nil {
		return *st, err
	}
	if err := extra(ins); err != nil {
		return *st, err
	}
	if ins.Len() > 0 {
		if err := w.Write(ctx, ins); err != nil {
			return *st, fmt.Errorf("late: gold %s: %w", rw.a.cfg.Name, err)
		}
	}
	adds, err := w.Close(ctx)
	if err != nil {
		return *st, fmt.Errorf("late: gold %s: %w", rw.a.cfg.Name, err)
	}
	st.FilesAdded, st.FilesRemoved, st.BytesAdded = len(adds), len(removes), w.Bytes()
	if len(adds) == 0 && len(removes) == 0 && txn == nil {
		st.Version = snap.Version()
		return *st, nil
	}
	tx := rw.t.Log().Begin(snap)
	// The stream's gold appends are blind and only add windows that are still open, which
	// these rewrites never touch: WriteSerializable lets them through without a conflict,
	// while any other writer's data change in the range we read conflicts and we start over.
	tx.SetIsolation(txlog.WriteSerializable)
	tx.ReadPredicate(pred.String(), pred.MayMatchPartition)
	tx.ReadFiles(read...)
	tx.Remove(removes...)
	tx.Add(adds...)
	if txn != nil {
		tx.SetTxn(txn.AppID, txn.Version)
	}
	if op.Metrics == nil {
		op.Metrics = map[string]int64{}
	}
	for k, v := range map[string]int64{"numTargetRowsInserted": st.Inserted, "numTargetRowsUpdated": st.Updated,
		"numTargetRowsDeleted": st.Deleted, "numTargetFilesAdded": int64(len(adds)), "numTargetFilesRemoved": int64(len(removes)),
		"numTargetBytesAdded": st.BytesAdded, "numTargetBytesRemoved": st.BytesRemoved} {
		op.Metrics[k] = v
	}
	v, err := tx.Commit(ctx, op)
	if err != nil {
		return *st, fmt.Errorf("late: gold %s: %w", rw.a.cfg.Name, err)
	}
	st.Version = v
	return *st, nil
}
