package late

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// replaySource is the table replay recomputes from, as of one stream batch.
type replaySource struct {
	t    *table.Table
	snap *txlog.Snapshot
	// latest is silver's latest snapshot (snap may be an earlier one): what the identity
	// check compares with the stream's checkpoint.
	latest *txlog.Snapshot
	schema *txlog.StructType // silver's: with a transform, bronze's columns and the computed ones
	// bronzeSchema is the bronze table's schema when the source is bronze.
	bronzeSchema *txlog.StructType
	q            *spec.Query
	bronze       bool
	// nowMs is current_timestamp() for the drop expectations that re-validate bronze rows: the
	// timestamp of the last batch replay covers (a row's own batch decided with its own).
	nowMs int64
	// track follows the files and rows read (nil: nobody watches).
	track *replayTracker
	// times are the files' statistics for event-time column timesCol (see fileTimes).
	times    []fileTime
	timesCol string
}

// openSource opens silver as of batch upTo (the version holding the batch's txn), or bronze
// as of the end offset batch upTo read.
func openSource(ctx context.Context, opts *Options, kind, queryID string, upTo int64) (*replaySource, error) {
	q := &opts.Query
	src := &replaySource{q: q, bronze: kind == SourceBronze, track: opts.track}
	var err error
	if !src.bronze {
		src.t = opts.open(q.Tables.Silver)
		if src.snap, err = src.t.Log().Snapshot(ctx); err != nil {
			return nil, fmt.Errorf("late: silver: %w", err)
		}
		src.latest = src.snap
		// Leave out what a batch after upTo wrote (a batch running right now).
		for {
			v, ok := src.snap.TxnVersion(queryID)
			if !ok || v <= upTo {
				break
			}
			if src.snap, err = src.t.Log().SnapshotAt(ctx, src.snap.Version()-1); err != nil {
				return nil, fmt.Errorf("late: silver as of batch %d: %w", upTo, err)
			}
		}
	} else {
		src.t = opts.open(q.Tables.Bronze)
		e, err := checkpoint.Open(objstore.WithPrefix(opts.Lake, q.Tables.Checkpoint)).ReadOffsets(ctx, upTo)
		if err != nil {
			return nil, fmt.Errorf("late: %w", err)
		}
		src.nowMs = e.BatchTimestampMs
		if end := e.End; end == nil {
			src.snap = nil
		} else {
			v := end.ReservoirVersion
			if end.Index < 0 {
				v--
			}
			if src.snap, err = src.t.Log().SnapshotAt(ctx, v); err != nil {
				return nil, fmt.Errorf("late: bronze version %d: %w", v, err)
			}
		}
		if src.snap == nil {
			if src.snap, err = src.t.Log().Snapshot(ctx); err != nil {
				return nil, fmt.Errorf("late: bronze: %w", err)
			}
		}
	}
	if src.schema, err = src.snap.Schema(); err != nil {
		return nil, fmt.Errorf("late: source schema: %w", err)
	}
	if src.bronze {
		src.bronzeSchema = src.schema
		if !q.Rules.Transform.IsZero() {
			x, err := silver.NewTransformer(ctx, q.Rules.Transform, silver.Schema(src.schema))
			if err != nil {
				return nil, fmt.Errorf("late: %w", err)
			}
			src.schema = x.Schema()
		}
	}
	return src, nil
}

// read calls fn for every valid source row with lo <= event time < hi. From bronze, rows are
// validated as the stream validates them (event time, required columns, future skew) and
// deduplicated on stream.dedup, first arrival (commit order, then row order) winning.
func (s *replaySource) read(ctx context.Context, a *agg, lo, hi int64, fn func(s *source, i int) error) error {
	return s.readBatches(ctx, a, lo, hi, 1, false, func(_ int, src *source, sel []int32) error {
		for _, i := range sel {
			if err := fn(src, int(i)); err != nil {
				return err
			}
		}
		return nil
	})
}

