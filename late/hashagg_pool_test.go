package late

import (
	"fmt"
	"hash/maphash"
	"slices"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/internal/testshared"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
	"github.com/medallion-lake/medallion/stream/spec"
)

// sliceRun aggregates the batches window slice by window slice as hashWindows does: per
// slice, parts partial tables from pool (nil: none) take the batches in turn, merge in
// order, emit, and give their arrays back (the last slice's to the collector, as a replay's,
// when last). It returns every slice's rows, rendered (none unless render).
func sliceRun(t testing.TB, a *agg, batches []*pq.Batch, cuts [][2]int64, parts int, pool *aggPool, render, last bool) []string {
	t.Helper()
	var got []string
	seed := maphash.MakeSeed()
	for k, sl := range cuts {
		if last && k+1 == len(cuts) {
			pool.setLast()
		}
		hs := make([]*hashAgg, parts)
		for i := range hs {
			hs[i] = newPooledHashAgg(a, seed, pool)
		}
		for k, b := range batches {
			src, err := a.source(b)
			if err != nil {
				t.Fatal(err)
			}
			if err := hs[k%parts].add(src, allRows(b.Len()), sl[0], sl[1]); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range hs[1:] {
			hs[0].merge(p)
			p.release()
		}
		out, err := pq.NewBatch(a.gold)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := hs[0].emit(out, nil, nil); err != nil {
			t.Fatal(err)
		}
		hs[0].release()
		if !render {
			continue
		}
		if err := out.Validate(); err != nil {
			t.Fatal(err)
		}
		got = append(got, renderGold(t, out)...)
	}
	return got
}

// cutSlices cuts the window starts of [lo, hi] into n slices of whole windows.
func cutSlices(a *agg, lo, hi int64, n int) [][2]int64 {
	slide := a.window.Slide
	nw := (hi-lo)/slide + 1
	var cuts [][2]int64
	for k := range int64(n) {
		first, last := lo+k*nw/int64(n)*slide, lo+((k+1)*nw/int64(n)-1)*slide
		cuts = append(cuts, [2]int64{first, last})
	}
	return cuts
}

// TestHashAggPoolSlices: tables that take their arrays from a pool, as a replay's slices do
// (the arrays hold the previous slice's groups, keys, slots and orderings, not cleared),
// aggregate every slice as the plain map oracle does. The slices differ in size (the skewed
// rows' time line is uneven), so the arrays taken are larger or smaller than the need.
func TestHashAggPoolSlices(t *testing.T) {
	t.Parallel()
	rows := testshared.Sized(30_000, 15_000)
	const span = int64(6 * time.Hour / time.Microsecond)
	for _, tc := range []struct {
		name string
		win  spec.Window
		keys uint64
	}{
		{"sliding 10m/5m, 100k keys", spec.Window{Size: 10 * time.Minute, Slide: 5 * time.Minute}, 100_000},
		{"tumbling 5m, 1k keys (dense index)", spec.Window{Size: 5 * time.Minute, Slide: 5 * time.Minute}, 1_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := testAgg(t, tc.win)
			batches := skewedBatches(t, tc.keys, rows, 4096, tc.keys, span)
			base := int64(1_700_000_000_000_000) - span/10
			lo, hi := alignStart(base, a.window), alignStart(base+span, a.window)
			cuts := cutSlices(a, lo, hi, 4)
			pool := &aggPool{}
			got := sliceRun(t, a, batches, cuts, 2, pool, true, false)
			var want []string
			for _, sl := range cuts {
				want = append(want, oracleRows(batches, a.window.Size, a.window.Slide, a.window.StartTime, sl[0], sl[1])...)
			}
			slices.Sort(got)
			slices.Sort(want)
			if len(want) < 100 || !slices.Equal(got, want) {
				t.Fatalf("%d rows from pooled tables, %d from the oracle (equal: %v)", len(got), len(want), slices.Equal(got, want))
			}
			if len(pool.i64.free) == 0 || len(pool.slots.free) == 0 {
				t.Fatal("the pool kept no arrays: the slices after the first took none")
			}
		})
	}
}

// BenchmarkReplaySlices is a replay's slices at 100k keys: 400k skewed rows over 24h of
// sliding 10m/5m windows, cut into 4 slices of window starts, each aggregated by two partial
// tables, merged and emitted, the tables made anew per slice (fresh) or taken from a pool
// that the slice before gave its arrays back to (pooled). Compare cpu-ns/row and B/op.
func BenchmarkReplaySlices(b *testing.B) {
	const rows = 400_000
	const span = int64(24 * time.Hour / time.Microsecond)
	a := testAgg(b, spec.Window{Size: 10 * time.Minute, Slide: 5 * time.Minute})
	batches := skewedBatches(b, 5, rows, 8192, 100_000, span)
	base := int64(1_700_000_000_000_000) - span/10
	cuts := cutSlices(a, alignStart(base, a.window), alignStart(base+span, a.window), 4)
	for _, pooled := range []bool{false, true} {
		b.Run(fmt.Sprintf("pooled=%v", pooled), func(b *testing.B) {
			b.ReportAllocs()
			start := pqtest.CPUClock()
			for b.Loop() {
				var pool *aggPool
				if pooled {
					pool = &aggPool{}
				}
				sliceRun(b, a, batches, cuts, 2, pool, false, true)
			}
			b.ReportMetric(float64(pqtest.CPUClock()-start)/float64(b.N*rows), "cpu-ns/row")
		})
	}
}
