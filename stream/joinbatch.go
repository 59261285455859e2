package stream

// One batch of the join query: both sides read and encoded, the operator run, its rows written
// to the joined table and the join quarantine, the aggregations over the join, and its
// progress.

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/join"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/table/source"
)

// joinBatch is what one join batch did, for progress and the report.
type joinBatch struct {
	res      *join.Result
	in       [2][]*pq.Batch
	rows     [2]int64
	evStats  gold.EventTimeStats
	next     int64
	outRows  int64
	stateMem [2]int64
	stateRow [2]int64
	aggs     []aggStats
}

// runBatch runs batch b over each side's files: the operator with the batch's watermarks,
// then the joined table, the join quarantine, each aggregation over the join and state
// version b.n+1.
func (r *joinQuery) runBatch(ctx context.Context, b *batchRun, files [][]source.IndexedFile) (batchDone, error) {
	jb := &joinBatch{}
	inputs, err := r.readSides(ctx, files, jb)
	if err != nil {
		return batchDone{}, err
	}
	readAt := time.Now()
	for s := range inputs {
		r.wm.ObserveInput(join.Side(s), inputs[s])
	}
	jb.next = r.wm.EndBatch()
	res, err := r.op.ProcessBatch(inputs[0], inputs[1], b.late, b.evict)
	if err != nil {
		return batchDone{}, fmt.Errorf("stream: join %s batch %d: %w", r.j.Name, b.n, err)
	}
	jb.res = res
	for s := range jb.stateMem {
		jb.stateMem[s] = r.op.StateBytes(join.Side(s))
		jb.stateRow[s] = int64(r.op.StateRows(join.Side(s)))
	}
	out, err := r.outputBatch(res)
	if err != nil {
		return batchDone{}, err
	}
	jb.outRows = int64(out.Len())
	if err := r.ensureTables(ctx); err != nil {
		return batchDone{}, err
	}
	sections, order, full, err := r.encodeState()
	if err != nil {
		return batchDone{}, err
	}
	if out.Len() > 0 {
		wr, err := write(ctx, r.out, []*pq.Batch{out}, b.txn, false)
		if err != nil {
			return batchDone{}, fmt.Errorf("stream: join %s: joined table: %w", r.j.Name, err)
		}
		b.marks.wrote(r.out, wr.Version, wr.Skipped)
	}
	if err := r.quarantine(ctx, res, inputs, b); err != nil {
		return batchDone{}, err
	}
	if err := r.runAggs(ctx, b, out, jb); err != nil {
		return batchDone{}, err
	}
	secs := aggSections(checkpoint.Sections(sections, order), r.jp.agg.aggs, jb.aggs)
	if err := r.e.ckpt.WriteSections(ctx, b.n+1, secs); err != nil {
		return batchDone{}, err
	}
	for i := range jb.aggs { // the state file has them: r.cur does not keep a snapshot's bytes
		jb.aggs[i].state, jb.aggs[i].delta, jb.aggs[i].writeDelta = nil, nil, nil
	}
	if full {
		r.joinDeltas = 0
	} else {
		r.joinDeltas++
	}
	if r.aggDeltas+1 >= r.j.State.MinDeltasForSnapshot {
		r.aggDeltas = 0
	} else {
		r.aggDeltas++
	}
	r.cur = jb
	return batchDone{next: jb.next, rows: jb.rows[:], evStats: jb.evStats, readAt: readAt}, nil
}

// readSides reads each side's silver files of the batch and encodes them for the operator.
func (r *joinQuery) readSides(ctx context.Context, files [][]source.IndexedFile, jb *joinBatch) ([2]*join.Input, error) {
	var inputs [2]*join.Input
	for s := range r.in {
		bs, _, missing, cause, err := readTableFiles(ctx, r.in[s], join.Side(s).String()+" silver", files[s], r.jp.schema[s])
		if len(missing) > 0 {
			return inputs, fmt.Errorf("stream: join %s: %d files of %s the join has not read yet are gone (a vacuum of that silver table ran while the join lagged behind): %w", r.j.Name, len(missing), []string{r.j.Left.Silver, r.j.Right.Silver}[s], cause)
		}
		if err != nil {
			return inputs, fmt.Errorf("stream: join %s: %w", r.j.Name, err)
		}
		jb.in[s] = bs
		if inputs[s], err = r.encodeSide(join.Side(s), bs, jb); err != nil {
			return inputs, err
		}
	}
	return inputs, nil
}

