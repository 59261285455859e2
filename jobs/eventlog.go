package jobs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/report"
	"github.com/medallion-lake/medallion/report/eventlog"
	"github.com/medallion-lake/medallion/stream"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/txlog"
)

// The event log (docs/event-log.md) is written from here, never from the engines: a job run's
// row when RunLogged (or the scheduler) sees the run end, a micro-batch's rows from the
// stream's Listener, right after the engine kept the batch's progress in its checkpoint.
//
// Never blocking the data path: every write is bounded by eventLogTimeout and its failure is a
// WARN line and medallion_event_log_write_failures_total, never a failed batch or job.
//
// Exactly once: a batch's rows carry txn(BatchTxnAppID(query id), batch id), so a batch run
// again after a kill is not logged twice; a batch whose rows a kill lost (after the batch's
// commit, before the event log's) is logged by the next batch or the next run of the query
// (catch-up): from its progress file, or, when the kill came before that file, from its commit
// file alone. A run's row is written once, at its end, with a fresh run id: a run killed before
// its end has no run row (its batches have theirs).

// eventLogTimeout bounds one event log write, so that a hanging store delays a job by at most
// this much.
const eventLogTimeout = 30 * time.Second

// eventLogFailedRunTimeout bounds the write of a failed run's row.
const eventLogFailedRunTimeout = 5 * time.Second

// EventLog appends the pipeline's events to its event log table. A nil *EventLog (event_log:
// off) records nothing.
type EventLog struct {
	log      *eventlog.Log
	logger   *slog.Logger
	failures prometheus.Counter
}

// NewEventLog returns the event log of the config at lake, or nil when the config turns it off.
func NewEventLog(env Env) *EventLog {
	p, on := env.Config.EventLogPath()
	if !on {
		return nil
	}
	logger := env.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &EventLog{
		log:    eventlog.Open(env.Lake, p, env.Clock),
		logger: logger,
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "medallion_event_log_write_failures_total",
			Help: "Event log appends that failed (the job or batch went on; see the WARN log line).",
		}),
	}
}

// Path is the event log table's path under the lake ("" when off).
func (l *EventLog) Path() string {
	if l == nil {
		return ""
	}
	return l.log.Path()
}

// Collector is the write-failure counter, for serve's registry (nil when off).
func (l *EventLog) Collector() prometheus.Collector {
	if l == nil {
		return nil
	}
	return l.failures
}

