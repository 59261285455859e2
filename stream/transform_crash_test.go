package stream

import (
	"context"
	"fmt"
	"testing"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/objstore"
)

// TestStreamTransformConvergesAfterFailures: with computed columns (one the dedup key) and a
// filter sending rows to rejects, a run failed at a write, before or after it lands, then rerun
// by a new runner ends with the same tables as an uninterrupted run, rejects included: the
// transform computes and filters the same on a rerun of a batch.
func TestStreamTransformConvergesAfterFailures(t *testing.T) {
	ctx := context.Background()
	base := landBronze(t, 8, 2000, 4)
	cfg := parseConfig(t, "2s", "  max_files_per_trigger: 2", e2eGold)
	cfg.Stream.Dedup = []string{"id_norm"}
	cfg.Transform = config.Transform{
		Columns: []config.ComputedColumn{{Name: "id_norm", Expr: "upper(event_id)"}, {Name: "cents", Expr: "amount * 100"}},
		Filter:  &config.Filter{Name: "no_views", Expr: "event_type <> 'view'", OnFilter: config.OnFilterReject},
	}
	ref := copyLake(t, base)
	rep := mustRun(t, ref, cfg, "available-now")
	want := snapshotTables(t, ref)
	if rep.Rejected == 0 || rep.SilverRows == 0 {
		t.Fatalf("report %+v: the workload does not exercise the filter", rep)
	}
	for _, after := range []bool{false, true} {
		failed := 0
		for k := 1; ; k += 4 {
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
