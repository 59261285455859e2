package table

import (
	"context"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// TestRewriteUnchanged: a rewrite whose Unchanged hook says yes commits nothing and deletes
// the files it wrote; one with a Txn to record, or whose hook says no, commits.
func TestRewriteUnchanged(t *testing.T) {
	ctx := context.Background()
	schema := &txlog.StructType{Fields: []txlog.StructField{{Name: "v", Type: txlog.PrimitiveType{Name: txlog.TypeLong}, Nullable: true}}}
	for _, tc := range []struct {
		name      string
		unchanged bool
		txn       *AppTxn
		commit    bool
	}{
		{"unchanged", true, nil, false},
		{"changed", false, nil, true},
		{"unchanged with txn", true, &AppTxn{AppID: "app", Version: 1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lake := mem.New()
			tbl := Open(lake, Options{})
			if _, err := tbl.Create(ctx, schema, nil, nil); err != nil {
				t.Fatal(err)
			}
			b, err := pq.NewBatch(schema)
			if err != nil {
				t.Fatal(err)
			}
			b.Columns[0].AppendInt64(1)
			if _, err := tbl.Append(ctx, []*pq.Batch{b}, AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			snap, err := tbl.Log().Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			objects := func() int {
				n := 0
				for _, err := range lake.List(ctx, "", objstore.ListOptions{}) {
					if err != nil {
						t.Fatal(err)
					}
					n++
				}
				return n
			}
			before := objects()
			asked := false
			res, err := tbl.Rewrite(ctx, Rewrite{Snapshot: snap, Candidates: snap.Files(), Txn: tc.txn,
				File: func(_ context.Context, _ *txlog.Add, read func() ([]*pq.Batch, error)) (bool, []*pq.Batch, error) {
					rows, err := read()
					return true, rows, err
				},
				Unchanged: func() bool { asked = true; return tc.unchanged },
				Operation: func(RewriteResult) txlog.Operation { return txlog.Operation{Name: "WRITE"} },
			})
			if err != nil {
				t.Fatal(err)
			}
			if asked != (tc.txn == nil) {
				t.Errorf("Unchanged asked: %v, want %v", asked, tc.txn == nil)
			}
			if got := res.Version != snap.Version(); got != tc.commit {
				t.Errorf("committed: %v (version %d, read %d), want %v", got, res.Version, snap.Version(), tc.commit)
			}
			if res.Unchanged == tc.commit {
				t.Errorf("result Unchanged = %v with commit %v", res.Unchanged, tc.commit)
			}
			if !tc.commit {
				if n := objects(); n != before {
					t.Errorf("%d objects after an unchanged rewrite, want %d: its files were left behind", n, before)
				}
				if len(res.Added) != 0 || len(res.Removed) != 0 {
					t.Errorf("unchanged result lists files: %+v", res)
				}
			}
		})
	}
}
