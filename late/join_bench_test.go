package late

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
)

// copyBucket copies every object of src into a new in-memory bucket.
func copyBucket(tb testing.TB, src *mem.Bucket) *mem.Bucket {
	tb.Helper()
	ctx := context.Background()
	dst := mem.New()
	for o, err := range src.List(ctx, "", objstore.ListOptions{}) {
		if err != nil {
			tb.Fatal(err)
		}
		data, err := objstore.ReadAll(ctx, src, o.Key)
		if err != nil {
			tb.Fatal(err)
		}
		if err := dst.Put(ctx, o.Key, bytes.NewReader(data), int64(len(data))); err != nil {
			tb.Fatal(err)
		}
	}
	return dst
}

// benchJoinLake runs a left outer join over n rows a side (random delays, late tail) without
// any merge, and returns the lake and the join.
func benchJoinLake(b *testing.B, n int) (*mem.Bucket, *joinSim) {
	lake := mem.New()
	s := newJoinSim(b, lake, simJoin("left_outer", -2*time.Second, 5*time.Second, 10*time.Second, 20*time.Second))
	for _, bt := range randomWorkload(rand.New(rand.NewPCG(1, 18)), n) {
		s.step(bt[0], bt[1])
	}
	return lake, s
}

// BenchmarkMergeLateJoin is one merge-late of a join whose stream ran 4,000 rows a side in
// several hundred batches (one silver file a side each) and quarantined a few hundred: the
// first merge, which reconciles every late row, and a rerun, which finds nothing to change.
// lateRows/op and the share of silver files opened show the data skipping.
func BenchmarkMergeLateJoin(b *testing.B) {
	lake, s := benchJoinLake(b, 4000)
	ctx := context.Background()
	b.Run("first", func(b *testing.B) {
		var rep JoinMergeReport
		for b.Loop() {
			b.StopTimer()
			l := copyBucket(b, lake)
			b.StartTimer()
			var err error
			if rep, err = MergeLateJoin(ctx, Options{Lake: l}, s.j); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(rep.LateRows), "lateRows/op")
		b.ReportMetric(float64(rep.SilverFilesRead)/float64(max(rep.SilverFiles, 1)), "silverFilesOpened/total")
	})
	b.Run("rerun", func(b *testing.B) {
		l := copyBucket(b, lake)
		if _, err := MergeLateJoin(ctx, Options{Lake: l}, s.j); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			rep, err := MergeLateJoin(ctx, Options{Lake: l}, s.j)
			if err != nil || rep.Commit != nil {
				b.Fatalf("rerun: %+v %v", rep, err)
			}
		}
	})
}
