package late

import (
	"context"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/stream/spec"
)

// BenchmarkChangeFeedMap is the change feed's map of dropped rows at the size of a replay of
// 1M events over 100k keys (2.7M gold rows, a map far larger than the caches): every row
// dropped as the old files are read, then cancelled by an equal written row in another order.
// batch is how many rows each step takes at once: 1 is a look-up at a time, as before the map
// was touched a batch at a time (8192: a read batch of old gold, a chunk of new rows).
func BenchmarkChangeFeedMap(b *testing.B) {
	const rows = 330 * 8192 // 2.7M
	a := testAgg(b, spec.Window{Size: 5 * time.Minute, Slide: 5 * time.Minute})
	r := rand.New(rand.NewPCG(1, 2))
	hs := make([][2]uint64, rows)
	for i := range hs {
		hs[i] = [2]uint64{r.Uint64(), r.Uint64()}
	}
	order := r.Perm(rows)
	written := make([][2]uint64, rows)
	for i, k := range order {
		written[i] = hs[k]
	}
	at := make([]rowRef, rows)
	for i := range at {
		at[i] = rowRef{0, int32(i)}
	}
	for _, batch := range []int{1, 8192} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			out, err := pq.NewBatch(a.gold)
			if err != nil {
				b.Fatal(err)
			}
			// written reads only the batch's length when every row cancels one dropped.
			for range batch {
				out.Columns[0].AppendNull()
			}
			ctx := context.Background()
			b.ReportAllocs()
			cpu := cpuSeconds()
			for b.Loop() {
				cf, err := newChangeFeed(nil, nil, nil, a.gold, [2]maphash.Seed{})
				if err != nil {
					b.Fatal(err)
				}
				cf.presize(rows)
				for i := 0; i < rows; i += batch {
					cf.dropBatch(hs[i:i+batch], at[i:i+batch])
				}
				for i := 0; i < rows; i += batch {
					if _, err := cf.written(ctx, out, written[i:i+batch]); err != nil {
						b.Fatal(err)
					}
				}
				if cf.left != 0 {
					b.Fatalf("%d dropped rows left", cf.left)
				}
			}
			// CPU time: on a shared machine the wall time is mostly the wait for a core.
			b.ReportMetric((cpuSeconds()-cpu)*1e9/float64(b.N*rows), "cpu-ns/row")
		})
	}
}
