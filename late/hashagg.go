package late

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"unsafe"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/pq"
)

// hashAgg is replay's columnar engine for tumbling and sliding windows whose aggregates are
// count, sum, avg, min and max: a batch of source columns at a time, each row's group key is
// encoded and hashed once into a key id, the (key id, window start) pairs find their group in
// an open-addressing table, and each aggregate folds its input column in one typed loop over
// the batch's (group, row) pairs. The collector it replaces fed gold's streaming operator one
// (row, window) at a time under a synthetic composite key, then boxed every group's key back
// into Go values and sorted pointers: at 100k keys that cost 20x polars' CPU. Sketches and
// session windows keep the collector (canHashAgg).
//
// One hashAgg is filled by one goroutine; a replay gives each worker its own and folds them
// together with merge. Float sums are exact (gold.Exact) until they are written, so a
// parallel replay's sums and averages equal a serial one's and the stream's bit for bit.
type hashAgg struct {
	a    *agg
	seed maphash.Seed
	// pool serves the large arrays and takes them back on release (nil: made and dropped).
	pool *aggPool

	// Keys: the encoded group keys (pq.AppendKeyPart of each group_by column) side by
	// side in arena, key id i at arena[koff[i]:koff[i+1]], with its hash.
	kslots []hslot
	arena  []byte
	koff   []int
	khash  []uint32

	// Groups: key id and window start of each group id, found through gslots.
	gslots []hslot
	gkey   []int32
	gstart []int64

	st []aggState

	// Per-batch scratch: the rows' encoded keys (row k's at kbuf[koffs[k]:koffs[k+1]]),
	// their hashes and key ids; the (row, window) pairs' key ids, window starts and hashes,
	// their group ids and rows.
	kbuf       []byte
	koffs      []int
	khv        []uint32
	kids       []int32
	pkid       []int32
	pstart     []int64
	phv        []uint32
	gids, rows []int32
	wins       []gold.Window
	touchSink  int32
	// dkid is the key id of each entry of the batch's key dictionary (-1: not seen yet).
	dkid []int32
	// keyB and keySel are the batch and rows kids was last found for.
	keyB   *pq.Batch
	keySel []int32

	// keysFrom (nil: none) is a table fed the same batches just before this one, grouping
	// by the same columns (another gold of a shared read, see sharedHashRange): a batch it
	// has found the key ids of takes them through xlate (keysFrom's key id -> this table's,
	// -1: not yet interned here) instead of encoding, hashing and probing every row's key
	// again. Both tables then hold the same keys; only their ids may differ.
	keysFrom *hashAgg
	xlate    []int32

	// dense[kid*denseNW + (start-denseLo)/slide] is 1 + the group id of (kid, start), 0 while
	// unknown: while keys times the windows of the range stay within maxDense, a (row, window)
	// pair finds its group with one load instead of a hash and a probe (see denseGroups).
	// denseOff: the range outgrew it (or changed), the hash table alone serves.
	dense    []int32
	denseLo  int64
	denseNW  int64
	denseOff bool

	// expect is the (row, window) pairs the source's statistics give this table to add (0:
	// unknown), seen those added so far, lastPairs those of the last batch and lastGroups
	// the groups before it: see expectGroups.
	expect, seen, lastPairs int64
	lastGroups              int
}

// maxDense bounds the dense group index: 1M entries, 4 MB a table, so that its loads stay
// mostly in cache (a larger index would trade the hash table's overlapped misses for misses
// of its own; only the few-keys case was measured).
const maxDense = 1 << 20

// hslot is an open-addressing entry: the low 32 bits of a hash (home position and a tag that
// spares most compares) and the id it maps to (< 0: empty).
type hslot struct {
	hash uint32
	id   int32
}

// aggState is one aggregate for every group: n counts the inputs (count's value), v holds a
// sum, min or max as int64 or float64 bits (unused for count), x a float sum's or avg's
// exact sum (v is then nil).
type aggState struct {
	spec  *gold.AggSpec
	wide  bool
	exact bool
	n     []int64
	v     []uint64
	x     []gold.Exact
}

// canHashAgg says whether hashAgg computes a's aggregates: windows (not sessions) of count,
// sum, avg, min and max over numeric inputs.
func canHashAgg(a *agg) bool {
	if a.session != nil {
		return false
	}
	for i := range a.specs {
		sp := &a.specs[i]
		switch sp.Fn {
		case gold.Count:
		case gold.Sum, gold.Avg, gold.Min, gold.Max:
			switch a.inKinds[sp.Column] {
			case pq.KindInt64, pq.KindInt32, pq.KindFloat64, pq.KindFloat32:
			default:
				return false
			}
		default:
			return false
		}
	}
	return true
}

