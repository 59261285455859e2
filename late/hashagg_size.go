package late

// expectGroups returns the groups to make room for before the groups of a batch of pairs
// more (row, window) pairs are found: every pair a new group at most, or, once the table
// has outgrown its arrays, the groups the pairs still expected (h.expect, from the source's
// statistics) would make at the rate the last batch's pairs made new ones, with an eighth to
// spare. The arrays and the slot table then grow once or twice, to about their final size,
// not by doubling from 1024 (each step a copy of every array, a fresh array cleared and a
// rehash: a fifth of a replay's CPU at 1M events and 100k keys, where a group is about a
// pair). The estimate is at most the pairs expected (every pair a group), which the slice's
// memory budget (Options.SlicePairs) already allows for; where keys repeat more than the
// first batches show (rows out of time order, skewed keys) it overstates, within that bound.
// A cap of four times the groups so far was measured: 11% more CPU at 1M/100k (the
// arrays then grew three times), so there is none.
func (h *hashAgg) expectGroups(pairs int) int {
	need := len(h.gkey) + pairs
	seen, last, made := h.seen, h.lastPairs, len(h.gkey)-h.lastGroups
	h.seen, h.lastPairs, h.lastGroups = h.seen+int64(pairs), int64(pairs), len(h.gkey)
	if need <= cap(h.gkey) || last == 0 || h.expect <= seen {
		return need
	}
	rest := float64(h.expect-seen) * float64(made) / float64(last)
	est := len(h.gkey) + int(rest*9/8)
	return max(need, est)
}

// fileTime is a source file's row count and event-time range, from its statistics.
type fileTime struct{ recs, lo, hi int64 }

// fileTimes returns the statistics of the source's files that have them, for event-time
// column col: parsed once per source (windowSlices and every slice's estimate read them).
func (s *replaySource) fileTimes(col string) []fileTime {
	if s.times != nil && s.timesCol == col {
		return s.times
	}
	s.times, s.timesCol = []fileTime{}, col
	for _, f := range s.snap.Files() {
		if recs, lo, hi, ok := timeStats(f, col); ok {
			s.times = append(s.times, fileTime{recs, lo, hi})
		}
	}
	return s.times
}

// expectedPairs estimates the (row, window) pairs of the windows with start in [lo, hi]
// from the source's statistics: each file's rows spread evenly over its event-time range,
// every row of [lo, hi+size) in size/slide windows (rounded up).
func expectedPairs(src *replaySource, a *agg, lo, hi int64) int64 {
	size, slide := a.window.Size, a.window.Slide
	end := hi + size
	var rows float64
	for _, f := range src.fileTimes(a.evName) {
		if f.hi < lo || f.lo >= end {
			continue
		}
		b0, b1 := max(lo, f.lo), min(end-1, f.hi)
		rows += float64(f.recs) * float64(b1-b0+1) / (float64(f.hi-f.lo) + 1)
	}
	return int64(rows) * ((size + slide - 1) / slide)
}
