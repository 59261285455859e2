package gold

import (
	"hash/maphash"
	"math"
	"unsafe"

	"github.com/medallion-lake/medallion/internal/hashtab"
)

// The group keys of an aggregation: each distinct encoded key once, in one arena, under a
// dense id that groups and settled extents refer to (and count, keyRefs). An index
// (internal/hashtab) finds a key's id by its bytes: against map[string]int32 it hashes the
// bytes once without a string header and keeps the hashes inline beside the ids, which is the
// hottest step of aggregation.

// keyIndex finds a key's id by the key's hash under seed.
type keyIndex struct {
	seed maphash.Seed
	hashtab.Table[int32]
}

func newKeyIndex() keyIndex { return keyIndex{maphash.MakeSeed(), hashtab.New[int32](64)} }

// keyLoc is where a key's bytes are in the arena.
type keyLoc struct{ off, n uint32 }

// key is key id's bytes as a string aliasing the arena (never rewritten, see keyArena).
func (a *Aggregation) key(id int32) string {
	l := a.keyLocs[id]
	if l.n == 0 {
		return ""
	}
	return unsafe.String(&a.keyArena[l.off], int(l.n))
}

// findKey returns the id of k, or -1, and k's 32-bit hash. The index holds the hash beside
// the id, so only a matching hash reads a key from the arena.
func (a *Aggregation) findKey(k []byte) (int32, uint32) {
	h := uint32(maphash.Bytes(a.keyIDs.seed, k))
	for at, id, ok := a.keyIDs.Find(h, h); ok; at, id, ok = a.keyIDs.Find(h, at+1) {
		if l := a.keyLocs[id]; int(l.n) == len(k) && string(a.keyArena[l.off:l.off+l.n]) == string(k) {
			return id, h
		}
	}
	return -1, h
}

// internKey returns k's id, adding k when it is new, and k's hash.
func (a *Aggregation) internKey(k []byte) (int32, uint32) {
	id, h := a.findKey(k)
	if id >= 0 {
		return id, h
	}
	if len(a.keyArena)+len(k) > math.MaxUint32 {
		a.compactKeys()
	}
	loc := keyLoc{uint32(len(a.keyArena)), uint32(len(k))}
	a.keyArena = append(a.keyArena, k...)
	if n := len(a.freeKeys); n > 0 {
		id = a.freeKeys[n-1]
		a.freeKeys = a.freeKeys[:n-1]
		a.keyLocs[id], a.keyRefs[id], a.keyHash[id] = loc, 0, h
	} else {
		id = int32(len(a.keyLocs))
		a.keyLocs = append(a.keyLocs, loc)
		a.keyRefs = append(a.keyRefs, 0)
		a.keyHash = append(a.keyHash, h)
	}
	a.keyIDs.Insert(h, id)
	return id, h
}

// compactKeys copies the live keys into a new arena once removed keys' bytes outweigh them.
// The old arena is left as it is: strings of emitted rows may still alias it.
func (a *Aggregation) compactKeys() {
	live := len(a.keyArena) - a.keyGarbage
	arena := make([]byte, 0, live+live/4)
	for id, l := range a.keyLocs {
		if a.keyRefs[id] == 0 || l.n == 0 {
			continue
		}
		off := len(arena)
		arena = append(arena, a.keyArena[l.off:l.off+l.n]...)
		a.keyLocs[id].off = uint32(off)
	}
	a.keyArena, a.keyGarbage = arena, 0
}

// releaseKey drops one reference to key (a group's, or its settled extents'), and the key
// itself with the last one.
func (a *Aggregation) releaseKey(key int32) {
	a.keyRefs[key]--
	if a.keyRefs[key] != 0 {
		return
	}
	a.keyIDs.Delete(a.keyHash[key], key)
	if a.cfg.Session != nil {
		delete(a.sessions, key)
	}
	a.keyGarbage += int(a.keyLocs[key].n)
	a.keyLocs[key] = keyLoc{}
	a.freeKeys = append(a.freeKeys, key)
	if a.keyGarbage > 1<<16 && 2*a.keyGarbage > len(a.keyArena) {
		a.compactKeys()
	}
}
