package gold

import (
	"cmp"
	"slices"
	"strings"
)

// The order of emitted rows: window start, end, then the key's bytes, whatever the order in
// which groups were created or evicted (Result.Rows). Keys are ranked once per batch and the
// groups sorted on integers, by counting passes when the windows are few.

// rowSortKey is an emitted row's place in the output order: its window, then its key's rank.
type rowSortKey struct {
	start, end int64
	rank, row  int32
}

// sortSlots orders emitted groups by window start, end, then key bytes (orderRows' order).
func (a *Aggregation) sortSlots(slots []int32) {
	perm := a.orderRows(slots)
	tmp := append(slices.Grow(a.sortTmp[:0], len(slots)), slots...)
	for i, j := range perm {
		slots[i] = tmp[j]
	}
	a.sortTmp = tmp
}

// orderRows returns perm, the output order of the emitted groups slots: slots[perm[0]],
// slots[perm[1]], ... are by window start, end, then key bytes. slots may come in any order;
// in slot order (how collectEvictions lists them) every pass here reads the state
// sequentially. The keys are ranked first, each distinct key once, so that the groups sort on
// integers: with many keys a batch emits several groups a key, and comparing strings group
// against group cost more than the rest of the emit. After it, a.keyIDsBuf holds the batch's
// emitted keys in rank order and a.rowRank[j] is slots[j]'s key rank. perm is a.perm, valid
// until the next call.
func (a *Aggregation) orderRows(slots []int32) []int32 {
	n := len(slots)
	perm := slices.Grow(a.perm[:0], n)[:n]
	ranks := slices.Grow(a.rowRank[:0], n)[:n]
	a.perm, a.rowRank = perm, ranks
	a.keyIDsBuf = a.keyIDsBuf[:0]
	if n == 0 {
		return perm
	}
	if len(a.keyRank) < len(a.keyLocs) {
		a.keyRank = slices.Grow(a.keyRank[:0], len(a.keyLocs))[:len(a.keyLocs)]
	}
	for j, s := range slots {
		k := a.groups[s].key
		if a.keyRank[k] != -1 {
			a.keyRank[k] = -1
			a.keyIDsBuf = append(a.keyIDsBuf, k)
		}
		ranks[j] = k // the key id for now: its rank once the keys are sorted
	}
	a.sortKeys(a.keyIDsBuf)
	for rank, k := range a.keyIDsBuf {
		a.keyRank[k] = int32(rank)
	}
	for j, k := range ranks {
		ranks[j] = a.keyRank[k]
	}
	for _, k := range a.keyIDsBuf {
		a.keyRank[k] = 0 // any value but -1 marks a key not yet ranked
	}
	if a.ends == nil && a.countingSort(slots, ranks, perm) {
		return perm
	}
	a.rowOrder = a.rowOrder[:0]
	for j, s := range slots {
		w := a.window(s)
		a.rowOrder = append(a.rowOrder, rowSortKey{w.Start, w.End, ranks[j], int32(j)})
	}
	slices.SortFunc(a.rowOrder, func(x, y rowSortKey) int {
		if c := cmp.Compare(x.start, y.start); c != 0 {
			return c
		}
		if c := cmp.Compare(x.end, y.end); c != 0 {
			return c
		}
		return cmp.Compare(int64(x.rank), int64(y.rank))
	})
	for i, o := range a.rowOrder {
		perm[i] = o.row
	}
	return perm
}

// keyPrefix is a key id with 8 bytes of its key, big-endian, from where the batch's keys
// start to differ.
type keyPrefix struct {
	p  uint64
	id int32
}

// sortKeys orders key ids by their keys' bytes. Comparing the keys themselves read each one
// from the arena, a cache miss, about 17 times a key at 100k keys; the keys of a fleet share a
// long prefix ("device-0..."), so 8 bytes taken after the prefix all of them share order most
// pairs in one contiguous slice, and only equal prefixes compare the bytes.
func (a *Aggregation) sortKeys(ids []int32) {
	if len(ids) < 2 {
		return
	}
	first := a.key(ids[0])
	common := len(first)
	for _, id := range ids[1:] {
		k := a.key(id)
		n := min(common, len(k))
		i := 0
		for i < n && k[i] == first[i] {
			i++
		}
		common = i
	}
	ps := slices.Grow(a.keyPrefixes[:0], len(ids))
	for _, id := range ids {
		var p uint64
		k := a.key(id)[common:]
		for i := range 8 {
			p <<= 8
			if i < len(k) {
				p |= uint64(k[i])
			}
		}
		ps = append(ps, keyPrefix{p, id})
	}
	byKey := func(x, y keyPrefix) int { return strings.Compare(a.key(x.id), a.key(y.id)) }
	if len(ps) < radixKeys {
		slices.SortFunc(ps, func(x, y keyPrefix) int {
			if x.p != y.p {
				return cmp.Compare(x.p, y.p)
			}
			return byKey(x, y)
		})
	} else {
		var spare []keyPrefix
		ps, spare = radixSortPrefixes(ps, slices.Grow(a.keyPrefixTmp[:0], len(ps))[:len(ps)])
		a.keyPrefixTmp = spare
		for i := 0; i < len(ps); {
			j := i + 1
			for j < len(ps) && ps[j].p == ps[i].p {
				j++
			}
			if j-i > 1 {
				slices.SortFunc(ps[i:j], byKey)
			}
			i = j
		}
	}
	for i, e := range ps {
		ids[i] = e.id
	}
	a.keyPrefixes = ps
}

