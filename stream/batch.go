package stream

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/gold"
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
}

// aggBuffers are one aggregation's input columns, reused from batch to batch.
type aggBuffers struct {
	in     gold.Input
	colI64 [][]int64
	colF64 [][]float64
	colBin []gold.Binary
	colOK  [][]bool
}

// batchStats is what one batch did, for progress and the report.
type batchStats struct {
	inputRows, rejected, duplicates, silverRows int64
	dedup                                       *silver.DedupResult
	aggs                                        []aggStats
	getMs, addMs                                int64
	evStats                                     gold.EventTimeStats
	next                                        int64 // the watermark the batch leaves for the next
}

type aggStats struct {
	res                  StateOperatorProgress
	lateRows, outputRows int64
	state                []byte // the aggregation's full state after the batch, when this batch writes it
	delta                []byte // or what the batch changed (gold.AppendDelta)
}

func (r *Runner) wantsNoData(newWM, evictWM int64) bool {
	if r.dedup != nil && newWM > evictWM {
		return true
	}
	for _, a := range r.plan.aggs {
		if a.agg.ShouldRunNoDataBatch(newWM, evictWM) {
			return true
		}
	}
	return false
}

// ensurePlan resolves the query against bronze's schema and restores the operators' state.
func (r *Runner) ensurePlan(ctx context.Context) error {
	if r.plan != nil {
		return nil
	}
	snap, err := r.bronze.Log().Snapshot(ctx)
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
	delay := r.q.Watermark.Delay.Milliseconds()
	tracker, err := gold.NewWatermarkTracker(gold.PolicyMin, []int64{delay}, r.q.IdleTimeout.Milliseconds())
	if err != nil {
		return fmt.Errorf("stream: %w", err)
	}
	dcfg := silver.DedupConfig{Mode: silver.DropDuplicates, EventTimeIsKey: true, DelayMs: delay}
	// The dedup state and every aggregation walk back through the same state versions: each
	// version is read and decoded once for all of them.
	r.restoring = map[int64]map[string][]byte{}
	defer func() { r.restoring = nil }()
	sections, err := r.stateSections(ctx, r.nextBatch)
	if err != nil {
		return err
	}
	var dedup *silver.Dedup
	if len(p.dedup) > 0 {
		if dedup, r.dedupDeltas, err = r.restoreDedup(ctx, dcfg, r.nextBatch, sections); err != nil {
			return err
		}
	}
	aggs := make([]*gold.Aggregation, len(p.aggs))
	r.aggDeltas = 0
	for i, ap := range p.aggs {
		var deltas int
		if aggs[i], deltas, err = r.restoreAgg(ctx, ap, r.nextBatch, sections); err != nil {
			return fmt.Errorf("stream: gold %s state: %w", ap.cfg.Name, err)
		}
		r.aggDeltas = max(r.aggDeltas, deltas)
	}
	if s, ok := sections["idle"]; ok {
		var err error
		if r.lastDataMs, r.idleBaseWM, err = decodeIdle(s); err != nil {
			return fmt.Errorf("%w: %s: %v", checkpoint.ErrBad, checkpoint.StateKey(r.nextBatch), err)
		}
	}
	if r.resume != nil {
		if err := r.resume(tracker); err != nil {
			return fmt.Errorf("stream: %w", err)
		}
	}
	r.plan, r.tracker, r.dedup, r.aggs = p, tracker, dedup, aggs
	r.lookup = &silver.Lookup{Table: r.silverT, Schema: p.silver, KeyCols: p.dedup, EventTime: p.evCol, AppID: r.queryID}
	if r.pending == nil && r.resume != nil {
		late, evict := tracker.BatchWatermarks()
		r.needNoData = r.wantsNoData(evict, late)
	}
	return nil
}

