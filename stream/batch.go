package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	// keyScratch is the buffer of the shared key tables' key encoding (keyshare.go).
	keyScratch []byte
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
	filteredDropped                             int64 // rows a transform filter with on_filter drop dropped
	dedup                                       *silver.DedupResult
	dedupMem                                    int64 // the dedup state's footprint after the batch
	aggs                                        []aggStats
	evStats                                     gold.EventTimeStats
	next                                        int64 // the watermark the batch leaves for the next
	expect                                      []silver.ExpectationCount
}

type aggStats struct {
	res                  StateOperatorProgress
	lateRows, outputRows int64
	state                []byte // the aggregation's full state after the batch, when this batch writes it
	delta                []byte // or what the batch changed (gold.AppendDelta)
	// or, instead of delta, its size and what writes it into the state file (gold.WriteDelta):
	// a backlog's first delta is as big as the state, and is not held whole beside it.
	deltaSize  int64
	writeDelta func(io.Writer) error
}

func (r *sourceQuery) wantsNoData(newWM, evictWM int64) bool {
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

// newPlan resolves the query against bronze's schema.
func (r *sourceQuery) newPlan(ctx context.Context) (*plan, error) {
	snap, err := r.t.bronze.Log().Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("stream: bronze table: %w", err)
	}
	schema, err := snap.Schema()
	if err != nil {
		return nil, fmt.Errorf("stream: bronze schema: %w", err)
	}
	return newPlan(r.q, silver.Schema(schema))
}

// plan resolves the query against bronze's schema and restores the operators' state.
func (r *sourceQuery) plan(ctx context.Context) (bool, error) {
	if r.ops.plan != nil {
		return true, nil
	}
	p, err := r.newPlan(ctx)
	if err != nil {
		return false, err
	}
	// Before any state is decoded: a changed definition is refused by name, not by a state
	// that does not decode.
	if err := checkDefinitions(ctx, queryDefinedTables(r.q, r.t.silver, r.t.golds)); err != nil {
		return false, err
	}
	delay := r.q.Watermark.Delay.Milliseconds()
	tracker, err := gold.NewWatermarkTracker(gold.PolicyMin, []int64{delay}, r.q.IdleTimeout.Milliseconds())
	if err != nil {
		return false, fmt.Errorf("stream: %w", err)
	}
	dcfg := silver.DedupConfig{Mode: silver.DropDuplicates, EventTimeIsKey: true, DelayMs: delay}
	v := r.e.pos.nextBatch
	sections, err := r.e.stateSections(ctx, v)
	if err != nil {
		return false, err
	}
	var dedup *silver.Dedup
	if len(p.dedup) > 0 {
		if dedup, r.state.dedupDeltas, err = r.restoreDedup(ctx, dcfg, v, sections); err != nil {
			return false, err
		}
	}
	refreshed := make([]*gold.Aggregation, len(p.aggs))
	anyRefreshed := false
	for i, ap := range p.aggs {
		var ok bool
		if refreshed[i], ok, err = refreshedState(ctx, r.e, r.t.golds[i], ap, v); err != nil {
			return false, err
		}
		anyRefreshed = anyRefreshed || ok
	}
	aggs, deltas, err := restoreAggs(ctx, p.aggs, v, sections, r.e.stateSections, refreshed)
	if err != nil {
		return false, fmt.Errorf("stream: %w", err)
	}
	r.state.aggDeltas = deltas
	if anyRefreshed {
		// The next batch writes full snapshots: no later restore walks back past the refresh
		// into state written under the old definition.
		r.state.aggDeltas = max(deltas, r.q.State.MinDeltasForSnapshot)
	}
	if s, ok := sections["idle"]; ok {
		var err error
		if r.idle.lastDataMs, r.idle.baseWM, err = decodeIdle(s); err != nil {
			return false, fmt.Errorf("%w: %s: %v", checkpoint.ErrBad, checkpoint.StateKey(v), err)
		}
	}
	if r.resume != nil {
		if err := r.resume(tracker); err != nil {
			return false, fmt.Errorf("stream: %w", err)
		}
	}
	shares, shareOf, err := shareKeys(p.aggs, aggs)
	if err != nil {
		return false, err
	}
	r.ops.plan, r.ops.tracker, r.ops.dedup, r.ops.aggs = p, tracker, dedup, aggs
	r.ops.shares, r.ops.shareOf = shares, shareOf
	r.ops.lookup = &silver.Lookup{Table: r.t.silver, Schema: p.silver, KeyCols: p.dedup, EventTime: p.evCol, AppID: r.e.queryID,
		Path: r.q.Tables.Silver}
	return true, nil
}

// runBatch validates, deduplicates and writes batch b to every sink, with the state of
// version b.n+1.
func (r *sourceQuery) runBatch(ctx context.Context, b *batchRun, files [][]source.IndexedFile) (batchDone, error) {
	batches, err := r.readAhead(ctx, b.entry, files[0])
	if err != nil {
		return batchDone{}, err
	}
	readAt := time.Now()
	defer r.ahead.p.open() // however the batch ends, a gated read-ahead goes on
	st, err := r.process(ctx, b, batches)
	if err != nil {
		return batchDone{}, err
	}
	r.cur = st
	return batchDone{next: st.next, rows: []int64{st.inputRows}, evStats: st.evStats, readAt: readAt}, nil
}

