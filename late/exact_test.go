package late

import (
	"context"
	"testing"
	"time"
)

// TestReplayAfterMergeLateCommitsNothing is issue 30's reproduction of inexact sums: after the
// stream and merge-late, a replay of the whole range recomputed every window and rewrote those
// whose float sum or avg came out in another order of additions (82.73 against
// 82.72999999999999), so a nightly replay rewrote gold every night. Sums are exact now: every
// window equals the big.Rat oracle bit for bit (checkInvariantE), and the replay finds gold
// equal to its recomputation and commits nothing, with one worker or several.
func TestReplayAfterMergeLateCommitsNothing(t *testing.T) {
	base, cfg, srep := pipeline(t, 30, 6000, 6, slidingNumericYAML)
	ctx := context.Background()
	mrep, err := MergeLate(ctx, opts(base, cfg))
	if err != nil {
		t.Fatal(err)
	}
	merged := false
	for _, g := range mrep.Gold {
		merged = merged || g.Gold != nil && g.Gold.Updated > 0
	}
	if !merged {
		t.Fatalf("merge-late updated no gold row: the test proves nothing: %+v", mrep)
	}
	checkInvariantE(t, base, srep.WatermarkMs)
	golds := []string{"gold/t5", "gold/s10", "gold/s15"}
	r := replayRange(silverTimes(t, base), 0, 1)
	r.To = r.To.Add(time.Hour)
	for _, workers := range []int{1, 3} {
		lake := cloneLake(t, base)
		before := map[string]int64{}
		for _, g := range golds {
			before[g] = goldVersion(t, lake, g)
		}
		o := opts(lake, cfg)
		o.Workers = workers
		rep, err := Replay(ctx, o, r)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range rep.Gold {
			if !g.Unchanged || g.Gold != nil {
				t.Errorf("%d workers: %s: a replay of what gold holds committed %+v", workers, g.Name, g.Gold)
			}
		}
		for _, g := range golds {
			if v := goldVersion(t, lake, g); v != before[g] {
				t.Errorf("%d workers: %s: version %d after the replay, %d before", workers, g, v, before[g])
			}
		}
		checkInvariantE(t, lake, srep.WatermarkMs)
	}
}