// runBatch runs batch n over files with the watermarks of the tracker and entry's timestamp,
// then writes state n+1, commits/n and the progress.
func (r *Runner) runBatch(ctx context.Context, n int64, entry *checkpoint.Offsets, files []source.IndexedFile, walMs int64) error {
	t0 := time.Now()
	late, evict := r.tracker.BatchWatermarks()
	if entry.BatchWatermarkMs != evict {
		return fmt.Errorf("%w: %s has batchWatermarkMs %d, the commits log gives %d", checkpoint.ErrBad, checkpoint.OffsetsKey(n), entry.BatchWatermarkMs, evict)
	}
	batches, err := r.readAhead(ctx, entry, files)
	if err != nil {
		return err
	}
	tRead := time.Now()
	st, err := r.process(ctx, n, entry, batches, late, evict)
	if err != nil {
		return err
	}
	st.getMs = tRead.Sub(t0).Milliseconds()
	st.addMs = time.Since(tRead).Milliseconds()
	next := st.next
	tCommit := time.Now()
	if err := r.ckpt.WriteCommit(ctx, n, next); err != nil {
		return err
	}
	commitMs := time.Since(tCommit).Milliseconds()

	start := r.lastEnd
	r.lastEnd, r.lastEntry, r.nextBatch = entry.End, entry, n+1
	r.needNoData = r.wantsNoData(next, evict)
	r.account(st, next)

	p := r.progress(n, entry, start, st, st.evStats, evict, walMs, commitMs, time.Since(t0))
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

func (r *Runner) account(st *batchStats, next int64) {
	rep := &r.report
	rep.Batches++
	rep.LastBatch = r.nextBatch - 1
	rep.WatermarkMs = next
	rep.InputRows += st.inputRows
	rep.SilverRows += st.silverRows
	rep.Rejected += st.rejected
	rep.Duplicates += st.duplicates
	if rep.Gold == nil {
		for _, ap := range r.plan.aggs {
			rep.Gold = append(rep.Gold, GoldReport{Name: ap.cfg.Name})
		}
	}
	for i, a := range st.aggs {
		g := &rep.Gold[i]
		g.RowsOut += a.outputRows
		g.LateRows += a.lateRows
		g.LateGroups += a.res.NumRowsDroppedByWatermark
	}
}

// prefetch is the read of the next batch's files, running while the current batch is
// processed (its Parquet decoding fills the core that silver's encoding leaves idle).
type prefetch struct {
	files   []source.IndexedFile
	done    chan struct{}
	batches []*table.Batch
	err     error
}

// readAhead returns the batch's rows, from the prefetch when it read these very files, and
// starts reading the next batch's files when the trigger drains the source.
func (r *Runner) readAhead(ctx context.Context, entry *checkpoint.Offsets, files []source.IndexedFile) ([]*table.Batch, error) {
	var batches []*table.Batch
	if p := r.waitAhead(); p != nil && p.err == nil && sameFiles(p.files, files) {
		batches = p.batches
	} else {
		var err error
		if batches, err = r.read(ctx, files); err != nil {
			return nil, err
		}
	}
	if r.aheadUntil >= 0 && len(files) > 0 && entry.End != nil {
		next, _, err := r.src.NextBatch(ctx, entry.End, r.aheadUntil, r.aheadLimit)
		if err == nil && len(next) > 0 {
			p := &prefetch{files: next, done: make(chan struct{})}
			r.ahead = p
			go func() {
				defer close(p.done)
				p.batches, p.err = r.read(ctx, p.files)
			}()
		}
	}
	return batches, nil
}

// waitAhead ends the prefetch in flight, if any, and returns it.
func (r *Runner) waitAhead() *prefetch {
	p := r.ahead
	if p != nil {
		<-p.done
		r.ahead = nil
	}
	return p
}

func sameFiles(a, b []source.IndexedFile) bool {
	return slices.EqualFunc(a, b, func(x, y source.IndexedFile) bool {
		return x.Version == y.Version && x.Index == y.Index && x.Add.Path == y.Add.Path
	})
}

func (r *Runner) read(ctx context.Context, files []source.IndexedFile) ([]*table.Batch, error) {
	if len(files) == 0 {
		return nil, nil
	}
	snap, err := r.bronze.Latest(ctx)
	if err != nil {
		return nil, fmt.Errorf("stream: bronze table: %w", err)
	}
	fs, err := r.bronze.FileScan(snap, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("stream: bronze scan: %w", err)
	}
	// Files decode in parallel (Parquet decoding is most of a read); batches keep file order.
	per := make([][]*table.Batch, len(files))
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
	var out []*table.Batch
	for i, bs := range per {
		if errs[i] != nil {
			return nil, fmt.Errorf("stream: read bronze: %w", errs[i])
		}
		for _, b := range bs {
			if b.Len() > 0 {
				out = append(out, b)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// process validates, deduplicates and writes one batch to every sink.
func (r *Runner) process(ctx context.Context, n int64, entry *checkpoint.Offsets, batches []*table.Batch, late, evict int64) (*batchStats, error) {
	p, buf := r.plan, &r.buf
	st := &batchStats{}
	rows := 0
	for _, b := range batches {
		rows += b.Len()
	}
	// Sized once for the batch: growing them row by row copies them over and over.
	vr := &buf.rows
	vr.Reset(batches, rows)
	rejects, err := silver.NewRejects(entry.BatchTimestampMs)
	if err != nil {
		return nil, err
	}
	for bi, b := range batches {
		ev := b.Columns[p.evCol]
		check := p.rules.Bind(b)
		st.inputRows += int64(b.Len())
		for i := range b.Len() {
			if reason := check.Reject(i); reason != "" {
				rejects.Add(b, i, reason, check.Detail(i, reason))
				continue
			}
			vr.EventTime = append(vr.EventTime, ev.Int64[i])
			vr.Batch = append(vr.Batch, int32(bi))
			vr.Row = append(vr.Row, int32(i))
		}
	}
	st.rejected = int64(rejects.Batch.Len())
	r.tracker.Observe(0, vr.EventTime, nil)
	// The batch's event times are all the watermark depends on: the next one is known now,
	// and with it the state file can be written beside the table writes.
	st.evStats = r.tracker.Stats(0)
	st.next = r.tracker.EndBatch(entry.BatchTimestampMs)
	if st.inputRows > 0 {
		r.lastDataMs, r.idleBaseWM = entry.BatchTimestampMs, st.next
	}

	// Dedup: first arrival wins; rows at or below the late watermark (whose key state may be
	// evicted) are checked against silver.
	buf.sel, buf.fresh, buf.old = buf.sel[:0], nil, buf.old[:0]
	if r.dedup == nil {
		for i := range vr.EventTime {
			buf.sel = append(buf.sel, int32(i))
		}
	} else {
		vr.EncodeKeys(p.dedup)
		res, err := r.dedup.ProcessBatch(vr.Keys, vr.EventTime, nil, r.dedupWatermark(late), r.dedupWatermark(evict))
		if err != nil {
			return nil, fmt.Errorf("stream: dedup: %w", err)
		}
		st.dedup = res
		buf.sel = append(buf.sel, res.Emit...)
		buf.fresh = res.Emit
		dups := int64(len(res.Duplicates))
		if len(res.Late) > 0 {
			seen, err := r.lookup.Seen(ctx, n, vr, res.Late)
			if err != nil {
				return nil, err
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

	txn := &table.AppTxn{AppID: r.queryID, Version: n}
	if err := r.ensureTables(ctx); err != nil {
		return nil, err
	}
	// Silver with the rejects and each aggregation (with its quarantine and gold) run on
	// goroutines of their own: the tables are independent, each write has the batch's txn,
	// and the aggregations share only the read-only selection. The state file of batch n+1 is
	// written as soon as every aggregation has encoded its state, while the tables are still
	// being written: a crash before commits/n leaves it to be written again by the re-run.
	for len(buf.aggs) < len(p.aggs) {
		buf.aggs = append(buf.aggs, aggBuffers{})
	}
	st.aggs = make([]aggStats, len(p.aggs))
	errs := make([]error, 2+len(p.aggs))
	states := make([]aggStats, len(p.aggs)) // each aggregation's state or delta, nothing else
	published := make([]bool, len(p.aggs))
	var statesReady, wg sync.WaitGroup
	statesReady.Add(len(p.aggs))
	judged := silver.Judged{Fresh: buf.sel, Old: buf.old}
	if len(buf.old) > 0 {
		judged.Fresh = buf.fresh
	}
	wg.Go(func() { errs[0] = r.silverW.Write(ctx, vr, judged, rejects.Batch, txn) })
	// The dedup section is known now: it is encoded beside the writes, not after them.
	var dedupSec dedupSection
	var dedupDone sync.WaitGroup
	dedupDone.Go(func() { dedupSec = r.encodeDedupSection(st, evict) })
	for ai, ap := range p.aggs {
		wg.Go(func() {
			st.aggs[ai], errs[1+ai] = r.runAgg(ctx, n, ai, ap, late, evict, txn, func(state, delta []byte) {
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
			errs[len(errs)-1] = r.writeState(ctx, n, dedupSec, states)
		}
	})
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return st, nil
}

// dedupSection is the dedup state's section of a state file: its name (secDedup or
// secDedupDelta) and bytes; no name without dedup.
type dedupSection struct {
	name string
	data []byte
}

// encodeDedupSection encodes the dedup state after the batch: a full snapshot every
// min_deltas_for_snapshot versions, the batch's additions and its eviction watermark in
// between (the state can be large, a batch's change small).
func (r *Runner) encodeDedupSection(st *batchStats, evict int64) dedupSection {
	if r.dedup == nil {
		return dedupSection{}
	}
	if every := r.q.State.MinDeltasForSnapshot; r.dedupDeltas+1 >= every || st.dedup == nil {
		r.dedupDeltas = 0
		return dedupSection{secDedup, r.dedup.AppendSnapshot(nil)}
	}
	r.dedupDeltas++
	return dedupSection{secDedupDelta, silver.EncodeDedupDelta(&r.buf.rows, st.dedup.Emit, r.dedupWatermark(evict))}
}

// writeState writes state version n+1: the idleness bookkeeping, the dedup section and each
// aggregation's state or delta.
func (r *Runner) writeState(ctx context.Context, n int64, dedup dedupSection, aggs []aggStats) error {
	sections := map[string][]byte{"idle": encodeIdle(r.lastDataMs, r.idleBaseWM)}
	order := []string{"idle"}
	if dedup.name != "" {
		sections[dedup.name] = dedup.data
		order = append(order, dedup.name)
	}
	// The aggregations likewise: a full snapshot every min_deltas_for_snapshot versions (and
	// always for session windows), the groups the batch touched in between.
	for i, ap := range r.plan.aggs {
		name := secAgg + ap.cfg.Name
		if aggs[i].delta != nil {
			name = secAggDelta + ap.cfg.Name
			sections[name] = aggs[i].delta
		} else {
			sections[name] = aggs[i].state
		}
		order = append(order, name)
	}
	if r.aggFullSnapshot() {
		r.aggDeltas = 0
	} else {
		r.aggDeltas++
	}
	return r.ckpt.WriteState(ctx, n+1, sections, order)
}

// ensureTables creates the tables the stream writes that do not exist yet, once per runner.
func (r *Runner) ensureTables(ctx context.Context) error {
	if r.tablesReady {
		return nil
	}
	ts := []*table.Table{r.silverT, r.rejects}
	schemas := []*txlog.StructType{r.plan.silver, bronze.RejectsSchema()}
	for i, ap := range r.plan.aggs {
		ts = append(ts, r.quars[i], r.golds[i])
		schemas = append(schemas, ap.qschema, ap.schema)
	}
	for i, t := range ts {
		if _, err := t.Log().Snapshot(ctx); errors.Is(err, txlog.ErrTableNotFound) {
			if _, err := t.Create(ctx, schemas[i], nil, nil); err != nil && !errors.Is(err, table.ErrTableExists) {
				return fmt.Errorf("stream: create table: %w", err)
			}
		} else if err != nil {
			return fmt.Errorf("stream: open table: %w", err)
		}
	}
	r.tablesReady = true
	return nil
}

// write appends (or, for complete mode, overwrites the whole table) with the batch's txn.
func (r *Runner) write(ctx context.Context, t *table.Table, batches []*table.Batch, txn *table.AppTxn, overwrite bool) (table.Result, error) {
	if overwrite {
		return t.Overwrite(ctx, table.And(), batches, table.AppendOptions{Txn: txn})
	}
	return t.Append(ctx, batches, table.AppendOptions{Txn: txn})
}

// State sections of the dedup operator and of each aggregation (the prefix, then its name):
// a full snapshot, or one batch's delta.
const (
	secDedup      = "dedup"
	secDedupDelta = "dedup-delta"
	secAgg        = "agg/"
	secAggDelta   = "agg-delta/"
)

// stateSections reads the sections of state version v; version 0, the empty state, has none
// (nil). During a restore it keeps what it read in r.restoring.
func (r *Runner) stateSections(ctx context.Context, v int64) (map[string][]byte, error) {
	if v == 0 {
		return nil, nil
	}
	if sections, ok := r.restoring[v]; ok {
		return sections, nil
	}
	sections, err := r.ckpt.ReadState(ctx, v)
	if err == nil && r.restoring != nil {
		r.restoring[v] = sections
	}
	return sections, err
}

// restoreAgg rebuilds an aggregation's state of version v: its nearest full snapshot at or
// before v, then every later delta in order. It returns the number of deltas replayed.
func (r *Runner) restoreAgg(ctx context.Context, ap *aggPlan, v int64, sections map[string][]byte) (*gold.Aggregation, int, error) {
	var deltas [][]byte
	for {
		var a *gold.Aggregation
		var err error
		if sections == nil { // version 0: the empty state
			a, err = gold.NewAggregation(ap.agg)
		} else if s, ok := sections[secAgg+ap.cfg.Name]; ok {
			a, err = gold.RestoreAggregation(ap.agg, s)
		}
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", checkpoint.StateKey(v), err)
		}
		if a != nil {
			for i := len(deltas) - 1; i >= 0; i-- {
				if err := a.ApplyDelta(deltas[i]); err != nil {
					return nil, 0, fmt.Errorf("%s: %w", checkpoint.StateKey(v+int64(len(deltas)-i)), err)
				}
			}
			return a, len(deltas), nil
		}
		s, ok := sections[secAggDelta+ap.cfg.Name]
		if !ok || v <= 0 {
			return nil, 0, fmt.Errorf("%w: %s has no state for gold %s (an aggregation added to a running query needs a new checkpoint)", checkpoint.ErrBad, checkpoint.StateKey(v), ap.cfg.Name)
		}
		deltas = append(deltas, s)
		v--
		if sections, err = r.stateSections(ctx, v); err != nil {
			return nil, 0, err
		}
	}
}

// dedupWatermark is a watermark as the dedup state sees it: dedup_retention earlier, so keys
// stay in memory that long past the watermark. Both of a batch's watermarks shift alike, so a key
// leaves state only after every row that could repeat it is judged against silver instead.
func (r *Runner) dedupWatermark(wmMs int64) int64 {
	return max(0, wmMs-r.q.State.DedupRetention.Milliseconds())
}

// restoreDedup rebuilds the dedup state of version v: the nearest full snapshot at or before
// v, then every later delta in order. It returns the number of deltas replayed.
func (r *Runner) restoreDedup(ctx context.Context, cfg silver.DedupConfig, v int64, sections map[string][]byte) (*silver.Dedup, int, error) {
	var deltas [][]byte
	for {
		if sections == nil { // version 0, or a query that ran before dedup was on: empty state
			d, err := silver.NewDedup(cfg)
			if err != nil {
				return nil, 0, fmt.Errorf("stream: dedup: %w", err)
			}
			return d, 0, r.replay(d, deltas, v)
		}
		if s, ok := sections[secDedup]; ok {
			d, err := silver.RestoreDedup(cfg, s)
			if err != nil {
				return nil, 0, fmt.Errorf("stream: dedup state %s: %w", checkpoint.StateKey(v), err)
			}
			return d, len(deltas), r.replay(d, deltas, v)
		}
		s, ok := sections[secDedupDelta]
		if !ok || v <= 0 {
			return nil, 0, fmt.Errorf("%w: %s has no dedup state", checkpoint.ErrBad, checkpoint.StateKey(v))
		}
		deltas = append(deltas, s)
		v--
		var err error
		if sections, err = r.stateSections(ctx, v); err != nil {
			return nil, 0, err
		}
	}
}

func (r *Runner) replay(d *silver.Dedup, deltas [][]byte, base int64) error {
	for i := len(deltas) - 1; i >= 0; i-- {
		if err := d.ApplyDelta(deltas[i]); err != nil {
			return fmt.Errorf("%w: %s: %v", checkpoint.ErrBad, checkpoint.StateKey(base+int64(len(deltas)-i)), err)
		}
	}
	return nil
}
