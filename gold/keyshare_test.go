package gold

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
)

// sharePairConfigs are a tumbling and a sliding aggregation over one key column, as the bench
// pipeline's two golds are, with a float sum (its exact state) and a count.
func sharePairConfigs(t testing.TB, mode Mode) []AggConfig {
	tumbling, err := Tumbling(5 * minute)
	if err != nil {
		t.Fatal(err)
	}
	sliding, err := NewWindowSpec(10*minute, 5*minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	aggs := []AggSpec{{Fn: Count, Column: -1, Name: "n"}, {Fn: Sum, Column: 0, Name: "s"}}
	return []AggConfig{
		{Window: tumbling, Mode: mode, NumKeys: 1, Aggs: aggs},
		{Window: sliding, Mode: mode, NumKeys: 1, Aggs: aggs},
	}
}

// resultSig is everything a batch's result says, as text: rows (window, key, each value's
// encoding), late rows and the counters.
func resultSig(t *testing.T, r *Result) string {
	var b bytes.Buffer
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "%d-%d %q", row.Window.Start, row.Window.End, row.Key)
		for i := range row.Aggs {
			enc, err := row.Aggs[i].AppendBinary(nil)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, " %x", enc)
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "late %v wm %d dropped %d total %d updated %d removed %d out %d", r.LateRows, r.LateWatermarkMs,
		r.NumRowsDroppedByWatermark, r.NumRowsTotal, r.NumRowsUpdated, r.NumRowsRemoved, r.NumRowsOutput)
	return b.String()
}

// checkShareInvariant checks that the shared table holds exactly the keys of the aggregations'
// live groups, each findable under its id, and that each aggregation's reference count of a
// key is its number of groups of that key.
func checkShareInvariant(t *testing.T, ks *KeyShare, step int) {
	t.Helper()
	want := map[string]bool{}
	for ai, a := range ks.aggs {
		refs := make([]int32, len(a.keyRefs))
		for s := range a.groups {
			if g := &a.groups[s]; g.live() {
				refs[g.key]++
				want[a.key(g.key)] = true
			}
		}
		for id := range refs {
			if refs[id] != a.keyRefs[id] {
				t.Fatalf("batch %d: aggregation %d holds %d references to key %d, its groups %d", step, ai, a.keyRefs[id], id, refs[id])
			}
		}
	}
	live := 0
	for id := range ks.t.keyLocs {
		if !ks.t.live(int32(id)) {
			continue
		}
		live++
		k := ks.t.key(int32(id))
		if !want[k] {
			t.Fatalf("batch %d: key %q (id %d) is in the table, and no group refers to it", step, k, id)
		}
		if got, _ := ks.t.findKey([]byte(k)); got != int32(id) {
			t.Fatalf("batch %d: key %q found as %d, it is %d", step, k, got, id)
		}
	}
	if live != len(want) || ks.t.keyIDs.Len() != len(want) {
		t.Fatalf("batch %d: the table holds %d keys (index %d), the groups %d", step, live, ks.t.keyIDs.Len(), len(want))
	}
}

// runShared runs one batch through aggregations sharing ks, concurrently as the stream runs
// them, and settles the table after.
func runShared(t *testing.T, ks *KeyShare, ops []*Aggregation, in *Input, late, evict int64) []string {
	ids, hs := ks.Intern(&in.Keys)
	sigs := make([]string, len(ops))
	errs := make([]error, len(ops))
	var wg sync.WaitGroup
	for i, op := range ops {
		wg.Go(func() {
			in2 := *in
			in2.KeyIDs, in2.KeyHashes = ids, hs
			res, err := op.ProcessBatch(&in2, late, evict)
			if err != nil {
				errs[i] = err
				return
			}
			sigs[i] = resultSig(t, res)
		})
	}
	wg.Wait()
	ks.Settle()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return sigs
}

