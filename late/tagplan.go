package late

import (
	"cmp"
	"context"
	"encoding/json"
	"math"
	"slices"
	"time"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// goldRowTags is how every gold rewrite tags the files it writes (table.RowTagKey): row
// hashes summed by window start, late_rows left out. A replay copies a window's late_rows
// from the rows it replaces, so a recomputed window whose other columns hash as gold's do
// is gold's window exactly: gold holds one row per window and keys, and equal multisets of
// (window, keys, aggregates) then give every new row the late_rows of the one old row of its
// window and keys. late_rows of an unchanged window is thus never needed; a window that
// changed has its old files read, late_rows with them.
func goldRowTags() *table.RowTags {
	return &table.RowTags{Group: gold.ColWindow, Exclude: []string{gold.ColLateRows}}
}

// tagPlan is what a replay learns from gold's tags before it reads any of gold: the windows
// of [lo, hi] whose recomputation differs from what gold holds (or that a file without a
// trusted tag may hold), and the files to read for them. It is sparse: its size follows gold's
// files and the windows that hold data, not the range, which may span a century of empty
// windows (`run replay --from 2000-01-01`).
type tagPlan struct {
	lo, hi, slide int64
	// bad are the window starts untrusted files may hold, as sorted disjoint spans (spans
	// closer than a slide merged); diff the window starts, sorted, whose recomputation differs
	// from the sums of the tags. A window of [lo, hi] in either is to be replaced.
	bad  []span
	diff []int64
	keep map[string]bool // the candidate files' paths to read
	// counted are the slices (by first window start) whose source rows the first pass
	// counted, so that the rewrite does not count them again.
	counted map[int64]bool
	// countedAll: the first pass counted the rows of every slice (a read shared with other
	// golds: see replayShare).
	countedAll bool
	// dropped counts the emitted rows filter left out.
	dropped int64
}

// mergeSpans sorts spans and merges those that overlap or lie within a slide of each other
// (no window start between them).
func mergeSpans(spans []span, slide int64) []span {
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	var out []span
	for _, s := range spans {
		if n := len(out); n > 0 && (s.lo <= out[n-1].hi || out[n-1].hi < math.MaxInt64-slide && s.lo <= out[n-1].hi+slide) {
			out[n-1].hi = max(out[n-1].hi, s.hi)
			continue
		}
		out = append(out, s)
	}
	return out
}

// badSpan returns the first bad span that ends at or after w (nil: none).
func (p *tagPlan) badSpan(w int64) *span {
	i, _ := slices.BinarySearchFunc(p.bad, w, func(s span, w int64) int { return cmp.Compare(s.hi, w) })
	if i == len(p.bad) {
		return nil
	}
	return &p.bad[i]
}

// badCovers reports whether every window start in [first, last] is in a bad span.
func (p *tagPlan) badCovers(first, last int64) bool {
	s := p.badSpan(first)
	return s != nil && s.lo <= first && s.hi >= last
}

// isBad reports whether an untrusted file may hold window start w.
func (p *tagPlan) isBad(w int64) bool {
	s := p.badSpan(w)
	return s != nil && s.lo <= w
}

// changed reports whether window start w is one to replace.
func (p *tagPlan) changed(w int64) bool {
	if w < p.lo || w > p.hi {
		return false
	}
	_, differs := slices.BinarySearch(p.diff, w)
	return differs || p.isBad(w)
}

// none reports whether no window of the range is to be replaced.
func (p *tagPlan) none() bool { return !p.anyChanged(p.lo, p.hi) }

// anyChanged reports whether a window starting in [first, last] is to be replaced (nil plan:
// every window is).
func (p *tagPlan) anyChanged(first, last int64) bool {
	if p == nil {
		return true
	}
	first, last = max(first, p.lo), min(last, p.hi)
	if first > last {
		return false
	}
	if s := p.badSpan(first); s != nil && s.lo <= last {
		return true
	}
	i, _ := slices.BinarySearch(p.diff, first)
	return i < len(p.diff) && p.diff[i] <= last
}

// filtered is how many emitted rows filter left out.
func (p *tagPlan) filtered() int64 {
	if p == nil {
		return 0
	}
	return p.dropped
}

// filter returns where an emitter writes and flushes so that only the rows of changed
// windows reach out and flush (nil plan: out and flush themselves).
func (p *tagPlan) filter(a *agg, out *pq.Batch, flush func() error) (*pq.Batch, func() error, error) {
	if p == nil {
		return out, flush, nil
	}
	p.dropped = 0
	tmp, err := pq.NewBatch(out.Schema)
	if err != nil {
		return nil, nil, err
	}
	return tmp, func() error {
		win := tmp.Columns[a.winCol]
		for i := range tmp.Len() {
			if !win.IsNull(i) && p.changed(win.Children[0].Int64[i]) {
				out.AppendRow(tmp, i)
			} else {
				p.dropped++
			}
		}
		tmp.Reset()
		return flush()
	}, nil
}

// planByTags compares the range's windows recomputed from the source (hashed while emitted,
// no Parquet encoded, no gold read) with the sums of gold's trusted tags. nil: nothing to gain
// (every window of the range may be in an untagged file), replace the range as before.
func (k *windowAgg) planByTags(ctx context.Context, lo, hi int64, prune sqlexpr.Expr) (*tagPlan, error) {
	a := k.rw.a
	h, err := table.NewRowHasher(k.rw.snap, a.gold, *goldRowTags())
	if err != nil {
		return nil, err
	}
	_, files, err := prunedFiles("gold "+a.cfg.Name, k.rw.snap, a.gold, prune)
	if err != nil {
		return nil, err
	}
	old := table.GroupSums{}
	fileSums := map[string]table.GroupSums{}
	var bad []span
	for _, f := range files {
		sums, ok := h.Trusted(f)
		if !ok {
			// Its windows lie in the range of its statistics (all, without them).
			u := span{math.MinInt64, math.MaxInt64}
			if s, e, ok := windowStartStats(f); ok {
				u = span{s, e}
			}
			bad = append(bad, u)
			continue
		}
		fileSums[f.Path] = sums
		for g, s := range sums {
			if g >= lo && g <= hi {
				old.Add(g, s)
			}
		}
	}
	p := &tagPlan{lo: lo, hi: hi, slide: a.window.Slide, bad: mergeSpans(bad, a.window.Slide), keep: map[string]bool{}, counted: map[int64]bool{}}
	if p.badCovers(lo, hi) {
		return nil, nil
	}
	// The first pass: the windows no untagged file may hold, hashed as gold's writer would.
	fresh, err := k.freshSums(ctx, h, p)
	if err != nil {
		return nil, err
	}
	// Only windows that hold rows, recomputed or in gold, can differ.
	for _, sums := range []table.GroupSums{fresh, old} {
		for w := range sums {
			if w >= lo && w <= hi && fresh[w] != old[w] && !p.isBad(w) {
				p.diff = append(p.diff, w)
			}
		}
	}
	slices.Sort(p.diff)
	p.diff = slices.Compact(p.diff)
	for _, f := range files {
		sums, ok := fileSums[f.Path]
		if !ok {
			p.keep[f.Path] = true // untrusted: its windows are all changed ones
			continue
		}
		for g := range sums {
			if p.changed(g) {
				p.keep[f.Path] = true
				break
			}
		}
	}
	return p, nil
}

// hashRange aggregates the slices of [lo, hi] holding a window no bad span covers and sums
// the hashes of their gold rows by window start (hashSums: from the tables' state, no row
// built, where it can).
func (k *windowAgg) hashRange(ctx context.Context, h *table.RowHasher, p *tagPlan) (table.GroupSums, error) {
	a, src := k.rw.a, k.src
	t := &passTarget{a: a, h: h, sums: table.GroupSums{}}
	cuts := windowSlices(src, a, p.lo, p.hi, k.opts.slicePairs())
	pool := &aggPool{} // the slices' tables: see aggPool
	for n, sl := range cuts {
		if p.badCovers(sl[0], sl[1]) {
			continue
		}
		own0, own1 := sl[0], int64(math.MaxInt64)
		if n+1 < len(cuts) {
			own1 = cuts[n+1][0]
		}
		if n+1 == len(cuts) {
			pool.setLast()
		}
		agg, err := aggregateSlice(ctx, src, a, sl[0], sl[1], k.opts.workers(), own0, own1, &k.replay.InputRows, pool)
		if err != nil {
			return nil, err
		}
		p.counted[sl[0]] = true
		err = t.sum(agg)
		agg.release()
		if err != nil {
			return nil, err
		}
	}
	return t.sums, nil
}

// windowStartStats reads the range of window.start from a gold file's statistics.
func windowStartStats(f *txlog.Add) (lo, hi int64, ok bool) {
	if f.Stats == "" {
		return 0, 0, false
	}
	var st struct {
		Min map[string]any `json:"minValues"`
		Max map[string]any `json:"maxValues"`
	}
	if json.Unmarshal([]byte(f.Stats), &st) != nil {
		return 0, 0, false
	}
	at := func(m map[string]any) (int64, bool) {
		w, _ := m[gold.ColWindow].(map[string]any)
		s, _ := w["start"].(string)
		t, err := time.Parse(time.RFC3339Nano, s)
		return t.UnixMicro(), err == nil
	}
	lo, ok0 := at(st.Min)
	hi, ok1 := at(st.Max)
	return lo, hi, ok0 && ok1 && lo <= hi
}