// readBatches is read a batch at a time: fn gets each decoded batch of the source's columns
// and the rows of it that pass (sel, ascending). With workers > 1 and a silver source, the
// files are shared out among that many goroutines, fn's first argument naming the caller's
// worker (0 <= w < workers; one worker's calls never overlap, and it reads the same files in
// every run); bronze is read in order by
// one worker, since its deduplication keeps the first arrival. With reuse, each batch's
// buffers are decoded into again for the next one, so fn must not keep a batch's rows.
func (s *replaySource) readBatches(ctx context.Context, a *agg, lo, hi int64, workers int, reuse bool, fn func(w int, s *source, sel []int32) error) error {
	return s.readBatchesFor(ctx, a, nil, lo, hi, workers, reuse, fn)
}

// readBatchesFor is readBatches that also reads the columns the aggregations also read, so
// that fn can bind them (agg.source) to each batch (s.b) as well: one read of the source
// for several aggregations.
func (s *replaySource) readBatchesFor(ctx context.Context, a *agg, also []*agg, lo, hi int64, workers int, reuse bool, fn func(w int, s *source, sel []int32) error) error {
	if s.bronze {
		workers = 1
	}
	r, err := s.newSourceRead(a, also, lo, hi)
	if err != nil {
		return err
	}
	r.workers, r.reuse, r.fn = max(workers, 1), reuse, fn
	r.shareFiles()
	// The files the statistics let through, read one at a time (in the same order) so that
	// progress can count them, a pass's total known before its first file.
	s.track.startPass(len(r.files))
	if r.workers == 1 {
		return r.work(ctx, 0)
	}
	// The first error stops the others at their next file or batch.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var first error
	var wg sync.WaitGroup
	for w := range r.workers {
		wg.Go(func() {
			if err := r.work(ctx, w); err != nil {
				r.mu.Lock()
				if first == nil {
					first = err
				}
				r.mu.Unlock()
				cancel()
			}
		})
	}
	wg.Wait()
	return first
}

// sourceRead is one pass of readBatches over the source: the columns and files it reads,
// how it re-validates and deduplicates bronze rows, and what it hands fn.
type sourceRead struct {
	s      *replaySource
	a      *agg
	lo, hi int64
	cols   []string
	files  []*txlog.Add
	dedup  []string
	rules  silver.Rules
	expect *silver.Expectations // bronze's drop expectations (nil: none)
	// transform (bronze, with a transform): silver's computed columns and filter are
	// recomputed from bronze rows as the stream computed them; one Transformer per worker.
	transform bool
	seen      map[string]bool // bronze: the dedup keys kept so far
	workers   int
	share     []int // worker w reads files[share[w]:share[w+1]]
	reuse     bool
	fn        func(w int, s *source, sel []int32) error
	mu        sync.Mutex // guards the tracker and the first error
}

