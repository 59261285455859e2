package stream

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/stream/checkpoint"
)

// TestDedupDeltaChain restores every dedup state version of a run that writes deltas between
// full snapshots, and compares it with the full snapshot a run writing only snapshots kept
// for the same version.
func TestDedupDeltaChain(t *testing.T) {
	ctx := context.Background()
	base := landBronze(t, 5, 4000, 10)
	full, chained := copyLake(t, base), copyLake(t, base)
	extra := "  dedup: [event_id]\n  max_files_per_trigger: 1\n  state: {min_deltas_for_snapshot: %s}"
	mustRun(t, full, parseConfig(t, "2s", fmt.Sprintf(extra, "1"), e2eGold), "available-now")
	cfg := parseConfig(t, "2s", fmt.Sprintf(extra, "4"), e2eGold)
	rep := mustRun(t, chained, cfg, "available-now")
	if rep.LastBatch < 8 {
		t.Fatalf("only %d batches: the chain is not exercised", rep.LastBatch+1)
	}
	r, _ := New(Options{Lake: chained, Query: specs.Query(cfg)})
	r.e.ckpt = checkpoint.Open(objstore.WithPrefix(chained, cfg.Stream.Checkpoint))
	deltas := 0
	for v := int64(1); v <= rep.LastBatch+1; v++ {
		ws, err := checkpoint.Open(objstore.WithPrefix(full, cfg.Stream.Checkpoint)).ReadState(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		sections, err := r.e.ckpt.ReadState(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := sections[secDedupDelta]; ok {
			deltas++
		}
		d, _, err := r.q.restoreDedup(ctx, silver.DedupConfig{Mode: silver.DropDuplicates, EventTimeIsKey: true, DelayMs: 2000}, v, sections)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.AppendSnapshot(nil); !bytes.Equal(got, ws[secDedup]) {
			t.Fatalf("state %d: restored dedup (%d keys) differs from the full snapshot", v, d.Len())
		}
	}
	if deltas == 0 {
		t.Fatal("no delta was written")
	}
}

// TestCheckpointRetention keeps the last min_batches_to_retain batches' logs, state and
// progress, and a restart still restores from what is left.
func TestCheckpointRetention(t *testing.T) {
	lake := landBronze(t, 9, 2400, 8)
	cfg := parseConfig(t, "2s", "  dedup: [event_id]\n  max_files_per_trigger: 1\n  state: {min_batches_to_retain: 3, min_deltas_for_snapshot: 2}", e2eGold)
	rep := mustRun(t, lake, cfg, "available-now")
	last := rep.LastBatch
	if last < 6 {
		t.Fatalf("only %d batches", last+1)
	}
	ck := ckptBucket(lake)
	for n := int64(0); n <= last; n++ {
		kept := n > last-3
		for _, key := range []string{checkpoint.OffsetsKey(n), checkpoint.CommitsKey(n), checkpoint.ProgressKey(n)} {
			if got := exists(t, ck, key); got != kept {
				t.Errorf("%s exists = %v, want %v", key, got, kept)
			}
		}
	}
	appendBronze(t, lake, []ev{{ID: "new", T: hm("00:10")}})
	rep2 := mustRun(t, lake, cfg, "available-now")
	if rep2.LastBatch <= last || rep2.InputRows != 1 {
		t.Fatalf("restart after cleanup: %+v", rep2)
	}
}

// TestPeriodicSnapshotBufferReleased: a batch that writes the aggregations' full snapshots
// (every min_deltas_for_snapshot versions) keeps none of their bytes once the state file is
// written. The batches between write deltas straight into the file, so a kept buffer would
// hold the whole state's bytes, unused, for the rest of the run.
func TestPeriodicSnapshotBufferReleased(t *testing.T) {
	ctx := context.Background()
	lake := landBronze(t, 7, 2000, 6)
	cfg := parseConfig(t, "2s", "  dedup: [event_id]\n  max_files_per_trigger: 1\n  state: {min_deltas_for_snapshot: 2}", e2eGold)
	r, err := New(Options{Lake: lake, Query: specs.Query(cfg), Clock: runStreamClock})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	snapshots := 0
	ckpt := checkpoint.Open(objstore.WithPrefix(lake, cfg.Stream.Checkpoint))
	for v := int64(1); v <= rep.LastBatch+1; v++ {
		sections, err := ckpt.ReadState(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		if len(sections[secAgg+"g5"]) > 0 {
			snapshots++
		}
	}
	if snapshots < 2 {
		t.Fatalf("%d full snapshots in %d batches: the periodic snapshot is not exercised", snapshots, rep.LastBatch+1)
	}
	for i, ab := range r.q.buf.aggs {
		if cap(ab.state) != 0 {
			t.Errorf("aggregation %d keeps a %d-byte state buffer after the run", i, cap(ab.state))
		}
		if as := r.q.cur.aggs[i]; as.state != nil || as.delta != nil || as.writeDelta != nil {
			t.Errorf("aggregation %d: the last batch's stats keep its state (%d bytes) or delta", i, len(as.state))
		}
	}
}
