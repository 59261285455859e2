package late

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/txlog"
)

// aggJob is one aggregation's merge-late or replay, its gold table read and resolved: what
// the two aggregation plug-ins (windowAgg, sessionAgg) share. merge is set in merge-late
// mode, replay in replay mode.
type aggJob struct {
	opts *Options
	g    *spec.Aggregation
	st   streamState
	rw   *rewriter
	// Merge-late: the quarantine delta, its schema and the files its new versions added.
	merge   *MergeGoldReport
	d       *delta
	qschema *txlog.StructType
	adds    []*txlog.Add
	// Replay: the source and the range.
	replay *ReplayGoldReport
	src    *replaySource
	r      Range
}

// reconcile runs the job's plug-in: sessionAgg for session windows, windowAgg otherwise.
func (j *aggJob) reconcile(ctx context.Context) error {
	if j.rw.a.session != nil {
		return reconcile(ctx, &sessionAgg{j})
	}
	return reconcile(ctx, &windowAgg{j})
}

// mergeOne merges one aggregation's new quarantine rows into gold.
func mergeOne(ctx context.Context, opts *Options, g *spec.Aggregation, st streamState) (MergeGoldReport, error) {
	gr := MergeGoldReport{Name: g.Name, FromVersion: -1, ToVersion: -1}
	if g.OutputMode == spec.OutputComplete {
		gr.Note = "complete mode has no late rows"
		return gr, nil
	}
	j, err := openMerge(ctx, opts, g, st, &gr)
	if err != nil || j == nil {
		return gr, err
	}
	return gr, j.reconcile(ctx)
}

