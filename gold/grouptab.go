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
	h := groupHash(kh, start, a.cfg.Window.Slide)
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
	s := a.findWindow(start, key, kh)
	if s < 0 {
		s = a.newSlot(Window{start, start + a.cfg.Window.Size}, key)
		a.gtab.Insert(groupHash(kh, start, a.cfg.Window.Slide), s)
	} else if a.groups[s].touched == a.batch {
		return s
	}
	a.groups[s].touched = a.batch
	a.touched = append(a.touched, s)
	return s
}
