package late

import (
	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/pq"
)

// sumParts adds the row hashes of the groups of p's partial tables (one a worker) to t.sums
// and their rows to t.rows, without folding the tables into one: each window is owned by the
// table holding most of its groups, the other tables' groups of that window are merged into
// it, and each table hashes the windows it owns. The workers read runs of silver's files in
// event-time order (sourceRead.shareFiles), so most windows are in one table alone and only
// the few groups where the runs meet, or late rows reach back, are looked up again: merging
// whole tables re-inserted every group of all but the first (at 100k keys about a row a
// group, a sixth of a replay). The sums are the merged table's: a group is hashed once, in
// one table, with the state the merge gives it.
func (t *passTarget) sumParts(p *slicePartials) error {
	var parts []*hashAgg
	for _, h := range p.parts {
		if h != nil {
			parts = append(parts, h)
		}
	}
	if len(parts) < 2 || !ownable(parts[0]) {
		agg := p.merged(&t.rows)
		err := t.sum(agg)
		agg.release()
		return err
	}
	for w := range p.parts {
		t.rows += p.counts[w]
		p.parts[w] = nil
	}
	defer func() {
		for _, h := range parts {
			h.release()
		}
	}()
	lo, owner := windowOwners(parts)
	slide := parts[0].a.window.Slide
	winOf := func(h *hashAgg, g int32) int { return int((h.gstart[g] - lo) / slide) }
	// moves[j][i]: the groups of table j in the windows table i owns (computed before any
	// merge: a merge only adds to a table groups of windows that table owns).
	moves := make([][][]int32, len(parts))
	for j, h := range parts {
		moves[j] = make([][]int32, len(parts))
		for g := range h.gkey {
			if i := owner[winOf(h, int32(g))]; i != j {
				moves[j][i] = append(moves[j][i], int32(g))
			}
		}
	}
	for i, h := range parts {
		for j, o := range parts {
			if len(moves[j][i]) > 0 {
				h.mergeGroups(o, moves[j][i])
			}
		}
	}
	var own []int32
	for i, h := range parts {
		own = own[:0]
		for g := range h.gkey {
			if owner[winOf(h, int32(g))] == i {
				own = append(own, int32(g))
			}
		}
		if ok, err := h.hashGroups(t.h, t.sums, own); err != nil || !ok {
			return err // !ok: ownable said it would be
		}
	}
	return nil
}

// ownable says whether the partial tables of h's aggregation may be hashed where their
// windows' owners hold them: hashSums can hash its rows from the state, and no aggregate
// is a float min or max, whose merge could keep the other zero of -0 and 0 when folded the
// other way round (every other state merges the same in either direction).
func ownable(h *hashAgg) bool {
	for _, st := range h.st {
		if (st.spec.Fn == gold.Min || st.spec.Fn == gold.Max) && !st.spec.Int {
			return false
		}
	}
	out, err := pq.NewBatch(h.a.gold)
	if err != nil {
		return false
	}
	_, ok := h.hashPlan(out)
	return ok
}

// windowOwners returns the first window start of parts and, for each window from it, the
// index of the table with the most groups of it (the first of equals).
func windowOwners(parts []*hashAgg) (lo int64, owner []int) {
	slide := parts[0].a.window.Slide
	first := true
	var hi int64
	for _, h := range parts {
		for _, s := range h.gstart {
			if first || s < lo {
				lo = s
			}
			if first || s > hi {
				hi = s
			}
			first = false
		}
	}
	if first {
		return 0, nil
	}
	nw := int((hi-lo)/slide) + 1
	counts := make([][]int32, len(parts))
	for i, h := range parts {
		counts[i] = make([]int32, nw)
		for _, s := range h.gstart {
			counts[i][(s-lo)/slide]++
		}
	}
	owner = make([]int, nw)
	for w := range owner {
		for i := range parts {
			if counts[i][w] > counts[owner[w]][w] {
				owner[w] = i
			}
		}
	}
	return lo, owner
}
