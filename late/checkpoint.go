package late

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/medallion-lake/medallion/objstore"
)

// streamState is what the late jobs need from the stream's checkpoint (its layout is owned by
// stream; see its package doc): the query id and the last committed batch with the
// watermark it ran with.
type streamState struct {
	queryID string
	// batch is the last committed batch (-1: none); evictMs its eviction watermark: every
	// window ending at or before it has been emitted to gold by a committed batch.
	batch   int64
	evictMs int64
}

// errNoStream reports a checkpoint the stream has not written yet.
var errNoStream = errors.New("late: the stream has not run yet (no checkpoint metadata)")

func readStreamState(ctx context.Context, ckpt objstore.Bucket) (streamState, error) {
	st := streamState{batch: -1}
	data, err := objstore.ReadAll(ctx, ckpt, "metadata")
	if errors.Is(err, objstore.ErrNotFound) {
		return st, errNoStream
	}
	if err != nil {
		return st, fmt.Errorf("late: read checkpoint metadata: %w", err)
	}
	var m struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(data, &m); err != nil || m.ID == "" {
		return st, fmt.Errorf("late: checkpoint metadata has no query id (%v)", err)
	}
	st.queryID = m.ID
	for info, err := range ckpt.List(ctx, "commits/", objstore.ListOptions{}) {
		if err != nil {
			return st, fmt.Errorf("late: list checkpoint commits: %w", err)
		}
		if n, err := strconv.ParseInt(path.Base(info.Key), 10, 64); err == nil && n >= 0 {
			st.batch = max(st.batch, n)
		}
	}
	if st.batch < 0 {
		return st, nil
	}
	key := "offsets/" + strconv.FormatInt(st.batch, 10)
	data, err = objstore.ReadAll(ctx, ckpt, key)
	if err != nil {
		return st, fmt.Errorf("late: read checkpoint %s: %w", key, err)
	}
	lines := strings.Split(string(data), "\n")
	var meta struct {
		BatchWatermarkMs *int64 `json:"batchWatermarkMs"`
	}
	if len(lines) < 2 || lines[0] != "v1" || json.Unmarshal([]byte(lines[1]), &meta) != nil || meta.BatchWatermarkMs == nil {
		return st, fmt.Errorf("late: checkpoint %s line 2: no batchWatermarkMs", key)
	}
	st.evictMs = *meta.BatchWatermarkMs
	return st, nil
}
