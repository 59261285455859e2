package late

import (
	"context"
	"errors"
	"fmt"

	"github.com/medallion-lake/medallion/stream/checkpoint"
)

// streamState is what the late jobs need from the stream's checkpoint: the query id and the
// last committed batch with the watermark it ran with.
type streamState struct {
	queryID string
	// batch is the last committed batch (-1: none); evictMs its eviction watermark: every
	// window ending at or before it has been emitted to gold by a committed batch.
	batch   int64
	evictMs int64
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
	return st, nil
}