func newHashAgg(a *agg) *hashAgg { return newHashAggSeed(a, maphash.MakeSeed()) }

// newHashAggSeed is newHashAgg hashing keys with seed: partial tables that share theirs
// merge without hashing the keys again.
func newHashAggSeed(a *agg, seed maphash.Seed) *hashAgg { return newPooledHashAgg(a, seed, nil) }

// newPooledHashAgg is newHashAggSeed taking its arrays from pool (see aggPool): release
// gives them back.
func newPooledHashAgg(a *agg, seed maphash.Seed, pool *aggPool) *hashAgg {
	h := &hashAgg{a: a, seed: seed, pool: pool}
	h.koff = append(poolTake(pool, (*aggPool).intList, 0), 0)
	h.arena = poolTake(pool, (*aggPool).byteList, 0)
	h.khash = poolTake(pool, (*aggPool).uint32s, 0)
	h.gkey = poolTake(pool, (*aggPool).int32s, 0)
	h.gstart = poolTake(pool, (*aggPool).int64s, 0)
	h.kslots = h.newSlots(1024)
	h.gslots = h.newSlots(1024)
	for i := range a.specs {
		sp := &a.specs[i]
		st := aggState{spec: sp, wide: sp.Fn != gold.Count, exact: sp.ExactSum()}
		st.n = poolTake(pool, (*aggPool).int64s, 0)
		if st.wide && !st.exact { // an exact sum keeps x, never v
			st.v = poolTake(pool, (*aggPool).uint64s, 0)
		}
		if st.exact {
			st.x = poolTake(pool, (*aggPool).exacts, 0)
		}
		h.st = append(h.st, st)
	}
	return h
}

func (h *hashAgg) key(id int32) []byte { return h.arena[h.koff[id]:h.koff[id+1]] }

// internHashed returns the id of encoded key k, whose hash under h's seed is hv, adding it
// when new.
func (h *hashAgg) internHashed(k []byte, hv uint32) int32 {
	if (len(h.khash)+1)*4 > len(h.kslots)*3 {
		h.kslots = h.rehash(h.kslots, len(h.kslots)*2)
	}
	mask := uint32(len(h.kslots) - 1)
	i := hv & mask
	for ; h.kslots[i].id >= 0; i = (i + 1) & mask {
		if e := h.kslots[i]; e.hash == hv && string(h.key(e.id)) == string(k) {
			return e.id
		}
	}
	id := int32(len(h.khash))
	h.arena = append(h.arena, k...)
	h.koff = append(h.koff, len(h.arena))
	h.khash = append(h.khash, hv)
	h.kslots[i] = hslot{hv, id}
	return id
}

// find returns the id of encoded key k, or -1.
func (h *hashAgg) find(k string) int32 {
	hv := uint32(maphash.String(h.seed, k)) // as maphash.Bytes of the same bytes
	mask := uint32(len(h.kslots) - 1)
	for i := hv & mask; h.kslots[i].id >= 0; i = (i + 1) & mask {
		if e := h.kslots[i]; e.hash == hv && string(h.key(e.id)) == k {
			return e.id
		}
	}
	return -1
}

// findGroup returns the id of (key id, window start), or -1.
func (h *hashAgg) findGroup(kid int32, start int64) int32 {
	hv := h.groupHash(kid, start)
	mask := uint32(len(h.gslots) - 1)
	for i := hv & mask; h.gslots[i].id >= 0; i = (i + 1) & mask {
		if e := h.gslots[i]; e.hash == hv && h.gkey[e.id] == kid && h.gstart[e.id] == start {
			return e.id
		}
	}
	return -1
}

// lateRows gives each group its late_rows from late (by groupKey encoding), looking up
// late's entries (the few groups merge-late touched) in the table rather than every group
// in late's map (which cost as much as the rest of the emission at 100k keys).
func (h *hashAgg) lateRows(late map[string]int64) []int64 {
	if len(late) == 0 {
		return nil
	}
	if len(h.gstart) == 0 {
		return nil
	}
	out := make([]int64, len(h.gkey))
	intTag := pq.AppendKeyInt64(nil, 0)[0]
	// A slice's table holds only its windows: the others' entries need no key look-up.
	lo, hi := slices.Min(h.gstart), slices.Max(h.gstart)
	for k, n := range late {
		if len(k) < windowPrefix || k[0] != intTag {
			continue
		}
		start := int64(binary.BigEndian.Uint64([]byte(k[1:9])))
		if start < lo || start > hi {
			continue
		}
		kid := h.find(k[windowPrefix:])
		if kid < 0 {
			continue
		}
		if g := h.findGroup(kid, start); g >= 0 && h.gstart[g]+h.a.window.Size == int64(binary.BigEndian.Uint64([]byte(k[10:18]))) {
			out[g] += n
		}
	}
	return out
}

