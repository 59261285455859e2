package late

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/internal/testshared"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/table/cdftest"
)

// at is a time of 2024-05-01 (hh:mm or hh:mm:ss) in µs.
func at(t testing.TB, hhmm string) int64 {
	t.Helper()
	if len(hhmm) == 5 {
		hhmm += ":00"
	}
	v, err := time.Parse(time.RFC3339, "2024-05-01T"+hhmm+"Z")
	if err != nil {
		t.Fatal(err)
	}
	return v.UnixMicro()
}

// TestMergeLateJoinJV12 is the contract-shaped vector of spec/stream-joins.md §10: a left
// outer join of impressions and clicks, where I5 and C2 arrive late. Merge-late adds (I2,C2),
// replaces (I2,null) and writes (I5,null), whose window W_last has closed.
func TestMergeLateJoinJV12(t *testing.T) {
	s := newJoinSim(t, mem.New(), simJoin("left_outer", 0, time.Hour, 10*time.Minute, 20*time.Minute))
	s.oneSourceLine = true // and the others write one line per side
	I := func(id, k, hhmm string) jrow { return jrow{id: id, ad: ad(k), t: at(t, hhmm)} }
	s.step([]jrow{I("I1", "ad1", "12:00"), I("I2", "ad2", "12:05")}, []jrow{I("C1", "ad1", "12:10")})
	s.step([]jrow{I("I3", "ad3", "12:40")}, []jrow{I("C9", "ad9", "12:45")})
	s.step([]jrow{I("I4", "ad4", "14:00")}, []jrow{I("C9b", "ad9", "14:30")})
	s.step([]jrow{I("I5", "ad5", "12:30")}, []jrow{I("C4", "ad4", "14:59:59"), I("C2", "ad2", "12:30")})

	row := func(l, r string) string { return l + "|" + r }
	f := func(id, k, hhmm string) string { r := I(id, k, hhmm); return fmtRow(&r) }
	before := []string{
		row(f("I1", "ad1", "12:00"), f("C1", "ad1", "12:10")),
		row(f("I2", "ad2", "12:05"), "-"),
		row(f("I3", "ad3", "12:40"), "-"),
		row(f("I4", "ad4", "14:00"), f("C4", "ad4", "14:59:59")),
	}
	slices.Sort(before)
	if got := s.joinedRows(); !slices.Equal(got, before) {
		t.Fatalf("the simulated stream wrote\n%s", diffLines(got, before))
	}
	if want := at(t, "13:50") / 1000; s.lastEvict != want {
		t.Fatalf("W_last = %d, want %d (13:50)", s.lastEvict, want)
	}

	rep := s.merge()
	want := []string{
		row(f("I1", "ad1", "12:00"), f("C1", "ad1", "12:10")),
		row(f("I2", "ad2", "12:05"), f("C2", "ad2", "12:30")),
		row(f("I3", "ad3", "12:40"), "-"),
		row(f("I4", "ad4", "14:00"), f("C4", "ad4", "14:59:59")),
		row(f("I5", "ad5", "12:30"), "-"),
	}
	slices.Sort(want)
	if got := s.joinedRows(); !slices.Equal(got, want) {
		t.Fatalf("after merge-late:\n%s", diffLines(got, want))
	}
	s.checkJ("JV12")
	if rep.LateRows != 2 || rep.PairsAdded != 1 || rep.NullRowsAdded != 1 || rep.NullRowsReplaced != 1 || rep.Commit == nil {
		t.Fatalf("report %+v, want 2 late rows, 1 pair and 1 null row added, 1 null row replaced, a commit", rep)
	}

	// A rerun is a no-op: no commit, the same rows.
	again := s.merge()
	if again.Commit != nil || again.PairsAdded+again.NullRowsAdded+again.NullRowsReplaced != 0 {
		t.Fatalf("rerun changed the table: %+v", again)
	}
	if got := s.joinedRows(); !slices.Equal(got, want) {
		t.Fatalf("after the rerun:\n%s", diffLines(got, want))
	}
}

