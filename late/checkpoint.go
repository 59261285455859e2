package late

import (
	"context"
	"errors"
	"fmt"

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
// of it; snap is its latest snapshot, which the caller reads anyway.
func (st streamState) check(path string, snap *txlog.Snapshot) error {
	m, ok := st.tables[path]
	if !ok {
		return nil
	}
	if err := checkpoint.CheckTable(path, st.ckpt, st.queryID, snap, m); err != nil {
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

func readStreamState(ctx context.Context, ckpt *checkpoint.Dir) (streamState, error) {
	st := streamState{batch: -1}
	id, err := ckpt.ReadQueryID(ctx)
	if errors.Is(err, checkpoint.ErrNoQuery) {
		return st, errNoStream
	}
	if err != nil {
		return st, fmt.Errorf("late: %w", err)
	}
	st.queryID = id
	if st.batch, err = ckpt.LatestCommit(ctx); err != nil {
		return st, fmt.Errorf("late: %w", err)
	}
	if st.batch < 0 {
		return st, nil
	}
	e, err := ckpt.ReadOffsets(ctx, st.batch)
	if err != nil {
		return st, fmt.Errorf("late: %w", err)
	}
	st.evictMs = e.BatchWatermarkMs
	return st, st.readTables(ctx, ckpt)
}
