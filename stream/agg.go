package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/merge"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// aggRun is one aggregation over one batch, whatever hosts it (the source query over its
// silver rows, a join query over its joined rows): the input rows selected from rows, the
// operator and its buffers, and where its late rows and output go.
type aggRun struct {
	ap *aggPlan
	op *gold.Aggregation
	ab *aggBuffers
	// schema and kinds are the input rows' (silver's, or the joined table's) columns.
	schema *txlog.StructType
	kinds  []pq.Kind
	// rows are the batch's rows; sel the ones the aggregation reads, selEvt their times.
	rows   *silver.Rows
	sel    []int32
	selEvt []int64
	gold   *table.Table
	quar   *table.Table
	// full: this batch writes the full state, not a delta.
	full       bool
	keyScratch []byte // keyBytes' buffer
	// share is the key table the aggregation shares (nil: its own).
	share     *keyShare
	queryID   string
	lateAlert float64
	logger    *slog.Logger
}

// runAgg runs aggregation ai over the batch and writes its quarantine and gold rows. It hands
// its encoded state (or delta) to stateReady as soon as it has it, before the table writes.
func (r *sourceQuery) runAgg(ctx context.Context, b *batchRun, ai int, stateReady func(aggStats)) (aggStats, error) {
	buf := &r.buf
	a := &aggRun{ap: r.ops.plan.aggs[ai], op: r.ops.aggs[ai], ab: &buf.aggs[ai], schema: r.ops.plan.silver, kinds: r.ops.plan.kinds,
		rows: &buf.rows, sel: buf.sel, selEvt: buf.selEvt, gold: r.t.golds[ai], quar: r.t.quars[ai],
		full: r.aggFullSnapshot(), queryID: r.e.queryID, lateAlert: r.q.LateAlertFraction, logger: r.e.cfg.logger}
	if si := r.ops.shareOf[ai]; si >= 0 {
		a.share = r.ops.shares[si]
	}
	return a.run(ctx, b, stateReady)
}

