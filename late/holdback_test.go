package late

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/table/cdftest"
	"github.com/medallion-lake/medallion/txlog"
)

// TestReplayHoldsBackEqualRows: a replay holds back the rows it recomputes as long as each
// equals a row gold has (rewrite.insert), and writes them, read back from the old files, once
// one differs. The one wrong row of gold/s15 is its latest window of the range, so that with
// small slices every earlier slice is held back first: a count off (an update found in the
// last slice), a row missing (an insert there) and a row gold should not have (every
// recomputed row equal to one of gold's: only the dropped row left over at the end says the
// range changed). Each time gold ends equal to the batch aggregation of silver (no row lost
// or written twice), the change feed holds exactly the one change, and the tables with
// nothing wrong commit nothing.
func TestReplayHoldsBackEqualRows(t *testing.T) {
	base, cfg, srep := pipeline(t, 21, 3000, 5, slidingNumericYAML)
	if _, err := MergeLate(context.Background(), opts(base, cfg)); err != nil {
		t.Fatal(err)
	}
	r := replayRange(silverTimes(t, base), 0.1, 0.9)
	for _, tc := range []struct {
		tamper string
		want   map[string]int
	}{
		{"bump", map[string]int{"update_preimage": 1, "update_postimage": 1}},
		{"drop", map[string]int{"insert": 1}},
		{"ghost", map[string]int{"delete": 1}},
	} {
		for _, pairs := range []int64{-1, 300} {
			t.Run(fmt.Sprintf("%s/pairs=%d", tc.tamper, pairs), func(t *testing.T) {
				lake := cloneLake(t, base)
				tamperLatest(t, lake, "gold/s15", r, tc.tamper)
				before := versions(t, lake)
				o := opts(lake, cfg)
				o.SlicePairs = pairs
				passes := 0
				o.Progress = func(p ReplayProgress) {
					if p.Gold == "s15" {
						passes = max(passes, p.Pass)
					}
				}
				rep, err := Replay(context.Background(), o, r)
				if err != nil {
					t.Fatal(err)
				}
				if pairs > 0 && passes < 3 {
					t.Errorf("s15 read the source in %d slices: nothing was held back before the last", passes)
				}
				for _, g := range rep.Gold {
					if (g.Gold != nil) != (g.Name == "s15") {
						t.Errorf("%s: commit %+v, want one for s15 only", g.Name, g.Gold)
					}
				}
				if after := versions(t, lake); after != before {
					t.Errorf("t5 and s10 went from versions %v to %v: nothing was wrong there", before, after)
				}
				silver := readSilver(t, lake, "silver/events")
				closed := func(_, end int64) bool { return end <= srep.WatermarkMs*1000 }
				if n := diffGold("s15", readGold(t, lake, "gold/s15", []string{"device_id"}),
					batchWindows(silver, 15*time.Second, 5*time.Second, []string{"device_id"}, closed), t5Checks, t.Errorf); n > 0 {
					t.Fatalf("s15: %d differences from the batch aggregation", n)
				}
				vs := checkFeed(t, lake, "gold/s15")
				if got := cdftest.Counts(vs[len(vs)-1:]); fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Errorf("the replay's change rows = %v, want %v", got, tc.want)
				}
			})
		}
	}
}

// tamperLatest makes gold's row of the latest window starting in r wrong, as another writer
// could: "bump" adds 1000 to its count n, "drop" removes it, "ghost" adds a copy of it under a
// device no event has.
func tamperLatest(t *testing.T, lake objstore.Bucket, path string, r Range, how string) {
	t.Helper()
	ctx := context.Background()
	tbl, snap := openSnapshot(t, lake, path)
	lo, hi := r.From.UnixMicro(), r.To.UnixMicro()
	latest := int64(-1 << 62)
	for b, err := range tbl.Scan(ctx, table.ScanOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range b.Column("window").Children[0].Int64 {
			if s >= lo && s < hi {
				latest = max(latest, s)
			}
		}
	}
	if latest < lo {
		t.Fatal("gold has no window in the replay range")
	}
	done := false
	if _, err := tbl.Rewrite(ctx, table.Rewrite{Snapshot: snap, Candidates: snap.Files(),
		File: func(_ context.Context, _ *txlog.Add, read func() ([]*pq.Batch, error)) (bool, []*pq.Batch, error) {
			bs, err := read()
			if err != nil || done {
				return false, nil, err
			}
			out, err := pq.NewBatch(bs[0].Schema)
			if err != nil {
				return false, nil, err
			}
			for _, b := range bs {
				for i := range b.Len() {
					if done || b.Column("window").Children[0].Int64[i] != latest {
						out.AppendRow(b, i)
						continue
					}
					done = true
					switch how {
					case "bump":
						out.AppendRow(b, i)
						out.Column("n").Int64[out.Len()-1] += 1000
					case "ghost":
						out.AppendRow(b, i)
						ghost, err := pq.NewBatch(b.Schema)
						if err != nil {
							return false, nil, err
						}
						ghost.AppendRow(b, i)
						dev := ghost.Column("device_id")
						dev.Data, dev.Offsets = []byte("ghost-device"), []int32{0, int32(len("ghost-device"))}
						out.AppendRow(ghost, 0)
					}
				}
			}
			return done, []*pq.Batch{out}, nil
		},
		Operation: func(table.RewriteResult) txlog.Operation { return txlog.Operation{Name: "TAMPER"} }}); err != nil {
		t.Fatal(err)
	}
	if !done {
		t.Fatalf("no row of window %d found", latest)
	}
}
