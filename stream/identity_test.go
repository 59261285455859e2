package stream

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/s3/s3test"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// dropLastCommit deletes the latest _delta_log entry of the table at path (and a checkpoint
// of that version with its hint), as an operator "fixing" a torn commit or a restore from an
// older backup would leave it. It returns the version removed.
func dropLastCommit(t testing.TB, lake objstore.Bucket, path string) int64 {
	t.Helper()
	ctx := context.Background()
	snap, err := table.Open(objstore.WithPrefix(lake, path), table.Options{}).Log().Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v := snap.Version()
	b := objstore.WithPrefix(lake, path)
	for info, err := range b.List(ctx, txlog.LogDir, objstore.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(strings.TrimPrefix(info.Key, txlog.LogDir), fmt.Sprintf("%020d.", v)) {
			if err := b.Delete(ctx, info.Key); err != nil {
				t.Fatal(err)
			}
		}
	}
	_ = b.Delete(ctx, txlog.LogDir+"_last_checkpoint")
	if got, err := table.Open(b, table.Options{}).Log().Snapshot(ctx); err != nil || got.Version() != v-1 {
		t.Fatalf("%s: after dropping version %d the table is at %v (%v)", path, v, got, err)
	}
	return v
}

// lakeState is every object key of the lake with its size: a refused run must change none.
func lakeState(t testing.TB, lake objstore.Bucket) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for info, err := range lake.List(context.Background(), "", objstore.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		out[info.Key] = info.Size
	}
	return out
}

// identityLake runs the e2e workload to completion on a copy of one bronze lake and returns
// it with its config and its tables as an uninterrupted run leaves them.
func identityLake(t *testing.T) (objstore.Bucket, func() objstore.Bucket, map[string][]string) {
	t.Helper()
	base := landBronze(t, 11, 2000, 6)
	cfg := parseConfig(t, "2s", "  dedup: [event_id]\n  max_files_per_trigger: 2", e2eGold)
	ref := copyLake(t, base)
	mustRun(t, ref, cfg, "available-now")
	want := snapshotTables(t, ref)
	if len(want["gold/g5"]) == 0 || len(want["silver/late_g5"]) == 0 {
		t.Fatal("the reference run wrote no gold or no quarantine rows: the test would prove little")
	}
	return ref, func() objstore.Bucket { return copyLake(t, ref) }, want
}

func identityConfigRun(t *testing.T, lake objstore.Bucket) (Report, error) {
	t.Helper()
	cfg := parseConfig(t, "2s", "  dedup: [event_id]\n  max_files_per_trigger: 2", e2eGold)
	return runStream(t, lake, cfg, "available-now")
}

// refused runs the stream and wants err to be want, with nothing in the lake changed.
func refused(t *testing.T, lake objstore.Bucket, want error, mention ...string) {
	t.Helper()
	before := lakeState(t, lake)
	_, err := identityConfigRun(t, lake)
	if !errors.Is(err, want) {
		t.Fatalf("the stream ran (err %v); want %v", err, want)
	}
	for _, m := range mention {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("the error does not name %q: %v", m, err)
		}
	}
	if after := lakeState(t, lake); !maps.Equal(before, after) {
		var changed []string
		for k, v := range after {
			if w, ok := before[k]; !ok || w != v {
				changed = append(changed, k)
			}
		}
		for k := range before {
			if _, ok := after[k]; !ok {
				changed = append(changed, k+" (deleted)")
			}
		}
		slices.Sort(changed)
		t.Fatalf("the refused run changed the lake: %v", changed)
	}
}

