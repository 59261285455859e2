package bronze

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
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
	Limits         Limits
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

// Report is what an ingest run did, for the one-line JSON summary and the logs.
type Report struct {
	Batches       int              `json:"batches"`
	Files         int              `json:"files"`
	Lines         int64            `json:"lines"`
	Rows          int64            `json:"rows"`
	Rejected      int64            `json:"rejected"`
	BlankLines    int64            `json:"blankLines"`
	RejectsBy     map[string]int64 `json:"rejectsByReason"`
	Bytes         int64            `json:"bytes"`
	DurationMs    int64            `json:"durationMs"`
	RowsPerSecond float64          `json:"rowsPerSecond"`
	// ChangedObjects are objects read again because they changed after an earlier read: what
	// was appended, or, for those also in RewrittenObjects, the whole new content.
	ChangedObjects   []string `json:"changedObjects,omitempty"`
	RewrittenObjects []string `json:"rewrittenObjects,omitempty"`
	BronzeVersion    int64    `json:"bronzeVersion"`
	// Kafka is set when the landing is a Kafka topic (KafkaIngester).
	Kafka *KafkaReport `json:"kafka,omitempty"`

	ends map[string]readEnd // per key read by a batch, for its commit record
}

func (r *Report) add(st ObjectStats) {
	r.merge(Report{Lines: st.Lines, Rows: st.Rows, Rejected: st.Rejected, BlankLines: st.BlankLines, Bytes: st.Bytes, RejectsBy: st.ByReason})
}

// merge adds o's counts (not its files, batches or timings) to r.
func (r *Report) merge(o Report) {
	r.Lines += o.Lines
	r.Rows += o.Rows
	r.Rejected += o.Rejected
	r.BlankLines += o.BlankLines
	r.Bytes += o.Bytes
	addReasons(&r.RejectsBy, o.RejectsBy)
}

// Add adds o to r: what two ingests did together (their batches, files and counts; not
// timings or lists).
func (r *Report) Add(o Report) {
	r.Batches += o.Batches
	r.Files += o.Files
	r.merge(o)
}