// append writes events, turning a failure into a WARN (debug when jobFailed: the job's own
// error, one line, already says what is wrong, most often the same unreachable store) and the
// counter.
func (l *EventLog) append(ctx context.Context, what string, events []eventlog.Event, txn *eventlog.Txn, jobFailed bool) {
	if l == nil || len(events) == 0 {
		return
	}
	// A cancelled job still gets its row (outcome error); a stuck store gets eventLogTimeout,
	// and after a failed job less: the store may well be what failed it.
	timeout := eventLogTimeout
	if jobFailed {
		timeout = eventLogFailedRunTimeout
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if _, err := l.log.Append(ctx, events, txn); err != nil {
		if jobFailed {
			l.failures.Inc()
			l.logger.Debug("event log write failed after the job failed", "event_log", l.log.Path(), "event", what, "err", err.Error())
			return
		}
		l.failed(what, err)
	}
}

func (l *EventLog) failed(what string, err error) {
	l.failures.Inc()
	l.logger.Warn("event log write failed; the job goes on without this row (docs/event-log.md)",
		"event_log", l.log.Path(), "event", what, "err", err.Error())
}

// RunLogged runs job (source: the --source it was given, "" for every one) and appends its run
// row to the event log (with one row per table for optimize, vacuum and checkpoint), whatever
// the outcome. It returns what run returned.
func RunLogged(ctx context.Context, env Env, job, source string, run Func) (any, error) {
	env.runID = uuid.NewString()
	start := env.clock()
	summary, err := run(ctx, env)
	env.Events.recordRun(ctx, env.runID, job, source, start, env.clock(), summary, err)
	return summary, err
}

// recordRun appends a run's row (and its maintenance rows).
func (l *EventLog) recordRun(ctx context.Context, runID, job, source string, start, end time.Time, summary any, runErr error) {
	if l == nil {
		return
	}
	if op := (*net.OpError)(nil); errors.As(runErr, &op) {
		// The job could not reach the store (connection refused, DNS): neither can the event
		// log, and trying would only hold up the job's exit by the client's retries.
		l.failures.Inc()
		l.logger.Debug("event log row not written: the job could not reach the store", "event_log", l.log.Path(), "event", "run "+job, "err", runErr.Error())
		return
	}
	e := eventlog.Event{
		EventID: "run/" + runID, EventType: eventlog.TypeJobRun, EventTime: end, Job: job, RunID: runID, Source: source,
		StartTime: start, EndTime: end, DurationMs: eventlog.Int(end.Sub(start).Milliseconds()), Outcome: eventlog.OutcomeOK,
	}
	if runErr != nil {
		e.Outcome, e.Error = eventlog.OutcomeError, runErr.Error()
	}
	if summary != nil {
		if data, err := json.Marshal(summary); err == nil {
			e.Details = string(data)
		}
	}
	runCounts(&e, summary)
	events := []eventlog.Event{e}
	if tables, ok := summary.([]TableResult); ok {
		for _, t := range tables {
			m := eventlog.Event{
				EventID: "maintenance/" + runID + "/" + t.Table, EventType: eventlog.TypeMaintenance, EventTime: end,
				Job: job, RunID: runID, TablePath: t.Table, StartTime: start, EndTime: end, Outcome: eventlog.OutcomeOK,
			}
			if t.Skipped != "" {
				m.Outcome = eventlog.OutcomeSkipped
			}
			data, _ := json.Marshal(t)
			m.Details = string(data)
			events = append(events, m)
		}
	}
	l.append(ctx, "run "+job, events, nil, runErr != nil)
}

// runCounts fills a run row's row counts from the summaries that have them.
func runCounts(e *eventlog.Event, summary any) {
	switch s := summary.(type) {
	case bronze.Report:
		e.RowsIn, e.RowsOut, e.RowsRejected = eventlog.Int(s.Lines), eventlog.Int(s.Rows), eventlog.Int(s.Rejected)
	case stream.Report:
		e.RowsIn, e.RowsOut = eventlog.Int(s.InputRows), eventlog.Int(s.SilverRows)
		e.RowsRejected, e.RowsDropped = eventlog.Int(s.Rejected), eventlog.Int(s.Duplicates)
		var late int64
		for _, g := range s.Gold {
			late += g.LateRows
		}
		e.RowsLate = eventlog.Int(late)
		if s.WatermarkMs > 0 {
			e.Watermark = time.UnixMilli(s.WatermarkMs).UTC()
		}
	}
}

// batchRecorder is the stream Listener that logs each batch (then tells next, when set). It
// appends off the batch's path: OnProgress queues the batch's progress and returns, and one
// goroutine at a time appends what is queued, every batch queued meanwhile in the same commit.
// On S3 an append is four serial round trips (two HEADs of the log, the data file, the commit)
// that each batch waited for. A kill loses at most the queued rows, which the catch-up logs as
// it logs the rows a kill between a batch's commit and its append lost before; flush waits for
// the queue, so that a run's batches are logged by the time its own row is.
type batchRecorder struct {
	ctx    context.Context
	events *EventLog
	lake   objstore.Bucket
	runID  string
	source string
	ckpt   string
	next   stream.Listener

	mu       sync.Mutex
	queryID  string
	queued   []loggedBatch // in batch order
	draining bool
	idle     sync.WaitGroup // held while a drain runs
}

// loggedBatch is a batch to log: its id and its progress JSON (nil: read it from the
// checkpoint).
type loggedBatch struct {
	n    int64
	data []byte
}

func (r *batchRecorder) OnProgress(p *stream.Progress) {
	if r.next != nil {
		r.next.OnProgress(p)
	}
	data, err := p.MarshalJSON()
	if err != nil {
		r.events.failed(fmt.Sprintf("batch %d of %s", p.BatchID, r.source), err)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queryID = p.ID // one query's, as the checkpoint is
	r.queued = append(r.queued, loggedBatch{n: p.BatchID, data: data})
	if !r.draining {
		r.draining = true
		r.idle.Add(1)
		go r.drain()
	}
}

// drain appends the queued batches until the queue is empty.
func (r *batchRecorder) drain() {
	defer r.idle.Done()
	for {
		r.mu.Lock()
		batches, queryID := r.queued, r.queryID
		r.queued = nil
		if len(batches) == 0 {
			r.draining = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		r.events.recordBatches(r.ctx, r.lake, r.runID, r.source, r.ckpt, queryID, batches)
	}
}

// flush waits until every batch queued so far is appended (or its append failed).
func (r *batchRecorder) flush() { r.idle.Wait() }

// streamListener wraps next with the batch recorder of the query (source: its name, ckpt: its
// checkpoint), after catching up on batches an earlier, killed run did not log. flush, called
// when the query's run ends, waits for the batches' rows.
func (e Env) streamListener(ctx context.Context, source, ckpt string, next stream.Listener) (listener stream.Listener, flush func()) {
	if e.Events == nil {
		return next, func() {}
	}
	e.Events.catchUp(ctx, e.Lake, source, ckpt)
	r := &batchRecorder{ctx: ctx, events: e.Events, lake: e.Lake, runID: e.runID, source: source, ckpt: ckpt, next: next}
	return r, r.flush
}

// catchUp logs the batches the checkpoint has committed but the event log lacks (the rows a
// kill lost, or the history from before the event log was on).
func (l *EventLog) catchUp(ctx context.Context, lake objstore.Bucket, source, ckpt string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), eventLogTimeout)
	defer cancel()
	dir := checkpoint.Open(objstore.WithPrefix(lake, ckpt))
	queryID, err := dir.ReadQueryID(ctx)
	if errors.Is(err, checkpoint.ErrNoQuery) {
		return
	}
	if err != nil {
		l.failed("catch-up of "+source, err)
		return
	}
	known, err := checkpointBatches(ctx, lake, ckpt)
	if err != nil {
		l.failed("catch-up of "+source, err)
		return
	}
	if len(known) == 0 {
		return
	}
	l.recordBatches(ctx, lake, "", source, ckpt, queryID, []loggedBatch{{n: known[len(known)-1].n}})
}

// knownBatch is a batch the checkpoint records: its id and its commit file's time.
type knownBatch struct {
	n         int64
	committed time.Time
}

// checkpointBatches lists the batches of a checkpoint that have a commit or a progress file,
// in order. A batch with a commit but no progress file is one a kill stopped between the two.
func checkpointBatches(ctx context.Context, lake objstore.Bucket, ckpt string) ([]knownBatch, error) {
	b := objstore.WithPrefix(lake, ckpt)
	seen := map[int64]time.Time{}
	for _, dir := range []struct{ prefix, suffix string }{{"commits/", ""}, {"progress/", ".json"}} {
		infos, err := objstore.ListAll(ctx, b, dir.prefix, objstore.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", path.Join(ckpt, dir.prefix), err)
		}
		for _, o := range infos {
			ns, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, dir.prefix), dir.suffix)
			n, err := strconv.ParseInt(ns, 10, 64)
			if !ok || err != nil || n < 0 {
				continue // temporary or foreign objects
			}
			if t, ok := seen[n]; !ok || t.IsZero() {
				seen[n] = o.ModTime
			}
		}
	}
	out := make([]knownBatch, 0, len(seen))
	for n, t := range seen {
		out = append(out, knownBatch{n: n, committed: t})
	}
	slices.SortFunc(out, func(a, b knownBatch) int { return cmp.Compare(a.n, b.n) })
	return out, nil
}

