package late

import (
	"context"
	"encoding/json"
	"math"
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
// trusted tag may hold), and the files to read for them.
type tagPlan struct {
	lo, hi, slide int64
	// changed are the window starts to replace; files the candidate files that hold one.
	changed map[int64]bool
	keep    map[string]bool // the candidate files' paths to read
	// counted are the slices (by first window start) whose source rows the first pass
	// counted, so that the rewrite does not count them again.
	counted map[int64]bool
	// dropped counts the emitted rows filter left out.
	dropped int64
}

// anyChanged reports whether a window starting in [first, last] is to be replaced (nil plan:
// every window is).
func (p *tagPlan) anyChanged(first, last int64) bool {
	if p == nil {
		return true
	}
	for w := first; w <= last; w += p.slide {
		if p.changed[w] {
			return true
		}
	}
	return false
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
			if !win.IsNull(i) && p.changed[win.Children[0].Int64[i]] {
				out.AppendRow(tmp, i)
			} else {
				p.dropped++
			}
		}
		tmp.Reset()
		return flush()
	}, nil
}

// untrusted is a file without a trusted tag: its window starts lie in [lo, hi] (all: the
// file has no statistics of window.start).
type untrusted struct {
	lo, hi int64
	all    bool
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
	var bad []untrusted
	for _, f := range files {
		sums, ok := h.Trusted(f)
		if !ok {
			u := untrusted{all: true}
			if s, e, ok := windowStartStats(f); ok {
				u = untrusted{lo: s, hi: e}
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
	slide := a.window.Slide
	isBad := func(w int64) bool {
		for _, u := range bad {
			if u.all || w >= u.lo && w <= u.hi {
				return true
			}
		}
		return false
	}
	p := &tagPlan{lo: lo, hi: hi, slide: slide, changed: map[int64]bool{}, keep: map[string]bool{}, counted: map[int64]bool{}}
	anyTrusted := false
	for w := lo; w <= hi; w += slide {
		if isBad(w) {
			p.changed[w] = true
		} else {
			anyTrusted = true
		}
	}
	if !anyTrusted {
		return nil, nil
	}
	// The first pass: the windows no untagged file may hold, hashed as gold's writer would.
	fresh, err := k.hashRange(ctx, h, p, isBad)
	if err != nil {
		return nil, err
	}
	for w := lo; w <= hi; w += slide {
		if !p.changed[w] && fresh[w] != old[w] {
			p.changed[w] = true
		}
	}
	for _, f := range files {
		sums, ok := fileSums[f.Path]
		if !ok {
			p.keep[f.Path] = true // untrusted: its windows are all changed ones
			continue
		}
		for g := range sums {
			if p.changed[g] {
				p.keep[f.Path] = true
				break
			}
		}
	}
	return p, nil
}

// hashRange aggregates the slices of [lo, hi] holding a window isBad does not mark, emits
// their rows into a scratch batch and sums their hashes by window start.
func (k *windowAgg) hashRange(ctx context.Context, h *table.RowHasher, p *tagPlan, isBad func(int64) bool) (table.GroupSums, error) {
	a, src := k.rw.a, k.src
	sums := table.GroupSums{}
	out, err := pq.NewBatch(a.gold)
	if err != nil {
		return nil, err
	}
	flush := func() error {
		cols, err := pq.Conform(a.gold, out)
		if err != nil {
			return err
		}
		for i := range out.Len() {
			if g, hash, ok := h.Row(cols, i); ok {
				sums.Add(g, hash)
			}
		}
		out.Reset()
		return nil
	}
	cuts := windowSlices(src, a, p.lo, p.hi, k.opts.slicePairs())
	pool := &aggPool{} // the slices' tables: see aggPool
	for n, sl := range cuts {
		all := true
		for w := sl[0]; w <= sl[1]; w += p.slide {
			all = all && isBad(w)
		}
		if all {
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
		if _, err = agg.emit(out, nil, flush); err == nil {
			err = flush()
		}
		agg.release()
		if err != nil {
			return nil, err
		}
	}
	return sums, nil
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