// encodeState encodes the join's sections of the batch's state file: the per-source
// watermarks, and the operator's full snapshot every state.min_deltas_for_snapshot versions
// (full) or its delta in between.
func (r *joinQuery) encodeState() (map[string][]byte, []string, bool, error) {
	sections := map[string][]byte{}
	order := []string{secJoinWM}
	var err error
	if sections[secJoinWM], err = r.wm.AppendBinary(nil); err != nil {
		return nil, nil, false, err
	}
	full := r.joinDeltas+1 >= r.j.State.MinDeltasForSnapshot
	if full {
		r.state, err = r.op.AppendSnapshot(r.state[:0])
		sections[secJoin] = r.state
		order = append(order, secJoin)
	} else {
		r.state, err = r.op.AppendDelta(r.state[:0])
		sections[secJoinDelta] = r.state
		order = append(order, secJoinDelta)
	}
	if err != nil {
		return nil, nil, false, fmt.Errorf("stream: join %s state: %w", r.j.Name, err)
	}
	return sections, order, full, nil
}

// encodeSide builds one side's operator input from its silver batches: event times, join keys
// (null when a part is null) and row payloads.
func (r *joinQuery) encodeSide(side join.Side, bs []*pq.Batch, jb *joinBatch) (*join.Input, error) {
	p := r.jp
	in := &join.Input{}
	in.Keys.Reset()
	in.Rows.Reset()
	for _, b := range bs {
		ev := b.Columns[p.evCol[side]]
		for i := range b.Len() {
			if ev.IsNull(i) {
				// Silver never holds a row without its event time; a table written by hand might.
				return nil, fmt.Errorf("stream: join %s: %s silver row without event time %q", r.j.Name, side, []string{r.j.Left.EventTime, r.j.Right.EventTime}[side])
			}
			t := ev.Int64[i]
			in.EventTime = append(in.EventTime, t)
			ms := floorMs(t)
			if jb.evStats.Count == 0 || ms > jb.evStats.Max {
				jb.evStats.Max = ms
			}
			if jb.evStats.Count == 0 || ms < jb.evStats.Min {
				jb.evStats.Min = ms
			}
			jb.evStats.Sum += ms
			jb.evStats.Count++
			null := false
			for _, c := range p.keyCols[side] {
				col := b.Columns[c]
				null = null || col.IsNull(i)
				in.Keys.Data = pq.AppendKeyPart(in.Keys.Data, col, i)
			}
			in.Keys.EndValue()
			if null {
				if in.KeyNull == nil {
					in.KeyNull = make([]bool, len(in.EventTime)-1, len(in.EventTime)+b.Len())
				}
			}
			if in.KeyNull != nil {
				in.KeyNull = append(in.KeyNull, null)
			}
			in.Rows.Data = pq.EncodeRow(in.Rows.Data, b.Columns, i)
			in.Rows.EndValue()
		}
	}
	jb.rows[side] = int64(len(in.EventTime))
	return in, nil
}

func floorMs(us int64) int64 {
	ms := us / 1000
	if us%1000 != 0 && us < 0 {
		ms--
	}
	return ms
}

