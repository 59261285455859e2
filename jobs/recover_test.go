package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/gen"
	"github.com/medallion-lake/medallion/internal/testutil"
	"github.com/medallion-lake/medallion/late"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/table/source"
	"github.com/medallion-lake/medallion/txlog"
)

func recoverConfig(t *testing.T, dir string) *config.Pipeline {
	t.Helper()
	return testutil.Pipeline(t, fmt.Sprintf(`
lake: %s
landing: {path: landing/events/, max_files_per_trigger: 2}
`+testutil.EventsSchema+`stream: {watermark: 5s, dedup: [event_id], max_files_per_trigger: 1}
gold:
  - name: events_5s
    window: {type: tumbling, size: 5s}
    group_by: [event_type]
    aggregates: [{fn: count, as: count}, {fn: sum, column: amount, as: total}]
`, dir))
}

// recoverEnv is the pipeline's environment on the file lake dir, with a fixed clock so that
// two lakes run through the same jobs hold the same rows.
func recoverEnv(t *testing.T, dir string) Env {
	t.Helper()
	env, err := NewEnv(context.Background(), recoverConfig(t, dir), discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Lake.Close() })
	env.Clock = func() time.Time { return time.Date(2024, 5, 2, 0, 0, 0, 0, time.UTC) }
	return env
}

// recoverTables are the tables the jobs write; rows as sorted JSON lines, without query ids.
var recoverTables = []string{"bronze/events", "bronze/rejects", "silver/events", "silver/late_events_5s", "gold/events_5s"}

func recoverRows(t *testing.T, lake objstore.Bucket) map[string][]string {
	t.Helper()
	ctx := context.Background()
	out := map[string][]string{}
	for _, p := range recoverTables {
		tbl := table.Open(objstore.WithPrefix(lake, p), table.Options{})
		snap, err := tbl.Latest(ctx)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		schema, _ := snap.Schema()
		var cols []string
		for _, f := range schema.Fields {
			if f.Name != silver.ColQueryID {
				cols = append(cols, f.Name)
			}
		}
		for b, err := range tbl.Scan(ctx, table.ScanOptions{Columns: cols}) {
			if err != nil {
				t.Fatal(err)
			}
			for i := range b.Len() {
				out[p] = append(out[p], string(pq.AppendJSONRow(nil, b, i)))
			}
		}
		slices.Sort(out[p])
	}
	return out
}

func ingestStreamMerge(t *testing.T, env Env) late.MergeReport {
	t.Helper()
	ctx := context.Background()
	if _, err := Ingest(ctx, env); err != nil {
		t.Fatal(err)
	}
	if _, err := Stream(ctx, env, config.Trigger{}, nil); err != nil {
		t.Fatal(err)
	}
	rep, err := MergeLate(ctx, env, "")
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func dropLastLogEntry(t *testing.T, lake objstore.Bucket, path string) {
	t.Helper()
	ctx := context.Background()
	b := objstore.WithPrefix(lake, path)
	snap, err := table.Open(b, table.Options{}).Log().Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, txlog.CommitKey(snap.Version())); err != nil {
		t.Fatal(err)
	}
	_ = b.Delete(ctx, txlog.LogDir+"_last_checkpoint")
}

// restoreTable commits what Delta's RESTORE (Spark's RESTORE TABLE, delta-rs's restore) commits
// to the table at path: the files of version to back, the files added since removed, every txn
// kept, and a commitInfo naming the operation and the version as a string, as both write it.
// It returns the restore's version.
func restoreTable(t *testing.T, lake objstore.Bucket, path string, to int64) int64 {
	t.Helper()
	ctx := context.Background()
	tbl := table.Open(objstore.WithPrefix(lake, path), table.Options{})
	latest, err := tbl.Log().Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	target, err := tbl.Log().SnapshotAt(ctx, to)
	if err != nil {
		t.Fatal(err)
	}
	in := func(s *txlog.Snapshot) map[string]*txlog.Add {
		m := map[string]*txlog.Add{}
		for _, a := range s.Files() {
			m[a.Path] = a
		}
		return m
	}
	have, want := in(latest), in(target)
	// Written as another tool writes it, without our writer's rules: a restore carries no
	// change data files even with the feed on (readers infer the change from its adds and
	// removes), and it removes files from an append-only stream's point of view.
	actions := []txlog.Action{{CommitInfo: &txlog.CommitInfo{Timestamp: time.Now().UnixMilli(), Operation: txlog.OperationRestore,
		OperationParameters: map[string]json.RawMessage{"version": json.RawMessage(strconv.Quote(fmt.Sprint(to)))}}}}
	for p, a := range have {
		if want[p] == nil {
			actions = append(actions, txlog.Action{Remove: tbl.RemoveOf(a, true)})
		}
	}
	for p, a := range want {
		if have[p] == nil {
			actions = append(actions, txlog.Action{Add: a})
		}
	}
	data, err := txlog.MarshalActions(actions)
	if err != nil {
		t.Fatal(err)
	}
	v := latest.Version() + 1
	if err := objstore.PutBytes(ctx, objstore.WithPrefix(lake, path), txlog.CommitKey(v), data); err != nil {
		t.Fatal(err)
	}
	return v
}

