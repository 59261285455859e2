package jobs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
			got := recoverRows(t, env.Lake)
			for _, p := range recoverTables {
				if !slices.Equal(got[p], want[p]) {
					t.Errorf("%s: %d rows after the recovery, %d in the undamaged lake (or different rows)", p, len(got[p]), len(want[p]))
				}
			}
		})
	}
}
