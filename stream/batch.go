package stream

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/table/source"
	"github.com/medallion-lake/medallion/txlog"
)

// batchBuffers are reused from batch to batch so that steady state allocates little.
type batchBuffers struct {
	rows   silver.Rows
	sel    []int32 // valid rows that go to silver, ascending
	fresh  []int32 // the rows of sel whose key dedup state judged (nil: all of sel)
	old    []int32 // the rows of sel below state's reach, judged against silver's keys
	selEvt []int64
	aggs   []aggBuffers // one per aggregation: they run concurrently
}

// aggBuffers are one aggregation's input columns, reused from batch to batch.
type aggBuffers struct {
	in     gold.Input
	colI64 [][]int64
	colF64 [][]float64
	colBin []gold.Binary
	colOK  [][]bool
	state  []byte // the aggregation's encoded state or delta, reused batch after batch
}

// batchStats is what one batch did, for progress and the report.
type batchStats struct {
	inputRows, rejected, duplicates, silverRows int64
	dedup                                       *silver.DedupResult
	dedupMem                                    int64 // the dedup state's footprint after the batch
	aggs                                        []aggStats
	getMs, addMs                                int64
	evStats                                     gold.EventTimeStats
	next                                        int64 // the watermark the batch leaves for the next
	expect                                      []silver.ExpectationCount
}

type aggStats struct {
	res                  StateOperatorProgress
	lateRows, outputRows int64
	state                []byte // the aggregation's full state after the batch, when this batch writes it
	delta                []byte // or what the batch changed (gold.AppendDelta)
}

func (r *Runner) wantsNoData(newWM, evictWM int64) bool {
	if r.ops.dedup != nil && newWM > evictWM {
		return true
	}
	for _, a := range r.ops.plan.aggs {
		if a.agg.ShouldRunNoDataBatch(newWM, evictWM) {
			return true
		}
	}
	return false
}

// ensurePlan resolves the query against bronze's schema and restores the operators' state.
func (r *Runner) ensurePlan(ctx context.Context) error {
	if r.ops.plan != nil {
		return nil
	}
	snap, err := r.t.bronze.Log().Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("stream: bronze table: %w", err)
	}
	schema, err := snap.Schema()
	if err != nil {
		return fmt.Errorf("stream: bronze schema: %w", err)
	}
	p, err := newPlan(r.q, silver.Schema(schema))
	if err != nil {
		return err
	}
	// Before any state is decoded: a changed definition is refused by name, not by a state
	// that does not decode.
	if err := checkDefinitions(ctx, queryDefinedTables(r.q, r.t.silver, r.t.golds)); err != nil {
		return err
	}
	delay := r.q.Watermark.Delay.Milliseconds()
	tracker, err := gold.NewWatermarkTracker(gold.PolicyMin, []int64{delay}, r.q.IdleTimeout.Milliseconds())
	if err != nil {
		return fmt.Errorf("stream: %w", err)
	}
	dcfg := silver.DedupConfig{Mode: silver.DropDuplicates, EventTimeIsKey: true, DelayMs: delay}
	// The dedup state and every aggregation walk back through the same state versions: each
	// version is read and decoded once for all of them.
	r.state.restoring = map[int64]map[string][]byte{}
	defer func() { r.state.restoring = nil }()
	sections, err := r.stateSections(ctx, r.pos.nextBatch)
	if err != nil {
		return err
	}
	var dedup *silver.Dedup
	if len(p.dedup) > 0 {
		if dedup, r.state.dedupDeltas, err = r.restoreDedup(ctx, dcfg, r.pos.nextBatch, sections); err != nil {
			return err
		}
	}
	aggs := make([]*gold.Aggregation, len(p.aggs))
	r.state.aggDeltas = 0
	for i, ap := range p.aggs {
		var deltas int
		if aggs[i], deltas, err = restoreAgg(ctx, ap, r.pos.nextBatch, sections, r.stateSections); err != nil {
			return fmt.Errorf("stream: gold %s state: %w", ap.cfg.Name, err)
		}
		r.state.aggDeltas = max(r.state.aggDeltas, deltas)
	}
	if s, ok := sections["idle"]; ok {
		var err error
		if r.idle.lastDataMs, r.idle.baseWM, err = decodeIdle(s); err != nil {
			return fmt.Errorf("%w: %s: %v", checkpoint.ErrBad, checkpoint.StateKey(r.pos.nextBatch), err)
		}
	}
	if r.pos.resume != nil {
		if err := r.pos.resume(tracker); err != nil {
			return fmt.Errorf("stream: %w", err)
		}
	}
	r.ops.plan, r.ops.tracker, r.ops.dedup, r.ops.aggs = p, tracker, dedup, aggs
	r.ops.lookup = &silver.Lookup{Table: r.t.silver, Schema: p.silver, KeyCols: p.dedup, EventTime: p.evCol, AppID: r.queryID}
	if r.pos.pending == nil && r.pos.resume != nil {
		late, evict := tracker.BatchWatermarks()
		r.pos.needNoData = r.wantsNoData(evict, late)
	}
	return nil
}