// randomWorkload generates both sides' rows (skewed random delays, duplicates, null keys)
// and splits them, in arrival order, into micro-batches of random size.
func randomWorkload(rng *rand.Rand, n int) [][2][]jrow {
	start := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC).UnixMicro()
	var all []struct {
		side int
		r    jrow
	}
	for side := range 2 {
		t := start
		for i := range n {
			t += int64(rng.IntN(2000)) * 1000 // ms steps
			r := jrow{id: fmt.Sprintf("%c%d", "LR"[side], i), t: t}
			if rng.IntN(30) > 0 {
				r.ad = ad(string(rune('a' + rng.IntN(5))))
			}
			copies := 1
			if rng.IntN(20) == 0 {
				copies = 2 + rng.IntN(2) // identical rows: identical output rows
			}
			for range copies {
				d := int64(rng.ExpFloat64() * 2000) // ms: mostly on time
				switch rng.IntN(10) {
				case 0:
					d += int64(rng.IntN(60_000)) // the skewed tail: late rows
				case 1, 2:
					// Just past the watermark: late rows whose match window is still open,
					// which stay pending over several merges.
					d += 17_000 + int64(rng.IntN(10_000))
				}
				r.arr = r.t + d*1000
				all = append(all, struct {
					side int
					r    jrow
				}{side, r})
			}
		}
	}
	slices.SortStableFunc(all, func(a, b struct {
		side int
		r    jrow
	}) int {
		return cmp.Compare(a.r.arr, b.r.arr)
	})
	var out [][2][]jrow
	for len(all) > 0 {
		k := min(len(all), 1+rng.IntN(40))
		var b [2][]jrow
		for _, e := range all[:k] {
			b[e.side] = append(b[e.side], e.r)
		}
		out = append(out, b)
		all = all[k:]
	}
	return out
}

// TestMergeLateJoinRandom checks invariant J against the nested-loop oracle after every
// merge-late of randomized workloads, for every join type: merges are interleaved with the
// batches at random, and a final rerun must change nothing.
func TestMergeLateJoinRandom(t *testing.T) {
	// Parallel: its own in-memory lake, no environment or package state changed; one of the
	// package's longest tests, so it overlaps the others instead of ending the run alone.
	t.Parallel()
	// One seed per type by default (seconds); MEDALLION_LONG=1 runs eight. Under -race the
	// workloads are 200 rows a side instead of 400 (40 CPU s down to about 15): late rows,
	// pending rows re-merged, duplicates and data skipping all still occur (the test fails
	// when they do not), only fewer times.
	seeds := 1
	if os.Getenv("MEDALLION_LONG") == "1" {
		seeds = 8
	}
	for _, typ := range []string{"inner", "left_outer", "right_outer", "full_outer", "left_semi"} {
		for seed := range seeds {
			t.Run(fmt.Sprintf("%s/%d", typ, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(seed), uint64(len(typ))))
				lower := []time.Duration{0, -5 * time.Second, 2 * time.Second}[rng.IntN(3)]
				upper := []time.Duration{5 * time.Second, 10 * time.Second}[rng.IntN(2)]
				s := newJoinSim(t, mem.New(), simJoin(typ, lower, upper, 10*time.Second, 20*time.Second))
				merges, late, pending := 0, int64(0), int64(0)
				read, files := 0, 0
				for i, b := range randomWorkload(rng, testshared.Sized(400, 300)) {
					s.step(b[0], b[1])
					if rng.IntN(3) == 0 {
						rep := s.merge()
						late += rep.LateRows - rep.PendingRows
						pending += rep.PendingRows
						read, files = read+rep.SilverFilesRead, files+rep.SilverFiles
						merges++
						s.checkJ(fmt.Sprintf("merge %d after batch %d", merges, i))
					}
				}
				rep := s.merge()
				late += rep.LateRows - rep.PendingRows
				read, files = read+rep.SilverFilesRead, files+rep.SilverFiles
				s.checkJ("final merge")
				if again := s.merge(); again.Commit != nil {
					t.Fatalf("rerun committed: %+v", again)
				}
				s.checkJ("rerun")
				// Invariant C on the joined table: the stream's appends and every merge's
				// change rows (a null-extended row replaced by its match is an update pair).
				feed := checkFeed(t, s.lake, s.j.Table)
				t.Logf("joined table change rows: %v", cdftest.Counts(feed))
				t.Logf("%d batches, %d+%d rows, %d late rows merged over %d merges (%d rows re-merged while pending)", s.batch, len(s.rows[0]), len(s.rows[1]), late, merges+1, pending)
				if late == 0 {
					t.Fatal("the workload had no late rows: it tests nothing")
				}
				// Data skipping: the merges open at most half of the silver files (about a third here).
				t.Logf("silver files opened: %d of %d", read, files)
				if files == 0 || read*2 > files {
					t.Fatalf("merges opened %d of %d silver files: data skipping does not work", read, files)
				}
			})
		}
	}
}

