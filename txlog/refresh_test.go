package txlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
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
	// A reader's Log: l's own head is the snapshot of its last commit, whose timestamp is the
	// commit's clock, not the commit file's modification time a load reads (head.go), and the
	// two differ whenever the put lands in the next millisecond.
	got, err := fastLog(b, Options{}).Refresh(ctx, prev)
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
	// A gap after prev (commit deleted) ends the refresh before it; a full load reports it. A
	// reader's Log, which holds prev only (l's head is the newest version it committed).
	if err := b.Delete(ctx, CommitKey(prev.Version()+2)); err != nil {
		t.Fatal(err)
	}
	if s, err := fastLog(b, Options{}).Refresh(ctx, prev); err != nil || s.Version() != prev.Version()+1 {
		t.Errorf("refresh up to a gap: %v, %v; want version %d", s, err, prev.Version()+1)
	}
	if _, err := l.Snapshot(ctx); !errors.Is(err, ErrNotContiguous) {
		t.Errorf("full load over a gap: %v, want ErrNotContiguous", err)
	}
}

// countingBucket counts the listings and the entries they yielded, and the reads, of the
// bucket it wraps.
type countingBucket struct {
	objstore.Bucket
	lists, listed, gets atomic.Int64
	starts              []string
	mu                  sync.Mutex
}

func (c *countingBucket) List(ctx context.Context, prefix string, opts objstore.ListOptions) iter.Seq2[objstore.ObjectInfo, error] {
	c.lists.Add(1)
	c.mu.Lock()
	c.starts = append(c.starts, opts.StartAfter)
	c.mu.Unlock()
	return func(yield func(objstore.ObjectInfo, error) bool) {
		for info, err := range c.Bucket.List(ctx, prefix, opts) {
			c.listed.Add(1)
			if !yield(info, err) {
				return
			}
		}
	}
}

func (c *countingBucket) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	c.gets.Add(1)
	return c.Bucket.Get(ctx, key)
}

// A refresh reads the commits after the snapshot it starts from and nothing else: no listing,
// whatever the log's length, and it still sees another writer's commits.
func TestRefreshReadsOnlyNewCommits(t *testing.T) {
	ctx := context.Background()
	c := &countingBucket{Bucket: mem.New()}
	l := fastLog(c, Options{})
	buildHistory(t, l, 30)
	prev := mustSnapshot(t, l)
	other := fastLog(c, Options{}) // another writer
	for i := range 3 {
		tx := other.Begin(mustSnapshot(t, other))
		tx.Add(fileAdd(fmt.Sprintf("other-%d", i), "x"))
		if _, err := tx.Commit(ctx, Operation{Name: "WRITE"}); err != nil {
			t.Fatal(err)
		}
	}
	c.lists.Store(0)
	c.gets.Store(0)
	got, err := l.Refresh(ctx, prev)
	if err != nil {
		t.Fatal(err)
	}
	lists, gets := c.lists.Load(), c.gets.Load()
	if got.Version() != prev.Version()+3 || snapshotState(t, got) != snapshotState(t, mustSnapshot(t, l)) {
		t.Errorf("refresh = version %d, want %d as a full load has it", got.Version(), prev.Version()+3)
	}
	if lists != 0 || gets != 3 {
		t.Errorf("refresh made %d listings and %d reads, want 0 and 3 (the new commits)", lists, gets)
	}
}

// A table that went back (restored from an older backup, or dropped and created again) no
// longer holds the version a reader knew: Refresh loads it afresh instead of keeping a snapshot
// the table does not have.
func TestRefreshTableWentBack(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	l := fastLog(b, Options{})
	buildHistory(t, l, 12)
	prev := mustSnapshot(t, l)
	restored, err := l.SnapshotAt(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	// The backup had versions 0..7: everything after is gone.
	for info, err := range b.List(ctx, LogDir, objstore.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if f := parseLogName(info.Key); f.kind != kindUnknown && f.version > 7 {
			if err := b.Delete(ctx, info.Key); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := l.Refresh(ctx, prev)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version() != 7 || snapshotState(t, got) != snapshotState(t, restored) {
		t.Errorf("refresh after a restore = version %d, want 7 as it was", got.Version())
	}
	// Dropped and created again with fewer versions: the new table's snapshot.
	for info, err := range b.List(ctx, "", objstore.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Delete(ctx, info.Key); err != nil {
			t.Fatal(err)
		}
	}
	createTable(t, l, false, nil)
	fresh := mustSnapshot(t, l)
	got, err = l.Refresh(ctx, prev)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version() != 0 || got.Metadata().ID != fresh.Metadata().ID {
		t.Errorf("refresh after a re-create = version %d id %s, want version 0 id %s", got.Version(), got.Metadata().ID, fresh.Metadata().ID)
	}
}