// withoutLateRows is rows with gold's late_rows values taken out.
func withoutLateRows(rows map[string][]string) map[string][]string {
	re := regexp.MustCompile(`"late_rows":[0-9]+`)
	out := map[string][]string{}
	for p, rs := range rows {
		for _, r := range rs {
			out[p] = append(out[p], re.ReplaceAllString(r, `"late_rows":-`))
		}
		slices.Sort(out[p])
	}
	return out
}

// latestVersion is the latest version of the table at path.
func latestVersion(t *testing.T, lake objstore.Bucket, path string) int64 {
	t.Helper()
	snap, err := table.Open(objstore.WithPrefix(lake, path), table.Options{}).Log().Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return snap.Version()
}

// TestRecoveryConverges runs the issue-30 reproductions 2 and 3 end to end on a file lake
// (ingest, stream, merge-late): each damage makes the jobs that depend on it refuse, and the
// documented recovery (medallion recover query-id | rollback, then the jobs again) leaves every
// table as the undamaged lake after the same jobs: nothing lost, nothing counted twice.
func TestRecoveryConverges(t *testing.T) {
	ctx := context.Background()
	refDir := t.TempDir()
	ref := recoverEnv(t, refDir)
	opts := gen.DefaultOptions()
	opts.Seed, opts.Lines, opts.Files, opts.Rate = 5, 3000, 6, 200
	opts.DuplicateFraction, opts.LateResendFraction = 0.03, 0.3
	if _, err := gen.Generate(ctx, ref.Lake, opts); err != nil {
		t.Fatal(err)
	}
	first := ingestStreamMerge(t, ref)
	want := recoverRows(t, ref.Lake)
	lateRows := int64(0)
	for _, g := range first.Gold {
		lateRows += g.LateRows
	}
	if lateRows == 0 || len(want["gold/events_5s"]) == 0 {
		t.Fatalf("the workload gave merge-late no late rows (%+v): the test would prove little", first)
	}
	// undo holds, per subtest, how to take its damage back where that is the recovery.
	undo := map[string]func(){}
	// restoreBack restores the table at path to back versions before its latest, with the
	// restore's undo (a restore to the version before it) as the subtest's recovery.
	restoreBack := func(t *testing.T, env Env, path string, back int64) {
		restored := restoreTable(t, env.Lake, path, latestVersion(t, env.Lake, path)-back)
		undo[t.Name()] = func() { restoreTable(t, env.Lake, path, restored-1) }
	}
	// rebuiltGold names the cases whose recovery rebuilds gold (a refresh): its late_rows
	// count only the rows merge-late adds after it (docs/derived-tables.md), so they are not
	// compared.
	rebuiltGold := map[string]bool{"gold restored to before merge-late": true}
	for _, tc := range []struct {
		name    string
		damage  func(t *testing.T, env Env)
		refuses func(t *testing.T, env Env)
		recover func(t *testing.T, env Env)
	}{
		{"lost query id and last commit",
			func(t *testing.T, env Env) {
				ck := objstore.WithPrefix(env.Lake, env.Config.Stream.Checkpoint)
				last, err := checkpoint.Open(ck).LatestCommit(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range []string{"metadata", checkpoint.CommitsKey(last)} {
					if err := ck.Delete(ctx, k); err != nil {
						t.Fatal(err)
					}
				}
			},
			func(t *testing.T, env Env) {
				if _, err := Stream(ctx, env, config.Trigger{}, nil); !errors.Is(err, checkpoint.ErrQueryIDLost) {
					t.Fatalf("stream: %v, want ErrQueryIDLost", err)
				}
				if _, err := MergeLate(ctx, env, ""); !errors.Is(err, checkpoint.ErrQueryIDLost) {
					t.Fatalf("merge-late: %v, want ErrQueryIDLost (a new id merges the whole quarantine again)", err)
				}
			},
			func(t *testing.T, env Env) {
				if rep, err := RecoverID(ctx, env, "", false); err != nil || !rep.Written {
					t.Fatalf("recover query-id: %+v %v", rep, err)
				}
			}},
		{"bronze behind",
			func(t *testing.T, env Env) { dropLastLogEntry(t, env.Lake, "bronze/events") },
			func(t *testing.T, env Env) {
				if _, err := Ingest(ctx, env); !errors.Is(err, bronze.ErrTableBehind) {
					t.Fatalf("ingest: %v, want bronze.ErrTableBehind", err)
				}
				if _, err := Stream(ctx, env, config.Trigger{}, nil); !errors.Is(err, checkpoint.ErrTableBehind) {
					t.Fatalf("stream: %v, want ErrTableBehind", err)
				}
			},
			func(t *testing.T, env Env) {
				if rep, err := Rollback(ctx, env, "", true); err != nil || rep.ToBatch >= rep.FromBatch {
					t.Fatalf("recover rollback --ingest: %+v %v", rep, err)
				}
			}},
		{"silver behind",
			func(t *testing.T, env Env) { dropLastLogEntry(t, env.Lake, "silver/events") },
			func(t *testing.T, env Env) {
				if _, err := Stream(ctx, env, config.Trigger{}, nil); !errors.Is(err, checkpoint.ErrTableBehind) {
					t.Fatalf("stream: %v, want ErrTableBehind", err)
				}
				// Replay from a silver without the lost batch would replace gold's windows with less.
				day := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
				if _, err := Replay(ctx, env, "", late.Range{From: day, To: day.Add(24 * time.Hour)}); !errors.Is(err, checkpoint.ErrTableBehind) {
					t.Fatalf("replay: %v, want ErrTableBehind", err)
				}
			},
			func(t *testing.T, env Env) {
				if rep, err := Rollback(ctx, env, "", false); err != nil || rep.ToBatch >= rep.FromBatch {
					t.Fatalf("recover rollback: %+v %v", rep, err)
				}
			}},
		{"gold behind the stream",
			func(t *testing.T, env Env) {
				// merge-late's commit and the stream's before it.
				dropLastLogEntry(t, env.Lake, "gold/events_5s")
				dropLastLogEntry(t, env.Lake, "gold/events_5s")
			},
			func(t *testing.T, env Env) {
				if _, err := MergeLate(ctx, env, ""); !errors.Is(err, checkpoint.ErrTableBehind) {
					t.Fatalf("merge-late: %v, want ErrTableBehind (its inserts would meet the stream's re-run)", err)
				}
				if _, err := Stream(ctx, env, config.Trigger{}, nil); !errors.Is(err, checkpoint.ErrTableBehind) {
					t.Fatalf("stream: %v, want ErrTableBehind", err)
				}
			},
			func(t *testing.T, env Env) {
				if rep, err := Rollback(ctx, env, "", false); err != nil || rep.ToBatch >= rep.FromBatch {
					t.Fatalf("recover rollback: %+v %v", rep, err)
				}
			}},
		{"silver restored",
			func(t *testing.T, env Env) { restoreBack(t, env, "silver/events", 2) },
			func(t *testing.T, env Env) {
				if _, err := Stream(ctx, env, config.Trigger{}, nil); !errors.Is(err, checkpoint.ErrTableBehind) || !strings.Contains(err.Error(), "RESTORE") {
					t.Fatalf("stream: %v, want ErrTableBehind naming the restore", err)
				}
				day := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
				if _, err := Replay(ctx, env, "", late.Range{From: day, To: day.Add(24 * time.Hour)}); !errors.Is(err, checkpoint.ErrTableBehind) {
					t.Fatalf("replay: %v, want ErrTableBehind (gold's windows from a silver without the restored-away batches)", err)
				}
			},
			func(t *testing.T, env Env) { undo[t.Name()]() }},
		{"gold restored to before merge-late",
			func(t *testing.T, env Env) {
				restoreTable(t, env.Lake, "gold/events_5s", latestVersion(t, env.Lake, "gold/events_5s")-1)
			},
			func(t *testing.T, env Env) {
				if _, err := MergeLate(ctx, env, ""); !errors.Is(err, checkpoint.ErrTableBehind) || !strings.Contains(err.Error(), "refresh") {
					t.Fatalf("merge-late: %v, want ErrTableBehind naming refresh (it would take its lost rows for merged)", err)
				}
			},
			func(t *testing.T, env Env) {
				if _, err := Refresh(ctx, env, "events_5s"); err != nil {
					t.Fatalf("refresh: %v", err)
				}
			}},
		{"gold restored to before the stream's batches",
			func(t *testing.T, env Env) { restoreBack(t, env, "gold/events_5s", 3) },
			func(t *testing.T, env Env) {
				if _, err := Stream(ctx, env, config.Trigger{}, nil); !errors.Is(err, checkpoint.ErrTableBehind) {
					t.Fatalf("stream: %v, want ErrTableBehind", err)
				}
				if _, err := MergeLate(ctx, env, ""); !errors.Is(err, checkpoint.ErrTableBehind) {
					t.Fatalf("merge-late: %v, want ErrTableBehind", err)
				}
			},
			func(t *testing.T, env Env) { undo[t.Name()]() }},
		{"quarantine behind",
			func(t *testing.T, env Env) { dropLastLogEntry(t, env.Lake, "silver/late_events_5s") },
			func(t *testing.T, env Env) {
				if _, err := MergeLate(ctx, env, ""); !errors.Is(err, checkpoint.ErrTableBehind) {
					t.Fatalf("merge-late: %v, want ErrTableBehind", err)
				}
				if _, err := Stream(ctx, env, config.Trigger{}, nil); !errors.Is(err, checkpoint.ErrTableBehind) {
					t.Fatalf("stream: %v, want ErrTableBehind", err)
				}
			},
			func(t *testing.T, env Env) {
				if rep, err := Rollback(ctx, env, "", false); err != nil || rep.ToBatch >= rep.FromBatch {
					t.Fatalf("recover rollback: %+v %v", rep, err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "lake")
			if err := os.CopyFS(dir, os.DirFS(refDir)); err != nil {
				t.Fatal(err)
			}
			env := recoverEnv(t, dir)
			tc.damage(t, env)
			tc.refuses(t, env)
			tc.recover(t, env)
			ingestStreamMerge(t, env)
			got, want := recoverRows(t, env.Lake), want
			if rebuiltGold[tc.name] {
				got, want = withoutLateRows(got), withoutLateRows(want)
			}
			for _, p := range recoverTables {
				if !slices.Equal(got[p], want[p]) {
					t.Errorf("%s: %d rows after the recovery, %d in the undamaged lake (or different rows)", p, len(got[p]), len(want[p]))
				}
			}
		})
	}
}

// TestRestoredBronzeIsRefused: a RESTORE of bronze to before the ingest's last recorded commit
// keeps every txn, so the ingest used to take the restored-away objects for ingested. It
// refuses now, naming the restore and its undo; the stream refuses to read the restore (it
// cannot un-read rows, and ignoring it would count the rows an undo brings back twice).
// Removing the restore's log entry while it is the latest takes bronze back exactly.
func TestRestoredBronzeIsRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	env := recoverEnv(t, dir)
	opts := gen.DefaultOptions()
	opts.Seed, opts.Lines, opts.Files, opts.Rate = 7, 1500, 4, 200
	if _, err := gen.Generate(ctx, env.Lake, opts); err != nil {
		t.Fatal(err)
	}
	if _, err := Ingest(ctx, env); err != nil {
		t.Fatal(err)
	}
	if _, err := Stream(ctx, env, config.Trigger{}, nil); err != nil {
		t.Fatal(err)
	}
	v := latestVersion(t, env.Lake, "bronze/events")
	restored := restoreTable(t, env.Lake, "bronze/events", v-1)
	_, err := Ingest(ctx, env)
	if !errors.Is(err, bronze.ErrTableBehind) {
		t.Fatalf("ingest after a restore of bronze: %v, want bronze.ErrTableBehind", err)
	}
	for _, m := range []string{"bronze/events", "RESTORE", fmt.Sprintf("restore(%d)", restored-1)} {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("the ingest's error does not name %q: %v", m, err)
		}
	}
	if _, err := Stream(ctx, env, config.Trigger{}, nil); !errors.Is(err, source.ErrDataRemoved) || !strings.Contains(err.Error(), "RESTORE") {
		t.Fatalf("stream over a restored bronze: %v, want ErrDataRemoved naming the restore", err)
	}
	// The documented way out for bronze: the restore's log entry removed while it is the
	// latest, the table is as before it, and both jobs go on.
	if err := objstore.WithPrefix(env.Lake, "bronze/events").Delete(ctx, txlog.CommitKey(restored)); err != nil {
		t.Fatal(err)
	}
	if _, err := Ingest(ctx, env); err != nil {
		t.Fatalf("ingest after the restore's entry was removed: %v", err)
	}
	if _, err := Stream(ctx, env, config.Trigger{}, nil); err != nil {
		t.Fatalf("stream after the restore's entry was removed: %v", err)
	}
}
