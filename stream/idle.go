package stream

import (
	"encoding/binary"
	"errors"
)

// The "idle" state section: the batch timestamp of the last batch that read rows and the
// watermark it left (Runner.idleAdvance).
func encodeIdle(lastDataMs, baseWM int64) []byte {
	return binary.AppendVarint(binary.AppendVarint(nil, lastDataMs), baseWM)
}

func decodeIdle(b []byte) (lastDataMs, baseWM int64, err error) {
	lastDataMs, n := binary.Varint(b)
	if n <= 0 {
		return 0, 0, errors.New("bad idle section")
	}
	baseWM, m := binary.Varint(b[n:])
	if m <= 0 || n+m != len(b) {
		return 0, 0, errors.New("bad idle section")
	}
	return lastDataMs, baseWM, nil
}
