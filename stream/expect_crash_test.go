package stream

import (
	"context"
	"fmt"
	"testing"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/objstore"
)

// TestStreamExpectationsConvergeAfterFailures: with warn and drop expectations (one reading
// current_timestamp()), a run failed at a write, before or after it lands, then rerun by a new
// runner ends with the same tables as an uninterrupted run, rejects included: expectations
// decide the same on a rerun of a batch.
func TestStreamExpectationsConvergeAfterFailures(t *testing.T) {
	ctx := context.Background()
	base := landBronze(t, 8, 2000, 4)
	cfg := parseConfig(t, "2s", "  dedup: [event_id]\n  max_files_per_trigger: 2", e2eGold)
	cfg.Expectations = []config.Expectation{
		{Name: "cheap", Expect: "amount IS NULL OR amount < 25", OnViolation: "drop"},
		{Name: "early", Expect: "event_time < current_timestamp() - INTERVAL '2' DAY + INTERVAL '6' SECOND", OnViolation: "drop"},
		{Name: "typed", Expect: "event_type IN ('click', 'view')", OnViolation: "warn"},
	}
	ref := copyLake(t, base)
	rep := mustRun(t, ref, cfg, "available-now")
	want := snapshotTables(t, ref)
	if rep.Expectations[0].Dropped == 0 || rep.Expectations[1].Dropped == 0 || rep.Expectations[1].Passed == 0 || rep.Expectations[2].Failed == 0 {
		t.Fatalf("expectations %+v: the workload does not exercise them", rep.Expectations)
	}
	for _, after := range []bool{false, true} {
		failed := 0
		for k := 1; ; k += 3 {
			lake := copyLake(t, base)
			faulty := objstore.WithFaults(lake, objstore.FaultPlan{Faults: []objstore.Fault{{Op: objstore.OpPut, Nth: k, After: after}}})
			r, _ := New(Options{Lake: faulty, Query: specs.Query(cfg), Clock: runStreamClock})
			_, firstErr := r.Run(ctx)
			if _, err := runStream(t, lake, cfg, "available-now"); err != nil {
				t.Fatalf("k=%d after=%v: clean rerun failed: %v (first run: %v)", k, after, err, firstErr)
			}
			sameTables(t, fmt.Sprintf("k=%d after=%v (first run: %v)", k, after, firstErr), snapshotTables(t, lake), want)
			if faulty.Fired() == 0 {
				break
			}
			failed++
		}
		if failed < 3 {
			t.Fatalf("after=%v: only %d runs had a fault injected", after, failed)
		}
	}
}
