package late

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// goldVersion is the current version of the table at path.
func goldVersion(t testing.TB, lake objstore.Bucket, path string) int64 {
	t.Helper()
	_, snap := openSnapshot(t, lake, path)
	return snap.Version()
}

// objectCount counts the objects under prefix (data files and log entries).
func objectCount(t testing.TB, lake objstore.Bucket, prefix string) int {
	t.Helper()
	n := 0
	for _, err := range lake.List(context.Background(), prefix, objstore.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// TestReplayUnchanged: a replay that restores damaged windows commits; a second replay of the
// same range recomputes exactly what gold now holds, so it commits nothing (every gold table
// keeps its version and its objects: the files it wrote before comparing are deleted) and its
// report says so.
func TestReplayUnchanged(t *testing.T) {
	lake, cfg, srep := pipeline(t, 11, 4000, 5, "")
	r := replayRange(silverTimes(t, lake), 0.3, 0.6)
	golds := []string{"gold/t5", "gold/s10"}
	for _, g := range golds {
		damage(t, lake, g, r.From.UnixMicro(), r.To.UnixMicro())
	}
	before := map[string]int64{}
	for _, g := range golds {
		before[g] = goldVersion(t, lake, g)
	}
	rep, err := Replay(context.Background(), opts(lake, cfg), r)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range rep.Gold {
		if g.Unchanged || g.Gold == nil || g.Gold.Inserted == 0 {
			t.Fatalf("%s: the replay after damage did not commit: %+v", g.Name, g)
		}
	}
	for _, g := range golds {
		if v := goldVersion(t, lake, g); v <= before[g] {
			t.Fatalf("%s: version %d after the replay that repaired it, %d before", g, v, before[g])
		}
	}
	checkInvariantE(t, lake, srep.WatermarkMs)

	versions, objects, rows := map[string]int64{}, map[string]int{}, map[string][]string{}
	for _, g := range golds {
		versions[g], objects[g], rows[g] = goldVersion(t, lake, g), objectCount(t, lake, g+"/"), goldState(t, lake, g)
	}
	rep, err = Replay(context.Background(), opts(lake, cfg), r)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Gold) != len(golds) {
		t.Fatalf("second replay reported %d golds, want %d", len(rep.Gold), len(golds))
	}
	for _, g := range rep.Gold {
		if !g.Unchanged || g.Gold != nil || g.InputRows == 0 || g.StartFrom == nil {
			t.Errorf("%s: second replay: %+v, want a replay that read rows and committed nothing", g.Name, g)
		}
	}
	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(js), `"unchanged":true`) != len(golds) {
		t.Errorf("report %s does not say unchanged for each gold", js)
	}
	for _, g := range golds {
		if v := goldVersion(t, lake, g); v != versions[g] {
			t.Errorf("%s: version %d after an unchanged replay, want %d", g, v, versions[g])
		}
		if n := objectCount(t, lake, g+"/"); n != objects[g] {
			t.Errorf("%s: %d objects after an unchanged replay, want %d (written files left behind)", g, n, objects[g])
		}
		if got := goldState(t, lake, g); fmt.Sprint(got) != fmt.Sprint(rows[g]) {
			t.Errorf("%s: rows changed", g)
		}
	}
}

// TestReplayUnchangedOneRow: a replay over a gold table that differs from the recomputation
// in a single aggregate of a single row (same windows, keys and row count) still commits and
// puts the right value back.
func TestReplayUnchangedOneRow(t *testing.T) {
	lake, cfg, srep := pipeline(t, 12, 3000, 4, "")
	r := replayRange(silverTimes(t, lake), 0.3, 0.6)
	ctx := context.Background()
	first, err := Replay(ctx, opts(lake, cfg), r)
	if err != nil {
		t.Fatal(err)
	}
	var lo, hi int64 // the window starts replay replaces in gold/t5
	for _, g := range first.Gold {
		if g.Name == "t5" && g.StartFrom != nil {
			lo, hi = g.StartFrom.UnixMicro(), g.StartTo.UnixMicro()
		}
	}
	// Bump the count of one window of the range in place: one file rewritten, every other
	// row the same.
	bumpCount(t, lake, "gold/t5", lo, hi)
	if invariantEDiffs(t, lake, srep.WatermarkMs, func(string, ...any) {}) == 0 {
		t.Fatal("gold equals the batch aggregation after the change: the test proves nothing")
	}
	v := goldVersion(t, lake, "gold/t5")
	rep, err := Replay(ctx, opts(lake, cfg), r)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range rep.Gold {
		if g.Name == "t5" && (g.Unchanged || g.Gold == nil) {
			t.Errorf("t5: replay after a one-row change committed nothing: %+v", g)
		}
	}
	if got := goldVersion(t, lake, "gold/t5"); got != v+1 {
		t.Errorf("gold/t5 version %d after the replay, want %d", got, v+1)
	}
	checkInvariantE(t, lake, srep.WatermarkMs)
}