// radixKeys is the number of keys from which sortKeys sorts their prefixes by radix: a backlog's
// batch emits about every key (100k), where a comparison sort through a function value cost
// 17 calls a key.
const radixKeys = 256

// radixSortPrefixes orders ps by prefix, least significant byte first, one stable counting
// pass for each byte in which the prefixes differ, through tmp (as long as ps). It returns the
// sorted slice, which is ps or tmp, and the other one.
func radixSortPrefixes(ps, tmp []keyPrefix) (sorted, spare []keyPrefix) {
	var count [8][256]int32
	for _, e := range ps {
		for b := range 8 {
			count[b][byte(e.p>>(8*b))]++
		}
	}
	src, dst := ps, tmp
	for b := range 8 {
		shift := 8 * b
		c := &count[b]
		if c[byte(src[0].p>>shift)] == int32(len(src)) {
			continue // every prefix has this byte
		}
		var sum int32
		for i, n := range c {
			c[i] = sum
			sum += n
		}
		for _, e := range src {
			d := byte(e.p >> shift)
			dst[c[d]] = e
			c[d]++
		}
		src, dst = dst, src
	}
	return src, dst
}

// maxSortWindows bounds the distinct windows countingSort handles; a batch emits a handful
// (the windows its watermark closed), a backlog's first batch a few hundred.
const maxSortWindows = 4096

// countingSort orders time-window groups (slots, with their key ranks) by window, then key
// rank, into perm, in two stable counting passes (rank, then window) instead of a comparison
// sort: the ranks are dense and the windows few. It reports false, perm unset, when the windows
// are too many.
func (a *Aggregation) countingSort(slots, ranks, perm []int32) bool {
	// Time windows start on a grid of the slide: a window's bucket is its distance from the
	// first start in slides, when the span is at most maxSortWindows slides (no search per
	// group, which with hundreds of windows cost as much as the passes).
	lo, hi := a.groups[slots[0]].start, a.groups[slots[0]].start
	for _, s := range slots {
		st := a.groups[s].start
		lo, hi = min(lo, st), max(hi, st)
	}
	buckets := slices.Grow(a.rowBucket[:0], len(slots))[:len(slots)]
	a.rowBucket = buckets
	if slide := a.cfg.Window.Slide; slide > 0 && (hi-lo)/slide < maxSortWindows {
		for j, s := range slots {
			buckets[j] = int32((a.groups[s].start - lo) / slide)
		}
		a.countingPasses(perm, ranks, buckets, len(a.keyIDsBuf), int((hi-lo)/slide)+1)
		return true
	}
	starts := a.sortStarts[:0]
	for _, s := range slots {
		st := a.groups[s].start
		if len(starts) > 0 && starts[len(starts)-1] == st {
			continue
		}
		if !slices.Contains(starts, st) {
			if len(starts) == maxSortWindows {
				a.sortStarts = starts
				return false
			}
			starts = append(starts, st)
		}
	}
	slices.Sort(starts)
	a.sortStarts = starts
	for j, s := range slots {
		w, _ := slices.BinarySearch(starts, a.groups[s].start)
		buckets[j] = int32(w)
	}
	a.countingPasses(perm, ranks, buckets, len(a.keyIDsBuf), len(starts))
	return true
}

// countingPasses fills perm with the rows 0..len(perm)-1 sorted by rank (ranks of them), then
// stably by bucket (windows of them).
func (a *Aggregation) countingPasses(perm, rank, bucket []int32, ranks, windows int) {
	tmp := slices.Grow(a.sortTmp[:0], len(perm))[:len(perm)]
	a.sortTmp = tmp
	// Pass 1: by key rank; pass 2, stable: by window.
	count := countingPass(tmp, nil, rank, ranks, a.sortCount)
	a.sortCount = countingPass(perm, tmp, bucket, windows, count)
}

// countingPass is one stable counting-sort pass: it writes the rows of in (the rows
// 0..len(key)-1 in order when in is nil; else a permutation of them) to out, ordered by
// key[row] in 0..buckets-1. count is scratch, grown and returned for reuse.
func countingPass(out, in, key []int32, buckets int, count []int32) []int32 {
	count = slices.Grow(count[:0], buckets+1)[:buckets+1]
	clear(count)
	for _, k := range key {
		count[k+1]++
	}
	for i := 1; i < len(count); i++ {
		count[i] += count[i-1]
	}
	if in == nil {
		for j, k := range key {
			out[count[k]] = int32(j)
			count[k]++
		}
		return count
	}
	for _, j := range in {
		k := key[j]
		out[count[k]] = j
		count[k]++
	}
	return count
}

// growOut reserves n more rows in every gold column (and, in the key columns, the live keys'
// average bytes for each) before the rows are appended: a batch that closes a backlog's