// run feeds the selected rows to the aggregation with the batch's late and eviction
// watermarks, quarantines its late rows and writes its emitted rows to gold, both with the
// batch's txn.
func (a *aggRun) run(ctx context.Context, b *batchRun, stateReady func(aggStats)) (aggStats, error) {
	ap, n, txn, ab := a.ap, b.n, b.txn, a.ab
	in := a.input()
	// The emitted rows go straight from the state into gold's columns.
	gb, err := pq.NewBatch(ap.schema)
	if err != nil {
		return aggStats{}, fmt.Errorf("stream: gold %s: %w", ap.cfg.Name, err)
	}
	in.Out = gb
	began := time.Now()
	res, err := a.op.ProcessBatch(in, b.late, b.evict)
	if err != nil {
		return aggStats{}, fmt.Errorf("stream: gold %s: %w", ap.cfg.Name, err)
	}
	updMs := time.Since(began).Milliseconds()
	as := aggStats{lateRows: int64(len(res.LateRows)), outputRows: res.NumRowsOutput}
	// The full state only when this batch writes a full snapshot; its delta otherwise.
	// Into last batch's buffer: the state file that held it is written by now, and a state
	// of many groups would otherwise grow a new buffer, copy by copy, every batch.
	// A delta whose size is known before it is encoded is written straight into the state
	// file, a chunk at a time (gold.WriteDelta): the state is not changed until the next
	// batch, which waits for the state file.
	if size, ok := a.op.DeltaSize(); ok && !a.full {
		op := a.op
		as.deltaSize, as.writeDelta = int64(size), func(w io.Writer) error { return op.WriteDelta(w, size) }
	} else if !a.full && a.op.SupportsDelta() {
		as.delta, err = a.op.AppendDelta(ab.state[:0])
		ab.state = as.delta
	} else if a.op.SupportsDelta() {
		// A periodic snapshot (every min_deltas_for_snapshot batches): the batches between
		// write deltas straight into the state file, so a kept buffer would hold the whole
		// state's bytes, unused, for the rest of the run (76 MB of a 10M-event backlog's
		// live heap at 100k keys). It dies once the state file is written.
		as.state, err = a.op.AppendSnapshot(nil)
	} else {
		as.state, err = a.op.AppendSnapshot(ab.state[:0])
		ab.state = as.state
	}
	if err != nil {
		return as, fmt.Errorf("stream: gold %s state: %w", ap.cfg.Name, err)
	}
	stateReady(as)
	as.res = StateOperatorProgress{
		OperatorName: "stateStoreSave", NumRowsTotal: res.NumRowsTotal, NumRowsUpdated: res.NumRowsUpdated,
		AllUpdatesTimeMs: updMs, NumRowsRemoved: res.NumRowsRemoved, NumRowsDroppedByWatermark: res.NumRowsDroppedByWatermark,
		MemoryUsedBytes:      a.op.MemoryUsedBytes(),
		NumShufflePartitions: 1, NumStateStoreInstances: 1,
		CustomMetrics: map[string]int64{CustomMetricLateRowsQuarantined: int64(len(res.LateRows))},
	}
	if ap.agg.Session != nil {
		as.res.OperatorName = "sessionWindowStateStoreSaveExec"
		as.res.CustomMetrics[CustomMetricSessionCorrections] = res.NumCorrectionRows
	}
	var quarDone sync.WaitGroup
	var quarErr error
	defer quarDone.Wait() // an early return does not leave the quarantine's write running
	if len(res.LateRows) > 0 {
		idx := make([]int32, len(res.LateRows))
		for k, li := range res.LateRows {
			idx[k] = a.sel[li]
		}
		qb, err := silver.QuarantineBatch(a.schema, ap.qschema, a.rows, idx, silver.Late{WatermarkMs: res.LateWatermarkMs, Batch: n, QueryID: a.queryID})
		if err != nil {
			return as, err
		}
		// The quarantine and gold are independent tables, each committed after its own files
		// with the batch's txn (a rerun skips the one that has it): their writes go on together.
		quarDone.Go(func() {
			qr, err := write(ctx, a.quar, []*pq.Batch{qb}, txn, false)
			if err != nil {
				quarErr = fmt.Errorf("stream: quarantine %s: %w", ap.cfg.Name, err)
				return
			}
			b.marks.wrote(a.quar, qr.Version, qr.Skipped)
		})
		if f := a.lateAlert; f > 0 && float64(len(res.LateRows)) > f*float64(in.Len()) {
			a.logger.Warn("late rows above the alert fraction", "gold", ap.cfg.Name, "batch", n,
				"lateRows", len(res.LateRows), "inputRows", in.Len(), "fraction", f)
		}
	}
	if res.NumRowsOutput > 0 || ap.complete {
		var wr table.Result
		if ap.update {
			wr, err = upsert(ctx, a.gold, ap, gb, txn)
		} else {
			wr, err = writeGold(ctx, a.gold, gb, txn, ap.complete)
		}
		if err != nil {
			quarDone.Wait()
			return as, errors.Join(fmt.Errorf("stream: gold %s: %w", ap.cfg.Name, err), quarErr)
		}
		b.marks.wrote(a.gold, wr.Version, wr.Skipped)
	}
	quarDone.Wait()
	return as, quarErr
}

// input builds the aggregation's input from the selected rows (event times, group keys, the
// aggregated columns) in a.ab and returns it. An aggregation that shares its key table takes
// the keys, ids and hashes its share encoded and interned before the batch's aggregations ran.
func (a *aggRun) input() *gold.Input {
	in := &a.ab.in
	in.EventTime = a.selEvt
	if s := a.share; s != nil {
		in.Keys, in.KeyIDs, in.KeyHashes = s.keys, s.ids, s.hashes
	} else {
		encodeKeys(&in.Keys, a.rows, a.sel, a.ap.keyCols, &a.keyScratch)
		in.KeyIDs, in.KeyHashes = nil, nil
	}
	a.fillColumns()
	return in
}

