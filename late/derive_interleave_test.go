package late

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/table/cdftest"
)

// interleaveYAML: t5 (5s) -> d15 (15s by event_type) -> d30 (30s overall). Small windows so
// that a two-phase workload of ~25 s of event time closes several windows at every level and
// leaves the last ones open between the phases.
const interleaveYAML = `  - name: d15
    source: t5
    window: {type: tumbling, size: 15s}
    group_by: [event_type]
    aggregates:
      - {fn: sum, column: n, as: n}
      - {fn: sum, column: total, as: total}
      - {fn: min, column: lo, as: lo}
      - {fn: max, column: hi, as: hi}
      - {fn: avg, column: mean, as: mean}
      - {fn: sum, column: qsum, as: qsum}
  - name: d30
    source: d15
    window: {type: tumbling, size: 30s}
    aggregates:
      - {fn: sum, column: n, as: n}
      - {fn: sum, column: total, as: total}
      - {fn: min, column: lo, as: lo}
      - {fn: max, column: hi, as: hi}
      - {fn: avg, column: mean, as: mean}
      - {fn: sum, column: qsum, as: qsum}
`

// interleaveDiffs compares each derived level with the batch group-by of all of silver at its
// grain over the windows ending at or before the watermark that level emitted to (its own txn).
func interleaveDiffs(t testing.TB, lake objstore.Bucket, errorf func(string, ...any)) int {
	t.Helper()
	silver := readSilver(t, lake, "silver/events")
	n := 0
	for _, lv := range []struct {
		name string
		size time.Duration
		by   []string
	}{{"d15", 15 * time.Second, []string{"event_type"}}, {"d30", 30 * time.Second, nil}} {
		snap, err := table.Open(objstore.WithPrefix(lake, "gold/"+lv.name), table.Options{}).Latest(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		wm, ok := snap.TxnVersion(DerivedWatermarkApp + lv.name)
		if !ok {
			t.Fatalf("%s records no emitted watermark", lv.name)
		}
		want := batchWindows(silver, lv.size, lv.size, lv.by, func(_, end int64) bool { return end <= wm*1000 })
		if len(want) == 0 {
			t.Fatalf("%s: no window closed at watermark %d", lv.name, wm)
		}
		n += diffGold(lv.name, readGold(t, lake, "gold/"+lv.name, lv.by), want, t5Checks, errorf)
	}
	return n
}

// openCorrections counts the rows of t5's change feed in versions (from, to] whose window lies in
// a window of size that had not closed at wmMs: corrections the downstream pass must not lose
// although it does not record them while the window is open.
func openCorrections(t testing.TB, lake objstore.Bucket, from, to int64, size time.Duration, wmMs int64) int {
	t.Helper()
	n := 0
	up := table.Open(objstore.WithPrefix(lake, "gold/t5"), table.Options{})
	for cs, err := range up.Changes(context.Background(), from+1, to) {
		if err != nil {
			t.Fatal(err)
		}
		w := cs.Rows.Column(gold.ColWindow)
		for i := range cs.Rows.Len() {
			s := w.Children[0].Int64[i]
			if end := s - mod(s, size.Microseconds()) + size.Microseconds(); end > wmMs*1000 {
				n++
			}
		}
	}
	return n
}

func deriveOne(t testing.TB, o Options, d spec.Derived) DeriveReport {
	t.Helper()
	reps, err := DeriveAll(context.Background(), o, []spec.Derived{d})
	if err != nil {
		t.Fatal(err)
	}
	return reps[0]
}

// TestDerivedCorrectionInterleavings drives, deterministically, the interleavings in which a
// correction could be lost between derive passes (issue 33, the author's open question):
//
//   - the upstream gold is corrected by merge-late after a level-2 pass, in windows the
//     level-2 pass had already closed and in windows still open at level 2 (the pass records
//     the upstream version read, so those open-window changes are never read again: they
//     must reach the table when the window closes, by the recompute from the latest upstream);
//   - a level-3 pass runs after its upstream advanced its emitted watermark but before that
//     upstream applied the correction, then again after;
//   - a second stream phase advances the watermark past the windows left open, before and
//     after its own merge-late.
//
// At the end every level equals the batch group-by of silver at its grain.
func TestDerivedCorrectionInterleavings(t *testing.T) {
	ctx := context.Background()
	// Event times run ~40 s before arrival; starting arrivals at :15 puts phase 1's
	// watermark (~:22) inside the 30s window [:00, :30) that merge-late's corrections (up to
	// ~:05) fall in.
	lake, cfg := mem.New(), testConfig(t, interleaveYAML)
	landAt(t, lake, 81, 2500, 4, time.Date(2024, 5, 1, 0, 0, 15, 0, time.UTC))
	ingest(t, lake, cfg)
	runStream(t, lake, cfg)
	o := opts(lake, cfg)
	ds := specs.Derived(cfg)
	if len(ds) != 2 || ds[0].Name != "d15" || ds[1].Name != "d30" {
		t.Fatalf("derived specs %+v", ds)
	}
	// Phase 1: level 2 then level 3 before any correction.
	r15 := deriveOne(t, o, ds[0])
	deriveOne(t, o, ds[1])
	// Merge-late corrects t5 after the level-2 pass read version r15.ToVersion.
	mr, err := MergeLate(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if mr.LateRows == 0 {
		t.Fatal("merge-late merged no late row: the test proves nothing")
	}
	t5v := tableVersions(t, lake, "gold/t5")[0]
	// Level 3 now, its upstream not yet corrected: it must not record anything that hides the
	// correction from its next pass.
	deriveOne(t, o, ds[1])
	r15b := deriveOne(t, o, ds[0])
	if r15b.FromVersion != r15.ToVersion || r15b.ToVersion != t5v {
		t.Fatalf("level-2 pass read t5 (%d, %d], want (%d, %d]", r15b.FromVersion, r15b.ToVersion, r15.ToVersion, t5v)
	}
	open15 := openCorrections(t, lake, r15.ToVersion, t5v, 15*time.Second, r15b.WatermarkMs)
	open30 := openCorrections(t, lake, r15.ToVersion, t5v, 30*time.Second, r15b.WatermarkMs)
	t.Logf("t5 correction rows in windows still open: %d at 15s, %d at 30s (watermark %d)", open15, open30, r15b.WatermarkMs)
	if open30 == 0 {
		t.Fatal("no correction fell in a window still open downstream: the interleaving under test did not happen")
	}
	deriveOne(t, o, ds[1])
	if n := interleaveDiffs(t, lake, t.Errorf); n > 0 {
		t.Fatalf("after phase 1: %d differences", n)
	}
	// Phase 2: more data later in event time closes the windows left open. A pass before
	// merge-late (the closing recompute must carry phase 1's corrections of those windows)...
	landAt(t, lake, 181, 2500, 4, time.Date(2024, 5, 1, 0, 0, 27, 0, time.UTC))
	ingest(t, lake, cfg)
	runStream(t, lake, cfg)
	wm1 := r15b.WatermarkMs
	r15c := deriveOne(t, o, ds[0])
	if r15c.WatermarkMs <= wm1 {
		t.Fatalf("phase 2 did not advance the watermark (%d -> %d)", wm1, r15c.WatermarkMs)
	}
	deriveOne(t, o, ds[1])
	// ...then merge-late and both levels again, level 3 first (before level 2 saw it).
	if _, err := MergeLate(ctx, o); err != nil {
		t.Fatal(err)
	}
	deriveOne(t, o, ds[1])
	if _, err := DeriveAll(ctx, o, ds); err != nil {
		t.Fatal(err)
	}
	if n := interleaveDiffs(t, lake, t.Errorf); n > 0 {
		t.Fatalf("after phase 2: %d differences", n)
	}
	checkUpdatePairs(t, checkFeed(t, lake, "gold/d15"), "event_type")
	checkUpdatePairs(t, checkFeed(t, lake, "gold/d30"))
}

// checkUpdatePairs: a derived table's feed describes a recomputed row (same window and keys)
// as an update_preimage/update_postimage pair, never a delete and an insert in one version,
// and the corrections gave some pairs.
func checkUpdatePairs(t testing.TB, vs []cdftest.Version, keys ...string) {
	t.Helper()
	pairs := 0
	for _, v := range vs {
		seen := map[string]map[string]int{}
		for _, r := range v.Rows {
			k := fmt.Sprint(r.Values[gold.ColWindow])
			for _, c := range keys {
				k += "|" + fmt.Sprint(r.Values[c])
			}
			if seen[k] == nil {
				seen[k] = map[string]int{}
			}
			seen[k][r.Type]++
		}
		for k, types := range seen {
			if types["delete"] > 0 && types["insert"] > 0 {
				t.Errorf("version %d: %s deleted and inserted, not updated: %v", v.Version, k, types)
			}
			if types["update_preimage"] != types["update_postimage"] {
				t.Errorf("version %d: %s unpaired update images: %v", v.Version, k, types)
			}
			pairs += types["update_preimage"]
		}
	}
	if pairs == 0 {
		t.Error("no update pair in the feed: the corrections were written otherwise")
	}
}

// TestRefreshDerived: a derived table whose rows were damaged behind its back (every row of
// d15 deleted by another writer: its positions say it is up to date, so a pass does not
// repair it) is rebuilt by a refresh, with d30 below it, each in one commit; the tables then
// equal the batch group-by of silver, their feeds replay to them, and the next pass has nothing
// to do. A refresh of a gold that is not derived is refused.
func TestRefreshDerived(t *testing.T) {
	ctx := context.Background()
	lake, cfg := mem.New(), testConfig(t, interleaveYAML)
	landAt(t, lake, 82, 2500, 4, time.Date(2024, 5, 1, 0, 0, 15, 0, time.UTC))
	ingest(t, lake, cfg)
	runStream(t, lake, cfg)
	o := opts(lake, cfg)
	ds := specs.Derived(cfg)
	if _, err := MergeLate(ctx, o); err != nil {
		t.Fatal(err)
	}
	if _, err := DeriveAll(ctx, o, ds); err != nil {
		t.Fatal(err)
	}
	d15 := table.Open(objstore.WithPrefix(lake, "gold/d15"), table.Options{})
	if _, err := d15.Overwrite(ctx, nil, nil, table.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := DeriveAll(ctx, o, ds); err != nil {
		t.Fatal(err)
	}
	if n := interleaveDiffs(t, lake, func(string, ...any) {}); n == 0 {
		t.Fatal("the damaged table equals the batch aggregation: the test proves nothing")
	}
	before := tableVersions(t, lake, "gold/d15", "gold/d30")
	reps, err := RefreshDerived(ctx, o, ds, "d15")
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 2 || reps[0].Name != "d15" || reps[1].Name != "d30" || reps[0].FromVersion != -1 {
		t.Fatalf("refresh reports %+v", reps)
	}
	if after := tableVersions(t, lake, "gold/d15", "gold/d30"); after[0] != before[0]+1 || after[1] != before[1]+1 {
		t.Errorf("versions %v -> %v: a refresh is one commit per table", before, after)
	}
	if n := interleaveDiffs(t, lake, t.Errorf); n > 0 {
		t.Fatalf("after refresh: %d differences", n)
	}
	checkFeed(t, lake, "gold/d15")
	checkFeed(t, lake, "gold/d30")
	reps, err = DeriveAll(ctx, o, ds)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		if !r.UpToDate {
			t.Errorf("%s: the pass after a refresh did work: %+v", r.Name, r)
		}
	}
	if reps, err := RefreshDerived(ctx, o, ds, "d30"); err != nil || len(reps) != 1 {
		t.Errorf("refresh of the last level: %+v, %v", reps, err)
	}
	// A gold over a source (refreshed by the stream package) names the tables below it.
	if reps, err := RefreshDerived(ctx, o, ds, "t5"); err != nil || len(reps) != len(ds) {
		t.Errorf("refresh below a gold over a source: %+v, %v", reps, err)
	}
	if _, err := RefreshDerived(ctx, o, ds, "nope"); !errors.Is(err, ErrNotDerived) {
		t.Errorf("refresh of a table that is none: %v, want ErrNotDerived", err)
	}
}