// groupHash is the hash of group (key id, window start). It puts a key's consecutive
// windows side by side (as gold's group table does): a sliding window's row updates them one
// after another.
func (h *hashAgg) groupHash(kid int32, start int64) uint32 {
	return h.khash[kid] + uint32(uint64(start)/uint64(h.a.window.Slide))
}

// groupHashed returns the id of (key id, window start), whose groupHash is hv, adding it
// when new.
func (h *hashAgg) groupHashed(kid int32, start int64, hv uint32) int32 {
	if (len(h.gkey)+1)*4 > len(h.gslots)*3 {
		h.gslots = h.rehash(h.gslots, len(h.gslots)*2)
	}
	mask := uint32(len(h.gslots) - 1)
	i := hv & mask
	for ; h.gslots[i].id >= 0; i = (i + 1) & mask {
		if e := h.gslots[i]; e.hash == hv && h.gkey[e.id] == kid && h.gstart[e.id] == start {
			return e.id
		}
	}
	if len(h.gkey) == cap(h.gkey) {
		h.growGroups(max(len(h.gkey), 1024))
	}
	g := int32(len(h.gkey))
	h.gkey = append(h.gkey, kid)
	h.gstart = append(h.gstart, start)
	h.gslots[i] = hslot{hv, g}
	return g
}

// fillStates gives the groups groupHashed added since the last call their aggregate state,
// zero: in bulk, after a batch's look-ups, not a group at a time inside them (appending a
// 40-byte exact sum, a pointer in it, per new group was a quarter of groupHashed at 100k
// keys, where a group is about a pair). Every reader of the state calls it first.
func (h *hashAgg) fillStates() {
	n := len(h.gkey)
	for k := range h.st {
		s := &h.st[k]
		s.n = zeroTo(s.n, n)
		if s.wide && !s.exact {
			s.v = zeroTo(s.v, n)
		}
		if s.exact {
			s.x = zeroTo(s.x, n)
		}
	}
}

// zeroTo returns a extended to length n (when shorter) with zero entries.
func zeroTo[T any](a []T, n int) []T {
	m := len(a)
	if n <= m {
		return a
	}
	a = slices.Grow(a, n-m)[:n]
	clear(a[m:])
	return a
}

// growGroups makes room for n more groups in every per-group array at once. Callers at
// least double it: left to append, each array grew by a quarter at a time once large, and
// the copies of a million groups' arrays were a third of group's time at 100k keys.
func (h *hashAgg) growGroups(n int) {
	h.fillStates() // every per-group array the same length, grown alike
	p := h.pool
	h.gkey = poolGrow(p, (*aggPool).int32s, h.gkey, n)
	h.gstart = poolGrow(p, (*aggPool).int64s, h.gstart, n)
	for k := range h.st {
		s := &h.st[k]
		s.n = poolGrow(p, (*aggPool).int64s, s.n, n)
		if s.wide && !s.exact {
			s.v = poolGrow(p, (*aggPool).uint64s, s.v, n)
		}
		if s.exact {
			s.x = poolGrow(p, (*aggPool).exacts, s.x, n)
		}
	}
}

// touch reads the slot where each of hvs starts its probe, in a loop of independent loads:
// the cache misses of a whole batch overlap (a dozen at a time) instead of stalling the probe
// loop one by one, which at 100k keys (tables far larger than the caches) was most of the
// look-ups' time. The probes that follow then find their slots in cache. The sum is kept
// only so that the loads are not optimized away.
func touch(slots []hslot, hvs []uint32) int32 {
	mask := uint32(len(slots) - 1)
	var x int32
	for _, hv := range hvs {
		x += slots[hv&mask].id
	}
	return x
}

// reserveKeys sizes the key slot table for n keys in all (see reserveGroups).
func (h *hashAgg) reserveKeys(n int) { h.kslots = h.reserveSlots(h.kslots, n) }

// reserveSlots returns slots, or slots rehashed into a larger power of two, with room for
// n entries at a load of at most three quarters.
func (h *hashAgg) reserveSlots(slots []hslot, n int) []hslot {
	size := len(slots)
	for n*4 > size*3 {
		size *= 2
	}
	if size > len(slots) {
		return h.rehash(slots, size)
	}
	return slots
}

