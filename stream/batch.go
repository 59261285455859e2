package stream

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/table/source"
	"github.com/medallion-lake/medallion/txlog"
)

// Validation reject reasons (stage "validate" in the rejects table).
const (
	ReasonMissingEventTime = "missing_event_time"
	ReasonMissingRequired  = "missing_required"
	ReasonFuture           = bronze.ReasonFuture
)

// StageValidate is the rejects table's stage of rows the stream rejects.
const StageValidate = "validate"

// batchBuffers are reused from batch to batch so that steady state allocates little.
type batchBuffers struct {
	evt     []int64 // event time (µs) of each valid row
	vb, vr  []int32 // bronze batch and row of each valid row
	keyData []byte
	keyOffs []int32
	keys    [][]byte
	sel     []int32 // valid rows that go to silver, ascending
	fresh   []int32 // the rows of sel whose key dedup state judged (nil: all of sel)
	old     []int32 // the rows of sel below state's reach, judged against silver's keys
	selEvt  []int64
	aggs    []aggBuffers // one per aggregation: they run concurrently
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
	res                  gold.StateOperatorProgress
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
	p, err := newPlan(r.cfg, SilverSchema(schema))
	if err != nil {
		return err
	}
	delay := r.cfg.Stream.Watermark.Milliseconds()
	tracker, err := gold.NewWatermarkTracker(gold.PolicyMin, []int64{delay}, r.cfg.Stream.IdleTimeout.Milliseconds())
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
	retain := int64(r.cfg.Stream.State.MinBatchesToRetain)
	if retain <= 0 {
		retain = 100
	}
	// A dedup state version may need the deltas back to its last full snapshot.
	retain = max(retain, int64(r.cfg.Stream.State.MinDeltasForSnapshot)+1)
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
	buf.evt = slices.Grow(buf.evt[:0], rows)
	buf.vb, buf.vr = slices.Grow(buf.vb[:0], rows), slices.Grow(buf.vr[:0], rows)
	rejects, err := table.NewBatch(bronze.RejectsSchema())
	if err != nil {
		return nil, err
	}
	skewUs := r.cfg.Stream.MaxFutureSkew.Microseconds()
	var raw []byte
	for bi, b := range batches {
		ev := b.Columns[p.evCol]
		ingest := b.Column(bronze.ColIngestTime)
		st.inputRows += int64(b.Len())
		for i := range b.Len() {
			reason, detail := "", ""
			switch {
			case ev.IsNull(i):
				reason, detail = ReasonMissingEventTime, fmt.Sprintf("event time column %q is missing, null or not a valid timestamp (a value that did not parse is in _rescued_data)", p.silver.Fields[p.evCol].Name)
			default:
				for _, c := range p.required {
					if b.Columns[c].IsNull(i) {
						reason, detail = ReasonMissingRequired, fmt.Sprintf("required column %q is missing or null (a value that did not parse is in _rescued_data)", p.silver.Fields[c].Name)
						break
					}
				}
				if reason == "" && skewUs > 0 && ingest != nil && !ingest.IsNull(i) && ev.Int64[i] > ingest.Int64[i]+skewUs {
					reason, detail = ReasonFuture, fmt.Sprintf("event time %s is more than max_future_skew %s after its ingest time %s",
						table.FormatTimestamp(ev.Int64[i], false), r.cfg.Stream.MaxFutureSkew.Duration, table.FormatTimestamp(ingest.Int64[i], false))
				}
			}
			if reason != "" {
				raw = table.AppendJSONRow(raw[:0], b, i)
				addReject(rejects, b, i, reason, detail, raw, entry.BatchTimestampMs)
				continue
			}
			buf.evt = append(buf.evt, ev.Int64[i])
			buf.vb = append(buf.vb, int32(bi))
			buf.vr = append(buf.vr, int32(i))
		}
	}
	st.rejected = int64(rejects.Len())
	r.tracker.Observe(0, buf.evt, nil)
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
		for i := range buf.evt {
			buf.sel = append(buf.sel, int32(i))
		}
	} else {
		r.encodeKeys(batches, p.dedup)
		res, err := r.dedup.ProcessBatch(buf.keys, buf.evt, nil, r.dedupWatermark(late), r.dedupWatermark(evict))
		if err != nil {
			return nil, fmt.Errorf("stream: dedup: %w", err)
		}
		st.dedup = res
		buf.sel = append(buf.sel, res.Emit...)
		buf.fresh = res.Emit
		dups := int64(len(res.Duplicates))
		if len(res.Late) > 0 {
			seen, err := r.silverKeys(ctx, n, batches, res.Late)
			if err != nil {
				return nil, err
			}
			for _, i := range res.Late {
				k := string(buf.keys[i])
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
		buf.selEvt = append(buf.selEvt, buf.evt[i])
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
	wg.Go(func() { errs[0] = r.writeSilver(ctx, batches, rejects, txn) })
	// The dedup section is known now: it is encoded beside the writes, not after them.
	var dedupSec dedupSection
	var dedupDone sync.WaitGroup
	dedupDone.Go(func() { dedupSec = r.encodeDedupSection(st, evict) })
	for ai, ap := range p.aggs {
		wg.Go(func() {
			st.aggs[ai], errs[1+ai] = r.runAgg(ctx, n, ai, ap, batches, late, evict, txn, func(state, delta []byte) {
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
	if every := r.cfg.Stream.State.MinDeltasForSnapshot; r.dedupDeltas+1 >= every || st.dedup == nil {
		r.dedupDeltas = 0
		return dedupSection{secDedup, r.dedup.AppendSnapshot(nil)}
	}
	r.dedupDeltas++
	return dedupSection{secDedupDelta, r.encodeDedupDelta(st.dedup.Emit, r.dedupWatermark(evict))}
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

// silverSplitRows is the batch size from which silver is encoded as one file per core: the
// Parquet encoding of silver is the largest single cost of a batch, and the aggregations that
// run beside it leave most of a core to spare.
const silverSplitRows = 1 << 16

// writeSilver appends the selected rows of each bronze batch, in arrival order, and the
// validation rejects. Rows judged against silver's keys (far below the watermark) go to files
// of their own, so that every other silver file spans a narrow event-time range and the
// look-ups of later batches read few files.
func (r *Runner) writeSilver(ctx context.Context, batches []*table.Batch, rejects *table.Batch, txn *table.AppTxn) error {
	buf := &r.buf
	fresh := buf.sel
	if len(buf.old) > 0 {
		fresh = buf.fresh
	}
	var groups [][]int32
	if n := len(fresh); n > 0 {
		parts := 1
		if n >= silverSplitRows {
			parts = runtime.GOMAXPROCS(0)
		}
		for p := range parts {
			groups = append(groups, fresh[p*n/parts:(p+1)*n/parts])
		}
	}
	if len(buf.old) > 0 {
		groups = append(groups, buf.old)
	}
	if len(groups) > 0 {
		if err := r.writeParts(ctx, r.silverT, len(groups), txn, func(p int) []rowSelection {
			return r.selectRows(batches, groups[p])
		}); err != nil {
			return fmt.Errorf("stream: silver: %w", err)
		}
	}
	if rejects.Len() > 0 {
		if _, err := r.write(ctx, r.rejects, []*table.Batch{rejects}, txn, false); err != nil {
			return fmt.Errorf("stream: rejects: %w", err)
		}
	}
	return nil
}

// rowSelection is the rows of one bronze batch that go to silver (nil rows: every row).
type rowSelection struct {
	b    *table.Batch
	rows []int
}

// selectRows returns the valid rows sel (ascending) of the bronze batches, in order, as
// selections of those batches: the rows are written from where they are, never copied.
func (r *Runner) selectRows(batches []*table.Batch, sel []int32) []rowSelection {
	buf := &r.buf
	var out []rowSelection
	for j := 0; j < len(sel); {
		bi := buf.vb[sel[j]]
		start := j
		for j < len(sel) && buf.vb[sel[j]] == bi {
			j++
		}
		s := rowSelection{b: batches[bi]}
		if j-start < s.b.Len() {
			s.rows = make([]int, 0, j-start)
			for _, v := range sel[start:j] {
				s.rows = append(s.rows, int(buf.vr[v]))
			}
		}
		out = append(out, s)
	}
	return out
}

// writeParts appends, in one commit with txn, the rows of parts parts, each selected by
// part(p) and encoded into its own files on its own goroutine.
func (r *Runner) writeParts(ctx context.Context, t *table.Table, parts int, txn *table.AppTxn, part func(p int) []rowSelection) error {
	// One look at the log for the txn check and every writer; CommitFiles looks again.
	snap, err := t.Latest(ctx)
	if err != nil {
		return err
	}
	if v, ok := snap.TxnVersion(txn.AppID); ok && v >= txn.Version {
		return nil
	}
	adds := make([][]*txlog.Add, parts)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() {
			w, err := t.WriterAt(snap)
			if err != nil {
				errs[p] = err
				return
			}
			for _, s := range part(p) {
				if errs[p] = w.WriteRows(ctx, s.b, s.rows); errs[p] != nil {
					return
				}
			}
			adds[p], errs[p] = w.Close(ctx)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	_, err = t.CommitFiles(ctx, slices.Concat(adds...), table.AppendOptions{Txn: txn})
	return err
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

func addReject(rj *table.Batch, b *table.Batch, i int, reason, detail string, raw []byte, atMs int64) {
	c := rj.Columns
	c[0].AppendString(StageValidate)
	c[1].AppendString(reason)
	c[2].AppendString(detail)
	c[3].AppendBytes(raw)
	c[4].AppendInt64(int64(len(raw)))
	if sf := b.Column(bronze.ColSourceFile); sf != nil && !sf.IsNull(i) {
		c[5].AppendBytes(sf.BytesAt(i))
	} else {
		c[5].AppendString("")
	}
	if so := b.Column(bronze.ColSourceOffset); so != nil && !so.IsNull(i) {
		c[6].AppendInt64(so.Int64[i])
	} else {
		c[6].AppendInt64(-1)
	}
	c[7].AppendInt64(atMs * 1000)
}

// keyBytesEstimate guesses the encoded size of rows keys of parts parts (a tag, a length and a
// UUID-sized string each), so that the key buffer is allocated once for most batches.
func keyBytesEstimate(rows, parts int) int { return rows * parts * 40 }

// encodeKeys fills buf.keys with the encoded key of every valid row over the columns cols.
func (r *Runner) encodeKeys(batches []*table.Batch, cols []int) {
	buf := &r.buf
	buf.keyData = slices.Grow(buf.keyData[:0], keyBytesEstimate(len(buf.evt), len(cols)))
	buf.keyOffs = append(slices.Grow(buf.keyOffs[:0], len(buf.evt)+1), 0)
	for j := range buf.evt {
		b := batches[buf.vb[j]]
		for _, c := range cols {
			buf.keyData = table.AppendKeyPart(buf.keyData, b.Columns[c], int(buf.vr[j]))
		}
		buf.keyOffs = append(buf.keyOffs, int32(len(buf.keyData)))
	}
	buf.keys = slices.Grow(buf.keys[:0], len(buf.evt))
	for j := range buf.evt {
		buf.keys = append(buf.keys, buf.keyData[buf.keyOffs[j]:buf.keyOffs[j+1]:buf.keyOffs[j+1]])
	}
}

// write appends (or, for complete mode, overwrites the whole table) with the batch's txn.
func (r *Runner) write(ctx context.Context, t *table.Table, batches []*table.Batch, txn *table.AppTxn, overwrite bool) (table.Result, error) {
	if overwrite {
		return t.Overwrite(ctx, table.And(), batches, table.AppendOptions{Txn: txn})
	}
	return t.Append(ctx, batches, table.AppendOptions{Txn: txn})
}

// silverKeys returns which of the keys of the late rows idx silver already holds, reading
// only files whose event-time range can hold them and leaving out what this very batch wrote
// before a crash (so that a re-run decides as the first run did).
func (r *Runner) silverKeys(ctx context.Context, n int64, batches []*table.Batch, idx []int32) (map[string]bool, error) {
	buf := &r.buf
	seen := map[string]bool{}
	snap, err := r.silverT.Latest(ctx)
	if errors.Is(err, txlog.ErrTableNotFound) {
		return seen, nil
	}
	if err != nil {
		return nil, fmt.Errorf("stream: silver: %w", err)
	}
	// The wanted keys, as encoded and as a batch of the key columns for the bloom filters
	// silver's files carry on them.
	keySchema := &txlog.StructType{}
	for _, c := range r.plan.dedup {
		keySchema.Fields = append(keySchema.Fields, r.plan.silver.Fields[c])
	}
	wanted, err := table.NewBatch(keySchema)
	if err != nil {
		return nil, err
	}
	view := &table.Batch{Schema: keySchema, Columns: make([]*table.Column, len(r.plan.dedup))}
	want := map[string]bool{}
	var wantKeys [][]byte // in the order of wanted's rows
	for _, i := range idx {
		if want[string(buf.keys[i])] {
			continue
		}
		want[string(buf.keys[i])] = true
		wantKeys = append(wantKeys, buf.keys[i])
		for k, c := range r.plan.dedup {
			view.Columns[k] = batches[buf.vb[i]].Columns[c]
		}
		wanted.AppendRow(view, int(buf.vr[i]))
	}
	skip, err := r.ownFiles(ctx, snap, n)
	if err != nil {
		return nil, err
	}
	evName := r.plan.silver.Fields[r.plan.evCol].Name
	var cols []string
	for _, c := range r.plan.dedup {
		cols = append(cols, r.plan.silver.Fields[c].Name)
	}
	// The event times prune files by their stats; the rows are matched on the key alone, so
	// no row filter runs.
	pruner, err := r.silverT.FileScan(snap, nil, timeClusters(evName, buf.evt, idx))
	if err != nil {
		return nil, fmt.Errorf("stream: silver scan: %w", err)
	}
	fs, err := r.silverT.FileScan(snap, cols, nil)
	if err != nil {
		return nil, fmt.Errorf("stream: silver scan: %w", err)
	}
	var files []*txlog.Add
	for _, a := range pruner.Files(snap.Files()) {
		if !skip[a.Path] {
			files = append(files, a)
		}
	}
	// Files are read on every core, each worker collecting the keys it found.
	workers := min(len(files), runtime.GOMAXPROCS(0))
	found := make([]map[string]bool, workers)
	errs := make([]error, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		found[w] = map[string]bool{}
		wg.Go(func() {
			var key []byte
			var rb table.ReadBuffer // the worker is done with each batch before the next
			for {
				i := int(next.Add(1)) - 1
				if i >= len(files) || ctx.Err() != nil {
					return
				}
				may, err := fs.MayContain(ctx, files[i], wanted)
				if err != nil {
					errs[w] = err
					return
				}
				if !slices.Contains(may, true) {
					continue // the file's bloom filters rule out every wanted key
				}
				// Rows are matched against the keys the file may hold only: a handful of true
				// resends among thousands of wanted keys, when the file has bloom filters.
				set := newKeySet(countTrue(may))
				for j, m := range may {
					if m {
						set.add(wantKeys[j], firstHash(wanted.Columns[0], j, &key))
					}
				}
				for b, err := range fs.ReadWith(ctx, files[i:i+1], &rb) {
					if err != nil {
						errs[w] = err
						return
					}
					first := b.Columns[0]
					for row := range b.Len() {
						if !set.mayHave(firstHash(first, row, &key)) {
							continue
						}
						key = key[:0]
						for c := range r.plan.dedup {
							key = table.AppendKeyPart(key, b.Columns[c], row)
						}
						if set.keys[string(key)] {
							found[w][string(key)] = true
						}
					}
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("stream: silver dedup look-up: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, f := range found {
		maps.Copy(seen, f)
	}
	return seen, nil
}

// keySet is a set of encoded keys with a bitset of the hashes of their first columns' values
// (firstHash): a few KiB that stay in cache and turn away almost every absent key before it
// is even encoded, let alone looked up in the map. A silver look-up matches millions of rows
// against sets that hold few of them.
type keySet struct {
	bits []uint64
	mask uint64
	keys map[string]bool
}

// newKeySet returns an empty set sized for n keys: a bitset of at least 16 bits a key (4096 at
// the least), so that about 1 absent key in 100 gets past it.
func newKeySet(n int) *keySet {
	bits := uint64(1) << 12
	for bits < uint64(n)*16 {
		bits <<= 1
	}
	return &keySet{bits: make([]uint64, bits/64), mask: bits - 1, keys: make(map[string]bool, n)}
}

// add puts an encoded key, whose first column's value has hash h, into the set.
func (s *keySet) add(key []byte, h uint64) {
	s.keys[string(key)] = true
	for _, b := range [2]uint64{h & s.mask, h >> 32 & s.mask} {
		s.bits[b/64] |= 1 << (b % 64)
	}
}

// mayHave reports whether a key whose first column's value has hash h may be in the set.
func (s *keySet) mayHave(h uint64) bool {
	for _, b := range [2]uint64{h & s.mask, h >> 32 & s.mask} {
		if s.bits[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// firstHash hashes row i of a key's first column: its bytes or its number as they are, others
// (and nulls) as encoded in scratch. Equal values hash equal, which is all the bitset needs.
func firstHash(c *table.Column, i int, scratch *[]byte) uint64 {
	if !c.IsNull(i) {
		switch c.Kind {
		case table.KindBytes:
			return quickHash(c.BytesAt(i))
		case table.KindInt64:
			return mix64(uint64(c.Int64[i]))
		}
	}
	*scratch = table.AppendKeyPart((*scratch)[:0], c, i)
	return quickHash(*scratch)
}

// quickHash mixes a value's first and last eight bytes and its length: a few cycles, where a
// full hash of every row's key cost more than the map it guards. Values that differ only in
// their middle bytes get past the bitset to the map, which decides.
func quickHash(k []byte) uint64 {
	var head, tail uint64
	if len(k) >= 8 {
		head, tail = binary.LittleEndian.Uint64(k), binary.LittleEndian.Uint64(k[len(k)-8:])
	} else {
		var b [8]byte
		copy(b[:], k)
		head = binary.LittleEndian.Uint64(b[:])
	}
	return mix64(head*0x9e3779b97f4a7c15 ^ tail ^ uint64(len(k)))
}

func mix64(x uint64) uint64 {
	x *= 0xff51afd7ed558ccd
	return x ^ x>>29
}

// maxTimeClusters bounds the ranges of timeClusters' predicate.
const maxTimeClusters = 64

// timeClusters is a predicate on the event-time column that holds the event times of the
// rows idx, as the ranges of clusterTimes.
func timeClusters(col string, evt []int64, idx []int32) table.Expr {
	times := make([]int64, len(idx))
	for k, i := range idx {
		times[k] = evt[i]
	}
	var ranges []table.Expr
	for _, r := range clusterTimes(times, int64(time.Minute/time.Microsecond), maxTimeClusters) {
		ranges = append(ranges, table.And(table.Ge(col, time.UnixMicro(r[0]).UTC()), table.Le(col, time.UnixMicro(r[1]).UTC())))
	}
	return table.Or(ranges...)
}

// clusterTimes sorts times (µs, at least one) and cuts them into ranges wherever two
// neighbours are more than a gap apart, the gap doubling from minGap until at most maxRanges
// ranges remain. Late rows come in bursts (a device an hour late) and stragglers (a resend
// days later): one range over all of them would span days and match every file between.
func clusterTimes(times []int64, minGap int64, maxRanges int) [][2]int64 {
	slices.Sort(times)
	for gap := max(minGap, 1); ; gap *= 2 {
		var ranges [][2]int64
		lo := times[0]
		for k := 1; k <= len(times); k++ {
			if k == len(times) || times[k]-times[k-1] > gap {
				ranges = append(ranges, [2]int64{lo, times[k-1]})
				if k < len(times) {
					lo = times[k]
				}
			}
		}
		if len(ranges) <= maxRanges {
			return ranges
		}
	}
}

// ownFiles lists the files silver got from batch n itself, when a previous attempt of the
// batch committed there before a crash.
func (r *Runner) ownFiles(ctx context.Context, snap *txlog.Snapshot, n int64) (map[string]bool, error) {
	if v, ok := snap.TxnVersion(r.queryID); !ok || v < n {
		return nil, nil
	}
	b := r.silverT.Log().Bucket()
	for v := snap.Version(); v >= 0 && v > snap.Version()-1000; v-- {
		data, err := objstore.ReadAll(ctx, b, txlog.CommitKey(v))
		if err != nil {
			return nil, fmt.Errorf("stream: silver commit %d: %w", v, err)
		}
		actions, err := txlog.ParseActions(data)
		if err != nil {
			return nil, fmt.Errorf("stream: silver commit %d: %w", v, err)
		}
		mine := false
		paths := map[string]bool{}
		for _, a := range actions {
			if a.Txn != nil && a.Txn.AppID == r.queryID && a.Txn.Version == n {
				mine = true
			}
			if a.Add != nil {
				paths[a.Add.Path] = true
			}
		}
		if mine {
			return paths, nil
		}
	}
	return nil, fmt.Errorf("%w: silver holds txn %s version >= %d but its commit is not among the last 1000", checkpoint.ErrBad, r.queryID, n)
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
	return max(0, wmMs-r.cfg.Stream.State.DedupRetention.Duration.Milliseconds())
}

// encodeDedupDelta records the keys batch N added to the dedup state (with their event times)
// and the eviction watermark it ran with: replayed on state N, they give state N+1.
func (r *Runner) encodeDedupDelta(emit []int32, evictWM int64) []byte {
	buf := &r.buf
	size := 2 * binary.MaxVarintLen64
	for _, i := range emit {
		size += len(buf.keys[i]) + 2*binary.MaxVarintLen64
	}
	dst := binary.AppendVarint(make([]byte, 0, size), evictWM)
	dst = binary.AppendUvarint(dst, uint64(len(emit)))
	for _, i := range emit {
		dst = binary.AppendUvarint(dst, uint64(len(buf.keys[i])))
		dst = append(dst, buf.keys[i]...)
		dst = binary.AppendVarint(dst, buf.evt[i])
	}
	return dst
}

// replayDedupDelta applies one delta to d: the same additions, then the same eviction.
func replayDedupDelta(d *silver.Dedup, b []byte) error {
	bad := errors.New("bad dedup delta")
	evictWM, n := binary.Varint(b)
	if n <= 0 {
		return bad
	}
	b = b[n:]
	count, n := binary.Uvarint(b)
	if n <= 0 || count > uint64(len(b)) {
		return bad
	}
	b = b[n:]
	keys := make([][]byte, 0, count)
	times := make([]int64, 0, count)
	for range count {
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return bad
		}
		keys = append(keys, b[n:n+int(l)])
		b = b[n+int(l):]
		t, m := binary.Varint(b)
		if m <= 0 {
			return bad
		}
		times = append(times, t)
		b = b[m:]
	}
	if len(b) != 0 {
		return bad
	}
	// No row is late on replay: these rows were admitted when they first ran.
	_, err := d.ProcessBatch(keys, times, nil, math.MinInt64/1000, evictWM)
	return err
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
		if err := replayDedupDelta(d, deltas[i]); err != nil {
			return fmt.Errorf("%w: %s: %v", checkpoint.ErrBad, checkpoint.StateKey(base+int64(len(deltas)-i)), err)
		}
	}
	return nil
}