// newSourceRead plans a pass over the rows with lo <= event time < hi, reading the columns
// of a and of also.
func (s *replaySource) newSourceRead(a *agg, also []*agg, lo, hi int64) (*sourceRead, error) {
	r := &sourceRead{s: s, a: a, lo: lo, hi: hi, seen: map[string]bool{}}
	r.cols = append(append([]string{a.evName}, a.keyNames...), a.inCols...)
	for _, b := range also {
		r.cols = append(append(append(r.cols, b.evName), b.keyNames...), b.inCols...)
	}
	var required []string
	if s.bronze {
		required, r.dedup = s.q.Rules.Required, s.q.Dedup
		r.cols = append(append(append(r.cols, required...), r.dedup...), bronze.ColIngestTime)
	}
	// Bronze rows a drop expectation rejected never reached silver: replay drops them too.
	if drops := silver.OnlyDrop(s.q.Rules.Expectations); s.bronze && len(drops) > 0 {
		var err error
		if r.expect, err = silver.NewExpectations(drops); err != nil {
			return nil, fmt.Errorf("late: %w", err)
		}
		for _, c := range r.expect.Columns() {
			for _, f := range s.schema.Fields {
				if strings.EqualFold(f.Name, c) {
					r.cols = append(r.cols, f.Name)
				}
			}
		}
	}
	// The time filter skips files on their statistics; rows are kept by the loop below, so
	// the scans that read need no row filter (which would also read the schema's first
	// column: a view's length comes from it).
	r.cols = dedupe(r.cols)
	filter := sqlexpr.And(sqlexpr.Ge(a.evName, time.UnixMicro(lo).UTC()), sqlexpr.Lt(a.evName, time.UnixMicro(hi).UTC()))
	if s.bronze && !s.q.Rules.Transform.IsZero() {
		// The computed columns are not in bronze: read every column (the expressions may
		// read any) and, when the event time is computed, every file.
		r.transform, r.cols = true, nil
		if s.bronzeSchema.Field(a.evName) == nil {
			filter = nil
		}
	}
	skip, err := s.t.FileScan(s.snap, nil, filter)
	if err != nil {
		return nil, fmt.Errorf("late: source scan: %w", err)
	}
	files := slices.Clone(s.snap.Files())
	if s.bronze {
		slices.SortStableFunc(files, func(x, y *txlog.Add) int {
			return cmp.Or(cmp.Compare(x.ModificationTime, y.ModificationTime), cmp.Compare(x.Path, y.Path))
		})
	}
	r.files = skip.Files(files)
	// Silver's rows passed validation already; bronze's are checked as the stream checks them.
	r.rules = silver.Rules{EventTime: a.evName, EventTimeFormat: s.q.Rules.EventTimeFormat}
	if s.bronze {
		r.rules.Required, r.rules.MaxFutureSkew = required, s.q.Rules.MaxFutureSkew
	}
	return r, nil
}

// work is worker w's share of the pass.
func (r *sourceRead) work(ctx context.Context, w int) error {
	// A scan of each worker's own.
	fs, err := r.s.t.FileScan(r.s.snap, r.cols, nil)
	if err != nil {
		return fmt.Errorf("late: source scan: %w", err)
	}
	var key []byte
	var sel []int32
	var tr *silver.Transformer
	if r.transform {
		if tr, err = silver.NewTransformer(ctx, r.s.q.Rules.Transform, silver.Schema(r.s.bronzeSchema)); err != nil {
			return fmt.Errorf("late: %w", err)
		}
	}
	// reuse: fn is done with each batch before the next, so the worker's reads share
	// their buffers (the session reads keep rows of earlier batches).
	var buf *pq.ReadBuffer
	if r.reuse {
		buf = &pq.ReadBuffer{}
	}
	// Worker w reads files share[w] to share[w+1]: a fixed share (see shareFiles), so that
	// each worker's partial aggregates (and the order of a float sum's additions) are the
	// same in every run, and replaying twice writes the same values.
	for f := r.share[w]; f < r.share[w+1]; f++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		add := r.files[f]
		var rows int64
		for b, err := range fs.ReadWith(ctx, []*txlog.Add{add}, buf) {
			if err != nil {
				return r.s.fileGone(fmt.Errorf("late: read source %s: %w", add.Path, err))
			}
			if tr != nil {
				if b, err = tr.Apply(b, time.UnixMilli(r.s.nowMs)); err != nil {
					return fmt.Errorf("late: %w", err)
				}
			}
			src, err := r.a.source(b)
			if err != nil {
				return err
			}
			if sel, key, err = r.selectRows(b, src, tr, sel[:0], key); err != nil {
				return err
			}
			rows += int64(len(sel))
			if len(sel) > 0 {
				if err := r.fn(w, src, sel); err != nil {
					return err
				}
			}
		}
		r.mu.Lock()
		r.s.track.rows(rows)
		r.s.track.fileDone()
		r.mu.Unlock()
	}
	return nil
}

