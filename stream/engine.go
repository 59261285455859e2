package stream

// The micro-batch engine: the one runner every query runs on. A query (the source query of
// runner.go, the join query of join.go) is a configuration of it: its inputs, read as Delta
// streams, and a query value that plans against them, restores its operators' state, runs one
// batch over the files of each input and says when the watermark asks for a no-data batch.
// The engine owns everything else, once: the checkpoint (offsets/N before the batch with
// put-if-absent, commits/N after every sink, state and progress), the identity checks at
// start, the re-run of an uncommitted or rolled-back batch with exactly its recorded offsets,
// the trigger loop (runTrigger), the no-data rule, the txn every table write of batch N
// carries, the progress report and the checkpoint's cleanup.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/table/source"
	"github.com/medallion-lake/medallion/txlog"
)

// query is what the engine drives: one configuration of it.
type query interface {
	// ends are the inputs' end offsets an offsets entry records (n names it in errors).
	ends(e *checkpoint.Offsets, n int64) ([]*source.Offset, error)
	// restart tells the query where its checkpoint stands before its state is restored:
	// committed is the last committed batch's offsets and commit (nil: none), or, when batch
	// rerun is to be re-run, prev is the batch before it (nil for batch 0).
	restart(committed *checkpoint.Offsets, commit *checkpoint.Commit, prev, rerun *checkpoint.Offsets)
	// plan resolves the query against its inputs' schemas and restores its operators from
	// state version engine.pos.nextBatch, once; false (no error) while it cannot yet.
	plan(ctx context.Context) (bool, error)
	// reset drops the plan and the operators: the next run restores them from the checkpoint.
	reset()
	// watermarks are the late-row and eviction watermarks the next batch runs with.
	watermarks() (late, evict int64)
	// wantsNoData says whether a batch must run without new data to apply the watermark
	// newWM that replaced evictWM.
	wantsNoData(newWM, evictWM int64) bool
	// idleAdvance moves the watermark of an idle input with the clock and reports whether a
	// no-data batch must apply it.
	idleAdvance() bool
	// offsets is offsets/N of a new batch reading up to ends, without its timestamp and conf.
	offsets(ends []*source.Offset) *checkpoint.Offsets
	// rerun prepares the re-run of a recorded batch of a rolled-back checkpoint.
	rerun(e *checkpoint.Offsets) error
	// runBatch runs batch b over the files of each input and writes its tables (each with
	// b.txn) and state version b.n+1.
	runBatch(ctx context.Context, b *batchRun, files [][]source.IndexedFile) (batchDone, error)
	// committed accounts for a batch whose commits/N is written.
	committed(b *batchRun, done batchDone)
	// progress fills what is the query's own in a batch's progress: its state operators, its
	// sink and what it adds to eventTime.
	progress(p *Progress, b *batchRun)
	// stop ends what the query runs in the background (a read ahead).
	stop()
}

// batchDone is what a batch did that the engine reports.
type batchDone struct {
	// next is the watermark the batch leaves for the next one.
	next int64
	// rows are the rows read from each input.
	rows    []int64
	evStats gold.EventTimeStats
	// readAt is when the batch's files were read (getBatch before it, addBatch after).
	readAt time.Time
}

// batchRun is one batch as it runs: its id and offsets, its late-row and eviction watermarks
// (ms), the txn of its table writes and where they record what they committed.
type batchRun struct {
	n           int64
	entry       *checkpoint.Offsets
	late, evict int64
	txn         *table.AppTxn
	marks       *tableMarks
}

// input is a table a query reads as a Delta stream.
type input struct {
	src  *source.Source
	path string
	// label names it in errors ("stream: bronze", "stream: join j: left silver").
	label string
}

