package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/table/source"
)

// Listener receives every batch's progress, for embedding users (Spark's
// StreamingQueryListener.onQueryProgress). It is called on the runner's goroutine.
type Listener interface {
	OnProgress(p *Progress)
}

// Options configure a Runner.
type Options struct {
	// Lake is the bucket every path of Query is relative to.
	Lake  objstore.Bucket
	Query spec.Query
	// Trigger overrides Query.Trigger when its Kind is set.
	Trigger spec.Trigger
	// Clock gives batch timestamps and progress times (default time.Now).
	Clock    func() time.Time
	Logger   *slog.Logger
	Listener Listener
	// WriteOptions tune the data files of silver, quarantine and gold.
	WriteOptions pq.WriteOptions
}

// Report sums up one Run.
type Report struct {
	QueryID string `json:"queryId"`
	// Batches is the number of micro-batches this run executed (re-runs and no-data batches
	// included); LastBatch is the id of the last committed one, this run's or, when it ran
	// none, the checkpoint's (-1: the query has never committed a batch).
	Batches   int   `json:"batches"`
	LastBatch int64 `json:"lastBatchId"`
	// WatermarkMs is the watermark the next batch will run with (restored from the checkpoint
	// when this run had no new data).
	WatermarkMs int64        `json:"watermarkMs"`
	InputRows   int64        `json:"numInputRows"`
	SilverRows  int64        `json:"numSilverRows"`
	Rejected    int64        `json:"numValidationRejects"`
	Duplicates  int64        `json:"numDuplicatesDropped"`
	Gold        []GoldReport `json:"gold"`
	// Expectations sum each expectation's counts over the run's batches (absent without
	// expectations).
	Expectations []ExpectationProgress `json:"expectations,omitempty"`
}

// GoldReport sums up one aggregation over a Run.
type GoldReport struct {
	Name       string `json:"name"`
	RowsOut    int64  `json:"numOutputRows"`
	LateRows   int64  `json:"numLateRowsQuarantined"`
	LateGroups int64  `json:"numRowsDroppedByWatermark"`
	// SessionCorrections (session windows only) are the rows of LateRows that were on time by
	// Spark's rule but touch a session already emitted: kept for merge-late instead of being
	// emitted as a second, overlapping session.
	SessionCorrections int64 `json:"numSessionCorrectionsQuarantined,omitempty"`
}

// Runner is one streaming query over the lake. Not safe for concurrent use; two runners on
// one checkpoint agree through put-if-absent on offsets and txn on the tables.
type Runner struct {
	opts           Options
	q              *spec.Query
	ckpt           *checkpoint.Dir
	src            *source.Source
	queryID, runID string
	t              sinks
	ops            operators
	pos            position
	idle           idleness
	state          stateLog
	ahead          readAhead
	prevTrigger    time.Time
	report         Report
	buf            batchBuffers
}

// sinks are the tables the query reads and writes.
type sinks struct {
	bronze, silver, rejects *table.Table
	golds, quars            []*table.Table // one per aggregation
	silverW                 silver.Writer
	ready                   bool // every table exists
	// byPath are the tables the query writes by their path in the lake, paths the reverse:
	// the names commits/N records them under (identity.go).
	byPath map[string]*table.Table
	paths  map[*table.Table]string
}

// operators are the query resolved against bronze's schema and its operators' state, as
// restored from the checkpoint (nil plan: not yet).
type operators struct {
	plan    *plan
	tracker *gold.WatermarkTracker
	dedup   *silver.Dedup
	lookup  *silver.Lookup
	aggs    []*gold.Aggregation
}

// position is where the query stands in its checkpoint.
type position struct {
	started   bool
	nextBatch int64
	lastEnd   *source.Offset
	lastEntry *checkpoint.Offsets // offsets of the last committed batch (for the late watermark)
	pending   *checkpoint.Offsets // an uncommitted batch to re-run first
	// needNoData: the watermark asks for a no-data batch.
	needNoData bool
	// resume puts the watermark tracker where the checkpoint left it.
	resume func(*gold.WatermarkTracker) error
	// tables is what the last commits/N recorded of the tables written (identity.go).
	tables map[string]checkpoint.TableMark
	// recorded is the highest batch with an offsets file: batches up to it are re-run with
	// their recorded offsets (a checkpoint rolled back has several).
	recorded int64
}

// idleness is the batch timestamp of the last batch that read rows and the watermark it left,
// from which an idle source's watermark advances with the clock (stream.idle_timeout).
type idleness struct {
	lastDataMs, baseWM int64
}