// TestMergeLateJoinPending: a late row whose match window is still open when it is merged
// stays pending; an on-time partner arriving after that merge (the stream cannot pair it: the
// late row is not in its state) is paired by the next merge, although no new row was
// quarantined in between.
func TestMergeLateJoinPending(t *testing.T) {
	for _, typ := range []string{"inner", "left_outer", "left_semi"} {
		t.Run(typ, func(t *testing.T) {
			s := newJoinSim(t, mem.New(), simJoin(typ, 0, 10*time.Second, 10*time.Second, 10*time.Second))
			sec := func(id, k string, v int64) jrow { return jrow{id: id, ad: ad(k), t: v * 1_000_000} }
			s.step([]jrow{sec("L1", "z", 100)}, []jrow{sec("R1", "z", 100)}) // W = 90
			s.step([]jrow{sec("L2", "a", 85)}, nil)                          // late: 85 <= 90
			if rep := s.merge(); rep.LateRows != 1 {
				t.Fatalf("first merge: %+v", rep)
			}
			s.checkJ("first merge")
			s.step(nil, []jrow{sec("R2", "a", 93)}) // on time, matches L2@85 (window 85..95)
			rep := s.merge()
			if rep.PendingRows != 1 || rep.Commit == nil {
				t.Fatalf("second merge: %+v, want the pending row merged again and a commit", rep)
			}
			s.checkJ("second merge")
		})
	}
}

// TestMergeLateJoinSemiOnce is JV10 (spec §10): a left semi join emits each left row once;
// the late R2@22 matches L2@20, which the stream already emitted, so merge-late must not add
// it again.
func TestMergeLateJoinSemiOnce(t *testing.T) {
	s := newJoinSim(t, mem.New(), simJoin("left_semi", -5*time.Second, 5*time.Second, 10*time.Second, 10*time.Second))
	sec := func(id, k string, v int64) jrow { return jrow{id: id, ad: ad(k), t: v * 1_000_000} }
	s.step([]jrow{sec("L1", "1", 10)}, []jrow{sec("R1", "1", 12), sec("R1b", "1", 8)})
	s.step(nil, []jrow{sec("R1c", "1", 14)})
	s.step([]jrow{sec("L2", "2", 20)}, []jrow{sec("R2", "2", 21)})
	s.step([]jrow{sec("L9", "9", 60)}, []jrow{sec("R9", "9", 60)})
	s.step(nil, []jrow{sec("R2b", "2", 22)}) // late: 22 <= 50
	want := []string{"L1/1@10000000|-", "L2/2@20000000|-", "L9/9@60000000|-"}
	if got := s.joinedRows(); !slices.Equal(got, want) {
		t.Fatalf("stream:\n%s", diffLines(got, want))
	}
	rep := s.merge()
	if got := s.joinedRows(); !slices.Equal(got, want) {
		t.Fatalf("after merge-late (%+v):\n%s", rep, diffLines(got, want))
	}
	if rep.LateRows != 1 || rep.SemiRowsAdded != 0 {
		t.Fatalf("report %+v: want the late row read and nothing added", rep)
	}
	s.checkJ("JV10")
}

