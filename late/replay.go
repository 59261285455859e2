package late

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"time"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// ErrBadRange reports a replay range that is empty or reversed.
var ErrBadRange = errors.New("late: bad replay range")

// Replay sources.
const (
	SourceSilver = "silver"
	SourceBronze = "bronze"
)

// Range is the event-time range [From, To) a replay recomputes, and where it reads from.
type Range struct {
	From, To time.Time
	// Source is SourceSilver (default) or SourceBronze.
	Source string
}

// ReplayReport sums up one replay run.
type ReplayReport struct {
	QueryID string             `json:"queryId,omitempty"`
	From    time.Time          `json:"from"`
	To      time.Time          `json:"to"`
	Source  string             `json:"source"`
	Gold    []ReplayGoldReport `json:"gold"`
	// LateRows is what the merge-late run that precedes each replay folded in.
	LateRows int64 `json:"lateRows"`
}

// ReplayGoldReport is one aggregation's replay.
type ReplayGoldReport struct {
	Name string `json:"name"`
	// StartFrom and StartTo bound the window starts replaced (inclusive), after widening the
	// range to whole windows and keeping only windows the stream has already emitted.
	StartFrom *time.Time `json:"windowStartFrom,omitempty"`
	StartTo   *time.Time `json:"windowStartTo,omitempty"`
	// InputRows is the number of source rows read.
	InputRows int64           `json:"inputRows"`
	Merge     MergeGoldReport `json:"mergeLate"`
	// Gold is the commit, nil when nothing was replaced.
	Gold *writeStats `json:"commit,omitempty"`
	// Unchanged: the recomputed windows equal gold's rows of the range (window, keys,
	// aggregates bit for bit, late_rows), so nothing was committed (Gold is nil) and gold's
	// version and files stay as they were.
	Unchanged bool   `json:"unchanged,omitempty"`
	Note      string `json:"note,omitempty"`
}

// ReplayProgress is where a replay stands, for a progress bar. Options.Progress receives one
// when an aggregation starts, when a read of the source starts, after each source file read,
// and when an aggregation is done. Every figure counts work done, none is an estimate.
type ReplayProgress struct {
	// Gold is the aggregation being replayed; GoldDone of the run's GoldTotal are done.
	Gold      string
	GoldDone  int
	GoldTotal int
	// Pass numbers the reads of the source for Gold, from 1 (session windows widen the range
	// and read again until every session touching it is whole; 0: no read started yet).
	Pass int
	// FilesDone of the pass's FilesTotal source files are read: the files whose statistics
	// may hold rows of the range (the others are skipped unread).
	FilesDone, FilesTotal int
	// Rows counts the source rows of the range read for Gold so far, over every pass (a
	// window aggregation reads once: at the end it is the report's inputRows).
	Rows int64
}

// replayTracker keeps the figures of a replay's ReplayProgress; its methods do nothing on a
// nil tracker, so that a replay without a hook pays nothing.
type replayTracker struct {
	fn func(ReplayProgress)
	p  ReplayProgress
}

func newReplayTracker(fn func(ReplayProgress), golds int) *replayTracker {
	if fn == nil {
		return nil
	}
	return &replayTracker{fn: fn, p: ReplayProgress{GoldTotal: golds}}
}

// startGold begins gold afresh (also when a conflict with another writer makes it run again).
func (t *replayTracker) startGold(gold string) {
	if t == nil {
		return
	}
	t.p.Gold, t.p.Pass, t.p.FilesDone, t.p.FilesTotal, t.p.Rows = gold, 0, 0, 0, 0
	t.fn(t.p)
}

func (t *replayTracker) goldDone() {
	if t == nil {
		return
	}
	t.p.GoldDone++
	t.fn(t.p)
}

// startPass begins a read of files source files.
func (t *replayTracker) startPass(files int) {
	if t == nil {
		return
	}
	t.p.Pass++
	t.p.FilesDone, t.p.FilesTotal = 0, files
	t.fn(t.p)
}

func (t *replayTracker) rows(n int64) {
	if t != nil {
		t.p.Rows += n
	}
}

func (t *replayTracker) fileDone() {
	if t == nil {
		return
	}
	t.p.FilesDone++
	t.fn(t.p)
}