// add folds rows sel of s into the windows with start in [wlo, whi]. Each step runs over the
// whole batch before the next (encode and hash the keys, touch their slots, find their ids;
// the same for the (key, window) pairs), so that the table look-ups of a batch overlap their
// cache misses (see touch); the tables are sized for the batch first, so no rehash moves the
// slots between the touch and the probes.
func (h *hashAgg) add(s *source, sel []int32, wlo, whi int64) error {
	switch f := h.keysFrom; {
	case f != nil && f.keyB == s.b && sameRows(f.keySel, sel):
		h.keyIDsFrom(f)
	default:
		if d := dictionaryKey(s, len(sel)); d != nil {
			h.keyIDsByDictionary(s.keys[0], d, sel)
		} else {
			h.keyIDs(s, sel)
		}
	}
	h.keyB, h.keySel = s.b, sel
	h.pkid, h.pstart, h.phv, h.rows = h.pkid[:0], h.pstart[:0], h.phv[:0], h.rows[:0]
	// The groups of a batch's (row, window) pairs: found in the dense index (few keys), or
	// hashed and looked up a batch at a time.
	ev, w := s.ev.Int64, h.a.window
	for k, r := range sel {
		h.wins = w.Assign(h.wins[:0], ev[r])
		for _, win := range h.wins {
			if win.Start >= wlo && win.Start <= whi {
				kid := h.kids[k]
				h.pkid = append(h.pkid, kid)
				h.pstart = append(h.pstart, win.Start)
				h.rows = append(h.rows, r)
			}
		}
	}
	h.reserveGroups(h.expectGroups(len(h.pkid)))
	h.gids = h.gids[:0]
	if !h.denseGroups(wlo, whi) {
		// Hashed only here: the dense index finds most pairs' groups without a hash.
		for k, kid := range h.pkid {
			h.phv = append(h.phv, h.groupHash(kid, h.pstart[k]))
		}
		h.touchSink += touch(h.gslots, h.phv)
		for k, hv := range h.phv {
			h.gids = append(h.gids, h.groupHashed(h.pkid[k], h.pstart[k], hv))
		}
	}
	h.fillStates()
	for k := range h.st {
		st := &h.st[k]
		var c *pq.Column
		if st.spec.Column >= 0 {
			c = s.in[st.spec.Column]
		}
		if err := st.update(h.gids, h.rows, c); err != nil {
			return fmt.Errorf("late: gold %s aggregate %s: %w", h.a.cfg.Name, st.spec.Name, err)
		}
	}
	return nil
}

// keyIDs sets h.kids to the key ids of rows sel of s, each row's key encoded and hashed
// once, whatever the number of its windows.
func (h *hashAgg) keyIDs(s *source, sel []int32) {
	h.kbuf, h.koffs, h.khv = h.kbuf[:0], h.koffs[:0], h.khv[:0]
	for _, r := range sel {
		k0 := len(h.kbuf)
		for _, c := range s.keys {
			h.kbuf = pq.AppendKeyPart(h.kbuf, c, int(r))
		}
		h.koffs = append(h.koffs, k0)
		h.khv = append(h.khv, uint32(maphash.Bytes(h.seed, h.kbuf[k0:])))
	}
	h.koffs = append(h.koffs, len(h.kbuf))
	h.reserveKeys(len(h.khash) + len(sel))
	h.touchSink += touch(h.kslots, h.khv)
	h.kids = h.kids[:0]
	for k, hv := range h.khv {
		h.kids = append(h.kids, h.internHashed(h.kbuf[h.koffs[k]:h.koffs[k+1]], hv))
	}
}

// dictionaryKey returns the dictionary of s's key when s groups by one column read through
// a Parquet dictionary with at most half as many entries as the rows added: nil otherwise
// (at 100k keys a silver file's dictionary has about an entry a row, and the per-row path
// costs no more).
func dictionaryKey(s *source, rows int) *pq.Dictionary {
	if len(s.keys) != 1 {
		return nil
	}
	if d := s.keys[0].Dictionary(); d != nil && 2*d.Values.Len <= rows {
		return d
	}
	return nil
}