// TestMergeLateJoinCrash fails every storage call of a merge in turn (before it, and after a
// write took effect): the joined table is always either as the stream left it or fully
// merged (one commit), and a rerun converges to invariant J.
func TestMergeLateJoinCrash(t *testing.T) {
	// Parallel: its own in-memory lake, no environment or package state changed; one of the
	// package's longest tests, so it overlaps the others instead of ending the run alone.
	t.Parallel()
	// Every write fails in turn: data files (put) and the commit (put-if-absent), before
	// the call and after it took effect; a read failure only aborts earlier.
	for _, op := range []string{objstore.OpGet, objstore.OpPut, objstore.OpPutIfAbsent} {
		// The same lake afresh for each kind of fault.
		lake := mem.New()
		rng := rand.New(rand.NewPCG(7, 18))
		s := newJoinSim(t, lake, simJoin("full_outer", -2*time.Second, 5*time.Second, 10*time.Second, 20*time.Second))
		for _, b := range randomWorkload(rng, testshared.Sized(120, 60)) {
			s.step(b[0], b[1])
		}
		before, want := s.joinedRows(), s.oracle(s.lastEvict)
		if slices.Equal(before, want) {
			t.Fatal("the workload needs no merge: it tests nothing")
		}
		merged := false
		for nth := 1; ; nth++ {
			if nth > 500 {
				t.Fatal("merge-late never ran without a fault")
			}
			if op == objstore.OpGet && nth > 5 {
				break
			}
			fb := objstore.WithFaults(lake, objstore.FaultPlan{Faults: []objstore.Fault{{Op: op, Nth: nth, After: nth%2 == 0 && op != objstore.OpGet}}})
			_, err := MergeLateJoin(s.ctx, Options{Lake: fb, MaxAttempts: 1}, s.j)
			got := s.joinedRows()
			switch {
			case slices.Equal(got, want):
				merged = true
			case merged || !slices.Equal(got, before):
				t.Fatalf("%s fault %d (err %v) left the joined table half merged:\n%s", op, nth, err, diffLines(got, want))
			}
			if fb.Fired() == 0 {
				if err != nil {
					t.Fatal(err)
				}
				break
			}
			if err == nil && !merged {
				t.Fatalf("%s fault %d: no error and no merge", op, nth)
			}
		}
		if op == objstore.OpGet {
			continue
		}
		if !merged {
			t.Fatalf("%s: the merge never landed", op)
		}
		if rep := s.merge(); rep.Commit != nil {
			t.Fatalf("%s: a rerun after the merge landed committed again: %+v", op, rep)
		}
		s.checkJ(op + " faults")
		// Each faulted run wrote change files under unique names and no commit named them:
		// the feed a reader sees is the landed merge's, and invariant C holds.
		checkFeed(t, lake, s.j.Table)
	}
}