// recordBatches appends batches (in order; run runID's, with their progress JSON, or one
// without: the catch-up's), and before them every batch the event log lacks that the
// checkpoint still records, in one commit with txn version the last batch's id.
func (l *EventLog) recordBatches(ctx context.Context, lake objstore.Bucket, runID, source, ckpt, queryID string, batches []loggedBatch) {
	// One look at the event log's table for the txn check, the creation check and the append.
	ctx, cancel := context.WithTimeout(txlog.WithSnapshotScope(context.WithoutCancel(ctx)), eventLogTimeout)
	defer cancel()
	n := batches[len(batches)-1].n
	what := fmt.Sprintf("batch %d of %s", n, source)
	appID := eventlog.BatchTxnAppID(queryID)
	logged, ok, err := l.log.TxnVersion(ctx, appID)
	if err != nil {
		l.failed(what, err)
		return
	}
	if ok && logged >= n {
		return // batches run again after a kill: logged already
	}
	todo := slices.DeleteFunc(slices.Clone(batches), func(b loggedBatch) bool { return ok && b.n <= logged })
	committed := map[int64]time.Time{} // of the batches the checkpoint lists, when it was listed
	if !ok || !followEachOther(logged, todo) {
		known, err := checkpointBatches(ctx, lake, ckpt)
		if err != nil {
			l.failed(what, err)
			return
		}
		for _, b := range known {
			committed[b.n] = b.committed
			if b.n <= n && (!ok || b.n > logged) && !slices.ContainsFunc(todo, func(t loggedBatch) bool { return t.n == b.n }) {
				todo = append(todo, loggedBatch{n: b.n})
			}
		}
		slices.SortFunc(todo, func(a, b loggedBatch) int { return cmp.Compare(a.n, b.n) })
	}
	dir := checkpoint.Open(objstore.WithPrefix(lake, ckpt))
	var events []eventlog.Event
	for _, b := range todo {
		progress, rid := b.data, runID
		if progress == nil {
			rid = "" // logged after the run that ran it
			p, err := dir.ReadProgress(ctx, b.n)
			if err != nil && !errors.Is(err, objstore.ErrNotFound) {
				l.failed(what, err)
				return
			}
			progress = p
		}
		var evs []eventlog.Event
		if progress == nil {
			// Committed, but killed before its progress file: the row says what is known.
			evs = []eventlog.Event{lostBatchEvent(source, queryID, knownBatch{n: b.n, committed: committed[b.n]})}
		} else if evs, err = batchEvents(rid, source, queryID, path.Join(ckpt, checkpoint.ProgressKey(b.n)), progress); err != nil {
			l.failed(what, err)
			return
		}
		events = append(events, evs...)
	}
	if _, err := l.log.Append(ctx, events, &eventlog.Txn{AppID: appID, Version: n}); err != nil {
		l.failed(what, err)
	}
}

