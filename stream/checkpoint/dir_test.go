package checkpoint

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
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