// TestMergeLateJoinSilverAsRead: rows a source appended to silver after the join's last
// batch are not the join's yet (the next batch judges them); merge-late reads silver as the
// join's offsets say, so it neither pairs them nor counts them.
func TestMergeLateJoinSilverAsRead(t *testing.T) {
	s := newJoinSim(t, mem.New(), simJoin("inner", 0, 10*time.Second, 10*time.Second, 10*time.Second))
	sec := func(id, k string, v int64) jrow { return jrow{id: id, ad: ad(k), t: v * 1_000_000} }
	s.step([]jrow{sec("L1", "z", 100)}, []jrow{sec("R1", "z", 100)}) // W = 90
	s.step([]jrow{sec("L2", "a", 85)}, nil)                          // late
	// The clicks source writes R2@93 to silver; the join has not read it.
	b, _ := pq.NewBatch(rightSchema)
	r2 := sec("R2", "a", 93)
	appendRow(b.Columns, &r2)
	if _, err := s.open(s.j.Right.Silver).Append(s.ctx, []*pq.Batch{b}, table.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	rep := s.merge()
	if rep.PairsAdded != 0 {
		t.Fatalf("merge-late paired a row the join has not read: %+v", rep)
	}
	s.checkJ("before the join reads R2") // the oracle knows only the rows the join read
	// The join's next batch reads R2 (on time, but L2 is not in its state): merge pairs them.
	s.rows[1] = append(s.rows[1], r2)
	s.silverV[1]++
	s.step(nil, nil)
	if rep := s.merge(); rep.PairsAdded != 1 {
		t.Fatalf("after the join read R2: %+v, want 1 pair added", rep)
	}
	s.checkJ("after the join read R2")
}

// TestMergeLateJoinGold: a gold aggregation over a left outer join, simulated as the stream
// runs it (the join's output watermark, late rows to its quarantine). After every join
// merge-late, which also replays the aggregation's windows the merged rows touch, gold equals
// the batch aggregation of the batch join for every emitted window (invariant E over the
// joined table).
func TestMergeLateJoinGold(t *testing.T) {
	// Parallel: its own in-memory lake, no environment or package state changed; one of the
	// package's longest tests, so it overlaps the others instead of ending the run alone.
	t.Parallel()
	seeds := 1
	if os.Getenv("MEDALLION_LONG") == "1" {
		seeds = 6
	}
	for _, typ := range []string{"left_outer", "inner", "full_outer"} {
		for seed := range seeds {
			t.Run(fmt.Sprintf("%s/%d", typ, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(3+uint64(seed), 18))
				s := newJoinSim(t, mem.New(), simJoin(typ, -2*time.Second, 5*time.Second, 10*time.Second, 20*time.Second))
				s.withGold(10 * time.Second)
				replayed := 0
				for i, b := range randomWorkload(rng, testshared.Sized(200, 100)) {
					s.step(b[0], b[1])
					if rng.IntN(5) == 0 {
						rep := s.merge()
						if rep.Gold != nil {
							replayed++
						}
						s.checkJ(fmt.Sprintf("merge after batch %d", i))
						s.checkE(fmt.Sprintf("merge after batch %d", i))
					}
				}
				s.merge()
				s.checkJ("final merge")
				s.checkE("final merge")
				// The aggregation's own merge-late over the join, as run merge-late calls it:
				// nothing is left to fold in, and gold stays right.
				if _, err := MergeLate(s.ctx, Options{Lake: s.lake, Query: JoinQuery(s.j), Join: &s.j}); err != nil {
					t.Fatal(err)
				}
				s.checkE("aggregation merge-late")
				if replayed == 0 {
					t.Fatal("no merge replayed the aggregation: the test tests nothing")
				}
			})
		}
	}
}