// followEachOther reports whether batches, each with its progress, are the ones after logged,
// one after the other: then nothing between needs the checkpoint's listing.
func followEachOther(logged int64, batches []loggedBatch) bool {
	for i, b := range batches {
		if b.data == nil || b.n != logged+1+int64(i) {
			return false
		}
	}
	return true
}

// lostBatchEvent is the row of a batch committed by a run killed before it wrote the batch's
// progress: its id and commit time, with details saying the figures are lost.
func lostBatchEvent(source, queryID string, b knownBatch) eventlog.Event {
	t := b.committed
	if t.IsZero() {
		t = time.Now()
	}
	return eventlog.Event{
		EventID: "batch/" + queryID + "/" + strconv.FormatInt(b.n, 10), EventType: eventlog.TypeBatch, EventTime: t.UTC(),
		Job: "stream", Source: source, QueryID: queryID, BatchID: eventlog.Int(b.n), EndTime: t.UTC(), Outcome: eventlog.OutcomeOK,
		Details: fmt.Sprintf(`{"batchId":%d,"progressLost":"the run was killed after committing the batch and before writing its progress"}`, b.n),
	}
}

// batchEvents turns one progress JSON into the batch's row and one row per expectation.
func batchEvents(runID, source, queryID, key string, data []byte) ([]eventlog.Event, error) {
	bp, err := report.ParseProgress(key, data)
	if err != nil {
		return nil, err
	}
	var extra struct {
		Sink struct {
			Metrics map[string]string `json:"metrics"`
		} `json:"sink"`
		// Every operator that quarantines (aggregations, joins) counts its rows here.
		StateOperators []struct {
			CustomMetrics map[string]int64 `json:"customMetrics"`
		} `json:"stateOperators"`
	}
	_ = json.Unmarshal(data, &extra) // ParseProgress read it already
	id := queryID + "/" + strconv.FormatInt(bp.BatchID, 10)
	b := eventlog.Event{
		EventID: "batch/" + id, EventType: eventlog.TypeBatch, EventTime: bp.Timestamp, Job: "stream", RunID: runID,
		Source: source, QueryID: queryID, BatchID: eventlog.Int(bp.BatchID), StartTime: bp.Timestamp,
		EndTime: bp.Timestamp.Add(time.Duration(bp.DurationMs) * time.Millisecond), DurationMs: eventlog.Int(bp.DurationMs),
		Outcome: eventlog.OutcomeOK, RowsIn: eventlog.Int(bp.NumInputRows), RowsOut: bp.SilverRows, RowsRejected: bp.ValidationRejects,
		Watermark: bp.Watermark, Details: string(data),
	}
	var late int64
	for _, op := range extra.StateOperators {
		late += op.CustomMetrics[stream.CustomMetricLateRowsQuarantined]
	}
	b.RowsLate = eventlog.Int(late)
	if v, ok := extra.Sink.Metrics["numDuplicatesDropped"]; ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			b.RowsDropped = eventlog.Int(n)
		}
	}
	out := []eventlog.Event{b}
	for _, x := range bp.Expectations {
		ex := eventlog.Event{
			EventID: "expectation/" + id + "/" + x.Name, EventType: eventlog.TypeExpectation, EventTime: bp.Timestamp,
			Job: "stream", RunID: runID, Source: source, QueryID: queryID, BatchID: eventlog.Int(bp.BatchID),
			Outcome: eventlog.OutcomeOK, Expectation: x.Name, Action: x.OnViolation,
			RowsPassed: eventlog.Int(x.Passed), RowsFailed: eventlog.Int(x.Failed), RowsRejected: eventlog.Int(x.Dropped),
		}
		if x.Failed > 0 {
			ex.Outcome = eventlog.OutcomeViolations
		}
		d, _ := json.Marshal(x)
		ex.Details = string(d)
		out = append(out, ex)
	}
	return out, nil
}

// Logged is RunLogged for a job function with a typed summary.
func Logged[T any](ctx context.Context, env Env, job, source string, run func(context.Context, Env) (T, error)) (T, error) {
	summary, err := RunLogged(ctx, env, job, source, func(ctx context.Context, env Env) (any, error) { return run(ctx, env) })
	t, _ := summary.(T)
	return t, err
}