// stateLog counts the state deltas written since the last full snapshots.
type stateLog struct {
	dedupDeltas int
	aggDeltas   int
	restoring   map[int64]map[string][]byte // state versions read by the restore in progress
}

// readAhead reads the next batch's files while a batch runs, up to source version until (-1:
// no read-ahead) with limit a batch.
type readAhead struct {
	p     *prefetch
	until int64
	limit source.ReadLimit
}

// New prepares a runner; it reads nothing until Run.
func New(opts Options) (*Runner, error) {
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
		opts.Trigger = opts.Query.Trigger
	}
	q := &opts.Query
	open := func(p string, wopts pq.WriteOptions) *table.Table {
		return table.Open(objstore.WithPrefix(opts.Lake, p), table.Options{Clock: opts.Clock, Write: wopts})
	}
	silverOpts := silver.WriteOptions(q.Dedup, opts.WriteOptions)
	r := &Runner{
		opts: opts,
		ckpt: checkpoint.Open(objstore.WithPrefix(opts.Lake, q.Tables.Checkpoint)),
		src:  source.New(objstore.WithPrefix(opts.Lake, q.Tables.Bronze), q.Source),
		t: sinks{bronze: open(q.Tables.Bronze, opts.WriteOptions), silver: open(q.Tables.Silver, silverOpts),
			rejects: open(q.Tables.Rejects, opts.WriteOptions)},
		runID: uuid.NewString(),
	}
	for _, g := range q.Gold {
		r.t.golds = append(r.t.golds, open(g.Table, opts.WriteOptions))
		r.t.quars = append(r.t.quars, open(g.Quarantine, opts.WriteOptions))
	}
	r.t.byPath = map[string]*table.Table{q.Tables.Silver: r.t.silver, q.Tables.Rejects: r.t.rejects}
	for i, g := range q.Gold {
		r.t.byPath[g.Table], r.t.byPath[g.Quarantine] = r.t.golds[i], r.t.quars[i]
	}
	r.t.paths = map[*table.Table]string{}
	for p, t := range r.t.byPath {
		r.t.paths[t] = p
	}
	r.q = &r.opts.Query
	r.t.silverW = silver.Writer{Silver: r.t.silver, Rejects: r.t.rejects}
	r.report.LastBatch = -1
	r.report.Gold = []GoldReport{} // [] in the summary when no batch ran, not null
	return r, nil
}

// Run runs the query with its trigger: once (one batch, no read limit), available-now
// (everything the source holds at the start, in batches of max_files_per_trigger and
// max_bytes_per_trigger, then the
// no-data batches the watermark asks for) or processing-time (until ctx is cancelled, which
// ends the run without an error at a batch boundary).
func (r *Runner) Run(ctx context.Context) (rep Report, err error) {
	r.ahead.until = -1
	defer func() {
		r.waitAhead()
		if err != nil {
			// The operators may hold a half-run batch: the next Run reloads them from the
			// checkpoint, as a restarted process would.
			r.pos.started, r.ops.plan, r.pos.pending, r.pos.resume = false, nil, nil, nil
		}
	}()
	if err := r.start(ctx); err != nil {
		return r.report, err
	}
	limit := r.q.Limit
	once := func(ctx context.Context) error {
		if r.pos.pending != nil {
			return r.runPending(ctx)
		}
		latest, err := r.latest(ctx)
		if err != nil {
			return err
		}
		_, err = r.step(ctx, latest, source.ReadLimit{}, false)
		return err
	}
	return r.report, runTrigger(ctx, r.opts.Trigger, r.opts.Clock, once, func(ctx context.Context) error { return r.drain(ctx, limit) })
}

// runTrigger runs a query's batches as its trigger says: once; drain until nothing is left
// (available-now); or drain every interval until ctx ends (processing-time, where
// cancellation is a clean stop, not an error).
func runTrigger(ctx context.Context, t spec.Trigger, clock func() time.Time, once, drain func(context.Context) error) error {
	switch t.Kind {
	case spec.Once:
		return once(ctx)
	case spec.ProcessingTime:
		for {
			began := clock()
			if err := drain(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			wait := max(t.Interval-clock().Sub(began), time.Millisecond)
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return nil
			case <-timer.C:
			}
		}
	default:
		return drain(ctx)
	}
}

