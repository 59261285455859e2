package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table/source"
)

// joinWorkload writes files files of random rows to each side's silver table: keys k0-k5,
// left times moving forward with jitter and some rows far behind (late), right rows near a
// left row of the same key (most of them within the join's range) or anywhere; the last file
// of each side moves both watermarks far ahead, closing every earlier window.
func joinWorkload(t testing.TB, seed uint64, files int) *mem.Bucket {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed+1))
	lake := mem.New()
	n := 0
	id := func(side string) string { n++; return fmt.Sprintf("%s%d", side, n) }
	for f := range files {
		base := float64(f * 20)
		var left, right []jrow
		for range 8 + rng.IntN(8) {
			tl := base + rng.Float64()*30
			if rng.IntN(6) == 0 {
				tl = base - rng.Float64()*60 // behind the watermark, often late
			}
			key := fmt.Sprintf("k%d", rng.IntN(6))
			if rng.IntN(15) == 0 {
				key = "" // null keys never match
			}
			left = append(left, jrow{id: id("L"), key: key, t: secs(float64(int64(tl*1000)) / 1000)})
			if rng.IntN(10) < 7 {
				tr := tl - 2 + rng.Float64()*14
				right = append(right, jrow{id: id("R"), key: key, t: secs(float64(int64(tr*1000)) / 1000)})
			}
		}
		for range rng.IntN(4) {
			right = append(right, jrow{id: id("R"), key: fmt.Sprintf("k%d", rng.IntN(6)), t: secs(base - 30 + rng.Float64()*60)})
		}
		if f == files-1 {
			left = append(left, jrow{id: id("L"), key: "end", t: secs(base + 10000)})
			right = append(right, jrow{id: id("R"), key: "end", t: secs(base + 10000)})
		}
		appendSilver(t, lake, "silver/imp", left)
		appendSilver(t, lake, "silver/clk", right)
	}
	return lake
}

// crashJoin is the join of the restart and crash tests: a full outer join (both kinds of
// null rows) with an aggregation over it, one file a side per batch, deltas between
// snapshots.
func crashJoin() spec.Join {
	j := joinSpec("full_outer", 0, 10*time.Second, 10*time.Second, 15*time.Second)
	j.Limit = source.ReadLimit{MaxFiles: 1}
	j.Gold = []spec.Aggregation{{Name: "jcount", Table: "gold/jcount", Quarantine: "silver/late_jcount",
		Window:  spec.Window{Size: 10 * time.Second, Slide: 10 * time.Second},
		GroupBy: []string{"k"}, Aggregates: []spec.Aggregate{{Fn: "count", As: "count"}}, TimeColumn: "t"}}
	return j
}

var joinTables = []string{"gold/joined", "silver/late_joined", "gold/jcount", "silver/late_jcount"}

func joinSnapshot(t testing.TB, lake objstore.Bucket) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, p := range joinTables {
		out[p] = tableRows(t, lake, p, silver.ColQueryID)
	}
	return out
}

func sameJoinTables(t *testing.T, what string, got, want map[string][]string) {
	t.Helper()
	for _, p := range joinTables {
		if !slices.Equal(got[p], want[p]) {
			t.Fatalf("%s: table %s has %d rows, the uninterrupted run %d (or different rows)", what, p, len(got[p]), len(want[p]))
		}
	}
}

// cancelAfterBatch cancels the run as soon as a batch has committed: the next run starts at
// a batch boundary.
type cancelAfterBatch struct{ cancel context.CancelFunc }

func (c cancelAfterBatch) OnProgress(*Progress) { c.cancel() }

// TestJoinRestartAtEveryBatchBoundary: a join run stopped after every batch and restarted by
// a new runner ends with the same joined table, join quarantine, gold and gold quarantine as
// one uninterrupted run (the per-source watermarks, the operator state with its deltas and
// the aggregation's state all come back from the checkpoint).
func TestJoinRestartAtEveryBatchBoundary(t *testing.T) {
	base := joinWorkload(t, 1, 10)
	j := crashJoin()
	ref := copyLake(t, base)
	rep := runJoin(t, ref, j, spec.AvailableNow)
	want := joinSnapshot(t, ref)
	if rep.Batches < 10 || len(want["gold/joined"]) == 0 || len(want["silver/late_joined"]) == 0 || len(want["gold/jcount"]) == 0 ||
		rep.LeftUnmatchedRows == 0 || rep.RightUnmatchedRows == 0 {
		t.Fatalf("the reference run (%+v) misses a kind of row: the test would prove little", rep)
	}
	lake := copyLake(t, base)
	runs := 0
	for ; ; runs++ {
		ctx, cancel := context.WithCancel(context.Background())
		r, err := NewJoin(JoinOptions{Lake: lake, Join: j, Clock: runStreamClock, Listener: cancelAfterBatch{cancel}})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := r.Run(ctx)
		cancel()
		if err == nil && rep.Batches == 0 {
			break
		}
		if runs > 100 {
			t.Fatal("the restarted runs never finish")
		}
	}
	if runs < rep.Batches {
		t.Fatalf("%d restarts for %d batches", runs, rep.Batches)
	}
	sameJoinTables(t, "restarted at every batch", joinSnapshot(t, lake), want)
}