// Replay recomputes, for each aggregation, the whole windows of the range from silver (or
// bronze) and replaces them in gold in one commit. It first runs merge-late, so that the
// quarantine rows it recounts from the source are never folded in again afterwards.
func Replay(ctx context.Context, opts Options, r Range) (ReplayReport, error) {
	opts.defaults()
	if r.Source == "" {
		r.Source = SourceSilver
	}
	rep := ReplayReport{From: r.From.UTC(), To: r.To.UTC(), Source: r.Source}
	if !r.From.Before(r.To) {
		return rep, fmt.Errorf("%w: from %s is not before to %s", ErrBadRange, r.From.UTC().Format(time.RFC3339Nano), r.To.UTC().Format(time.RFC3339Nano))
	}
	if r.Source != SourceSilver && r.Source != SourceBronze {
		return rep, fmt.Errorf("%w: source %q (want silver or bronze)", ErrBadRange, r.Source)
	}
	// An unknown Gold is eachGold's error to report; the tracker only needs the count.
	golds, _ := opts.golds()
	opts.track = newReplayTracker(opts.Progress, len(golds))
	opts.share = newReplayShare(golds)
	var err error
	rep.QueryID, err = opts.eachGold(ctx, "replay", func(g *spec.Aggregation, st streamState) error {
		opts.track.startGold(g.Name)
		gr, err := replayOne(ctx, &opts, g, st, r)
		if err != nil {
			return err
		}
		opts.track.goldDone()
		rep.Gold = append(rep.Gold, gr)
		rep.LateRows += gr.Merge.LateRows
		opts.Logger.Info("late: replay", "gold", g.Name, "inputRows", gr.InputRows, "commit", gr.Gold, "note", gr.Note)
		return nil
	})
	return rep, err
}