// TestSharedKeyTableMatchesOwnTables feeds random batches (random keys, many of them new and
// short-lived, late rows, evictions, empty batches) to two aggregations sharing a key table
// and to the same two with tables of their own: every batch's results, state deltas and
// snapshots must be the same bytes. Midway the shared pair is restored (a snapshot, then the
// deltas after it, into tables of their own, then shared again), as the stream restores after
// a crash; and the table must hold exactly the keys the groups refer to after every batch.
func TestSharedKeyTableMatchesOwnTables(t *testing.T) {
	for _, mode := range []Mode{Append, Update} {
		t.Run(mode.String(), func(t *testing.T) {
			cfgs := sharePairConfigs(t, mode)
			own := make([]*Aggregation, len(cfgs))
			shared := make([]*Aggregation, len(cfgs))
			for i, c := range cfgs {
				own[i], shared[i] = mustAgg(t, c), mustAgg(t, c)
			}
			ks, err := ShareKeys(shared)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(17, uint64(mode)))
			clock, wm, prevWM := at(10, 0), int64(0), int64(0)
			const snapAt, restoreAt, batches = 30, 45, 90
			var snaps [][]byte
			var deltas [][][]byte
			late, removed, freed, maxKeys := 0, int64(0), 0, 0
			for b := range batches {
				in := &Input{}
				if rng.IntN(5) != 0 {
					for range 1 + rng.IntN(200) {
						in.EventTime = append(in.EventTime, clock-rng.Int64N(20*minute))
						// A few hot keys and a long tail of keys seen once or twice.
						k := "hot" + strconv.Itoa(rng.IntN(5))
						if rng.IntN(3) != 0 {
							k = "k" + strconv.Itoa(rng.IntN(2000))
						}
						in.Keys.Append([]byte(k))
					}
					fs := make([]float64, len(in.EventTime))
					for i := range fs {
						fs[i] = float64(rng.IntN(1000)) / 8
					}
					in.Columns = []Column{{Float64: fs}}
				} else {
					in.Columns = []Column{{Float64: []float64{}}}
				}
				clock += rng.Int64N(3 * minute)
				wantSigs := make([]string, len(own))
				for i, op := range own {
					res, err := op.ProcessBatch(in, prevWM, wm)
					if err != nil {
						t.Fatal(err)
					}
					wantSigs[i] = resultSig(t, res)
				}
				gotSigs := runShared(t, ks, shared, in, prevWM, wm)
				for i := range own {
					if gotSigs[i] != wantSigs[i] {
						t.Fatalf("batch %d aggregation %d:\nshared %s\nown    %s", b, i, gotSigs[i], wantSigs[i])
					}
					wd, err := own[i].AppendDelta(nil)
					if err != nil {
						t.Fatal(err)
					}
					gd, err := shared[i].AppendDelta(nil)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(wd, gd) {
						t.Fatalf("batch %d aggregation %d: the state deltas differ", b, i)
					}
					ws, err := own[i].AppendSnapshot(nil)
					if err != nil {
						t.Fatal(err)
					}
					gs, err := shared[i].AppendSnapshot(nil)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(ws, gs) {
						t.Fatalf("batch %d aggregation %d: the snapshots differ", b, i)
					}
					switch {
					case b == snapAt:
						snaps = append(snaps, gs)
						deltas = append(deltas, nil)
					case b > snapAt && b <= restoreAt:
						deltas[i] = append(deltas[i], gd)
					}
				}
				checkShareInvariant(t, ks, b)
				for i := range own {
					late += len(own[i].res.LateRows)
					removed += own[i].res.NumRowsRemoved
				}
				if n := ks.t.keyIDs.Len(); n < maxKeys {
					freed++
				} else {
					maxKeys = n
				}
				if b == restoreAt {
					for i, c := range cfgs {
						r, err := RestoreAggregation(c, snaps[i])
						if err != nil {
							t.Fatal(err)
						}
						for _, d := range deltas[i] {
							if err := r.ApplyDelta(d); err != nil {
								t.Fatal(err)
							}
						}
						shared[i] = r
					}
					if ks, err = ShareKeys(shared); err != nil {
						t.Fatal(err)
					}
					checkShareInvariant(t, ks, b)
				}
				prevWM = wm
				wm = max(wm, (clock-12*minute)/1000)
			}
			// The test must reach what it is about: late rows, evictions, keys freed.
			if late == 0 || removed == 0 || freed == 0 {
				t.Fatalf("late rows %d, groups evicted %d, batches that freed keys %d: the test does not reach them", late, removed, freed)
			}
		})
	}
}