// TestMergeLateJoinUnchangedGold: a join merge-late run again with nothing new while rows are
// pending replays the windows they touch, and leaves gold's version as it was, as it leaves
// every row; the first merge of each round does commit where a late row changed gold.
func TestMergeLateJoinUnchangedGold(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 18))
	s := newJoinSim(t, mem.New(), simJoin("left_outer", -2*time.Second, 5*time.Second, 10*time.Second, 20*time.Second))
	s.withGold(10 * time.Second)
	idle, commits := 0, 0
	for i, b := range randomWorkload(rng, 120) {
		s.step(b[0], b[1])
		if i%4 != 3 {
			continue
		}
		v0 := goldVersion(t, s.lake, "gold/n_per_ad")
		if rep := s.merge(); rep.Gold != nil && len(rep.Gold.Gold) > 0 && rep.Gold.Gold[0].Gold != nil {
			commits++
		}
		v := goldVersion(t, s.lake, "gold/n_per_ad")
		if v < v0 {
			t.Fatalf("batch %d: gold version went back", i)
		}
		rows := goldState(t, s.lake, "gold/n_per_ad")
		rep := s.merge()
		if got := goldVersion(t, s.lake, "gold/n_per_ad"); got != v {
			t.Fatalf("batch %d: a merge with nothing new moved gold from version %d to %d: %+v", i, v, got, rep.Gold)
		}
		if fmt.Sprint(goldState(t, s.lake, "gold/n_per_ad")) != fmt.Sprint(rows) {
			t.Fatalf("batch %d: a merge with nothing new changed gold's rows", i)
		}
		if rep.PendingRows > 0 && rep.Gold != nil && len(rep.Gold.Gold) > 0 && rep.Gold.Gold[0].StartFrom != nil {
			if !rep.Gold.Gold[0].Unchanged {
				t.Fatalf("batch %d: idle merge replay not reported unchanged: %+v", i, rep.Gold.Gold[0])
			}
			idle++
		}
		s.checkE(fmt.Sprintf("idle merge after batch %d", i))
	}
	if idle == 0 || commits == 0 {
		t.Fatalf("%d idle merges replayed windows of pending rows, %d merges committed gold: the test proves nothing", idle, commits)
	}
}

// TestRowMultiset: equal multisets compare equal whatever the order; a different value, a
// different multiplicity, -0 against 0 or another NaN payload make them differ.
func TestRowMultiset(t *testing.T) {
	schema := &txlog.StructType{Fields: []txlog.StructField{
		{Name: "k", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true},
		{Name: "v", Type: txlog.PrimitiveType{Name: txlog.TypeDouble}, Nullable: true},
	}}
	type row struct {
		k    *string
		v    float64
		null bool
	}
	str := func(s string) *string { return &s }
	build := func(rows []row) *pq.Batch {
		b, err := pq.NewBatch(schema)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.k == nil {
				b.Columns[0].AppendNull()
			} else {
				b.Columns[0].AppendString(*r.k)
			}
			if r.null {
				b.Columns[1].AppendNull()
			} else {
				b.Columns[1].AppendFloat64(r.v)
			}
		}
		return b
	}
	a, bb := str("a"), str("b")
	nan2 := math.Float64frombits(math.Float64bits(math.NaN()) ^ 1)
	for _, tc := range []struct {
		name  string
		x, y  []row
		equal bool
	}{
		{"empty", nil, nil, true},
		{"reordered", []row{{k: a, v: 1}, {k: bb, v: 2}, {k: nil, null: true}}, []row{{k: nil, null: true}, {k: bb, v: 2}, {k: a, v: 1}}, true},
		{"duplicates", []row{{k: a, v: 1}, {k: a, v: 1}, {k: bb, v: 2}}, []row{{k: a, v: 1}, {k: bb, v: 2}, {k: bb, v: 2}}, false},
		{"value", []row{{k: a, v: 1}}, []row{{k: a, v: math.Nextafter(1, 2)}}, false},
		{"negative zero", []row{{k: a, v: 0}}, []row{{k: a, v: math.Copysign(0, -1)}}, false},
		{"nan payload", []row{{k: a, v: math.NaN()}}, []row{{k: a, v: nan2}}, false},
		{"same nan", []row{{k: a, v: math.NaN()}}, []row{{k: a, v: math.NaN()}}, true},
		{"null key", []row{{k: nil, v: 1}}, []row{{k: str(""), v: 1}}, false},
		{"null value", []row{{k: a, null: true}}, []row{{k: a, v: 0}}, false},
		{"row count", []row{{k: a, v: 1}}, []row{{k: a, v: 1}, {k: a, v: 1}}, false},
		{"column boundary", []row{{k: str("ab"), v: 1}}, []row{{k: str("a"), v: 1}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mx, my := newRowMultisets()
			bx, by := build(tc.x), build(tc.y)
			for i := range bx.Len() {
				mx.add(bx, i)
			}
			for i := range by.Len() {
				my.add(by, i)
			}
			if got := mx.equal(my); got != tc.equal {
				t.Errorf("equal = %v, want %v", got, tc.equal)
			}
		})
	}
}

