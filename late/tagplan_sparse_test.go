package late

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestTagPlanQueries: the sparse plan's questions (is a window changed, is any in a range,
// does the untrusted files' spans cover a range) answered as a window-by-window walk of a
// small grid answers them, over random spans (overlapping, touching, a slide apart, open to
// the whole time line) and random differing windows.
func TestTagPlanQueries(t *testing.T) {
	const slide = 10
	r := rand.New(rand.NewPCG(3, 4))
	for run := range 300 {
		lo, hi := int64(r.IntN(20)*slide), int64((40+r.IntN(40))*slide)
		var raw []span
		for range r.IntN(5) {
			a := int64((r.IntN(100) - 10) * slide)
			raw = append(raw, span{a, a + int64(r.IntN(8)*slide)})
		}
		if r.IntN(40) == 0 {
			raw = append(raw, span{math.MinInt64, math.MaxInt64})
		}
		bad := func(w int64) bool {
			for _, s := range raw {
				if w >= s.lo && w <= s.hi {
					return true
				}
			}
			return false
		}
		p := &tagPlan{lo: lo, hi: hi, slide: slide, bad: mergeSpans(slices.Clone(raw), slide)}
		diff := map[int64]bool{}
		for range r.IntN(6) {
			w := int64(r.IntN(100) * slide)
			if !bad(w) && w >= lo && w <= hi {
				diff[w] = true
			}
		}
		p.diff = slices.Sorted(func(yield func(int64) bool) {
			for w := range diff {
				if !yield(w) {
					return
				}
			}
		})
		changed := func(w int64) bool { return w >= lo && w <= hi && (bad(w) || diff[w]) }
		name := fmt.Sprintf("run %d: range [%d, %d], spans %v, diff %v", run, lo, hi, raw, p.diff)
		for w := int64(-20 * slide); w <= 120*slide; w += slide {
			if got := p.changed(w); got != changed(w) {
				t.Fatalf("%s: changed(%d) = %v", name, w, got)
			}
		}
		for first := int64(-5 * slide); first <= 110*slide; first += slide {
			for last := first; last <= first+15*slide; last += slide {
				anyW, allBad := false, true
				for w := first; w <= last; w += slide {
					anyW = anyW || changed(w)
					allBad = allBad && bad(w)
				}
				if got := p.anyChanged(first, last); got != anyW {
					t.Fatalf("%s: anyChanged(%d, %d) = %v", name, first, last, got)
				}
				if got := p.badCovers(first, last); got != allBad {
					t.Fatalf("%s: badCovers(%d, %d) = %v", name, first, last, got)
				}
			}
		}
		none := true
		for w := lo; w <= hi; w += slide {
			none = none && !changed(w)
		}
		if p.none() != none {
			t.Fatalf("%s: none() = %v", name, !none)
		}
	}
}

// TestReplayCenturyRange: a replay of a century (2000 to 2100: hundreds of millions of 5 s
// windows, nearly all empty) over gold with an untagged file and a bumped row: the row is put
// right (gold equals the batch aggregation of silver) and only that gold commits. The plan it
// builds is sparse (TestTagPlanQueries checks its answers): it no longer walks every window
// of the range, which took this test 10 s and 500 MB.
func TestReplayCenturyRange(t *testing.T) {
	lake, cfg, srep := pipeline(t, 33, 2000, 4, slidingNumericYAML)
	ctx := context.Background()
	if _, err := MergeLate(ctx, opts(lake, cfg)); err != nil {
		t.Fatal(err)
	}
	untag(t, lake, "gold/s15")
	tamperLatest(t, lake, "gold/s15", allData(t, lake), "bump")
	century := Range{From: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)}
	rep, err := Replay(ctx, opts(lake, cfg), century)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range rep.Gold {
		if (g.Gold != nil) != (g.Name == "s15") {
			t.Errorf("%s: commit %+v, want one for s15 only", g.Name, g.Gold)
		}
	}
	checkS15(t, lake, srep.WatermarkMs)
}