// TestSharedKeyReleasedByTheLastAggregation follows one key through a tumbling 5m and a
// sliding 10m/5m aggregation sharing a table: when the tumbling window closes the sliding one
// still holds the key, which stays (same id, same bytes); it is freed only when the last
// window that refers to it closes. A key only late rows carry is not kept at all, and a freed
// id taken by a new key starts with no references.
func TestSharedKeyReleasedByTheLastAggregation(t *testing.T) {
	cfgs := sharePairConfigs(t, Append)
	ops := []*Aggregation{mustAgg(t, cfgs[0]), mustAgg(t, cfgs[1])}
	ks, err := ShareKeys(ops)
	if err != nil {
		t.Fatal(err)
	}
	batch := func(late, evict int64, times []int64, keys ...string) {
		t.Helper()
		in := &Input{EventTime: times, Columns: []Column{{Float64: make([]float64, len(times))}}}
		for _, k := range keys {
			in.Keys.Append([]byte(k))
		}
		runShared(t, ks, ops, in, late, evict)
	}
	ms := func(us int64) int64 { return us / 1000 }
	batch(0, 0, []int64{at(10, 1)}, "x")
	id, _ := ks.t.findKey([]byte("x"))
	if id < 0 || ops[0].keyRefs[id] != 1 || ops[1].keyRefs[id] != 2 {
		t.Fatalf("key x: id %d, references %v %v, want 1 (tumbling) and 2 (sliding)", id, ops[0].keyRefs, ops[1].keyRefs)
	}
	// 10:05 closes the tumbling window and the first sliding one: the second still holds x.
	batch(0, ms(at(10, 5)), nil)
	if got, _ := ks.t.findKey([]byte("x")); got != id || ks.t.key(id) != "x" || ops[0].keyRefs[id] != 0 || ops[1].keyRefs[id] != 1 {
		t.Fatalf("after the tumbling window closed: x is %d (was %d), references %d and %d", got, id, ops[0].keyRefs[id], ops[1].keyRefs[id])
	}
	// A row late for every window: its key is interned for the batch and gone after it.
	batch(ms(at(10, 5)), ms(at(10, 5)), []int64{at(9, 0)}, "late")
	if got, _ := ks.t.findKey([]byte("late")); got >= 0 {
		t.Fatalf("a key only a late row carried stayed in the table as %d", got)
	}
	checkShareInvariant(t, ks, 3)
	// 10:10 closes the last window of x.
	batch(ms(at(10, 5)), ms(at(10, 10)), nil)
	if got, _ := ks.t.findKey([]byte("x")); got >= 0 || ks.t.keyIDs.Len() != 0 {
		t.Fatalf("x outlived its last window: id %d, %d keys in the table", got, ks.t.keyIDs.Len())
	}
	// A new key takes a freed id, with no references from either aggregation.
	batch(ms(at(10, 10)), ms(at(10, 10)), []int64{at(10, 11)}, "y")
	y, _ := ks.t.findKey([]byte("y"))
	if y != id || ops[0].keyRefs[y] != 1 || ops[1].keyRefs[y] != 2 {
		t.Fatalf("key y: id %d (x's freed id %d), references %d and %d, want 1 and 2", y, id, ops[0].keyRefs[y], ops[1].keyRefs[y])
	}
	checkShareInvariant(t, ks, 5)
}

// TestShareKeysRefuses: session windows, differing key columns, a second share and inputs
// without the shared ids (or with ids for an aggregation that has its own table) are errors.
func TestShareKeysRefuses(t *testing.T) {
	cfgs := sharePairConfigs(t, Append)
	sess := AggConfig{Session: &SessionSpec{Gap: 5 * minute}, Mode: Append, NumKeys: 1, Aggs: []AggSpec{{Fn: Count, Column: -1}}}
	twoKeys := cfgs[1]
	twoKeys.NumKeys = 2
	for name, cs := range map[string][]AggConfig{"session": {cfgs[0], sess}, "key columns": {cfgs[0], twoKeys}} {
		if _, err := ShareKeys([]*Aggregation{mustAgg(t, cs[0]), mustAgg(t, cs[1])}); err == nil {
			t.Errorf("%s: shared", name)
		}
	}
	ops := []*Aggregation{mustAgg(t, cfgs[0]), mustAgg(t, cfgs[1])}
	if _, err := ShareKeys(ops); err != nil {
		t.Fatal(err)
	}
	if _, err := ShareKeys(ops[:1]); err == nil {
		t.Error("an aggregation shared twice")
	}
	in := &Input{EventTime: []int64{at(10, 0)}, Columns: []Column{{Float64: []float64{1}}}}
	in.Keys.Append([]byte("k"))
	if _, err := ops[0].ProcessBatch(in, 0, 0); !errors.Is(err, ErrBadInput) {
		t.Errorf("a shared aggregation fed no key ids: %v", err)
	}
	own := mustAgg(t, cfgs[0])
	in.KeyIDs, in.KeyHashes = []int32{0}, []uint32{0}
	if _, err := own.ProcessBatch(in, 0, 0); !errors.Is(err, ErrBadInput) {
		t.Errorf("an aggregation with its own table fed key ids: %v", err)
	}
	if err := ops[0].ApplyDelta(nil); err == nil {
		t.Error("a delta applied to a shared aggregation")
	}
}
