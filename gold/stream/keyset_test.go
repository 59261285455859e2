package stream

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestKeySetAgainstMap checks keySet against a plain map for sets from empty to past the
// bitset's first growth, with absent keys that share long prefixes with present ones.
func TestKeySetAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 7, 300, 5000} {
		in := map[string]bool{}
		var keys [][]byte
		for len(keys) < n {
			k := fmt.Sprintf("evt-%08d", rng.IntN(4*n+10))
			if !in[k] {
				in[k] = true
				keys = append(keys, []byte(k))
			}
		}
		s := newKeySet(keys)
		for i := range 4*n + 10 {
			k := fmt.Sprintf("evt-%08d", i)
			if got := s.has([]byte(k)); got != in[k] {
				t.Fatalf("n=%d: has(%q) = %v, want %v", n, k, got, in[k])
			}
		}
		if s.has(nil) {
			t.Fatalf("n=%d: the empty key is not in the set", n)
		}
	}
}
