package late

import (
	"fmt"
	"hash/maphash"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// TestSumPartsMatchMerged: the row hashes sumParts sums from the workers' partial tables,
// each window hashed where most of its groups are, equal those of the tables merged into one
// and hashed, window by window: three tables whose runs of time meet and which a tenth of the
// rows reach across (as late rows do), every aggregate but the float min and max (those take
// the merged path, checked too), tumbling and sliding, with the exact-sum columns.
func TestSumPartsMatchMerged(t *testing.T) {
	noFloatMinMax := []spec.Aggregate{
		{Fn: "count", As: "c"}, {Fn: "count", Column: "x", As: "cx"},
		{Fn: "sum", Column: "x", As: "sx"}, {Fn: "avg", Column: "x", As: "ax"},
		{Fn: "sum", Column: "n", As: "sn"}, {Fn: "avg", Column: "n", As: "an"}, {Fn: "min", Column: "n", As: "mnn"}, {Fn: "max", Column: "n", As: "mxn"},
	}
	const span = int64(6 * time.Hour / time.Microsecond)
	batches := skewedBatches(t, 11, 30_000, 3000, 4000, span)
	for _, tc := range []struct {
		name  string
		w     spec.Window
		fns   []spec.Aggregate
		owned bool
	}{
		{"tumbling", spec.Window{Size: 5 * time.Minute, Slide: 5 * time.Minute}, noFloatMinMax, true},
		{"sliding", spec.Window{Size: 15 * time.Minute, Slide: 5 * time.Minute}, noFloatMinMax, true},
		{"float min and max", spec.Window{Size: 10 * time.Minute, Slide: 5 * time.Minute}, hashAggFns, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := withExact(t, testAggOf(t, tc.w, tc.fns, "dev", "zone"))
			rh := goldHasher(t, a)
			partials := func() *slicePartials {
				p := &slicePartials{a: a, parts: make([]*hashAgg, 3), counts: make([]int64, 3), seed: maphash.MakeSeed()}
				for i := range p.parts {
					p.parts[i] = newHashAggSeed(a, p.seed)
					p.counts[i] = int64(i + 1)
				}
				rng := rand.New(rand.NewPCG(3, 5))
				t0 := int64(1_700_000_000_000_000) - span/10
				for _, b := range batches {
					s, err := a.source(b)
					if err != nil {
						t.Fatal(err)
					}
					sel := make([][]int32, 3)
					for r, ts := range s.ev.Int64 {
						w := min(int((ts-t0)*3/span), 2)
						if rng.IntN(10) == 0 {
							w = rng.IntN(3)
						}
						sel[w] = append(sel[w], int32(r))
					}
					for w, rows := range sel {
						if err := p.parts[w].add(s, rows, math.MinInt64/2, math.MaxInt64/2); err != nil {
							t.Fatal(err)
						}
					}
				}
				return p
			}
			if got := ownable(partials().parts[0]); got != tc.owned {
				t.Fatalf("ownable = %v, want %v", got, tc.owned)
			}
			var rows int64
			merged := partials().merged(&rows)
			want := table.GroupSums{}
			if ok, err := merged.hashSums(rh, want); err != nil || !ok {
				t.Fatalf("hashSums = %v, %v", ok, err)
			}
			target := &passTarget{a: a, h: rh, sums: table.GroupSums{}}
			if err := target.sumParts(partials()); err != nil {
				t.Fatal(err)
			}
			if len(want) < 50 || !maps.Equal(target.sums, want) {
				t.Fatalf("sumParts gives %d windows, the merged table %d, or other sums", len(target.sums), len(want))
			}
			if target.rows != rows || rows != 6 {
				t.Fatalf("rows %d, merged %d, want 6", target.rows, rows)
			}
		})
	}
}

// TestShareFiles: a pass over silver gives each worker a run of files consecutive in event
// time holding about its share of the rows (files in path order, big and small mixed, as a
// stream's commits leave them), files without statistics last; bronze keeps its order.
func TestShareFiles(t *testing.T) {
	base := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	stats := func(recs int, minute int) string {
		at := func(m int) string { return base.Add(time.Duration(m) * time.Minute).Format(time.RFC3339Nano) }
		return fmt.Sprintf(`{"numRecords":%d,"minValues":{"ts":%q},"maxValues":{"ts":%q}}`, recs, at(minute), at(minute+20))
	}
	// Path order is not time order; the small files (late rows) start earlier.
	files := []*txlog.Add{
		{Path: "a", Stats: stats(1000, 60)},
		{Path: "b", Stats: stats(50, 10)},
		{Path: "c", Stats: stats(1000, 0)},
		{Path: "d"},
		{Path: "e", Stats: stats(1000, 40)},
		{Path: "f", Stats: stats(1000, 20)},
		{Path: "g", Stats: stats(50, 30)},
	}
	r := &sourceRead{s: &replaySource{}, a: &agg{evName: "ts"}, files: slices.Clone(files), workers: 2}
	r.shareFiles()
	var order string
	for _, f := range r.files {
		order += f.Path
	}
	if order != "cbfgead" || fmt.Sprint(r.share) != "[0 4 7]" {
		t.Fatalf("files %s shared %v, want cbfgead shared [0 4 7]", order, r.share)
	}
	r = &sourceRead{s: &replaySource{bronze: true}, a: &agg{evName: "ts"}, files: files[:3], workers: 1}
	r.shareFiles()
	if r.files[0].Path != "a" || fmt.Sprint(r.share) != "[0 3]" {
		t.Fatalf("bronze: files from %s shared %v", r.files[0].Path, r.share)
	}
}
