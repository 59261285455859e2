package gold

import "github.com/medallion-lake/medallion/internal/hashtab"

// A time window's group is found by (key id, window start) in an index (internal/hashtab) whose
// values are group slots; the slot's group holds the key and start that settle a match. It
// replaces a list of open windows per key, which cost a slice header per key and 16 bytes per
// group, and a pointer chase per look-up. Session windows keep a list per key instead
// (Aggregation.sessions): a session's start moves as sessions merge, so it cannot be hashed.

// groupIndex maps groupHash to the group slots of time windows.
type groupIndex struct{ hashtab.Table[int32] }

func newGroupIndex() groupIndex { return groupIndex{hashtab.New[int32](64)} }

// groupHash places a key's windows side by side: the key's hash plus the window's index
// (start / slide), so that the windows of one key, which a sliding window's event updates
// together and whose look-ups follow each other, share a cache line of the index instead of
// costing a miss each. The hash tells a key's windows apart, and other keys' entries nearly
// always; the group settles every match.
func groupHash(keyHash uint32, start, slide int64) uint32 {
	return keyHash + uint32(uint64(start)/uint64(slide))
}

// findWindow is the slot of (start, key) whose key hashes to kh, or -1.
func (a *Aggregation) findWindow(start int64, key int32, kh uint32) int32 {
	return a.findWindowAt(start, key, groupHash(kh, start, a.cfg.Window.Slide))
}

// findWindowAt is findWindow given the window's groupHash h.
func (a *Aggregation) findWindowAt(start int64, key int32, h uint32) int32 {
	for at, s, ok := a.gtab.Find(h, h); ok; at, s, ok = a.gtab.Find(h, at+1) {
		if g := &a.groups[s]; g.start == start && g.key == key {
			return s
		}
	}
	return -1
}

// windowSlot finds or creates the slot of the time window starting at start for key, whose
// hash is kh. It also records the group as touched by this batch, on the cache line the
// look-up just read.
func (a *Aggregation) windowSlot(start int64, key int32, kh uint32) int32 {
	return a.windowSlotAt(start, key, groupHash(kh, start, a.cfg.Window.Slide))
}

// windowSlotAt is windowSlot given the window's groupHash h.
func (a *Aggregation) windowSlotAt(start int64, key int32, h uint32) int32 {
	s := a.findWindowAt(start, key, h)
	if s < 0 {
		s = a.newSlot(Window{start, start + a.cfg.Window.Size}, key)
		a.gtab.Insert(h, s)
	} else if a.groups[s].touched == a.batch {
		return s
	}
	a.groups[s].touched = a.batch
	a.touched = append(a.touched, s)
	return s
}

// placeAhead is how many pairs placePairs reads the group index for at once, once the index
// has loadAheadEntries entries.
const placeAhead = 32

// loadAheadEntries is the index size (8 bytes an entry: 512 KiB, an L2 cache) from which the
// look-ups of placePairs and KeyShare.Intern load their entries ahead. A variable only so that
// tests can load ahead at any size.
var loadAheadEntries = 1 << 16

// placePairs finds or creates the group of each of ps, in order (so the slots, and the order
// in which the groups are touched, are windowSlot's one pair at a time), and appends the pair's
// slot and row to the batch's pairs. At 100k keys nearly every look-up misses the cache: a
// backlog's batch opens about a group a row, in a group index of several MB. So the index
// entries of placeAhead pairs are read first, in a loop of independent loads
// (hashtab.Touch) whose misses overlap, then the groups they name and the keys' reference
// counts likewise, and the look-ups and inserts that follow find them in cache; the table is
// grown first so that no insert moves them.
func (a *Aggregation) placePairs(ps []pendingPair) {
	slide := a.cfg.Window.Slide
	var hs [placeAhead]uint32
	for len(ps) > 0 {
		c := ps[:min(len(ps), placeAhead)]
		ps = ps[len(c):]
		for i := range c {
			hs[i] = groupHash(c[i].keyHash, c[i].start, slide)
		}
		if a.gtab.Size() < loadAheadEntries {
			// An index this small stays in cache: loading ahead would only cost.
			for i := range c {
				a.pairSlot = append(a.pairSlot, a.windowSlotAt(c[i].start, c[i].key, hs[i]))
				a.pairRow = append(a.pairRow, c[i].row)
			}
			continue
		}
		a.gtab.Reserve(len(c))
		sink := a.gtab.Touch(hs[:len(c)])
		// Then the group each first candidate names (a look-up that finds its group reads it
		// to settle the match) and the key's reference count (a new group counts one more).
		for i := range c {
			if _, s, ok := a.gtab.Find(hs[i], hs[i]); ok {
				sink += a.groups[s].touched
			}
			sink += uint32(a.keyRefs[c[i].key])
		}
		a.touchSink += sink
		for i := range c {
			a.pairSlot = append(a.pairSlot, a.windowSlotAt(c[i].start, c[i].key, hs[i]))
			a.pairRow = append(a.pairRow, c[i].row)
		}
	}
}