// keyIDsByDictionary sets h.kids to the key ids of rows sel of a source whose one key column
// c was read through dictionary d: each entry the rows use is encoded, hashed and interned
// once and each row takes its entry's id, so the per-row work is an index and a load instead
// of an encoding, a hash and a probe. A null row (entry -1) is encoded as keyIDs would.
func (h *hashAgg) keyIDsByDictionary(c *pq.Column, d *pq.Dictionary, sel []int32) {
	h.dkid = slices.Grow(h.dkid[:0], d.Values.Len)[:d.Values.Len]
	for i := range h.dkid {
		h.dkid[i] = -1
	}
	nullID := int32(-1)
	h.kids = h.kids[:0]
	for _, r := range sel {
		e := d.Index[r]
		switch {
		case e < 0 && nullID < 0:
			h.kbuf = pq.AppendKeyPart(h.kbuf[:0], c, int(r))
			nullID = h.internHashed(h.kbuf, uint32(maphash.Bytes(h.seed, h.kbuf)))
		case e >= 0 && h.dkid[e] < 0:
			h.kbuf = pq.AppendKeyPart(h.kbuf[:0], d.Values, int(e))
			h.dkid[e] = h.internHashed(h.kbuf, uint32(maphash.Bytes(h.seed, h.kbuf)))
		}
		if e < 0 {
			h.kids = append(h.kids, nullID)
		} else {
			h.kids = append(h.kids, h.dkid[e])
		}
	}
}

// denseGroups sets h.gids to the groups of the batch's pairs (h.pkid, h.pstart)
// through the dense index, adding the groups it does not hold yet through the hash table
// (which stays the record of every group: merge, lateRows and emit read it). It reports
// false, having done nothing, when the index is off: every add of one table must give the
// same window range [wlo, whi], and the keys times its windows must fit in maxDense. At 1k
// keys and a day of 5-minute windows that is 288k entries, and a group is hashed once
// rather than once per (row, window) pair: at 1k keys a group gets a dozen pairs per 1M
// events, a hundred at 10M. At 100k keys the index is off from the start (every pair is
// about a group of its own anyway).
func (h *hashAgg) denseGroups(wlo, whi int64) bool {
	slide := h.a.window.Slide
	nw := (whi-wlo)/slide + 1
	switch {
	case h.denseOff:
		return false
	case h.dense == nil:
		h.denseLo, h.denseNW = wlo, nw
	case h.denseLo != wlo || h.denseNW != nw:
		h.denseOff, h.dense = true, nil
		return false
	}
	if nw > maxDense || int64(len(h.khash))*nw > maxDense || (wlo-h.a.window.StartTime)%slide != 0 {
		h.denseOff, h.dense = true, nil
		return false
	}
	if need := len(h.khash) * int(nw); need > len(h.dense) {
		// Doubled up to maxDense (the index turns off past it): grown by what each batch's
		// new keys need, its copies were most of the bytes a 100k-key slice of a few
		// windows allocated before the index turned off.
		h.dense = slices.Grow(h.dense, max(need, min(2*len(h.dense), maxDense))-len(h.dense))[:need]
	}
	for k, kid := range h.pkid {
		start := h.pstart[k]
		i := int64(kid)*nw + (start-wlo)/slide
		g := h.dense[i] - 1
		if g < 0 {
			g = h.groupHashed(kid, start, h.groupHash(kid, start))
			h.dense[i] = g + 1
		}
		h.gids = append(h.gids, g)
	}
	return true
}

// update folds input rows[k] of c into group gids[k] for every k, one loop per function and
// input type, nulls skipped (c is nil for count(*)).
func (st *aggState) update(gids, rows []int32, c *pq.Column) error {
	if c == nil {
		for _, g := range gids {
			st.n[g]++
		}
		return nil
	}
	nulls := c.HasNulls()
	if st.spec.Fn == gold.Count {
		for k, g := range gids {
			if !nulls || !c.IsNull(int(rows[k])) {
				st.n[g]++
			}
		}
		return nil
	}
	switch c.Kind {
	case pq.KindInt64:
		st.updateInt(gids, rows, c, nulls, func(r int32) int64 { return c.Int64[r] })
	case pq.KindInt32:
		st.updateInt(gids, rows, c, nulls, func(r int32) int64 { return int64(c.Int32[r]) })
	case pq.KindFloat64:
		st.updateFloat(gids, rows, c, nulls, func(r int32) float64 { return c.Float64[r] })
	case pq.KindFloat32:
		st.updateFloat(gids, rows, c, nulls, func(r int32) float64 { return float64(c.Float32[r]) })
	default:
		return fmt.Errorf("%w: input column of kind %v is not numeric", gold.ErrBadInput, c.Kind)
	}
	return nil
}

func (st *aggState) updateInt(gids, rows []int32, c *pq.Column, nulls bool, at func(int32) int64) {
	switch fn := st.spec.Fn; fn {
	case gold.Sum, gold.Avg:
		for k, g := range gids {
			if r := rows[k]; !nulls || !c.IsNull(int(r)) {
				st.v[g] = uint64(int64(st.v[g]) + at(r))
				st.n[g]++
			}
		}
	default: // min, max
		isMin := fn == gold.Min
		for k, g := range gids {
			r := rows[k]
			if nulls && c.IsNull(int(r)) {
				continue
			}
			if x := at(r); st.n[g] == 0 || (isMin && x < int64(st.v[g])) || (!isMin && x > int64(st.v[g])) {
				st.v[g] = uint64(x)
			}
			st.n[g]++
		}
	}
}

