package gold

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestKeyTableAgainstMap inserts and removes random keys, checking every key against a Go map.
func TestKeyTableAgainstMap(t *testing.T) {
	tab := newKeyTable()
	var keys []string
	var hashes []uint64
	want := map[string]int32{}
	rng := rand.New(rand.NewPCG(3, 4))
	for step := 0; step < 20000; step++ {
		k := "k" + strconv.Itoa(rng.IntN(700))
		if id, ok := want[k]; ok && rng.IntN(2) == 0 {
			tab.remove(hashes[id], id)
			delete(want, k)
			keys[id] = ""
			continue
		}
		if _, ok := want[k]; ok {
			continue
		}
		id, h := tab.find([]byte(k), keys)
		if id >= 0 {
			t.Fatalf("step %d: absent key %q found as %d", step, k, id)
		}
		id = int32(len(keys))
		keys, hashes = append(keys, k), append(hashes, h)
		tab.insert(h, id)
		want[k] = id
		if step%97 == 0 {
			for wk, wid := range want {
				if got, _ := tab.find([]byte(wk), keys); got != wid {
					t.Fatalf("step %d: key %q -> %d, want %d", step, wk, got, wid)
				}
			}
			if tab.len() != len(want) {
				t.Fatalf("len %d want %d", tab.len(), len(want))
			}
		}
	}
}