// aggFullSnapshot says whether this batch writes the aggregations' full states: every
// min_deltas_for_snapshot versions; their deltas in between.
func (r *sourceQuery) aggFullSnapshot() bool {
	return r.state.aggDeltas+1 >= r.q.State.MinDeltasForSnapshot
}

// upsert merges the groups this batch updated into gold on (window, keys): matched rows take
// the new cumulative aggregates and keep their late_rows (what merge-late added), new groups
// are inserted.
func upsert(ctx context.Context, t *table.Table, ap *aggPlan, gb *pq.Batch, txn *table.AppTxn) (table.Result, error) {
	keys := append([]string{gold.ColWindow}, ap.cfg.GroupBy...)
	set := map[string]merge.Value{}
	for _, f := range ap.schema.Fields[len(keys):] {
		if f.Name != gold.ColLateRows {
			set[f.Name] = merge.FromSource(f.Name)
		}
	}
	res, err := merge.Run(ctx, t, merge.Spec{Source: []*pq.Batch{gb}, Keys: keys,
		Matched: []merge.Matched{{Set: set}}, NotMatched: []merge.NotMatched{{}}, Txn: txn})
	return table.Result{Version: res.Version, Skipped: res.Skipped}, err
}

// fillColumns builds the aggregate input columns of the selected rows in a.ab.
func (a *aggRun) fillColumns() {
	ap, ab := a.ap, a.ab
	in := &ab.in
	k := len(ap.aggCols)
	for len(ab.colI64) < k {
		ab.colI64 = append(ab.colI64, nil)
		ab.colF64 = append(ab.colF64, nil)
		ab.colBin = append(ab.colBin, gold.Binary{})
		ab.colOK = append(ab.colOK, nil)
	}
	in.Columns = in.Columns[:0]
	for ci, c := range ap.aggCols {
		kind := a.kinds[c]
		ints, floats, ok := ab.colI64[ci][:0], ab.colF64[ci][:0], slices.Grow(ab.colOK[ci][:0], len(a.sel))
		switch kind {
		case pq.KindFloat64, pq.KindFloat32:
			floats = slices.Grow(floats, len(a.sel))
		case pq.KindBytes:
		default:
			ints = slices.Grow(ints, len(a.sel))
		}
		bin := &ab.colBin[ci]
		bin.Reset()
		nulls := false
		for _, j := range a.sel {
			col := a.rows.Batches[a.rows.Batch[j]].Columns[c]
			i := int(a.rows.Row[j])
			null := col.IsNull(i)
			nulls = nulls || null
			ok = append(ok, !null)
			switch kind {
			case pq.KindInt64:
				ints = append(ints, col.Int64[i])
			case pq.KindInt32:
				ints = append(ints, int64(col.Int32[i]))
			case pq.KindFloat64:
				floats = append(floats, col.Float64[i])
			case pq.KindFloat32:
				floats = append(floats, float64(col.Float32[i]))
			case pq.KindBytes:
				bin.Append(col.BytesAt(i))
			case pq.KindBool:
				v := int64(0)
				if col.Bool[i] {
					v = 1
				}
				ints = append(ints, v)
			default: // count(col) over a nested or decimal column: only nullness matters
				ints = append(ints, 0)
			}
		}
		ab.colI64[ci], ab.colF64[ci], ab.colOK[ci] = ints, floats, ok
		gc := gold.Column{}
		switch kind {
		case pq.KindFloat64, pq.KindFloat32:
			gc.Float64 = nonNil(floats)
		case pq.KindBytes:
			gc.Bytes = bin
		default:
			gc.Int64 = nonNil(ints)
		}
		if nulls {
			gc.Valid = ok
		}
		in.Columns = append(in.Columns, gc)
	}
}

