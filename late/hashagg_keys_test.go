package late

import (
	"hash/maphash"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/pq"
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
				ls, err := lead.source(b)
				if err != nil {
					t.Fatal(err)
				}
				ps, err := peer.source(b)
				if err != nil {
					t.Fatal(err)
				}
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
			got := renderHash(t, p)
			slices.Sort(got)
			want := oracleRows(oracleIn, peer.window.Size, peer.window.Slide, peer.window.StartTime, lo, hi)
			if len(want) < 5000 {
				t.Fatalf("the oracle has %d groups: the test proves little", len(want))
			}
			if !slices.Equal(got, want) {
				for i := range min(len(got), len(want)) {
					if got[i] != want[i] {
						t.Fatalf("row %d: engine %s, oracle %s", i, got[i], want[i])
					}
				}
				t.Fatalf("%d engine rows, %d oracle rows", len(got), len(want))
			}
		})
	}
}
