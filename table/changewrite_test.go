package table_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/table/cdftest"
	"github.com/medallion-lake/medallion/txlog"
)

var cdfSchema = &txlog.StructType{Fields: []txlog.StructField{
	{Name: "k", Type: txlog.PrimitiveType{Name: txlog.TypeLong}, Nullable: true},
	{Name: "v", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true},
	{Name: "p", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true},
}}

var feedOn = map[string]string{"delta.enableChangeDataFeed": "true"}

func cdfRows(t testing.TB, rows ...[3]any) *pq.Batch {
	t.Helper()
	b, err := pq.NewBatch(cdfSchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		for i, v := range r {
			if err := b.Columns[i].AppendValue(v); err != nil {
				t.Fatal(err)
			}
		}
	}
	return b
}

func newCDFTable(t testing.TB, b objstore.Bucket, parts []string, props map[string]string) *table.Table {
	t.Helper()
	tbl := table.Open(b, table.Options{})
	if _, err := tbl.Create(context.Background(), cdfSchema, parts, props); err != nil {
		t.Fatal(err)
	}
	return tbl
}

// changeRows is a version's change rows as "type k v p" strings, sorted by the caller.
func changeRows(t testing.TB, b objstore.Bucket, v int64) (cdftest.Version, map[string]int) {
	t.Helper()
	vs, err := cdftest.Read(context.Background(), b, v, v)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range vs[0].Rows {
		out[fmt.Sprintf("%s %v %v %v", r.Type, r.Values["k"], r.Values["v"], r.Values["p"])]++
	}
	return vs[0], out
}

