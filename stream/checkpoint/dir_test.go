package checkpoint

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/table/source"
)

// TestDir writes a checkpoint as the stream does and reads it back as the late jobs and the
// reports do.
func TestDir(t *testing.T) {
	ctx := context.Background()
	d := Open(mem.New())
	if _, err := d.ReadQueryID(ctx); !errors.Is(err, ErrNoQuery) {
		t.Fatalf("ReadQueryID before the first run: %v, want ErrNoQuery", err)
	}
	id, err := d.QueryID(ctx)
	if err != nil || id == "" {
		t.Fatalf("QueryID: %q, %v", id, err)
	}
	if again, err := d.ReadQueryID(ctx); err != nil || again != id {
		t.Fatalf("ReadQueryID: %q, %v; want %q", again, err, id)
	}
	for n := range int64(3) {
		if _, err := d.WriteOffsets(ctx, n, &Offsets{BatchWatermarkMs: 1000 * n}); err != nil {
			t.Fatal(err)
		}
		if err := d.WriteProgress(ctx, n, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		if n < 2 {
			if err := d.WriteCommit(ctx, n, 1000*(n+1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A second writer of offsets/2 gets what the first wrote.
	got, err := d.WriteOffsets(ctx, 2, &Offsets{BatchWatermarkMs: 99})
	if err != nil || got.BatchWatermarkMs != 2000 {
		t.Fatalf("rival offsets/2: %+v, %v; want the first entry", got, err)
	}
	if n, err := d.LatestOffsets(ctx); err != nil || n != 2 {
		t.Fatalf("LatestOffsets %d, %v", n, err)
	}
	if n, err := d.LatestCommit(ctx); err != nil || n != 1 {
		t.Fatalf("LatestCommit %d, %v", n, err)
	}
	if c, err := d.ReadCommit(ctx, 1); err != nil || c.NextBatchWatermarkMs != 2000 {
		t.Fatalf("commits/1 %+v, %v", c, err)
	}
	if err := d.WriteState(ctx, 1, map[string][]byte{"a": {1}}, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if s, err := d.ReadState(ctx, 1); err != nil || len(s["a"]) != 1 {
		t.Fatalf("state/1 %v, %v", s, err)
	}
	if err := d.Cleanup(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if ns, err := d.ProgressBatches(ctx); err != nil || !slices.Equal(ns, []int64{1, 2}) {
		t.Fatalf("ProgressBatches after cleaning batch 0: %v, %v", ns, err)
	}
	if _, err := d.ReadProgress(ctx, 0); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("progress/0 after cleanup: %v", err)
	}
}

// TestHeadAndIdentity: ReadHead on a committed, a crashed (one batch without its commit) and a
// rolled-back checkpoint (several); a checkpoint with batches but no metadata is
// ErrQueryIDLost for every reader and is never given a new id; commit records keep the tables.
func TestHeadAndIdentity(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	d := Open(b)
	id, err := d.QueryID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	marks := map[string]TableMark{"silver/events": {Batch: 4, Version: 9}}
	for n := range int64(5) {
		if _, err := d.WriteOffsets(ctx, n, &Offsets{BatchWatermarkMs: 10 * n}); err != nil {
			t.Fatal(err)
		}
		if err := d.WriteCommitRecord(ctx, n, Commit{NextBatchWatermarkMs: 10 * (n + 1), Tables: marks}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name                   string
		remove                 []int64
		last, recorded, commit int64 // commit: the batch of h.Committed (-1: none)
		pending                bool
	}{
		{"committed", nil, 4, 4, 4, false},
		{"crashed before commits/4", []int64{4}, 4, 4, 3, true},
		{"rolled back to 1", []int64{4, 3, 2}, 2, 4, 1, true},
		{"rolled back to none", []int64{4, 3, 2, 1, 0}, 0, 4, -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range tc.remove {
				if err := d.RemoveCommit(ctx, n); err != nil {
					t.Fatal(err)
				}
			}
			h, err := d.ReadHead(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if h.QueryID != id || h.Last != tc.last || h.Recorded != tc.recorded || (h.Commit == nil) != tc.pending ||
				h.Entry == nil || h.Entry.BatchWatermarkMs != 10*tc.last || (h.Committed == nil) != (tc.commit < 0) {
				t.Fatalf("head %+v", h)
			}
			if tc.commit >= 0 && (h.Committed.NextBatchWatermarkMs != 10*(tc.commit+1) || h.Committed.Tables["silver/events"] != marks["silver/events"]) {
				t.Fatalf("committed record %+v, want commits/%d's", h.Committed, tc.commit)
			}
			if tc.pending && tc.last > 0 && (h.Prev == nil || h.Prev.BatchWatermarkMs != 10*(tc.last-1)) {
				t.Fatalf("prev %+v, want offsets/%d", h.Prev, tc.last-1)
			}
			for n := tc.last; n <= 4; n++ { // restore for the next case
				if err := d.WriteCommit(ctx, n, 10*(n+1)); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	if err := b.Delete(ctx, "metadata"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ReadQueryID(ctx); !errors.Is(err, ErrQueryIDLost) {
		t.Fatalf("ReadQueryID without metadata: %v, want ErrQueryIDLost", err)
	}
	if _, err := d.ReadHead(ctx); !errors.Is(err, ErrQueryIDLost) {
		t.Fatalf("ReadHead without metadata: %v, want ErrQueryIDLost", err)
	}
	if _, err := b.Stat(ctx, "metadata"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("a new id was written: %v", err)
	}
}

// TestCheckRead: an offset that ends a version (index -1) has read the version before it.
func TestCheckRead(t *testing.T) {
	for _, tc := range []struct {
		end    *source.Offset
		latest int64
		behind bool
	}{
		{nil, -1, false},
		{&source.Offset{ReservoirVersion: 5, Index: -1}, 4, false},
		{&source.Offset{ReservoirVersion: 5, Index: -1}, 3, true},
		{&source.Offset{ReservoirVersion: 5, Index: 2}, 5, false},
		{&source.Offset{ReservoirVersion: 5, Index: 2}, 4, true},
		{&source.Offset{ReservoirVersion: 0, Index: 0, IsStartingVersion: true}, -1, true},
	} {
		err := CheckRead("bronze/events", "_checkpoints/events", "offsets/7", tc.latest, tc.end)
		if errors.Is(err, ErrTableBehind) != tc.behind {
			t.Errorf("end %+v, latest %d: %v, want behind %v", tc.end, tc.latest, err, tc.behind)
		}
	}
}

// racingFirstRun is a bucket where another process's first run creates the checkpoint (its
// metadata, then offsets/0) right after this process found no metadata.
type racingFirstRun struct {
	objstore.Bucket
	other *Dir
	done  bool
}

func (b *racingFirstRun) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	r, err := b.Bucket.Get(ctx, key)
	if key == "metadata" && errors.Is(err, objstore.ErrNotFound) && !b.done {
		b.done = true
		if _, err := b.other.QueryID(ctx); err != nil {
			return nil, err
		}
		if _, err := b.other.WriteOffsets(ctx, 0, &Offsets{}); err != nil {
			return nil, err
		}
	}
	return r, err
}

// TestFirstRunsRaceToOneID: two first runs of one query at once; the one that read no
// metadata just before the other created it and wrote its first batch takes the other's id,
// not a lost id ("recover query-id", which has nothing to recover).
func TestFirstRunsRaceToOneID(t *testing.T) {
	ctx := context.Background()
	lake := mem.New()
	other := Open(lake)
	d := Open(&racingFirstRun{Bucket: lake, other: other})
	id, err := d.QueryID(ctx)
	if err != nil {
		t.Fatalf("QueryID racing another first run: %v", err)
	}
	if want, err := other.ReadQueryID(ctx); err != nil || id != want {
		t.Fatalf("QueryID %q, the other run's %q (%v)", id, want, err)
	}
}
