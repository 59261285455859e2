package silver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// bloomBits is the bloom filter size of silver's dedup key columns, bits per value.
const bloomBits = 24

// WriteOptions are the write options of the silver table: base plus bloom filters on the dedup
// key columns, so that the look-ups of rows below the dedup state's reach (Lookup) skip the
// files that cannot hold their keys. A look-up probes a batch's late keys (hundreds) at once
// and a file is skipped only when all are ruled out, so the filters get bloomBits a value
// (about 0.01% false positives, 3 bytes a row) rather than the 1% default. Other jobs that
// rewrite silver's files (optimize) use them too, so compacted files keep the filters. Row
// groups are silverGroupRows and pages silverPageBytes unless base sets them: the look-up
// prunes row groups by their event_time statistics and pages by the page index, which the
// stream's writes keep narrow (Writer.Write).
func WriteOptions(dedup []string, base pq.WriteOptions) pq.WriteOptions {
	base.BloomFilterColumns = append(slices.Clone(base.BloomFilterColumns), dedup...)
	if base.BloomFilterBitsPerValue == 0 {
		base.BloomFilterBitsPerValue = bloomBits
	}
	if base.RowGroupRows == 0 {
		base.RowGroupRows = silverGroupRows
	}
	if base.PageBufferSize == 0 {
		base.PageBufferSize = silverPageBytes
	}
	return base
}

// Judged is how dedup split the rows that go to silver (row indexes of Rows, ascending): Fresh
// were judged by the dedup state, Old against silver's keys (Lookup).
type Judged struct {
	Fresh, Old []int32
}

// Writer writes a batch's silver rows and validation rejects.
type Writer struct {
	Silver, Rejects *table.Table

	fresh, old timeOrder // the batch's rows in event-time order, kept for the next batch
}

// silverPartRows and silverMaxParts cut a batch's silver rows into parts encoded at once: the
// Parquet encoding of silver is the largest single cost of a batch, and the aggregations that
// run beside it leave most of a core to spare. A batch of n rows is min(n/silverPartRows,
// silverMaxParts) parts (at least one), contiguous runs of the rows in event-time order: the
// files depend on the rows alone, never on the number of cores, so a query that streams silver
// (a join, with its max_files_per_trigger) sees the same files on every machine.
const (
	silverPartRows = 1 << 15
	silverMaxParts = 4
)

// Written is the table versions a Write committed: -1 for a table it did not write, because
// the batch had no rows for it. Skipped marks a table that held the txn already (a re-run):
// its version is then the snapshot's that showed it, not the commit's.
type Written struct {
	Silver, Rejects               int64
	SilverSkipped, RejectsSkipped bool
}

// Write appends the rows sel of the bronze batches to silver and the validation rejects to the
// rejects table, all with txn. Silver's rows go in event-time order (eventTimeOrder), each part
// a range of times in row groups of silverGroupRows (pages of silverPageBytes), so that the
// look-ups of later batches read the few pages that hold their rows' times. Rows judged against silver's keys (far
// below the watermark) go to files of their own, so that every other silver file spans a
// narrow event-time range.
func (w *Writer) Write(ctx context.Context, rows *Rows, sel Judged, rejects *pq.Batch, txn *table.AppTxn) (Written, error) {
	out := Written{Silver: -1, Rejects: -1}
	fresh := w.fresh.eventTimeOrder(rows.EventTime, sel.Fresh)
	var groups [][]int32
	if n := len(fresh); n > 0 {
		parts := max(1, min(n/silverPartRows, silverMaxParts))
		for p := range parts {
			groups = append(groups, fresh[p*n/parts:(p+1)*n/parts])
		}
	}
	if len(sel.Old) > 0 {
		groups = append(groups, w.old.eventTimeOrder(rows.EventTime, sel.Old))
	}
	if len(groups) > 0 {
		res, err := writeParts(ctx, w.Silver, len(groups), txn, func(p int) []Selection {
			return chunkSelections(rows, groups[p])
		})
		if err != nil {
			return out, fmt.Errorf("silver: %w", err)
		}
		out.Silver, out.SilverSkipped = res.Version, res.Skipped
	}
	if rejects.Len() > 0 {
		res, err := w.Rejects.Append(ctx, []*pq.Batch{rejects}, table.AppendOptions{Txn: txn})
		if err != nil {
			return out, fmt.Errorf("silver: rejects: %w", err)
		}
		out.Rejects, out.RejectsSkipped = res.Version, res.Skipped
	}
	return out, nil
}

// writeParts appends, in one commit with txn, the rows of parts parts, each selected by
// part(p) and encoded into its own files on its own goroutine. Its result is CommitFiles',
// or Skipped when the table already held txn.
func writeParts(ctx context.Context, t *table.Table, parts int, txn *table.AppTxn, part func(p int) []Selection) (table.Result, error) {
	// One look at the log for the txn check and every writer; CommitFiles looks again.
	snap, err := t.Latest(ctx)
	if err != nil {
		return table.Result{}, err
	}
	if v, ok := snap.TxnVersion(txn.AppID); ok && v >= txn.Version {
		return table.Result{Version: snap.Version(), Skipped: true}, nil
	}
	adds := make([][]*txlog.Add, parts)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() {
			w, err := t.WriterAt(snap)
			if err != nil {
				errs[p] = err
				return
			}
			for _, s := range part(p) {
				if errs[p] = w.WriteRows(ctx, s.B, s.Rows); errs[p] != nil {
					return
				}
			}
			adds[p], errs[p] = w.Close(ctx)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return table.Result{}, err
	}
	// The parts finish in any order: their files' modification times are made to follow the
	// commit's order, which is arrival order, for a stream (a join) that starts from a snapshot.
	all := slices.Concat(adds...)
	table.SequenceModTimes(snap, all)
	return t.CommitFiles(ctx, all, table.AppendOptions{Txn: txn})
}
