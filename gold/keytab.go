package gold

import "hash/maphash"

// keyTable maps encoded group keys to dense ids with open addressing (linear probing,
// backward-shift deletion). Against map[string]int32 it hashes the bytes once without a
// string header and keeps hash tags inline, which is the hottest step of aggregation. An
// entry is 8 bytes: the low 32 bits of the key's hash (its position, and a tag that spares
// most key compares) and the id.
type keyTable struct {
	seed  maphash.Seed
	slots []keySlot // power-of-two size; id < 0 is empty
	n     int
}

type keySlot struct {
	hash uint32
	id   int32
}

func newKeyTable() keyTable {
	t := keyTable{seed: maphash.MakeSeed()}
	t.resize(64)
	return t
}

func (t *keyTable) resize(size int) {
	old := t.slots
	t.slots = make([]keySlot, size)
	for i := range t.slots {
		t.slots[i].id = -1
	}
	mask := uint32(size - 1)
	for _, e := range old {
		if e.id < 0 {
			continue
		}
		i := e.hash & mask
		for t.slots[i].id >= 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = e
	}
}

// find returns the id of k (its bytes at locs[id] in arena) or -1, and k's 32-bit hash.
func (t *keyTable) find(k []byte, arena []byte, locs []keyLoc) (int32, uint32) {
	h := uint32(maphash.Bytes(t.seed, k))
	mask := uint32(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		e := &t.slots[i]
		if e.id < 0 {
			return -1, h
		}
		if e.hash == h {
			if l := locs[e.id]; int(l.n) == len(k) && string(arena[l.off:l.off+l.n]) == string(k) {
				return e.id, h
			}
		}
	}
}

func (t *keyTable) insert(h uint32, id int32) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.resize(len(t.slots) * 2)
	}
	mask := uint32(len(t.slots) - 1)
	i := h & mask
	for t.slots[i].id >= 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = keySlot{h, id}
	t.n++
}

// remove deletes id (whose key hashes to h), shifting later entries of the probe run back so
// lookups never need tombstones.
func (t *keyTable) remove(h uint32, id int32) {
	mask := uint32(len(t.slots) - 1)
	i := h & mask
	for t.slots[i].id != id {
		if t.slots[i].id < 0 {
			return
		}
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; t.slots[j].id >= 0; j = (j + 1) & mask {
		home := t.slots[j].hash & mask
		// Move j into the hole at i unless its home lies cyclically in (i, j].
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = keySlot{id: -1}
	t.n--
}

func (t *keyTable) len() int { return t.n }