// committed warns when the batch moved the watermark ahead of wall clock and adds the batch
// to the report.
func (r *sourceQuery) committed(b *batchRun, done batchDone) {
	r.warnWatermarkAhead(b.n, b.evict, done.next)
	r.account(r.cur)
}

// warnWatermarkAhead logs a warning when batch n moved the watermark (from evict to next) past
// wall clock plus the watermark delay: an event stamped in the future (inside
// stream.max_future_skew) did it, and from the next batch on every row stamped with the current
// time is late and goes to quarantine. Logged once, by the batch that moved it there; the
// medallion_watermark_ahead_seconds gauge keeps showing it.
func (r *sourceQuery) warnWatermarkAhead(n, evict, next int64) {
	delay := r.q.Watermark.Delay
	if delay <= 0 || next <= evict {
		return
	}
	now := r.e.cfg.clock()
	wm := time.UnixMilli(next).UTC()
	if ahead := wm.Sub(now); ahead > delay {
		r.e.cfg.logger.Warn("stream: the watermark is ahead of wall clock; rows stamped now will be quarantined as late",
			"query", r.q.Name, "batch", n, "watermark", wm.Format(time.RFC3339Nano), "now", now.UTC().Format(time.RFC3339Nano),
			"aheadSeconds", ahead.Seconds(), "watermarkDelay", delay.String(),
			"hint", "an event time in the future moved it (lower stream.max_future_skew, fix the producer's clock); merge-late folds the quarantined rows back")
	}
}

func (r *sourceQuery) account(st *batchStats) {
	rep := &r.report
	rep.InputRows += st.inputRows
	rep.SilverRows += st.silverRows
	rep.Rejected += st.rejected
	rep.Duplicates += st.duplicates
	rep.FilteredDropped += st.filteredDropped
	for i, e := range st.expect {
		if i >= len(rep.Expectations) {
			rep.Expectations = append(rep.Expectations, ExpectationProgress{Name: e.Name, OnViolation: string(e.OnViolation)})
		}
		x := &rep.Expectations[i]
		x.Passed += e.Passed
		x.Failed += e.Failed
		x.Dropped += e.Dropped
	}
	rep.Gold = accountGold(rep.Gold, r.ops.plan.aggs, st.aggs)
}

// prefetch is the read of the next batch's files, running while the current batch is
// processed (its Parquet decoding fills the core that silver's encoding leaves idle).
type prefetch struct {
	files   []source.IndexedFile
	done    chan struct{}
	batches []*pq.Batch
	err     error
	// gate, when set, holds the read back until open: see readAhead.
	gate     chan struct{}
	gateOnce sync.Once
}

// open lets a gated read start; it may be called more than once, and on a nil prefetch.
func (p *prefetch) open() {
	if p != nil && p.gate != nil {
		p.gateOnce.Do(func() { close(p.gate) })
	}
}

// growsState reports whether this batch's aggregations start from an empty state: the first
// batch over a backlog, whose watermark closes nothing, so every group it opens stays, and its
// state is largest at its end.
func (r *sourceQuery) growsState() bool {
	for _, a := range r.ops.aggs {
		if a.NumGroups() > 0 {
			return false
		}
	}
	return len(r.ops.aggs) > 0
}

// readAhead returns the batch's rows, from the prefetch when it read these very files, and
// starts reading the next batch's files when the trigger drains the source.
func (r *sourceQuery) readAhead(ctx context.Context, entry *checkpoint.Offsets, files []source.IndexedFile) ([]*pq.Batch, error) {
	var batches []*pq.Batch
	if p := r.waitAhead(); p != nil && p.err == nil && sameFiles(p.files, files) {
		batches = p.batches
	} else {
		var err error
		if batches, err = r.read(ctx, files, r.ops.plan.bronze); err != nil {
			return nil, err
		}
	}
	if until := r.e.draining; until != nil && len(files) > 0 && entry.End != nil {
		next, _, err := r.e.in[0].src.NextBatch(ctx, entry.End, until[0], r.e.cfg.limit)
		if err == nil && len(next) > 0 {
			p := &prefetch{files: next, done: make(chan struct{})}
			// A batch that grows the state from nothing holds, at its end, every group it
			// opened: the next batch's rows, read and decoded beside them, sat on the run's
			// memory peak (87 MB of 620 at 1M events, 100k keys). Its read waits until the
			// aggregations are done (writeSinks opens the gate) and overlaps the table writes.
			if r.growsState() {
				p.gate = make(chan struct{})
			}
			r.ahead.p = p
			planned := r.ops.plan.bronze
			go func() {
				defer close(p.done)
				if p.gate != nil {
					select {
					case <-p.gate:
					case <-ctx.Done():
						p.err = ctx.Err()
						return
					}
				}
				p.batches, p.err = r.read(ctx, p.files, planned)
			}()
		}
	}
	return batches, nil
}