// TestStreamRefusesLostQueryID is reproduction 2 of issue 30: with metadata deleted while
// offsets, commits and state remain, the stream used to make a new query id, so every table
// took its batches (and merge-late the whole quarantine) as new. It must refuse, and after
// the id is recovered, converge to an uninterrupted run's tables.
func TestStreamRefusesLostQueryID(t *testing.T) {
	ctx := context.Background()
	ref, fresh, want := identityLake(t)
	d := checkpoint.Open(objstore.WithPrefix(ref, "_checkpoints/events"))
	last, err := d.LatestCommit(ctx)
	if err != nil || last < 2 {
		t.Fatalf("the reference run committed up to batch %d (%v): want a few", last, err)
	}
	id, err := d.ReadQueryID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		drop []string
	}{
		{"metadata", []string{"metadata"}},
		{"metadata and the last commit", []string{"metadata", checkpoint.CommitsKey(last)}},
		{"metadata, commits and progress of the last batch", []string{"metadata", checkpoint.CommitsKey(last), checkpoint.ProgressKey(last)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lake := fresh()
			ck := objstore.WithPrefix(lake, "_checkpoints/events")
			for _, k := range tc.drop {
				if err := ck.Delete(ctx, k); err != nil {
					t.Fatal(err)
				}
			}
			refused(t, lake, checkpoint.ErrQueryIDLost, "_checkpoints/events", "metadata", "query-id")
			got, err := RecoverQueryID(ctx, lake, "_checkpoints/events", []string{"silver/events", "gold/g5"})
			if err != nil {
				t.Fatal(err)
			}
			if got.QueryID != id || !got.Written {
				t.Fatalf("recovered %+v, want the id %s written", got, id)
			}
			mustRun(t, lake, parseConfig(t, "2s", "  dedup: [event_id]\n  max_files_per_trigger: 2", e2eGold), "available-now")
			sameTables(t, "after recover-id", snapshotTables(t, lake), want)
		})
	}
}

// TestRecoverQueryIDRefusesDisagreement: when the tables hold the txn of another query at the
// same batches (two ids), recover-id refuses and writes nothing.
func TestRecoverQueryIDRefusesDisagreement(t *testing.T) {
	ctx := context.Background()
	_, fresh, _ := identityLake(t)
	lake := fresh()
	ck := objstore.WithPrefix(lake, "_checkpoints/events")
	if err := ck.Delete(ctx, "metadata"); err != nil {
		t.Fatal(err)
	}
	// A progress file of a foreign query.
	if err := objstore.PutBytes(ctx, ck, checkpoint.ProgressKey(999), []byte(`{"id":"0b4c2a3e-6a55-4a8c-9d7e-2a0a2b1c9f11"}`)); err != nil {
		t.Fatal(err)
	}
	before := lakeState(t, lake)
	if _, err := RecoverQueryID(ctx, lake, "_checkpoints/events", nil); !errors.Is(err, ErrRecoveryUnsafe) {
		t.Fatalf("recover-id with two ids in evidence: %v, want ErrRecoveryUnsafe", err)
	}
	if !maps.Equal(before, lakeState(t, lake)) {
		t.Fatal("a refused recover-id changed the lake")
	}
}

// TestStreamRefusesTableBehind is reproduction 3 of issue 30 for the stream: a table whose
// last _delta_log entry was deleted (silver, gold, a quarantine: tables the stream writes;
// bronze: the table it reads) used to go unnoticed. The stream must refuse, naming the table,
// and for a table it writes, Rollback and a rerun must converge to an uninterrupted run.
func TestStreamRefusesTableBehind(t *testing.T) {
	ctx := context.Background()
	_, fresh, want := identityLake(t)
	for _, path := range []string{"silver/events", "gold/g5", "silver/late_g10", "bronze/rejects"} {
		t.Run(path, func(t *testing.T) {
			lake := fresh()
			dropLastCommit(t, lake, path)
			refused(t, lake, checkpoint.ErrTableBehind, path, "_checkpoints/events", "rollback")
			rb, err := Rollback(ctx, lake, "_checkpoints/events")
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := rb.Behind[path]; !ok || rb.To >= rb.From {
				t.Fatalf("rollback %+v does not name %s or roll anything back", rb, path)
			}
			mustRun(t, lake, parseConfig(t, "2s", "  dedup: [event_id]\n  max_files_per_trigger: 2", e2eGold), "available-now")
			sameTables(t, "after rollback", snapshotTables(t, lake), want)
			// A rollback with nothing behind does nothing.
			again, err := Rollback(ctx, lake, "_checkpoints/events")
			if err != nil || again.To != again.From || len(again.Behind) != 0 {
				t.Fatalf("a second rollback: %+v, %v; want nothing to do", again, err)
			}
		})
	}
	t.Run("bronze", func(t *testing.T) {
		lake := fresh()
		dropLastCommit(t, lake, "bronze/events")
		refused(t, lake, checkpoint.ErrTableBehind, "bronze/events", "ingest")
		// The documented recovery: the ingest refuses too, rolls back, writes the lost
		// version again from the same landing objects; then the stream goes on.
		x := e2eIngester(t, lake)
		if _, err := x.Run(ctx); !errors.Is(err, bronze.ErrTableBehind) {
			t.Fatalf("ingest with bronze behind: %v, want bronze.ErrTableBehind", err)
		}
		if _, err := x.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := x.Run(ctx); err != nil {
			t.Fatal(err)
		}
		mustRun(t, lake, parseConfig(t, "2s", "  dedup: [event_id]\n  max_files_per_trigger: 2", e2eGold), "available-now")
		sameTables(t, "after the ingest's rollback", snapshotTables(t, lake), want)
	})
}

