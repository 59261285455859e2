package txlog

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/internal/testshared"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/objstore/mem"
)

// fixtureRoot is fixtures/delta in the shared folder (see testshared: skipped when missing,
// failed under CI=true).
func fixtureRoot(t testing.TB) string {
	t.Helper()
	return testshared.Path(t, "fixtures", "delta")
}

// fixtureFiles walks one fixture table (hidden folders included: .tmp, _delta_log).
func fixtureFiles(t testing.TB, table string) map[string][]byte {
	t.Helper()
	root := filepath.Join(fixtureRoot(t), table)
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		data, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// memFixture copies a fixture table into a fresh in-memory bucket.
func memFixture(t testing.TB, table string) *mem.Bucket {
	t.Helper()
	b := mem.New()
	copyInto(t, b, table)
	return b
}

// copyInto copies a fixture table into any bucket.
func copyInto(t testing.TB, b objstore.Bucket, table string) {
	t.Helper()
	for k, data := range fixtureFiles(t, table) {
		if err := objstore.PutBytes(context.Background(), b, k, data); err != nil {
			t.Fatal(err)
		}
	}
}

// fileFixture copies a fixture table into a temporary folder opened with the file backend.
func fileFixture(t testing.TB, table string) *file.Bucket {
	t.Helper()
	b, err := file.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	copyInto(t, b, table)
	return b
}

type fixtureWant struct {
	table      string
	version    int64
	files      int      // -1: not asserted
	paths      []string // when set: exact live paths (decoded)
	tombstones int      // -1: not asserted
	protocol   *Protocol
	partitions []string
	txn        map[string]int64
	noTxn      []string
	cpVersion  int64 // -2: not asserted
	wantErr    error
	errText    string
}

// The expectations come from fixtures/delta/EXPECTED.md (upstream generators and tests).
var fixtureWants = []fixtureWant{
	{table: "delta-golden/checkpoint", version: 14, files: 1, paths: []string{"15"}, tombstones: 14, protocol: &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, cpVersion: 10},
	{table: "delta-golden/snapshot-data3", version: 3, files: 4, tombstones: -1, cpVersion: -1},
	{table: "delta-golden/snapshot-data2-deleted", version: 4, files: 3, tombstones: -1, cpVersion: -2},
	{table: "delta-golden/snapshot-repartitioned", version: 5, files: 2, tombstones: -1, cpVersion: -2},
	{table: "delta-golden/basic-with-inserts-deletes-checkpoint", version: 13, files: 7, tombstones: -1, cpVersion: 10},
	{table: "delta-golden/basic-with-inserts-merge", version: 1, files: 1, tombstones: -1, cpVersion: -1},
	{table: "delta-golden/multi-part-checkpoint", version: 1, files: 10, tombstones: -1, cpVersion: 1},
	{table: "delta-golden/corrupted-last-checkpoint-kernel", version: 11, files: -1, tombstones: -1, cpVersion: 10},
	{table: "delta-golden/v2-checkpoint-json", version: 2, files: 4, tombstones: -1, cpVersion: 2,
		protocol: &Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"v2Checkpoint"}, WriterFeatures: []string{"v2Checkpoint", "appendOnly", "invariants"}}},
	{table: "delta-golden/125-iterator-bug", version: 11, files: 12, tombstones: -1, cpVersion: 10},
	{table: "delta-golden/deltalog-getChanges", version: 2, files: 0, tombstones: -1, txn: map[string]int64{"fakeAppId": 3}, noTxn: []string{"nonExistentAppId"}, cpVersion: -2},
	{table: "delta-rs/simple_table", version: 4, files: -1, tombstones: -1, cpVersion: -1},
	{table: "delta-rs/delta-0.2.0", version: 3, files: 3, tombstones: 4, txn: map[string]int64{"e4a20b59-dd0e-4c50-b074-e8ae4786df30": 0}, cpVersion: 3},
	{table: "delta-rs/delta-0.8.0", version: 1, files: 2, tombstones: 1, cpVersion: -1},
	{table: "delta-rs/checkpoint-v2-table", version: 9, files: 8, tombstones: -1, cpVersion: 8},
	{table: "delta-golden/data-reader-primitives", version: 0, files: -1, tombstones: -1, cpVersion: -1},
	{table: "delta-golden/data-reader-partition-values", version: 0, files: -1, tombstones: -1, cpVersion: -1,
		partitions: []string{"as_int", "as_long", "as_byte", "as_short", "as_boolean", "as_float", "as_double", "as_string", "as_string_lit_null", "as_date", "as_timestamp", "as_big_decimal"}},
	{table: "delta-golden/kernel-timestamp-TIMESTAMP_MICROS", version: 0, files: -1, tombstones: -1, cpVersion: -1},
	{table: "delta-rs/delta-0.8.0-partitioned", version: 0, files: -1, tombstones: -1, cpVersion: -1, partitions: []string{"year", "month", "day"}},
	{table: "delta-rs/delta-0.8.0-special-partition", version: 0, files: 2, tombstones: -1, cpVersion: -1, partitions: []string{"x"}},
	{table: "dat/basic_append/delta", version: 1, files: -1, tombstones: -1, cpVersion: -1},
	{table: "dat/basic_partitioned/delta", version: 1, files: -1, tombstones: -1, cpVersion: -1, partitions: []string{"letter"}},
	{table: "dat/with_schema_change/delta", version: 1, files: -1, tombstones: -1, cpVersion: -1},
	{table: "delta-golden/dv-partitioned-with-checkpoint", version: 15, files: -1, tombstones: -1, cpVersion: 10},
	{table: "delta-golden/time-travel-start-start20-start40", version: 2, files: -1, tombstones: -1, cpVersion: -1},
	{table: "delta-golden/versions-not-contiguous", wantErr: ErrNotContiguous, errText: "[0, 2]"},
	{table: "delta-golden/deltalog-invalid-protocol-version", wantErr: ErrUnsupportedFeature, errText: "reader version 99"},
}