// runBatch runs batch n over files with the watermarks of the tracker and entry's timestamp,
// then writes state n+1, commits/n and the progress.
func (r *Runner) runBatch(ctx context.Context, n int64, entry *checkpoint.Offsets, files []source.IndexedFile, walMs int64) error {
	t0 := time.Now()
	late, evict := r.ops.tracker.BatchWatermarks()
	if entry.BatchWatermarkMs != evict {
		return fmt.Errorf("%w: %s has batchWatermarkMs %d, the commits log gives %d", checkpoint.ErrBad, checkpoint.OffsetsKey(n), entry.BatchWatermarkMs, evict)
	}
	batches, err := r.readAhead(ctx, entry, files)
	if err != nil {
		return err
	}
	tRead := time.Now()
	b := &batchRun{n: n, entry: entry, late: late, evict: evict, txn: &table.AppTxn{AppID: r.queryID, Version: n},
		marks: newTableMarks(n, r.t.paths)}
	st, err := r.process(ctx, b, batches)
	if err != nil {
		return err
	}
	st.getMs = tRead.Sub(t0).Milliseconds()
	st.addMs = time.Since(tRead).Milliseconds()
	next := st.next
	tCommit := time.Now()
	tables := b.marks.over(r.pos.tables)
	if err := r.ckpt.WriteCommitRecord(ctx, n, checkpoint.Commit{NextBatchWatermarkMs: next, Tables: tables}); err != nil {
		return err
	}
	commitMs := time.Since(tCommit).Milliseconds()
	r.pos.tables = tables

	r.warnWatermarkAhead(n, evict, next)
	start := r.pos.lastEnd
	r.pos.lastEnd, r.pos.lastEntry, r.pos.nextBatch = entry.End, entry, n+1
	r.pos.needNoData = r.wantsNoData(next, evict)
	r.account(st, next)

	p := r.progress(b, start, st, timings{walMs: walMs, commitMs: commitMs, total: time.Since(t0)})
	if err := r.publish(ctx, n, p); err != nil {
		return err
	}
	retain := int64(r.q.State.MinBatchesToRetain)
	if retain <= 0 {
		retain = 100
	}
	// A dedup state version may need the deltas back to its last full snapshot.
	retain = max(retain, int64(r.q.State.MinDeltasForSnapshot)+1)
	if old := n - retain; old >= 0 {
		if err := r.ckpt.Cleanup(ctx, old); err != nil {
			r.opts.Logger.Warn("stream: checkpoint cleanup failed", "batch", old, "err", err)
		}
	}
	return nil
}

