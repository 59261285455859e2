package gold

import (
	"hash/maphash"
	"math"
	"unsafe"

	"github.com/medallion-lake/medallion/internal/hashtab"
)

// The group keys of an aggregation: each distinct encoded key once, in one arena, under a
// dense id that groups and settled extents refer to (and count, Aggregation.keyRefs). An index
// (internal/hashtab) finds a key's id by its bytes: against map[string]int32 it hashes the
// bytes once without a string header and keeps the hashes inline beside the ids, which is the
// hottest step of aggregation.
//
// A table is an aggregation's own, or shared by the time-window aggregations of one query that
// group by the same columns (ShareKeys, keyshare.go): a row's key is then hashed and probed
// once a batch for all of them. What refers to a key stays each aggregation's own (keyRefs,
// indexed by the shared id); the table frees a key only when no aggregation refers to it.

// keyIndex finds a key's id by the key's hash under seed.
type keyIndex struct {
	seed maphash.Seed
	hashtab.Table[int32]
}

func newKeyIndex() keyIndex { return keyIndex{maphash.MakeSeed(), hashtab.New[int32](64)} }

// keyLoc is where a key's bytes are in the arena.
type keyLoc struct{ off, n uint32 }

// freeLoc marks a freed id (a live key's offset is below it: an empty key's is 0).
var freeLoc = keyLoc{off: math.MaxUint32}

// keyTable holds the keys. Keys are never rewritten in place (a key removed leaves garbage,
// compacted into a new arena when it outgrows the live keys), so the strings that emitted rows
// alias stay valid.
type keyTable struct {
	keyIDs     keyIndex
	keyArena   []byte
	keyLocs    []keyLoc
	keyGarbage int
	keyHash    []uint32
	freeKeys   []int32
	touchSink  uint32 // what loadAhead's loads summed, kept so they are not dropped
}

func newKeyTable() *keyTable { return &keyTable{keyIDs: newKeyIndex()} }

// bytes is the table's footprint.
func (t *keyTable) bytes() int64 {
	return int64(unsafe.Sizeof(*t)) + t.keyIDs.Bytes() + sliceBytes(t.keyArena) + sliceBytes(t.keyLocs) +
		sliceBytes(t.keyHash) + sliceBytes(t.freeKeys)
}

// key is key id's bytes as a string aliasing the arena (never rewritten, see keyTable).
func (t *keyTable) key(id int32) string {
	l := t.keyLocs[id]
	if l.n == 0 {
		return ""
	}
	return unsafe.String(&t.keyArena[l.off], int(l.n))
}

// findKey returns the id of k, or -1, and k's 32-bit hash. The index holds the hash beside
// the id, so only a matching hash reads a key from the arena.
func (t *keyTable) findKey(k []byte) (int32, uint32) {
	h := t.hashKey(k)
	return t.findKeyHashed(k, h), h
}

// hashKey is k's 32-bit hash.
func (t *keyTable) hashKey(k []byte) uint32 { return uint32(maphash.Bytes(t.keyIDs.seed, k)) }

// findKeyHashed is the id of k, whose hash is h, or -1.
func (t *keyTable) findKeyHashed(k []byte, h uint32) int32 {
	for at, id, ok := t.keyIDs.Find(h, h); ok; at, id, ok = t.keyIDs.Find(h, at+1) {
		if l := t.keyLocs[id]; int(l.n) == len(k) && string(t.keyArena[l.off:l.off+l.n]) == string(k) {
			return id
		}
	}
	return -1
}

// addKey adds k, which is not in the table, under hash h and returns its id: a freed id when
// there is one, else the next.
func (t *keyTable) addKey(k []byte, h uint32) int32 {
	if len(t.keyArena)+len(k) > math.MaxUint32-1 {
		t.compactKeys()
	}
	loc := keyLoc{}
	if len(k) > 0 {
		loc = keyLoc{uint32(len(t.keyArena)), uint32(len(k))}
		t.keyArena = append(t.keyArena, k...)
	}
	var id int32
	if n := len(t.freeKeys); n > 0 {
		id = t.freeKeys[n-1]
		t.freeKeys = t.freeKeys[:n-1]
		t.keyLocs[id], t.keyHash[id] = loc, h
	} else {
		id = int32(len(t.keyLocs))
		t.keyLocs = append(t.keyLocs, loc)
		t.keyHash = append(t.keyHash, h)
	}
	t.keyIDs.Insert(h, id)
	return id
}

// live says whether id names a key (not a freed id).
func (t *keyTable) live(id int32) bool { return t.keyLocs[id] != freeLoc }

// compactKeys copies the live keys into a new arena once removed keys' bytes outweigh them.
// The old arena is left as it is: strings of emitted rows may still alias it.
func (t *keyTable) compactKeys() {
	live := len(t.keyArena) - t.keyGarbage
	arena := make([]byte, 0, live+live/4)
	for id, l := range t.keyLocs {
		if l.n == 0 {
			continue // an empty key, or a freed id
		}
		off := len(arena)
		arena = append(arena, t.keyArena[l.off:l.off+l.n]...)
		t.keyLocs[id].off = uint32(off)
	}
	t.keyArena, t.keyGarbage = arena, 0
}

// freeKey removes key id, whose last reference is gone.
func (t *keyTable) freeKey(id int32) {
	t.keyIDs.Delete(t.keyHash[id], id)
	t.keyGarbage += int(t.keyLocs[id].n)
	t.keyLocs[id] = freeLoc
	t.freeKeys = append(t.freeKeys, id)
	if t.keyGarbage > 1<<16 && 2*t.keyGarbage > len(t.keyArena) {
		t.compactKeys()
	}
}

// internKey returns k's id, adding k when it is new, and k's hash. Only an aggregation with a
// table of its own interns: a shared table's keys are interned by KeyShare.Intern, before the
// aggregations run.
func (a *Aggregation) internKey(k []byte) (int32, uint32) {
	id, h := a.findKey(k)
	if id >= 0 {
		return id, h
	}
	id = a.addKey(k, h)
	if int(id) < len(a.keyRefs) {
		a.keyRefs[id] = 0
	} else {
		a.keyRefs = append(a.keyRefs, 0)
	}
	return id, h
}

// releaseKey drops one reference to key (a group's, or its settled extents'), and the key
// itself with the last one. A shared table's key is only noted as dropped: the table frees it
// once no aggregation refers to it (KeyShare.Settle), after the batch.
func (a *Aggregation) releaseKey(key int32) {
	a.keyRefs[key]--
	if a.keyRefs[key] != 0 {
		return
	}
	if a.share != nil {
		a.keyDropped = append(a.keyDropped, key)
		return
	}
	if a.cfg.Session != nil {
		delete(a.sessions, key)
	}
	a.freeKey(key)
}
