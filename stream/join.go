package stream

// The join host: one stream-stream join query (spec.Join) over the silver tables of two
// sources, each read as a Delta stream (table/source) the way Runner reads bronze.
//
// A batch N, in order: read each side's silver files of its offset range (at most Limit a
// side); encode each row's join key (table's key encoding of the `on:` columns; a null part
// makes the key null, which never matches) and its payload (every silver column, join.AppendRow);
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
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/join"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/silver"
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
	Name    string `json:"name"`
	QueryID string `json:"queryId"`
	// Batches, LastBatch and WatermarkMs mean what they mean in Report.
	Batches     int   `json:"batches"`
	LastBatch   int64 `json:"lastBatchId"`
	WatermarkMs int64 `json:"watermarkMs"`
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

// JoinRunner is one stream-stream join query over the lake. Not safe for concurrent use; two
// runners on one checkpoint agree through put-if-absent on offsets and txn on the tables.
type JoinRunner struct {
	opts JoinOptions
	j    *spec.Join
	spec join.Spec
	// delayMs is each side's watermark delay.
	delayMs [2]int64

	ckpt           *checkpoint.Dir
	src            [2]*source.Source
	in             [2]*table.Table // the two silver tables
	out, quar      *table.Table
	golds, quars   []*table.Table
	queryID, runID string
	ready          bool // every table written exists
	// byPath are the tables the join writes by their path in the lake, paths the reverse:
	// the names commits/N records them under (identity.go).
	byPath map[string]*table.Table
	paths  map[*table.Table]string

	plan *joinPlan // nil: not resolved or not restored yet
	op   *join.Operator
	wm   *join.Watermarks
	aggs []*gold.Aggregation

	pos         joinPosition
	joinDeltas  int // join state deltas since the last full snapshot
	aggDeltas   int
	restoring   map[int64]map[string][]byte
	prevTrigger time.Time
	report      JoinReport
	aggBufs     []aggBuffers
	state       []byte // the operator's last encoded state, its buffer reused
}