// outputBatch renders the operator's rows in the joined schema: each side's payload decoded
// into its columns, nulls for the side a row lacks.
func (r *joinQuery) outputBatch(res *join.Result) (*pq.Batch, error) {
	b, err := pq.NewBatch(r.jp.out.Schema)
	if err != nil {
		return nil, err
	}
	nl := r.jp.cols[0]
	left, right := b.Columns[:nl], b.Columns[nl:]
	for _, row := range res.Rows {
		if err := r.fillSide(left, row.Kind.HasLeft(), row.Left); err != nil {
			return nil, err
		}
		if len(right) > 0 {
			if err := r.fillSide(right, row.Kind.HasRight(), row.Right); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

func (r *joinQuery) fillSide(cols []*pq.Column, has bool, payload []byte) error {
	if !has {
		appendNulls(cols)
		return nil
	}
	rest, err := pq.DecodeRow(cols, payload)
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%w: %d bytes left over", pq.ErrBadRow, len(rest))
	}
	if err != nil {
		return fmt.Errorf("stream: join %s: %w", r.j.Name, err)
	}
	return nil
}

// quarantine appends the batch's late rows to the join quarantine: each with its side's
// columns, the other side's null, its side, the late watermark, the batch and the query.
func (r *joinQuery) quarantine(ctx context.Context, res *join.Result, inputs [2]*join.Input, b *batchRun) error {
	if len(res.Late[0])+len(res.Late[1]) == 0 {
		return nil
	}
	q, err := pq.NewBatch(r.jp.qschema)
	if err != nil {
		return err
	}
	nl, nr := r.jp.cols[0], r.jp.cols[1]
	left, right := q.Columns[:nl], q.Columns[nl:nl+nr]
	sideCol, lw, bid, qid := q.Columns[nl+nr], q.Columns[nl+nr+1], q.Columns[nl+nr+2], q.Columns[nl+nr+3]
	for s, rows := range res.Late {
		for _, i := range rows {
			payload := inputs[s].Rows.Value(int(i))
			if err := r.fillSide(left, s == 0, payload); err != nil {
				return err
			}
			if err := r.fillSide(right, s == 1, payload); err != nil {
				return err
			}
			sideCol.AppendString(join.Side(s).String())
			lw.AppendInt64(b.late * 1000)
			bid.AppendInt64(b.n)
			qid.AppendString(r.e.queryID)
		}
	}
	wr, err := write(ctx, r.quar, []*pq.Batch{q}, b.txn, false)
	if err != nil {
		return fmt.Errorf("stream: join %s: quarantine: %w", r.j.Name, err)
	}
	b.marks.wrote(r.quar, wr.Version, wr.Skipped)
	return nil
}

// runAggs runs each aggregation over the join on the batch's joined rows, with the output
// watermarks of the previous batch (late) and this one (eviction).
func (r *joinQuery) runAggs(ctx context.Context, jbr *batchRun, out *pq.Batch, jb *joinBatch) error {
	aps := r.jp.agg.aggs
	jb.aggs = make([]aggStats, len(aps))
	if len(aps) == 0 {
		return nil
	}
	entry := jbr.entry
	evict := r.outputWatermark(entry.BatchWatermarkMs)
	if entry.OutputWatermarkMs != nil {
		evict = *entry.OutputWatermarkMs
	}
	b := &batchRun{n: jbr.n, entry: entry, late: min(r.lastOutWM, evict), evict: evict, txn: jbr.txn, marks: jbr.marks}
	rows := &silver.Rows{Batches: []*pq.Batch{out}}
	for i := range out.Len() {
		rows.Batch = append(rows.Batch, 0)
		rows.Row = append(rows.Row, int32(i))
	}
	full := r.aggDeltas+1 >= r.j.State.MinDeltasForSnapshot
	for ai, ap := range aps {
		tc := out.Columns[r.jp.timeCols[ai]]
		var sel []int32
		var evt []int64
		for i := range out.Len() {
			if !tc.IsNull(i) {
				sel = append(sel, int32(i))
				evt = append(evt, tc.Int64[i])
			}
		}
		a := &aggRun{ap: ap, op: r.aggs[ai], ab: &r.aggBufs[ai], schema: r.jp.agg.silver, kinds: r.jp.agg.kinds,
			rows: rows, sel: sel, selEvt: evt, gold: r.golds[ai], quar: r.quars[ai], full: full,
			queryID: r.e.queryID, logger: r.e.cfg.logger}
		st, err := a.run(ctx, b, func(aggStats) {})
		if err != nil {
			return fmt.Errorf("stream: join %s: %w", r.j.Name, err)
		}
		jb.aggs[ai] = st
	}
	return nil
}

func (r *joinQuery) account(jb *joinBatch) {
	rep := &r.report
	rep.LeftRows += jb.rows[0]
	rep.RightRows += jb.rows[1]
	rep.OutputRows += jb.outRows
	rep.LateLeftRows += int64(len(jb.res.Late[0]))
	rep.LateRightRows += int64(len(jb.res.Late[1]))
	rep.MatchedRows += jb.res.Matched
	rep.LeftUnmatchedRows += jb.res.Unmatched[0]
	rep.RightUnmatchedRows += jb.res.Unmatched[1]
	rep.SourceWatermarksMs = r.sourceWatermarks()
	rep.Gold = accountGold(rep.Gold, r.jp.agg.aggs, jb.aggs)
}

// The customMetrics of the join's symmetricHashJoin state operator: medallion's per-side
// counts beside Spark's totals.
const (
	JoinMetricLeftInputRows      = "numLeftInputRows"
	JoinMetricRightInputRows     = "numRightInputRows"
	JoinMetricLeftStateRows      = "numLeftStateRows"
	JoinMetricRightStateRows     = "numRightStateRows"
	JoinMetricLeftStateBytes     = "leftStateMemoryUsedBytes"
	JoinMetricRightStateBytes    = "rightStateMemoryUsedBytes"
	JoinMetricMatchedRows        = "numMatchedRows"
	JoinMetricLeftUnmatchedRows  = "numLeftUnmatchedRows"
	JoinMetricRightUnmatchedRows = "numRightUnmatchedRows"
	JoinMetricLateLeftRows       = "numLateLeftRows"
	JoinMetricLateRightRows      = "numLateRightRows"
)

// progress adds the join's to batch b's progress: every source's watermark in eventTime
// ("watermark.<source>"), a symmetricHashJoin state operator (then each aggregation's) and
// the joined table as the sink.
func (r *joinQuery) progress(p *Progress, b *batchRun) {
	jb := r.cur
	res := jb.res
	p.EventTime = EventTimeProgress(jb.evStats, b.entry.BatchWatermarkMs, r.spec.LeftWatermark || r.spec.RightWatermark)
	for name, wm := range b.entry.SourceWatermarksMs {
		p.EventTime["watermark."+name] = FormatProgressTime(wm)
	}
	late := int64(len(res.Late[0]) + len(res.Late[1]))
	p.StateOperators = append(p.StateOperators, StateOperatorProgress{
		OperatorName: "symmetricHashJoin", NumRowsTotal: res.NumRowsTotal, NumRowsUpdated: res.NumRowsUpdated,
		NumRowsRemoved: res.NumRowsRemoved, MemoryUsedBytes: jb.stateMem[0] + jb.stateMem[1],
		NumRowsDroppedByWatermark: res.NumRowsDroppedByWatermark, NumShufflePartitions: 1, NumStateStoreInstances: 4,
		CustomMetrics: map[string]int64{
			JoinMetricLeftInputRows: jb.rows[0], JoinMetricRightInputRows: jb.rows[1],
			JoinMetricLeftStateRows: jb.stateRow[0], JoinMetricRightStateRows: jb.stateRow[1],
			JoinMetricLeftStateBytes: jb.stateMem[0], JoinMetricRightStateBytes: jb.stateMem[1],
			JoinMetricMatchedRows:       res.Matched,
			JoinMetricLeftUnmatchedRows: res.Unmatched[0], JoinMetricRightUnmatchedRows: res.Unmatched[1],
			JoinMetricLateLeftRows: int64(len(res.Late[0])), JoinMetricLateRightRows: int64(len(res.Late[1])),
			CustomMetricLateRowsQuarantined: late,
		},
	})
	metrics := map[string]string{
		"numOutputRows":                 strconv.FormatInt(jb.outRows, 10),
		CustomMetricLateRowsQuarantined: strconv.FormatInt(late, 10),
	}
	aggProgress(p, metrics, r.jp.agg.aggs, jb.aggs)
	p.Sink = SinkProgress{Description: "DeltaSink[" + r.j.Table + "]", NumOutputRows: -1, Metrics: metrics}
}
