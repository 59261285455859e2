package hashtab

import (
	"encoding/binary"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// model is the oracle: each value with the hash it was stored under, in a Go map.
type model map[int32]uint32

// check compares every look-up of t with the model: each stored value is found under its own
// hash, no value under another's (hashes that differ only in the top bit count as one: the
// table keeps 31 bits), and the count agrees.
func check(t *testing.T, tab *Table[int32], want model, step int) {
	t.Helper()
	if tab.Len() != len(want) {
		t.Fatalf("step %d: Len %d, want %d", step, tab.Len(), len(want))
	}
	byHash := map[uint32][]int32{}
	for v, h := range want {
		byHash[h|usedBit] = append(byHash[h|usedBit], v)
	}
	for h, vs := range byHash {
		var got []int32
		hl := h &^ usedBit // the same look-up as h's
		for at, v, ok := tab.Find(hl, hl); ok; at, v, ok = tab.Find(hl, at+1) {
			got = append(got, v)
		}
		slices.Sort(got)
		slices.Sort(vs)
		if !slices.Equal(got, vs) {
			t.Fatalf("step %d: hash %#x holds %v, want %v", step, h, got, vs)
		}
	}
	if n := tab.Size(); n&(n-1) != 0 || tab.Len()*4 > n*3 {
		t.Fatalf("step %d: %d values in %d entries", step, tab.Len(), n)
	}
}

// TestTableAgainstMap runs random inserts, deletes and Retains against a map for hash functions from
// well spread to adversarial: every value under one hash, hashes that share their low bits
// (one home position in any table up to 2^16 entries), consecutive hashes (runs that
// overlap, as gold's windows of one key are placed), and hashes that differ only in the bit
// the table uses to mark an entry in use.
func TestTableAgainstMap(t *testing.T) {
	seed := maphash.MakeSeed()
	hashes := []struct {
		name string
		hash func(k int) uint32
	}{
		{"spread", func(k int) uint32 {
			return uint32(maphash.Comparable(seed, k))
		}},
		{"all equal", func(int) uint32 { return 7 }},
		{"same low bits", func(k int) uint32 { return uint32(k) << 16 }},
		{"consecutive", func(k int) uint32 { return uint32(k / 3) }},
		{"top bit only", func(k int) uint32 { return uint32(k%2) << 31 }},
		{"wrap around", func(k int) uint32 { return ^uint32(0) - uint32(k%5) }},
	}
	for _, hc := range hashes {
		t.Run(hc.name, func(t *testing.T) {
			for _, start := range []int{0, 1, 64} {
				tab := New[int32](start)
				want := model{}
				rng := rand.New(rand.NewPCG(uint64(start), 9))
				keys := 600
				if hc.name == "all equal" {
					keys = 100 // every probe walks every value
				}
				for step := range 6_000 {
					k := rng.IntN(keys)
					v, h := int32(k), hc.hash(k)
					if _, ok := want[v]; ok {
						if rng.IntN(2) == 0 {
							if !tab.Delete(h, v) {
								t.Fatalf("step %d: Delete(%#x, %d) found nothing", step, h, v)
							}
							delete(want, v)
						}
					} else {
						if tab.Delete(h, v) {
							t.Fatalf("step %d: Delete(%#x, %d) of an absent value succeeded", step, h, v)
						}
						tab.Insert(h, v)
						want[v] = h
					}
					if step%401 == 0 {
						check(t, &tab, want, step)
					}
					if step%1013 == 500 {
						// Drop about two values in three at once; later inserts and deletes
						// then run on the rebuilt probe runs.
						r := int32(rng.IntN(3))
						tab.Retain(func(v int32) bool { return v%3 == r })
						for v := range want {
							if v%3 != r {
								delete(want, v)
							}
						}
						check(t, &tab, want, step)
					}
				}
				check(t, &tab, want, -1)
			}
		})
	}
}

// TestTableGrows fills a table, checks it grew by doubling to the first size that holds its
// values at most three quarters full, then empties it and checks that nothing is left.
func TestTableGrows(t *testing.T) {
	tab := New[int32](0)
	if tab.Size() != minSize {
		t.Fatalf("New(0) has %d entries, want %d", tab.Size(), minSize)
	}
	want := model{}
	const n = 100_000
	for v := range int32(n) {
		h := uint32(v) * 2654435761
		tab.Insert(h, v)
		want[v] = h
	}
	check(t, &tab, want, 0)
	if tab.Size() != 1<<18 { // the first power of two that holds 100k at 3/4
		t.Fatalf("%d values in %d entries, want %d", n, tab.Size(), 1<<18)
	}
	if got := tab.Bytes(); got != 1<<18*8 {
		t.Fatalf("2^18 entries of int32 take %d bytes, want %d", got, 1<<18*8)
	}
	for v := range int32(n) {
		if !tab.Delete(want[v], v) {
			t.Fatalf("value %d not deleted", v)
		}
		delete(want, v)
	}
	check(t, &tab, want, 1)
	if tab.Resize(0); tab.Size() != minSize {
		t.Fatalf("an empty table resized to %d entries, want %d", tab.Size(), minSize)
	}
}

// TestTableReserve checks that after Reserve(n) the next n inserts never rehash (a batch's
// Touch would have warmed the wrong entries), at sizes around each growth point, and that the
// table still answers like the model.
func TestTableReserve(t *testing.T) {
	for _, pre := range []int{0, 5, 6, 7, 100, 767, 768, 3000} {
		for _, n := range []int{1, 2, 9, 500, 5000} {
			tab := New[int32](0)
			want := model{}
			v := int32(0)
			insert := func() {
				h := uint32(v) * 2654435761
				tab.Insert(h, v)
				want[v] = h
				v++
			}
			for range pre {
				insert()
			}
			tab.Reserve(n)
			size := tab.Size()
			hs := make([]uint32, n)
			for i := range hs {
				hs[i] = uint32(int(v)+i) * 2654435761
			}
			tab.Touch(hs)
			for range n {
				insert()
			}
			if tab.Size() != size {
				t.Fatalf("%d values, Reserve(%d): %d entries, then %d after the inserts", pre, n, size, tab.Size())
			}
			check(t, &tab, want, pre)
		}
	}
	var empty Table[int32]
	if empty.Touch([]uint32{1, 2}) != 0 {
		t.Fatal("Touch of a zero table read something")
	}
}

// TestTableValueTypes stores values of another shape (a 64-bit reference) and a struct: the
// table compares them whole on Delete.
func TestTableValueTypes(t *testing.T) {
	type ref uint64
	refs := New[ref](4)
	refs.Insert(1, ref(1)<<40)
	refs.Insert(1, ref(1)<<40|1)
	if refs.Delete(1, ref(1)<<41) {
		t.Fatal("deleted a reference that was never stored")
	}
	if !refs.Delete(1, ref(1)<<40) {
		t.Fatal("a stored reference was not deleted")
	}
	at, v, ok := refs.Find(1, 1)
	if !ok || v != ref(1)<<40|1 {
		t.Fatalf("look-up found %v %v, want the other reference", v, ok)
	}
	if _, _, ok := refs.Find(1, at+1); ok {
		t.Fatal("look-up found a third value")
	}

	type pair struct{ a, b int32 }
	pairs := New[pair](4)
	pairs.Insert(5, pair{1, 2})
	pairs.Insert(5, pair{2, 1})
	pairs.Delete(5, pair{1, 2})
	if pairs.Len() != 1 {
		t.Fatalf("Len %d after one delete of two", pairs.Len())
	} else if _, v, _ := pairs.Find(5, 5); v != (pair{2, 1}) {
		t.Fatalf("kept %v, want {2 1}", v)
	}
}

// FuzzTable plays a byte string as operations (insert, delete, resize) over a few hashes and
// values against the model.
func FuzzTable(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7})
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 2, 64, 0, 0, 1, 128, 0, 0, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		tab := New[int32](0)
		want := model{}
		for i := 0; i+4 <= len(ops); i += 4 {
			op := ops[i] >> 6
			v := int32(ops[i+1] % 64)
			h := uint32(binary.LittleEndian.Uint16(ops[i+2:])) * 0x10001
			if ops[i]&1 == 1 {
				h |= usedBit // the bit the table sets itself
			}
			switch _, ok := want[v]; {
			case op == 3:
				tab.Resize(int(v)) // never below what holds the values
			case ok && op >= 1:
				if !tab.Delete(want[v], v) {
					t.Fatalf("op %d: Delete(%#x, %d) found nothing", i/4, want[v], v)
				}
				delete(want, v)
			case !ok:
				tab.Insert(h, v)
				want[v] = h
			}
		}
		check(t, &tab, want, len(ops))
	})
}

// BenchmarkTable is the operators' use of the table in steady state: keys come and go (an
// insert and a delete per look-up that misses) over a table of 1k or 1M live values, and
// look-ups hit half the time.
func BenchmarkTable(b *testing.B) {
	for _, live := range []int{1 << 10, 1 << 20} {
		b.Run(strconv.Itoa(live), func(b *testing.B) {
			tab := New[int32](0)
			hashOf := func(v int32) uint32 { return uint32(uint64(v) * 0x9E3779B97F4A7C15 >> 32) }
			for v := range int32(live) {
				tab.Insert(hashOf(v), v)
			}
			next := int32(live)
			b.ResetTimer()
			for i := range b.N {
				v := next - int32(live) + int32(i%2)*int32(live/2)
				h := hashOf(v)
				found := false
				for at, got, ok := tab.Find(h, h); ok; at, got, ok = tab.Find(h, at+1) {
					if got == v {
						found = true
						break
					}
				}
				if !found {
					b.Fatalf("value %d not found", v)
				}
				if i%2 == 0 {
					// The oldest value goes, a new one comes.
					tab.Delete(h, v)
					tab.Insert(hashOf(next), next)
					next++
				}
			}
		})
	}
}
