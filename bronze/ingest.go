package bronze

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// IngestOptions configure an Ingester. Paths are keys under the lake bucket.
type IngestOptions struct {
	LandingPrefix      string // e.g. "landing/events/"
	Format             string // FormatJSON or FormatCSV
	MaxFilesPerTrigger int    // objects per batch; default 1000
	Declared           *txlog.StructType
	// Schema is what a changed Declared may do to an existing bronze table besides adding
	// columns (EvolveTable).
	Schema         SchemaPolicy
	BronzePath     string // e.g. "bronze/events"
	RejectsPath    string // e.g. "bronze/rejects"
	CheckpointPath string // e.g. "_checkpoints/ingest"
	// TableProps are the table properties bronze and rejects are created with (e.g.
	// delta.enableChangeDataFeed); a table that exists keeps its own.
	TableProps map[string]string
	Limits     Limits
	// Workers encode parts of a batch (runs of its objects, see PartBytes) at once; default
	// GOMAXPROCS. Each worker decodes its NDJSON objects in blocks on every core. It changes
	// speed only: the data files a batch becomes do not depend on it.
	Workers int
	// PartBytes and MaxParts cut a batch's objects, in their listed order, into parts, each
	// encoded into data files of its own: as many parts as the batch's listed bytes hold
	// PartBytes, at most MaxParts and at most one an object, each about the same size.
	// Defaults 1 MiB and 16. Every ingester with the same values writes a batch into the same
	// files, whatever its machine.
	PartBytes int64
	MaxParts  int
	// FlushRows bounds the rows a worker holds before writing them out; default 65536.
	FlushRows    int
	WriteOptions pq.WriteOptions
	// OrderWait is how long a batch waits for the batch before it to commit (another ingester
	// may be writing it) before re-running that batch itself. Default 2 minutes.
	OrderWait time.Duration
	Logger    *slog.Logger
	Clock     func() time.Time
	// OnBatch, when set, sees each batch this run counts, once committed (progress bars).
	OnBatch func(batch Report)
}

// Ingester moves landing objects into the bronze and rejects tables exactly once.
//
// The ingest checkpoint (under CheckpointPath) holds batches/N (the objects of batch N, or
// byte ranges of them, and its fixed ingest time, claimed with put-if-absent before any data is
// written), reads/N (how each read ended and what the batch counts, written before the tables
// commit; ends/N in older versions) and commits/N (written with put-if-absent after both tables
// committed: the run whose record lands is the one run that counts the batch in its Report).
// Every table commit carries txn(appId, N). So:
// a crash before the claim loses nothing; a crash after it leaves batch N pending, and the next
// run re-runs it with the same objects and ingest time, the tables skipping what they already
// committed; two ingesters never claim one object twice, because each claims the next batch
// number with put-if-absent after reading every earlier claim. Batches commit to the tables in
// batch order (batch N waits for N-1, and re-runs it itself if its claimer seems gone), so the
// txn version of each table is the last batch it holds, as Delta's idempotent writes assume.
type Ingester struct {
	lake    objstore.Bucket
	ckpt    objstore.Bucket
	opts    IngestOptions
	bronze  *table.Table
	rejects *table.Table
	log     *slog.Logger
	now     func() time.Time

	// snaps caches each table's latest snapshot: a batch refreshes it with the commits since,
	// instead of reloading the log and its checkpoint (which grows with the table).
	snapMu sync.Mutex
	snaps  map[*table.Table]*txlog.Snapshot
	// rules are each table's row rules, from the writer-feature check before a batch's files
	// are written (checkWritable); guarded by snapMu.
	rules map[*table.Table]*table.RowRules

	// blocks keeps the decoders of NDJSON blocks across objects and batches.
	blocks *decoderPool
	// blockBytes sizes the NDJSON blocks (0: blockBytes); tests cut small ones.
	blockBytes int
}

// snapshot returns t's latest snapshot, replaying only the commits since the cached one.
func (x *Ingester) snapshot(ctx context.Context, t *table.Table) (*txlog.Snapshot, error) {
	x.snapMu.Lock()
	prev := x.snaps[t]
	x.snapMu.Unlock()
	snap, err := t.Log().Refresh(ctx, prev)
	if err != nil {
		return nil, err
	}
	x.snapMu.Lock()
	if x.snaps == nil {
		x.snaps = map[*table.Table]*txlog.Snapshot{}
	}
	x.snaps[t] = snap
	x.snapMu.Unlock()
	return snap, nil
}

