package stream

// The join host: one stream-stream join query (spec.Join) over the silver tables of two
// sources, each read as a Delta stream (table/source) the way Runner reads bronze.
//
// A batch N, in order: read each side's silver files of its offset range (at most Limit a
// side); encode each row's join key (table's key encoding of the `on:` columns; a null part
// makes the key null, which never matches) and its payload (every silver column, pq.EncodeRow);
// feed both sides' event times to the per-source watermarks (join.Watermarks, min policy);
// run join.Operator.ProcessBatch with the late watermark W(N-1) and the eviction watermark
// W(N); append the pairs and null-extended rows to the joined table (join.Output's columns)
// and the late rows to the join quarantine (join.QuarantineSchema: the row's side, the other
// side null, late_watermark = W(N-1), batch_id, query_id); run each aggregation over the
// join (spec.Join.Gold) on the batch's joined rows, with the watermarks the join propagates
// (below); write state N+1, commits/N and progress/N.json.
//
// The checkpoint (spec.Join.Checkpoint) has stream/checkpoint's layout, so late/ and report/
// read it with the same reader:
//   - offsets/N: batchWatermarkMs = W(N), the global eviction watermark; batchTimestampMs;
//     conf; then one line per source, left then right (Offsets.Sources, "-" for a side with
//     no offset yet; Offsets.End is the left one). Medallion's additions in the metadata line:
//     sourceWatermarksMs, each watermarked source's watermark by source name as it stood when
//     the batch began (W(N) is their min), and outputWatermarkMs (below).
//   - state/N+1 (written by batch N): "join-wm", the per-source watermarks after the batch
//     (join.Watermarks.AppendBinary: every CLI run resumes them, spec §2.6, §9.3); "join",
//     the operator's full snapshot every state.min_deltas_for_snapshot versions, or
//     "join-delta", the batch's delta, in between; each aggregation's "agg/<name>" or
//     "agg-delta/<name>", as in a source query.
//   - commits/N: nextBatchWatermarkMs = W(N+1); progress/N.json.
//
// For merge-late of the aggregations over a join (the "joinlate" side reads this): such an
// aggregation runs in batch N with the eviction watermark outputWatermarkMs of offsets/N
// (Offsets.OutputWatermarkMs = max(0, join.Spec.OutputWatermark(W(N))), spec §3.4) and the
// late watermark outputWatermarkMs of offsets/N-1 (0 for batch 0); its quarantine rows carry
// that late watermark in late_watermark. batchWatermarkMs stays the join's own W(N), which
// the join quarantine's rows are judged with (late_watermark = W(N-1)).
//
// Rows of an aggregation over a join whose time column is null (the missing side of a
// null-extended row) are not aggregated: Spark's window() drops rows with a null time too.
//
// A batch runs when either side has new files; a no-data batch runs when the trigger allows
// it (available-now and processing-time, not once) and join.Spec.ShouldRunNoDataBatch (or an
// aggregation over the join) asks for it. Both silver tables must exist before the first
// batch (the joined schema needs both); until then Run does nothing.
//
// Crash guarantees, as for the source query: every table write of batch N carries txn(query
// id, N); a batch with offsets/N and no commits/N is re-run with exactly its recorded offsets
// and watermarks from state version N; the operator, the watermarks and the aggregations are
// deterministic, so a process killed at any instant and run again leaves the same rows in the
// joined table, the join quarantine and every gold table.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/join"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/table/source"
	"github.com/medallion-lake/medallion/txlog"
)

// JoinOptions configure a JoinRunner.
type JoinOptions struct {
	// Lake is the bucket every path of Join is relative to.
	Lake objstore.Bucket
	Join spec.Join
	// Trigger overrides Join.Trigger when its Kind is set.
	Trigger spec.Trigger
	// Clock gives batch timestamps and progress times (default time.Now).
	Clock    func() time.Time
	Logger   *slog.Logger
	Listener Listener
	// WriteOptions tune the data files of the joined table, the quarantine and gold.
	WriteOptions pq.WriteOptions
}

// JoinReport sums up one JoinRunner.Run.
type JoinReport struct {
	Name string `json:"name"`
	RunSummary
	// LeftRows and RightRows are the input rows read from each side's silver table.
	LeftRows  int64 `json:"numLeftRows"`
	RightRows int64 `json:"numRightRows"`
	// OutputRows are the rows appended to the joined table (pairs and null-extended rows).
	OutputRows int64 `json:"numOutputRows"`
	// LateLeftRows and LateRightRows are the input rows quarantined as late (Spark drops
	// them; their sum is its numRowsDroppedByWatermark).
	LateLeftRows  int64        `json:"numLateLeftRows"`
	LateRightRows int64        `json:"numLateRightRows"`
	Gold          []GoldReport `json:"gold"`
	// MatchedRows are the pairs (left_semi: left rows) emitted; LeftUnmatchedRows and
	// RightUnmatchedRows the null-extended rows emitted for each side.
	MatchedRows        int64 `json:"numMatchedRows"`
	LeftUnmatchedRows  int64 `json:"numLeftUnmatchedRows"`
	RightUnmatchedRows int64 `json:"numRightUnmatchedRows"`
	// SourceWatermarksMs are each watermarked source's watermark after the run, by name.
	SourceWatermarksMs map[string]int64 `json:"sourceWatermarksMs,omitempty"`
}