func (st *aggState) updateFloat(gids, rows []int32, c *pq.Column, nulls bool, at func(int32) float64) {
	switch fn := st.spec.Fn; fn {
	case gold.Sum, gold.Avg:
		for k, g := range gids {
			if r := rows[k]; !nulls || !c.IsNull(int(r)) {
				st.x[g].Add(at(r))
				st.n[g]++
			}
		}
	default: // min, max
		for k, g := range gids {
			r := rows[k]
			if nulls && c.IsNull(int(r)) {
				continue
			}
			x := at(r)
			if st.n[g] != 0 {
				x = pickFloat(fn, math.Float64frombits(st.v[g]), x)
			}
			st.v[g] = math.Float64bits(x)
			st.n[g]++
		}
	}
}

// pickFloat is the min or max of a (so far) and b with Spark's NaN order (NaN above every
// number), as gold's operator picks them.
func pickFloat(fn gold.Func, a, b float64) float64 {
	if fn == gold.Min {
		if math.IsNaN(a) || b < a {
			return b
		}
		return a
	}
	if math.IsNaN(a) {
		return a
	}
	if b > a || math.IsNaN(b) {
		return b
	}
	return a
}

// mergeValue folds o's state of a group into g's.
func (st *aggState) mergeValue(g int32, o *aggState, og int32) {
	n := o.n[og]
	if n == 0 {
		return
	}
	if st.exact {
		st.x[g].AddExact(&o.x[og])
	} else if st.wide {
		switch x := o.v[og]; {
		case st.n[g] == 0:
			st.v[g] = x
		case st.spec.Fn == gold.Sum || st.spec.Fn == gold.Avg:
			st.v[g] = uint64(int64(st.v[g]) + int64(x))
		case st.spec.Int:
			isMin := st.spec.Fn == gold.Min
			if (isMin && int64(x) < int64(st.v[g])) || (!isMin && int64(x) > int64(st.v[g])) {
				st.v[g] = x
			}
		default:
			st.v[g] = math.Float64bits(pickFloat(st.spec.Fn, math.Float64frombits(st.v[g]), math.Float64frombits(x)))
		}
	}
	st.n[g] += n
}

// reserveGroups makes room for n groups in all: the slot table sized once (not doubled and
// rehashed step by step as the groups arrive) and the per-group arrays grown to hold them.
func (h *hashAgg) reserveGroups(n int) {
	h.gslots = h.reserveSlots(h.gslots, n)
	if m := n - len(h.gkey); m > cap(h.gkey)-len(h.gkey) {
		// At least double (slices.Grow of a few more would grow a large slice by a quarter).
		h.growGroups(max(m, len(h.gkey), 1024))
	}
}

// order returns the group ids by window start, then by encoded key bytes (the order the
// collector wrote), and the key ids by those bytes (byKey) with each key id's place in it
// (rank): the keys are sorted once, and the groups placed with two counting passes (by key
// rank, then stably by window) instead of a comparison sort of every group.
func (h *hashAgg) order() (ord, byKey, rank []int32) {
	nk := len(h.khash)
	p := h.pool
	byKey = poolMake(p, (*aggPool).int32s, nk)
	for i := range byKey {
		byKey[i] = int32(i)
	}
	slices.SortFunc(byKey, func(x, y int32) int { return compareBytes(h.key(x), h.key(y)) })
	rank = poolMake(p, (*aggPool).int32s, nk)
	for r, id := range byKey {
		rank[id] = int32(r)
	}
	ng := len(h.gkey)
	// Pass 1: groups by key rank.
	cnt := poolMake(p, (*aggPool).int32s, nk+1)
	clear(cnt)
	defer poolPut(p, (*aggPool).int32s, cnt)
	for _, kid := range h.gkey {
		cnt[rank[kid]+1]++
	}
	for i := 1; i <= nk; i++ {
		cnt[i] += cnt[i-1]
	}
	tmp := poolMake(p, (*aggPool).int32s, ng)
	for g, kid := range h.gkey {
		r := rank[kid]
		tmp[cnt[r]] = int32(g)
		cnt[r]++
	}
	// Pass 2, stable: by window (starts are slide apart from the earliest).
	if ng == 0 {
		return tmp, byKey, rank
	}
	lo := slices.Min(h.gstart)
	slide := h.a.window.Slide
	nw := int((slices.Max(h.gstart)-lo)/slide) + 1
	wc := make([]int32, nw+1) // windows: few
	for _, s := range h.gstart {
		wc[(s-lo)/slide+1]++
	}
	for i := 1; i <= nw; i++ {
		wc[i] += wc[i-1]
	}
	out := poolMake(p, (*aggPool).int32s, ng)
	for _, g := range tmp {
		w := (h.gstart[g] - lo) / slide
		out[wc[w]] = g
		wc[w]++
	}
	poolPut(p, (*aggPool).int32s, tmp)
	return out, byKey, rank
}

