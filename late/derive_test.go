package late

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
)

// derivedYAML rolls t5 (5s by event_type, device_id) up to 30s by event_type, and that to
// 2m overall: three levels, as 5m -> 1h -> 1d at a test's scale.
const derivedYAML = `  - name: d30
    source: t5
    window: {type: tumbling, size: 30s}
    group_by: [event_type]
    aggregates:
      - {fn: sum, column: n, as: n}
      - {fn: sum, column: total, as: total}
      - {fn: min, column: lo, as: lo}
      - {fn: max, column: hi, as: hi}
      - {fn: avg, column: mean, as: mean}
      - {fn: sum, column: qsum, as: qsum}
  - name: d2m
    source: d30
    window: {type: tumbling, size: 2m}
    aggregates:
      - {fn: count, column: n, as: n}
      - {fn: sum, column: total, as: total}
      - {fn: min, column: lo, as: lo}
      - {fn: max, column: hi, as: hi}
      - {fn: avg, column: mean, as: mean}
      - {fn: sum, column: qsum, as: qsum}
`

// derivedDiffs compares every level with the batch aggregation of all of silver at its grain
// (plain Go, exact rational sums: harness_test.go), over the windows the watermark closed.
func derivedDiffs(t testing.TB, lake objstore.Bucket, wmMs int64, errorf func(string, ...any)) int {
	silver := readSilver(t, lake, "silver/events")
	closed := func(_, end int64) bool { return end <= wmMs*1000 }
	n := 0
	for _, lv := range []struct {
		name string
		size time.Duration
		by   []string
	}{{"t5", 5 * time.Second, []string{"event_type", "device_id"}}, {"d30", 30 * time.Second, []string{"event_type"}}, {"d2m", 2 * time.Minute, nil}} {
		want := batchWindows(silver, lv.size, lv.size, lv.by, closed)
		if len(want) == 0 {
			t.Fatalf("%s: the workload closes no window at this grain", lv.name)
		}
		n += diffGold(lv.name, readGold(t, lake, "gold/"+lv.name, lv.by), want, t5Checks, errorf)
	}
	return n
}

// TestDerivedInvariantE: on random late-data workloads, three levels (t5 -> d30 -> d2m) kept
// after the stream and again after merge-late each equal the batch group-by of silver at
// their grain; a pass with nothing new commits nothing; the derived tables' change feeds
// replay to the tables (invariant C).
func TestDerivedInvariantE(t *testing.T) {
	ctx := context.Background()
	seeds := []int64{1}
	if os.Getenv("MEDALLION_LONG") != "" {
		seeds = []int64{1, 2, 3, 4, 5, 6}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			lake, cfg, srep := pipeline(t, seed, 4000, 4, derivedYAML)
			o := opts(lake, cfg)
			ds := specs.Derived(cfg)
			if len(ds) != 2 || ds[0].Name != "d30" || ds[1].Name != "d2m" {
				t.Fatalf("derived specs %+v", ds)
			}
			if _, err := DeriveAll(ctx, o, ds); err != nil {
				t.Fatal(err)
			}
			// Control: before merge-late the late rows are missing at every level.
			if n := derivedDiffs(t, lake, srep.WatermarkMs, func(string, ...any) {}); n == 0 {
				t.Fatal("every level already equals the batch aggregation before merge-late: the test proves nothing")
			}
			if _, err := MergeLate(ctx, o); err != nil {
				t.Fatal(err)
			}
			reps, err := DeriveAll(ctx, o, ds)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range reps {
				if r.Commit == nil || r.Windows == 0 {
					t.Errorf("%s: the pass after merge-late corrected nothing: %+v", r.Name, r)
				}
			}
			if n := derivedDiffs(t, lake, srep.WatermarkMs, t.Errorf); n > 0 {
				t.Fatalf("invariant E: %d differences", n)
			}
			before := tableVersions(t, lake, "gold/d30", "gold/d2m")
			reps, err = DeriveAll(ctx, o, ds)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range reps {
				if !r.UpToDate || r.Commit != nil {
					t.Errorf("%s: a pass with nothing new did work: %+v", r.Name, r)
				}
			}
			if after := tableVersions(t, lake, "gold/d30", "gold/d2m"); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("versions %v -> %v after a pass with nothing new", before, after)
			}
			for _, g := range []string{"gold/d30", "gold/d2m"} {
				checkFeed(t, lake, g)
			}
			// A changed definition (an aggregate dropped) is refused, naming the way out.
			changed := append([]spec.Derived(nil), ds...)
			changed[0].Aggregates = changed[0].Aggregates[1:]
			if _, err := DeriveAll(ctx, o, changed); !errors.Is(err, ErrDefinitionChanged) || !strings.Contains(err.Error(), "delete the table") {
				t.Errorf("changed definition: %v", err)
			}
		})
	}
}

func tableVersions(t testing.TB, lake objstore.Bucket, paths ...string) []int64 {
	t.Helper()
	var out []int64
	for _, p := range paths {
		snap, err := table.Open(objstore.WithPrefix(lake, p), table.Options{}).Latest(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, snap.Version())
	}
	return out
}