// selectRows appends to sel the rows of b in the pass's time range that pass validation
// and (bronze) are the first arrival of their dedup key.
func (r *sourceRead) selectRows(b *pq.Batch, src *source, tr *silver.Transformer, sel []int32, key []byte) ([]int32, []byte, error) {
	var dk []*pq.Column
	for _, c := range r.dedup {
		dk = append(dk, b.Column(c))
	}
	check := r.rules.Bind(b)
	if r.expect != nil {
		if err := r.expect.Apply(&check, b, time.UnixMilli(r.s.nowMs)); err != nil {
			return sel, key, fmt.Errorf("late: re-validate bronze: %w", err)
		}
	}
	if tr != nil {
		tr.ApplyFilter(&check, b, time.UnixMilli(r.s.nowMs))
	}
	ev := src.ev.Int64
	for i := range b.Len() {
		if t := ev[i]; t < r.lo || t >= r.hi || src.ev.IsNull(i) {
			continue
		}
		if check.Reject(i) != "" || check.Dropped(i) {
			continue
		}
		if len(dk) > 0 { // bronze only: silver is deduplicated
			key = key[:0]
			for _, c := range dk {
				key = pq.AppendKeyPart(key, c, i)
			}
			if r.seen[string(key)] {
				continue
			}
			r.seen[string(key)] = true
		}
		sel = append(sel, int32(i))
	}
	return sel, key, nil
}

// shareFiles orders silver's files by their first event time and gives each worker a run of
// consecutive files holding about its share of the rows (bronze: one worker, in arrival
// order). Files were dealt out in path order (random UUIDs), so every worker saw every
// window and each of a 100k-key replay's groups (about a row each) was looked up again to
// merge the workers' tables; in time order the workers' windows meet only where their runs
// meet and where late rows reach back (see passTarget.sumParts).
func (r *sourceRead) shareFiles() {
	n := len(r.files)
	r.share = make([]int, r.workers+1)
	r.share[r.workers] = n
	if r.workers == 1 || r.s.bronze {
		return
	}
	type fileTime struct {
		f        *txlog.Add
		recs, lo int64
		ok       bool
	}
	ft := make([]fileTime, n)
	var total int64
	for i, f := range r.files {
		recs, lo, _, ok := timeStats(f, r.a.evName)
		ft[i] = fileTime{f, recs, lo, ok}
		total += max(recs, 1)
	}
	// Files without statistics last, in path order (the sort is stable).
	slices.SortStableFunc(ft, func(x, y fileTime) int {
		if x.ok != y.ok {
			if x.ok {
				return -1
			}
			return 1
		}
		return cmp.Compare(x.lo, y.lo)
	})
	var seen int64
	w := 1
	for i, t := range ft {
		r.files[i] = t.f
		// Worker w starts at the first file past w shares of the rows (a file without a
		// count weighs one row: the split stays by count).
		for w < r.workers && seen*int64(r.workers) >= total*int64(w) {
			r.share[w] = i
			w++
		}
		seen += max(t.recs, 1)
	}
	for ; w < r.workers; w++ {
		r.share[w] = n
	}
}

// fileGone is err, when a data file of the source is gone from storage, said with the ways
// out: silver's rows are in bronze, bronze's in silver (docs/recovery.md).
func (s *replaySource) fileGone(err error) error {
	if s.bronze {
		return table.ExplainMissing(err, "late: bronze "+s.q.Tables.Bronze, "restore it from the bucket's versioning or a backup, "+
			"or replay from silver (--source silver) (docs/recovery.md)")
	}
	return table.ExplainMissing(err, "late: silver "+s.q.Tables.Silver, silverFileGone)
}

// silverFileGone is the way out of a silver data file gone from storage.
const silverFileGone = "restore it from the bucket's versioning or a backup; a replay from bronze (--source bronze) " +
	"recomputes gold's windows from the rows bronze still holds (docs/recovery.md, \"A data file is gone\")"

// goldFileGone is the way out of a data file of gold name gone from storage.
func goldFileGone(name string) string {
	return "restore it from the bucket's versioning or a backup, or rebuild gold from silver with " +
		"`medallion run refresh --table " + name + " --config F` (docs/recovery.md)"
}