// keyColumns decodes every key once into columns of the gold key columns' types, one row
// per key in byKey order (row r: the key of rank r).
func (h *hashAgg) keyColumns(out *pq.Batch, byKey []int32) ([]*pq.Column, error) {
	a := h.a
	cols := make([]*pq.Column, len(a.keyCols))
	for k, ci := range a.keyCols {
		c, err := pq.NewColumn(out.Columns[ci].Type)
		if err != nil {
			return nil, fmt.Errorf("late: gold %s: %w", a.cfg.Name, err)
		}
		c.Grow(len(byKey), len(h.arena))
		cols[k] = c
	}
	for _, kid := range byKey {
		// The bytes are copied into the columns: no string of them is kept.
		k := h.key(kid)
		if err := pq.AppendKeyColumns(cols, unsafe.String(unsafe.SliceData(k), len(k))); err != nil {
			return nil, fmt.Errorf("late: gold %s: bad group key: %w", a.cfg.Name, err)
		}
	}
	return cols, nil
}

func compareBytes(a, b []byte) int {
	switch {
	case string(a) < string(b):
		return -1
	case string(a) > string(b):
		return 1
	}
	return 0
}

// emit appends every group to out as gold rows in order (see order), calling flush (nil:
// never) after every emitChunk rows; late holds the groups' late_rows (nil: 0 for all). It
// returns the rows appended.
func (h *hashAgg) emit(out *pq.Batch, late map[string]int64, flush func() error) (int64, error) {
	return h.emitRows(out, late, flush, (*hashAgg).order)
}

// emitUnordered is emit with the groups in table order (see tableOrder): the same rows, for
// a caller that only sums their hashes (planByTags), which any order gives alike.
func (h *hashAgg) emitUnordered(out *pq.Batch, flush func() error) (int64, error) {
	return h.emitRows(out, nil, flush, (*hashAgg).tableOrder)
}

// emitRows is emit with the groups ordered by order (ord: the group ids in emission order;
// byKey: the key ids in the order keyColumns decodes them; rank: each key id's place there).
func (h *hashAgg) emitRows(out *pq.Batch, late map[string]int64, flush func() error, order func(*hashAgg) (ord, byKey, rank []int32)) (int64, error) {
	a := h.a
	e := &emitter{h: h, out: out, unset: h.unsetColumns(out)}
	var rows int64
	grow := func() {
		// Room for a chunk: appends then never copy what they hold so far.
		if out.Len() == 0 {
			for _, c := range out.Columns {
				c.Grow(emitChunk, emitChunk*16)
			}
		}
	}
	grow()
	e.lateOf = h.lateRows(late)
	ord, byKey, rank := order(h)
	defer func() {
		for _, s := range [][]int32{ord, byKey, rank} {
			poolPut(h.pool, (*aggPool).int32s, s)
		}
	}()
	e.rank = rank
	// Each key decoded once, not once per window, into compact columns by key rank: within
	// a window the groups come in rank order, so the gathers walk the columns forward. The
	// decoded parts kept per key before (a slice of boxed values each) cost a cache miss or
	// two per gold row at 100k keys: a quarter of the replay's CPU.
	var err error
	if e.kcols, err = h.keyColumns(out, byKey); err != nil {
		return 0, err
	}
	for _, ci := range a.keyCols {
		e.keyOut = append(e.keyOut, out.Columns[ci])
	}
	for c0 := 0; c0 < len(ord); c0 += emitChunk {
		chunk := ord[c0:min(c0+emitChunk, len(ord))]
		if err := e.chunk(chunk); err != nil {
			return rows, err
		}
		rows += int64(len(chunk))
		if flush != nil && len(chunk) == emitChunk {
			if err := flush(); err != nil {
				return rows, err
			}
			grow()
		}
	}
	return rows, nil
}

