package late

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
)

// TestDerivedOverJoinGold: a rollup (30s by ad) of a gold over a join (the join simulation's
// 10s count per ad, fed as the stream runs the join) kept by derive passes interleaved with
// the stream's batches and the join's merge-late, which replays the gold windows its merged
// pairs touch. After every merge and pass the rollup equals the count per 30s window and ad of the
// oracle's batch join, for every window the join's output watermark has closed; its change
// feed replays to it (invariant C) with corrections as update pairs.
func TestDerivedOverJoinGold(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 33))
	s := newJoinSim(t, mem.New(), simJoin("full_outer", -2*time.Second, 5*time.Second, 10*time.Second, 20*time.Second))
	s.withGold(10 * time.Second)
	d := spec.Derived{Name: "n_30s", Table: "gold/n_30s", Upstream: "n_per_ad", UpstreamTable: "gold/n_per_ad",
		Size: 30 * time.Second, GroupBy: []string{"ad"}, Aggregates: []spec.Rollup{{Fn: "sum", Column: "n", As: "n"}},
		Checkpoint: s.j.Checkpoint, Join: &s.j}
	o := Options{Lake: s.lake}
	merges, corrected := 0, 0
	derive := func() DeriveReport {
		reps, err := DeriveAll(ctx, o, []spec.Derived{d})
		if err != nil {
			t.Fatal(err)
		}
		if r := reps[0]; r.FromVersion >= 0 && r.Commit != nil && r.ChangeRows > 0 {
			corrected++
		}
		return reps[0]
	}
	for i, b := range randomWorkload(rng, 120) {
		s.step(b[0], b[1])
		switch rng.IntN(6) {
		case 0: // a pass before the join's late pairs are merged: checked after the merge
			derive()
		case 1:
			if rep := s.merge(); rep.Gold != nil {
				merges++
			}
			derive()
			checkRollupOverJoin(t, s, d, fmt.Sprintf("pass after the merge after batch %d", i))
		}
	}
	s.merge()
	if _, err := DeriveAll(ctx, o, []spec.Derived{d}); err != nil {
		t.Fatal(err)
	}
	checkRollupOverJoin(t, s, d, "final pass")
	t.Logf("%d join merges replayed the gold, %d passes changed rows the rollup had written", merges, corrected)
	if merges == 0 || corrected == 0 {
		t.Fatalf("%d join merges replayed the gold, %d passes changed the rollup: the test proves nothing", merges, corrected)
	}
	checkUpdatePairs(t, checkFeed(t, s.lake, d.Table), "ad")
}

// checkRollupOverJoin compares the derived table with the count per (30s window, left ad) of
// the oracle's joined rows that have a left side, over the windows ending at or before the
// watermark the table emitted to (which must be the join's output watermark of the last batch).
func checkRollupOverJoin(t *testing.T, s *joinSim, d spec.Derived, what string) {
	t.Helper()
	tb := s.open(d.Table)
	snap, err := tb.Latest(s.ctx)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	wmMs, ok := snap.TxnVersion(DerivedWatermarkApp + d.Name)
	if !ok {
		return // nothing emitted yet
	}
	p, _ := newJoinPlan(&s.j)
	if out := p.spec.OutputWatermark(s.lastEvict); wmMs != out {
		t.Fatalf("%s: emitted watermark %d, the join's output watermark is %d", what, wmMs, out)
	}
	size := d.Size.Microseconds()
	want := map[[2]string]int64{}
	for _, row := range s.oracle(s.lastEvict) {
		left := row[:strings.IndexByte(row, '|')]
		if left == "-" {
			continue
		}
		var tt int64
		fmt.Sscan(left[strings.LastIndexByte(left, '@')+1:], &tt)
		k := left[strings.IndexByte(left, '/')+1 : strings.LastIndexByte(left, '@')]
		if k == "null" {
			k = "<null>"
		}
		if start := tt - ((tt%size)+size)%size; start+size <= wmMs*1000 {
			want[[2]string{fmt.Sprint(start), k}]++
		}
	}
	got := map[[2]string]int64{}
	for b, err := range tb.Scan(s.ctx, table.ScanOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Len() {
			k := "<null>"
			if c := b.Column("ad"); !c.IsNull(i) {
				k = c.StringAt(i)
			}
			key := [2]string{fmt.Sprint(b.Column("window").Children[0].Int64[i]), k}
			if _, dup := got[key]; dup {
				t.Fatalf("%s: two rows for window %v", what, key)
			}
			got[key] = b.Column("n").Int64[i]
		}
	}
	var bad []string
	for k, n := range want {
		if got[k] != n {
			bad = append(bad, fmt.Sprintf("window %s ad %s: rollup %d, batch %d", k[0], k[1], got[k], n))
		}
	}
	for k, n := range got {
		if _, ok := want[k]; !ok {
			bad = append(bad, fmt.Sprintf("window %s ad %s: rollup %d, batch none", k[0], k[1], n))
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		t.Fatalf("%s: rollup over the join's gold differs at watermark %d ms:\n%s", what, wmMs, strings.Join(bad[:min(len(bad), 20)], "\n"))
	}
}