// collectWindows aggregates the windows with start in [lo, hi] row by row with the
// collector (sketches: gold's own operator), returning the rows read and the groups.
func collectWindows(ctx context.Context, src *replaySource, a *agg, lo, hi int64) (int64, []*group, error) {
	c, err := newCollector(a)
	if err != nil {
		return 0, nil, err
	}
	var rows int64
	var wins []gold.Window
	err = src.read(ctx, a, lo, hi+a.window.Size, func(s *source, i int) error {
		rows++
		wins = a.window.Assign(wins[:0], s.ev.Int64[i])
		for _, w := range wins {
			if w.Start >= lo && w.Start <= hi {
				if err := c.add(s, i, w); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return rows, nil, err
	}
	groups, err := c.groups()
	return rows, groups, err
}

// emitFunc writes gold rows into out, flushing it as it fills; it returns the rows written.
type emitFunc func(out *pq.Batch, late map[string]int64, flush func() error) (int64, error)

// emitChunk is how many gold rows the engine appends before it flushes them to the writer.
const emitChunk = 1 << 16

// hashWindows returns the writer of the windows with start in [lo, hi], computed with the
// columnar engine when the rewrite asks for its new rows (after the old ones were read, so
// late_rows is known): the window starts are cut into slices of whole windows expected to
// hold at most slicePairs (row, window) pairs each, and each slice is read (only the files
// its time range may hold), aggregated on every worker, merged, written and dropped before
// the next, so memory is bounded by a slice, not by the range. A sliding window belongs to
// the slice of its start, so it is whole in one slice: the rows of the slice's last windows
// are read again by the next slice for the windows that start there. Each source row is
// counted in *inputRows once, by the slice whose share of the time line holds it.
//
// only, when set, limits the writer to the windows the tags' plan marks changed: the slices
// without one are not read, and the rows of the others' unchanged windows are not written
// (gold keeps them); the slices the plan's first pass counted are not counted again.
func hashWindows(ctx context.Context, src *replaySource, a *agg, lo, hi int64, workers int, slicePairs int64, inputRows *int64, only *tagPlan) emitFunc {
	return func(out *pq.Batch, late map[string]int64, flush func() error) (int64, error) {
		pool := &aggPool{} // the slices' tables: see aggPool
		cuts := windowSlices(src, a, lo, hi, slicePairs)
		emitTo, flushTo, err := only.filter(a, out, flush)
		if err != nil {
			return 0, err
		}
		var written int64
		for k, sl := range cuts {
			if !only.anyChanged(sl[0], sl[1]) {
				continue
			}
			// The part of the time line whose rows this slice counts.
			own0, own1 := sl[0], int64(math.MaxInt64)
			if k+1 < len(cuts) {
				own1 = cuts[k+1][0]
			}
			rows := inputRows
			if only != nil && (only.countedAll || only.counted[sl[0]]) {
				rows = new(int64)
			}
			if k+1 == len(cuts) {
				pool.setLast()
			}
			h, err := aggregateSlice(ctx, src, a, sl[0], sl[1], workers, own0, own1, rows, pool)
			if err != nil {
				return written, err
			}
			n, err := h.emit(emitTo, late, flushTo)
			h.release()
			written += n
			if err != nil {
				return written, err
			}
			if err := flushTo(); err != nil {
				return written, err
			}
		}
		return written - only.filtered(), nil
	}
}

// aggregateSlice aggregates the windows with start in [lo, hi] over the workers' partial
// tables, merged in worker order; the rows with time in [own0, own1) are added to *rows.
func aggregateSlice(ctx context.Context, src *replaySource, a *agg, lo, hi int64, workers int, own0, own1 int64, rows *int64, pool *aggPool) (*hashAgg, error) {
	p := newSlicePartials(src, a, lo, hi, workers, pool)
	err := src.readBatches(ctx, a, lo, hi+a.window.Size, workers, true, func(w int, s *source, sel []int32) error {
		return p.add(w, s, sel, own0, own1)
	})
	if err != nil {
		return nil, err
	}
	return p.merged(rows), nil
}

// slicePartials is one aggregation's share of a slice's read: a partial table for each
// worker over the windows with start in [lo, hi], and each worker's count of the rows it
// owns.
type slicePartials struct {
	a      *agg
	lo, hi int64
	parts  []*hashAgg
	counts []int64
	seed   maphash.Seed // shared: the partial tables merge without hashing keys again
	expect int64
	pool   *aggPool
	// keysFrom (nil: none): the partials of another aggregation fed each batch just before
	// these, grouping by the same columns; each worker's table takes its key ids from that
	// worker's table there (hashAgg.keysFrom).
	keysFrom *slicePartials
}

func newSlicePartials(src *replaySource, a *agg, lo, hi int64, workers int, pool *aggPool) *slicePartials {
	// Each worker reads about its share of the files: its table is sized for its share.
	expect := expectedPairs(src, a, lo, hi) / int64(max(workers, 1))
	return &slicePartials{a: a, lo: lo, hi: hi, parts: make([]*hashAgg, workers), counts: make([]int64, workers),
		seed: maphash.MakeSeed(), expect: expect, pool: pool}
}

// add folds worker w's batch rows sel into its table and counts those with time in
// [own0, own1).
func (p *slicePartials) add(w int, s *source, sel []int32, own0, own1 int64) error {
	if p.parts[w] == nil && p.lo <= p.hi {
		p.parts[w] = newPooledHashAgg(p.a, p.seed, p.pool)
		p.parts[w].expect = p.expect
		if p.keysFrom != nil {
			p.parts[w].keysFrom = p.keysFrom.parts[w]
		}
	}
	ev := s.ev.Int64
	for _, r := range sel {
		if t := ev[r]; t >= own0 && t < own1 {
			p.counts[w]++
		}
	}
	if p.lo > p.hi { // a shared read's slice may hold rows, but no window, of this one
		return nil
	}
	return p.parts[w].add(s, sel, p.lo, p.hi)
}

// merged folds the workers' tables together in worker order, adding their counts to *rows.
func (p *slicePartials) merged(rows *int64) *hashAgg {
	var h *hashAgg
	for w, part := range p.parts {
		*rows += p.counts[w]
		switch {
		case part == nil:
		case h == nil:
			h = part
		default:
			h.merge(part)
			part.release()
		}
		p.parts[w] = nil
	}
	if h == nil {
		h = newPooledHashAgg(p.a, p.seed, p.pool)
	}
	return h
}

// windowSlices cuts the window starts lo, lo+slide, ..., hi into consecutive slices [first,
// last start] expected to hold at most maxPairs (row, window) pairs each, from the source
// files' statistics: each file's numRecords spread evenly over its event-time range. Files
// without statistics count nothing (a slice then holds more than expected, never fewer rows).
func windowSlices(src *replaySource, a *agg, lo, hi, maxPairs int64) [][2]int64 {
	size, slide := a.window.Size, a.window.Slide
	n := (hi-lo)/slide + 1
	whole := [][2]int64{{lo, hi}}
	if maxPairs <= 0 || n <= 1 || n > 1<<20 {
		return whole
	}
	// rows[i]: expected rows with time in [lo + i*slide, lo + (i+1)*slide), over the
	// time line the range reads, [lo, hi+size).
	end := hi + size
	nb := (end - lo + slide - 1) / slide
	rows := make([]float64, nb)
	for _, f := range src.fileTimes(a.evName) {
		recs, t0, t1 := f.recs, f.lo, f.hi
		if t1 < lo || t0 >= end {
			continue
		}
		span := float64(t1-t0) + 1
		for b := max((t0-lo)/slide, 0); b < nb && lo+b*slide <= t1; b++ {
			b0, b1 := max(lo+b*slide, t0), min(lo+(b+1)*slide-1, t1)
			rows[b] += float64(recs) * float64(b1-b0+1) / span
		}
	}
	// A window starting at bucket i holds the rows of buckets i .. i+size/slide (rounded up).
	per := int((size + slide - 1) / slide)
	var out [][2]int64
	first, pairs := int64(0), 0.0
	for i := range n {
		var w float64
		for b := i; b < min(i+int64(per), nb); b++ {
			w += rows[b]
		}
		if i > first && pairs+w > float64(maxPairs) {
			out = append(out, [2]int64{lo + first*slide, lo + (i-1)*slide})
			first, pairs = i, 0
		}
		pairs += w
	}
	return append(out, [2]int64{lo + first*slide, hi})
}

// timeStats reads a data file's row count and the range of column col from its statistics.
func timeStats(f *txlog.Add, col string) (recs, lo, hi int64, ok bool) {
	if f.Stats == "" {
		return 0, 0, 0, false
	}
	var st struct {
		NumRecords int64          `json:"numRecords"`
		Min        map[string]any `json:"minValues"`
		Max        map[string]any `json:"maxValues"`
	}
	if json.Unmarshal([]byte(f.Stats), &st) != nil {
		return 0, 0, 0, false
	}
	at := func(m map[string]any) (int64, bool) {
		s, _ := m[col].(string)
		t, err := time.Parse(time.RFC3339Nano, s)
		return t.UnixMicro(), err == nil
	}
	lo, ok0 := at(st.Min)
	hi, ok1 := at(st.Max)
	return st.NumRecords, lo, hi, ok0 && ok1 && lo <= hi
}

// alignStart is the start of the newest window of spec that starts at or before t.
func alignStart(t int64, spec gold.WindowSpec) int64 {
	rem := (t - spec.StartTime) % spec.Slide
	if rem < 0 {
		rem += spec.Slide
	}
	return t - rem
}

// replace removes the gold rows drop selects (among the files prune lets through) and writes
// groups instead, keeping the late_rows figure of the rows they replace.
// replacement is what replace writes: the gold rows drop selects among those prune lets
// through give way to groups, in one commit with txn (when set) described by desc.
type replacement struct {
	prune  sqlexpr.Expr
	drop   func(start, end int64, keys []*pq.Column, i int) bool
	groups []*group
	// emit, when set, writes the new rows instead of groups (the columnar engine), taking
	// each row's late_rows from late (by groupKey encoding), calling flush to
	// write out's rows whenever it holds enough.
	emit emitFunc
	txn  *table.AppTxn
	desc string
	// sessions: a new group's late_rows is the sum over the replaced rows of its key whose
	// window it covers (a session that absorbs a late row grows, so no old row has its exact
	// window), plus absorbed[group key], the late rows this merge adds to it.
	sessions bool
	absorbed map[string]int64
}

// windowPrefix is the length of a groupKey's window part (start and end).
var windowPrefix = len(pq.AppendKeyInt64(pq.AppendKeyInt64(nil, 0), 0))

// oldSession is a replaced session row's window and late_rows.
type oldSession struct{ start, end, late int64 }

func replace(rw *rewriter, rp replacement) (*rewrite, error) {
	a, drop, groups := rw.a, rp.drop, rp.groups
	// The rows replace drops and the rows it writes are compared before the commit: equal,
	// gold is left as it is (table.Rewrite.Unchanged; a txn to record always commits).
	rw.compare = true
	lateRows := map[string]int64{}
	old := map[string][]oldSession{} // sessions: replaced rows with late_rows, by key without window
	var key []byte
	gr := goldRow{a: a}
	row := gr.rows(func(_, b *pq.Batch, i int, start, end int64, keys []*pq.Column) (rowAction, error) {
		if !drop(start, end, keys, i) {
			return keepRow, nil
		}
		// Only windows merge-late touched carry late rows: a map of the others would cost a
		// string per replaced row and find nothing.
		if late := intAt(b.Columns[a.lateCol], i); late != 0 {
			key = groupKey(key[:0], start, end, keys, i)
			lateRows[string(key)] += late
			if rp.sessions {
				k := string(key[windowPrefix:])
				old[k] = append(old[k], oldSession{start, end, late})
			}
		}
		rw.st.Deleted++
		return dropRow, nil
	})
	extra := func(out *pq.Batch, flush func() error) error {
		if rp.emit != nil {
			n, err := rp.emit(out, lateRows, flush)
			rw.st.Inserted += n
			return err
		}
		for _, g := range groups {
			late := lateRows[g.key]
			if rp.sessions {
				late = rp.absorbed[g.key]
				for _, o := range old[g.key[windowPrefix:]] {
					if o.start < g.win.End && g.win.Start < o.end {
						late += o.late
					}
				}
			}
			if err := a.appendRow(out, g.win, g.keys, g.vals, late); err != nil {
				return err
			}
			rw.st.Inserted++
		}
		return nil
	}
	return rw.rewrite(rp.prune, row, extra, rp.txn, txlog.Operation{Name: "WRITE", Parameters: map[string]any{
		"mode": "Overwrite", "partitionBy": "[]", "predicate": rp.desc}})
}