func TestFixturesCovered(t *testing.T) {
	root := fixtureRoot(t)
	seen := map[string]bool{}
	for _, w := range fixtureWants {
		seen[strings.TrimSuffix(w.table, "/delta")] = true
	}
	for _, group := range []string{"dat", "delta-golden", "delta-rs"} {
		entries, err := os.ReadDir(filepath.Join(root, group))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !seen[group+"/"+e.Name()] {
				t.Errorf("fixture %s/%s has no expectation", group, e.Name())
			}
		}
	}
}

func TestFixtureSnapshots(t *testing.T) {
	ctx := context.Background()
	for _, w := range fixtureWants {
		t.Run(w.table, func(t *testing.T) {
			snap, err := New(memFixture(t, w.table), Options{}).Snapshot(ctx)
			if w.wantErr != nil {
				if !errors.Is(err, w.wantErr) || !strings.Contains(err.Error(), w.errText) {
					t.Fatalf("err = %v, want %v containing %q", err, w.wantErr, w.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkSnapshot(t, snap, w)
		})
	}
}

func checkSnapshot(t *testing.T, snap *Snapshot, w fixtureWant) {
	t.Helper()
	if snap.Version() != w.version {
		t.Errorf("version = %d, want %d", snap.Version(), w.version)
	}
	if w.files >= 0 && len(snap.Files()) != w.files {
		t.Errorf("live files = %d, want %d", len(snap.Files()), w.files)
	}
	if w.paths != nil {
		var got []string
		for _, f := range snap.Files() {
			got = append(got, f.Path)
		}
		if strings.Join(got, ",") != strings.Join(w.paths, ",") {
			t.Errorf("paths = %v, want %v", got, w.paths)
		}
	}
	if w.tombstones >= 0 && len(snap.Tombstones()) != w.tombstones {
		t.Errorf("tombstones = %d, want %d", len(snap.Tombstones()), w.tombstones)
	}
	if w.protocol != nil {
		p := snap.Protocol()
		if p.MinReaderVersion != w.protocol.MinReaderVersion || p.MinWriterVersion != w.protocol.MinWriterVersion ||
			strings.Join(p.ReaderFeatures, ",") != strings.Join(w.protocol.ReaderFeatures, ",") ||
			strings.Join(p.WriterFeatures, ",") != strings.Join(w.protocol.WriterFeatures, ",") {
			t.Errorf("protocol = %+v, want %+v", p, *w.protocol)
		}
	}
	if w.partitions != nil && strings.Join(snap.PartitionColumns(), ",") != strings.Join(w.partitions, ",") {
		t.Errorf("partition columns = %v, want %v", snap.PartitionColumns(), w.partitions)
	}
	for app, v := range w.txn {
		if got, ok := snap.TxnVersion(app); !ok || got != v {
			t.Errorf("txn %s = %d,%v want %d", app, got, ok, v)
		}
	}
	for _, app := range w.noTxn {
		if _, ok := snap.TxnVersion(app); ok {
			t.Errorf("txn %s present, want none", app)
		}
	}
	if w.cpVersion != -2 && snap.CheckpointVersion() != w.cpVersion {
		t.Errorf("checkpoint version = %d, want %d", snap.CheckpointVersion(), w.cpVersion)
	}
	if _, err := snap.Schema(); err != nil {
		t.Errorf("schema: %v", err)
	}
}

func TestFixtureDetails(t *testing.T) {
	ctx := context.Background()
	t.Run("delta-0.8.0 tombstone", func(t *testing.T) {
		snap, err := New(memFixture(t, "delta-rs/delta-0.8.0"), Options{}).Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r := snap.Tombstones()[0]
		if !strings.HasPrefix(r.Path, "part-00001-911a94a2-") || r.DeletionTimestamp == nil || *r.DeletionTimestamp != 1615043776198 {
			t.Errorf("tombstone = %s %v", r.Path, r.DeletionTimestamp)
		}
	})
	t.Run("special partition paths decoded once", func(t *testing.T) {
		snap, err := New(memFixture(t, "delta-rs/delta-0.8.0-special-partition"), Options{}).Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, f := range snap.Files() {
			got[*f.PartitionValues["x"]] = f.Path
		}
		if !strings.HasPrefix(got["A/A"], "x=A%2FA/part-00007-") || !strings.HasPrefix(got["B B"], "x=B%20B/part-00015-") {
			t.Errorf("paths = %v", got)
		}
		// The decoded path is the object key of the data file.
		for _, f := range snap.Files() {
			if _, ok := fixtureFiles(t, "delta-rs/delta-0.8.0-special-partition")[f.Path]; !ok {
				t.Errorf("no data file at key %q", f.Path)
			}
			if !strings.Contains(f.RawPath(), "%25") {
				t.Errorf("raw path %q lost its encoding", f.RawPath())
			}
		}
	})
	t.Run("null partition value", func(t *testing.T) {
		snap, err := New(memFixture(t, "dat/basic_partitioned/delta"), Options{}).Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		nulls := 0
		for _, f := range snap.Files() {
			if v, ok := f.PartitionValues["letter"]; ok && v == nil {
				nulls++
			}
		}
		if nulls != 1 {
			t.Errorf("files with null letter = %d, want 1", nulls)
		}
	})
	t.Run("deletion vectors from checkpoint and commits", func(t *testing.T) {
		snap, err := New(memFixture(t, "delta-golden/dv-partitioned-with-checkpoint"), Options{}).Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var card int64
		for _, f := range snap.Files() {
			if f.DeletionVector != nil {
				card += f.DeletionVector.Cardinality
			}
		}
		if card == 0 {
			t.Error("no deletion vector found on live files")
		}
	})
	t.Run("file backend", func(t *testing.T) {
		snap, err := New(fileFixture(t, "delta-golden/checkpoint"), Options{}).Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		checkSnapshot(t, snap, fixtureWants[0])
	})
}

func TestFixtureTimeTravelByVersion(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		table   string
		version int64
		files   int
	}{
		// EXPECTED.md: v0 = 10 rows, v1 = 20, v2 = 30, one file per append (two at v0).
		{"delta-golden/snapshot-data3", 0, -1},
		{"delta-golden/snapshot-data3", 2, -1},
		{"delta-rs/delta-0.2.0", 0, 2},
		{"delta-golden/checkpoint", 10, 1},
		{"delta-golden/checkpoint", 3, 1},
	}
	for _, c := range cases {
		snap, err := New(memFixture(t, c.table), Options{}).SnapshotAt(ctx, c.version)
		if err != nil {
			t.Fatalf("%s@%d: %v", c.table, c.version, err)
		}
		if snap.Version() != c.version || (c.files >= 0 && len(snap.Files()) != c.files) {
			t.Errorf("%s@%d: version %d, %d files; want %d files", c.table, c.version, snap.Version(), len(snap.Files()), c.files)
		}
	}
	// delta-golden/checkpoint: version i adds file i and removes i-1 (file 0 added at v0).
	snap, err := New(memFixture(t, "delta-golden/checkpoint"), Options{}).SnapshotAt(ctx, 12)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Files()) != 1 || snap.Files()[0].Path != "13" {
		t.Errorf("checkpoint@12 files = %v", snap.Files())
	}
	for _, v := range []int64{15, 100} {
		if _, err := New(memFixture(t, "delta-golden/checkpoint"), Options{}).SnapshotAt(ctx, v); !errors.Is(err, ErrVersionNotFound) {
			t.Errorf("SnapshotAt(%d) err = %v, want ErrVersionNotFound", v, err)
		}
	}
	if _, err := New(mem.New(), Options{}).Snapshot(ctx); !errors.Is(err, ErrTableNotFound) {
		t.Errorf("empty bucket: err = %v, want ErrTableNotFound", err)
	}
}

// TestFixtureCheckpointsMatchJSONReplay reads each Spark/delta-rs checkpoint and compares the
// live files, txns, protocol and metadata with a replay of the JSON commits alone (the
// checkpoint deleted), an oracle that shares no code with the Parquet reader.
func TestFixtureCheckpointsMatchJSONReplay(t *testing.T) {
	ctx := context.Background()
	for _, table := range []string{
		"delta-golden/checkpoint", "delta-golden/basic-with-inserts-deletes-checkpoint", "delta-golden/125-iterator-bug",
		"delta-golden/corrupted-last-checkpoint-kernel", "delta-golden/dv-partitioned-with-checkpoint",
		"delta-golden/multi-part-checkpoint", "delta-rs/delta-0.2.0", "delta-rs/checkpoint-v2-table", "delta-golden/v2-checkpoint-json",
	} {
		t.Run(table, func(t *testing.T) {
			b := memFixture(t, table)
			withCP := mustSnapshot(t, New(b, Options{}))
			if withCP.CheckpointVersion() < 0 {
				t.Fatal("not loaded from a checkpoint")
			}
			for info, err := range b.List(ctx, LogDir, objstore.ListOptions{}) {
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(info.Key, ".checkpoint.") || strings.HasSuffix(info.Key, "_last_checkpoint") {
					if err := b.Delete(ctx, info.Key); err != nil {
						t.Fatal(err)
					}
				}
			}
			jsonOnly := mustSnapshot(t, New(b, Options{}))
			if jsonOnly.CheckpointVersion() != -1 {
				t.Fatal("checkpoint still used")
			}
			if got, want := fileState(t, withCP), fileState(t, jsonOnly); got != want {
				t.Errorf("checkpoint state:\n%s\nJSON replay state:\n%s", got, want)
			}
		})
	}
}

// fileState renders live files (dataChange and stats aside: checkpoints record state, and some
// writers drop stats from them), txns, protocol and metadata.
func fileState(t *testing.T, s *Snapshot) string {
	t.Helper()
	var b strings.Builder
	for _, a := range s.Files() {
		c := *a
		c.DataChange, c.Stats = false, ""
		line, err := json.Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	rest, err := json.Marshal([]any{s.Protocol(), s.Metadata(), s.txns, s.Domains()})
	if err != nil {
		t.Fatal(err)
	}
	b.Write(rest)
	return b.String()
}
