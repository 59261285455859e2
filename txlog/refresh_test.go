package txlog

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/medallion-lake/medallion/objstore/mem"
)

func TestRefreshMatchesFullLoad(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	l := fastLog(b, Options{})
	buildHistory(t, l, 7)
	prev := mustSnapshot(t, l)
	buildMore := func(from, to int) {
		for i := from; i <= to; i++ {
			snap := mustSnapshot(t, l)
			tx := l.Begin(snap)
			tx.Add(fileAdd(fmt.Sprintf("more-%d", i), "x"))
			if i%2 == 0 {
				old := snap.Files()[0]
				tx.Remove(&Remove{Path: old.Path, DataChange: true, DeletionVector: old.DeletionVector})
			}
			tx.SetTxn("more", int64(i))
			if _, err := tx.Commit(ctx, Operation{Name: "WRITE"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	same, err := l.Refresh(ctx, prev)
	if err != nil || same != prev {
		t.Fatalf("refresh without new commits: %v, %v", same, err)
	}
	buildMore(1, 5)
	got, err := l.Refresh(ctx, prev)
	if err != nil {
		t.Fatal(err)
	}
	want := mustSnapshot(t, l)
	if snapshotState(t, got) != snapshotState(t, want) || !got.Timestamp().Equal(want.Timestamp()) {
		t.Errorf("refresh differs from a full load:\n got %s\nwant %s", snapshotState(t, got), snapshotState(t, want))
	}
	if snapshotState(t, prev) == snapshotState(t, got) {
		t.Error("refresh changed nothing")
	}
	// A gap after prev (commit deleted) falls back to a full load, which reports it.
	if err := b.Delete(ctx, CommitKey(prev.Version()+2)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Refresh(ctx, prev); !errors.Is(err, ErrNotContiguous) {
		t.Errorf("refresh over a gap: %v, want ErrNotContiguous", err)
	}
}
