package txlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/objstore/mem"
)

const testSchema = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"day","type":"string","nullable":true,"metadata":{}}]}`

func sp(s string) *string { return &s }

// fastLog is a log whose commit retries back off for microseconds, not milliseconds.
func fastLog(b objstore.Bucket, opts Options) *Log {
	opts.BackoffMin, opts.BackoffMax = time.Microsecond, time.Millisecond
	return New(b, opts)
}

// createTable commits version 0 of a table partitioned by day (or not), protocol (1,2).
func createTable(t testing.TB, l *Log, partitioned bool, conf map[string]string) {
	t.Helper()
	createTableWith(t, l, partitioned, conf, nil)
}

// domainProtocol is (1,7) with the features of (1,2) plus domainMetadata.
var domainProtocol = &Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"appendOnly", "invariants", "domainMetadata"}}

func createTableWith(t testing.TB, l *Log, partitioned bool, conf map[string]string, p *Protocol) {
	t.Helper()
	tx := l.Begin(nil)
	if p != nil {
		tx.SetProtocol(*p)
	}
	md := Metadata{SchemaString: testSchema, Configuration: conf}
	if partitioned {
		md.PartitionColumns = []string{"day"}
	}
	tx.SetMetadata(md)
	if v, err := tx.Commit(context.Background(), Operation{Name: "CREATE TABLE"}); err != nil || v != 0 {
		t.Fatalf("create: v=%d err=%v", v, err)
	}
}

func fileAdd(path, day string) *Add {
	return &Add{Path: path, PartitionValues: map[string]*string{"day": sp(day)}, Size: 10, ModificationTime: 1, DataChange: true}
}

func mustSnapshot(t testing.TB, l *Log) *Snapshot {
	t.Helper()
	s, err := l.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCommitWritesSparkShapedCommitInfo(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	l := fastLog(b, Options{})
	createTable(t, l, true, nil)
	tx := l.Begin(mustSnapshot(t, l))
	tx.Add(fileAdd("day=2024-01-01/part-0 a%b.parquet", "2024-01-01"))
	v, err := tx.Commit(ctx, Operation{Name: "WRITE", Parameters: map[string]any{"mode": "Append", "partitionBy": []string{"day"}, "auto": false}, Metrics: map[string]int64{"numFiles": 1}})
	if err != nil || v != 1 {
		t.Fatalf("commit: %d %v", v, err)
	}
	data, err := objstore.ReadAll(ctx, b, "_delta_log/00000000000000000001.json")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var first map[string]map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	ci, ok := first["commitInfo"]
	if !ok {
		t.Fatalf("first action is not commitInfo: %s", lines[0])
	}
	params := ci["operationParameters"].(map[string]any)
	if params["mode"] != "Append" || params["partitionBy"] != `["day"]` || params["auto"] != false {
		t.Errorf("operationParameters = %v", params)
	}
	if ci["operationMetrics"].(map[string]any)["numFiles"] != "1" || ci["readVersion"] != 0.0 ||
		ci["isolationLevel"] != "Serializable" || ci["isBlindAppend"] != true ||
		ci["engineInfo"] != "medallion/"+Version || ci["txnId"] == "" || ci["operation"] != "WRITE" {
		t.Errorf("commitInfo = %v", ci)
	}
	if !strings.Contains(lines[1], `"path":"day=2024-01-01/part-0%20a%25b.parquet"`) {
		t.Errorf("add path not URI-encoded: %s", lines[1])
	}
	snap := mustSnapshot(t, l)
	if len(snap.Files()) != 1 || snap.Files()[0].Path != "day=2024-01-01/part-0 a%b.parquet" {
		t.Errorf("files = %v", snap.Files())
	}
	// Version 0 has protocol (1,2) and the metadata.
	v0, _ := objstore.ReadAll(ctx, b, "_delta_log/00000000000000000000.json")
	if !strings.Contains(string(v0), `"protocol":{"minReaderVersion":1,"minWriterVersion":2}`) || !strings.Contains(string(v0), `"partitionColumns":["day"]`) {
		t.Errorf("version 0 = %s", v0)
	}
	hist, err := l.History(ctx, 0)
	if err != nil || len(hist) != 2 || hist[0].Version != 1 || hist[0].CommitInfo.Operation != "WRITE" || hist[1].CommitInfo.Operation != "CREATE TABLE" {
		t.Errorf("history = %+v, %v", hist, err)
	}
}

func TestConcurrentCreateLosesCleanly(t *testing.T) {
	l := fastLog(mem.New(), Options{})
	createTable(t, l, false, nil)
	tx := l.Begin(nil)
	tx.SetMetadata(Metadata{SchemaString: testSchema})
	if _, err := tx.Commit(context.Background(), Operation{Name: "CREATE TABLE"}); !errors.Is(err, ErrProtocolChanged) {
		t.Fatalf("err = %v, want ErrProtocolChanged", err)
	}
}

// The conflict checks are the matrix in testdata/conflicts (conflict_test.go).

// faultyBucket fails PutIfAbsent of commit files in the ways the commit protocol must survive.
type faultyBucket struct {
	objstore.Bucket
	failAfterWrite  atomic.Int32 // > 0: write the object, then report an error
	failBeforeWrite atomic.Int32 // > 0: report an error without writing
	failReads       atomic.Bool
	hideOnce        atomic.Bool // the next Get of a commit reports ErrNotFound
}

var errInjected = errors.New("injected fault")

func (f *faultyBucket) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) error {
	if strings.HasSuffix(key, ".json") {
		if f.failBeforeWrite.Add(-1) >= 0 {
			return errInjected
		}
		if f.failAfterWrite.Add(-1) >= 0 {
			if err := f.Bucket.PutIfAbsent(ctx, key, r, size); err != nil {
				return err
			}
			return errInjected
		}
	}
	return f.Bucket.PutIfAbsent(ctx, key, r, size)
}

func (f *faultyBucket) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if f.failReads.Load() {
		return nil, errInjected
	}
	if strings.HasSuffix(key, ".json") && f.hideOnce.CompareAndSwap(true, false) {
		return nil, objstore.ErrNotFound
	}
	return f.Bucket.Get(ctx, key)
}

func TestCommitUnknownOutcome(t *testing.T) {
	ctx := context.Background()
	t.Run("landed: read back finds our txnId", func(t *testing.T) {
		fb := &faultyBucket{Bucket: mem.New()}
		l := fastLog(fb, Options{})
		createTable(t, l, false, nil)
		fb.failAfterWrite.Store(1)
		tx := l.Begin(mustSnapshot(t, l))
		tx.Add(fileAdd("x", "1"))
		v, err := tx.Commit(ctx, Operation{Name: "WRITE"})
		if err != nil || v != 1 {
			t.Fatalf("commit = %d, %v", v, err)
		}
		if snap := mustSnapshot(t, l); snap.Version() != 1 || len(snap.Files()) != 1 {
			t.Errorf("snapshot v%d with %d files, want v1 with 1 (no duplicate commit)", snap.Version(), len(snap.Files()))
		}
	})
	t.Run("not landed: retried at the same version", func(t *testing.T) {
		fb := &faultyBucket{Bucket: mem.New()}
		l := fastLog(fb, Options{})
		createTable(t, l, false, nil)
		fb.failBeforeWrite.Store(2)
		tx := l.Begin(mustSnapshot(t, l))
		tx.Add(fileAdd("x", "1"))
		if v, err := tx.Commit(ctx, Operation{Name: "WRITE"}); err != nil || v != 1 {
			t.Fatalf("commit = %d, %v", v, err)
		}
	})
	t.Run("landed but invisible to the read-back: never committed twice", func(t *testing.T) {
		fb := &faultyBucket{Bucket: mem.New()}
		l := fastLog(fb, Options{})
		createTable(t, l, false, nil)
		snap := mustSnapshot(t, l)
		fb.failAfterWrite.Store(1)
		fb.hideOnce.Store(true) // the read-back misses the object, as an eventually consistent store might
		tx := l.Begin(snap)
		tx.Add(fileAdd("x", "1"))
		v, err := tx.Commit(ctx, Operation{Name: "WRITE"})
		if err != nil || v != 1 {
			t.Fatalf("commit = %d, %v", v, err)
		}
		if s := mustSnapshot(t, l); s.Version() != 1 {
			t.Errorf("latest version %d, want 1: the append was committed twice", s.Version())
		}
	})
	t.Run("undeterminable", func(t *testing.T) {
		fb := &faultyBucket{Bucket: mem.New()}
		l := fastLog(fb, Options{})
		createTable(t, l, false, nil)
		snap := mustSnapshot(t, l)
		fb.failAfterWrite.Store(1)
		fb.failReads.Store(true)
		tx := l.Begin(snap)
		tx.Add(fileAdd("x", "1"))
		if _, err := tx.Commit(ctx, Operation{Name: "WRITE"}); !errors.Is(err, ErrCommitUnknown) {
			t.Fatalf("err = %v, want ErrCommitUnknown", err)
		}
	})
}

// noConditionalPut is a store without put-if-absent.
type noConditionalPut struct{ objstore.Bucket }

func (noConditionalPut) PutIfAbsent(context.Context, string, io.Reader, int64) error {
	return fmt.Errorf("test store: %w", objstore.ErrNotSupported)
}

func TestCommitRefusesStoreWithoutPutIfAbsent(t *testing.T) {
	tx := fastLog(noConditionalPut{mem.New()}, Options{}).Begin(nil)
	tx.SetMetadata(Metadata{SchemaString: testSchema})
	if _, err := tx.Commit(context.Background(), Operation{Name: "CREATE TABLE"}); !errors.Is(err, objstore.ErrNotSupported) {
		t.Fatalf("err = %v, want ErrNotSupported", err)
	}
}

func TestUnsafeCommitsOptIn(t *testing.T) {
	ctx := context.Background()
	l := fastLog(noConditionalPut{mem.New()}, Options{UnsafeCommits: true})
	createTable(t, l, false, nil)
	tx := l.Begin(mustSnapshot(t, l))
	tx.Add(fileAdd("x", "1"))
	if v, err := tx.Commit(ctx, Operation{Name: "WRITE"}); err != nil || v != 1 {
		t.Fatalf("commit = %d, %v", v, err)
	}
	// A stale writer still sees the version taken and moves on.
	stale := l.Begin(mustSnapshot(t, l))
	stale.Add(fileAdd("y", "1"))
	winner := l.Begin(mustSnapshot(t, l))
	winner.Add(fileAdd("z", "1"))
	if _, err := winner.Commit(ctx, Operation{Name: "WRITE"}); err != nil {
		t.Fatal(err)
	}
	if v, err := stale.Commit(ctx, Operation{Name: "WRITE"}); err != nil || v != 3 {
		t.Fatalf("stale commit = %d, %v", v, err)
	}
}

func TestTransactionValidation(t *testing.T) {
	ctx := context.Background()
	l := fastLog(mem.New(), Options{})
	createTable(t, l, true, map[string]string{"delta.appendOnly": "true"})
	snap := mustSnapshot(t, l)
	cases := []struct {
		name  string
		build func(tx *Transaction)
		want  string
	}{
		{"append-only table", func(tx *Transaction) { tx.Remove(&Remove{Path: "a", DataChange: true}) }, "append-only"},
		{"missing partition value", func(tx *Transaction) { tx.Add(&Add{Path: "a", Size: 1, DataChange: true}) }, `no value for partition column "day"`},
		{"duplicate add", func(tx *Transaction) { tx.Add(fileAdd("a", "1"), fileAdd("a", "1")) }, "added twice"},
		{"system domain", func(tx *Transaction) { tx.SetDomain(DomainMetadata{Domain: "delta.clustering"}) }, "system-owned"},
		{"domain without the feature", func(tx *Transaction) { tx.SetDomain(DomainMetadata{Domain: "com.example"}) }, "domainMetadata writer feature"},
		{"bad schema", func(tx *Transaction) { tx.SetMetadata(Metadata{SchemaString: "{"}) }, "parse schema"},
	}
	for _, c := range cases {
		tx := l.Begin(snap)
		c.build(tx)
		_, err := tx.Commit(ctx, Operation{Name: "WRITE"})
		if !errors.Is(err, ErrInvalidTransaction) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
	if v := mustSnapshot(t, l).Version(); v != 0 {
		t.Errorf("a refused transaction committed: version %d", v)
	}
	// Rearranging (dataChange=false) is allowed on an append-only table.
	tx := l.Begin(snap)
	tx.Add(fileAdd("a", "1"))
	if _, err := tx.Commit(ctx, Operation{Name: "WRITE"}); err != nil {
		t.Fatal(err)
	}
	tx = l.Begin(mustSnapshot(t, l))
	tx.Remove(&Remove{Path: "a", DataChange: false})
	b := fileAdd("b", "1")
	b.DataChange = false
	tx.Add(b)
	if _, err := tx.Commit(ctx, Operation{Name: "OPTIMIZE"}); err != nil {
		t.Fatal(err)
	}
}

func TestRetryLimit(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	createTable(t, fastLog(b, Options{}), false, nil)
	l := fastLog(b, Options{MaxAttempts: 1, MaxConflictingAttempts: 1})
	read := mustSnapshot(t, l)
	winner := l.Begin(read)
	winner.Add(fileAdd("w", "1"))
	if _, err := winner.Commit(ctx, Operation{Name: "WRITE"}); err != nil {
		t.Fatal(err)
	}
	loser := l.Begin(read)
	loser.Add(fileAdd("l", "1"))
	if _, err := loser.Commit(ctx, Operation{Name: "WRITE"}); !errors.Is(err, ErrTooManyAttempts) {
		t.Fatalf("err = %v, want ErrTooManyAttempts", err)
	}
	// A cancelled context stops the retry loop.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	tx := fastLog(b, Options{}).Begin(read)
	tx.Add(fileAdd("c", "1"))
	if _, err := tx.Commit(cctx, Operation{Name: "WRITE"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if s := mustSnapshot(t, l); s.Version() != 1 || len(s.Files()) != 1 {
		t.Errorf("v%d with %d files, want only the winner", s.Version(), len(s.Files()))
	}
}

func TestIdempotentTxn(t *testing.T) {
	ctx := context.Background()
	l := fastLog(mem.New(), Options{})
	createTable(t, l, false, nil)
	for batch := int64(0); batch < 3; batch++ {
		snap := mustSnapshot(t, l)
		if v, ok := snap.TxnVersion("q"); ok && v >= batch {
			continue
		}
		tx := l.Begin(snap)
		tx.SetTxn("q", batch)
		tx.Add(fileAdd(fmt.Sprintf("f%d", batch), "1"))
		if _, err := tx.Commit(ctx, Operation{Name: "STREAMING UPDATE"}); err != nil {
			t.Fatal(err)
		}
	}
	snap := mustSnapshot(t, l)
	if v, ok := snap.TxnVersion("q"); !ok || v != 2 || snap.Version() != 3 {
		t.Errorf("txn q = %d,%v at v%d", v, ok, snap.Version())
	}
}

func TestRefusesUnsupportedWriterFeatures(t *testing.T) {
	l := fastLog(mem.New(), Options{})
	tx := l.Begin(nil)
	tx.SetMetadata(Metadata{SchemaString: testSchema})
	tx.SetProtocol(Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"appendOnly", "icebergCompatV2", "someFutureFeature"}})
	_, err := tx.Commit(context.Background(), Operation{Name: "CREATE TABLE"})
	if !errors.Is(err, ErrUnsupportedFeature) || !strings.Contains(err.Error(), "icebergCompatV2, someFutureFeature") {
		t.Fatalf("err = %v", err)
	}
	// Row tracking is known, and refuses any data file: each needs row ids this writer does
	// not assign.
	tx = l.Begin(nil)
	tx.SetMetadata(Metadata{SchemaString: testSchema})
	tx.SetProtocol(Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"rowTracking", "domainMetadata"}})
	tx.Add(fileAdd("a", "1"))
	if _, err := tx.Commit(context.Background(), Operation{Name: "CREATE TABLE"}); !errors.Is(err, ErrUnsupportedFeature) || !strings.Contains(err.Error(), "rowTracking") {
		t.Fatalf("err = %v", err)
	}
	tx = l.Begin(nil)
	tx.SetMetadata(Metadata{SchemaString: testSchema})
	tx.SetProtocol(Protocol{MinReaderVersion: 1, MinWriterVersion: 8})
	if _, err := tx.Commit(context.Background(), Operation{Name: "CREATE TABLE"}); !errors.Is(err, ErrUnsupportedFeature) || !strings.Contains(err.Error(), "writer version 8") {
		t.Fatalf("err = %v", err)
	}
}

// concurrentBlindAppends runs writers x perWriter blind appends and checks that every version is
// contiguous and every add survived.
func concurrentBlindAppends(t *testing.T, b objstore.Bucket, writers, perWriter int) {
	ctx := context.Background()
	l := fastLog(b, Options{})
	createTable(t, l, false, nil)
	var wg sync.WaitGroup
	errs := make(chan error, writers*perWriter)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wl := fastLog(b, Options{})
			var snap *Snapshot
			for i := 0; i < perWriter; i++ {
				// A long-running writer refreshes its snapshot rather than reloading the log.
				var err error
				if snap, err = wl.Refresh(ctx, snap); err != nil {
					errs <- err
					return
				}
				tx := wl.Begin(snap)
				tx.Add(fileAdd(fmt.Sprintf("w%d-%d.parquet", w, i), "1"))
				if _, err := tx.Commit(ctx, Operation{Name: "WRITE", Parameters: map[string]any{"mode": "Append"}}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	snap := mustSnapshot(t, l)
	if want := int64(writers * perWriter); snap.Version() != want {
		t.Fatalf("version = %d, want %d", snap.Version(), want)
	}
	if len(snap.Files()) != writers*perWriter {
		t.Fatalf("files = %d, want %d", len(snap.Files()), writers*perWriter)
	}
	for v := int64(0); v <= snap.Version(); v++ {
		if _, err := b.Stat(ctx, CommitKey(v)); err != nil {
			t.Fatalf("commit %d: %v", v, err)
		}
	}
}

func perWriter() int {
	if testing.Short() {
		return 10
	}
	return 50
}

func TestConcurrentBlindAppendsMem(t *testing.T) {
	concurrentBlindAppends(t, mem.New(), 8, perWriter())
}

func TestConcurrentBlindAppendsFile(t *testing.T) {
	b, err := file.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	concurrentBlindAppends(t, b, 8, perWriter())
}

func TestConcurrentReadModifyWrite(t *testing.T) {
	concurrentReadModifyWrite(t, mem.New())
}

// concurrentReadModifyWrite races two writers that both replace the one file they read: one
// wins, the other fails with a conflict; never both.
func concurrentReadModifyWrite(t *testing.T, b objstore.Bucket) {
	ctx := context.Background()
	l := fastLog(b, Options{})
	createTable(t, l, false, nil)
	base := l.Begin(mustSnapshot(t, l))
	base.Add(fileAdd("counter-0", "1"))
	if _, err := base.Commit(ctx, Operation{Name: "WRITE"}); err != nil {
		t.Fatal(err)
	}
	read := mustSnapshot(t, l)
	var wg sync.WaitGroup
	results := make([]error, 2)
	start := make(chan struct{})
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Read-modify-write: replace the one file we read with a new one.
			tx := l.Begin(read)
			tx.ReadWholeTable()
			tx.ReadFiles("counter-0")
			tx.Remove(&Remove{Path: "counter-0", DataChange: true})
			tx.Add(fileAdd(fmt.Sprintf("counter-1-w%d", w), "1"))
			<-start
			_, results[w] = tx.Commit(ctx, Operation{Name: "UPDATE"})
		}()
	}
	close(start)
	wg.Wait()
	wins, conflicts := 0, 0
	for _, err := range results {
		switch {
		case err == nil:
			wins++
		case errors.Is(err, ErrConflict):
			conflicts++
		default:
			t.Errorf("unexpected error %v", err)
		}
	}
	if wins != 1 || conflicts != 1 {
		t.Fatalf("wins=%d conflicts=%d (%v)", wins, conflicts, results)
	}
	snap := mustSnapshot(t, l)
	if snap.Version() != 2 || len(snap.Files()) != 1 {
		t.Errorf("v%d with %d files, want v2 with exactly 1", snap.Version(), len(snap.Files()))
	}
}