// warnWatermarkAhead logs a warning when batch n moved the watermark (from evict to next) past
// wall clock plus the watermark delay: an event stamped in the future (inside
// stream.max_future_skew) did it, and from the next batch on every row stamped with the current
// time is late and goes to quarantine. Logged once, by the batch that moved it there; the
// medallion_watermark_ahead_seconds gauge keeps showing it.
func (r *Runner) warnWatermarkAhead(n, evict, next int64) {
	delay := r.q.Watermark.Delay
	if delay <= 0 || next <= evict {
		return
	}
	now := r.opts.Clock()
	wm := time.UnixMilli(next).UTC()
	if ahead := wm.Sub(now); ahead > delay {
		r.opts.Logger.Warn("stream: the watermark is ahead of wall clock; rows stamped now will be quarantined as late",
			"query", r.q.Name, "batch", n, "watermark", wm.Format(time.RFC3339Nano), "now", now.UTC().Format(time.RFC3339Nano),
			"aheadSeconds", ahead.Seconds(), "watermarkDelay", delay.String(),
			"hint", "an event time in the future moved it (lower stream.max_future_skew, fix the producer's clock); merge-late folds the quarantined rows back")
	}
}

func (r *Runner) account(st *batchStats, next int64) {
	rep := &r.report
	rep.Batches++
	rep.LastBatch = r.pos.nextBatch - 1
	rep.WatermarkMs = next
	rep.InputRows += st.inputRows
	rep.SilverRows += st.silverRows
	rep.Rejected += st.rejected
	rep.Duplicates += st.duplicates
	if len(rep.Gold) == 0 {
		for _, ap := range r.ops.plan.aggs {
			rep.Gold = append(rep.Gold, GoldReport{Name: ap.cfg.Name})
		}
	}
	for i, e := range st.expect {
		if i >= len(rep.Expectations) {
			rep.Expectations = append(rep.Expectations, ExpectationProgress{Name: e.Name, OnViolation: string(e.OnViolation)})
		}
		x := &rep.Expectations[i]
		x.Passed += e.Passed
		x.Failed += e.Failed
		x.Dropped += e.Dropped
	}
	for i, a := range st.aggs {
		g := &rep.Gold[i]
		g.RowsOut += a.outputRows
		g.LateRows += a.lateRows
		g.LateGroups += a.res.NumRowsDroppedByWatermark
		g.SessionCorrections += a.res.CustomMetrics[CustomMetricSessionCorrections]
	}
}

// prefetch is the read of the next batch's files, running while the current batch is
// processed (its Parquet decoding fills the core that silver's encoding leaves idle).
type prefetch struct {
	files   []source.IndexedFile
	done    chan struct{}
	batches []*pq.Batch
	err     error
}

// readAhead returns the batch's rows, from the prefetch when it read these very files, and
// starts reading the next batch's files when the trigger drains the source.
func (r *Runner) readAhead(ctx context.Context, entry *checkpoint.Offsets, files []source.IndexedFile) ([]*pq.Batch, error) {
	var batches []*pq.Batch
	if p := r.waitAhead(); p != nil && p.err == nil && sameFiles(p.files, files) {
		batches = p.batches
	} else {
		var err error
		if batches, err = r.read(ctx, files, r.ops.plan.silver); err != nil {
			return nil, err
		}
	}
	if r.ahead.until >= 0 && len(files) > 0 && entry.End != nil {
		next, _, err := r.src.NextBatch(ctx, entry.End, r.ahead.until, r.ahead.limit)
		if err == nil && len(next) > 0 {
			p := &prefetch{files: next, done: make(chan struct{})}
			r.ahead.p = p
			planned := r.ops.plan.silver
			go func() {
				defer close(p.done)
				p.batches, p.err = r.read(ctx, p.files, planned)
			}()
		}
	}
	return batches, nil
}

// waitAhead ends the prefetch in flight, if any, and returns it.
func (r *Runner) waitAhead() *prefetch {
	p := r.ahead.p
	if p != nil {
		<-p.done
		r.ahead.p = nil
	}
	return p
}