// unsetColumns are the columns of out no aggregate, key, window or late_rows fills: nulls.
func (h *hashAgg) unsetColumns(out *pq.Batch) []*pq.Column {
	a := h.a
	set := make([]bool, len(out.Columns))
	set[a.winCol], set[a.lateCol] = true, true
	for _, ci := range a.keyCols {
		set[ci] = true
	}
	var unset []*pq.Column
	for si := range a.specs {
		n := 1
		if a.specs[si].Fn == gold.Avg {
			n = 3
		}
		for k := range n {
			set[a.aggCol[si]+k] = true
		}
		if ci := a.exactCol[si]; ci >= 0 {
			set[ci] = true
		}
	}
	for i, ok := range set {
		if !ok {
			unset = append(unset, out.Columns[i])
		}
	}
	return unset
}

// emitter writes a hashAgg's groups into a gold batch a chunk at a time.
type emitter struct {
	h      *hashAgg
	out    *pq.Batch
	unset  []*pq.Column
	lateOf []int64 // nil: every late_rows is 0
	rank   []int32 // each key id's rank in byte order
	kcols  []*pq.Column
	keyOut []*pq.Column
	// Per-chunk scratch.
	kr      []int32
	ns      []int64
	vs      []uint64
	xs      []gold.Exact
	starts  []int64
	scratch []byte
}

// chunk appends the groups of chunk, column by column, each gather of a group's state
// (scattered in table order) in its own tight loop: the loads overlap, where one loop over
// rows that called the appends of every column between them waited on each miss in turn.
func (e *emitter) chunk(chunk []int32) error {
	h, a := e.h, e.h.a
	e.starts, e.kr = e.starts[:0], e.kr[:0]
	for _, g := range chunk {
		e.starts = append(e.starts, h.gstart[g])
		e.kr = append(e.kr, e.rank[h.gkey[g]])
	}
	win := e.out.Columns[a.winCol]
	for _, start := range e.starts {
		win.AppendStruct()
		win.Children[0].AppendInt64(start)
		win.Children[1].AppendInt64(start + a.window.Size)
	}
	for k, c := range e.keyOut {
		kc := e.kcols[k]
		for _, r := range e.kr {
			c.AppendFrom(kc, int(r))
		}
	}
	for si := range h.st {
		if err := e.aggregate(chunk, &h.st[si], si); err != nil {
			return err
		}
	}
	lc := e.out.Columns[a.lateCol]
	for _, g := range chunk {
		var lr int64
		if e.lateOf != nil {
			lr = e.lateOf[g]
		}
		lc.AppendInt64(lr)
	}
	for _, c := range e.unset {
		for range chunk {
			c.AppendNull()
		}
	}
	return nil
}

// aggregate appends aggregate si of the chunk's groups (and its exact-sum column).
func (e *emitter) aggregate(chunk []int32, st *aggState, si int) error {
	a := e.h.a
	e.ns = e.ns[:0]
	for _, g := range chunk {
		e.ns = append(e.ns, st.n[g])
	}
	e.vs, e.xs = e.vs[:0], slices.Grow(e.xs[:0], len(chunk))
	switch {
	case st.exact:
		// Gathered apart from the encoding below, as n and v are: the load of a group's
		// exact sum inside the loop that encodes it was a miss the loop waited on (at
		// 100k keys a third of the emission's aggregates).
		for _, g := range chunk {
			e.xs = append(e.xs, st.x[g])
		}
	case st.wide:
		for _, g := range chunk {
			e.vs = append(e.vs, st.v[g])
		}
	}
	cols := e.out.Columns[a.aggCol[si]:]
	xc := (*pq.Column)(nil)
	if ci := a.exactCol[si]; ci >= 0 {
		xc = e.out.Columns[ci]
	}
	if st.exact && st.spec.Fn == gold.Sum && xc != nil {
		// A float sum's double and exact encoding from one reading of its limbs.
		for i, n := range e.ns {
			gold.AppendExactSum(cols[0], xc, n, &e.xs[i])
		}
		return nil
	}
	var vals gold.AggValue
	for i, n := range e.ns {
		vals = gold.AggValue{Fn: st.spec.Fn, Int: st.spec.Int, N: n}
		switch {
		case st.exact:
			vals.X = e.xs[i]
			vals.F = vals.X.Float64()
		case st.wide && st.spec.Int:
			vals.I = int64(e.vs[i])
		case st.wide:
			vals.F = math.Float64frombits(e.vs[i])
		}
		if _, _, err := gold.AppendAggregate(cols, st.spec, &vals, nil); err != nil {
			return fmt.Errorf("late: gold %s aggregate %s: %w", a.cfg.Name, st.spec.Name, err)
		}
		if xc != nil {
			e.scratch = gold.AppendExact(xc, &vals, e.scratch)
		}
	}
	return nil
}
