package gold

import (
	"math/rand/v2"
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