// drain fixes the source's latest version and runs batches until nothing is left to do.
func (r *Runner) drain(ctx context.Context, limit source.ReadLimit) error {
	for r.pos.pending != nil {
		if err := r.runPending(ctx); err != nil {
			return err
		}
	}
	latest, err := r.latest(ctx)
	if err != nil {
		return err
	}
	r.ahead.until, r.ahead.limit = latest, limit
	defer func() { r.ahead.until = -1 }()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		ran, err := r.step(ctx, latest, limit, true)
		if err != nil || !ran {
			return err
		}
	}
}

func (r *Runner) latest(ctx context.Context) (int64, error) {
	v, _, err := r.src.Latest(ctx)
	if err != nil {
		return 0, fmt.Errorf("stream: bronze latest version: %w", err)
	}
	return v, nil
}

// step runs the next batch if there is new data (or, when noData, a no-data batch the
// watermark asks for) and reports whether it ran one.
func (r *Runner) step(ctx context.Context, until int64, limit source.ReadLimit, noData bool) (bool, error) {
	if until < 0 {
		return false, nil
	}
	if err := r.ensurePlan(ctx); err != nil {
		return false, err
	}
	files, end, err := r.src.NextBatch(ctx, r.pos.lastEnd, until, limit)
	if err != nil {
		return false, err
	}
	if r.pos.lastEnd == nil && len(files) == 0 {
		return false, nil // an empty table: Delta's source has no offset to start from yet
	}
	moved := r.pos.lastEnd == nil || *r.pos.lastEnd != end
	if !moved && noData && !r.pos.needNoData && !r.idleAdvance() {
		return false, nil
	}
	if !moved && !noData {
		return false, nil
	}
	_, evict := r.ops.tracker.BatchWatermarks()
	entry := &checkpoint.Offsets{BatchWatermarkMs: evict, BatchTimestampMs: r.opts.Clock().UnixMilli(), Conf: queryConf(), End: &end}
	began := time.Now()
	got, err := r.ckpt.WriteOffsets(ctx, r.pos.nextBatch, entry)
	if err != nil {
		return false, err
	}
	walMs := time.Since(began).Milliseconds()
	if got.BatchWatermarkMs != entry.BatchWatermarkMs || got.End == nil || *got.End != end {
		// Another run wrote this batch's WAL first: run what it says.
		r.pos.pending = got
		return true, r.runPending(ctx)
	}
	return true, r.runBatch(ctx, r.pos.nextBatch, got, files, walMs)
}

// idleAdvance moves the watermark with the clock when the source has been silent for longer
// than stream.idle_timeout: from the watermark the last data left, by the time elapsed past
// the timeout (Flink's idleness, for a single source). It reports whether the next batch must
// run as a no-data batch to apply it. The moved watermark is recorded in offsets/N like any
// other, so a re-run uses it exactly.
func (r *Runner) idleAdvance() bool {
	idle := r.q.IdleTimeout.Milliseconds()
	if idle <= 0 || r.idle.lastDataMs == 0 {
		return false
	}
	silent := r.opts.Clock().UnixMilli() - r.idle.lastDataMs - idle
	if silent <= 0 {
		return false
	}
	late, evict := r.ops.tracker.BatchWatermarks()
	target := r.idle.baseWM + silent
	if target <= evict || !r.wantsNoData(target, evict) {
		return false
	}
	// As if the last commit had carried the moved watermark: same late watermark, new eviction.
	if err := r.ops.tracker.ResumeAfterCommit(late, target); err != nil {
		return false
	}
	return true
}

// queryConf is the Spark configuration recorded in every offsets entry.
func queryConf() map[string]string {
	return map[string]string{
		"spark.sql.streaming.multipleWatermarkPolicy":    "min",
		"spark.sql.streaming.noDataMicroBatches.enabled": "true",
		"spark.sql.streaming.stateStore.providerClass":   "medallion.StateStore",
	}
}

// runPending re-runs the uncommitted batch with exactly the files of its recorded offsets.
func (r *Runner) runPending(ctx context.Context) error {
	entry := r.pos.pending
	if err := r.ensurePlan(ctx); err != nil {
		return err
	}
	files, err := filesThrough(ctx, r.src, r.pos.lastEnd, entry.End)
	if err != nil {
		return err
	}
	r.pos.pending = nil
	if err := r.runBatch(ctx, r.pos.nextBatch, entry, files, 0); err != nil {
		return err
	}
	return r.nextRecorded(ctx)
}

