// Package textdist measures how far apart two names are, for the "did you mean" of an
// error message (an unknown config key, an unknown SQL function). It keeps no state.
package textdist

// Distance is the Damerau-Levenshtein distance of a and b in bytes (the names it compares are
// ASCII): insertions, deletions, substitutions and swaps of two adjacent bytes each count one.
// Names longer than 64 bytes are not typos of anything: they get a distance larger than any
// suggestion limit, without the quadratic work.
func Distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 20
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
