package silver

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestClusterTimes(t *testing.T) {
	const m = 60_000_000 // a minute in µs
	for _, tc := range []struct {
		name      string
		times     []int64
		maxRanges int
		want      [][2]int64
	}{
		{"one", []int64{5}, 4, [][2]int64{{5, 5}}},
		{"burst and stragglers", []int64{100 * m, 3, 10*m + 1, 10 * m, 10*m + 30_000_000, 11 * m}, 8,
			[][2]int64{{3, 3}, {10 * m, 11 * m}, {100 * m, 100 * m}}},
		{"gap at exactly one minute joins", []int64{0, m, 2*m + 1}, 8, [][2]int64{{0, m}, {2*m + 1, 2*m + 1}}},
		{"too many ranges: the gap doubles", []int64{0, 3 * m, 6 * m, 20 * m}, 2, [][2]int64{{0, 6 * m}, {20 * m, 20 * m}}},
	} {
		got := clusterTimes(slices.Clone(tc.times), m, tc.maxRanges)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	// Every time lies in exactly one range; ranges are ascending and disjoint.
	rng := rand.New(rand.NewPCG(3, 4))
	times := make([]int64, 500)
	for i := range times {
		times[i] = rng.Int64N(1000 * m)
	}
	ranges := clusterTimes(slices.Clone(times), m, 16)
	if len(ranges) > 16 {
		t.Fatalf("%d ranges, want at most 16", len(ranges))
	}
	for i := 1; i < len(ranges); i++ {
		if ranges[i][0] <= ranges[i-1][1] {
			t.Fatalf("ranges %v and %v overlap or are out of order", ranges[i-1], ranges[i])
		}
	}
	for _, x := range times {
		n := 0
		for _, r := range ranges {
			if r[0] <= x && x <= r[1] {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("time %d lies in %d ranges", x, n)
		}
	}
}