// TestMergeLateJoinGoldPending: a late pair whose join is settled but whose aggregation window
// the stream has not emitted yet stays pending, so that the merge after the window is emitted
// replays it with the pair.
func TestMergeLateJoinGoldPending(t *testing.T) {
	s := newJoinSim(t, mem.New(), simJoin("inner", 0, 5*time.Second, 10*time.Second, 10*time.Second))
	s.withGold(10 * time.Second)
	sec := func(id, k string, v int64) jrow { return jrow{id: id, ad: ad(k), t: v * 1_000_000} }
	s.step([]jrow{sec("L1", "z", 100)}, []jrow{sec("R1", "z", 100)}) // W = 90
	s.step([]jrow{sec("L2", "a", 84)}, []jrow{sec("R2", "a", 89)})   // both late
	rep := s.merge()
	if rep.PairsAdded != 1 {
		t.Fatalf("first merge: %+v", rep)
	}
	s.checkE("first merge")                                          // window [80, 90) is not emitted: the output watermark is 84.999
	s.step([]jrow{sec("L3", "z", 120)}, []jrow{sec("R3", "z", 120)}) // W = 110 emits [80, 90)
	rep = s.merge()
	if rep.PendingRows != 2 || rep.Gold == nil {
		t.Fatalf("second merge: %+v, want both late rows pending and a replay", rep)
	}
	s.checkJ("second merge")
	s.checkE("second merge")
}

// TestMergeLateJoinUncommitted: while the joined table holds rows of a batch the checkpoint
// has not committed (a crash between the append and the commit), merge-late refuses with
// ErrJoinUncommitted and changes nothing; the stream's rerun of that batch comes first.
func TestMergeLateJoinUncommitted(t *testing.T) {
	s := newJoinSim(t, mem.New(), simJoin("left_outer", 0, 10*time.Second, 10*time.Second, 10*time.Second))
	sec := func(id, k string, v int64) jrow { return jrow{id: id, ad: ad(k), t: v * 1_000_000} }
	s.step([]jrow{sec("L1", "z", 100)}, []jrow{sec("R1", "z", 100)})
	s.step([]jrow{sec("L2", "a", 85)}, nil) // late
	b, _ := pq.NewBatch(s.oschema)
	l3 := sec("L3", "b", 120)
	appendRow(b.Columns[:3], &l3)
	appendNulls(b.Columns[3:])
	if _, err := s.open(s.j.Table).Append(s.ctx, []*pq.Batch{b}, table.AppendOptions{Txn: &table.AppTxn{AppID: s.queryID, Version: s.batch}}); err != nil {
		t.Fatal(err)
	}
	before := s.joinedRows()
	_, err := MergeLateJoin(s.ctx, Options{Lake: s.lake}, s.j)
	if !errors.Is(err, ErrJoinUncommitted) {
		t.Fatalf("err = %v, want ErrJoinUncommitted", err)
	}
	if got := s.joinedRows(); !slices.Equal(got, before) {
		t.Fatalf("the refused merge changed the joined table:\n%s", diffLines(got, before))
	}
}

// TestMergeLateJoinUnwatermarkedSide: with no watermark on the right, its rows are never
// late and can arrive at any time, so a late left row stays pending for good and pairs with a
// right row that arrives long after the left row's window passed the watermark.
func TestMergeLateJoinUnwatermarkedSide(t *testing.T) {
	j := simJoin("inner", 0, 5*time.Second, 10*time.Second, 0)
	j.Right.Watermark = spec.Watermark{}
	s := newJoinSim(t, mem.New(), j)
	sec := func(id, k string, v int64) jrow { return jrow{id: id, ad: ad(k), t: v * 1_000_000} }
	// No state watermark, so no no-data batches: W reaches the late watermark a batch later.
	s.step([]jrow{sec("L1", "z", 100)}, nil) // the left node alone: 90
	s.step([]jrow{sec("L0", "z", 101)}, nil) // runs with W = 90
	s.step([]jrow{sec("L2", "a", 85)}, nil)  // late: 85 <= 90
	if rep := s.merge(); rep.LateRows != 1 {
		t.Fatalf("first merge: %+v", rep)
	}
	s.step([]jrow{sec("L3", "z", 200)}, nil) // W = 190
	s.step(nil, []jrow{sec("R2", "a", 87)})  // not late: the right has no watermark
	if rep := s.merge(); rep.PairsAdded != 1 || rep.PendingRows != 1 {
		t.Fatalf("merge: %+v, want the pending L2 paired with R2", rep)
	}
	s.checkJ("after R2")
}