// progress adds the source query's state operators (dedup, then each aggregation), its
// sink (silver) and its expectations to batch b's progress.
func (r *sourceQuery) progress(p *Progress, b *batchRun) {
	st := r.cur
	p.EventTime = EventTimeProgress(st.evStats, b.evict, true)
	if st.dedup != nil {
		d := st.dedup
		p.StateOperators = append(p.StateOperators, StateOperatorProgress{
			OperatorName: "dedupe", NumRowsTotal: d.NumRowsTotal, NumRowsUpdated: d.NumRowsUpdated,
			NumRowsRemoved: d.NumRowsRemoved, MemoryUsedBytes: st.dedupMem, NumShufflePartitions: 1, NumStateStoreInstances: 1,
			// Spark would drop the rows at or below the late watermark; we look their keys up
			// in silver instead, so nothing is dropped by the watermark here.
			CustomMetrics: map[string]int64{"numDroppedDuplicateRows": st.duplicates, "numLateRowsCheckedInSilver": d.NumRowsDroppedByWatermark},
		})
	}
	metrics := map[string]string{
		"numSilverRows":        strconv.FormatInt(st.silverRows, 10),
		"numValidationRejects": strconv.FormatInt(st.rejected, 10),
		"numDuplicatesDropped": strconv.FormatInt(st.duplicates, 10),
	}
	if f := r.q.Rules.Transform.Filter; f != nil && f.Drop {
		metrics["numFilteredDropped"] = strconv.FormatInt(st.filteredDropped, 10)
	}
	aggProgress(p, metrics, r.ops.plan.aggs, st.aggs)
	p.Sink = SinkProgress{Description: "DeltaSink[" + r.q.Tables.Silver + "]", NumOutputRows: -1, Metrics: metrics}
	for _, e := range st.expect {
		p.Expectations = append(p.Expectations, ExpectationProgress{Name: e.Name, OnViolation: string(e.OnViolation),
			Passed: e.Passed, Failed: e.Failed, Dropped: e.Dropped})
	}
}

// aggProgress adds each aggregation's state operator to p and its figures to the sink's
// metrics, under "gold.<name>.".
func aggProgress(p *Progress, metrics map[string]string, aps []*aggPlan, aggs []aggStats) {
	for i, a := range aggs {
		p.StateOperators = append(p.StateOperators, a.res)
		name := aps[i].cfg.Name
		metrics["gold."+name+".numOutputRows"] = strconv.FormatInt(a.outputRows, 10)
		metrics["gold."+name+"."+CustomMetricLateRowsQuarantined] = strconv.FormatInt(a.lateRows, 10)
		metrics["gold."+name+".stateMemoryUsedBytes"] = strconv.FormatInt(a.res.MemoryUsedBytes, 10)
	}
}

// accountGold adds a batch's aggregation figures to a report's (its entries made on the
// first batch).
func accountGold(rep []GoldReport, aps []*aggPlan, aggs []aggStats) []GoldReport {
	if len(rep) == 0 {
		for _, ap := range aps {
			rep = append(rep, GoldReport{Name: ap.cfg.Name})
		}
	}
	for i, a := range aggs {
		g := &rep[i]
		g.RowsOut += a.outputRows
		g.LateRows += a.lateRows
		g.LateGroups += a.res.NumRowsDroppedByWatermark
		g.SessionCorrections += a.res.CustomMetrics[CustomMetricSessionCorrections]
	}
	return rep
}

// publishProgress writes batch n's progress to the checkpoint, logs it and tells listener
// (nil: none).
func publishProgress(ctx context.Context, ckpt *checkpoint.Dir, logger *slog.Logger, listener Listener, n int64, p *Progress) error {
	data, err := p.MarshalJSON()
	if err != nil {
		return fmt.Errorf("stream: progress: %w", err)
	}
	if err := ckpt.WriteProgress(ctx, n, data); err != nil {
		return err
	}
	// Debug, not info: one long line a micro-batch drowned the run's own summary; the progress
	// files in the checkpoint (and report, the status page) keep every batch's figures.
	logger.Debug("stream progress", "batch", n, "progress", json.RawMessage(data))
	if listener != nil {
		listener.OnProgress(p)
	}
	return nil
}

// nonNil keeps an empty column typed: gold tells a column's kind by which slice is set.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