// joinPosition is where the join stands in its checkpoint.
type joinPosition struct {
	started    bool
	nextBatch  int64
	lastEnd    [2]*source.Offset
	lastOutWM  int64 // the output watermark of the last batch (its aggregations' eviction)
	pending    *checkpoint.Offsets
	needNoData bool
	// tables is what the last commits/N recorded of the tables written; recorded the highest
	// batch with an offsets file (identity.go, Runner's position).
	tables   map[string]checkpoint.TableMark
	recorded int64
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
	if opts.Lake == nil {
		return nil, errors.New("stream: Lake is required")
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Trigger.Kind == "" {
		opts.Trigger = opts.Join.Trigger
	}
	r := &JoinRunner{opts: opts, runID: uuid.NewString()}
	j := &r.opts.Join
	r.j = j
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
	open := func(p string) *table.Table {
		return table.Open(objstore.WithPrefix(opts.Lake, p), table.Options{Clock: opts.Clock, Write: opts.WriteOptions})
	}
	r.ckpt = checkpoint.Open(objstore.WithPrefix(opts.Lake, j.Checkpoint))
	for s, in := range [2]spec.JoinInput{j.Left, j.Right} {
		r.src[s] = source.New(objstore.WithPrefix(opts.Lake, in.Silver), source.Options{})
		r.in[s] = open(in.Silver)
	}
	r.out, r.quar = open(j.Table), open(j.Quarantine)
	for _, g := range j.Gold {
		r.golds = append(r.golds, open(g.Table))
		r.quars = append(r.quars, open(g.Quarantine))
	}
	r.byPath = map[string]*table.Table{j.Table: r.out, j.Quarantine: r.quar}
	for i, g := range j.Gold {
		r.byPath[g.Table], r.byPath[g.Quarantine] = r.golds[i], r.quars[i]
	}
	r.paths = map[*table.Table]string{}
	for p, t := range r.byPath {
		r.paths[t] = p
	}
	r.report = JoinReport{Name: j.Name, LastBatch: -1, Gold: []GoldReport{}}
	return r, nil
}

// Run runs the join's micro-batches as its trigger says: once (one batch over everything
// new, no no-data batch), available-now (everything both sides hold at the start, in batches
// of Limit a side, then the no-data batches the watermark asks for) or processing-time (until
// ctx is cancelled, which ends the run without an error at a batch boundary).
func (r *JoinRunner) Run(ctx context.Context) (rep JoinReport, err error) {
	defer func() {
		if err != nil {
			// The operators may hold a half-run batch: the next Run reloads them from the
			// checkpoint, as a restarted process would.
			r.pos.started, r.plan, r.pos.pending = false, nil, nil
		}
	}()
	if err := r.start(ctx); err != nil {
		return r.report, err
	}
	if ok, err := r.ensurePlan(ctx); err != nil || !ok {
		return r.report, err
	}
	once := func(ctx context.Context) error {
		if r.pos.pending != nil {
			return r.runPending(ctx)
		}
		until, err := r.latest(ctx)
		if err != nil {
			return err
		}
		_, err = r.step(ctx, until, source.ReadLimit{}, false)
		return err
	}
	err = runTrigger(ctx, r.opts.Trigger, r.opts.Clock, once, r.drain)
	if r.wm != nil {
		// Also after a run of no batch: the watermarks restored from the checkpoint are the
		// sources' watermarks after it (the summary lost the field when batches was 0).
		r.report.SourceWatermarksMs = r.sourceWatermarks()
	}
	return r.report, err
}

// drain fixes both sides' latest versions and runs batches until nothing is left to do.
func (r *JoinRunner) drain(ctx context.Context) error {
	for r.pos.pending != nil {
		if err := r.runPending(ctx); err != nil {
			return err
		}
	}
	until, err := r.latest(ctx)
	if err != nil {
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		ran, err := r.step(ctx, until, r.j.Limit, true)
		if err != nil || !ran {
			return err
		}
	}
}

func (r *JoinRunner) latest(ctx context.Context) ([2]int64, error) {
	var until [2]int64
	for s := range r.src {
		v, _, err := r.src[s].Latest(ctx)
		if err != nil {
			return until, fmt.Errorf("stream: join %s: %s silver latest version: %w", r.j.Name, join.Side(s), err)
		}
		until[s] = v
	}
	return until, nil
}

// step runs the next batch if either side has new data (or, when noData, a no-data batch the
// watermark asks for) and reports whether it ran one.
func (r *JoinRunner) step(ctx context.Context, until [2]int64, limit source.ReadLimit, noData bool) (bool, error) {
	var files [2][]source.IndexedFile
	ends := r.pos.lastEnd
	moved := false
	for s := range r.src {
		if until[s] < 0 {
			continue
		}
		fs, end, err := r.src[s].NextBatch(ctx, r.pos.lastEnd[s], until[s], limit)
		if err != nil {
			return false, fmt.Errorf("stream: join %s: %s silver: %w", r.j.Name, join.Side(s), err)
		}
		if r.pos.lastEnd[s] == nil && len(fs) == 0 {
			continue // an empty table: Delta's source has no offset to start from yet
		}
		files[s], ends[s] = fs, &end
		moved = moved || r.pos.lastEnd[s] == nil || *r.pos.lastEnd[s] != end
	}
	if !moved && !(noData && r.pos.needNoData) {
		return false, nil
	}
	n := r.pos.nextBatch
	entry := r.offsetsEntry(ends)
	got, err := r.ckpt.WriteOffsets(ctx, n, entry)
	if err != nil {
		return false, err
	}
	if !sameJoinEntry(got, entry) {
		// Another run wrote this batch's WAL first: run what it says.
		r.pos.pending = got
		return true, r.runPending(ctx)
	}
	return true, r.runBatch(ctx, n, got, files)
}

// offsetsEntry is offsets/N for a batch reading up to ends, with the watermarks it runs with.
func (r *JoinRunner) offsetsEntry(ends [2]*source.Offset) *checkpoint.Offsets {
	_, evict := r.wm.Batch()
	out := r.outputWatermark(evict)
	return &checkpoint.Offsets{BatchWatermarkMs: evict, BatchTimestampMs: r.opts.Clock().UnixMilli(), Conf: queryConf(),
		End: ends[0], Sources: ends[:], SourceWatermarksMs: r.sourceWatermarks(), OutputWatermarkMs: &out}
}

func sameJoinEntry(a, b *checkpoint.Offsets) bool {
	if a.BatchWatermarkMs != b.BatchWatermarkMs || len(a.Sources) != len(b.Sources) {
		return false
	}
	for i := range a.Sources {
		x, y := a.Sources[i], b.Sources[i]
		if (x == nil) != (y == nil) || x != nil && *x != *y {
			return false
		}
	}
	return true
}

// sourceWatermarks are the watermarked sources' current watermarks, by source name.
func (r *JoinRunner) sourceWatermarks() map[string]int64 {
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
func (r *JoinRunner) outputWatermark(w int64) int64 {
	return max(0, r.spec.OutputWatermark(w))
}

// runPending re-runs the uncommitted batch with exactly the files of its recorded offsets.
func (r *JoinRunner) runPending(ctx context.Context) error {
	entry := r.pos.pending
	if len(entry.Sources) != 2 {
		return fmt.Errorf("%w: %s has %d source offsets, a join has 2", checkpoint.ErrBad, checkpoint.OffsetsKey(r.pos.nextBatch), len(entry.Sources))
	}
	var files [2][]source.IndexedFile
	for s := range r.src {
		var err error
		if files[s], err = filesThrough(ctx, r.src[s], r.pos.lastEnd[s], entry.Sources[s]); err != nil {
			return fmt.Errorf("stream: join %s: %s silver: %w", r.j.Name, join.Side(s), err)
		}
	}
	r.pos.pending = nil
	if err := r.runBatch(ctx, r.pos.nextBatch, entry, files); err != nil {
		return err
	}
	if r.pos.nextBatch > r.pos.recorded {
		return nil
	}
	// A rolled-back checkpoint: the next batch runs as recorded too.
	var err error
	r.pos.pending, err = r.ckpt.ReadOffsets(ctx, r.pos.nextBatch)
	return err
}

// start reads the checkpoint: the query id, the last committed batch and an uncommitted batch
// to re-run. The state is restored by ensurePlan, from the version this leaves in nextBatch.
func (r *JoinRunner) start(ctx context.Context) error {
	if r.pos.started {
		return nil
	}
	h, err := r.ckpt.ReadHead(ctx)
	if err != nil {
		return fmt.Errorf("stream: join %s: checkpoint %s: %w", r.j.Name, r.j.Checkpoint, err)
	}
	r.queryID, r.report.QueryID = h.QueryID, h.QueryID
	if err := r.checkIdentity(ctx, h); err != nil {
		return err
	}
	r.pos = joinPosition{recorded: h.Recorded}
	if h.Committed != nil {
		r.pos.tables = h.Committed.Tables
	}
	ends := func(e *checkpoint.Offsets, n int64) ([2]*source.Offset, error) {
		if len(e.Sources) != 2 {
			return [2]*source.Offset{}, fmt.Errorf("%w: %s has %d source offsets, a join has 2 (is this a source query's checkpoint?)", checkpoint.ErrBad, checkpoint.OffsetsKey(n), len(e.Sources))
		}
		return [2]*source.Offset{e.Sources[0], e.Sources[1]}, nil
	}
	outWM := func(e *checkpoint.Offsets) int64 {
		if e.OutputWatermarkMs != nil {
			return *e.OutputWatermarkMs
		}
		return 0
	}
	switch e, c := h.Entry, h.Commit; {
	case h.Last < 0:
	case c != nil:
		if r.pos.lastEnd, err = ends(e, h.Last); err != nil {
			return err
		}
		r.pos.nextBatch, r.pos.lastOutWM = h.Last+1, outWM(e)
		r.report.LastBatch, r.report.WatermarkMs = h.Last, c.NextBatchWatermarkMs
	default:
		if _, err := ends(e, h.Last); err != nil {
			return err
		}
		if prev := h.Prev; prev != nil {
			if r.pos.lastEnd, err = ends(prev, h.Last-1); err != nil {
				return err
			}
			r.pos.lastOutWM = outWM(prev)
		}
		r.pos.pending, r.pos.nextBatch = e, h.Last
		r.report.LastBatch, r.report.WatermarkMs = h.Last-1, e.BatchWatermarkMs
	}
	r.pos.started = true
	return nil
}

// checkIdentity refuses to run when a silver input is behind the offsets the checkpoint read
// it to, or a table the join writes is behind what the last commit recorded (identity.go).
func (r *JoinRunner) checkIdentity(ctx context.Context, h checkpoint.Head) error {
	e, n, err := furthestRead(ctx, r.ckpt, h)
	if err != nil {
		return err
	}
	if e != nil && len(e.Sources) == 2 {
		for s, in := range [2]spec.JoinInput{r.j.Left, r.j.Right} {
			if err := checkRead(ctx, in.Silver, r.j.Checkpoint, checkpoint.OffsetsKey(n), r.src[s], e.Sources[s]); err != nil {
				return fmt.Errorf("join %s: %w", r.j.Name, err)
			}
		}
	}
	if h.Committed == nil {
		return nil
	}
	if err := checkWritten(ctx, r.j.Checkpoint, h.QueryID, h.Committed.Tables, r.byPath); err != nil {
		return fmt.Errorf("join %s: %w", r.j.Name, err)
	}
	return nil
}

// ensurePlan resolves the join against the two silver schemas and restores the operator, the
// watermarks and the aggregations from state version nextBatch. It reports false, without an
// error, while a silver table does not exist yet: it has no schema to plan with. An empty silver
// table is "no rows yet" and a batch runs for the other side's rows, as in Spark, so jobs
// creates a missing input's tables (as init does) before it runs a join.
func (r *JoinRunner) ensurePlan(ctx context.Context) (bool, error) {
	if r.plan != nil {
		return true, nil
	}
	var schemas [2]*txlog.StructType
	for s := range r.in {
		snap, err := r.in[s].Log().Snapshot(ctx)
		if errors.Is(err, txlog.ErrTableNotFound) {
			r.opts.Logger.Info("join waits for its sources' silver tables", "join", r.j.Name, "missing", []string{r.j.Left.Silver, r.j.Right.Silver}[s])
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("stream: join %s: %s silver table: %w", r.j.Name, join.Side(s), err)
		}
		if schemas[s], err = snap.Schema(); err != nil {
			return false, fmt.Errorf("stream: join %s: %s silver schema: %w", r.j.Name, join.Side(s), err)
		}
	}
	p, err := newJoinPlan(r.j, r.spec, schemas)
	if err != nil {
		return false, err
	}
	if err := checkDefinitions(ctx, joinDefinedTables(r.j, r.out, r.golds)); err != nil {
		return false, err
	}
	if err := r.checkOutputColumns(ctx, p); err != nil {
		return false, err
	}
	r.restoring = map[int64]map[string][]byte{}
	defer func() { r.restoring = nil }()
	v := r.pos.nextBatch
	sections, err := r.stateSections(ctx, v)
	if err != nil {
		return false, err
	}
	var wm *join.Watermarks
	if sections == nil {
		wm, err = join.NewWatermarks(&r.spec, r.delayMs[0], r.delayMs[1])
	} else if s, ok := sections[secJoinWM]; ok {
		wm, err = join.RestoreWatermarks(&r.spec, r.delayMs[0], r.delayMs[1], s)
	} else {
		err = errors.New("no join-wm section")
	}
	if err != nil {
		return false, fmt.Errorf("%w: %s: %v", checkpoint.ErrBad, checkpoint.StateKey(v), err)
	}
	// The watermarks must be the ones the checkpoint says the next batch runs with.
	_, evict := wm.Batch()
	if want := r.report.WatermarkMs; (r.pos.pending != nil || v > 0) && evict != want {
		return false, fmt.Errorf("%w: %s has watermark %d ms, the offsets and commits logs give %d", checkpoint.ErrBad, checkpoint.StateKey(v), evict, want)
	}
	op, deltas, err := r.restoreOperator(ctx, v, sections)
	if err != nil {
		return false, err
	}
	aggs := make([]*gold.Aggregation, len(p.agg.aggs))
	r.aggDeltas = 0
	for i, ap := range p.agg.aggs {
		var d int
		if aggs[i], d, err = restoreAgg(ctx, ap, v, sections, r.stateSections); err != nil {
			return false, fmt.Errorf("stream: join %s gold %s state: %w", r.j.Name, ap.cfg.Name, err)
		}
		r.aggDeltas = max(r.aggDeltas, d)
	}
	r.plan, r.op, r.wm, r.aggs, r.joinDeltas = p, op, wm, aggs, deltas
	r.aggBufs = make([]aggBuffers, len(aggs))
	if r.pos.pending == nil {
		late, evict := wm.Batch()
		r.pos.needNoData = r.wantsNoData(evict, late)
	}
	return true, nil
}

// restoreOperator rebuilds the join state of version v: its nearest full snapshot at or
// before v, then every later delta in order. It returns the number of deltas replayed.
func (r *JoinRunner) restoreOperator(ctx context.Context, v int64, sections map[string][]byte) (*join.Operator, int, error) {
	var deltas [][]byte
	for {
		var op *join.Operator
		var err error
		if sections == nil { // version 0: the empty state
			op, err = join.New(r.spec)
		} else if s, ok := sections[secJoin]; ok {
			op, err = join.Restore(r.spec, s)
		}
		if err != nil {
			return nil, 0, fmt.Errorf("stream: join %s state %s: %w", r.j.Name, checkpoint.StateKey(v), err)
		}
		if op != nil {
			for i := len(deltas) - 1; i >= 0; i-- {
				if err := op.ApplyDelta(deltas[i]); err != nil {
					return nil, 0, fmt.Errorf("stream: join %s state %s: %w", r.j.Name, checkpoint.StateKey(v+int64(len(deltas)-i)), err)
				}
			}
			return op, len(deltas), nil
		}
		s, ok := sections[secJoinDelta]
		if !ok || v <= 0 {
			return nil, 0, fmt.Errorf("%w: %s has no join state", checkpoint.ErrBad, checkpoint.StateKey(v))
		}
		deltas = append(deltas, s)
		v--
		if sections, err = r.stateSections(ctx, v); err != nil {
			return nil, 0, err
		}
	}
}

// stateSections reads the sections of state version v (nil for version 0, the empty state),
// each version once during a restore.
func (r *JoinRunner) stateSections(ctx context.Context, v int64) (map[string][]byte, error) {
	if v == 0 {
		return nil, nil
	}
	if s, ok := r.restoring[v]; ok {
		return s, nil
	}
	s, err := r.ckpt.ReadState(ctx, v)
	if err == nil && r.restoring != nil {
		r.restoring[v] = s
	}
	return s, err
}

// wantsNoData says whether a no-data batch must follow: the join evicts by a watermark that
// moved, or one of its aggregations needs the propagated watermark applied.
func (r *JoinRunner) wantsNoData(newWM, evictWM int64) bool {
	if r.spec.ShouldRunNoDataBatch(newWM, evictWM) {
		return true
	}
	for _, ap := range r.plan.agg.aggs {
		if ap.agg.ShouldRunNoDataBatch(r.outputWatermark(newWM), r.outputWatermark(evictWM)) {
			return true
		}
	}
	return false
}

// newJoinPlan resolves the join's columns in the two silver schemas and its aggregations in
// the joined schema.
func newJoinPlan(j *spec.Join, js join.Spec, schemas [2]*txlog.StructType) (*joinPlan, error) {
	p := &joinPlan{schema: schemas}
	inputs := [2]spec.JoinInput{j.Left, j.Right}
	for s, in := range inputs {
		sc := schemas[s]
		p.cols[s] = len(sc.Fields)
		idx := map[string]int{}
		for i, f := range sc.Fields {
			idx[f.Name] = i
		}
		col := func(what, name string) (int, error) {
			i, ok := idx[name]
			if !ok {
				return 0, fmt.Errorf("stream: join %s: %s column %q is not in %s's silver table (%s)", j.Name, what, name, in.Source, in.Silver)
			}
			return i, nil
		}
		var err error
		if p.evCol[s], err = col(join.Side(s).String()+" event time", in.EventTime); err != nil {
			return nil, err
		}
		if k, _ := pq.KindOf(sc.Fields[p.evCol[s]].Type); k != pq.KindInt64 {
			return nil, fmt.Errorf("stream: join %s: %s event time column %q is %s, want timestamp", j.Name, in.Source, in.EventTime, typeName(sc.Fields[p.evCol[s]].Type))
		}
		for _, k := range j.On {
			name := k.Left
			if s == 1 {
				name = k.Right
			}
			i, err := col("on:", name)
			if err != nil {
				return nil, err
			}
			kind, err := pq.KindOf(sc.Fields[i].Type)
			if err != nil {
				return nil, fmt.Errorf("stream: join %s: column %s: %w", j.Name, name, err)
			}
			if err := keyable(name, kind); err != nil {
				return nil, fmt.Errorf("stream: join %s: %w", j.Name, err)
			}
			p.keyCols[s] = append(p.keyCols[s], i)
		}
	}
	var err error
	if p.out, err = join.Output(js.Type, schemas[0], schemas[1], j.Right.Source); err != nil {
		return nil, fmt.Errorf("stream: join %s: %w", j.Name, err)
	}
	if p.qschema, err = join.QuarantineSchema(schemas[0], schemas[1], j.Right.Source); err != nil {
		return nil, fmt.Errorf("stream: join %s: %w", j.Name, err)
	}
	// The aggregations read the joined table as a source query reads silver.
	ag := &plan{silver: p.out.Schema}
	index := map[string]int{}
	for i, f := range ag.silver.Fields {
		k, err := pq.KindOf(f.Type)
		if err != nil {
			return nil, fmt.Errorf("stream: join %s: column %s: %w", j.Name, f.Name, err)
		}
		ag.kinds = append(ag.kinds, k)
		index[f.Name] = i
	}
	col := func(what, name string) (int, error) {
		i, ok := index[name]
		if !ok {
			return 0, fmt.Errorf("stream: join %s: %s column %q is not in the joined table's schema", j.Name, what, name)
		}
		return i, nil
	}
	for gi := range j.Gold {
		g := &j.Gold[gi]
		ap, err := ag.newAggPlan(g, col, !js.HasStateWatermark())
		if err != nil {
			return nil, err
		}
		tc := g.TimeColumn
		if tc == "" {
			tc = j.Left.EventTime // the left columns keep their names in the joined table
		}
		i, err := col("gold "+g.Name+" time_column", tc)
		if err != nil {
			return nil, err
		}
		if ag.kinds[i] != pq.KindInt64 || typeName(ag.silver.Fields[i].Type) == txlog.TypeLong {
			return nil, fmt.Errorf("stream: join %s: gold %s time_column %q is %s, want timestamp", j.Name, g.Name, tc, typeName(ag.silver.Fields[i].Type))
		}
		ag.aggs = append(ag.aggs, ap)
		p.timeCols = append(p.timeCols, i)
	}
	p.agg = ag
	return p, nil
}

// ensureTables creates the joined table, the join quarantine and the aggregations' tables
// that do not exist yet, once per runner.
func (r *JoinRunner) ensureTables(ctx context.Context) error {
	if r.ready {
		return nil
	}
	defs := joinDefinedTables(r.j, r.out, r.golds)
	ts := []outTable{{r.out, r.plan.out.Schema, r.j.Table, false, defs[0].def.props()}, {r.quar, r.plan.qschema, r.j.Quarantine, false, nil}}
	for i, ap := range r.plan.agg.aggs {
		ts = append(ts, outTable{r.quars[i], ap.qschema, ap.cfg.Quarantine, false, nil}, outTable{r.golds[i], ap.schema, ap.cfg.Table, false, defs[1+i].def.props()})
	}
	if err := createMissing(ctx, ts); err != nil {
		return fmt.Errorf("stream: join %s: %w", r.j.Name, err)
	}
	names := []string{"join " + r.j.Name + " (table " + r.j.Table + ")", "join quarantine " + r.j.Quarantine}
	kinds := []txlog.WriteKind{txlog.WriteAppend, txlog.WriteAppend}
	for _, ap := range r.plan.agg.aggs {
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
	for i, ap := range r.plan.agg.aggs {
		if err := addExactColumns(ctx, r.golds[i], ap); err != nil {
			return fmt.Errorf("stream: join %s: %w", r.j.Name, err)
		}
	}
	r.ready = true
	return nil
}

// checkOutputColumns refuses a joined table that exists without columns the join's output now
// has: a source's silver gained columns (schema evolution). The join's state holds rows of
// the old width and its joined table and quarantine were written without the columns, so the
// join cannot take them where it stands; it says so rather than decode state it cannot.
func (r *JoinRunner) checkOutputColumns(ctx context.Context, p *joinPlan) error {
	snap, err := r.out.Log().Snapshot(ctx)
	if errors.Is(err, txlog.ErrTableNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stream: join %s: joined table %s: %w", r.j.Name, r.j.Table, err)
	}
	have, err := snap.Schema()
	if err != nil {
		return fmt.Errorf("stream: join %s: joined table %s: %w", r.j.Name, r.j.Table, err)
	}
	d := table.DiffSchema(have, p.out.Schema)
	if len(d.Added) == 0 && d.Compatible() {
		return nil
	}
	var what []string
	for _, f := range d.Added {
		what = append(what, f.Name+" is new")
	}
	if !d.Compatible() {
		what = append(what, d.Error())
	}
	return fmt.Errorf("%w: join %s: the columns of its sources' silver tables (%s, %s) changed since the joined table %s was created: %s. "+
		"A join does not evolve its schema in place (its state holds rows of the old columns). Ways out: a full refresh of the join "+
		"(delete %s, %s, the join's gold and quarantine tables and its checkpoint %s; the next run joins both silver tables from the start), "+
		"or a new join name with new tables and checkpoint. See docs/schema-evolution.md",
		ErrDefinitionChanged, r.j.Name, r.j.Left.Silver, r.j.Right.Silver, r.j.Table, strings.Join(what, "; "), r.j.Table, r.j.Quarantine, r.j.Checkpoint)
}

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
	getMs    int64
	addMs    int64
}

// runBatch runs batch n over files with the watermarks restored from the checkpoint and
// entry's timestamp, then writes state n+1, commits/n and the progress.
func (r *JoinRunner) runBatch(ctx context.Context, n int64, entry *checkpoint.Offsets, files [2][]source.IndexedFile) error {
	t0 := time.Now()
	late, evict := r.wm.Batch()
	if entry.BatchWatermarkMs != evict {
		return fmt.Errorf("%w: %s has batchWatermarkMs %d, the join's state gives %d", checkpoint.ErrBad, checkpoint.OffsetsKey(n), entry.BatchWatermarkMs, evict)
	}
	jb := &joinBatch{}
	var inputs [2]*join.Input
	for s := range r.in {
		bs, _, missing, cause, err := readTableFiles(ctx, r.in[s], join.Side(s).String()+" silver", files[s], r.plan.schema[s])
		if len(missing) > 0 {
			return fmt.Errorf("stream: join %s: %d files of %s the join has not read yet are gone (a vacuum of that silver table ran while the join lagged behind): %w", r.j.Name, len(missing), []string{r.j.Left.Silver, r.j.Right.Silver}[s], cause)
		}
		if err != nil {
			return fmt.Errorf("stream: join %s: %w", r.j.Name, err)
		}
		jb.in[s] = bs
		if inputs[s], err = r.encodeSide(join.Side(s), bs, jb); err != nil {
			return err
		}
	}
	tRead := time.Now()
	for s := range inputs {
		r.wm.ObserveInput(join.Side(s), inputs[s])
	}
	jb.next = r.wm.EndBatch()
	res, err := r.op.ProcessBatch(inputs[0], inputs[1], late, evict)
	if err != nil {
		return fmt.Errorf("stream: join %s batch %d: %w", r.j.Name, n, err)
	}
	jb.res = res
	for s := range jb.stateMem {
		jb.stateMem[s] = r.op.StateBytes(join.Side(s))
		jb.stateRow[s] = int64(r.op.StateRows(join.Side(s)))
	}
	out, err := r.outputBatch(res)
	if err != nil {
		return err
	}
	jb.outRows = int64(out.Len())
	if err := r.ensureTables(ctx); err != nil {
		return err
	}
	txn := &table.AppTxn{AppID: r.queryID, Version: n}
	marks := newTableMarks(n, r.paths)
	sections := map[string][]byte{}
	order := []string{secJoinWM}
	if sections[secJoinWM], err = r.wm.AppendBinary(nil); err != nil {
		return err
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
		return fmt.Errorf("stream: join %s state: %w", r.j.Name, err)
	}
	if out.Len() > 0 {
		wr, err := write(ctx, r.out, []*pq.Batch{out}, txn, false)
		if err != nil {
			return fmt.Errorf("stream: join %s: joined table: %w", r.j.Name, err)
		}
		marks.wrote(r.out, wr.Version, wr.Skipped)
	}
	if err := r.quarantine(ctx, res, inputs, late, n, txn, marks); err != nil {
		return err
	}
	if err := r.runAggs(ctx, n, entry, out, txn, marks, jb); err != nil {
		return err
	}
	order = aggSections(sections, order, r.plan.agg.aggs, jb.aggs)
	if err := r.ckpt.WriteState(ctx, n+1, sections, order); err != nil {
		return err
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
	jb.getMs = tRead.Sub(t0).Milliseconds()
	jb.addMs = time.Since(tRead).Milliseconds()
	tCommit := time.Now()
	tables := marks.over(r.pos.tables)
	if err := r.ckpt.WriteCommitRecord(ctx, n, checkpoint.Commit{NextBatchWatermarkMs: jb.next, Tables: tables}); err != nil {
		return err
	}
	commitMs := time.Since(tCommit).Milliseconds()
	r.pos.tables = tables
	start := r.pos.lastEnd
	r.pos.lastEnd, r.pos.nextBatch = [2]*source.Offset{entry.Sources[0], entry.Sources[1]}, n+1
	if entry.OutputWatermarkMs != nil {
		r.pos.lastOutWM = *entry.OutputWatermarkMs
	}
	r.pos.needNoData = r.wantsNoData(jb.next, evict)
	r.account(n, jb)
	p := r.progress(n, entry, start, jb, timings{commitMs: commitMs, total: time.Since(t0)})
	if err := publishProgress(ctx, r.ckpt, r.opts.Logger, r.opts.Listener, n, p); err != nil {
		return err
	}
	retain := int64(r.j.State.MinBatchesToRetain)
	if retain <= 0 {
		retain = 100
	}
	// A state version may need the deltas back to its last full snapshot.
	retain = max(retain, int64(r.j.State.MinDeltasForSnapshot)+1)
	if old := n - retain; old >= 0 {
		if err := r.ckpt.Cleanup(ctx, old); err != nil {
			r.opts.Logger.Warn("stream: join checkpoint cleanup failed", "join", r.j.Name, "batch", old, "err", err)
		}
	}
	return nil
}

// encodeSide builds one side's operator input from its silver batches: event times, join keys
// (null when a part is null) and row payloads.
func (r *JoinRunner) encodeSide(side join.Side, bs []*pq.Batch, jb *joinBatch) (*join.Input, error) {
	p := r.plan
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
			in.Rows.Data = join.AppendRow(in.Rows.Data, b.Columns, i)
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
func (r *JoinRunner) outputBatch(res *join.Result) (*pq.Batch, error) {
	b, err := pq.NewBatch(r.plan.out.Schema)
	if err != nil {
		return nil, err
	}
	nl := r.plan.cols[0]
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

func (r *JoinRunner) fillSide(cols []*pq.Column, has bool, payload []byte) error {
	if !has {
		appendNulls(cols)
		return nil
	}
	rest, err := join.DecodeRow(cols, payload)
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%w: %d bytes left over", join.ErrBadRow, len(rest))
	}
	if err != nil {
		return fmt.Errorf("stream: join %s: %w", r.j.Name, err)
	}
	return nil
}

// quarantine appends the batch's late rows to the join quarantine: each with its side's
// columns, the other side's null, its side, the late watermark, the batch and the query.
func (r *JoinRunner) quarantine(ctx context.Context, res *join.Result, inputs [2]*join.Input, late, n int64, txn *table.AppTxn, marks *tableMarks) error {
	if len(res.Late[0])+len(res.Late[1]) == 0 {
		return nil
	}
	q, err := pq.NewBatch(r.plan.qschema)
	if err != nil {
		return err
	}
	nl, nr := r.plan.cols[0], r.plan.cols[1]
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
			lw.AppendInt64(late * 1000)
			bid.AppendInt64(n)
			qid.AppendString(r.queryID)
		}
	}
	wr, err := write(ctx, r.quar, []*pq.Batch{q}, txn, false)
	if err != nil {
		return fmt.Errorf("stream: join %s: quarantine: %w", r.j.Name, err)
	}
	marks.wrote(r.quar, wr.Version, wr.Skipped)
	return nil
}

// runAggs runs each aggregation over the join on the batch's joined rows, with the output
// watermarks of the previous batch (late) and this one (eviction).
func (r *JoinRunner) runAggs(ctx context.Context, n int64, entry *checkpoint.Offsets, out *pq.Batch, txn *table.AppTxn, marks *tableMarks, jb *joinBatch) error {
	aps := r.plan.agg.aggs
	jb.aggs = make([]aggStats, len(aps))
	if len(aps) == 0 {
		return nil
	}
	evict := r.outputWatermark(entry.BatchWatermarkMs)
	if entry.OutputWatermarkMs != nil {
		evict = *entry.OutputWatermarkMs
	}
	b := &batchRun{n: n, entry: entry, late: min(r.pos.lastOutWM, evict), evict: evict, txn: txn, marks: marks}
	rows := &silver.Rows{Batches: []*pq.Batch{out}}
	for i := range out.Len() {
		rows.Batch = append(rows.Batch, 0)
		rows.Row = append(rows.Row, int32(i))
	}
	full := r.aggDeltas+1 >= r.j.State.MinDeltasForSnapshot
	for ai, ap := range aps {
		tc := out.Columns[r.plan.timeCols[ai]]
		var sel []int32
		var evt []int64
		for i := range out.Len() {
			if !tc.IsNull(i) {
				sel = append(sel, int32(i))
				evt = append(evt, tc.Int64[i])
			}
		}
		a := &aggRun{ap: ap, op: r.aggs[ai], ab: &r.aggBufs[ai], schema: r.plan.agg.silver, kinds: r.plan.agg.kinds,
			rows: rows, sel: sel, selEvt: evt, gold: r.golds[ai], quar: r.quars[ai], full: full,
			queryID: r.queryID, logger: r.opts.Logger}
		st, err := a.run(ctx, b, func(state, delta []byte) {})
		if err != nil {
			return fmt.Errorf("stream: join %s: %w", r.j.Name, err)
		}
		jb.aggs[ai] = st
	}
	return nil
}

func (r *JoinRunner) account(n int64, jb *joinBatch) {
	rep := &r.report
	rep.Batches++
	rep.LastBatch = n
	rep.WatermarkMs = jb.next
	rep.LeftRows += jb.rows[0]
	rep.RightRows += jb.rows[1]
	rep.OutputRows += jb.outRows
	rep.LateLeftRows += int64(len(jb.res.Late[0]))
	rep.LateRightRows += int64(len(jb.res.Late[1]))
	rep.MatchedRows += jb.res.Matched
	rep.LeftUnmatchedRows += jb.res.Unmatched[0]
	rep.RightUnmatchedRows += jb.res.Unmatched[1]
	rep.SourceWatermarksMs = r.sourceWatermarks()
	if len(rep.Gold) == 0 {
		for _, ap := range r.plan.agg.aggs {
			rep.Gold = append(rep.Gold, GoldReport{Name: ap.cfg.Name})
		}
	}
	for i, a := range jb.aggs {
		g := &rep.Gold[i]
		g.RowsOut += a.outputRows
		g.LateRows += a.lateRows
		g.LateGroups += a.res.NumRowsDroppedByWatermark
		g.SessionCorrections += a.res.CustomMetrics[CustomMetricSessionCorrections]
	}
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

// progress builds batch n's StreamingQueryProgress: Spark's shape with the two silver tables
// as sources, a symmetricHashJoin state operator (then each aggregation's) and every
// source's watermark in eventTime ("watermark.<source>").
func (r *JoinRunner) progress(n int64, entry *checkpoint.Offsets, start [2]*source.Offset, jb *joinBatch, tm timings) *Progress {
	res := jb.res
	trigger := time.UnixMilli(entry.BatchTimestampMs).UTC()
	prev := r.prevTrigger
	r.prevTrigger = trigger
	rows := jb.rows[0] + jb.rows[1]
	inRate := InputRowsPerSecond(rows, prev, trigger)
	procRate := ProcessedRowsPerSecond(rows, tm.total)
	p := &Progress{
		ID: r.queryID, RunID: r.runID, Name: r.j.Name, Timestamp: trigger, BatchID: n,
		NumInputRows: rows, InputRowsPerSecond: inRate, ProcessedRowsPerSecond: procRate,
		DurationMs: map[string]int64{"addBatch": jb.addMs, "commitOffsets": tm.commitMs, "getBatch": jb.getMs,
			"latestOffset": 0, "queryPlanning": 0, "triggerExecution": tm.total.Milliseconds(), "walCommit": tm.walMs},
		EventTime: EventTimeProgress(jb.evStats, entry.BatchWatermarkMs, r.spec.LeftWatermark || r.spec.RightWatermark),
	}
	for name, wm := range entry.SourceWatermarksMs {
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
	for _, a := range jb.aggs {
		p.StateOperators = append(p.StateOperators, a.res)
	}
	for s, in := range [2]spec.JoinInput{r.j.Left, r.j.Right} {
		sp := SourceProgress{Description: "DeltaSource[" + in.Silver + "]", NumInputRows: jb.rows[s],
			InputRowsPerSecond: InputRowsPerSecond(jb.rows[s], prev, trigger), ProcessedRowsPerSecond: ProcessedRowsPerSecond(jb.rows[s], tm.total)}
		if start[s] != nil {
			sp.StartOffset = OffsetJSON(start[s].String())
		}
		if e := entry.Sources[s]; e != nil {
			sp.EndOffset = OffsetJSON(e.String())
		}
		p.Sources = append(p.Sources, sp)
	}
	metrics := map[string]string{
		"numOutputRows":                 strconv.FormatInt(jb.outRows, 10),
		CustomMetricLateRowsQuarantined: strconv.FormatInt(late, 10),
	}
	for i, a := range jb.aggs {
		name := r.plan.agg.aggs[i].cfg.Name
		metrics["gold."+name+".numOutputRows"] = strconv.FormatInt(a.outputRows, 10)
		metrics["gold."+name+"."+CustomMetricLateRowsQuarantined] = strconv.FormatInt(a.lateRows, 10)
		metrics["gold."+name+".stateMemoryUsedBytes"] = strconv.FormatInt(a.res.MemoryUsedBytes, 10)
	}
	p.Sink = SinkProgress{Description: "DeltaSink[" + r.j.Table + "]", NumOutputRows: -1, Metrics: metrics}
	return p
}
