package gold

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGroupTableAgainstMap creates and evicts random (key, window) groups through the
// operator's look-up, with key hashes chosen to collide (small and consecutive, so that one
// key's windows and the next key's share home positions), checking every group against a map.
func TestGroupTableAgainstMap(t *testing.T) {
	spec, _ := Tumbling(5 * minute)
	a := mustAgg(t, AggConfig{Window: spec, Mode: Append, NumKeys: 1, Aggs: []AggSpec{{Fn: Count, Column: -1}}})
	type pair struct {
		key   int32
		start int64
	}
	want := map[pair]int32{}
	rng := rand.New(rand.NewPCG(5, 6))
	const keys = 300
	// Key ids are interned for real; their hashes are overwritten with colliding ones.
	for k := range keys {
		id, _ := a.internKey([]byte{byte(k), byte(k >> 8)})
		a.keyHash[id] = uint32(k / 3)
		a.keyRefs[id]++ // keep keys alive while their groups come and go
	}
	for step := range 50_000 {
		p := pair{int32(rng.IntN(keys)), int64(rng.IntN(8)) * spec.Slide}
		kh := a.keyHash[p.key]
		if s, ok := want[p]; ok {
			if got := a.findWindow(p.start, p.key, kh); got != s {
				t.Fatalf("step %d: %v found at %d, want %d", step, p, got, s)
			}
			if rng.IntN(2) == 0 {
				a.freeSlot(s)
				delete(want, p)
				if got := a.findWindow(p.start, p.key, kh); got >= 0 {
					t.Fatalf("step %d: freed %v still found at %d", step, p, got)
				}
			}
			continue
		}
		if got := a.findWindow(p.start, p.key, kh); got >= 0 {
			t.Fatalf("step %d: absent %v found at %d", step, p, got)
		}
		want[p] = a.windowSlot(p.start, p.key, kh)
	}
	if a.gtab.Len() != len(want) {
		t.Fatalf("table holds %d groups, want %d", a.gtab.Len(), len(want))
	}
	for p, s := range want {
		if got := a.findWindow(p.start, p.key, a.keyHash[p.key]); got != s {
			t.Fatalf("%v found at %d, want %d", p, got, s)
		}
	}
}

// TestPlacePairsMatchesOneAtATime: placePairs (index entries, groups and key counts loaded
// placeAhead pairs ahead) gives each pair the slot windowSlot gives it one pair at a time, and
// leaves the same groups, touched list and key counts, with colliding hashes, repeated groups
// within and across chunks, freed slots reused, the table growing midway and a last short
// chunk.
func TestPlacePairsMatchesOneAtATime(t *testing.T) {
	for _, ahead := range []int{loadAheadEntries, 0} {
		func() {
			defer func(n int) { loadAheadEntries = n }(loadAheadEntries)
			loadAheadEntries = ahead // 0: every index loads ahead
			testPlacePairs(t)
		}()
	}
}

// TestLoadAheadKeepsState: loading ahead at every index size (the stream does from 64k
// entries), the compat batches still write the old build's state bytes and a shared key table
// still matches tables of their own.
func TestLoadAheadKeepsState(t *testing.T) {
	defer func(n int) { loadAheadEntries = n }(loadAheadEntries)
	loadAheadEntries = 0
	t.Run("compat", TestStateCompatibleWithBeforePages)
	t.Run("shared", TestSharedKeyTableMatchesOwnTables)
	// The state's encodings read their groups ahead too (loadGroupsAhead).
	t.Run("delta", TestDeltaReplayEqualsSnapshot)
	t.Run("write-delta", TestWriteDeltaEqualsAppendDelta)
}

func testPlacePairs(t *testing.T) {
	spec, _ := NewWindowSpec(10*minute, 5*minute, 0)
	cfg := AggConfig{Window: spec, Mode: Append, NumKeys: 1, Aggs: []AggSpec{{Fn: Count, Column: -1}}}
	chunked, single := mustAgg(t, cfg), mustAgg(t, cfg)
	const keys = 200
	for _, a := range []*Aggregation{chunked, single} {
		for k := range keys {
			id, _ := a.internKey([]byte{byte(k), byte(k >> 8)})
			a.keyHash[id] = uint32(k / 4)
		}
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for batch := range 6 {
		ps := make([]pendingPair, 1+rng.IntN(5*placeAhead))
		if batch == 2 {
			ps = make([]pendingPair, 3000) // the table grows while the pairs are placed
		}
		for i := range ps {
			key := int32(rng.IntN(keys))
			ps[i] = pendingPair{start: int64(rng.IntN(12)) * spec.Slide, row: int32(i), key: key, keyHash: uint32(key / 4)}
		}
		for _, a := range []*Aggregation{chunked, single} {
			a.batch++
			a.pairSlot, a.pairRow, a.touched = a.pairSlot[:0], a.pairRow[:0], a.touched[:0]
		}
		chunked.placePairs(ps)
		for _, p := range ps {
			single.pairSlot = append(single.pairSlot, single.windowSlot(p.start, p.key, p.keyHash))
			single.pairRow = append(single.pairRow, p.row)
		}
		switch {
		case !slices.Equal(chunked.pairSlot, single.pairSlot), !slices.Equal(chunked.pairRow, single.pairRow):
			t.Fatalf("batch %d: pairs differ", batch)
		case !slices.Equal(chunked.touched, single.touched):
			t.Fatalf("batch %d: touched groups differ", batch)
		case !slices.Equal(chunked.groups, single.groups), !slices.Equal(chunked.keyRefs, single.keyRefs):
			t.Fatalf("batch %d: groups or key counts differ", batch)
		}
		// Free a third of the groups in both, so the next batch reuses slots.
		for s := range chunked.groups {
			if chunked.groups[s].live() && rng.IntN(3) == 0 {
				chunked.freeSlot(int32(s))
				single.freeSlot(int32(s))
			}
		}
	}
}
