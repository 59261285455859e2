package txlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/objstore/s3/s3test"
)

// requestCounter counts the reads (Get, GetRange) and stats (HEAD on S3) of the bucket it
// wraps: the requests a look at the log costs.
type requestCounter struct {
	objstore.Bucket
	gets, stats atomic.Int64
}

func (c *requestCounter) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	c.gets.Add(1)
	return c.Bucket.Get(ctx, key)
}

func (c *requestCounter) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	c.gets.Add(1)
	return c.Bucket.GetRange(ctx, key, off, n)
}

func (c *requestCounter) Stat(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	c.stats.Add(1)
	return c.Bucket.Stat(ctx, key)
}

func (c *requestCounter) take() (gets, stats int64) { return c.gets.Swap(0), c.stats.Swap(0) }

// appendRound is a writer's batch: a look at the log, a blind append with the writer's txn.
func appendRound(t *testing.T, ctx context.Context, l *Log, snap *Snapshot, i int) *Snapshot {
	t.Helper()
	snap, err := l.Refresh(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	tx := l.Begin(snap)
	tx.Add(fileAdd(fmt.Sprintf("day=2024-01-01/part-%d.parquet", i), "2024-01-01"))
	tx.SetTxn("writer", int64(i))
	if _, err := tx.Commit(ctx, Operation{Name: "WRITE"}); err != nil {
		t.Fatal(err)
	}
	return snap
}

func checkRequestsPerCommit(t *testing.T, b objstore.Bucket) {
	ctx := context.Background()
	c := &requestCounter{Bucket: b}
	l := fastLog(c, Options{NoAutoCheckpoint: true})
	createTable(t, l, true, nil)
	snap := mustSnapshot(t, l)
	c.take()
	for i := 1; i <= 4; i++ {
		snap = appendRound(t, ctx, l, snap, i)
		gets, stats := c.take()
		// The look: the next version is absent, the known one still there (the table did not
		// go back); the commit: one put. Nothing read back.
		if gets != 0 || stats != 2 {
			t.Errorf("round %d: %d reads and %d stats, want 0 and 2 (no read of the writer's own commit)", i, gets, stats)
		}
	}
	got, err := l.Refresh(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	want := mustSnapshot(t, fastLog(b, Options{}))
	if got.Version() != want.Version() || snapshotState(t, got) != snapshotState(t, want) {
		t.Errorf("the snapshot after the commits (version %d) differs from a load (version %d):\n got %s\nwant %s",
			got.Version(), want.Version(), snapshotState(t, got), snapshotState(t, want))
	}
	// Within a scope, the first look asks the store; the others, and the look after a commit,
	// do not.
	sctx := WithSnapshotScope(ctx)
	c.take()
	for i := 5; i <= 7; i++ {
		snap = appendRound(t, sctx, l, snap, i)
		for range 2 {
			if snap, err = l.Refresh(sctx, snap); err != nil {
				t.Fatal(err)
			}
		}
		gets, stats := c.take()
		if wantStats := int64(map[bool]int{true: 2}[i == 5]); gets != 0 || stats != wantStats {
			t.Errorf("scoped round %d: %d reads and %d stats, want 0 and %d", i, gets, stats, wantStats)
		}
	}
	want = mustSnapshot(t, fastLog(b, Options{}))
	if snap.Version() != want.Version() || snapshotState(t, snap) != snapshotState(t, want) {
		t.Errorf("scoped snapshot (version %d) differs from a load (version %d)", snap.Version(), want.Version())
	}
}

// A writer does not read back the commit it has just written, nor look at the log twice in a
// scope: what each commit costs in requests, on the in-memory store and on MinIO.
func TestRequestsPerCommit(t *testing.T) { checkRequestsPerCommit(t, mem.New()) }

func TestRequestsPerCommitS3(t *testing.T) { checkRequestsPerCommit(t, s3test.NewTestBucket(t)) }

// The snapshot a commit builds for itself equals a load of that version, also when it lost
// races first (the winners' actions are in it), and when it removes files, changes metadata
// and sets txns and domains.
func TestCommittedSnapshotEqualsLoad(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	l := fastLog(b, Options{NoAutoCheckpoint: true})
	buildHistory(t, l, 6)
	other := fastLog(b, Options{NoAutoCheckpoint: true})
	read := mustSnapshot(t, l)
	for i := range 3 { // winners the transaction on read has not seen
		tx := other.Begin(mustSnapshot(t, other))
		tx.Add(fileAdd(fmt.Sprintf("day=2024-01-09/other-%d.parquet", i), "2024-01-09"))
		tx.SetTxn("other", int64(i))
		if _, err := tx.Commit(ctx, Operation{Name: "WRITE"}); err != nil {
			t.Fatal(err)
		}
	}
	tx := l.Begin(read)
	tx.Add(fileAdd("day=2024-01-08/mine.parquet", "2024-01-08"))
	tx.SetTxn("mine", 1)
	tx.SetDomain(DomainMetadata{Domain: "com.example.mine", Configuration: `{"a":1}`})
	v, err := tx.Commit(ctx, Operation{Name: "WRITE"})
	if err != nil {
		t.Fatal(err)
	}
	checkHeadIsLoad(t, l, b, v)
	// A commit that removes a file and changes the metadata (no race).
	snap := mustSnapshot(t, l)
	tx = l.Begin(snap)
	old := snap.Files()[0]
	tx.Remove(&Remove{Path: old.Path, DataChange: true, DeletionVector: old.DeletionVector})
	m := snap.Metadata()
	m.Configuration = map[string]string{"k": "v", PropCheckpointInterval: "1000"}
	tx.SetMetadata(m)
	if v, err = tx.Commit(ctx, Operation{Name: "DELETE"}); err != nil {
		t.Fatal(err)
	}
	checkHeadIsLoad(t, l, b, v)
}

func checkHeadIsLoad(t *testing.T, l *Log, b objstore.Bucket, v int64) {
	t.Helper()
	l.headMu.Lock()
	head := l.head
	l.headMu.Unlock()
	want, err := fastLog(b, Options{}).SnapshotAt(context.Background(), v)
	if err != nil {
		t.Fatal(err)
	}
	if head == nil || head.Version() != v || snapshotState(t, head) != snapshotState(t, want) {
		t.Fatalf("head after committing version %d:\n got %v\nwant %s", v, head, snapshotState(t, want))
	}
}

// Within a scope, a commit that loses to a conflicting one fails as it always did, and the
// next look sees the winner instead of the scope's snapshot: a retry decides on what is there.
func TestScopeSeesTheWinnerAfterAConflict(t *testing.T) {
	ctx := WithSnapshotScope(context.Background())
	b := mem.New()
	l := fastLog(b, Options{NoAutoCheckpoint: true})
	createTable(t, l, true, nil)
	snap, err := l.Refresh(ctx, mustSnapshot(t, l))
	if err != nil {
		t.Fatal(err)
	}
	other := fastLog(b, Options{})
	tx := other.Begin(mustSnapshot(t, other))
	tx.Add(fileAdd("day=2024-01-01/theirs.parquet", "2024-01-01"))
	tx.SetTxn("app", 7)
	if _, err := tx.Commit(context.Background(), Operation{Name: "WRITE"}); err != nil {
		t.Fatal(err)
	}
	// The scope still gives the snapshot it knows: no request.
	if s, err := l.Refresh(ctx, snap); err != nil || s != snap {
		t.Fatalf("scoped refresh = %v, %v; want the scope's snapshot", s, err)
	}
	tx = l.Begin(snap)
	tx.Add(fileAdd("day=2024-01-01/mine.parquet", "2024-01-01"))
	tx.SetTxn("app", 7)
	if _, err := tx.Commit(ctx, Operation{Name: "WRITE"}); !errors.Is(err, ErrConcurrentTransaction) {
		t.Fatalf("commit against a winner with the same txn: %v, want ErrConcurrentTransaction", err)
	}
	s, err := l.Refresh(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := s.TxnVersion("app"); s.Version() != 1 || !ok || v != 7 {
		t.Errorf("refresh after the conflict = version %d (txn %d, %v), want version 1 with the winner's txn 7", s.Version(), v, ok)
	}
}

// A table dropped and created again through the same Log: the head is the new table's, not
// the newer version of the old one, so a refresh from the new table's snapshot stays on it.
func TestHeadFollowsATableCreatedAgain(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	l := fastLog(b, Options{NoAutoCheckpoint: true})
	buildHistory(t, l, 5)
	for info, err := range b.List(ctx, "", objstore.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Delete(ctx, info.Key); err != nil {
			t.Fatal(err)
		}
	}
	createTable(t, l, true, nil)
	l.headMu.Lock()
	head := l.head
	l.headMu.Unlock()
	if head.Version() != 0 {
		t.Errorf("head after the creation = version %d, want the new table's 0", head.Version())
	}
	s, err := l.Refresh(ctx, mustSnapshot(t, l))
	if err != nil || s.Version() != 0 || len(s.Files()) != 0 {
		t.Fatalf("refresh of the table created again = %v, %v; want version 0 without files", s, err)
	}
}

// pairedStats holds a stat of commit next until a stat of commit known has begun (or a
// second passed, which it counts as a look made one request after the other).
type pairedStats struct {
	objstore.Bucket
	known, next int64
	began       chan struct{}
	serial      atomic.Int64
}

func (p *pairedStats) Stat(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	switch key {
	case CommitKey(p.known):
		select {
		case <-p.began:
		default:
			close(p.began)
		}
	case CommitKey(p.next):
		select {
		case <-p.began:
		case <-time.After(time.Second):
			p.serial.Add(1)
		}
	}
	return p.Bucket.Stat(ctx, key)
}

// After its own commit a writer's look asks for the next version and for its own together (one
// round trip), and still finds a table restored behind it; a look from a snapshot it did not
// write asks as before.
func TestRefreshAfterOwnCommitAsksOnce(t *testing.T) {
	ctx := context.Background()
	m := mem.New()
	p := &pairedStats{Bucket: m, known: 1, next: 2, began: make(chan struct{})}
	l := fastLog(p, Options{NoAutoCheckpoint: true})
	createTable(t, l, true, nil)
	snap := appendRound(t, ctx, l, mustSnapshot(t, l), 1) // commits version 1
	got, err := l.Refresh(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version() != 1 || p.serial.Load() != 0 {
		t.Fatalf("refresh after the own commit: version %d, %d looks one request after the other; want 1 and 0", got.Version(), p.serial.Load())
	}
	// Restored behind the writer: version 1 is gone, and the look after the next own commit
	// (version 2, then deleted with 1) reloads the table.
	appendRound(t, ctx, l, got, 2)
	for _, v := range []int64{2, 1} {
		if err := m.Delete(ctx, CommitKey(v)); err != nil {
			t.Fatal(err)
		}
	}
	p.known, p.next, p.began = 2, 3, make(chan struct{})
	if got, err = l.Refresh(ctx, got); err != nil {
		t.Fatal(err)
	}
	if got.Version() != 0 || p.serial.Load() != 0 {
		t.Fatalf("refresh after a restore: version %d (%d serial looks), want 0", got.Version(), p.serial.Load())
	}
}