// waitAhead ends the prefetch in flight, if any, and returns it.
func (r *sourceQuery) waitAhead() *prefetch {
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
func (r *sourceQuery) read(ctx context.Context, files []source.IndexedFile, planned *txlog.StructType) ([]*pq.Batch, error) {
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

// process validates, deduplicates and writes one batch to every sink.
func (r *sourceQuery) process(ctx context.Context, b *batchRun, batches []*pq.Batch) (*batchStats, error) {
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
func (r *sourceQuery) validate(b *batchRun, batches []*pq.Batch, st *batchStats) (*silver.Rejects, error) {
	p := r.ops.plan
	// current_timestamp() in an expectation or a transform is the batch timestamp from the
	// offsets log: a rerun of the batch decides the same.
	now := time.UnixMilli(b.entry.BatchTimestampMs)
	rows := 0
	for bi, bb := range batches {
		rows += bb.Len()
		if p.transform != nil {
			tb, err := p.transform.Apply(bb, now)
			if err != nil {
				return nil, fmt.Errorf("stream: batch %d: %w", b.n, err)
			}
			batches[bi] = tb
		}
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
	for bi, bb := range batches {
		ev := bb.Columns[p.evCol]
		check := p.rules.Bind(bb)
		if p.expect != nil {
			if err := p.expect.Apply(&check, bb, now); err != nil {
				return nil, fmt.Errorf("stream: batch %d: %w", b.n, err)
			}
		}
		if p.transform != nil {
			p.transform.ApplyFilter(&check, bb, now)
		}
		st.inputRows += int64(bb.Len())
		for i := range bb.Len() {
			if reason := check.Reject(i); reason != "" {
				rejects.Add(bb, i, reason, check.Detail(i, reason))
				continue
			}
			if check.Dropped(i) {
				st.filteredDropped++
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
func (r *sourceQuery) deduplicate(ctx context.Context, b *batchRun, st *batchStats) error {
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
func (r *sourceQuery) writeSinks(ctx context.Context, b *batchRun, st *batchStats, rejects *silver.Rejects) error {
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
	// The shared key tables take the batch's keys before the aggregations start, and free
	// what none of them refers to once all are done: while they run, they only read them.
	for _, s := range r.ops.shares {
		s.intern(aggs, &buf.rows, buf.sel, &buf.keyScratch)
	}
	defer func() {
		for _, s := range r.ops.shares {
			s.ks.Settle()
		}
	}()
	for ai := range aggs {
		wg.Go(func() {
			st.aggs[ai], errs[1+ai] = r.runAgg(ctx, b, ai, func(as aggStats) {
				states[ai] = aggStats{state: as.state, delta: as.delta, deltaSize: as.deltaSize, writeDelta: as.writeDelta}
				published[ai] = true
				statesReady.Done()
			})
			if !published[ai] {
				statesReady.Done() // it failed before its state, and says why
			}
			// states[ai] hands them to the state file: the batch's stats, kept until the
			// next batch ends, do not keep a full snapshot's bytes.
			st.aggs[ai].state, st.aggs[ai].delta, st.aggs[ai].writeDelta = nil, nil, nil
		})
	}
	ahead := r.ahead.p
	wg.Go(func() {
		statesReady.Wait()
		ahead.open() // the aggregations are done: the state will not grow in this batch
		dedupDone.Wait()
		if !slices.Contains(published, false) {
			errs[len(errs)-1] = r.writeState(ctx, b.n, dedupSec, states)
		}
	})
	wg.Wait()
	return errors.Join(errs...)
}

// ensureTables creates the tables the stream writes that do not exist yet, once per runner.
func (r *sourceQuery) ensureTables(ctx context.Context) error {
	if r.t.ready {
		return nil
	}
	defs := queryDefinedTables(r.q, r.t.silver, r.t.golds)
	var o outputs
	o.add(outTable{t: r.t.silver, schema: r.ops.plan.silver, path: r.q.Tables.Silver, evolve: true, props: r.q.Tables.TableProps(defs[0].def.props()), name: "silver", kind: txlog.WriteAppend})
	o.add(outTable{t: r.t.rejects, schema: bronze.RejectsSchema(), path: r.q.Tables.Rejects, props: r.q.Tables.TableProps(nil), name: "rejects", kind: txlog.WriteAppend})
	o.addAggs(r.ops.plan.aggs, r.t.golds, r.t.quars, defs[1:], true)
	if err := r.checkPinnedTypes(ctx); err != nil {
		return err
	}
	if err := o.ensure(ctx, func(err error) error { return err }); err != nil {
		return err
	}
	r.t.ready = true
	return nil
}

// checkPinnedTypes refuses a column that the query's state keeps (the event time, a dedup key,
// a gold aggregation's group_by or aggregate column) whose type in bronze differs from its type
// in silver: bronze was widened (schema_evolution.type_widening, or another engine's ALTER
// COLUMN), and the state holds the column's values encoded at silver's type, so carrying on
// would mix two encodings. Every other widened column is followed by silver (createMissing).
func (r *sourceQuery) checkPinnedTypes(ctx context.Context) error {
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