// e2eIngester is landBronze's ingester.
func e2eIngester(t *testing.T, lake objstore.Bucket) *bronze.Ingester {
	t.Helper()
	x, err := bronze.NewIngester(lake, bronze.IngestOptions{LandingPrefix: "landing/events/", Declared: declared(),
		BronzePath: "bronze/events", RejectsPath: "bronze/rejects", CheckpointPath: "_checkpoints/ingest",
		MaxFilesPerTrigger: 1, FlushRows: 400, Workers: 1,
		Clock: func() time.Time { return time.Date(2024, 5, 1, 6, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// TestStreamRerunAfterTableCommitIsNotBehind: a kill between a table's commit and commits/N
// is the normal resume path (the table holds the txn the checkpoint lacks), never refused.
func TestStreamRerunAfterTableCommitIsNotBehind(t *testing.T) {
	ctx := context.Background()
	_, fresh, want := identityLake(t)
	lake := fresh()
	d := checkpoint.Open(objstore.WithPrefix(lake, "_checkpoints/events"))
	last, err := d.LatestCommit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.RemoveCommit(ctx, last); err != nil {
		t.Fatal(err)
	}
	mustRun(t, lake, parseConfig(t, "2s", "  dedup: [event_id]\n  max_files_per_trigger: 2", e2eGold), "available-now")
	sameTables(t, "after the re-run of the last batch", snapshotTables(t, lake), want)
}

// TestJoinRefusesLostIDAndTablesBehind: the join query checks its identity as a source query
// does: a lost metadata, its joined table or an aggregation's gold gone back, and a silver
// input gone back are refused with nothing written; recover-id and Rollback converge to an
// uninterrupted run.
func TestJoinRefusesLostIDAndTablesBehind(t *testing.T) {
	ctx := context.Background()
	base := joinWorkload(t, 3, 8)
	j := crashJoin()
	ref := copyLake(t, base)
	runJoin(t, ref, j, spec.AvailableNow)
	want := joinSnapshot(t, ref)
	refusedJoin := func(t *testing.T, lake objstore.Bucket, want error, mention string) {
		t.Helper()
		before := lakeState(t, lake)
		_, err := tryJoin(lake, j, spec.AvailableNow, nil)
		if !errors.Is(err, want) || !strings.Contains(err.Error(), mention) {
			t.Fatalf("the join ran (err %v); want %v naming %s", err, want, mention)
		}
		if !maps.Equal(before, lakeState(t, lake)) {
			t.Fatal("the refused join changed the lake")
		}
	}
	t.Run("metadata", func(t *testing.T) {
		lake := copyLake(t, ref)
		if err := objstore.WithPrefix(lake, "_checkpoints/j").Delete(ctx, "metadata"); err != nil {
			t.Fatal(err)
		}
		refusedJoin(t, lake, checkpoint.ErrQueryIDLost, "_checkpoints/j")
		if _, err := RecoverQueryID(ctx, lake, "_checkpoints/j", joinTables); err != nil {
			t.Fatal(err)
		}
		runJoin(t, lake, j, spec.AvailableNow)
		sameJoinTables(t, "after recover-id", joinSnapshot(t, lake), want)
	})
	for _, path := range []string{"gold/joined", "gold/jcount"} {
		t.Run(path, func(t *testing.T) {
			lake := copyLake(t, ref)
			dropLastCommit(t, lake, path)
			refusedJoin(t, lake, checkpoint.ErrTableBehind, path)
			if _, err := Rollback(ctx, lake, "_checkpoints/j"); err != nil {
				t.Fatal(err)
			}
			runJoin(t, lake, j, spec.AvailableNow)
			sameJoinTables(t, "after rollback", joinSnapshot(t, lake), want)
		})
	}
	t.Run("silver input", func(t *testing.T) {
		lake := copyLake(t, ref)
		dropLastCommit(t, lake, "silver/clk")
		refusedJoin(t, lake, checkpoint.ErrTableBehind, "silver/clk")
	})
}

// TestTableMarksSkippedKeepsOwnVersion: a write skipped because the table already held the
// batch's txn (a re-run) records the batch but not the snapshot's version, which may be
// another writer's later commit (ingest's, on the shared rejects table): losing that commit
// must not read as this query's table being behind.
func TestTableMarksSkippedKeepsOwnVersion(t *testing.T) {
	silverT, rejectsT, goldT := &table.Table{}, &table.Table{}, &table.Table{}
	paths := map[*table.Table]string{silverT: "silver", rejectsT: "rejects", goldT: "gold"}
	prev := map[string]checkpoint.TableMark{"silver": {Batch: 3, Version: 7}, "rejects": {Batch: 2, Version: 9}, "gold": {Batch: 1, Version: 2}}
	for _, tc := range []struct {
		name  string
		write func(m *tableMarks)
		want  map[string]checkpoint.TableMark
	}{
		{"committed", func(m *tableMarks) { m.wrote(silverT, 8, false); m.wrote(rejectsT, 12, false) },
			map[string]checkpoint.TableMark{"silver": {Batch: 4, Version: 8}, "rejects": {Batch: 4, Version: 12}, "gold": {Batch: 1, Version: 2}}},
		{"skipped", func(m *tableMarks) { m.wrote(silverT, 8, true); m.wrote(rejectsT, 40, true) },
			map[string]checkpoint.TableMark{"silver": {Batch: 4, Version: 7}, "rejects": {Batch: 4, Version: 9}, "gold": {Batch: 1, Version: 2}}},
		{"not written", func(m *tableMarks) { m.wrote(silverT, -1, false) }, prev},
		{"skipped, first record", func(m *tableMarks) { m.wrote(goldT, 5, true) },
			map[string]checkpoint.TableMark{"silver": {Batch: 3, Version: 7}, "rejects": {Batch: 2, Version: 9}, "gold": {Batch: 4, Version: 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTableMarks(4, paths)
			tc.write(m)
			if got := m.over(prev); !maps.Equal(got, tc.want) {
				t.Fatalf("marks %v, want %v", got, tc.want)
			}
		})
	}
	var none *tableMarks
	none.wrote(silverT, 3, false) // a batch without marks records nothing, and does not panic
}

// TestStreamIdentityMinIO is reproductions 2 and 3 on a real MinIO server (skipped without
// one: scripts/minio.sh run -- go test ./stream/): the lost id and silver's lost last commit
// are refused, and their recoveries converge.
func TestStreamIdentityMinIO(t *testing.T) {
	ctx := context.Background()
	ref, _, want := identityLake(t)
	cfg := parseConfig(t, "2s", "  dedup: [event_id]\n  max_files_per_trigger: 2", e2eGold)
	t.Run("lost id", func(t *testing.T) {
		lake := s3test.NewTestBucket(t)
		copyInto(t, ref, lake)
		if err := lake.Delete(ctx, "_checkpoints/events/metadata"); err != nil {
			t.Fatal(err)
		}
		refused(t, lake, checkpoint.ErrQueryIDLost, "metadata")
		if _, err := RecoverQueryID(ctx, lake, "_checkpoints/events", nil); err != nil {
			t.Fatal(err)
		}
		mustRun(t, lake, cfg, "available-now")
		sameTables(t, "after recover-id", snapshotTables(t, lake), want)
	})
	t.Run("silver behind", func(t *testing.T) {
		lake := s3test.NewTestBucket(t)
		copyInto(t, ref, lake)
		dropLastCommit(t, lake, "silver/events")
		refused(t, lake, checkpoint.ErrTableBehind, "silver/events")
		if _, err := Rollback(ctx, lake, "_checkpoints/events"); err != nil {
			t.Fatal(err)
		}
		mustRun(t, lake, cfg, "available-now")
		sameTables(t, "after rollback", snapshotTables(t, lake), want)
	})
}
