package txlog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
)

// snapshotState is a comparable rendering of a snapshot's reconciled state.
func snapshotState(t *testing.T, s *Snapshot) string {
	t.Helper()
	type file struct {
		Add     *Add
		RawPath string
	}
	var files []file
	for _, a := range s.Files() {
		c := *a
		c.DataChange = false // checkpoints record state, not changes
		files = append(files, file{&c, a.RawPath()})
	}
	var tomb []string
	for _, r := range s.Tombstones() {
		tomb = append(tomb, r.Path)
	}
	txns := map[string]int64{}
	for id := range s.txnActions {
		txns[id], _ = s.TxnVersion(id)
	}
	b, err := json.Marshal(map[string]any{
		"version": s.Version(), "protocol": s.Protocol(), "metadata": s.Metadata(), "files": files,
		"tombstones": tomb, "txns": txns, "domains": s.domains,
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// buildHistory commits a mix of actions: adds with awkward paths, null partition values, stats,
// DVs, removes, re-adds, txns and domains.
func buildHistory(t *testing.T, l *Log, commits int) {
	t.Helper()
	ctx := context.Background()
	createTableWith(t, l, true, map[string]string{PropCheckpointInterval: "1000"}, domainProtocol)
	for i := 1; i <= commits; i++ {
		snap := mustSnapshot(t, l)
		tx := l.Begin(snap)
		day := fmt.Sprintf("2024-01-%02d", i%5)
		a := fileAdd(fmt.Sprintf("day=%s/part %d%%.parquet", day, i), day)
		a.Stats = fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":1},"maxValues":{"id":%d},"nullCount":{"id":0}}`, i, i)
		if i%4 == 0 {
			a.PartitionValues["day"] = nil
		}
		if i%3 == 0 {
			off := int32(1)
			a.DeletionVector = &DeletionVector{StorageType: "u", PathOrInlineDv: "ab^-aqEH.-t@S}K{vb[*k^", Offset: &off, SizeInBytes: 34, Cardinality: 2}
			a.Tags = map[string]string{"INSERTION_TIME": "1"}
		}
		tx.Add(a)
		if i%2 == 0 && len(snap.Files()) > 0 {
			old := snap.Files()[0]
			tx.ReadFiles(old.Path)
			size := old.Size
			tx.Remove(&Remove{Path: old.Path, DataChange: true, ExtendedFileMetadata: true, PartitionValues: old.PartitionValues, Size: &size, DeletionVector: old.DeletionVector})
		}
		tx.SetTxn(fmt.Sprintf("app-%d", i%3), int64(i))
		if i%5 == 0 {
			tx.SetDomain(DomainMetadata{Domain: "com.example", Configuration: fmt.Sprintf(`{"i":%d}`, i)})
		}
		if _, err := tx.Commit(ctx, Operation{Name: "WRITE"}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	l := fastLog(b, Options{})
	buildHistory(t, l, 23)
	replayed := mustSnapshot(t, l) // JSON replay only: no checkpoint yet
	if replayed.CheckpointVersion() != -1 {
		t.Fatalf("unexpected checkpoint %d", replayed.CheckpointVersion())
	}
	if err := l.Checkpoint(ctx, replayed); err != nil {
		t.Fatal(err)
	}
	fromCP := mustSnapshot(t, l)
	if fromCP.CheckpointVersion() != 23 {
		t.Fatalf("checkpoint version = %d, want 23", fromCP.CheckpointVersion())
	}
	if got, want := snapshotState(t, fromCP), snapshotState(t, replayed); got != want {
		t.Errorf("checkpoint state differs from replay:\n got %s\nwant %s", got, want)
	}
	hint, err := objstore.ReadAll(ctx, b, "_delta_log/_last_checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	var lc map[string]any
	if err := json.Unmarshal(hint, &lc); err != nil || lc["version"] != 23.0 || lc["size"] == nil || lc["sizeInBytes"] == nil {
		t.Errorf("_last_checkpoint = %s (%v)", hint, err)
	}
	// The file has Spark's top-level columns and 3-level maps.
	data, _ := objstore.ReadAll(ctx, b, CheckpointKey(23))
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	schema := f.Schema().String()
	for _, want := range []string{"optional group txn", "optional group add", "optional group remove", "optional group metaData", "optional group protocol", "optional group domainMetadata", "partitionValues (MAP)", "repeated group key_value", "partitionColumns (LIST)", "optional binary stats (STRING)"} {
		if !strings.Contains(schema, want) {
			t.Errorf("checkpoint schema lacks %q:\n%s", want, schema)
		}
	}
	// A later commit replays on top of the checkpoint.
	tx := l.Begin(fromCP)
	tx.Add(fileAdd("after", "x"))
	if _, err := tx.Commit(ctx, Operation{Name: "WRITE"}); err != nil {
		t.Fatal(err)
	}
	if s := mustSnapshot(t, l); s.CheckpointVersion() != 23 || len(s.Files()) != len(fromCP.Files())+1 {
		t.Errorf("after checkpoint: cp %d, %d files", s.CheckpointVersion(), len(s.Files()))
	}
}

func TestAutoCheckpointAndStaleHints(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	l := fastLog(b, Options{})
	createTable(t, l, false, map[string]string{PropCheckpointInterval: "5"})
	for i := 0; i < 12; i++ {
		tx := l.Begin(mustSnapshot(t, l))
		tx.Add(fileAdd(fmt.Sprintf("f%d", i), "x"))
		if _, err := tx.Commit(ctx, Operation{Name: "WRITE"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []int64{5, 10} {
		if _, err := b.Stat(ctx, CheckpointKey(v)); err != nil {
			t.Errorf("checkpoint %d: %v", v, err)
		}
	}
	want := snapshotState(t, mustSnapshot(t, l))
	hints := map[string]string{
		"empty":   "",
		"corrupt": "{not json",
		"stale":   `{"version":5,"size":3}`,
		"future":  `{"version":99,"size":3}`,
	}
	for name, hint := range hints {
		if err := objstore.PutBytes(ctx, b, lastCheckpointKey, []byte(hint)); err != nil {
			t.Fatal(err)
		}
		s, err := l.Snapshot(ctx)
		if err != nil {
			t.Fatalf("%s hint: %v", name, err)
		}
		if got := snapshotState(t, s); got != want {
			t.Errorf("%s hint: state differs", name)
		}
	}
	// A checkpoint that cannot be read is skipped in favour of an older one.
	if err := objstore.PutBytes(ctx, b, CheckpointKey(10), []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	s, err := l.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.CheckpointVersion() != 5 || snapshotState(t, s) != want {
		t.Errorf("corrupt checkpoint: loaded from %d", s.CheckpointVersion())
	}
}

func TestCleanup(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := fastLog(b, Options{Clock: func() time.Time { return now }, NoAutoCheckpoint: true})
	createTable(t, l, false, nil)
	for i := 0; i < 25; i++ {
		tx := l.Begin(mustSnapshot(t, l))
		tx.Add(fileAdd(fmt.Sprintf("f%d", i), "x"))
		v, err := tx.Commit(ctx, Operation{Name: "WRITE"})
		if err != nil {
			t.Fatal(err)
		}
		if v%10 == 0 {
			if err := l.Checkpoint(ctx, mustSnapshot(t, l)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Versions 0..15 are 40 days old, the rest recent.
	for info, err := range b.List(ctx, LogDir, objstore.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if f := parseLogName(info.Key); f.kind != kindUnknown && f.version <= 15 {
			if err := b.SetModTime(info.Key, now.Add(-40*24*time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := snapshotState(t, mustSnapshot(t, l))
	n, err := l.Cleanup(ctx, mustSnapshot(t, l))
	if err != nil {
		t.Fatal(err)
	}
	// The newest expired checkpoint is 10, so exactly commits 0..9 go.
	if n != 10 {
		t.Errorf("deleted %d files, want 10 (commits 0..9)", n)
	}
	for v := int64(0); v <= 25; v++ {
		_, err := b.Stat(ctx, CommitKey(v))
		if gone := errors.Is(err, objstore.ErrNotFound); gone != (v < 10) {
			t.Errorf("commit %d gone=%v", v, gone)
		}
	}
	if got := snapshotState(t, mustSnapshot(t, l)); got != before {
		t.Error("cleanup changed the latest snapshot")
	}
	if _, err := l.SnapshotAt(ctx, 5); !errors.Is(err, ErrVersionNotFound) {
		t.Errorf("SnapshotAt(5) after cleanup: %v, want ErrVersionNotFound", err)
	}
	if s, err := l.SnapshotAt(ctx, 12); err != nil || s.Version() != 12 {
		t.Errorf("SnapshotAt(12) after cleanup: %v", err)
	}
}

func TestParseInterval(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{"interval 30 days", 30 * 24 * time.Hour, false},
		{"interval 1 week", 7 * 24 * time.Hour, false},
		{"12 hours", 12 * time.Hour, false},
		{"INTERVAL 2 MINUTES", 2 * time.Minute, false},
		{"interval 3 months", 0, true},
		{"soon", 0, true},
		{"interval -1 days", 0, true},
	}
	for _, c := range cases {
		got, err := ParseInterval(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("ParseInterval(%q) = %v, %v", c.in, got, err)
		}
	}
}

// TestV2ParquetCheckpointWithSidecars reads a UUID-named Parquet checkpoint whose file actions
// sit in a sidecar (no fixture has this layout; the JSON variant is covered by fixtures).
func TestV2ParquetCheckpointWithSidecars(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	write := func(key string, rows []cpReadRow) {
		var buf bytes.Buffer
		w := parquet.NewGenericWriter[cpReadRow](&buf)
		if _, err := w.Write(rows); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := objstore.PutBytes(ctx, b, key, buf.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	write(sidecarDir+"side-1.parquet", []cpReadRow{
		{Add: &cpAdd{Path: "a%20b.parquet", PartitionValues: map[string]*string{}, Size: 5, DataChange: false}},
		{Add: &cpAdd{Path: "c.parquet", PartitionValues: map[string]*string{}, Size: 7}},
		{Remove: &cpRemove{Path: "old.parquet", DataChange: false}},
	})
	write(LogDir+"00000000000000000002.checkpoint.0f6b1a3c-5c8e-4d2a-9b71-3e2c4f5a6d7e.parquet", []cpReadRow{
		{CheckpointMetadata: &cpCheckpointMD{Version: 2}},
		{Protocol: &cpProtocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"v2Checkpoint"}, WriterFeatures: []string{"v2Checkpoint"}}},
		{MetaData: &cpMetadata{ID: "t", Format: cpFormat{Provider: "parquet", Options: map[string]string{}}, SchemaString: testSchema, PartitionColumns: []string{}, Configuration: map[string]string{}}},
		{Txn: &cpTxn{AppID: "app", Version: 9}},
		{Sidecar: &cpSidecar{Path: "side-1.parquet", SizeInBytes: 1, ModificationTime: 1}},
	})
	commit3, err := MarshalActions([]Action{{CommitInfo: &CommitInfo{Operation: "DELETE"}}, {Remove: &Remove{Path: "c.parquet", DataChange: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := objstore.PutBytes(ctx, b, CommitKey(3), commit3); err != nil {
		t.Fatal(err)
	}
	snap := mustSnapshot(t, New(b, Options{}))
	if snap.Version() != 3 || snap.CheckpointVersion() != 2 || len(snap.Files()) != 1 || snap.Files()[0].Path != "a b.parquet" || len(snap.Tombstones()) != 2 {
		t.Fatalf("v%d cp%d files %v tombstones %d", snap.Version(), snap.CheckpointVersion(), snap.Files(), len(snap.Tombstones()))
	}
	if v, ok := snap.TxnVersion("app"); !ok || v != 9 {
		t.Errorf("txn = %d %v", v, ok)
	}
	// Writing a classic checkpoint for a v2Checkpoint table is refused, by name.
	if err := New(b, Options{}).Checkpoint(ctx, snap); !errors.Is(err, ErrUnsupportedFeature) || !strings.Contains(err.Error(), "v2Checkpoint") {
		t.Errorf("checkpoint of a v2 table: %v", err)
	}
}

// Cleanup lists only the range that can expire: after the versions an earlier cleanup deleted,
// up to the first file newer than the cut-off, however long the log.
func TestCleanupIncremental(t *testing.T) {
	ctx := context.Background()
	m := mem.New()
	c := &countingBucket{Bucket: m}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := fastLog(c, Options{Clock: func() time.Time { return now }, NoAutoCheckpoint: true})
	createTable(t, l, false, nil)
	for i := 1; i <= 40; i++ {
		tx := l.Begin(mustSnapshot(t, l))
		tx.Add(fileAdd(fmt.Sprintf("f%d", i), "x"))
		v, err := tx.Commit(ctx, Operation{Name: "WRITE"})
		if err != nil {
			t.Fatal(err)
		}
		if v%10 == 0 {
			if err := l.Checkpoint(ctx, mustSnapshot(t, l)); err != nil {
				t.Fatal(err)
			}
		}
	}
	setAge := func(from, to int64, age time.Duration) {
		t.Helper()
		for info, err := range m.List(ctx, LogDir, objstore.ListOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			if f := parseLogName(info.Key); f.kind != kindUnknown && f.version >= from && f.version <= to {
				if err := m.SetModTime(info.Key, now.Add(-age)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	cleanup := func(want int) (listed int64, starts []string) {
		t.Helper()
		snap := mustSnapshot(t, l)
		c.listed.Store(0)
		c.starts = nil
		n, err := l.Cleanup(ctx, snap)
		if err != nil || n != want {
			t.Fatalf("cleanup deleted %d files (%v), want %d", n, err, want)
		}
		return c.listed.Load(), c.starts
	}
	// While the table is younger than the retention, a stat of commit 0 is all cleanup reads.
	young := fastLog(c, Options{Clock: func() time.Time { return now }, NoAutoCheckpoint: true})
	snap := mustSnapshot(t, young)
	c.lists.Store(0)
	if n, err := young.Cleanup(ctx, snap); err != nil || n != 0 || c.lists.Load() != 0 {
		t.Errorf("cleanup of a young table: %d deleted (%v), %d listings; want none", n, err, c.lists.Load())
	}
	setAge(0, 15, 40*24*time.Hour)
	setAge(16, 27, 20*24*time.Hour)
	// Commits 0..9 go; the listing stops at the first file within the retention, 16's commit.
	if listed, _ := cleanup(10); listed > 18 {
		t.Errorf("first cleanup listed %d entries, want at most the 17 files of versions 0..15 and one more", listed)
	}
	// Nothing new can expire before 16's commit does: no listing at all.
	if listed, starts := cleanup(0); len(starts) != 0 || listed != 0 {
		t.Errorf("second cleanup listed %d entries from %q, want none", listed, starts)
	}
	// 15 days later versions 16..27 are past the retention: the newest expired checkpoint is
	// 20, so commits 10..19 and checkpoint 10 go; the listing starts at 10 and stops at 28.
	now = now.Add(15 * 24 * time.Hour)
	listed, starts := cleanup(11)
	if len(starts) != 1 || starts[0] != versionsBefore(10) || listed > 21 {
		t.Errorf("third cleanup listed %d entries from %q, want at most 21 from %q", listed, starts, versionsBefore(10))
	}
	for v := int64(0); v <= 40; v++ {
		_, err := m.Stat(ctx, CommitKey(v))
		if gone := errors.Is(err, objstore.ErrNotFound); gone != (v < 20) {
			t.Errorf("commit %d gone=%v", v, gone)
		}
	}
	if s, err := l.SnapshotAt(ctx, 20); err != nil || s.Version() != 20 {
		t.Errorf("SnapshotAt(20) after cleanup: %v", err)
	}
}
