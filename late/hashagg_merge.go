package late

import "hash/maphash"

// merge folds every group of o (a partial table over other rows) into h.
func (h *hashAgg) merge(o *hashAgg) { h.mergeGroups(o, nil) }

// mergeGroups folds groups ogs of o (nil: every group) into h; only the keys of those
// groups are interned in h.
func (h *hashAgg) mergeGroups(o *hashAgg, ogs []int32) {
	n := len(o.gkey)
	if ogs != nil {
		n = len(ogs)
	}
	// At most every group merged is new: one resize for all of them. (The partial tables
	// of a replay hold mostly different windows, so little of this room is wasted.)
	h.reserveGroups(len(h.gkey) + n)
	// As add does: a step of look-ups at a time, their first slots touched before the probes.
	const step = 4096
	kids := poolMake(h.pool, (*aggPool).int32s, len(o.khash))
	defer poolPut(h.pool, (*aggPool).int32s, kids)
	okeys := h.mergedKeys(o, ogs, kids)
	h.reserveKeys(len(h.khash) + len(okeys))
	hvs, gs := make([]uint32, 0, step), make([]int32, 0, step)
	for k0 := 0; k0 < len(okeys); k0 += step {
		ids := okeys[k0:min(k0+step, len(okeys))]
		hvs = hvs[:0]
		for _, id := range ids {
			if o.seed == h.seed {
				hvs = append(hvs, o.khash[id])
			} else {
				hvs = append(hvs, uint32(maphash.Bytes(h.seed, o.key(id))))
			}
		}
		h.touchSink += touch(h.kslots, hvs)
		for k, hv := range hvs {
			kids[ids[k]] = h.internHashed(o.key(ids[k]), hv)
		}
	}
	at := func(i int) int32 { return int32(i) }
	if ogs != nil {
		at = func(i int) int32 { return ogs[i] }
	}
	for g0 := 0; g0 < n; g0 += step {
		g1 := min(g0+step, n)
		hvs = hvs[:0]
		for i := g0; i < g1; i++ {
			og := at(i)
			hvs = append(hvs, h.groupHash(kids[o.gkey[og]], o.gstart[og]))
		}
		h.touchSink += touch(h.gslots, hvs)
		gs = gs[:0]
		for k, hv := range hvs {
			og := at(g0 + k)
			gs = append(gs, h.groupHashed(kids[o.gkey[og]], o.gstart[og], hv))
		}
		h.fillStates()
		for k, g := range gs {
			for i := range h.st {
				h.st[i].mergeValue(g, &o.st[i], at(g0+k))
			}
		}
	}
}

// mergedKeys returns the key ids of o that groups ogs use (nil: every key id of o), each
// once; kids (one entry per key of o) is scratch.
func (h *hashAgg) mergedKeys(o *hashAgg, ogs []int32, kids []int32) []int32 {
	if ogs == nil {
		all := make([]int32, len(o.khash))
		for i := range all {
			all[i] = int32(i)
		}
		return all
	}
	clear(kids)
	var used []int32
	for _, og := range ogs {
		if kid := o.gkey[og]; kids[kid] == 0 {
			kids[kid] = 1
			used = append(used, kid)
		}
	}
	return used
}