// addReasons adds the counts by reason of src to *dst, making it when needed.
func addReasons(dst *map[string]int64, src map[string]int64) {
	for k, v := range src {
		if *dst == nil {
			*dst = map[string]int64{}
		}
		(*dst)[k] += v
	}
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

// fileRecord is one claimed read: the bytes [Offset, Size) of the object Key as it was listed
// (Size and ETag are the listing's). A first read has Offset 0; a later read of the same key
// is either what was appended (Offset = the end of the previous read) or, for a rewritten
// object, the whole new content again (Offset 0, Rewrite set).
type fileRecord struct {
	Key     string `json:"key"`
	Offset  int64  `json:"offset,omitempty"`
	Size    int64  `json:"size"`
	ETag    string `json:"etag,omitempty"`
	ModTime int64  `json:"modificationTime"`
	Rewrite bool   `json:"rewrite,omitempty"`
}

type batchRecord struct {
	BatchID    int64        `json:"batchId"`
	IngestTime int64        `json:"ingestTimeMicros"`
	Files      []fileRecord `json:"files"`
}

type commitRecord struct {
	BatchID int64 `json:"batchId"`
	// BronzeVersion and RejectsVersion are the versions the batch committed at, 0 when the run
	// that wrote the record found the batch committed already: a table below them has lost
	// the batch (checkCommitted).
	BronzeVersion  int64 `json:"bronzeVersion"`
	RejectsVersion int64 `json:"rejectsVersion"`
	Rows           int64 `json:"rows"`
	Rejected       int64 `json:"rejected"`
	// Ends holds, per key read, how its read ended: when the object is later listed larger,
	// the same last bytes at the same place tell an append from a rewrite without reading the
	// object again.
	Ends map[string]readEnd `json:"ends,omitempty"`
}

// readEnd is how the read of one range ended: its last bytes (at most tailBytes), or Short
// when fewer bytes than listed could be read (the object changed under the read).
type readEnd struct {
	Tail  []byte `json:"tail,omitempty"`
	Short bool   `json:"short,omitempty"`
}

// tailReader counts the bytes read through it and keeps the last tailBytes of them.
type tailReader struct {
	r    io.Reader
	n    int64
	last [tailBytes]byte
}

func (t *tailReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	got := p[:n]
	if len(got) >= tailBytes {
		copy(t.last[:], got[len(got)-tailBytes:])
	} else if len(got) > 0 {
		copy(t.last[:], t.last[len(got):])
		copy(t.last[tailBytes-len(got):], got)
	}
	t.n += int64(n)
	return n, err
}

// tail returns the last bytes read, at most tailBytes.
func (t *tailReader) tail() []byte {
	k := min(t.n, tailBytes)
	return append([]byte{}, t.last[tailBytes-k:]...)
}

// state is what the checkpoint says: every claimed object, which batches are committed.
type state struct {
	appID     string
	claimed   map[string]fileRecord // the latest read of each key
	claimedIn map[string]int64      // the batch of that read
	batches   map[int64]*batchRecord
	committed map[int64]bool
	next      int64
}

func batchKey(id int64) string  { return fmt.Sprintf("batches/%020d.json", id) }
func commitKey(id int64) string { return fmt.Sprintf("commits/%020d.json", id) }
func endsKey(id int64) string   { return fmt.Sprintf("ends/%020d.json", id) }
func readsKey(id int64) string  { return fmt.Sprintf("reads/%020d.json", id) }

// batchReads is reads/N: how each read of batch N ended and what the batch counts, written by
// every run that decodes the batch, before its table commits. A run that finds both tables
// holding the batch (its decoder crashed, or is racing it) does not decode it again, and takes
// from here what it records and, when its commit record is the one that lands, reports.
type batchReads struct {
	Ends   map[string]readEnd `json:"ends"`
	Counts batchCounts        `json:"counts"`
}

// batchCounts are a batch's counts in its Report.
type batchCounts struct {
	Lines      int64            `json:"lines"`
	Rows       int64            `json:"rows"`
	Rejected   int64            `json:"rejected"`
	BlankLines int64            `json:"blankLines"`
	Bytes      int64            `json:"bytes"`
	RejectsBy  map[string]int64 `json:"rejectsByReason,omitempty"`
}

func countsOf(r Report) batchCounts {
	return batchCounts{Lines: r.Lines, Rows: r.Rows, Rejected: r.Rejected, BlankLines: r.BlankLines, Bytes: r.Bytes, RejectsBy: r.RejectsBy}
}

func (c batchCounts) report(ends map[string]readEnd) Report {
	return Report{Lines: c.Lines, Rows: c.Rows, Rejected: c.Rejected, BlankLines: c.BlankLines, Bytes: c.Bytes, RejectsBy: c.RejectsBy, ends: ends}
}

// loadState reads the checkpoint. The query id in metadata.json is created once, with
// put-if-absent, and names the txn appId of every table commit.
func (x *Ingester) loadState(ctx context.Context) (*state, error) {
	st := &state{claimed: map[string]fileRecord{}, claimedIn: map[string]int64{}, batches: map[int64]*batchRecord{}, committed: map[int64]bool{}}
	meta, err := objstore.ReadAll(ctx, x.ckpt, "metadata.json")
	if errors.Is(err, objstore.ErrNotFound) {
		if err := checkLostID(ctx, x.ckpt, "ingest checkpoint "+x.opts.CheckpointPath); err != nil {
			return nil, err
		}
		fresh, _ := json.Marshal(map[string]string{"id": uuid.NewString()})
		if err := objstore.PutBytesIfAbsent(ctx, x.ckpt, "metadata.json", fresh); err != nil && !errors.Is(err, objstore.ErrAlreadyExists) {
			return nil, fmt.Errorf("bronze: create ingest checkpoint: %w", err)
		}
		meta, err = objstore.ReadAll(ctx, x.ckpt, "metadata.json")
	}
	if err != nil {
		return nil, fmt.Errorf("bronze: read ingest checkpoint metadata: %w", err)
	}
	var m struct{ ID string }
	if err := json.Unmarshal(meta, &m); err != nil || m.ID == "" {
		return nil, fmt.Errorf("bronze: ingest checkpoint metadata.json is corrupt (%v): move the checkpoint away only if you know the tables hold no ingested data", err)
	}
	st.appID = "medallion-ingest-" + m.ID
	for info, err := range x.ckpt.List(ctx, "batches/", objstore.ListOptions{}) {
		if err != nil {
			return nil, fmt.Errorf("bronze: list ingest batches: %w", err)
		}
		data, err := objstore.ReadAll(ctx, x.ckpt, info.Key)
		if err != nil {
			return nil, fmt.Errorf("bronze: read %s: %w", info.Key, err)
		}
		var b batchRecord
		if err := json.Unmarshal(data, &b); err != nil {
			return nil, fmt.Errorf("bronze: ingest checkpoint %s is corrupt: %w", info.Key, err)
		}
		st.batches[b.BatchID] = &b
		// Batches are listed in batch order, so a key's later read replaces its earlier one.
		for _, f := range b.Files {
			st.claimed[f.Key] = f
			st.claimedIn[f.Key] = b.BatchID
		}
		if b.BatchID >= st.next {
			st.next = b.BatchID + 1
		}
	}
	for info, err := range x.ckpt.List(ctx, "commits/", objstore.ListOptions{}) {
		if err != nil {
			return nil, fmt.Errorf("bronze: list ingest commits: %w", err)
		}
		var id int64
		if _, err := fmt.Sscanf(strings.TrimPrefix(info.Key, "commits/"), "%020d.json", &id); err == nil {
			st.committed[id] = true
		}
	}
	return st, nil
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

// pendingBatches are the ids of the claimed batches without a commit record, in order: a run
// re-runs them before it claims anything new.
func pendingBatches[B any](claimed map[int64]B, committed map[int64]bool) []int64 {
	var pending []int64
	for id := range claimed {
		if !committed[id] {
			pending = append(pending, id)
		}
	}
	slices.Sort(pending)
	return pending
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
	if err := x.ensureTables(ctx); err != nil {
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
	rep.DurationMs = time.Since(start).Milliseconds()
	if secs := time.Since(start).Seconds(); secs > 0 {
		rep.RowsPerSecond = float64(rep.Rows) / secs
	}
	if snap, err := x.bronze.Log().Snapshot(ctx); err == nil {
		rep.BronzeVersion = snap.Version()
	}
	return rep, nil
}

// committing is a batch whose commit runs beside the next batch's decoding.
type committing struct {
	id   int64
	rep  Report // what the commit counted
	err  error
	done chan struct{}
}

// discover finds what is left to read, in key order: objects never claimed, and claimed objects
// that changed since their last read (see change). It lists the landing prefix or, for
// event-driven ingestion, looks up only the named keys (a large prefix is not listed). Keys read
// earlier in this run are left for the next run, so that an object written without pause
// cannot keep one run going forever.
func (x *Ingester) discover(ctx context.Context, st *state, only map[string]bool, readThisRun map[string]bool) ([]fileRecord, error) {
	var out []fileRecord
	consider := func(info objstore.ObjectInfo) error {
		next := fileRecord{Key: info.Key, Size: info.Size, ETag: info.ETag, ModTime: info.ModTime.UnixMilli()}
		prev, ok := st.claimed[info.Key]
		if !ok {
			out = append(out, next)
			return nil
		}
		if readThisRun[info.Key] || (prev.Size == info.Size && (prev.ETag == "" || info.ETag == "" || prev.ETag == info.ETag)) {
			return nil
		}
		rec, ok, err := x.change(ctx, st, prev, next)
		if err != nil || !ok {
			return err
		}
		out = append(out, rec)
		return nil
	}
	if only != nil {
		keys := make([]string, 0, len(only))
		for k := range only {
			if strings.HasPrefix(k, x.opts.LandingPrefix) {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			info, err := x.lake.Stat(ctx, k)
			if errors.Is(err, objstore.ErrNotFound) || errors.Is(err, objstore.ErrInvalidKey) {
				continue // deleted since the event, or not a key we can read: listing reconciles
			}
			if err != nil && ctx.Err() == nil {
				// One key the store refuses to describe must not hold back the others named
				// with it; events are hints, and the reconciling listing meets this key again.
				x.log.Warn("cannot look up a notified landing object; the next listing will", "key", k, "err", err)
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("bronze: stat %s: %w", k, err)
			}
			if err := consider(info); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	for info, err := range x.lake.List(ctx, x.opts.LandingPrefix, objstore.ListOptions{}) {
		if err != nil {
			return nil, fmt.Errorf("bronze: list landing %s: %w", x.opts.LandingPrefix, err)
		}
		if err := consider(info); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// tailBytes is how much of the end of a read the commit record keeps, to recognise an append.
const tailBytes = 64

// change decides how to read an object that is no longer what its last read claimed (prev): an
// object that grew and still holds, where the last read ended, the bytes that read ended with
// was appended to, and only the new bytes [prev.Size, size) are read; any other change (smaller,
// same size with another ETag, different bytes at the old end, or a compressed or CSV object,
// whose appended bytes cannot be read on their own) is a rewrite, and the whole new content is
// read again. ok is false when the batch that made the last read has not committed yet: its
// record of the bytes is not there, and a later run decides.
func (x *Ingester) change(ctx context.Context, st *state, prev, next fileRecord) (fileRecord, bool, error) {
	batch := st.claimedIn[prev.Key]
	if !st.committed[batch] {
		return fileRecord{}, false, nil
	}
	appended := false
	if next.Size > prev.Size && x.opts.Format != FormatCSV && !strings.HasSuffix(prev.Key, ".gz") {
		var rec commitRecord
		data, err := objstore.ReadAll(ctx, x.ckpt, commitKey(batch))
		if err == nil {
			err = json.Unmarshal(data, &rec)
		}
		if err != nil {
			return fileRecord{}, false, fmt.Errorf("bronze: read ingest checkpoint %s: %w", commitKey(batch), err)
		}
		end, known := rec.Ends[prev.Key]
		tail := end.Tail
		switch {
		case known && end.Short:
			appended = false // the last read did not get what was listed: read it all again
		case known && len(tail) > 0:
			rc, err := x.lake.GetRange(ctx, prev.Key, prev.Size-int64(len(tail)), int64(len(tail)))
			if errors.Is(err, objstore.ErrNotFound) {
				return fileRecord{}, false, nil // deleted since the listing
			}
			if err != nil {
				return fileRecord{}, false, fmt.Errorf("bronze: read %s: %w", prev.Key, err)
			}
			now, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				return fileRecord{}, false, fmt.Errorf("bronze: read %s: %w", prev.Key, err)
			}
			appended = bytes.Equal(now, tail)
		case known:
			appended = true // the last read was of an empty object: nothing to compare
		default:
			// A checkpoint written before read ends were kept: a store without ETags (a local
			// lake) grows files in place; on S3 every change is a new object.
			appended = prev.ETag == "" && next.ETag == ""
		}
	}
	if appended {
		next.Offset = prev.Size
		x.log.Info("landing object grew after it was read; reading what was appended",
			"key", next.Key, "from", prev.Size, "to", next.Size)
		return next, true, nil
	}
	next.Rewrite = true
	x.log.Warn("landing object was rewritten after it was read; reading it again in full",
		"key", next.Key, "read_size", prev.Size, "read_etag", prev.ETag, "size", next.Size, "etag", next.ETag)
	return next, true, nil
}

func (x *Ingester) ensureTables(ctx context.Context) error {
	for _, t := range []struct {
		tbl    *table.Table
		schema *txlog.StructType
		name   string
	}{
		{x.bronze, BronzeSchema(x.opts.Declared), x.opts.BronzePath},
		{x.rejects, RejectsSchema(), x.opts.RejectsPath},
	} {
		if err := ensureTable(ctx, t.tbl, t.name, t.schema, x.opts.Declared, x.opts.Schema, t.tbl == x.bronze); err != nil {
			return err
		}
	}
	return nil
}

// ensureTable creates the table with schema when it is missing; bronze (isBronze) goes
// through EnsureBronzeTable.
func ensureTable(ctx context.Context, tbl *table.Table, name string, schema, declared *txlog.StructType, policy SchemaPolicy, isBronze bool) error {
	if isBronze {
		return EnsureBronzeTable(ctx, tbl, name, schema, declared, policy)
	}
	_, err := tbl.Log().Snapshot(ctx)
	if err == nil {
		return nil
	}
	if !errors.Is(err, txlog.ErrTableNotFound) {
		return fmt.Errorf("bronze: open %s: %w", name, err)
	}
	if _, err := tbl.Create(ctx, schema, nil, nil); err != nil && !errors.Is(err, table.ErrTableExists) {
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
	b                       *batchRecord
	bronzeDone, rejectsDone bool
	bronzeAdds, rejectAdds  []*txlog.Add
	rep                     Report
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
	var err error
	rec := commitRecord{BatchID: b.BatchID, Rows: batchRep.Rows, Rejected: batchRep.Rejected, Ends: batchRep.ends}
	op := txlog.Operation{
		Name:       "STREAMING UPDATE",
		Parameters: map[string]any{"outputMode": "Append", "queryId": appID, "epochId": fmt.Sprint(b.BatchID)},
	}
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
			if err := x.waitForPredecessor(ctx, appID, b.BatchID, rep); err != nil {
				return err
			}
		}
	}
	var wroteBronze, wroteRejects bool
	if !bronzeDone {
		op.Metrics = map[string]int64{"numOutputRows": batchRep.Rows, "numAddedFiles": int64(len(d.bronzeAdds))}
		if rec.BronzeVersion, wroteBronze, err = x.commit(fin, x.bronze, appID, b.BatchID, d.bronzeAdds, op); err != nil {
			return fmt.Errorf("bronze: commit batch %d to %s: %w", b.BatchID, x.opts.BronzePath, err)
		}
	}
	if !rejectsDone {
		op.Metrics = map[string]int64{"numOutputRows": batchRep.Rejected, "numAddedFiles": int64(len(d.rejectAdds))}
		if rec.RejectsVersion, wroteRejects, err = x.commit(fin, x.rejects, appID, b.BatchID, d.rejectAdds, op); err != nil {
			return fmt.Errorf("bronze: commit batch %d to %s: %w", b.BatchID, x.opts.RejectsPath, err)
		}
	}
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

// recoverReads returns what a batch that both tables hold counts and how its reads ended, as
// the run that decoded it recorded them in reads/N before the tables committed, without
// decoding it again; counted is false when only an older version's read ends are to be found
// (recoverEnds).
func (x *Ingester) recoverReads(ctx context.Context, b *batchRecord) (rep Report, counted bool, err error) {
	data, err := objstore.ReadAll(ctx, x.ckpt, readsKey(b.BatchID))
	if err == nil {
		var r batchReads
		if err := json.Unmarshal(data, &r); err != nil {
			return Report{}, false, fmt.Errorf("bronze: ingest checkpoint %s is corrupt: %w", readsKey(b.BatchID), err)
		}
		return r.Counts.report(r.Ends), true, nil
	}
	if !errors.Is(err, objstore.ErrNotFound) {
		return Report{}, false, fmt.Errorf("bronze: read %s: %w", readsKey(b.BatchID), err)
	}
	ends, err := x.recoverEnds(ctx, b)
	return Report{ends: ends}, false, err
}

// recoverEnds returns the read ends of a batch that committed to both tables but not to the
// checkpoint (a crash in between), for a batch an older version decoded: as it recorded them
// in ends/N before the tables committed or, for a batch of a version older still, the last
// bytes of each range as the object holds them now, when the object is still the one listed
// (same ETag; a store without ETags grows files in place). An object that changed since is
// marked Short, so that its next change is read as a rewrite: never less than what is new.
func (x *Ingester) recoverEnds(ctx context.Context, b *batchRecord) (map[string]readEnd, error) {
	data, err := objstore.ReadAll(ctx, x.ckpt, endsKey(b.BatchID))
	if err == nil {
		var ends map[string]readEnd
		if err := json.Unmarshal(data, &ends); err != nil {
			return nil, fmt.Errorf("bronze: ingest checkpoint %s is corrupt: %w", endsKey(b.BatchID), err)
		}
		return ends, nil
	}
	if !errors.Is(err, objstore.ErrNotFound) {
		return nil, fmt.Errorf("bronze: read %s: %w", endsKey(b.BatchID), err)
	}
	ends := map[string]readEnd{}
	for _, f := range b.Files {
		info, err := x.lake.Stat(ctx, f.Key)
		if errors.Is(err, objstore.ErrNotFound) || errors.Is(err, objstore.ErrInvalidKey) {
			ends[f.Key] = readEnd{Short: true}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("bronze: stat %s: %w", f.Key, err)
		}
		if info.Size < f.Size || (f.ETag != "" && info.ETag != f.ETag) {
			ends[f.Key] = readEnd{Short: true}
			continue
		}
		from := max(f.Offset, f.Size-tailBytes)
		rc, err := x.lake.GetRange(ctx, f.Key, from, f.Size-from)
		if err != nil {
			return nil, fmt.Errorf("bronze: read %s: %w", f.Key, err)
		}
		tail, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("bronze: read %s: %w", f.Key, err)
		}
		if int64(len(tail)) != f.Size-from {
			ends[f.Key] = readEnd{Short: true}
			continue
		}
		ends[f.Key] = readEnd{Tail: tail}
	}
	return ends, nil
}

// waitForPredecessor returns once both tables hold batch-1 (or batch is 0). After OrderWait
// it stops waiting for the other claimer and re-runs the missing batches itself; the txn
// check makes a double run harmless.
func (x *Ingester) waitForPredecessor(ctx context.Context, appID string, batch int64, rep *Report) error {
	return x.waitForBatch(ctx, appID, batch-1, func(ctx context.Context) error {
		// Re-read the claims: the batch before may have been claimed by another ingester.
		st, err := x.loadState(ctx)
		if err != nil {
			return err
		}
		prev := st.batches[batch-1]
		if prev == nil {
			return fmt.Errorf("bronze: ingest checkpoint has batch %d but not batch %d: it was edited or partly deleted", batch, batch-1)
		}
		return x.runBatch(ctx, st, prev, rep)
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

// decodeAll cuts the batch's objects, in their listed order, into parts (cutParts: a function
// of the objects' listed sizes alone, never of the machine) and encodes each part into data
// files of its own, the parts on Workers goroutines at once, so that every core encodes
// Parquet. The adds are listed part after part, each part's in the order it wrote them, and
// commit keeps that order for a stream that starts from a snapshot (table.SequenceModTimes):
// reading bronze in commit order reads the batch's rows in arrival order (the objects' listing
// order, then each line's offset), and the batch becomes the same data files, holding the same
// rows, with any number of cores (the stream's micro-batches count bronze files, so its
// batches, watermarks and first arrivals are the same on every machine).
func (x *Ingester) decodeAll(ctx context.Context, b *batchRecord) ([]*txlog.Add, []*txlog.Add, Report, error) {
	sizes := make([]int64, len(b.Files))
	for i, f := range b.Files {
		sizes[i] = f.Size - f.Offset
	}
	bounds := cutParts(sizes, x.opts.PartBytes, x.opts.MaxParts)
	type result struct {
		bronze, rejects []*txlog.Add
		rep             Report
		err             error
	}
	results := make([]result, len(bounds)-1)
	// A decoder a worker, kept from part to part: its batches have grown to their size.
	decoders := make([]*Decoder, x.opts.Workers)
	err := runParts(ctx, len(results), x.opts.Workers, func(ctx context.Context, w, p int) error {
		if decoders[w] == nil {
			dec, err := NewDecoder(x.opts.Declared, x.opts.Limits)
			if err != nil {
				return err
			}
			decoders[w] = dec
		}
		r := &results[p]
		r.bronze, r.rejects, r.rep, r.err = x.worker(ctx, decoders[w], b.Files[bounds[p]:bounds[p+1]], b.IngestTime)
		return r.err
	})
	if err != nil {
		return nil, nil, Report{}, err
	}
	var bronzeAdds, rejectAdds []*txlog.Add
	var rep Report
	for _, r := range results {
		bronzeAdds = append(bronzeAdds, r.bronze...)
		rejectAdds = append(rejectAdds, r.rejects...)
		rep.merge(r.rep)
		for k, e := range r.rep.ends {
			if rep.ends == nil {
				rep.ends = map[string]readEnd{}
			}
			rep.ends[k] = e
		}
	}
	return bronzeAdds, rejectAdds, rep, nil
}

// worker decodes one part's objects with dec (empty, and left empty when it returns without
// an error) into data files of the part's own.
func (x *Ingester) worker(ctx context.Context, dec *Decoder, files []fileRecord, ingestTime int64) ([]*txlog.Add, []*txlog.Add, Report, error) {
	var rep Report
	out, err := x.openOutputs(dec)
	if err != nil {
		return nil, nil, rep, err
	}
	// NDJSON objects are decoded in blocks on every core while this goroutine writes the
	// blocks before: a batch of one large object (landing.max_files_per_trigger: 1) is not
	// decoded on one core. Up to two blocks a core are in flight, enough to keep the cores
	// busy while the writer encodes.
	dec.blockBytes = x.blockBytes
	dec.pipeline = &blockPipeline{depth: 2 * runtime.GOMAXPROCS(0), pool: x.blocks, write: out.write}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, nil, rep, err
		}
		// Exactly the listed bytes: an object still being written is read as it was listed,
		// and what is written after is a change that a later listing finds and reads.
		rc, err := x.lake.GetRange(ctx, f.Key, f.Offset, f.Size-f.Offset)
		if errors.Is(err, objstore.ErrNotFound) || errors.Is(err, objstore.ErrInvalidKey) {
			// Claimed but unreadable: deleted since the listing, or a key S3 stores but the
			// lake's key rules refuse (".." or empty segments). Record it so it is not silent,
			// and go on with the other objects.
			reason, detail := ReasonObjectMissing, "the landing object was deleted after it was listed"
			if errors.Is(err, objstore.ErrInvalidKey) {
				reason, detail = ReasonInvalidKey, "the landing key cannot be read safely: "+err.Error()
			}
			var st ObjectStats
			dec.appendReject(&st, rejected{key: f.Key, offset: f.Offset}, reason, detail, ingestTime)
			rep.add(st)
			continue
		}
		if err != nil {
			return nil, nil, rep, fmt.Errorf("bronze: open %s: %w", f.Key, err)
		}
		tr := &tailReader{r: rc}
		st, err := dec.DecodeRange(ctx, tr, f.Key, x.opts.Format, ingestTime, f.Offset)
		if err == nil {
			// A decoder that stopped early (a gzip bomb) left bytes unread: count them, so
			// that a short read is told from an object cut short.
			_, err = io.Copy(io.Discard, &ctxReader{ctx: ctx, r: tr})
			if err != nil {
				err = &ioError{fmt.Errorf("bronze: read %s: %w", f.Key, err)}
			}
		}
		rc.Close()
		if err != nil {
			return nil, nil, rep, err
		}
		end := readEnd{Tail: tr.tail()}
		if want := f.Size - f.Offset; tr.n < want {
			// The object shrank or was replaced between the listing and the read: what was
			// read is kept, the missing bytes are recorded, and the new content is read again
			// in full when it is listed.
			dec.appendReject(&st, rejected{key: f.Key, offset: f.Offset + tr.n}, ReasonObjectChanged,
				fmt.Sprintf("the landing object was %d bytes when listed, but only %d bytes from offset %d could be read: it was rewritten or truncated after the listing, and its new content is read again in full", f.Size, tr.n, f.Offset), ingestTime)
			end = readEnd{Short: true}
		}
		if rep.ends == nil {
			rep.ends = map[string]readEnd{}
		}
		rep.ends[f.Key] = end
		rep.add(st)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, rep, err
	}
	bronzeAdds, rejectAdds, err := out.close(ctx)
	if err != nil {
		return nil, nil, rep, err
	}
	return bronzeAdds, rejectAdds, rep, nil
}

// workerOutput is one worker's own bronze and rejects data files, which its decoder flushes
// into as its batches fill.
type workerOutput struct {
	dec             *Decoder
	bronze, rejects *table.DataWriter
}

// openOutputs opens a worker's data files and makes dec flush into them.
func (x *Ingester) openOutputs(dec *Decoder) (*workerOutput, error) {
	bw, err := table.NewDataWriter(x.bronze.Bucket(), dec.Bronze.Schema, nil, x.opts.WriteOptions)
	if err != nil {
		return nil, err
	}
	rw, err := table.NewDataWriter(x.rejects.Bucket(), dec.Rejects.Schema, nil, x.opts.WriteOptions)
	if err != nil {
		return nil, err
	}
	x.snapMu.Lock()
	bronzeRules, rejectsRules := x.rules[x.bronze], x.rules[x.rejects]
	x.snapMu.Unlock()
	if err := bw.SetRowRules(bronzeRules); err != nil {
		return nil, fmt.Errorf("bronze: %s: %w", x.opts.BronzePath, err)
	}
	if err := rw.SetRowRules(rejectsRules); err != nil {
		return nil, fmt.Errorf("bronze: %s: %w", x.opts.RejectsPath, err)
	}
	out := &workerOutput{dec: dec, bronze: bw, rejects: rw}
	dec.Flush, dec.FlushRows = out.flush, x.opts.FlushRows
	// A decoder kept from an earlier part starts this one as a new decoder would: when it
	// flushes must depend on this part's input alone, or the files would depend on which parts
	// a worker happened to take.
	dec.held = 0
	return out, nil
}

// flush writes the decoder's batches out and empties them.
func (o *workerOutput) flush(ctx context.Context) error {
	if o.dec.Bronze.Len() > 0 {
		if err := o.bronze.Write(ctx, o.dec.Bronze); err != nil {
			return err
		}
	}
	if o.dec.Rejects.Len() > 0 {
		if err := o.rejects.Write(ctx, o.dec.Rejects); err != nil {
			return err
		}
	}
	o.dec.Bronze.Reset()
	o.dec.Rejects.Reset()
	return nil
}

// write writes a block decoder's batches, after what the worker's own decoder holds (rows of
// the objects before, in order).
func (o *workerOutput) write(ctx context.Context, bd *Decoder) error {
	if o.dec.Bronze.Len()+o.dec.Rejects.Len() > 0 {
		if err := o.flush(ctx); err != nil {
			return err
		}
	}
	if bd.Bronze.Len() > 0 {
		if err := o.bronze.Write(ctx, bd.Bronze); err != nil {
			return err
		}
	}
	if bd.Rejects.Len() > 0 {
		if err := o.rejects.Write(ctx, bd.Rejects); err != nil {
			return err
		}
	}
	return nil
}

// close flushes what is left and closes both files, returning their adds.
func (o *workerOutput) close(ctx context.Context) (bronzeAdds, rejectAdds []*txlog.Add, err error) {
	if err := o.flush(ctx); err != nil {
		return nil, nil, err
	}
	if bronzeAdds, err = o.bronze.Close(ctx); err != nil {
		return nil, nil, err
	}
	if rejectAdds, err = o.rejects.Close(ctx); err != nil {
		return nil, nil, err
	}
	return bronzeAdds, rejectAdds, nil
}