// openMerge reads gold and the quarantine delta for mergeOne (nil: nothing to merge, gr says
// why).
func openMerge(ctx context.Context, opts *Options, g *spec.Aggregation, st streamState, gr *MergeGoldReport) (*aggJob, error) {
	d, state, err := openDelta(ctx, opts, st, deltaTables{out: g.Table, quarantine: g.Quarantine,
		outWhat: "gold " + g.Name, qWhat: "quarantine " + g.Name})
	gr.FromVersion, gr.ToVersion = d.from, d.to
	switch {
	case err != nil:
		return nil, err
	case state == deltaNoOutput:
		gr.Note = "the gold table does not exist yet: nothing to merge into"
		return nil, nil
	case state == deltaNoQuarantine:
		gr.UpToDate, gr.ToVersion = true, -1
		return nil, nil
	case gr.ToVersion <= gr.FromVersion:
		gr.UpToDate, gr.ToVersion = true, gr.FromVersion
		return nil, nil
	}
	qschema, err := d.qSnap.Schema()
	if err != nil {
		return nil, fmt.Errorf("late: quarantine %s: %w", g.Name, err)
	}
	gschema, err := d.outSnap.Schema()
	if err != nil {
		return nil, fmt.Errorf("late: gold %s: %w", g.Name, err)
	}
	if err := checkGoldWritable(d.outSnap, gschema, g); err != nil {
		return nil, err
	}
	a, err := resolve(&opts.Query, g, qschema, gschema)
	if err != nil {
		return nil, err
	}
	if qschema.Field(colLateWatermark) == nil {
		return nil, fmt.Errorf("late: quarantine %s has no %s column", g.Quarantine, colLateWatermark)
	}
	adds, err := addedFiles(ctx, d.q.Bucket(), gr.FromVersion+1, gr.ToVersion)
	if errors.Is(err, errCommitCleanedUp) {
		// Replay runs merge-late first and would stop here too; refresh rebuilds gold from
		// silver, which holds the late rows, and records the quarantine as merged.
		return nil, fmt.Errorf("late: quarantine %s: %w: rebuild gold from silver with `medallion run refresh --table %s --config F` "+
			"(docs/derived-tables.md), then merge-late goes on from there", g.Name, err, g.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("late: quarantine %s: %w", g.Name, err)
	}
	return &aggJob{opts: opts, g: g, st: st, rw: &rewriter{t: d.out, snap: d.outSnap, a: a},
		merge: gr, d: d, qschema: qschema, adds: adds}, nil
}

// readLate reads the delta's late rows (see readLate), noting their count in the report.
func (j *aggJob) readLate(ctx context.Context) (lateRead, *collector, error) {
	c, err := newCollector(j.rw.a)
	if err != nil {
		return lateRead{}, nil, err
	}
	lr, err := readLate(ctx, j.d.q, j.d.qSnap, j.rw.a, j.adds, c)
	if err != nil {
		return lr, nil, err
	}
	j.merge.LateRows, j.merge.Pairs = lr.rows, lr.pairs
	return lr, c, nil
}

// windowAgg is the plug-in for tumbling and sliding windows. Merge-late adds each late
// row's exact aggregates to the windows that had closed when it was judged (upsert);
// replay recomputes the whole windows of the range that the stream has emitted.
type windowAgg struct{ *aggJob }

// windowScope is what windowAgg finds: merge-late's late rows as per-window deltas,
// replay's window starts [lo, hi].
type windowScope struct {
	lr     lateRead
	groups []*group
	lo, hi int64
}

func (k *windowAgg) find(ctx context.Context) (*windowScope, bool, error) {
	if k.merge == nil {
		return k.findRange()
	}
	lr, c, err := k.readLate(ctx)
	if err != nil {
		return nil, false, err
	}
	groups, err := c.groups()
	if err != nil {
		return nil, false, err
	}
	// Nothing to fold in: leave gold alone rather than commit only the txn; the next run
	// reads these (row-less) versions again, which costs a few small reads.
	return &windowScope{lr: lr, groups: groups}, len(groups) > 0, nil
}

// findRange widens the range to whole windows and keeps those the stream has emitted.
func (k *windowAgg) findRange() (*windowScope, bool, error) {
	gr := k.replay
	lo, hi, ok := windowRange(k.rw.a, k.r, k.st.evictMs)
	if !ok {
		gr.Note = "no window of the range has been emitted by the stream yet"
		return nil, false, nil
	}
	s, e := time.UnixMicro(lo).UTC(), time.UnixMicro(hi).UTC()
	gr.StartFrom, gr.StartTo = &s, &e
	return &windowScope{lo: lo, hi: hi}, true, nil
}

// windowRange returns the starts [lo, hi] of the whole windows of r that the stream has
// emitted (false: none).
func windowRange(a *agg, r Range, evictMs int64) (lo, hi int64, ok bool) {
	size, slide := a.window.Size, a.window.Slide
	from, to := r.From.UnixMicro(), r.To.UnixMicro()
	// Whole windows: every window with start in (from - size, to).
	lo = alignStart(from-size, a.window) + slide
	hi = alignStart(to-1, a.window)
	// Only windows the stream has emitted (end <= its committed eviction watermark): the
	// others are still open in its state and it will emit them itself.
	hi = min(hi, alignStart(evictMs*1000-size, a.window))
	return lo, hi, hi >= lo
}

func (k *windowAgg) recompute(ctx context.Context, sc *windowScope) (*rewrite, error) {
	if k.merge != nil {
		if err := evolveGold(ctx, &k.opts.Query, k.g, k.rw, k.qschema); err != nil {
			return nil, err
		}
		return upsert(k.rw, sc.groups, k.d.txn())
	}
	a, gr, lo, hi := k.rw.a, k.replay, sc.lo, sc.hi
	rp := replacement{}
	var err error
	s, e := *gr.StartFrom, *gr.StartTo
	rp.prune = sqlexpr.And(sqlexpr.Ge(gold.ColWindow+".start", s), sqlexpr.Le(gold.ColWindow+".start", e))
	rp.drop = func(start, _ int64, _ []*pq.Column, _ int) bool { return start >= lo && start <= hi }
	k.rw.only = nil
	if canHashAgg(a) {
		// Gold's tags first: an unchanged range reads no gold and commits nothing; a changed
		// one reads only the files of its changed windows (and the untagged ones).
		plan, err := k.planByTags(ctx, lo, hi, rp.prune)
		if err != nil {
			return nil, err
		}
		if plan != nil && plan.none() {
			gr.Unchanged = true
			gr.Note = "the recomputed windows equal gold's rows of the range by its files' tags: nothing read, nothing committed"
			return nil, nil
		}
		if plan != nil {
			k.rw.only = func(f *txlog.Add) bool { return plan.keep[f.Path] }
			rp.drop = func(start, _ int64, _ []*pq.Column, _ int) bool { return plan.changed(start) }
		}
		rp.emit = hashWindows(ctx, k.src, a, lo, hi, k.opts.workers(), k.opts.slicePairs(), &gr.InputRows, plan)
	} else if gr.InputRows, rp.groups, err = collectWindows(ctx, k.src, a, lo, hi); err != nil {
		return nil, err
	}
	rp.desc = fmt.Sprintf("window.start >= '%s' AND window.start <= '%s'", s.Format(time.RFC3339Nano), e.Format(time.RFC3339Nano))
	return replace(k.rw, rp)
}

func (k *windowAgg) committed(ctx context.Context, sc *windowScope, ws writeStats) {
	if k.merge == nil {
		k.replay.Gold = &ws
		*k.replay = noteUnchanged(*k.replay)
		return
	}
	k.merge.Gold = &ws
	k.opts.noteInput(ctx, k.merge, sc.lr)
}

// sessionAgg is the plug-in for session windows: a late row can extend or bridge sessions,
// so both modes re-sessionize the affected keys over the affected range from silver (see
// resessionize); merge-late's range is its late rows' times and its keys theirs.
type sessionAgg struct{ *aggJob }

// sessionFound is what sessionAgg finds, and what its re-sessionization replaced.
type sessionFound struct {
	sc  resessionScope
	res sessionResult
}

func (k *sessionAgg) find(ctx context.Context) (*sessionFound, bool, error) {
	if k.merge == nil {
		return &sessionFound{sc: resessionScope{from: k.r.From.UnixMicro(), to: k.r.To.UnixMicro()}}, true, nil
	}
	// Sessions are recomputed, not added to: the late rows only say which keys and times.
	lr, _, err := k.readLate(ctx)
	if err != nil || len(lr.affected) == 0 {
		return nil, false, err
	}
	return &sessionFound{sc: resessionScope{from: lr.lo, to: lr.hi, only: lr.affected, late: lr.times, txn: k.d.txn()}}, true, nil
}

func (k *sessionAgg) recompute(ctx context.Context, s *sessionFound) (*rewrite, error) {
	if k.merge != nil {
		// Silver as of the last batch the merged quarantine holds: later rows reach gold through
		// the stream or the next merge-late, which recomputes these sessions again.
		upTo := k.st.batch
		if b, ok := k.d.qSnap.TxnVersion(k.st.queryID); ok {
			upTo = max(upTo, b)
		}
		src, err := openSource(ctx, k.opts, SourceSilver, k.st.queryID, upTo)
		if err != nil {
			return nil, err
		}
		if err := evolveGold(ctx, &k.opts.Query, k.g, k.rw, k.qschema); err != nil {
			return nil, err
		}
		k.src = src
	}
	rw, res, err := resessionize(ctx, k.rw, k.src, k.st, s.sc)
	s.res = res
	return rw, err
}

func (k *sessionAgg) committed(_ context.Context, s *sessionFound, ws writeStats) {
	if k.merge == nil {
		gr := k.replay
		gr.InputRows, gr.StartFrom, gr.StartTo, gr.Gold = s.res.inputRows, &s.res.from, &s.res.to, &ws
		*gr = noteUnchanged(*gr)
		return
	}
	k.merge.Gold = &ws
	if s.res.deferred {
		k.merge.Note = "late rows inside sessions the stream still holds: merged again by the next run"
	}
}

// replayOne replays one aggregation's range: merge-late first, then the range's windows (or
// sessions) recomputed from the source.
func replayOne(ctx context.Context, opts *Options, g *spec.Aggregation, st streamState, r Range) (ReplayGoldReport, error) {
	gr := ReplayGoldReport{Name: g.Name}
	if g.OutputMode == spec.OutputComplete {
		gr.Note = "complete mode rewrites the whole table every batch: nothing to replay"
		return gr, nil
	}
	if st.batch < 0 {
		gr.Note = "the stream has not committed a batch: no window was emitted yet"
		return gr, nil
	}
	var err error
	if gr.Merge, err = mergeOne(ctx, opts, g, st); err != nil {
		return gr, err
	}
	j, err := openReplay(ctx, opts, g, st, r, &gr)
	if err != nil || j == nil {
		return gr, err
	}
	return gr, j.reconcile(ctx)
}

// openReplay reads gold and opens the source for replayOne (nil: nothing to replay, gr says
// why). The source is read as of the last batch whose late rows gold has absorbed (or the
// last committed batch): later rows reach gold through the stream or a later merge-late.
func openReplay(ctx context.Context, opts *Options, g *spec.Aggregation, st streamState, r Range, gr *ReplayGoldReport) (*aggJob, error) {
	gt := opts.open(g.Table)
	gsnap, err := gt.Log().Snapshot(ctx)
	if errors.Is(err, txlog.ErrTableNotFound) {
		gr.Note = "the gold table does not exist yet"
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("late: gold %s: %w", g.Name, err)
	}
	upTo := st.batch
	if vm, ok := gsnap.TxnVersion(AppIDPrefix + st.queryID); ok {
		ql := opts.open(g.Quarantine).Log()
		qsnap, err := ql.SnapshotAt(ctx, vm)
		if errors.Is(err, txlog.ErrVersionNotFound) && mergedRowless(gr.Merge, vm) {
			// Log cleanup removed version vm, and merge-late, just run, read every version
			// after it up to its latest without a late row, so it committed nothing and gold's
			// txn stays at vm: the quarantine merge-late read holds the same late rows, all in
			// gold. Refusing here would leave replay no way on but a refresh.
			qsnap, err = ql.SnapshotAt(ctx, gr.Merge.ToVersion)
		}
		if err != nil {
			return nil, fmt.Errorf("late: quarantine %s version %d: %w", g.Name, vm, err)
		}
		if b, ok := qsnap.TxnVersion(st.queryID); ok {
			upTo = max(upTo, b)
		}
	}
	src, err := openSource(ctx, opts, r.Source, st.queryID, upTo)
	if err != nil {
		return nil, err
	}
	if !src.bronze {
		// Silver without a batch the stream committed would replace gold's windows with less.
		if err := st.check(ctx, opts.Query.Tables.Silver, src.t.Log(), src.latest); err != nil {
			return nil, err
		}
	}
	gschema, err := gsnap.Schema()
	if err != nil {
		return nil, fmt.Errorf("late: gold %s: %w", g.Name, err)
	}
	if err := checkGoldWritable(gsnap, gschema, g); err != nil {
		return nil, err
	}
	a, err := resolve(&opts.Query, g, src.schema, gschema)
	if err != nil {
		return nil, err
	}
	rw := &rewriter{t: gt, snap: gsnap, a: a}
	if err := evolveGold(ctx, &opts.Query, g, rw, src.schema); err != nil {
		return nil, err
	}
	return &aggJob{opts: opts, g: g, st: st, rw: rw, replay: gr, src: src, r: r}, nil
}

// mergedRowless says merge-late read the quarantine versions after vm (gold's txn) without
// finding a late row, and so committed nothing.
func mergedRowless(m MergeGoldReport, vm int64) bool {
	return m.FromVersion == vm && m.ToVersion > vm && m.LateRows == 0 && m.Gold == nil
}

// noteUnchanged reports a replay whose rewrite found nothing to change as committing nothing.
func noteUnchanged(gr ReplayGoldReport) ReplayGoldReport {
	if gr.Gold != nil && gr.Gold.Unchanged {
		gr.Gold, gr.Unchanged = nil, true
		gr.Note = "the recomputed windows equal gold's rows of the range: nothing committed"
	}
	return gr
}
