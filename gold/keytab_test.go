package gold

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestKeyTableAgainstMap interns and releases random keys of random lengths through the
// operator's key table, checking every key against a Go map; the released keys' bytes pass
// the compaction threshold many times over, so ids and bytes are checked across compactions.
func TestKeyTableAgainstMap(t *testing.T) {
	spec, _ := Tumbling(5 * minute)
	a := mustAgg(t, AggConfig{Window: spec, Mode: Append, NumKeys: 1, Aggs: []AggSpec{{Fn: Count, Column: -1}}})
	want := map[string]int32{}
	rng := rand.New(rand.NewPCG(3, 4))
	compactions := 0
	for step := 0; step < 20000; step++ {
		n := rng.IntN(700)
		k := "k" + strconv.Itoa(n) + strings.Repeat("-", n%97)
		if id, ok := want[k]; ok && rng.IntN(2) == 0 {
			arena := len(a.keyArena)
			a.releaseKey(id)
			delete(want, k)
			if len(a.keyArena) < arena {
				compactions++
			}
			continue
		}
		if _, ok := want[k]; ok {
			continue
		}
		if id, _ := a.findKey([]byte(k)); id >= 0 {
			t.Fatalf("step %d: absent key %q found as %d", step, k, id)
		}
		id, _ := a.internKey([]byte(k))
		a.keyRefs[id]++ // as a group would: compaction keeps referenced keys only
		if got := a.key(id); got != k {
			t.Fatalf("step %d: key %q interned as %d, which holds %q", step, k, id, got)
		}
		want[k] = id
		if step%97 == 0 {
			for wk, wid := range want {
				if got, _ := a.findKey([]byte(wk)); got != wid || a.key(wid) != wk {
					t.Fatalf("step %d: key %q -> %d (%q), want %d", step, wk, got, a.key(wid), wid)
				}
			}
			if a.keyIDs.Len() != len(want) {
				t.Fatalf("len %d want %d", a.keyIDs.Len(), len(want))
			}
		}
	}
	if compactions == 0 {
		t.Fatal("the key arena was never compacted: the test does not reach compaction")
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