// A replaceWhere overwrite of a table with the feed on writes, in its one commit, change
// files under _change_data/ (partitioned like the table) holding the exact difference:
// removed rows not written again are deletes, written rows not removed are inserts, and rows
// merely copied or rewritten equal give nothing.
func TestRewriteWritesDefaultChanges(t *testing.T) {
	ctx := context.Background()
	for _, parts := range [][]string{nil, {"p"}} {
		t.Run(fmt.Sprintf("partitioned=%v", parts != nil), func(t *testing.T) {
			lake := mem.New()
			tbl := newCDFTable(t, lake, parts, feedOn)
			if _, err := tbl.Append(ctx, []*pq.Batch{cdfRows(t, [3]any{int64(1), "a", "x"}, [3]any{int64(2), "b", "x"}, [3]any{int64(3), "c", "y"})}, table.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			// k=2 rewritten as it was, k=1 changed, k=4 new; k=3 (outside) copied.
			res, err := tbl.Overwrite(ctx, sqlexpr.Eq("p", "x"), []*pq.Batch{cdfRows(t, [3]any{int64(1), "A", "x"}, [3]any{int64(2), "b", "x"}, [3]any{int64(4), "d", "x"})}, table.AppendOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ver, got := changeRows(t, lake, res.Version)
			want := map[string]int{"delete 1 a x": 1, "insert 1 A x": 1, "insert 4 d x": 1}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("change rows = %v, want %v", got, want)
			}
			for _, p := range ver.ChangeFiles {
				if !strings.HasPrefix(p, "_change_data/") || (parts != nil && !strings.HasPrefix(p, "_change_data/p=x/")) {
					t.Errorf("change file %s is not under _change_data/ partitioned like the table", p)
				}
			}
			if _, err := cdftest.CheckInvariantC(ctx, tbl); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A rewrite whose rows equal what it replaced changes no row: no change files, and its adds
// and removes are dataChange=false, so the feed's readers see nothing in that version.
func TestRewriteUnchangedRowsCarryNoChangeFiles(t *testing.T) {
	ctx := context.Background()
	lake := mem.New()
	tbl := newCDFTable(t, lake, nil, feedOn)
	rows := cdfRows(t, [3]any{int64(1), "a", "x"}, [3]any{int64(2), "b", "x"})
	if _, err := tbl.Append(ctx, []*pq.Batch{rows}, table.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := tbl.Overwrite(ctx, nil, []*pq.Batch{cdfRows(t, [3]any{int64(2), "b", "x"}, [3]any{int64(1), "a", "x"})}, table.AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ver, got := changeRows(t, lake, res.Version)
	if ver.CDC || ver.DataChange || len(got) != 0 {
		t.Fatalf("version %d: cdc %v, dataChange %v, rows %v; want none", res.Version, ver.CDC, ver.DataChange, got)
	}
	if _, err := cdftest.CheckInvariantC(ctx, tbl); err != nil {
		t.Fatal(err)
	}
	if objs := listUnder(t, lake, "_change_data/"); len(objs) != 0 {
		t.Fatalf("change files left behind: %v", objs)
	}
}

func listUnder(t testing.TB, b objstore.Bucket, prefix string) []string {
	t.Helper()
	var out []string
	for info, err := range b.List(context.Background(), prefix, objstore.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, info.Key)
	}
	return out
}

// Appends, optimize and NoDataChange rewrites write no change data; a table without the feed
// gets none from a rewrite either.
func TestNoChangeFilesWithoutChanges(t *testing.T) {
	ctx := context.Background()
	lake := mem.New()
	tbl := newCDFTable(t, lake, nil, feedOn)
	for k := range 3 {
		if _, err := tbl.Append(ctx, []*pq.Batch{cdfRows(t, [3]any{int64(k), "a", "x"})}, table.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tbl.Optimize(ctx, table.OptimizeOptions{}); err != nil {
		t.Fatal(err)
	}
	snap, err := tbl.Log().Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Rewrite(ctx, table.Rewrite{Snapshot: snap, Candidates: snap.Files(), NoDataChange: true,
		File: func(_ context.Context, _ *txlog.Add, read func() ([]*pq.Batch, error)) (bool, []*pq.Batch, error) {
			rows, err := read()
			return true, rows, err
		},
		Operation: func(table.RewriteResult) txlog.Operation { return txlog.Operation{Name: "BACKFILL"} }}); err != nil {
		t.Fatal(err)
	}
	if objs := listUnder(t, lake, "_change_data/"); len(objs) != 0 {
		t.Fatalf("change files written: %v", objs)
	}
	if _, err := cdftest.CheckInvariantC(ctx, tbl); err != nil {
		t.Fatal(err)
	}

	off := mem.New()
	plain := newCDFTable(t, off, nil, nil)
	if _, err := plain.Append(ctx, []*pq.Batch{cdfRows(t, [3]any{int64(1), "a", "x"})}, table.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Overwrite(ctx, nil, []*pq.Batch{cdfRows(t, [3]any{int64(1), "b", "x"})}, table.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if objs := listUnder(t, off, "_change_data/"); len(objs) != 0 {
		t.Fatalf("change files written with the feed off: %v", objs)
	}
}

// A caller that describes its changes writes them itself: the commit carries exactly those
// rows (here an update pair and a delete), not the default difference.
func TestRewriteCallerChanges(t *testing.T) {
	ctx := context.Background()
	lake := mem.New()
	tbl := newCDFTable(t, lake, nil, feedOn)
	if _, err := tbl.Append(ctx, []*pq.Batch{cdfRows(t, [3]any{int64(1), "a", "x"}, [3]any{int64(2), "b", "x"}, [3]any{int64(3), "c", "x"})}, table.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	snap, err := tbl.Log().Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cw, err := tbl.NewChangeWriter(snap)
	if err != nil || cw == nil {
		t.Fatalf("change writer %v, %v", cw, err)
	}
	res, err := tbl.Rewrite(ctx, table.Rewrite{Snapshot: snap, Candidates: snap.Files(), Changes: cw,
		File: func(ctx context.Context, _ *txlog.Add, read func() ([]*pq.Batch, error)) (bool, []*pq.Batch, error) {
			rows, err := read()
			if err != nil {
				return false, nil, err
			}
			out := cdfRows(t)
			for _, b := range rows {
				for i := range b.Len() {
					switch b.Columns[0].Int64[i] {
					case 1: // updated
						post := cdfRows(t, [3]any{int64(1), "A", "x"})
						if err := cw.WriteRow(ctx, table.ChangePreimage, b, i); err != nil {
							return false, nil, err
						}
						if err := cw.WriteRow(ctx, table.ChangePostimage, post, 0); err != nil {
							return false, nil, err
						}
						out.AppendRow(post, 0)
					case 2: // deleted
						if err := cw.WriteRow(ctx, table.ChangeDelete, b, i); err != nil {
							return false, nil, err
						}
					default:
						out.AppendRow(b, i)
					}
				}
			}
			return true, []*pq.Batch{out}, nil
		},
		Operation: func(table.RewriteResult) txlog.Operation { return txlog.Operation{Name: "MERGE"} }})
	if err != nil {
		t.Fatal(err)
	}
	if res.ChangeRows != (table.ChangeCounts{Deletes: 1, Preimages: 1, Postimages: 1}) || len(res.ChangeFiles) == 0 {
		t.Fatalf("result: %+v %v", res.ChangeRows, res.ChangeFiles)
	}
	_, got := changeRows(t, lake, res.Version)
	want := map[string]int{"delete 2 b x": 1, "update_preimage 1 a x": 1, "update_postimage 1 A x": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("change rows = %v, want %v", got, want)
	}
	if _, err := cdftest.CheckInvariantC(ctx, tbl); err != nil {
		t.Fatal(err)
	}
}

// Random replaceWhere overwrites, appends and optimizes keep invariant C: the feed applied
// from version 0 equals the table at every version.
func TestRewriteRandomInvariantC(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			lake := mem.New()
			var parts []string
			if seed%2 == 1 {
				parts = []string{"p"}
			}
			tbl := newCDFTable(t, lake, parts, feedOn)
			row := func() [3]any {
				return [3]any{int64(rng.IntN(6)), string(rune('a' + rng.IntN(3))), string(rune('x' + rng.IntN(2)))}
			}
			for range 12 {
				var rs [][3]any
				for range rng.IntN(5) {
					rs = append(rs, row())
				}
				var err error
				switch op := rng.IntN(4); op {
				case 0:
					_, err = tbl.Append(ctx, []*pq.Batch{cdfRows(t, rs...)}, table.AppendOptions{})
				case 1:
					_, err = tbl.Optimize(ctx, table.OptimizeOptions{})
				default:
					p := string(rune('x' + rng.IntN(2)))
					var keep [][3]any
					for _, r := range rs {
						r[2] = p
						keep = append(keep, r)
					}
					_, err = tbl.Overwrite(ctx, sqlexpr.Eq("p", p), []*pq.Batch{cdfRows(t, keep...)}, table.AppendOptions{})
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if _, err := cdftest.CheckInvariantC(ctx, tbl); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Creation with the feed on sets a protocol that supports it: writer version 4, or the
// changeDataFeed feature when timestamp_ntz needs writer version 7.
func TestCreateWithChangeDataFeed(t *testing.T) {
	ctx := context.Background()
	ntz := &txlog.StructType{Fields: []txlog.StructField{{Name: "t", Type: txlog.PrimitiveType{Name: txlog.TypeTimestampNTZ}, Nullable: true}}}
	for _, c := range []struct {
		name   string
		schema *txlog.StructType
		props  map[string]string
		want   txlog.Protocol
	}{
		{"feed on", cdfSchema, feedOn, txlog.Protocol{MinReaderVersion: 1, MinWriterVersion: 4}},
		{"feed off", cdfSchema, nil, txlog.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}},
		{"feed on, timestamp_ntz", ntz, feedOn, txlog.Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
			ReaderFeatures: []string{"timestampNtz"}, WriterFeatures: []string{"appendOnly", "invariants", "timestampNtz", "changeDataFeed"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tbl := table.Open(mem.New(), table.Options{})
			if _, err := tbl.Create(ctx, c.schema, nil, c.props); err != nil {
				t.Fatal(err)
			}
			snap, err := tbl.Log().Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := snap.Protocol(); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("protocol = %+v, want %+v", got, c.want)
			}
			if table.ChangeFeedOn(snap) != (c.props != nil) {
				t.Fatalf("ChangeFeedOn = %v", table.ChangeFeedOn(snap))
			}
		})
	}
}

// Vacuum deletes a change data file only when no version within the retention names it:
// files of recent versions stay however old the file is, those of versions past the
// retention go, and so do orphans (a rewrite that died before its commit) past it.
func TestVacuumChangeData(t *testing.T) {
	ctx := context.Background()
	lake := mem.New()
	// mem's modification times are the wall clock: the table's clock starts there, so that
	// every file is older than the cutoff and only the versions decide.
	now := time.Now()
	clock := func() time.Time { return now }
	tbl := table.Open(lake, table.Options{Clock: clock, Log: txlog.Options{Clock: clock}})
	if _, err := tbl.Create(ctx, cdfSchema, nil, feedOn); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Append(ctx, []*pq.Batch{cdfRows(t, [3]any{int64(1), "a", "x"})}, table.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	over := func(v string) int64 {
		res, err := tbl.Overwrite(ctx, nil, []*pq.Batch{cdfRows(t, [3]any{int64(1), v, "x"})}, table.AppendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Version
	}
	old := over("b")
	oldFiles, _ := changeRows(t, lake, old)
	if err := objstore.PutBytes(ctx, lake, "_change_data/cdc-00000-orphan-c000.snappy.parquet", []byte("orphan")); err != nil {
		t.Fatal(err)
	}
	now = now.Add(10 * 24 * time.Hour)
	recent := over("c")
	recentFiles, _ := changeRows(t, lake, recent)
	now = now.Add(10 * 24 * time.Hour)
	res, err := tbl.Vacuum(ctx, table.VacuumOptions{Retention: 15 * 24 * time.Hour, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	deleted := map[string]bool{}
	for _, f := range res.Files {
		deleted[f] = true
	}
	for _, f := range oldFiles.ChangeFiles {
		if !deleted[f] {
			t.Errorf("change file %s of version %d, past the retention, kept", f, old)
		}
	}
	for _, f := range recentFiles.ChangeFiles {
		if deleted[f] {
			t.Errorf("change file %s of version %d, within the retention, deleted", f, recent)
		}
	}
	if !deleted["_change_data/cdc-00000-orphan-c000.snappy.parquet"] {
		t.Error("an orphan change file past the retention was kept")
	}
	if len(oldFiles.ChangeFiles) == 0 || len(recentFiles.ChangeFiles) == 0 {
		t.Fatal("the overwrites wrote no change files")
	}
}
