package silver

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// TestDedupDeltaRoundTrip applies a batch's delta to the state before the batch and compares
// it with the state the batch itself left.
func TestDedupDeltaRoundTrip(t *testing.T) {
	cfg := DedupConfig{Mode: DropDuplicates, EventTimeIsKey: true}
	live, err := NewDedup(cfg)
	if err != nil {
		t.Fatal(err)
	}
	replayed, _ := NewDedup(cfg)
	for batch := range 4 {
		rows := &Rows{}
		for i := range 50 {
			rows.Keys = append(rows.Keys, fmt.Appendf(nil, "k%03d", (batch*37+i*7)%120))
			rows.EventTime = append(rows.EventTime, int64(batch*50+i)*1_000_000)
		}
		evict := int64(batch * 20_000)
		res, err := live.ProcessBatch(rows.Keys, rows.EventTime, nil, -1, evict)
		if err != nil {
			t.Fatal(err)
		}
		if err := replayed.ApplyDelta(EncodeDedupDelta(rows, res.Emit, evict)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(live.AppendSnapshot(nil), replayed.AppendSnapshot(nil)) {
			t.Fatalf("batch %d: the replayed state (%d keys) differs from the live one (%d keys)", batch, replayed.Len(), live.Len())
		}
	}
	if err := replayed.ApplyDelta([]byte{0x02, 0x05}); !errors.Is(err, ErrBadDedupState) {
		t.Fatalf("truncated delta: %v, want ErrBadDedupState", err)
	}
}