// NewIngester prepares an ingester over a lake bucket.
func NewIngester(lake objstore.Bucket, opts IngestOptions) (*Ingester, error) {
	if opts.Declared == nil || len(opts.Declared.Fields) == 0 {
		return nil, errors.New("bronze: no declared columns")
	}
	if _, err := FieldsOf(opts.Declared); err != nil {
		return nil, err
	}
	if opts.MaxFilesPerTrigger <= 0 {
		opts.MaxFilesPerTrigger = 1000
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.FlushRows <= 0 {
		opts.FlushRows = 1 << 16
	}
	if opts.PartBytes <= 0 {
		opts.PartBytes = DefaultPartBytes
	}
	if opts.MaxParts <= 0 {
		opts.MaxParts = DefaultMaxParts
	}
	if opts.Format == "" {
		opts.Format = FormatJSON
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.OrderWait <= 0 {
		opts.OrderWait = 2 * time.Minute
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.LandingPrefix != "" && !strings.HasSuffix(opts.LandingPrefix, "/") {
		opts.LandingPrefix += "/"
	}
	tableOpts := table.Options{Clock: opts.Clock}
	declared, limits := opts.Declared, opts.Limits
	return &Ingester{
		blocks: &decoderPool{
			newDecoder: func() (*Decoder, error) { return NewDecoder(declared, limits) },
			slots:      make(chan struct{}, max(4, 2*runtime.GOMAXPROCS(0))),
		},
		lake:    lake,
		ckpt:    objstore.WithPrefix(lake, opts.CheckpointPath),
		opts:    opts,
		bronze:  table.Open(objstore.WithPrefix(lake, opts.BronzePath), tableOpts),
		rejects: table.Open(objstore.WithPrefix(lake, opts.RejectsPath), tableOpts),
		log:     opts.Logger.With("job", "ingest"),
		now:     opts.Clock,
	}, nil
}

// Run ingests until no new object is left (AvailableNow semantics): first any batch a crashed
// run left pending, then new objects in key order, MaxFilesPerTrigger per batch.
func (x *Ingester) Run(ctx context.Context) (Report, error) {
	return x.run(ctx, nil)
}

// IngestKeys ingests only the named landing objects (event-driven ingestion), still exactly once:
// keys already claimed are ignored, and pending batches are completed first.
func (x *Ingester) IngestKeys(ctx context.Context, keys []string) (Report, error) {
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	return x.run(ctx, want)
}

func (x *Ingester) run(ctx context.Context, only map[string]bool) (Report, error) {
	start := time.Now()
	var rep Report
	st, err := x.loadState(ctx)
	if err != nil {
		return rep, err
	}
	// Before a table is created: a table gone with its batches is refused, not made anew.
	if err := x.checkCommitted(ctx, st, "ingest checkpoint "+x.opts.CheckpointPath); err != nil {
		return rep, err
	}
	if err := x.ensureTables(ctx, BronzeSchema(x.opts.Declared), nil); err != nil {
		return rep, err
	}
	// Pending batches first, in order.
	for _, id := range pendingBatches(st.batches, st.committed) {
		x.log.Info("re-running pending batch", "batch", id, "files", len(st.batches[id].Files))
		if err := x.runBatch(ctx, st, st.batches[id], &rep); err != nil {
			return rep, err
		}
	}
	readThisRun := map[string]bool{}
	// Batch N commits (a few small writes, each synced, and the tables' logs read again) while
	// batch N+1 is listed, claimed, decoded and written: the commits wait for the batch before,
	// as they always did, and the next batch's data files are invisible until its own commit.
	// At most one batch is committing; its counts join rep when it is done.
	var inflight *committing
	settle := func() error {
		if inflight == nil {
			return nil
		}
		c := inflight
		inflight = nil
		<-c.done
		rep.Batches += c.rep.Batches
		rep.Files += c.rep.Files
		rep.merge(c.rep)
		if c.err != nil {
			return c.err
		}
		st.committed[c.id] = true
		return nil
	}
	defer settle() // an error return has settled already; this only keeps goroutines from outliving run
	// One listing feeds batches until what it found is claimed: listing the landing prefix
	// again for every batch cost a walk of every object per batch. Objects that arrive
	// meanwhile are found by the listing after, in this run.
	var queued []fileRecord
	for {
		if len(queued) == 0 {
			var err error
			if queued, err = x.discover(ctx, st, only, readThisRun); err != nil {
				err = errors.Join(err, settle()) // settle first: it adds to rep
				return rep, err
			}
		}
		if len(queued) == 0 {
			break
		}
		candidates := queued[:min(len(queued), x.opts.MaxFilesPerTrigger)]
		b := &batchRecord{BatchID: st.next, IngestTime: x.now().UnixMicro(), Files: candidates}
		data, _ := json.Marshal(b)
		err = objstore.PutBytesIfAbsent(ctx, x.ckpt, batchKey(b.BatchID), data)
		if errors.Is(err, objstore.ErrAlreadyExists) {
			// Another ingester claimed this batch number: learn its claims and choose again.
			queued = nil
			if err := settle(); err != nil {
				return rep, err
			}
			if st, err = x.loadState(ctx); err != nil {
				return rep, err
			}
			continue
		}
		if err != nil {
			err = errors.Join(fmt.Errorf("bronze: claim batch %d: %w", b.BatchID, err), settle())
			return rep, err
		}
		queued = queued[len(candidates):]
		st.batches[b.BatchID] = b
		for _, f := range b.Files {
			st.claimed[f.Key] = f
			st.claimedIn[f.Key] = b.BatchID
			readThisRun[f.Key] = true
			if f.Offset > 0 || f.Rewrite {
				rep.ChangedObjects = append(rep.ChangedObjects, f.Key)
			}
			if f.Rewrite {
				rep.RewrittenObjects = append(rep.RewrittenObjects, f.Key)
			}
		}
		st.next++
		d, err := x.prepareBatch(ctx, st.appID, b, true)
		if serr := settle(); err != nil || serr != nil {
			err = errors.Join(err, serr)
			return rep, err
		}
		// Commit records are written after both tables commit; settle marked this run's own.
		d.prevDone = b.BatchID == 0 || st.committed[b.BatchID-1]
		c := &committing{id: b.BatchID, done: make(chan struct{})}
		inflight = c
		appID := st.appID
		go func() {
			defer close(c.done)
			c.err = x.commitBatch(ctx, appID, d, &c.rep)
		}()
	}
	if err := settle(); err != nil {
		return rep, err
	}
	x.finishReport(ctx, start, &rep)
	return rep, nil
}

// finishReport fills in what a run's summary says once it is over: its duration, its speed and
// the bronze version it left.
func (x *Ingester) finishReport(ctx context.Context, start time.Time, rep *Report) {
	rep.DurationMs = time.Since(start).Milliseconds()
	if secs := time.Since(start).Seconds(); secs > 0 {
		rep.RowsPerSecond = float64(rep.Rows) / secs
	}
	if snap, err := x.bronze.Log().Snapshot(ctx); err == nil {
		rep.BronzeVersion = snap.Version()
	}
}

// committing is a batch whose commit runs beside the next batch's decoding.
type committing struct {
	id   int64
	rep  Report // what the commit counted
	err  error
	done chan struct{}
}

// ensureTables creates bronze (with bronzeSchema) and rejects when missing; vetBronze, when set,
// may refuse an existing bronze table's schema first.
func (x *Ingester) ensureTables(ctx context.Context, bronzeSchema *txlog.StructType, vetBronze func(*txlog.StructType) error) error {
	if vetBronze != nil {
		snap, err := x.snapshot(ctx, x.bronze) // cached: the commits refresh it
		if err == nil {
			if schema, serr := snap.Schema(); serr == nil {
				if err := vetBronze(schema); err != nil {
					return err
				}
			}
		}
	}
	for _, t := range []struct {
		tbl    *table.Table
		schema *txlog.StructType
		name   string
	}{
		{x.bronze, bronzeSchema, x.opts.BronzePath},
		{x.rejects, RejectsSchema(), x.opts.RejectsPath},
	} {
		if err := ensureTable(ctx, t.tbl, t.name, t.schema, x.opts.Declared, x.opts.Schema, x.opts.TableProps, t.tbl == x.bronze); err != nil {
			return err
		}
	}
	return nil
}

// ensureTable creates the table with schema and props when it is missing; bronze (isBronze)
// goes through EnsureBronzeTable.
func ensureTable(ctx context.Context, tbl *table.Table, name string, schema, declared *txlog.StructType, policy SchemaPolicy, props map[string]string, isBronze bool) error {
	if isBronze {
		return EnsureBronzeTable(ctx, tbl, name, schema, declared, policy, props)
	}
	_, err := tbl.Log().Snapshot(ctx)
	if err == nil {
		return nil
	}
	if !errors.Is(err, txlog.ErrTableNotFound) {
		return fmt.Errorf("bronze: open %s: %w", name, err)
	}
	if _, err := tbl.Create(ctx, schema, nil, props); err != nil && !errors.Is(err, table.ErrTableExists) {
		return fmt.Errorf("bronze: create %s: %w", name, err)
	}
	return nil
}

// runBatch decodes the batch's objects on the workers, writes data files, and commits both
// tables idempotently, then records the batch as committed.
func (x *Ingester) runBatch(ctx context.Context, st *state, b *batchRecord, rep *Report) error {
	d, err := x.prepareBatch(ctx, st.appID, b, false)
	if err != nil {
		return err
	}
	if err := x.commitBatch(ctx, st.appID, d, rep); err != nil {
		return err
	}
	st.committed[b.BatchID] = true
	return nil
}

// preparedBatch is a batch whose data files are written and whose read ends are recorded: what
// is left is to commit it (commitBatch).
type preparedBatch struct {
	b *batchRecord
	batchFiles
	// counted: rep holds the batch's counts (decoded here, or recorded in reads/N by the run
	// that did); false only for a batch an older version left committed but unrecorded.
	counted bool
	// prevDone: the checkpoint, or this run, saw both tables commit the batch before, so
	// commitBatch need not read their logs to learn it.
	prevDone bool
}

// prepareBatch decodes the batch's objects on the workers and writes its data files, unless
// both tables hold it already. Nothing it writes is visible before commitBatch, so it may run
// while the batch before commits. fresh: this run has just claimed the batch, so no table can
// hold it yet (another ingester runs a batch it did not claim only after OrderWait), and the
// tables' logs are not read to learn it; commit checks the txn again anyway.
func (x *Ingester) prepareBatch(ctx context.Context, appID string, b *batchRecord, fresh bool) (*preparedBatch, error) {
	d := &preparedBatch{b: b}
	var err error
	if !fresh {
		d.bronzeDone, d.rejectsDone, err = x.alreadyCommitted(ctx, appID, b.BatchID)
		if err != nil {
			return nil, err
		}
	}
	if !d.bronzeDone || !d.rejectsDone {
		if err := x.checkWritable(ctx); err != nil {
			return nil, err
		}
		d.bronzeAdds, d.rejectAdds, d.rep, err = x.decodeAll(ctx, b)
		if err != nil {
			return nil, err
		}
		// How the reads ended is kept before the tables commit, so that a crash before the
		// commit record cannot lose it: without it, the next growth of these objects would be
		// taken for a rewrite and read twice.
		// The counts go with them, for a run that finds both tables holding the batch and so
		// does not decode it, yet may be the one that records and reports it (commitBatch).
		d.counted = true
		data, _ := json.Marshal(batchReads{Ends: d.rep.ends, Counts: countsOf(d.rep)})
		if err := objstore.PutBytes(ctx, x.ckpt, readsKey(b.BatchID), data); err != nil {
			return nil, fmt.Errorf("bronze: record batch %d's reads: %w", b.BatchID, err)
		}
	} else if d.rep, d.counted, err = x.recoverReads(ctx, b); err != nil {
		return nil, err
	}
	return d, nil
}

// commitBatch commits a prepared batch to both tables, after the batch before it, and records
// it as committed in the checkpoint; rep counts it when this run's commit record is the one
// that landed. It does not touch the run's state, so that it can run beside the next batch's
// prepareBatch.
func (x *Ingester) commitBatch(ctx context.Context, appID string, d *preparedBatch, rep *Report) error {
	b, batchRep, bronzeDone, rejectsDone := d.b, d.rep, d.bronzeDone, d.rejectsDone
	// The commits are a few small writes: once decoded, a batch is finished even when ctx is
	// cancelled (Ctrl-C), so that an interrupted run reports every batch it wrote and its rerun
	// the rest, their summaries adding up to the landing lines. That includes seeing that the
	// batch before is committed (the run's own batch before, which commits while this one
	// decodes); only a wait for another ingester's batch stops at a cancellation.
	fin := context.WithoutCancel(ctx)
	if (!bronzeDone || !rejectsDone) && !d.prevDone {
		prevBronze, prevRejects, err := x.alreadyCommitted(fin, appID, b.BatchID-1)
		if err != nil {
			return err
		}
		if b.BatchID > 0 && (!prevBronze || !prevRejects) {
			if err := x.waitForPredecessor(ctx, appID, b.BatchID, "ingest", func(ctx context.Context) (bool, error) {
				// Re-read the claims: the batch before may have been claimed by another ingester.
				st, err := x.loadState(ctx)
				if err != nil || st.batches[b.BatchID-1] == nil {
					return false, err
				}
				return true, x.runBatch(ctx, st, st.batches[b.BatchID-1], rep)
			}); err != nil {
				return err
			}
		}
	}
	rec, wroteBronze, wroteRejects, err := x.commitTables(fin, appID, b.BatchID, "batch", &d.batchFiles)
	if err != nil {
		return err
	}
	rec.Ends = batchRep.ends
	// One run counts a batch: the one whose commit record lands (put-if-absent, one winner).
	// Which run's table commits landed cannot decide it: two ingesters racing on one batch may
	// each land one table's commit (the bronze one here, the rejects one there), and a run that
	// finds bronze already holding the batch cannot tell a dead claimer from one that is still
	// finishing it and will count it. A run that loses the record, or fails before writing it,
	// counts nothing; a run that writes it counts the batch, whichever tables it committed.
	data, _ := json.Marshal(rec)
	err = objstore.PutBytesIfAbsent(fin, x.ckpt, commitKey(b.BatchID), data)
	if errors.Is(err, objstore.ErrAlreadyExists) {
		x.log.Info("batch committed by another ingester", "batch", b.BatchID, "wrote_bronze", wroteBronze, "wrote_rejects", wroteRejects)
		return nil
	}
	if err != nil {
		return fmt.Errorf("bronze: record batch %d: %w", b.BatchID, err)
	}
	if !d.counted {
		x.log.Warn("batch was committed by an older version that kept no counts; this summary counts its objects but not its lines", "batch", b.BatchID)
	}
	rep.Batches++
	rep.Files += len(b.Files)
	rep.merge(batchRep)
	if x.opts.OnBatch != nil {
		batchRep.Batches, batchRep.Files = 1, len(b.Files)
		x.opts.OnBatch(batchRep)
	}
	x.log.Info("batch committed", "batch", b.BatchID, "files", len(b.Files), "rows", batchRep.Rows,
		"rejected", batchRep.Rejected, "bronze_version", rec.BronzeVersion)
	return nil
}

// waitForPredecessor returns once both tables hold batch-1 (or batch is 0). After OrderWait
// it stops waiting for the other claimer and re-runs the batch before itself (rerunPrev: false
// when the checkpoint, of kind "ingest" or "kafka ingest", lacks it); the txn check makes a
// double run harmless.
func (x *Ingester) waitForPredecessor(ctx context.Context, appID string, batch int64, kind string, rerunPrev func(context.Context) (bool, error)) error {
	return x.waitForBatch(ctx, appID, batch-1, func(ctx context.Context) error {
		found, err := rerunPrev(ctx)
		if err == nil && !found {
			return fmt.Errorf("bronze: %s checkpoint has batch %d but not batch %d: it was edited or partly deleted", kind, batch, batch-1)
		}
		return err
	})
}

// waitForBatch returns once both tables hold batch (at once when batch < 0), polling with a
// growing pause; past OrderWait it calls rerun to run the batch here, and polls again.
func (x *Ingester) waitForBatch(ctx context.Context, appID string, batch int64, rerun func(context.Context) error) error {
	if batch < 0 {
		return nil
	}
	deadline := time.Now().Add(x.opts.OrderWait)
	pause := 5 * time.Millisecond
	for {
		bronzeDone, rejectsDone, err := x.alreadyCommitted(ctx, appID, batch)
		if err != nil {
			return err
		}
		if bronzeDone && rejectsDone {
			return nil
		}
		if time.Now().After(deadline) {
			x.log.Warn("batch before this one is still not committed; running it here", "batch", batch)
			if err := rerun(ctx); err != nil {
				return err
			}
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
}

// batchFiles are a batch's data files and counts, and which tables held it already before they
// were written (those get no commit).
type batchFiles struct {
	bronzeDone, rejectsDone bool
	bronzeAdds, rejectAdds  []*txlog.Add
	rep                     Report
}

// commitTables commits the batch's files to bronze, then rejects, each unless it held the batch
// already, with txn(appID, batch) and Spark's STREAMING UPDATE operation, and returns the commit
// record to write (its Ends left to the caller) and whether each commit was this call's. what
// names the batch in errors ("batch", "kafka batch").
func (x *Ingester) commitTables(ctx context.Context, appID string, batch int64, what string, f *batchFiles) (rec commitRecord, wroteBronze, wroteRejects bool, err error) {
	rec = commitRecord{BatchID: batch, Rows: f.rep.Rows, Rejected: f.rep.Rejected}
	op := txlog.Operation{
		Name:       "STREAMING UPDATE",
		Parameters: map[string]any{"outputMode": "Append", "queryId": appID, "epochId": fmt.Sprint(batch)},
	}
	if !f.bronzeDone {
		op.Metrics = map[string]int64{"numOutputRows": f.rep.Rows, "numAddedFiles": int64(len(f.bronzeAdds))}
		if rec.BronzeVersion, wroteBronze, err = x.commit(ctx, x.bronze, appID, batch, f.bronzeAdds, op); err != nil {
			return rec, false, false, fmt.Errorf("bronze: commit %s %d to %s: %w", what, batch, x.opts.BronzePath, err)
		}
	}
	if !f.rejectsDone {
		op.Metrics = map[string]int64{"numOutputRows": f.rep.Rejected, "numAddedFiles": int64(len(f.rejectAdds))}
		if rec.RejectsVersion, wroteRejects, err = x.commit(ctx, x.rejects, appID, batch, f.rejectAdds, op); err != nil {
			return rec, false, false, fmt.Errorf("bronze: commit %s %d to %s: %w", what, batch, x.opts.RejectsPath, err)
		}
	}
	return rec, wroteBronze, wroteRejects, nil
}

func (x *Ingester) alreadyCommitted(ctx context.Context, appID string, batch int64) (bool, bool, error) {
	var done [2]bool
	for i, t := range []*table.Table{x.bronze, x.rejects} {
		snap, err := x.snapshot(ctx, t)
		if err != nil {
			return false, false, fmt.Errorf("bronze: read table: %w", err)
		}
		if v, ok := snap.TxnVersion(appID); ok && v >= batch {
			done[i] = true
		}
	}
	return done[0], done[1], nil
}

// commit adds the files with txn(appID, batch) in one commit, unless the table already has it;
// wrote says whether this call's commit is the one that landed.
func (x *Ingester) commit(ctx context.Context, t *table.Table, appID string, batch int64, adds []*txlog.Add, op txlog.Operation) (version int64, wrote bool, err error) {
	for attempt := 0; ; attempt++ {
		snap, err := x.snapshot(ctx, t)
		if err != nil {
			return 0, false, err
		}
		if v, ok := snap.TxnVersion(appID); ok && v >= batch {
			// Not the version of the batch's commit (the snapshot may hold later ones): 0, so
			// that the commit record claims no version for it (checkCommitted).
			return 0, false, nil
		}
		// A stream that starts from a snapshot reads it in commit order (table.SequenceModTimes).
		table.SequenceModTimes(snap, adds)
		tx := t.Log().Begin(snap)
		tx.Add(adds...)
		tx.SetTxn(appID, batch)
		v, err := tx.Commit(ctx, op)
		if err == nil {
			return v, true, nil
		}
		// Another ingester committed this very batch at the same moment: re-check the txn.
		if errors.Is(err, txlog.ErrConcurrentTransaction) && attempt < 3 {
			continue
		}
		return 0, false, err
	}
}