// ErrJoinNotImplemented was returned by the stub of the join host; kept for callers that
// still test for it. Run no longer returns it.
var ErrJoinNotImplemented = errors.New("stream: joins are not implemented yet")

// JoinRunner is one stream-stream join query over the lake: the join query on the engine
// (engine.go). Not safe for concurrent use; two runners on one checkpoint agree through
// put-if-absent on offsets and txn on the tables.
type JoinRunner struct {
	e *engine
	q *joinQuery
}

// joinQuery is the join query as the engine drives it (query, engine.go).
type joinQuery struct {
	e    *engine
	j    *spec.Join
	spec join.Spec
	// delayMs is each side's watermark delay.
	delayMs [2]int64

	in           [2]*table.Table // the two silver tables
	out, quar    *table.Table
	golds, quars []*table.Table
	ready        bool // every table written exists

	jp   *joinPlan // nil: not resolved or not restored yet
	op   *join.Operator
	wm   *join.Watermarks
	aggs []*gold.Aggregation

	lastOutWM  int64 // the output watermark of the last batch (its aggregations' eviction)
	joinDeltas int   // join state deltas since the last full snapshot
	aggDeltas  int
	report     JoinReport
	aggBufs    []aggBuffers
	state      []byte // the operator's last encoded state, its buffer reused
	cur        *joinBatch
}

// joinPlan is the join resolved against the two silver schemas.
type joinPlan struct {
	schema  [2]*txlog.StructType
	cols    [2]int // number of columns per side
	evCol   [2]int
	keyCols [2][]int
	out     *join.OutputColumns
	qschema *txlog.StructType
	// agg is the joined table as the aggregations' input (plan.silver = the joined schema);
	// timeCols the column each aggregation's windows are over.
	agg      *plan
	timeCols []int
}

// State sections of the join query.
const (
	secJoinWM    = "join-wm"
	secJoin      = "join"
	secJoinDelta = "join-delta"
)

// NewJoin checks opts and returns a runner; the tables and the checkpoint are read by Run.
func NewJoin(opts JoinOptions) (*JoinRunner, error) {
	j := &opts.Join
	cfg, err := engineConfig{lake: opts.Lake, name: j.Name, prefix: "stream: join " + j.Name, identity: "join " + j.Name,
		checkpoint: j.Checkpoint, trigger: opts.Trigger, limit: j.Limit, state: j.State, clock: opts.Clock, logger: opts.Logger,
		listener: opts.Listener, planAtStart: true}.withDefaults(j.Trigger)
	if err != nil {
		return nil, err
	}
	r := &joinQuery{j: j}
	typ, err := join.ParseType(j.Type)
	if err != nil {
		return nil, fmt.Errorf("stream: join %s: %w", j.Name, err)
	}
	for _, k := range j.On {
		if k.Left == j.Left.EventTime || k.Right == j.Right.EventTime {
			// Spark would switch to its state key watermark (spec §3.3), which the operator
			// does not implement.
			return nil, fmt.Errorf("stream: join %s: on: %s = %s names a source's event-time column, which cannot be a join key: %w", j.Name, k.Left, k.Right, join.ErrBadSpec)
		}
	}
	r.spec = join.Spec{Type: typ, NumKeys: len(j.On), Condition: join.Between(j.Lower.Microseconds(), j.Upper.Microseconds()),
		LeftWatermark: j.Left.Watermark.Set, RightWatermark: j.Right.Watermark.Set}
	if err := r.spec.Validate(); err != nil {
		return nil, fmt.Errorf("stream: join %s: %w", j.Name, err)
	}
	r.delayMs = [2]int64{j.Left.Watermark.Delay.Milliseconds(), j.Right.Watermark.Delay.Milliseconds()}
	var inputs []input
	for s, in := range [2]spec.JoinInput{j.Left, j.Right} {
		src := source.New(objstore.WithPrefix(opts.Lake, in.Silver), source.Options{})
		inputs = append(inputs, input{src: src, path: in.Silver, label: "stream: join " + j.Name + ": " + join.Side(s).String() + " silver"})
		r.in[s] = cfg.open(in.Silver, opts.WriteOptions)
	}
	r.out, r.quar = cfg.open(j.Table, opts.WriteOptions), cfg.open(j.Quarantine, opts.WriteOptions)
	written := map[string]*table.Table{j.Table: r.out, j.Quarantine: r.quar}
	for _, g := range j.Gold {
		gt, qt := cfg.open(g.Table, opts.WriteOptions), cfg.open(g.Quarantine, opts.WriteOptions)
		r.golds, r.quars = append(r.golds, gt), append(r.quars, qt)
		written[g.Table], written[g.Quarantine] = gt, qt
	}
	r.e = newEngine(cfg, r, inputs, written)
	r.e.main = j.Table
	for i, g := range j.Gold {
		r.e.derived = append(r.e.derived, g.Table, g.Quarantine)
		r.e.golds = append(r.e.golds, goldAt{name: g.Name, path: g.Table, def: goldDefinition(&j.Gold[i], "").props()[PropDefinition]})
	}
	r.report = JoinReport{Name: j.Name, Gold: []GoldReport{}}
	return &JoinRunner{e: r.e, q: r}, nil
}

