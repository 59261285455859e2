package late

import (
	"context"
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// goldHasher returns the row hasher of a new gold table of a's schema (a real table: the
// hash key comes from its id).
func goldHasher(t testing.TB, a *agg) *table.RowHasher {
	t.Helper()
	tbl := table.Open(mem.New(), table.Options{})
	if _, err := tbl.Create(context.Background(), a.gold, nil, nil); err != nil {
		t.Fatal(err)
	}
	snap, err := tbl.Log().Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h, err := table.NewRowHasher(snap, a.gold, *goldRowTags())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// withExact is a resolved again against its gold schema with the exact-sum columns the
// stream's gold tables have (testAggBy's lack them).
func withExact(t testing.TB, a *agg) *agg {
	t.Helper()
	if len(a.missingExact) == 0 {
		t.Fatal("no exact-sum column to add")
	}
	wider := &txlog.StructType{Fields: append(slices.Clone(a.gold.Fields), a.missingExact...)}
	x, err := resolve(&spec.Query{Rules: silver.Rules{EventTime: "ts"}}, a.cfg, hashAggInput, wider)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(x.exactCol, func(c int) bool { return c >= 0 }) {
		t.Fatal("no exact-sum column resolved")
	}
	return x
}

// filledHashAgg is a table over rows random rows of keys keys (see skewedBatches).
func filledHashAgg(t testing.TB, a *agg, rows int, keys uint64) *hashAgg {
	t.Helper()
	h := newHashAgg(a)
	for _, b := range skewedBatches(t, 3, rows, 4096, keys, int64(6*time.Hour/time.Microsecond)) {
		s, err := a.source(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.add(s, allRows(b.Len()), math.MinInt64/2, math.MaxInt64/2); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// emittedSums is what hashRange summed before hashSums: every group emitted as a gold row
// and hashed by table.RowHasher.Row.
func emittedSums(t testing.TB, h *hashAgg, rh *table.RowHasher) table.GroupSums {
	t.Helper()
	out, err := pq.NewBatch(h.a.gold)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.emit(out, nil, nil); err != nil {
		t.Fatal(err)
	}
	cols, err := pq.Conform(h.a.gold, out)
	if err != nil {
		t.Fatal(err)
	}
	sums := table.GroupSums{}
	for i := range out.Len() {
		if g, hash, ok := rh.Row(cols, i); ok {
			sums.Add(g, hash)
		}
	}
	return sums
}

// TestHashSumsMatchRowHasher checks that the hashes hashSums computes from the table's state
// are, window by window, those table.RowHasher gives the gold rows emit writes (which is what
// gold's writer tags its files with): over every aggregate function the engine has, on
// doubles and longs, nulls, NaN and infinities among the inputs, null keys, two key columns
// or one, tumbling and sliding windows.
func TestHashSumsMatchRowHasher(t *testing.T) {
	for _, tc := range []struct {
		name  string
		w     spec.Window
		keys  []string
		exact bool // the gold schema has the exact-sum columns the stream adds
	}{
		{"tumbling", spec.Window{Size: 5 * time.Minute, Slide: 5 * time.Minute}, []string{"dev", "zone"}, false},
		{"sliding", spec.Window{Size: 10 * time.Minute, Slide: 5 * time.Minute}, []string{"dev", "zone"}, false},
		{"one key", spec.Window{Size: 15 * time.Minute, Slide: 5 * time.Minute}, []string{"dev"}, false},
		{"long key", spec.Window{Size: time.Hour, Slide: time.Hour}, []string{"zone"}, false},
		{"exact sums", spec.Window{Size: 10 * time.Minute, Slide: 5 * time.Minute}, []string{"dev", "zone"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := testAggBy(t, tc.w, tc.keys...)
			if tc.exact {
				a = withExact(t, a)
			}
			rh := goldHasher(t, a)
			h := filledHashAgg(t, a, 20_000, 3_000)
			want := emittedSums(t, h, rh)
			got := table.GroupSums{}
			ok, err := h.hashSums(rh, got)
			if err != nil || !ok {
				t.Fatalf("hashSums = %v, %v", ok, err)
			}
			if len(want) < 5 || len(got) != len(want) {
				t.Fatalf("hashSums gives %d windows, the emitted rows %d", len(got), len(want))
			}
			for g, s := range want {
				if got[g] != s {
					t.Fatalf("window %d: hashSums %x, the emitted rows hash to %x", g, got[g], s)
				}
			}
			// The fallback, rows in table order, sums alike.
			out, err := pq.NewBatch(a.gold)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := h.emitUnordered(out, nil); err != nil {
				t.Fatal(err)
			}
			cols, err := pq.Conform(a.gold, out)
			if err != nil {
				t.Fatal(err)
			}
			unordered := table.GroupSums{}
			for i := range out.Len() {
				if g, hash, ok := rh.Row(cols, i); ok {
					unordered.Add(g, hash)
				}
			}
			if !maps.Equal(unordered, want) {
				t.Fatal("the rows emitted in table order hash to other sums than emit's")
			}
		})
	}
}

// TestExpectGroups checks that a table told the pairs it will add (as aggregateSlice tells
// its workers' tables from the source's statistics) grows its group arrays fewer times than
// by doubling from 1024 at 100k keys, where a group is about a pair, never past the pairs
// it expects (also at 1k skewed keys, where the early batches' rate overstates the rest),
// and aggregates exactly as a table that is not told.
func TestExpectGroups(t *testing.T) {
	for _, keys := range []uint64{100_000, 1_000} {
		a := testAggBy(t, spec.Window{Size: 10 * time.Minute, Slide: 5 * time.Minute}, "dev")
		plain, told := newHashAgg(a), newHashAgg(a)
		batches := skewedBatches(t, 5, 200_000, 4096, keys, int64(6*time.Hour/time.Microsecond))
		told.expect = 2 * 200_000 // every row in two windows
		grows, plainGrows := 0, 0
		for _, b := range batches {
			s, err := a.source(b)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range []*hashAgg{plain, told} {
				c := cap(h.gkey)
				if err := h.add(s, allRows(b.Len()), math.MinInt64/2, math.MaxInt64/2); err != nil {
					t.Fatal(err)
				}
				switch {
				case cap(h.gkey) == c:
				case h == told:
					grows++
				default:
					plainGrows++
				}
			}
		}
		t.Logf("%d keys, %d groups: arrays of %d grown %d times (%d and %d times untold)", keys, len(told.gkey), cap(told.gkey), grows, cap(plain.gkey), plainGrows)
		if keys == 100_000 && grows >= plainGrows {
			t.Errorf("%d keys: the told table's arrays grew %d times for %d groups (%d times untold)", keys, grows, len(told.gkey), plainGrows)
		}
		if int64(cap(told.gkey)) > told.expect*9/8+4096 {
			t.Errorf("%d keys: arrays of %d for %d pairs expected", keys, cap(told.gkey), told.expect)
		}
		if p, q := renderHash(t, plain), renderHash(t, told); !slices.Equal(p, q) {
			t.Errorf("%d keys: the told table's rows differ from the plain one's", keys)
		}
	}
}

// renderHash is h's gold rows as renderGold renders them.
func renderHash(t *testing.T, h *hashAgg) []string {
	t.Helper()
	out, err := pq.NewBatch(h.a.gold)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.emit(out, nil, nil); err != nil {
		t.Fatal(err)
	}
	return renderGold(t, out)
}

// BenchmarkPlanHash is the first pass of a replay's plan at 100k keys over one slice's table:
// the groups' gold rows hashed from the table's state (hashSums) against emitting the rows and
// hashing them (emitted, as hashRange did).
func BenchmarkPlanHash(b *testing.B) {
	a := withExact(b, testAggBy(b, spec.Window{Size: 10 * time.Minute, Slide: 5 * time.Minute}, "dev"))
	rh := goldHasher(b, a)
	h := filledHashAgg(b, a, 200_000, 100_000)
	b.Run("hashSums", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := h.hashSums(rh, table.GroupSums{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(h.gkey)), "ns/group")
	})
	b.Run("emitted", func(b *testing.B) {
		b.ReportAllocs()
		out, err := pq.NewBatch(a.gold)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			sums := table.GroupSums{}
			flush := func() error {
				cols, err := pq.Conform(a.gold, out)
				if err != nil {
					return err
				}
				for i := range out.Len() {
					if g, hash, ok := rh.Row(cols, i); ok {
						sums.Add(g, hash)
					}
				}
				out.Reset()
				return nil
			}
			if _, err := h.emit(out, nil, flush); err != nil {
				b.Fatal(err)
			}
			if err := flush(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(h.gkey)), "ns/group")
	})
}
