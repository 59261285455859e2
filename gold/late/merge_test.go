package late

import (
	"context"
	"fmt"
	"testing"
)

// TestMergeLateInvariantE: after ingest + stream (available-now) + merge-late on randomized
// workloads, every tumbling and sliding gold table equals the batch aggregation of silver over
// the closed windows, computed here without the pipeline's window code.
func TestMergeLateInvariantE(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			lake, cfg, srep := pipeline(t, seed, 6000, 8, "")
			var quarantined int64
			for _, g := range srep.Gold {
				quarantined += g.LateRows
			}
			if quarantined == 0 {
				t.Fatal("no late rows: the workload does not exercise merge-late")
			}
			// Control: before merge-late the late rows are missing from closed windows.
			if n := invariantEDiffs(t, lake, srep.WatermarkMs, func(string, ...any) {}); n == 0 {
				t.Fatal("gold already equals the batch aggregation before merge-late: the test proves nothing")
			}
			rep, err := MergeLate(context.Background(), opts(lake, cfg))
			if err != nil {
				t.Fatal(err)
			}
			if rep.LateRows != quarantined {
				t.Errorf("merge-late folded %d late rows, the stream quarantined %d", rep.LateRows, quarantined)
			}
			checkInvariantE(t, lake, srep.WatermarkMs)
		})
	}
}
