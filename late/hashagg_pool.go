package late

import (
	"slices"
	"sync"

	"github.com/medallion-lake/medallion/gold"
)

// aggPool keeps the large arrays of a replay's hash tables (per-group state, slot tables,
// key arenas, the emission's ordering) from one table to the next: the workers' partial
// tables of a slice, the slice after it, and the next gold aggregation of the same run. A
// table made anew each time grew every array from 1024 entries by doubling, copying what it
// held at each step and clearing each fresh allocation: at 100k keys growing slices and
// clearing memory were 18% of a replay (ANALYSIS.md, session 15). A table from the pool
// starts with the arrays the last one released, already as large as a slice needed.
//
// The pool holds what the tables of one slice released, until the next slice's tables take it
// (not the arrays a table outgrew: those are the collector's at once, as they were; and not
// the last slice's, see setLast): keeping more was measured to cost, not save, at 100k keys
// (the held arrays made the rest of the replay take fresh memory: +300 MB peak RSS, more
// page faults). It is memory only. It is safe for concurrent use (the workers
// take their tables at once); a nil pool allocates as make does and keeps nothing.
type aggPool struct {
	mu sync.Mutex
	// last: no table takes from the pool after the ones now in use (the last slice), so
	// releases drop their arrays for the collector rather than hold them while the rest
	// of the replay runs.
	last  bool
	i32   freeList[int32]
	i64   freeList[int64]
	u32   freeList[uint32]
	u64   freeList[uint64]
	ints  freeList[int]
	bytes freeList[byte]
	ex    freeList[gold.Exact]
	slots freeList[hslot]
}

// maxFree bounds the arrays of one type a pool keeps: a replay's tables hold a few each (a
// slice's two partial tables, each with a handful of per-group arrays); past that the
// smallest are let go.
const maxFree = 8

// minPooled is the smallest capacity worth keeping: smaller arrays cost less to make than
// to track.
const minPooled = 4096

// freeList is the released arrays of one element type.
type freeList[T any] struct{ free [][]T }

// take returns, at length 0, the smallest released array of capacity at least want, or
// the largest one when none is that large (nil: none), so that a small need does not take
// the array a large one would.
func (f *freeList[T]) take(want int) []T {
	best := -1
	for i, s := range f.free {
		if best < 0 {
			best = i
			continue
		}
		c, b := cap(s), cap(f.free[best])
		if (c >= want && (b < want || c < b)) || (b < want && c > b) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	s := f.free[best]
	f.free = slices.Delete(f.free, best, best+1)
	return s[:0]
}

func (f *freeList[T]) put(s []T) {
	if cap(s) < minPooled {
		return
	}
	f.free = append(f.free, s[:0])
	if len(f.free) > maxFree {
		i := 0
		for k, x := range f.free {
			if cap(x) < cap(f.free[i]) {
				i = k
			}
		}
		f.free = slices.Delete(f.free, i, i+1)
	}
}

// poolTake and poolPut are take and put under p's lock; a nil pool gives nil and keeps
// nothing.
func poolTake[T any](p *aggPool, l func(*aggPool) *freeList[T], want int) []T {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return l(p).take(want)
}

func poolPut[T any](p *aggPool, l func(*aggPool) *freeList[T], s []T) {
	if p == nil || s == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.last {
		l(p).put(s)
	}
}

// setLast says that the tables now being made are the last the pool serves: what they
// release from now on is dropped.
func (p *aggPool) setLast() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = true
}

func (p *aggPool) int32s() *freeList[int32]      { return &p.i32 }
func (p *aggPool) int64s() *freeList[int64]      { return &p.i64 }
func (p *aggPool) uint32s() *freeList[uint32]    { return &p.u32 }
func (p *aggPool) uint64s() *freeList[uint64]    { return &p.u64 }
func (p *aggPool) intList() *freeList[int]       { return &p.ints }
func (p *aggPool) byteList() *freeList[byte]     { return &p.bytes }
func (p *aggPool) exacts() *freeList[gold.Exact] { return &p.ex }
func (p *aggPool) hslots() *freeList[hslot]      { return &p.slots }

// poolGrow is slices.Grow(s, n) that takes the larger array from p when it holds one (at
// least doubling s, as the tables' callers grow). s is dropped, not pooled: see aggPool.
func poolGrow[T any](p *aggPool, l func(*aggPool) *freeList[T], s []T, n int) []T {
	if n <= cap(s)-len(s) {
		return s
	}
	need := len(s) + n
	t := poolTake(p, l, need)
	if cap(t) < need {
		poolPut(p, l, t)
		t = make([]T, 0, max(need, 2*cap(s)))
	}
	return append(t, s...)
}

// poolMake is make([]T, n) from p: the contents are not cleared.
func poolMake[T any](p *aggPool, l func(*aggPool) *freeList[T], n int) []T {
	t := poolTake(p, l, n)
	if cap(t) < n {
		poolPut(p, l, t)
		return make([]T, n)
	}
	return t[:n]
}

// newSlots returns an empty slot table of size entries, from h's pool when it has one.
func (h *hashAgg) newSlots(size int) []hslot {
	s := poolMake(h.pool, (*aggPool).hslots, size)
	for i := range s {
		s[i] = hslot{id: -1}
	}
	return s
}

// rehash moves slots into a table of size entries (a power of two), the new one from the
// pool.
func (h *hashAgg) rehash(slots []hslot, size int) []hslot {
	out := h.newSlots(size)
	mask := uint32(size - 1)
	for _, e := range slots {
		if e.id < 0 {
			continue
		}
		i := e.hash & mask
		for out[i].id >= 0 {
			i = (i + 1) & mask
		}
		out[i] = e
	}
	return out
}

// release gives h's arrays back to its pool; h is not used after. (Without a pool it only
// drops them.)
func (h *hashAgg) release() {
	p := h.pool
	poolPut(p, (*aggPool).hslots, h.kslots)
	poolPut(p, (*aggPool).hslots, h.gslots)
	poolPut(p, (*aggPool).byteList, h.arena)
	poolPut(p, (*aggPool).intList, h.koff)
	poolPut(p, (*aggPool).uint32s, h.khash)
	poolPut(p, (*aggPool).int32s, h.gkey)
	poolPut(p, (*aggPool).int64s, h.gstart)
	for k := range h.st {
		s := &h.st[k]
		poolPut(p, (*aggPool).int64s, s.n)
		poolPut(p, (*aggPool).uint64s, s.v)
		// Not cleared: an exact sum's rare wide part stays reachable until the array is
		// reused, which costs less than clearing every released array.
		poolPut(p, (*aggPool).exacts, s.x)
	}
	*h = hashAgg{}
}