func sameFiles(a, b []source.IndexedFile) bool {
	return slices.EqualFunc(a, b, func(x, y source.IndexedFile) bool {
		return x.Version == y.Version && x.Index == y.Index && x.Add.Path == y.Add.Path
	})
}

// read reads bronze files; planned is the bronze (= silver) schema the query was planned with.
func (r *Runner) read(ctx context.Context, files []source.IndexedFile, planned *txlog.StructType) ([]*pq.Batch, error) {
	out, snap, missing, cause, err := readTableFiles(ctx, r.t.bronze, "bronze", files, planned)
	if len(missing) > 0 {
		return nil, missingFilesError(snap, missing, cause)
	}
	return out, err
}

// ErrInputSchemaChanged reports an input table whose columns changed (schema evolution) while
// a query ran: the query was planned with the old columns, so it stops before the batch and
// the next run plans with the new ones.
var ErrInputSchemaChanged = errors.New("stream: the input table's schema changed while the query ran")

// sameColumns refuses a snapshot whose columns are not the ones the query planned with
// (planned nil: no check).
func sameColumns(what string, snap *txlog.Snapshot, planned *txlog.StructType) error {
	if planned == nil {
		return nil
	}
	schema, err := snap.Schema()
	if err != nil {
		return fmt.Errorf("stream: %s schema: %w", what, err)
	}
	d := table.DiffSchema(planned, schema)
	if len(d.Added) == 0 && d.Compatible() && len(schema.Fields) == len(planned.Fields) {
		same := true
		for i := range schema.Fields {
			same = same && schema.Fields[i].Name == planned.Fields[i].Name
		}
		if same {
			return nil
		}
	}
	return fmt.Errorf("%w: %s table version %d has other columns than the run started with; run the query again to take them", ErrInputSchemaChanged, what, snap.Version())
}