// Run runs the join's micro-batches as its trigger says: once (one batch over everything
// new, no no-data batch), available-now (everything both sides hold at the start, in batches
// of Limit a side, then the no-data batches the watermark asks for) or processing-time (until
// ctx is cancelled, which ends the run without an error at a batch boundary).
func (r *JoinRunner) Run(ctx context.Context) (JoinReport, error) {
	err := r.e.run(ctx)
	rep := &r.q.report
	rep.RunSummary = r.e.counts
	if r.q.wm != nil {
		// Also after a run of no batch: the watermarks restored from the checkpoint are the
		// sources' watermarks after it (the summary lost the field when batches was 0).
		rep.SourceWatermarksMs = r.q.sourceWatermarks()
	}
	return *rep, err
}

// ends are the two sides' offsets of an offsets entry, left then right.
func (r *joinQuery) ends(e *checkpoint.Offsets, n int64) ([]*source.Offset, error) {
	if len(e.Sources) != 2 {
		return nil, fmt.Errorf("%w: %s has %d source offsets, a join has 2 (is this a source query's checkpoint?)", checkpoint.ErrBad, checkpoint.OffsetsKey(n), len(e.Sources))
	}
	return []*source.Offset{e.Sources[0], e.Sources[1]}, nil
}

// restart takes the output watermark of the batch the join resumes after.
func (r *joinQuery) restart(committed *checkpoint.Offsets, _ *checkpoint.Commit, prev, _ *checkpoint.Offsets) {
	r.lastOutWM = 0
	for _, e := range []*checkpoint.Offsets{committed, prev} {
		if e != nil && e.OutputWatermarkMs != nil {
			r.lastOutWM = *e.OutputWatermarkMs
		}
	}
}

func (r *joinQuery) reset() { r.jp = nil }

func (r *joinQuery) watermarks() (late, evict int64) { return r.wm.Batch() }

func (r *joinQuery) idleAdvance() bool { return false }

func (r *joinQuery) rerun(*checkpoint.Offsets) error { return nil }

func (r *joinQuery) stop() {}

// offsets is offsets/N for a batch reading up to ends, with the watermarks it runs with.
func (r *joinQuery) offsets(ends []*source.Offset) *checkpoint.Offsets {
	_, evict := r.wm.Batch()
	out := r.outputWatermark(evict)
	return &checkpoint.Offsets{BatchWatermarkMs: evict, End: ends[0], Sources: ends, SourceWatermarksMs: r.sourceWatermarks(), OutputWatermarkMs: &out}
}

// committed takes the batch's output watermark and adds it to the report.
func (r *joinQuery) committed(b *batchRun, _ batchDone) {
	if b.entry.OutputWatermarkMs != nil {
		r.lastOutWM = *b.entry.OutputWatermarkMs
	}
	r.account(r.cur)
}

// sourceWatermarks are the watermarked sources' current watermarks, by source name.
func (r *joinQuery) sourceWatermarks() map[string]int64 {
	m := map[string]int64{}
	for s, in := range [2]spec.JoinInput{r.j.Left, r.j.Right} {
		if in.Watermark.Set {
			m[in.Source] = r.wm.Node(join.Side(s))
		}
	}
	return m
}

// outputWatermark is the watermark the join propagates to its aggregations for the join's
// watermark w (spec §3.4), never below 0 as every watermark.
func (r *joinQuery) outputWatermark(w int64) int64 {
	return max(0, r.spec.OutputWatermark(w))
}

// wantsNoData says whether a no-data batch must follow: the join evicts by a watermark that
// moved, or one of its aggregations needs the propagated watermark applied.
func (r *joinQuery) wantsNoData(newWM, evictWM int64) bool {
	if r.spec.ShouldRunNoDataBatch(newWM, evictWM) {
		return true
	}
	for _, ap := range r.jp.agg.aggs {
		if ap.agg.ShouldRunNoDataBatch(r.outputWatermark(newWM), r.outputWatermark(evictWM)) {
			return true
		}
	}
	return false
}
