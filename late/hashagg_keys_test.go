package late

import (
	"hash/maphash"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
	"github.com/medallion-lake/medallion/stream/spec"
)

// TestHashAggKeysFrom: a table that takes its key ids from another table fed the same
// batches just before it (keysFrom, a shared read's later gold) aggregates what the oracle
// does, without encoding a key of its own, with the lead's seed or one of its own; a batch
// the lead did not see (or saw other rows of) is keyed by the table itself.
func TestHashAggKeysFrom(t *testing.T) {
	const span = int64(6 * time.Hour / time.Microsecond)
	lead := testAgg(t, spec.Window{Size: 5 * time.Minute, Slide: 5 * time.Minute})
	peer := testAgg(t, spec.Window{Size: 15 * time.Minute, Slide: 5 * time.Minute})
	batches := skewedBatches(t, 5, 40_000, 4000, 5000, span)
	lo, hi := int64(math.MinInt64/2), int64(math.MaxInt64/2)
	for _, same := range []bool{true, false} {
		name := map[bool]string{true: "shared seed", false: "own seed"}[same]
		t.Run(name, func(t *testing.T) {
			l := newHashAgg(lead)
			seed := l.seed
			if !same {
				seed = maphash.MakeSeed()
			}
			p := newHashAggSeed(peer, seed)
			p.keysFrom = l
			rng := rand.New(rand.NewPCG(9, 1))
			var oracleIn []*pq.Batch
			own := 0
			for k, b := range batches {
				keep := make([]bool, b.Len())
				var sel []int32
				for i := range keep {
					if rng.IntN(4) != 0 {
						keep[i] = true
						sel = append(sel, int32(i))
					}
				}
				oracleIn = append(oracleIn, b.Filter(keep))
				ls, ps := bindBoth(t, lead, peer, b)
				switch k % 5 {
				case 3: // the lead skips this batch: its key ids are the last batch's
					own++
				case 4: // the lead adds other rows of it
					if err := l.add(ls, allRows(b.Len()), lo, hi); err != nil {
						t.Fatal(err)
					}
					own++
				default:
					if err := l.add(ls, sel, lo, hi); err != nil {
						t.Fatal(err)
					}
				}
				before := len(p.kbuf)
				if err := p.add(ps, sel, lo, hi); err != nil {
					t.Fatal(err)
				}
				if took := k%5 < 3; took && len(p.kbuf) != before {
					t.Fatalf("batch %d: the table encoded its keys (%d bytes), want the lead's ids", k, len(p.kbuf))
				}
				p.kbuf = p.kbuf[:0]
			}
			if own == 0 {
				t.Fatal("no batch was keyed by the table itself")
			}
			wantOracleRows(t, renderHash(t, p), oracleRows(oracleIn, peer.window.Size, peer.window.Slide, peer.window.StartTime, lo, hi), 5000)
		})
	}
}

// bindBoth binds batch bt to the aggregations l and p, as a shared read binds it to each gold.
func bindBoth(t testing.TB, l, p *agg, bt *pq.Batch) (*source, *source) {
	t.Helper()
	ls, err := l.source(bt)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := p.source(bt)
	if err != nil {
		t.Fatal(err)
	}
	return ls, ps
}

// BenchmarkHashAggKeysFrom is the later gold of a shared read at 100k keys (sliding 15m/5m
// beside a tumbling 5m lead, both by dev and zone, 200k skewed rows): its table keyed by
// itself ("own", as before) against taking the lead's key ids ("from"). Only the later
// gold's adds are timed; cpu-ns/row is the process's CPU (the machine is shared).
func BenchmarkHashAggKeysFrom(b *testing.B) {
	const rows = 200_000
	lead := testAgg(b, spec.Window{Size: 5 * time.Minute, Slide: 5 * time.Minute})
	peer := testAgg(b, spec.Window{Size: 15 * time.Minute, Slide: 5 * time.Minute})
	batches := skewedBatches(b, 3, rows, 8192, 100_000, int64(24*time.Hour/time.Microsecond))
	lo, hi := int64(math.MinInt64/2), int64(math.MaxInt64/2)
	type bound struct {
		l, p *source
		sel  []int32
	}
	var in []bound
	for _, bt := range batches {
		ls, ps := bindBoth(b, lead, peer, bt)
		in = append(in, bound{ls, ps, allRows(bt.Len())})
	}
	for _, from := range []bool{false, true} {
		b.Run(map[bool]string{false: "own", true: "from"}[from], func(b *testing.B) {
			b.ReportAllocs()
			var cpu time.Duration
			for b.Loop() {
				l := newHashAgg(lead)
				p := newHashAggSeed(peer, l.seed)
				if from {
					p.keysFrom = l
				}
				for _, x := range in {
					b.StopTimer()
					if err := l.add(x.l, x.sel, lo, hi); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					start := pqtest.CPUClock()
					if err := p.add(x.p, x.sel, lo, hi); err != nil {
						b.Fatal(err)
					}
					cpu += pqtest.CPUClock() - start
				}
			}
			b.ReportMetric(float64(cpu)/float64(b.N*rows), "cpu-ns/row")
		})
	}
}