// readTableFiles reads the data files of a streamed table (what names it in errors), decoding
// them in parallel (Parquet decoding is most of a read) and keeping file order; empty batches
// are left out. Files gone from the store come back in missing, with one of their errors as
// cause, for the caller to explain.
func readTableFiles(ctx context.Context, t *table.Table, what string, files []source.IndexedFile, planned *txlog.StructType) (out []*pq.Batch, snap *txlog.Snapshot, missing []source.IndexedFile, cause, err error) {
	if len(files) == 0 {
		return nil, nil, nil, nil, nil
	}
	snap, err = t.Latest(ctx)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("stream: %s table: %w", what, err)
	}
	if err := sameColumns(what, snap, planned); err != nil {
		return nil, nil, nil, nil, err
	}
	fs, err := t.FileScan(snap, nil, nil)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("stream: %s scan: %w", what, err)
	}
	per := make([][]*pq.Batch, len(files))
	errs := make([]error, len(files))
	workers := min(len(files), runtime.GOMAXPROCS(0))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(files) || ctx.Err() != nil {
					return
				}
				per[i], errs[i] = fs.ReadFile(ctx, files[i].Add)
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if errors.Is(err, objstore.ErrNotFound) {
			missing, cause = append(missing, files[i]), err
		}
	}
	if len(missing) > 0 {
		return nil, snap, missing, cause, nil
	}
	for i, bs := range per {
		if errs[i] != nil {
			return nil, nil, nil, nil, fmt.Errorf("stream: read %s: %w", what, errs[i])
		}
		for _, b := range bs {
			if b.Len() > 0 {
				out = append(out, b)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, nil, err
	}
	return out, snap, nil, nil, nil
}

// batchRun is one batch as it runs: its id and offsets, its late-row and eviction watermarks
// (ms), the txn of its table writes and where they record what they committed.
type batchRun struct {
	n           int64
	entry       *checkpoint.Offsets
	late, evict int64
	txn         *table.AppTxn
	marks       *tableMarks
}

// process validates, deduplicates and writes one batch to every sink.
func (r *Runner) process(ctx context.Context, b *batchRun, batches []*pq.Batch) (*batchStats, error) {
	st := &batchStats{}
	rejects, err := r.validate(b, batches, st)
	if err != nil {
		return nil, err
	}
	r.ops.tracker.Observe(0, r.buf.rows.EventTime, nil)
	// The batch's event times are all the watermark depends on: the next one is known now,
	// and with it the state file can be written beside the table writes.
	st.evStats = r.ops.tracker.Stats(0)
	st.next = r.ops.tracker.EndBatch(b.entry.BatchTimestampMs)
	if st.inputRows > 0 {
		r.idle.lastDataMs, r.idle.baseWM = b.entry.BatchTimestampMs, st.next
	}
	if err := r.deduplicate(ctx, b, st); err != nil {
		return nil, err
	}
	if err := r.ensureTables(ctx); err != nil {
		return nil, err
	}
	if err := r.writeSinks(ctx, b, st, rejects); err != nil {
		return nil, err
	}
	return st, nil
}

// validate collects the batch's valid rows in r.buf.rows and returns the others as rejects.
func (r *Runner) validate(b *batchRun, batches []*pq.Batch, st *batchStats) (*silver.Rejects, error) {
	p := r.ops.plan
	rows := 0
	for _, bb := range batches {
		rows += bb.Len()
	}
	// Sized once for the batch: growing them row by row copies them over and over.
	vr := &r.buf.rows
	vr.Reset(batches, rows)
	rejects, err := silver.NewRejects(b.entry.BatchTimestampMs)
	if err != nil {
		return nil, err
	}
	if p.expect != nil {
		p.expect.TakeCounts() // a failed batch may have left some
	}
	// current_timestamp() in an expectation is the batch timestamp from the offsets log: a
	// rerun of the batch decides the same.
	now := time.UnixMilli(b.entry.BatchTimestampMs)
	for bi, bb := range batches {
		ev := bb.Columns[p.evCol]
		check := p.rules.Bind(bb)
		if p.expect != nil {
			if err := p.expect.Apply(&check, bb, now); err != nil {
				return nil, fmt.Errorf("stream: batch %d: %w", b.n, err)
			}
		}
		st.inputRows += int64(bb.Len())
		for i := range bb.Len() {
			if reason := check.Reject(i); reason != "" {
				rejects.Add(bb, i, reason, check.Detail(i, reason))
				continue
			}
			vr.EventTime = append(vr.EventTime, ev.Int64[i])
			vr.Batch = append(vr.Batch, int32(bi))
			vr.Row = append(vr.Row, int32(i))
		}
	}
	st.rejected = int64(rejects.Batch.Len())
	if p.expect != nil {
		st.expect = p.expect.TakeCounts()
	}
	return rejects, nil
}

// deduplicate selects the valid rows that go to silver (r.buf.sel): first arrival wins; rows
// at or below the late watermark (whose key state may be evicted) are checked against silver.
func (r *Runner) deduplicate(ctx context.Context, b *batchRun, st *batchStats) error {
	buf, vr := &r.buf, &r.buf.rows
	buf.sel, buf.fresh, buf.old = buf.sel[:0], nil, buf.old[:0]
	if r.ops.dedup == nil {
		for i := range vr.EventTime {
			buf.sel = append(buf.sel, int32(i))
		}
	} else {
		vr.EncodeKeys(r.ops.plan.dedup)
		res, err := r.ops.dedup.ProcessBatch(vr.Keys, vr.EventTime, nil, r.dedupWatermark(b.late), r.dedupWatermark(b.evict))
		if err != nil {
			return fmt.Errorf("stream: dedup: %w", err)
		}
		st.dedup, st.dedupMem = res, r.ops.dedup.MemoryUsedBytes()
		buf.sel = append(buf.sel, res.Emit...)
		buf.fresh = res.Emit
		dups := int64(len(res.Duplicates))
		if len(res.Late) > 0 {
			seen, err := r.ops.lookup.Seen(ctx, b.n, vr, res.Late)
			if err != nil {
				return err
			}
			for _, i := range res.Late {
				k := string(vr.Keys[i])
				if seen[k] {
					dups++
					continue
				}
				seen[k] = true
				buf.sel = append(buf.sel, i)
				buf.old = append(buf.old, i)
			}
			slices.Sort(buf.sel)
		}
		st.duplicates = dups
	}
	st.silverRows = int64(len(buf.sel))
	buf.selEvt = buf.selEvt[:0]
	for _, i := range buf.sel {
		buf.selEvt = append(buf.selEvt, vr.EventTime[i])
	}
	return nil
}

// writeSinks writes silver with the rejects and runs each aggregation (with its quarantine and
// gold) on goroutines of their own: the tables are independent, each write has the batch's
// txn, and the aggregations share only the read-only selection. The state file of batch n+1 is
// written as soon as every aggregation has encoded its state, while the tables are still being
// written: a crash before commits/n leaves it to be written again by the re-run.
func (r *Runner) writeSinks(ctx context.Context, b *batchRun, st *batchStats, rejects *silver.Rejects) error {
	buf, aggs := &r.buf, r.ops.plan.aggs
	for len(buf.aggs) < len(aggs) {
		buf.aggs = append(buf.aggs, aggBuffers{})
	}
	st.aggs = make([]aggStats, len(aggs))
	errs := make([]error, 2+len(aggs))
	states := make([]aggStats, len(aggs)) // each aggregation's state or delta, nothing else
	published := make([]bool, len(aggs))
	var statesReady, wg sync.WaitGroup
	statesReady.Add(len(aggs))
	judged := silver.Judged{Fresh: buf.sel, Old: buf.old}
	if len(buf.old) > 0 {
		judged.Fresh = buf.fresh
	}
	wg.Go(func() {
		var w silver.Written
		w, errs[0] = r.t.silverW.Write(ctx, &buf.rows, judged, rejects.Batch, b.txn)
		b.marks.wrote(r.t.silver, w.Silver, w.SilverSkipped)
		b.marks.wrote(r.t.rejects, w.Rejects, w.RejectsSkipped)
	})
	// The dedup section is known now: it is encoded beside the writes, not after them.
	var dedupSec dedupSection
	var dedupDone sync.WaitGroup
	dedupDone.Go(func() { dedupSec = r.encodeDedupSection(st, b.evict) })
	for ai := range aggs {
		wg.Go(func() {
			st.aggs[ai], errs[1+ai] = r.runAgg(ctx, b, ai, func(state, delta []byte) {
				states[ai] = aggStats{state: state, delta: delta}
				published[ai] = true
				statesReady.Done()
			})
			if !published[ai] {
				statesReady.Done() // it failed before its state, and says why
			}
		})
	}
	wg.Go(func() {
		statesReady.Wait()
		dedupDone.Wait()
		if !slices.Contains(published, false) {
			errs[len(errs)-1] = r.writeState(ctx, b.n, dedupSec, states)
		}
	})
	wg.Wait()
	return errors.Join(errs...)
}

// ensureTables creates the tables the stream writes that do not exist yet, once per runner.
func (r *Runner) ensureTables(ctx context.Context) error {
	if r.t.ready {
		return nil
	}
	defs := queryDefinedTables(r.q, r.t.silver, r.t.golds)
	ts := []outTable{{r.t.silver, r.ops.plan.silver, r.q.Tables.Silver, true, defs[0].def.props()}, {r.t.rejects, bronze.RejectsSchema(), r.q.Tables.Rejects, false, nil}}
	for i, ap := range r.ops.plan.aggs {
		ts = append(ts, outTable{r.t.quars[i], ap.qschema, ap.cfg.Quarantine, true, nil}, outTable{r.t.golds[i], ap.schema, ap.cfg.Table, false, defs[1+i].def.props()})
	}
	if err := r.checkPinnedTypes(ctx); err != nil {
		return err
	}
	if err := createMissing(ctx, ts); err != nil {
		return err
	}
	// Refuse, before a micro-batch writes any of them, a table whose writer features this
	// stream's writes would break (docs/table-features.md).
	names := []string{"silver", "rejects"}
	kinds := []txlog.WriteKind{txlog.WriteAppend, txlog.WriteAppend}
	for _, ap := range r.ops.plan.aggs {
		gk := txlog.WriteAppend
		if ap.complete || ap.update {
			gk = txlog.WriteChange
		}
		names = append(names, "quarantine "+ap.cfg.Quarantine, "gold "+ap.cfg.Name+" (table "+ap.cfg.Table+")")
		kinds = append(kinds, txlog.WriteAppend, gk)
	}
	if err := checkWritable(ctx, ts, names, kinds); err != nil {
		return err
	}
	for i, ap := range r.ops.plan.aggs {
		if err := addExactColumns(ctx, r.t.golds[i], ap); err != nil {
			return err
		}
	}
	r.t.ready = true
	return nil
}

// addExactColumns adds to gold the internal exact-sum columns of ap's float sums and avgs
// that it lacks: a gold table created before sums were exact, or written by Spark's export.
// It is the Delta way, a metaData action adding nullable columns; the rows already there keep
// null, which stands for the exact value of their double (gold.ReadExact). Idempotent: a
// rerun after a crash finds the columns and commits nothing.
func addExactColumns(ctx context.Context, t *table.Table, ap *aggPlan) error {
	want := gold.ExactFields(ap.agg.Aggs)
	if len(want) == 0 {
		return nil
	}
	snap, err := t.Log().Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("stream: gold %s: %w", ap.cfg.Name, err)
	}
	have, err := snap.Schema()
	if err != nil {
		return fmt.Errorf("stream: gold %s: %w", ap.cfg.Name, err)
	}
	evolved := &txlog.StructType{Fields: slices.Clone(have.Fields)}
	for _, f := range want {
		if have.FieldIndex(f.Name) < 0 {
			evolved.Fields = append(evolved.Fields, f)
		}
	}
	if len(evolved.Fields) == len(have.Fields) {
		return nil
	}
	// An empty batch of the evolved schema: Append with MergeSchema commits the metaData
	// action and no file.
	b, err := pq.NewBatch(evolved)
	if err != nil {
		return fmt.Errorf("stream: gold %s: %w", ap.cfg.Name, err)
	}
	if _, err := t.Append(ctx, []*pq.Batch{b}, table.AppendOptions{MergeSchema: true}); err != nil {
		return fmt.Errorf("stream: gold %s: add the exact-sum columns: %w", ap.cfg.Name, err)
	}
	return nil
}

