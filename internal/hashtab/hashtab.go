// Package hashtab is the one hash-table family of the stream's operators: an open-addressing
// index from 32-bit hashes to small values (linear probing, backward-shift deletion, no
// tombstones), which gold's group keys and windows and the join's per-side keys each keep
// beside their own storage. (silver's dedup keeps a tagged index of its own, for the reason
// its dedupShard gives: a state far bigger than cache whose look-ups mostly miss.)
//
// The table holds no keys. Each user keeps its keys where its state wants them (an arena of
// key bytes, a group's fields, a bucket's chunk) and stores in the table only the hash and a
// value that names the key (an id, a slot, a reference); a look-up walks the values stored
// under the hash and the user settles each candidate against its own key. So a table is a
// slice of 8-byte entries (for a 4-byte value) with nothing in it the collector walks, a miss
// costs one cache line, and two keys that share a hash simply take two entries: a hash never
// stands for its key.
//
// It is memory only and holds no state of its own across a crash: its users rebuild it from
// their snapshots, whose bytes never depend on the table's layout.
package hashtab

import (
	"math/bits"
	"unsafe"
)

// usedBit marks an entry in use: an entry's tag is its hash with this bit set, so 0 is free
// and no value needs to be set aside to mean "empty". Positions come from the low bits, so
// tables stay below 2^31 entries.
const usedBit = 1 << 31

// minSize is the smallest table.
const minSize = 8

// Table maps 32-bit hashes to values of V, several values per hash allowed. It keeps 31 bits
// of a hash: a look-up may return values stored under a hash that differs only in the top
// bit, which the caller's key compare tells apart as it does any other collision. Make it with
// New (a look-up in a zero Table panics: keeping that case out keeps the look-up inlined). It
// is not safe for concurrent use.
type Table[V comparable] struct {
	entries []entry[V] // power-of-two size, or nil
	n       int
}

type entry[V comparable] struct {
	tag uint32 // hash | usedBit; 0: free
	val V
}

// New returns an empty table with room for size entries (rounded up to a power of two) before
// it first grows.
func New[V comparable](size int) Table[V] {
	var t Table[V]
	t.Resize(size)
	return t
}

// Len is the number of values in the table.
func (t *Table[V]) Len() int { return t.n }

// Size is the number of entries the table has allocated (a power of two, or 0).
func (t *Table[V]) Size() int { return len(t.entries) }

// Bytes is the memory the table's entries take, by capacity.
func (t *Table[V]) Bytes() int64 {
	return int64(cap(t.entries)) * int64(unsafe.Sizeof(entry[V]{}))
}

// Find returns the first value stored under hash h at or after position from in h's probe
// run, with its position, or ok false once the run reaches a free entry. Entries of other
// hashes are skipped on their tag: the caller compares only the candidates' keys. A look-up
// starts at h itself and goes on after each candidate:
//
//	for at, v, ok := t.Find(h, h); ok; at, v, ok = t.Find(h, at+1) {
//		if v's key is k { return v }
//	}
//
// and the table must not change in between. Positions are plain integers and Find is one small
// function, so that the look-up is inlined into the caller and stays in registers.
func (t *Table[V]) Find(h, from uint32) (at uint32, v V, ok bool) {
	mask := uint32(len(t.entries) - 1)
	tag := h | usedBit
	for at = from & mask; ; at = (at + 1) & mask {
		e := &t.entries[at]
		if e.tag == tag {
			return at, e.val, true
		}
		if e.tag == 0 {
			return at, v, false
		}
	}
}

// Touch reads the entry where each of hs starts its probe, in a loop of independent loads, and
// returns a sum of what it read (only so that the loads are not optimized away): the cache
// misses of a batch of look-ups or inserts overlap, a dozen at a time, instead of stalling
// each probe in turn, when the table is far larger than the caches. The probes that follow
// find their entries in cache, if the table does not grow in between (Reserve first).
func (t *Table[V]) Touch(hs []uint32) uint32 {
	if len(t.entries) == 0 {
		return 0
	}
	mask := uint32(len(t.entries) - 1)
	var x uint32
	for _, h := range hs {
		x += t.entries[h&mask].tag
	}
	return x
}

// Reserve grows the table, if need be, so that n more values go in without a rehash.
func (t *Table[V]) Reserve(n int) {
	if (t.n+n)*4 > len(t.entries)*3 {
		t.Resize(max(2*len(t.entries), (t.n+n)*4/3+1))
	}
}

// Insert adds v under hash h, growing the table past three quarters full. It does not look
// for v first: callers insert what a look-up did not find.
func (t *Table[V]) Insert(h uint32, v V) {
	if (t.n+1)*4 > len(t.entries)*3 {
		t.Resize(max(2*len(t.entries), minSize))
	}
	mask := uint32(len(t.entries) - 1)
	i := h & mask
	for t.entries[i].tag != 0 {
		i = (i + 1) & mask
	}
	t.entries[i] = entry[V]{h | usedBit, v}
	t.n++
}

// Delete removes value v stored under hash h and reports whether it was there. The entries
// after it in its probe run shift back into the hole, so look-ups never meet tombstones and a
// table that churns (keys evicted as fast as they come) never fills up with them.
func (t *Table[V]) Delete(h uint32, v V) bool {
	if len(t.entries) == 0 {
		return false
	}
	mask := uint32(len(t.entries) - 1)
	tag := h | usedBit
	i := h & mask
	for t.entries[i].tag != tag || t.entries[i].val != v {
		if t.entries[i].tag == 0 {
			return false
		}
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; t.entries[j].tag != 0; j = (j + 1) & mask {
		home := t.entries[j].tag & mask
		// Move j into the hole at i unless its home lies cyclically in (i, j].
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			t.entries[i] = t.entries[j]
			i = j
		}
	}
	t.entries[i] = entry[V]{}
	t.n--
	return true
}

// Retain keeps the values keep accepts and drops the others in one walk around the table,
// in place: each entry is taken out and, if kept, placed again at the first free entry from
// its home. The walk starts after an entry that is free, which no probe run crosses, so every
// kept entry's home lies between the start and its own position, all of it already walked:
// it lands at or before where it was, and what the walk frees later lies after it. Dropping
// most of a table this way reads it front to back where Delete, a value at a time, costs a
// probe (a cache miss in a large table) and a shift for each value: a stream batch whose
// watermark closes most of its groups frees them all at once.
func (t *Table[V]) Retain(keep func(V) bool) {
	size := uint32(len(t.entries))
	if size == 0 {
		return
	}
	mask := size - 1
	start := uint32(0)
	for t.entries[start].tag != 0 { // a table is never full (Insert grows it at 3/4)
		start++
	}
	for k := uint32(1); k < size; k++ {
		i := (start + k) & mask
		e := t.entries[i]
		if e.tag == 0 {
			continue
		}
		t.entries[i] = entry[V]{}
		if !keep(e.val) {
			t.n--
			continue
		}
		j := e.tag & mask
		for t.entries[j].tag != 0 {
			j = (j + 1) & mask
		}
		t.entries[j] = e
	}
}

// Resize rebuilds the table with size entries, rounded up to a power of two and to what holds
// the values it has at most three quarters full.
func (t *Table[V]) Resize(size int) {
	size = max(size, minSize, (t.n*4+2)/3)
	size = 1 << bits.Len(uint(size-1))
	old := t.entries
	t.entries = make([]entry[V], size)
	mask := uint32(size - 1)
	for _, e := range old {
		if e.tag == 0 {
			continue
		}
		i := e.tag & mask
		for t.entries[i].tag != 0 {
			i = (i + 1) & mask
		}
		t.entries[i] = e
	}
}
