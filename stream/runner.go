package stream

import (
	"context"
	"fmt"
	"log/slog"
	"time"

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

// RunSummary is what the report of every query says of a run, whatever the query.
type RunSummary struct {
	QueryID string `json:"queryId"`
	// Batches is the number of micro-batches this run executed (re-runs and no-data batches
	// included); LastBatch is the id of the last committed one, this run's or, when it ran
	// none, the checkpoint's (-1: the query has never committed a batch).
	Batches   int   `json:"batches"`
	LastBatch int64 `json:"lastBatchId"`
	// WatermarkMs is the watermark the next batch will run with (restored from the checkpoint
	// when this run had no new data).
	WatermarkMs int64 `json:"watermarkMs"`
}

// Report sums up one Run.
type Report struct {
	RunSummary
	InputRows  int64 `json:"numInputRows"`
	SilverRows int64 `json:"numSilverRows"`
	Rejected   int64 `json:"numValidationRejects"`
	Duplicates int64 `json:"numDuplicatesDropped"`
	// FilteredDropped counts the rows a transform filter with on_filter: drop dropped.
	FilteredDropped int64        `json:"numFilteredDropped,omitempty"`
	Gold            []GoldReport `json:"gold"`
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

// Runner is one streaming query over the lake: the source query (silver, the on-time/late
// split and the aggregations over one bronze table) on the engine (engine.go). Not safe for
// concurrent use; two runners on one checkpoint agree through put-if-absent on offsets and txn
// on the tables.
type Runner struct {
	e *engine
	q *sourceQuery
}

// sourceQuery is the source query as the engine drives it (query, engine.go).
type sourceQuery struct {
	e      *engine
	q      *spec.Query
	t      sinks
	ops    operators
	idle   idleness
	state  stateLog
	ahead  readAhead
	report Report
	buf    batchBuffers
	// resume puts the watermark tracker where the checkpoint left it (nil: nothing ran).
	resume func(*gold.WatermarkTracker) error
	// cur is what the batch that ran last did.
	cur *batchStats
}

// sinks are the tables the query reads and writes.
type sinks struct {
	bronze, silver, rejects *table.Table
	golds, quars            []*table.Table // one per aggregation
	silverW                 silver.Writer
	ready                   bool // every table exists
}

// operators are the query resolved against bronze's schema and its operators' state, as
// restored from the checkpoint (nil plan: not yet).
type operators struct {
	plan    *plan
	tracker *gold.WatermarkTracker
	dedup   *silver.Dedup
	lookup  *silver.Lookup
	aggs    []*gold.Aggregation
	// shares are the key tables aggregations share (keyshare.go); shareOf[i] is aggregation
	// i's share, or -1.
	shares  []*keyShare
	shareOf []int
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
}

// readAhead is the read of the next batch's files in flight while a batch runs.
type readAhead struct {
	p *prefetch
}

// New prepares a runner; it reads nothing until Run.
func New(opts Options) (*Runner, error) {
	q := &opts.Query
	cfg, err := engineConfig{lake: opts.Lake, name: q.Name, prefix: "stream " + q.Name, checkpoint: q.Tables.Checkpoint,
		trigger: opts.Trigger, limit: q.Limit, state: q.State, clock: opts.Clock, logger: opts.Logger, listener: opts.Listener}.withDefaults(q.Trigger)
	if err != nil {
		return nil, err
	}
	sq := &sourceQuery{q: q}
	sq.t = sinks{bronze: cfg.open(q.Tables.Bronze, opts.WriteOptions), silver: cfg.open(q.Tables.Silver, silver.WriteOptions(q.Dedup, opts.WriteOptions)),
		rejects: cfg.open(q.Tables.Rejects, opts.WriteOptions)}
	written := map[string]*table.Table{q.Tables.Silver: sq.t.silver, q.Tables.Rejects: sq.t.rejects}
	for _, g := range q.Gold {
		gt, qt := cfg.open(g.Table, opts.WriteOptions), cfg.open(g.Quarantine, opts.WriteOptions)
		sq.t.golds, sq.t.quars = append(sq.t.golds, gt), append(sq.t.quars, qt)
		written[g.Table], written[g.Quarantine] = gt, qt
	}
	sq.t.silverW = silver.Writer{Silver: sq.t.silver, Rejects: sq.t.rejects}
	src := source.New(objstore.WithPrefix(cfg.lake, q.Tables.Bronze), q.Source)
	sq.e = newEngine(cfg, sq, []input{{src: src, path: q.Tables.Bronze, label: "stream: bronze"}}, written)
	sq.e.main = q.Tables.Silver
	for i, g := range q.Gold {
		sq.e.derived = append(sq.e.derived, g.Table, g.Quarantine)
		sq.e.golds = append(sq.e.golds, goldAt{name: g.Name, path: g.Table, def: goldDefinition(&q.Gold[i], q.Rules.EventTime).props()[PropDefinition]})
	}
	sq.report.Gold = []GoldReport{} // [] in the summary when no batch ran, not null
	return &Runner{e: sq.e, q: sq}, nil
}

// Run runs the query with its trigger: once (one batch, no read limit), available-now
// (everything the source holds at the start, in batches of max_files_per_trigger and
// max_bytes_per_trigger, then the no-data batches the watermark asks for) or processing-time
// (until ctx is cancelled, which ends the run without an error at a batch boundary).
func (r *Runner) Run(ctx context.Context) (Report, error) {
	err := r.e.run(ctx)
	r.q.report.RunSummary = r.e.counts
	return r.q.report, err
}

func (r *sourceQuery) ends(e *checkpoint.Offsets, _ int64) ([]*source.Offset, error) {
	return []*source.Offset{e.End}, nil
}

func (r *sourceQuery) restart(committed *checkpoint.Offsets, c *checkpoint.Commit, prev, rerun *checkpoint.Offsets) {
	r.idle, r.resume = idleness{}, nil
	switch {
	case committed != nil:
		r.resume = func(t *gold.WatermarkTracker) error {
			return t.ResumeAfterCommit(committed.BatchWatermarkMs, c.NextBatchWatermarkMs)
		}
	case rerun != nil:
		prevWM := int64(0)
		if prev != nil {
			prevWM = prev.BatchWatermarkMs
		}
		r.resume = func(t *gold.WatermarkTracker) error { return t.ResumeRerun(prevWM, rerun.BatchWatermarkMs) }
	}
}

func (r *sourceQuery) reset() { r.ops.plan, r.resume = nil, nil }

func (r *sourceQuery) watermarks() (late, evict int64) { return r.ops.tracker.BatchWatermarks() }

func (r *sourceQuery) offsets(ends []*source.Offset) *checkpoint.Offsets {
	_, evict := r.ops.tracker.BatchWatermarks()
	return &checkpoint.Offsets{BatchWatermarkMs: evict, End: ends[0]}
}

// idleAdvance moves the watermark with the clock when the source has been silent for longer
// than stream.idle_timeout: from the watermark the last data left, by the time elapsed past
// the timeout (Flink's idleness, for a single source). It reports whether the next batch must
// run as a no-data batch to apply it. The moved watermark is recorded in offsets/N like any
// other, so a re-run uses it exactly.
func (r *sourceQuery) idleAdvance() bool {
	idle := r.q.IdleTimeout.Milliseconds()
	if idle <= 0 || r.idle.lastDataMs == 0 {
		return false
	}
	silent := r.e.cfg.clock().UnixMilli() - r.idle.lastDataMs - idle
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

// rerun: an idle source's watermark may have moved before a recorded batch (idleAdvance): its
// recorded watermark says so.
func (r *sourceQuery) rerun(e *checkpoint.Offsets) error {
	if late, evict := r.ops.tracker.BatchWatermarks(); e.BatchWatermarkMs > evict && r.q.IdleTimeout > 0 {
		if err := r.ops.tracker.ResumeAfterCommit(late, e.BatchWatermarkMs); err != nil {
			return fmt.Errorf("stream: %w", err)
		}
	}
	return nil
}

// stop ends the read ahead in flight, if any.
func (r *sourceQuery) stop() { r.waitAhead() }
