package gold

// groupTable finds a time window's group slot by (key id, window start) with open addressing
// (linear probing, backward-shift deletion). Each entry is 8 bytes: the pair's 32-bit hash,
// whose low bits are also its home position (tables stay below 2^32 entries), and the slot;
// the slot's group holds the key and start that settle a match. It replaces a list of
// open windows per key, which cost a slice header per key and 16 bytes per group, and a
// pointer chase per look-up.
type groupTable struct {
	slots []groupEntry // power-of-two size; slot < 0 is empty
	n     int
}

type groupEntry struct {
	tag  uint32
	slot int32
}

func newGroupTable() groupTable {
	t := groupTable{}
	t.resize(64)
	return t
}

// groupHash places a key's windows side by side: the key's hash plus the window's index
// (start / slide), so that the windows of one key, which a sliding window's event updates
// together and whose look-ups follow each other, share a cache line of the table instead of
// costing a miss each. The low 32 bits are kept: the position and a tag that tells a key's
// windows apart, and other keys' entries nearly always; the group settles every match.
func groupHash(keyHash uint32, start, slide int64) uint32 {
	return keyHash + uint32(uint64(start)/uint64(slide))
}

func (t *groupTable) resize(size int) {
	old := t.slots
	t.slots = make([]groupEntry, size)
	for i := range t.slots {
		t.slots[i].slot = -1
	}
	mask := uint32(size - 1)
	for _, e := range old {
		if e.slot < 0 {
			continue
		}
		i := e.tag & mask
		for t.slots[i].slot >= 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = e
	}
}

func (t *groupTable) insert(h uint32, slot int32) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.resize(len(t.slots) * 2)
	}
	mask := uint32(len(t.slots) - 1)
	i := h & mask
	for t.slots[i].slot >= 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = groupEntry{h, slot}
	t.n++
}

// remove deletes slot (whose pair hashes to h), shifting later entries of its probe run back.
func (t *groupTable) remove(h uint32, slot int32) {
	mask := uint32(len(t.slots) - 1)
	i := h & mask
	for t.slots[i].slot != slot {
		if t.slots[i].slot < 0 {
			return
		}
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; t.slots[j].slot >= 0; j = (j + 1) & mask {
		home := t.slots[j].tag & mask
		// Move j into the hole at i unless its home lies cyclically in (i, j].
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = groupEntry{slot: -1}
	t.n--
}
