package silver

import (
	"encoding/binary"
	"fmt"
	"math"
)

// EncodeDedupDelta records the keys a batch added to the dedup state (rows emit of rows, with
// their event times) and the eviction watermark it ran with (ms): applied to the state before
// the batch (ApplyDelta), they give the state after it. A state file holds one such delta
// instead of the whole state between full snapshots: the state can be large, a batch's change
// is small.
func EncodeDedupDelta(rows *Rows, emit []int32, evictWM int64) []byte {
	size := 2 * binary.MaxVarintLen64
	for _, i := range emit {
		size += len(rows.Keys[i]) + 2*binary.MaxVarintLen64
	}
	dst := binary.AppendVarint(make([]byte, 0, size), evictWM)
	dst = binary.AppendUvarint(dst, uint64(len(emit)))
	for _, i := range emit {
		dst = binary.AppendUvarint(dst, uint64(len(rows.Keys[i])))
		dst = append(dst, rows.Keys[i]...)
		dst = binary.AppendVarint(dst, rows.EventTime[i])
	}
	return dst
}

// ApplyDelta applies one delta of EncodeDedupDelta to d: the same additions, then the same
// eviction.
func (d *Dedup) ApplyDelta(b []byte) error {
	bad := fmt.Errorf("%w: bad delta", ErrBadDedupState)
	evictWM, n := binary.Varint(b)
	if n <= 0 {
		return bad
	}
	b = b[n:]
	count, n := binary.Uvarint(b)
	if n <= 0 || count > uint64(len(b)) {
		return bad
	}
	b = b[n:]
	keys := make([][]byte, 0, count)
	times := make([]int64, 0, count)
	for range count {
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return bad
		}
		keys = append(keys, b[n:n+int(l)])
		b = b[n+int(l):]
		t, m := binary.Varint(b)
		if m <= 0 {
			return bad
		}
		times = append(times, t)
		b = b[m:]
	}
	if len(b) != 0 {
		return bad
	}
	// No row is late on replay: these rows were admitted when they first ran.
	_, err := d.ProcessBatch(keys, times, nil, math.MinInt64/1000, evictWM)
	return err
}