// checkWritable runs table.CheckWritable on each table for the kind of write the stream makes.
func checkWritable(ctx context.Context, ts []outTable, names []string, kinds []txlog.WriteKind) error {
	for i, o := range ts {
		snap, err := o.t.Latest(ctx)
		if err != nil {
			return fmt.Errorf("stream: %s: %w", names[i], err)
		}
		schema, err := snap.Schema()
		if err != nil {
			return fmt.Errorf("stream: %s: %w", names[i], err)
		}
		if _, err := table.CheckWritable(snap, schema, kinds[i]); err != nil {
			return fmt.Errorf("stream: %s: %w", names[i], err)
		}
	}
	return nil
}

// outTable is a table a query writes, with the schema the query writes it with.
type outTable struct {
	t      *table.Table
	schema *txlog.StructType
	path   string // for errors
	// evolve: the table follows its input's schema (silver follows bronze, a quarantine
	// silver), so columns added upstream are added to it before a row carries them.
	evolve bool
	// props are the table properties it is created with (its PropDefinition).
	props map[string]string
}

// checkPinnedTypes refuses a column that the query's state keeps (the event time, a dedup key,
// a gold aggregation's group_by or aggregate column) whose type in bronze differs from its type
// in silver: bronze was widened (schema_evolution.type_widening, or another engine's ALTER
// COLUMN), and the state holds the column's values encoded at silver's type, so carrying on
// would mix two encodings. Every other widened column is followed by silver (createMissing).
func (r *Runner) checkPinnedTypes(ctx context.Context) error {
	snap, err := r.t.silver.Latest(ctx)
	if errors.Is(err, txlog.ErrTableNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stream: open table %s: %w", r.q.Tables.Silver, err)
	}
	have, err := snap.Schema()
	if err != nil {
		return fmt.Errorf("stream: schema of %s: %w", r.q.Tables.Silver, err)
	}
	p := r.ops.plan
	uses := map[int]string{p.evCol: "the event time (stream.event_time)"}
	for _, i := range p.dedup {
		uses[i] = "a dedup key (stream.dedup)"
	}
	for _, ap := range p.aggs {
		for _, i := range ap.keyCols {
			uses[i] = "in group_by of gold " + ap.cfg.Name
		}
		for _, i := range ap.aggCols {
			uses[i] = "an aggregate column of gold " + ap.cfg.Name
		}
	}
	for _, i := range slices.Sorted(maps.Keys(uses)) {
		want := p.silver.Fields[i]
		if f := have.Field(want.Name); f != nil && !table.TypeEqual(f.Type, want.Type) {
			return fmt.Errorf("stream: %w: column %s is %s in bronze and %s in silver %s, and it is %s: the query's state holds "+
				"its values at the old type, so it cannot follow the widening in place. Ways out: a new column instead of the "+
				"widened one, or a full refresh of query %s (see docs/schema-evolution.md)",
				table.ErrIncompatibleSchema, want.Name, table.FieldString(want), table.FieldString(*f), r.q.Tables.Silver, uses[i], r.q.Name)
		}
	}
	return nil
}

