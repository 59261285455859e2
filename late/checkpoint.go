package late

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/txlog"
)

// streamState is what the late jobs need from the stream's checkpoint: the query id and the
// last committed batch with the watermark it ran with.
type streamState struct {
	queryID string
	// batch is the last committed batch (-1: none); evictMs its eviction watermark: every
	// window ending at or before it has been emitted to gold by a committed batch.
	batch   int64
	evictMs int64
	// tables is what commits/batch recorded of the tables the query writes, ckpt the
	// checkpoint's path: a table behind it is refused (check), since merge-late and replay
	// would otherwise merge into, or recompute from, a table that lost batches.
	tables map[string]checkpoint.TableMark
	ckpt   string
}

// check refuses a table (by its path) that is behind what the stream's last commit recorded
// of it; snap is its latest snapshot, which the caller reads anyway, log its log. A RESTORE
// after the recorded commit that took the table back before it is refused too, and with apps
// (merge-late's own txn in its output), one that took it back before the last commit carrying
// their txn: merge-late would otherwise take its lost rows for merged.
func (st streamState) check(ctx context.Context, path string, log *txlog.Log, snap *txlog.Snapshot, apps ...string) error {
	m, ok := st.tables[path]
	if !ok {
		return nil
	}
	if err := checkpoint.CheckTable(path, st.ckpt, st.queryID, snap, m); err != nil {
		return fmt.Errorf("late: %w", err)
	}
	if err := checkpoint.CheckRestored(ctx, path, st.ckpt, log, m, apps...); err != nil {
		return fmt.Errorf("late: %w", err)
	}
	return nil
}

// readTables reads the commit record of the last committed batch into st.tables.
func (st *streamState) readTables(ctx context.Context, ckpt *checkpoint.Dir) error {
	if st.batch < 0 {
		return nil
	}
	c, err := ckpt.ReadCommit(ctx, st.batch)
	if err != nil {
		return fmt.Errorf("late: %w", err)
	}
	st.tables = c.Tables
	return nil
}

// errNoStream reports a checkpoint the stream has not written yet.
var errNoStream = errors.New("late: the stream has not run yet (no checkpoint metadata)")

// readStreamState reads the stream's state from its checkpoint, and the offsets of its last
// committed batch (nil when it has none).
func readStreamState(ctx context.Context, ckpt *checkpoint.Dir) (streamState, *checkpoint.Offsets, error) {
	st := streamState{batch: -1}
	id, err := ckpt.ReadQueryID(ctx)
	if errors.Is(err, checkpoint.ErrNoQuery) {
		return st, nil, errNoStream
	}
	if err != nil {
		return st, nil, fmt.Errorf("late: %w", err)
	}
	st.queryID = id
	if st.batch, err = ckpt.LatestCommit(ctx); err != nil {
		return st, nil, fmt.Errorf("late: %w", err)
	}
	if st.batch < 0 {
		return st, nil, nil
	}
	e, err := ckpt.ReadOffsets(ctx, st.batch)
	if err != nil {
		return st, nil, fmt.Errorf("late: %w", err)
	}
	st.evictMs = e.BatchWatermarkMs
	return st, e, st.readTables(ctx, ckpt)
}

// readState reads the checkpoint at path (of a source query or of a join): the stream's state
// and, for a join, the silver versions its last committed batch had read of each side.
// offsets/N of a join may follow Spark's layout for a query with several sources: after the
// version and metadata lines, one line per source in the order left, right ("-": nothing read
// yet). With a single source line or none it says nothing about the sides: merge-late then
// reads the latest silver, which is exact when the join has read everything its sources
// wrote (run merge-late after run stream).
func readState(ctx context.Context, lake objstore.Bucket, path string) (streamState, joinInputs, error) {
	st, e, err := readStreamState(ctx, checkpoint.Open(objstore.WithPrefix(lake, path)))
	st.ckpt = path
	if err != nil || e == nil || len(e.Sources) < 2 {
		return st, joinInputs{}, err
	}
	in := joinInputs{known: true}
	for k, dst := range []*int64{&in.left, &in.right} {
		o := e.Sources[k]
		if o == nil {
			*dst = -1
			continue
		}
		// The offset is the position after file Index of the version (-1: before its
		// first file), so the batch read everything up to the version before.
		*dst = o.ReservoirVersion
		if o.Index < 0 {
			*dst--
		}
	}
	return st, in, nil
}

// noteInput sets the rows the stream read in the batches that quarantined the merged rows, and
// warns when the late rows exceed the alert fraction of them.
func (o *Options) noteInput(ctx context.Context, gr *MergeGoldReport, lr lateRead) {
	if lr.minBatch >= 0 {
		gr.InputRows = progressInput(ctx, checkpoint.Open(objstore.WithPrefix(o.Lake, o.Query.Tables.Checkpoint)), lr.minBatch, lr.maxBatch)
	}
	if f := o.Query.LateAlertFraction; f > 0 && gr.InputRows > 0 && float64(gr.LateRows) > f*float64(gr.InputRows) {
		o.Logger.Warn("late: late rows above the alert fraction", "gold", gr.Name, "lateRows", gr.LateRows,
			"inputRows", gr.InputRows, "fromBatch", lr.minBatch, "toBatch", lr.maxBatch, "fraction", f)
	}
}

// progressInput sums numInputRows of the stream's kept progress files of batches from..to.
// Progress is informational: a file already cleaned up is simply not counted.
func progressInput(ctx context.Context, ckpt *checkpoint.Dir, from, to int64) int64 {
	var n int64
	for b := from; b <= to && b-from < 100_000; b++ {
		data, err := ckpt.ReadProgress(ctx, b)
		if err != nil {
			continue
		}
		var p struct {
			NumInputRows int64 `json:"numInputRows"`
		}
		if json.Unmarshal(data, &p) == nil {
			n += p.NumInputRows
		}
	}
	return n
}
