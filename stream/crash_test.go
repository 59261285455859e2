package stream

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/medallion-lake/medallion/internal/testshared"
	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/silver"
)

// copyLake clones every object of src into a fresh mem bucket.
func copyLake(t testing.TB, src objstore.Bucket) *mem.Bucket {
	t.Helper()
	dst := mem.New()
	copyInto(t, src, dst)
	return dst
}

// copyInto copies every object of src into dst.
func copyInto(t testing.TB, src, dst objstore.Bucket) {
	t.Helper()
	ctx := context.Background()
	for info, err := range src.List(ctx, "", objstore.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		data, err := objstore.ReadAll(ctx, src, info.Key)
		if err != nil {
			t.Fatal(err)
		}
		if err := objstore.PutBytes(ctx, dst, info.Key, data); err != nil {
			t.Fatal(err)
		}
	}
}

var outputTables = []string{"silver/events", "bronze/rejects", "silver/late_g5", "silver/late_g10", "gold/g5", "gold/g10"}

func snapshotTables(t testing.TB, lake objstore.Bucket) map[string][]string {
	out := map[string][]string{}
	for _, p := range outputTables {
		out[p] = tableRows(t, lake, p, silver.ColQueryID)
	}
	return out
}

func sameTables(t *testing.T, what string, got, want map[string][]string) {
	t.Helper()
	for _, p := range outputTables {
		if !slices.Equal(got[p], want[p]) {
			t.Fatalf("%s: table %s has %d rows, the uninterrupted run %d (or different rows)", what, p, len(got[p]), len(want[p]))
		}
	}
}

// TestStreamConvergesAfterFailures fails the k-th write of a stream run, for every k until a
// run gets through, before or after the write lands (a crash, or a lost answer), then reruns
// cleanly (a new runner, as a restarted process, or the same one again): every table ends
// with the same rows as an uninterrupted run (vectors C1-C3, WM-E5 on every path through the
// batch).
func TestStreamConvergesAfterFailures(t *testing.T) {
	// Parallel: its own in-memory lake, no environment or package state changed; one of the
	// package's longest tests, so it overlaps the others instead of ending the run alone.
	t.Parallel()
	ctx := context.Background()
	// Under -race 1200 lines in the same six files: every fault point is still tried (their
	// number follows the files and batches, not the rows), each run over fewer rows.
	base := landBronze(t, 7, int64(testshared.Sized(3000, 1200)), 6)
	cfg := parseConfig(t, "2s", "  dedup: [event_id]\n  max_files_per_trigger: 2", e2eGold)
	ref := copyLake(t, base)
	mustRun(t, ref, cfg, "available-now")
	want := snapshotTables(t, ref)
	if len(want["gold/g5"]) == 0 || len(want["silver/late_g5"]) == 0 {
		t.Fatal("the reference run wrote no gold or no quarantine rows: the test would prove little")
	}
	step := 1
	if testing.Short() {
		step = 4
	}
	for _, op := range []string{objstore.OpPut, objstore.OpPutIfAbsent, objstore.OpDelete} {
		for _, after := range []bool{false, true} {
			failed := 0
			for k := 1; ; k += step {
				lake := copyLake(t, base)
				faulty := objstore.WithFaults(lake, objstore.FaultPlan{Faults: []objstore.Fault{{Op: op, Nth: k, After: after}}})
				r, _ := New(Options{Lake: faulty, Query: specs.Query(cfg), Clock: runStreamClock})
				_, firstErr := r.Run(ctx)
				var err error
				if k%2 == 0 {
					_, err = r.Run(ctx) // the same runner again: it must reload its state
				} else {
					_, err = runStream(t, lake, cfg, "available-now") // a restarted process
				}
				if err != nil {
					t.Fatalf("%s k=%d after=%v: clean rerun failed: %v (first run: %v)", op, k, after, err, firstErr)
				}
				sameTables(t, fmt.Sprintf("%s k=%d after=%v (first run: %v)", op, k, after, firstErr), snapshotTables(t, lake), want)
				if faulty.Fired() == 0 {
					break
				}
				failed++
			}
			if op != objstore.OpDelete && failed < 3 {
				t.Fatalf("%s after=%v: only %d runs had a fault injected", op, after, failed)
			}
		}
	}
}

var crashRestarts = flag.Int("stream.crash-restarts", 0, "minimum number of crashed runs in TestStreamRandomCrashes (default 20, 50 with MEDALLION_LONG=1)")

// TestStreamRandomCrashes kills runs at random object-store calls (reads, writes, deletes,
// before or after they land) until at least -stream.crash-restarts runs (20 by default, 50 with
// MEDALLION_LONG=1, 10 with -short) have crashed, with a fresh runner each time, as restarted
// processes would be; the tables end identical to an uninterrupted run's. The same random loop
// as the long mode, shorter: 50 crashes cost 20 CPU s under -race.
func TestStreamRandomCrashes(t *testing.T) {
	// Parallel: its own in-memory lake, no environment or package state changed; one of the
	// package's longest tests, so it overlaps the others instead of ending the run alone.
	t.Parallel()
	ctx := context.Background()
	// Under -race 1200 lines in the same twelve files (batches): as in
	// TestStreamConvergesAfterFailures, the crash points follow the batches, not the rows.
	base := landBronze(t, 11, int64(testshared.Sized(3000, 1200)), 12)
	cfg := parseConfig(t, "2s", "  dedup: [event_id]\n  max_files_per_trigger: 1", e2eGold)
	ref := copyLake(t, base)
	mustRun(t, ref, cfg, "available-now")
	want := snapshotTables(t, ref)
	minCrashes := *crashRestarts
	if minCrashes == 0 {
		minCrashes = 20
		if os.Getenv("MEDALLION_LONG") == "1" {
			minCrashes = 50
		}
	}
	if testing.Short() {
		minCrashes = min(minCrashes, 10)
	}
	crashes := 0
	for round := uint64(0); crashes < minCrashes; round++ {
		lake := copyLake(t, base)
		for attempt := uint64(0); ; attempt++ {
			faulty := objstore.WithFaults(lake, objstore.FaultPlan{Seed: round*1000 + attempt, Faults: []objstore.Fault{
				{Op: objstore.OpPut, Rate: 0.03, After: attempt%2 == 1},
				{Op: objstore.OpPutIfAbsent, Rate: 0.03, After: attempt%2 == 0},
				{Op: objstore.OpGet, Rate: 0.01},
				{Op: objstore.OpDelete, Rate: 0.05},
			}})
			r, _ := New(Options{Lake: faulty, Query: specs.Query(cfg), Clock: runStreamClock})
			if _, err := r.Run(ctx); err == nil {
				break
			}
			crashes++
			if attempt > 200 {
				t.Fatalf("round %d: no run got through in 200 attempts", round)
			}
		}
		sameTables(t, fmt.Sprintf("round %d after %d crashes", round, crashes), snapshotTables(t, lake), want)
	}
}
