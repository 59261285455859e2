package gold

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestKeyTableAgainstMap inserts and removes random keys, checking every key against a Go map.
func TestKeyTableAgainstMap(t *testing.T) {
	tab := newKeyTable()
	var arena []byte
	var locs []keyLoc
	var hashes []uint32
	want := map[string]int32{}
	rng := rand.New(rand.NewPCG(3, 4))
	for step := 0; step < 20000; step++ {
		k := "k" + strconv.Itoa(rng.IntN(700))
		if id, ok := want[k]; ok && rng.IntN(2) == 0 {
			tab.remove(hashes[id], id)
			delete(want, k)
			locs[id] = keyLoc{}
			continue
		}
		if _, ok := want[k]; ok {
			continue
		}
		id, h := tab.find([]byte(k), arena, locs)
		if id >= 0 {
			t.Fatalf("step %d: absent key %q found as %d", step, k, id)
		}
		id = int32(len(locs))
		locs, hashes = append(locs, keyLoc{uint32(len(arena)), uint32(len(k))}), append(hashes, h)
		arena = append(arena, k...)
		tab.insert(h, id)
		want[k] = id
		if step%97 == 0 {
			for wk, wid := range want {
				if got, _ := tab.find([]byte(wk), arena, locs); got != wid {
					t.Fatalf("step %d: key %q -> %d, want %d", step, wk, got, wid)
				}
			}
			if tab.len() != len(want) {
				t.Fatalf("len %d want %d", tab.len(), len(want))
			}
		}
	}
}

// TestKeyArenaCompacts streams batches of new keys whose windows close at once: the removed
// keys' bytes are compacted away, so the arena stays near the live keys' size, and every
// emitted row still names its own key.
func TestKeyArenaCompacts(t *testing.T) {
	spec, _ := Tumbling(5 * minute)
	op := mustAgg(t, AggConfig{Window: spec, Mode: Append, NumKeys: 1, Aggs: []AggSpec{{Fn: Count, Column: -1}}})
	const perBatch = 2000
	maxArena := 0
	for b := range 40 {
		in := &Input{}
		for i := range perBatch {
			in.EventTime = append(in.EventTime, int64(b)*5*minute)
			in.Keys.Append([]byte("a-rather-long-device-key-" + strconv.Itoa(b) + "-" + strconv.Itoa(i)))
		}
		// Each batch's watermark closes the previous batch's window.
		res, err := op.ProcessBatch(in, 0, int64(b)*5*minute/1000)
		if err != nil {
			t.Fatal(err)
		}
		if b > 0 {
			if len(res.Rows) != perBatch {
				t.Fatalf("batch %d emitted %d rows, want %d", b, len(res.Rows), perBatch)
			}
			for _, r := range res.Rows {
				if !strings.HasPrefix(r.Key, "a-rather-long-device-key-"+strconv.Itoa(b-1)+"-") || r.Aggs[0].N != 1 {
					t.Fatalf("batch %d emitted key %q count %d", b, r.Key, r.Aggs[0].N)
				}
			}
		}
		maxArena = max(maxArena, len(op.keyArena))
	}
	live := perBatch * len("a-rather-long-device-key-39-1999")
	if maxArena > 4*live+1<<17 {
		t.Fatalf("arena reached %d bytes for about %d bytes of live keys", maxArena, live)
	}
}