// engineConfig is what every query configures the engine with: the one place its defaults
// are filled.
type engineConfig struct {
	lake objstore.Bucket
	// name is the query's name (progress); prefix names it in errors ("stream q",
	// "stream: join j"), identity the same for the identity checks ("" or "join j").
	name, prefix, identity string
	checkpoint             string
	trigger                spec.Trigger
	limit                  source.ReadLimit
	state                  spec.State
	clock                  func() time.Time
	logger                 *slog.Logger
	listener               Listener
	// planAtStart: the query is planned before the trigger runs, and a run that cannot plan
	// yet does nothing (a join waits for its inputs); otherwise it is planned by its first
	// batch.
	planAtStart bool
}

// withDefaults fills the defaults of the options every query has: the clock, the logger and
// the trigger (the query's own when none overrides it).
func (c engineConfig) withDefaults(queryTrigger spec.Trigger) (engineConfig, error) {
	if c.lake == nil {
		return c, errors.New("stream: Lake is required")
	}
	if c.clock == nil {
		c.clock = time.Now
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	if c.trigger.Kind == "" {
		c.trigger = queryTrigger
	}
	return c, nil
}

// engine runs one query. Not safe for concurrent use; two engines on one checkpoint agree
// through put-if-absent on offsets and txn on the tables.
type engine struct {
	cfg            engineConfig
	q              query
	ckpt           *checkpoint.Dir
	in             []input
	queryID, runID string
	// byPath are the tables the query writes by their path in the lake, paths the reverse:
	// the names commits/N records them under (identity.go).
	byPath map[string]*table.Table
	paths  map[*table.Table]string
	// main is the path of the table the query's other tables are fed from (silver, or a
	// join's joined table), derived those tables' paths (checkMainMoved).
	main    string
	derived []string
	// golds are the gold tables' paths and recorded definitions (checkGoldMoved).
	golds []goldAt

	pos position
	// planned: the query is planned and its operators restored.
	planned bool
	// draining are the versions a drain runs up to (nil: none), for a query reading ahead.
	draining    []int64
	prevTrigger time.Time
	// restoring are the state versions read by the restore in progress.
	restoring map[int64]map[string][]byte
	counts    RunSummary
}

// position is where the query stands in its checkpoint.
type position struct {
	started   bool
	nextBatch int64
	lastEnd   []*source.Offset // one per input
	pending   *checkpoint.Offsets
	// needNoData: the watermark asks for a no-data batch.
	needNoData bool
	// tables is what the last commits/N recorded of the tables written (identity.go).
	tables map[string]checkpoint.TableMark
	// recorded is the highest batch with an offsets file: batches up to it are re-run with
	// their recorded offsets (a checkpoint rolled back has several).
	recorded int64
}

// newEngine runs q over inputs in; written are the tables q writes by their path.
func newEngine(cfg engineConfig, q query, in []input, written map[string]*table.Table) *engine {
	e := &engine{cfg: cfg, q: q, in: in, runID: uuid.NewString(), byPath: written, paths: map[*table.Table]string{},
		ckpt: checkpoint.Open(objstore.WithPrefix(cfg.lake, cfg.checkpoint)), counts: RunSummary{LastBatch: -1}}
	for p, t := range written {
		e.paths[t] = p
	}
	return e
}

// run runs the query with its trigger: once (one batch over everything new, no read limit,
// no no-data batch), available-now (everything the inputs hold at the start, in batches of
// the read limit, then the no-data batches the watermark asks for) or processing-time (until
// ctx is cancelled, which ends the run without an error at a batch boundary).
func (e *engine) run(ctx context.Context) (err error) {
	defer func() {
		e.q.stop()
		if err != nil {
			// The operators may hold a half-run batch: the next run reloads them from the
			// checkpoint, as a restarted process would.
			e.pos.started, e.pos.pending, e.planned = false, nil, false
			e.q.reset()
		}
	}()
	defer func() { err = e.concurrentRun(err) }()
	if err := e.start(ctx); err != nil {
		return err
	}
	if e.cfg.planAtStart {
		if ok, err := e.plan(ctx); err != nil || !ok {
			return err
		}
	}
	once := func(ctx context.Context) error {
		if e.pos.pending != nil {
			return e.runPending(ctx)
		}
		until, err := e.latest(ctx)
		if err != nil {
			return err
		}
		_, err = e.step(ctx, until, source.ReadLimit{}, false)
		return err
	}
	return runTrigger(ctx, e.cfg.trigger, e.cfg.clock, once, e.drain)
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

// drain fixes the inputs' latest versions and runs batches until nothing is left to do.
func (e *engine) drain(ctx context.Context) error {
	for e.pos.pending != nil {
		if err := e.runPending(ctx); err != nil {
			return err
		}
	}
	until, err := e.latest(ctx)
	if err != nil {
		return err
	}
	e.draining = until
	defer func() { e.draining = nil }()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		ran, err := e.step(ctx, until, e.cfg.limit, true)
		if err != nil || !ran {
			return err
		}
	}
}

// latest is each input's latest version (-1: the table does not exist yet).
func (e *engine) latest(ctx context.Context) ([]int64, error) {
	until := make([]int64, len(e.in))
	for i, in := range e.in {
		v, _, err := in.src.Latest(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s latest version: %w", in.label, err)
		}
		until[i] = v
	}
	return until, nil
}

// step runs the next batch if an input has new data (or, when noData, a no-data batch the
// watermark asks for) and reports whether it ran one.
func (e *engine) step(ctx context.Context, until []int64, limit source.ReadLimit, noData bool) (bool, error) {
	ctx = txlog.WithSnapshotScope(ctx) // one look at each table's log a batch
	if !slices.ContainsFunc(until, func(v int64) bool { return v >= 0 }) {
		return false, nil
	}
	if ok, err := e.plan(ctx); err != nil || !ok {
		return false, err
	}
	files := make([][]source.IndexedFile, len(e.in))
	ends := append([]*source.Offset(nil), e.pos.lastEnd...)
	moved := false
	for i, in := range e.in {
		if until[i] < 0 {
			continue
		}
		fs, end, err := in.src.NextBatch(ctx, e.pos.lastEnd[i], until[i], limit)
		if err != nil {
			return false, fmt.Errorf("%s: %w", in.label, err)
		}
		if e.pos.lastEnd[i] == nil && len(fs) == 0 {
			continue // an empty table: Delta's source has no offset to start from yet
		}
		files[i], ends[i] = fs, &end
		moved = moved || e.pos.lastEnd[i] == nil || *e.pos.lastEnd[i] != end
	}
	// The no-data rule: without new data a batch runs only when the trigger allows no-data
	// batches and the watermark (or an idle input's, moved with the clock) asks for one.
	if !moved && !(noData && (e.pos.needNoData || e.q.idleAdvance())) {
		return false, nil
	}
	entry := e.q.offsets(ends)
	entry.BatchTimestampMs, entry.Conf = e.cfg.clock().UnixMilli(), queryConf()
	began := time.Now()
	got, err := e.ckpt.WriteOffsets(ctx, e.pos.nextBatch, entry)
	if err != nil {
		return false, err
	}
	walMs := time.Since(began).Milliseconds()
	if !e.sameEntry(got, entry) {
		// Another run wrote this batch's WAL first: run what it says.
		e.pos.pending = got
		return true, e.runPending(ctx)
	}
	return true, e.runBatch(ctx, e.pos.nextBatch, got, files, walMs)
}

// sameEntry says whether the offsets entry got, read back, is the one this run wrote.
func (e *engine) sameEntry(got, want *checkpoint.Offsets) bool {
	if got.BatchWatermarkMs != want.BatchWatermarkMs {
		return false
	}
	a, err := e.q.ends(got, e.pos.nextBatch)
	if err != nil {
		return false
	}
	b, _ := e.q.ends(want, e.pos.nextBatch)
	for i := range b {
		x, y := a[i], b[i]
		if (x == nil) != (y == nil) || x != nil && *x != *y {
			return false
		}
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

// plan plans the query once; after a restore with nothing to re-run, the watermark the
// checkpoint left may ask for a no-data batch.
func (e *engine) plan(ctx context.Context) (bool, error) {
	if e.planned {
		return true, nil
	}
	// Every operator walks back through the same state versions: each version is read and
	// decoded once for all of them.
	e.restoring = map[int64]map[string][]byte{}
	ok, err := e.q.plan(ctx)
	e.restoring = nil
	if err != nil || !ok {
		return ok, err
	}
	e.planned = true
	if e.pos.pending == nil && e.pos.nextBatch > 0 {
		late, evict := e.q.watermarks()
		e.pos.needNoData = e.q.wantsNoData(evict, late)
	}
	return true, nil
}

// runPending re-runs the uncommitted batch with exactly the files of its recorded offsets.
func (e *engine) runPending(ctx context.Context) error {
	ctx = txlog.WithSnapshotScope(ctx) // one look at each table's log a batch
	entry := e.pos.pending
	if ok, err := e.plan(ctx); err != nil || !ok {
		return err
	}
	ends, err := e.q.ends(entry, e.pos.nextBatch)
	if err != nil {
		return err
	}
	files := make([][]source.IndexedFile, len(e.in))
	for i, in := range e.in {
		if files[i], err = filesThrough(ctx, in.src, e.pos.lastEnd[i], ends[i]); err != nil {
			return fmt.Errorf("%s: %w", in.label, err)
		}
	}
	e.pos.pending = nil
	if err := e.runBatch(ctx, e.pos.nextBatch, entry, files, 0); err != nil {
		return err
	}
	if e.pos.nextBatch > e.pos.recorded {
		return nil
	}
	// A rolled-back checkpoint: the next batch runs as recorded too.
	next, err := e.ckpt.ReadOffsets(ctx, e.pos.nextBatch)
	if err != nil {
		return err
	}
	if err := e.q.rerun(next); err != nil {
		return err
	}
	e.pos.pending = next
	return nil
}

// start reads the checkpoint: the query id, the last committed batch and an uncommitted
// batch to re-run. The state is restored by the query's plan, from the version this leaves
// in nextBatch.
func (e *engine) start(ctx context.Context) error {
	if e.pos.started {
		return nil
	}
	h, err := e.ckpt.ReadHead(ctx)
	if err != nil {
		return fmt.Errorf("%s: checkpoint %s: %w", e.cfg.prefix, e.cfg.checkpoint, err)
	}
	e.queryID, e.counts.QueryID = h.QueryID, h.QueryID
	if err := e.checkIdentity(ctx, h); err != nil {
		return err
	}
	e.pos = position{lastEnd: make([]*source.Offset, len(e.in)), recorded: h.Recorded}
	if h.Committed != nil {
		e.pos.tables = h.Committed.Tables
	}
	switch entry, c := h.Entry, h.Commit; {
	case h.Last < 0:
		e.q.restart(nil, nil, nil, nil)
	case c != nil:
		if e.pos.lastEnd, err = e.q.ends(entry, h.Last); err != nil {
			return err
		}
		e.pos.nextBatch = h.Last + 1
		// A run with no new data still says where the query stands.
		e.counts.LastBatch, e.counts.WatermarkMs = h.Last, c.NextBatchWatermarkMs
		e.q.restart(entry, c, nil, nil)
	default:
		if _, err := e.q.ends(entry, h.Last); err != nil {
			return err
		}
		if prev := h.Prev; prev != nil {
			if e.pos.lastEnd, err = e.q.ends(prev, h.Last-1); err != nil {
				return err
			}
		}
		e.pos.pending, e.pos.nextBatch = entry, h.Last
		e.counts.LastBatch, e.counts.WatermarkMs = h.Last-1, entry.BatchWatermarkMs
		e.q.restart(nil, nil, h.Prev, entry)
	}
	e.pos.started = true
	return nil
}

// checkIdentity refuses to run when an input is behind the offsets the checkpoint read it
// to, or a table the query writes is behind what the last commit recorded (identity.go).
func (e *engine) checkIdentity(ctx context.Context, h checkpoint.Head) error {
	wrap := func(err error) error {
		if err == nil || e.cfg.identity == "" {
			return err
		}
		return fmt.Errorf("%s: %w", e.cfg.identity, err)
	}
	entry, n, err := furthestRead(ctx, e.ckpt, h)
	if err != nil {
		return err
	}
	if entry != nil {
		if ends, err := e.q.ends(entry, n); err == nil {
			for i, in := range e.in {
				if err := checkRead(ctx, in.path, e.cfg.checkpoint, checkpoint.OffsetsKey(n), in.src, ends[i]); err != nil {
					return wrap(err)
				}
			}
		}
	}
	if h.Last < 0 && e.main != "" {
		return wrap(checkFreshQuery(ctx, e.cfg.checkpoint, h.QueryID, append([]string{e.main}, e.derived...), e.byPath))
	}
	if h.Committed == nil {
		return nil
	}
	if e.main != "" {
		written := slices.Collect(maps.Keys(e.byPath))
		if err := checkMainMoved(e.cfg.checkpoint, h.Committed.Tables, e.main, e.derived, written); err != nil {
			return wrap(fmt.Errorf("stream: %w", err))
		}
		if err := checkGoldMoved(ctx, e.cfg.lake, e.cfg.checkpoint, h.Committed.Tables, e.golds, written, e.byPath); err != nil {
			return wrap(fmt.Errorf("stream: %w", err))
		}
	}
	return wrap(checkWritten(ctx, e.cfg.checkpoint, h.QueryID, h.Committed.Tables, e.byPath))
}

// runBatch runs batch n over files with the watermarks the query restored and entry's
// timestamp, then writes commits/n and the progress, and cleans the checkpoint up.
func (e *engine) runBatch(ctx context.Context, n int64, entry *checkpoint.Offsets, files [][]source.IndexedFile, walMs int64) error {
	t0 := time.Now()
	late, evict := e.q.watermarks()
	if entry.BatchWatermarkMs != evict {
		return fmt.Errorf("%w: %s has batchWatermarkMs %d, the checkpoint's state and commits log give %d", checkpoint.ErrBad, checkpoint.OffsetsKey(n), entry.BatchWatermarkMs, evict)
	}
	b := &batchRun{n: n, entry: entry, late: late, evict: evict, txn: &table.AppTxn{AppID: e.queryID, Version: n},
		marks: newTableMarks(n, e.paths)}
	done, err := e.q.runBatch(ctx, b, files)
	if err != nil {
		return err
	}
	getMs, addMs := done.readAt.Sub(t0).Milliseconds(), time.Since(done.readAt).Milliseconds()
	tCommit := time.Now()
	tables := b.marks.over(e.pos.tables)
	if err := e.ckpt.WriteCommitRecord(ctx, n, checkpoint.Commit{NextBatchWatermarkMs: done.next, Tables: tables}); err != nil {
		return err
	}
	commitMs := time.Since(tCommit).Milliseconds()
	e.pos.tables = tables
	start := e.pos.lastEnd
	if e.pos.lastEnd, err = e.q.ends(entry, n); err != nil {
		return err
	}
	e.pos.nextBatch = n + 1
	e.q.committed(b, done)
	e.pos.needNoData = e.q.wantsNoData(done.next, evict)
	e.counts.Batches++
	e.counts.LastBatch, e.counts.WatermarkMs = n, done.next

	p := e.progress(b, start, done, timings{walMs: walMs, commitMs: commitMs, getMs: getMs, addMs: addMs, total: time.Since(t0)})
	if err := publishProgress(ctx, e.ckpt, e.cfg.logger, e.cfg.listener, n, p); err != nil {
		return err
	}
	retain := int64(e.cfg.state.MinBatchesToRetain)
	if retain <= 0 {
		retain = 100
	}
	// A state version may need the deltas back to its last full snapshot.
	retain = max(retain, int64(e.cfg.state.MinDeltasForSnapshot)+1)
	if old := n - retain; old >= 0 {
		if err := e.ckpt.Cleanup(ctx, old); err != nil {
			e.cfg.logger.Warn("stream: checkpoint cleanup failed", "query", e.cfg.name, "batch", old, "err", err)
		}
	}
	return nil
}

// timings are a batch's durations for its progress report.
type timings struct {
	walMs, commitMs, getMs, addMs int64
	total                         time.Duration
}

// progress builds batch b's StreamingQueryProgress: Spark's shape with each input as a
// source; the query adds its state operators and its sink.
func (e *engine) progress(b *batchRun, start []*source.Offset, done batchDone, tm timings) *Progress {
	trigger := time.UnixMilli(b.entry.BatchTimestampMs).UTC()
	prev := e.prevTrigger
	e.prevTrigger = trigger
	var rows int64
	for _, r := range done.rows {
		rows += r
	}
	p := &Progress{
		ID: e.queryID, RunID: e.runID, Name: e.cfg.name, Timestamp: trigger, BatchID: b.n,
		NumInputRows: rows, InputRowsPerSecond: InputRowsPerSecond(rows, prev, trigger), ProcessedRowsPerSecond: ProcessedRowsPerSecond(rows, tm.total),
		DurationMs: map[string]int64{"addBatch": tm.addMs, "commitOffsets": tm.commitMs, "getBatch": tm.getMs,
			"latestOffset": 0, "queryPlanning": 0, "triggerExecution": tm.total.Milliseconds(), "walCommit": tm.walMs},
	}
	ends, _ := e.q.ends(b.entry, b.n)
	for i, in := range e.in {
		sp := SourceProgress{Description: "DeltaSource[" + in.path + "]", NumInputRows: done.rows[i],
			InputRowsPerSecond: InputRowsPerSecond(done.rows[i], prev, trigger), ProcessedRowsPerSecond: ProcessedRowsPerSecond(done.rows[i], tm.total)}
		if start[i] != nil {
			sp.StartOffset = OffsetJSON(start[i].String())
		}
		if ends[i] != nil {
			sp.EndOffset = OffsetJSON(ends[i].String())
		}
		p.Sources = append(p.Sources, sp)
	}
	e.q.progress(p, b)
	return p
}

// stateSections reads the sections of state version v; version 0, the empty state, has none
// (nil). During a restore each version is read once for every operator that walks back
// through it.
func (e *engine) stateSections(ctx context.Context, v int64) (map[string][]byte, error) {
	if v == 0 {
		return nil, nil
	}
	if sections, ok := e.restoring[v]; ok {
		return sections, nil
	}
	sections, err := e.ckpt.ReadState(ctx, v)
	if err == nil && e.restoring != nil {
		e.restoring[v] = sections
	}
	return sections, err
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

// ErrConcurrentRun reports a run whose commit lost to another process's commit of this query's
// own batch: two processes run the query on one checkpoint at once.
var ErrConcurrentRun = errors.New("another process is running query")

// concurrentRun is err, when a table refused this run's commit because a commit carrying this
// query's own txn won (only a run of the query on this checkpoint commits it), said so with
// the way out. Every other error, other conflicts included, is returned as it is.
func (e *engine) concurrentRun(err error) error {
	var tc *txlog.TxnConflictError
	if e.queryID == "" || !errors.As(err, &tc) || tc.AppID != e.queryID {
		return err
	}
	return fmt.Errorf("%s: %w %s (checkpoint %s): it committed batch %d while this run did; stop one of them and run "+
		"the query from one place (serve's lease keeps a second serve from running it, not a `run stream` by hand: "+
		"docs/operating.md): %w",
		e.cfg.prefix, ErrConcurrentRun, e.cfg.name, e.cfg.checkpoint, tc.TxnVersion, err)
}