// BenchmarkRowMultiset is the comparison's cost per gold row: the gold rows of
// BenchmarkReplayAggregate's workload (sliding windows, every function of the engine, sketches
// included) added to a multiset, once for the rows replaced and once for the rows written in
// a real replay. Compare its ns/goldrow with that benchmark's cost per gold row.
func BenchmarkRowMultiset(b *testing.B) {
	const rows = 200_000
	const span = int64(6 * time.Hour / time.Microsecond)
	a := testAgg(b, spec.Window{Size: 10 * time.Minute, Slide: 5 * time.Minute})
	h := newHashAgg(a)
	for _, bt := range skewedBatches(b, 1, rows, 8192, 100_000, span) {
		s, err := a.source(bt)
		if err != nil {
			b.Fatal(err)
		}
		sel := allRows(bt.Len())
		if err := h.add(s, sel, math.MinInt64/2, math.MaxInt64/2); err != nil {
			b.Fatal(err)
		}
	}
	out, err := pq.NewBatch(a.gold)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := h.emit(out, nil, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m, _ := newRowMultisets()
		for i := range out.Len() {
			m.add(out, i)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*out.Len()), "ns/goldrow")
	b.ReportMetric(float64(out.Len()), "goldrows")
}

// bumpCount adds one to the count n of one row of the gold table at path whose window starts
// in [lo, hi], in place: one file rewritten, every other row the same. A replay of the range
// then has something to put right.
func bumpCount(t testing.TB, lake objstore.Bucket, path string, lo, hi int64) {
	t.Helper()
	ctx := context.Background()
	tbl, snap := openSnapshot(t, lake, path)
	schema, err := snap.Schema()
	if err != nil {
		t.Fatal(err)
	}
	cnt, win := -1, -1
	for i, f := range schema.Fields {
		switch f.Name {
		case "n":
			cnt = i
		case "window":
			win = i
		}
	}
	if cnt < 0 || win < 0 {
		t.Fatalf("%s has no window or count n: %v", path, schema.Fields)
	}
	bumped := false
	_, err = tbl.Rewrite(ctx, table.Rewrite{Snapshot: snap, Candidates: snap.Files(),
		File: func(ctx context.Context, f *txlog.Add, read func() ([]*pq.Batch, error)) (bool, []*pq.Batch, error) {
			if bumped {
				return false, nil, nil
			}
			bs, err := read()
			if err != nil {
				return false, nil, err
			}
			for _, b := range bs {
				start := b.Columns[win].Children[0].Int64
				for i := range b.Len() {
					if !bumped && start[i] >= lo && start[i] <= hi && !b.Columns[cnt].IsNull(i) {
						b.Columns[cnt].Int64[i]++
						bumped = true
					}
				}
			}
			return bumped, bs, nil
		},
		Operation: func(table.RewriteResult) txlog.Operation { return txlog.Operation{Name: "WRITE"} },
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bumped {
		t.Fatalf("%s: no row in the range to change: the test proves nothing", path)
	}
}