// createMissing creates each table that does not exist yet with its schema, and evolves
// those that follow their input to its columns (table.EvolveWith: a metaData commit that adds
// the new, nullable columns and widens the columns its input widened, before any row of them
// is written; nothing when they are there).
func createMissing(ctx context.Context, ts []outTable) error {
	for _, o := range ts {
		// Latest: the snapshot stays cached for the batch's writes, which refresh it.
		_, err := o.t.Latest(ctx)
		switch {
		case errors.Is(err, txlog.ErrTableNotFound):
			if _, err := o.t.Create(ctx, o.schema, nil, o.props); err != nil && !errors.Is(err, table.ErrTableExists) {
				return fmt.Errorf("stream: create table %s: %w", o.path, err)
			}
		case err != nil:
			return fmt.Errorf("stream: open table %s: %w", o.path, err)
		}
		if o.evolve {
			// A widening reaches silver only through bronze, which widens only what the
			// config lets it (or another engine did): follow it.
			if _, err := o.t.EvolveWith(ctx, o.schema, nil, table.EvolveOptions{TypeWidening: true}); err != nil {
				return fmt.Errorf("stream: table %s cannot take the columns of its input: %w; "+
					"see docs/schema-evolution.md for the ways out", o.path, err)
			}
		}
	}
	return nil
}

// write appends (or, for complete mode, overwrites the whole table) with the batch's txn.
func write(ctx context.Context, t *table.Table, batches []*pq.Batch, txn *table.AppTxn, overwrite bool) (table.Result, error) {
	if overwrite {
		return t.Overwrite(ctx, sqlexpr.And(), batches, table.AppendOptions{Txn: txn})
	}
	return t.Append(ctx, batches, table.AppendOptions{Txn: txn})
}