// nextRecorded makes the next batch pending when the checkpoint recorded its offsets (a
// rolled-back checkpoint re-runs each of its batches as recorded, in order). An idle source's
// watermark may have moved before such a batch (idleAdvance): its recorded watermark says so.
func (r *Runner) nextRecorded(ctx context.Context) error {
	if r.pos.nextBatch > r.pos.recorded {
		return nil
	}
	e, err := r.ckpt.ReadOffsets(ctx, r.pos.nextBatch)
	if err != nil {
		return err
	}
	if late, evict := r.ops.tracker.BatchWatermarks(); e.BatchWatermarkMs > evict && r.q.IdleTimeout > 0 {
		if err := r.ops.tracker.ResumeAfterCommit(late, e.BatchWatermarkMs); err != nil {
			return fmt.Errorf("stream: %w", err)
		}
	}
	r.pos.pending = e
	return nil
}

// start reads the checkpoint: the query id, the last committed batch, the state it left and
// an uncommitted batch to re-run.
func (r *Runner) start(ctx context.Context) error {
	if r.pos.started {
		return nil
	}
	h, err := r.ckpt.ReadHead(ctx)
	if err != nil {
		return fmt.Errorf("stream %s: checkpoint %s: %w", r.q.Name, r.q.Tables.Checkpoint, err)
	}
	r.queryID, r.report.QueryID = h.QueryID, h.QueryID
	if err := r.checkIdentity(ctx, h); err != nil {
		return err
	}
	r.pos.lastEnd, r.pos.lastEntry, r.pos.needNoData, r.idle.lastDataMs, r.idle.baseWM = nil, nil, false, 0, 0
	r.pos.nextBatch, r.pos.recorded, r.pos.tables = 0, h.Recorded, nil
	if h.Committed != nil {
		r.pos.tables = h.Committed.Tables
	}
	switch e, c := h.Entry, h.Commit; {
	case h.Last < 0:
	case c != nil:
		r.pos.lastEntry, r.pos.lastEnd = e, e.End
		r.pos.nextBatch = h.Last + 1
		// A run with no new data still says where the query stands.
		r.report.LastBatch, r.report.WatermarkMs = h.Last, c.NextBatchWatermarkMs
		r.pos.resume = func(t *gold.WatermarkTracker) error {
			return t.ResumeAfterCommit(e.BatchWatermarkMs, c.NextBatchWatermarkMs)
		}
	default:
		prevWM := int64(0)
		if prev := h.Prev; prev != nil {
			prevWM, r.pos.lastEnd, r.pos.lastEntry = prev.BatchWatermarkMs, prev.End, prev
		}
		r.pos.pending = e
		r.pos.nextBatch = h.Last
		r.report.LastBatch, r.report.WatermarkMs = h.Last-1, e.BatchWatermarkMs
		r.pos.resume = func(t *gold.WatermarkTracker) error { return t.ResumeRerun(prevWM, e.BatchWatermarkMs) }
	}
	r.pos.started = true
	return nil
}

// checkIdentity refuses to run when bronze is behind the offsets the checkpoint read it to,
// or a table the query writes is behind what the last commit recorded (identity.go).
func (r *Runner) checkIdentity(ctx context.Context, h checkpoint.Head) error {
	ckpt := r.q.Tables.Checkpoint
	end, n, err := furthestRead(ctx, r.ckpt, h)
	if err != nil {
		return err
	}
	if end != nil {
		if err := checkRead(ctx, r.q.Tables.Bronze, ckpt, checkpoint.OffsetsKey(n), r.src, end.End); err != nil {
			return err
		}
	}
	if h.Committed == nil {
		return nil
	}
	return checkWritten(ctx, ckpt, h.QueryID, h.Committed.Tables, r.t.byPath)
}

// filesThrough lists the files of src after start up to and including end (nil: none), the
// files a recorded batch read, for its re-run.
func filesThrough(ctx context.Context, src *source.Source, start, end *source.Offset) ([]source.IndexedFile, error) {
	if end == nil {
		return nil, nil
	}
	until := end.ReservoirVersion
	if end.Index == -1 {
		until--
	}
	all, _, err := src.NextBatch(ctx, start, until, source.ReadLimit{})
	if err != nil {
		return nil, err
	}
	var files []source.IndexedFile
	for _, f := range all {
		if f.Version < end.ReservoirVersion || f.Version == end.ReservoirVersion && f.Index <= end.Index {
			files = append(files, f)
		}
	}
	return files, nil
}