// TestJoinRandomCrashes kills join runs at random object-store calls (reads, writes,
// deletes, before or after they land) until enough runs have crashed (40; 1,000 with
// MEDALLION_LONG=1), a fresh runner each time as a restarted process; every table ends as in
// an uninterrupted run.
func TestJoinRandomCrashes(t *testing.T) {
	ctx := context.Background()
	base := joinWorkload(t, 2, 8)
	j := crashJoin()
	ref := copyLake(t, base)
	runJoin(t, ref, j, spec.AvailableNow)
	want := joinSnapshot(t, ref)
	minCrashes := 40
	if os.Getenv("MEDALLION_LONG") == "1" {
		minCrashes = 1000
	}
	crashes := 0
	for round := uint64(0); crashes < minCrashes; round++ {
		lake := copyLake(t, base)
		for attempt := uint64(0); ; attempt++ {
			faulty := objstore.WithFaults(lake, objstore.FaultPlan{Seed: round*1000 + attempt, Faults: []objstore.Fault{
				{Op: objstore.OpPut, Rate: 0.04, After: attempt%2 == 1},
				{Op: objstore.OpPutIfAbsent, Rate: 0.04, After: attempt%2 == 0},
				{Op: objstore.OpGet, Rate: 0.01},
				{Op: objstore.OpDelete, Rate: 0.05},
			}})
			r, err := NewJoin(JoinOptions{Lake: faulty, Join: j, Clock: runStreamClock})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Run(ctx); err == nil {
				break
			}
			crashes++
			if attempt > 200 {
				t.Fatalf("round %d: no run got through in 200 attempts", round)
			}
		}
		sameJoinTables(t, fmt.Sprintf("round %d after %d crashes", round, crashes), joinSnapshot(t, lake), want)
	}
}

// TestJoinAggregationOracle: the aggregation over the join counts, per closed window and
// key, exactly the joined table's rows (those with a time) minus the ones it quarantined,
// computed here from the joined table alone.
func TestJoinAggregationOracle(t *testing.T) {
	lake := joinWorkload(t, 3, 12)
	j := crashJoin()
	rep := runJoin(t, lake, j, spec.AvailableNow)
	type group struct{ start, key string }
	count := func(path string) map[group]int {
		m := map[group]int{}
		for _, line := range tableRows(t, lake, path) {
			var row map[string]any
			if err := json.Unmarshal([]byte(line), &row); err != nil {
				t.Fatal(err)
			}
			ts, ok := row["t"].(string)
			if !ok {
				continue // a right row null-extended: no left time to window
			}
			tm, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil {
				t.Fatal(err)
			}
			key, _ := row["k"].(string)
			m[group{tm.Truncate(10 * time.Second).UTC().Format(time.RFC3339), key}]++
		}
		return m
	}
	joined, quarantined := count(j.Table), count(j.Gold[0].Quarantine)
	gold := map[group]int{}
	for _, line := range tableRows(t, lake, j.Gold[0].Table) {
		var row struct {
			Window struct{ Start time.Time }
			K      *string
			Count  int
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatal(err)
		}
		key := ""
		if row.K != nil {
			key = *row.K
		}
		gold[group{row.Window.Start.UTC().Format(time.RFC3339), key}] = row.Count
	}
	closedBefore := epoch.Add(time.Duration(rep.WatermarkMs-10_001) * time.Millisecond) // the output watermark
	checked := 0
	for g, n := range joined {
		start, _ := time.Parse(time.RFC3339, g.start)
		if !start.Add(10 * time.Second).Before(closedBefore) {
			continue // still open
		}
		if gold[g] != n-quarantined[g] {
			t.Fatalf("window %s key %q: gold counts %d, the joined table has %d rows of which %d quarantined", g.start, g.key, gold[g], n, quarantined[g])
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("only %d closed windows checked", checked)
	}
	for g := range gold {
		if _, ok := joined[g]; !ok {
			t.Fatalf("gold has window %s key %q, which no joined row is in", g.start, g.key)
		}
	}
}
