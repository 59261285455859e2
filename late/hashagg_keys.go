package late

import (
	"hash/maphash"
	"slices"
)

// sameRows reports whether a and b are the same selection: the same slice of a batch's rows.
func sameRows(a, b []int32) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// keyIDsFrom sets h.kids to the key ids of the rows f has just found the key ids of (see
// keysFrom): one load per row, and a key new to h interned from f's bytes, with f's hash
// when the two tables share a seed.
func (h *hashAgg) keyIDsFrom(f *hashAgg) {
	if n := len(f.khash); n > len(h.xlate) {
		old := len(h.xlate)
		h.xlate = slices.Grow(h.xlate, n-old)[:n]
		for i := old; i < n; i++ {
			h.xlate[i] = -1
		}
	}
	h.kids = h.kids[:0]
	for _, fk := range f.kids {
		id := h.xlate[fk]
		if id < 0 {
			k, hv := f.key(fk), f.khash[fk]
			if f.seed != h.seed {
				hv = uint32(maphash.Bytes(h.seed, k))
			}
			id = h.internHashed(k, hv)
			h.xlate[fk] = id
		}
		h.kids = append(h.kids, id)
	}
}
