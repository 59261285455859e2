// Package checkpoint reads and writes the streaming query's checkpoint folder, in Spark's
// layout: metadata (the query id), offsets/N (written before batch N: its watermark, batch
// timestamp and the source's end offset), commits/N (after every sink of batch N, with the
// watermark the next batch runs with and, for every table the query writes, the last batch
// whose txn it holds and that commit's version: Commit.Tables), state/N (named sections, opaque here, with a checksum)
// and progress/N.json. The stream writes it; merge-late, replay and the reports read it
// through this package only, so the format is parsed in one place.
//
// Crash guarantees: metadata, offsets/N and commits/N are written with put-if-absent, so two
// runs agree on one query id and on what batch N reads, and a batch whose offsets/N has no
// commits/N is known to be uncommitted. Identity is checked, never assumed: metadata is
// created only in a checkpoint without offsets, commits or state (else ErrQueryIDLost), and
// CheckTable and CheckRead tell a query whose tables went back (ErrTableBehind). A checkpoint
// rolled back (RemoveCommit, newest first) has several batches without commits/N: ReadHead
// returns the first, and Recorded the last, to re-run in order. A state or progress file is written whole or not at
// all (a single put), and a torn or foreign state file fails its checksum (ErrBad) rather
// than being read. Cleanup removes a batch's files one by one; a crash in between leaves
// files behind that nothing reads.
package checkpoint

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/table/source"
	"github.com/medallion-lake/medallion/txlog"
)

// ErrBad reports a checkpoint file that cannot be read: the stream stops rather than guess,
// because guessing could count rows twice.
var ErrBad = errors.New("stream: bad checkpoint")

// ErrNoQuery reports a checkpoint without metadata: the stream has not run yet.
var ErrNoQuery = errors.New("stream: no checkpoint metadata (the stream has not run yet)")

// ErrQueryIDLost reports a checkpoint whose metadata (the query id) is gone while offsets,
// commits or state remain: a new id would make every table take the query's batches, and
// merge-late the whole quarantine, as new (counted twice). Nothing may run until the id is
// recovered (RecoverQueryID).
var ErrQueryIDLost = errors.New("checkpoint metadata (the query id) is missing while the checkpoint has batches")

// ErrTableBehind reports a table whose log is behind what the checkpoint recorded of it: its
// latest version is below the one the query read or wrote, or it lacks the txn of a batch the
// checkpoint calls committed (a deleted _delta_log entry, a bucket restored from a backup).
// Going on would lose those rows or count them again.
var ErrTableBehind = errors.New("table is behind its checkpoint")

// Offsets is offsets/N: what batch N reads and the watermark and time it runs with.
type Offsets struct {
	BatchWatermarkMs int64
	BatchTimestampMs int64
	Conf             map[string]string
	// End is the source offset the batch reads up to (inclusive); nil when the source was empty.
	End *source.Offset
	// Sources are the end offsets of a query over several sources, in its order (a join:
	// left, then right), nil for a source with no offset yet; one line each in the file, as
	// Spark writes them. End is then Sources[0]. Empty for a single-source query.
	Sources []*source.Offset
	// SourceWatermarksMs are, for a join, each source's watermark (its max event time seen
	// minus its delay, 0 before its first row) by source name, as they stood when the batch
	// began: BatchWatermarkMs is their min. Medallion's addition to Spark's metadata.
	SourceWatermarksMs map[string]int64
	// OutputWatermarkMs is, for a join, the watermark the join propagates downstream
	// (join.Spec.OutputWatermark of BatchWatermarkMs, at least 0): the eviction watermark of
	// the join's aggregations in this batch; their late watermark is the previous batch's
	// value (0 for batch 0). Nil for a single-source query.
	OutputWatermarkMs *int64
}

type offsetMeta struct {
	BatchWatermarkMs   int64             `json:"batchWatermarkMs"`
	BatchTimestampMs   int64             `json:"batchTimestampMs"`
	Conf               map[string]string `json:"conf"`
	SourceWatermarksMs map[string]int64  `json:"sourceWatermarksMs,omitempty"`
	OutputWatermarkMs  *int64            `json:"outputWatermarkMs,omitempty"`
}

// Marshal encodes the entry as Spark does: v1, the metadata line, the source offset ("-":
// none).
func (e *Offsets) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString("v1\n")
	m, _ := json.Marshal(offsetMeta{e.BatchWatermarkMs, e.BatchTimestampMs, e.Conf, e.SourceWatermarksMs, e.OutputWatermarkMs})
	b.Write(m)
	ends := e.Sources
	if len(ends) == 0 {
		ends = []*source.Offset{e.End}
	}
	for _, end := range ends {
		b.WriteByte('\n')
		if end == nil {
			b.WriteString("-")
		} else {
			b.WriteString(end.String())
		}
	}
	return b.Bytes()
}

// ParseOffsets decodes offsets/N (key names it in errors). The batch watermark must be there:
// every reader depends on it.
func ParseOffsets(key string, data []byte) (*Offsets, error) {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) < 3 || lines[0] != "v1" {
		return nil, fmt.Errorf("%w: %s: want 3 or more lines starting with v1", ErrBad, key)
	}
	var m struct {
		BatchWatermarkMs   *int64            `json:"batchWatermarkMs"`
		BatchTimestampMs   int64             `json:"batchTimestampMs"`
		Conf               map[string]string `json:"conf"`
		SourceWatermarksMs map[string]int64  `json:"sourceWatermarksMs"`
		OutputWatermarkMs  *int64            `json:"outputWatermarkMs"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &m); err != nil {
		return nil, fmt.Errorf("%w: %s line 2: %v", ErrBad, key, err)
	}
	if m.BatchWatermarkMs == nil {
		return nil, fmt.Errorf("%w: %s line 2: no batchWatermarkMs", ErrBad, key)
	}
	e := &Offsets{BatchWatermarkMs: *m.BatchWatermarkMs, BatchTimestampMs: m.BatchTimestampMs, Conf: m.Conf,
		SourceWatermarksMs: m.SourceWatermarksMs, OutputWatermarkMs: m.OutputWatermarkMs}
	var ends []*source.Offset
	for i, line := range lines[2:] {
		if line == "-" {
			ends = append(ends, nil)
			continue
		}
		var o source.Offset
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			return nil, fmt.Errorf("%w: %s line %d: %v", ErrBad, key, i+3, err)
		}
		ends = append(ends, &o)
	}
	e.End = ends[0]
	if len(ends) > 1 {
		e.Sources = ends
	}
	return e, nil
}

// Commit is commits/N: batch N is done, and the next batch runs with this watermark.
type Commit struct {
	NextBatchWatermarkMs int64 `json:"nextBatchWatermarkMs"`
	// Tables is, for every table the query writes (by its path in the lake), what the
	// checkpoint knows of it after batch N: medallion's addition to Spark's commit file,
	// checked when a run starts (CheckTable). Nil in checkpoints written before it existed.
	Tables map[string]TableMark `json:"tables,omitempty"`
}

// TableMark is what a query knows it committed to a table: the last batch whose
// txn(query id, batch) the table holds and the table version that commit made (or, for a
// write skipped because the table held it already, the version that showed it).
type TableMark struct {
	Batch   int64 `json:"batch"`
	Version int64 `json:"version"`
}

// CheckTable compares a table's latest snapshot (nil: the table does not exist) with what the
// checkpoint recorded of it: the version must be at least Version and txn(queryID) at least
// Batch. what names the table in the error (ErrTableBehind), ckpt the checkpoint folder.
func CheckTable(what, ckpt, queryID string, snap *txlog.Snapshot, m TableMark) error {
	if snap == nil {
		return fmt.Errorf("%w: table %s does not exist, but checkpoint %s recorded batch %d at its version %d; %s",
			ErrTableBehind, what, ckpt, m.Batch, m.Version, behindHint)
	}
	txn, ok := snap.TxnVersion(queryID)
	switch {
	case snap.Version() < m.Version:
		return fmt.Errorf("%w: table %s is at version %d, but checkpoint %s recorded version %d (batch %d); %s",
			ErrTableBehind, what, snap.Version(), ckpt, m.Version, m.Batch, behindHint)
	case !ok:
		return fmt.Errorf("%w: table %s has no txn of query %s, but checkpoint %s recorded batch %d committed at version %d; %s",
			ErrTableBehind, what, queryID, ckpt, m.Batch, m.Version, behindHint)
	case txn < m.Batch:
		return fmt.Errorf("%w: table %s holds txn(%s) up to batch %d, but checkpoint %s recorded batch %d committed at version %d; %s",
			ErrTableBehind, what, queryID, txn, ckpt, m.Batch, m.Version, behindHint)
	}
	return nil
}

// CheckRestored refuses a table (log) that a RESTORE took back to before the commit the
// checkpoint recorded, or before the last commit after it carrying a txn of apps
// (txlog.Log.RestoredPast): the table's version and txn are past the record, but the rows of
// the commits the restore undid are gone.
func CheckRestored(ctx context.Context, what, ckpt string, log *txlog.Log, m TableMark, apps ...string) error {
	r, err := log.RestoredPast(ctx, m.Version, apps...)
	if err != nil {
		return fmt.Errorf("table %s: %w", what, err)
	}
	if r == nil {
		return nil
	}
	return fmt.Errorf("%w: %s; checkpoint %s recorded batch %d at its version %d; %s",
		ErrTableBehind, r.Describe(what), ckpt, m.Batch, m.Version, RestoredHint(r))
}

// RestoredHint is the way out of a restore that undid recorded commits: undo it, or rebuild
// the table.
func RestoredHint(r *txlog.Restore) string {
	return r.UndoHint() + "; a gold or derived table may instead be rebuilt from its input with medallion run " +
		"refresh --table NAME --config F (docs/recovery.md, \"A table was restored\")"
}

// CheckRead compares the latest version of a table the query reads as a stream (-1: the
// table does not exist) with the offset a batch of the checkpoint read it up to.
func CheckRead(what, ckpt, offsetsKey string, latest int64, end *source.Offset) error {
	need := ReadVersion(end)
	if latest >= need {
		return nil
	}
	return fmt.Errorf("%w: table %s is at version %d, but %s/%s read it up to version %d; %s",
		ErrTableBehind, what, latest, ckpt, offsetsKey, need, behindReadHint)
}

// ReadVersion is the last version of a streamed table an end offset has read from (-1: none):
// an offset that ends a version points before the next one (index -1).
func ReadVersion(end *source.Offset) int64 {
	switch {
	case end == nil:
		return -1
	case end.Index == -1:
		return end.ReservoirVersion - 1
	}
	return end.ReservoirVersion
}

const (
	behindHint = "a _delta_log entry was deleted or the table restored from an older backup. Put the missing " +
		"_delta_log entries back if you have them; otherwise roll the checkpoint back to the last batch the table " +
		"holds, so the lost batches run again: medallion recover rollback --config F --query NAME (docs/recovery.md)"
	behindReadHint = "a _delta_log entry of the input was deleted or the table restored from an older backup. Put the " +
		"missing entries back, or recover the job that writes the input first (for bronze: medallion recover " +
		"rollback --ingest, then run ingest, which writes the lost batches again), then run this query (docs/recovery.md)"
)

// ParseCommit decodes commits/N.
func ParseCommit(key string, data []byte) (Commit, error) {
	var c Commit
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) != 2 || lines[0] != "v1" {
		return c, fmt.Errorf("%w: %s: want 2 lines starting with v1", ErrBad, key)
	}
	if err := json.Unmarshal([]byte(lines[1]), &c); err != nil {
		return c, fmt.Errorf("%w: %s line 2: %v", ErrBad, key, err)
	}
	return c, nil
}

// Dir is a checkpoint folder.
type Dir struct {
	b objstore.Bucket // rooted at the checkpoint folder
}

// Open returns the checkpoint in b, which is rooted at the checkpoint folder. It reads nothing.
func Open(b objstore.Bucket) *Dir { return &Dir{b: b} }

// The keys of batch n's files, relative to the checkpoint folder.
func OffsetsKey(n int64) string  { return "offsets/" + strconv.FormatInt(n, 10) }
func CommitsKey(n int64) string  { return "commits/" + strconv.FormatInt(n, 10) }
func StateKey(n int64) string    { return "state/" + strconv.FormatInt(n, 10) }
func ProgressKey(n int64) string { return "progress/" + strconv.FormatInt(n, 10) + ".json" }

// QueryID reads metadata, creating it once (put-if-absent: two first runs agree on one id).
// A checkpoint that has batches but no metadata is ErrQueryIDLost: never a new id.
func (d *Dir) QueryID(ctx context.Context) (string, error) {
	for range 3 {
		id, err := d.ReadQueryID(ctx)
		if !errors.Is(err, ErrNoQuery) {
			return id, err
		}
		m, _ := json.Marshal(map[string]string{"id": uuid.NewString()})
		if err := objstore.PutBytesIfAbsent(ctx, d.b, "metadata", m); err != nil && !errors.Is(err, objstore.ErrAlreadyExists) {
			return "", fmt.Errorf("stream: create checkpoint metadata: %w", err)
		}
	}
	return "", fmt.Errorf("%w: metadata cannot be created", ErrBad)
}

// ReadQueryID reads the query id of metadata without creating it (ErrNoQuery: none yet;
// ErrQueryIDLost: gone while offsets, commits or state remain).
func (d *Dir) ReadQueryID(ctx context.Context) (string, error) {
	data, err := objstore.ReadAll(ctx, d.b, "metadata")
	if errors.Is(err, objstore.ErrNotFound) {
		// Only a first run (or a lost id) gets here: the listings cost nothing in steady state.
		found, err := d.firstBatchFile(ctx)
		if err != nil {
			return "", err
		}
		if found != "" {
			// Metadata is created before any batch file: when it is there now, another first
			// run created it after our read and went on to its first batch, and this is its id.
			if data, err = objstore.ReadAll(ctx, d.b, "metadata"); err == nil {
				return parseQueryID(data)
			}
			return "", fmt.Errorf("%w: metadata is missing but %s exists. Recover the id (it is in the progress "+
				"files and the tables' txn): medallion recover query-id --config F --query NAME (docs/recovery.md)",
				ErrQueryIDLost, found)
		}
		return "", ErrNoQuery
	}
	if err != nil {
		return "", fmt.Errorf("stream: read checkpoint metadata: %w", err)
	}
	return parseQueryID(data)
}

// parseQueryID reads the query id of metadata's contents.
func parseQueryID(data []byte) (string, error) {
	var m struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(data, &m); err != nil || m.ID == "" {
		return "", fmt.Errorf("%w: metadata: no query id (%v)", ErrBad, err)
	}
	return m.ID, nil
}

// firstBatchFile returns the key of a file under offsets/, commits/ or state/, or "".
func (d *Dir) firstBatchFile(ctx context.Context) (string, error) {
	for _, dir := range []string{"offsets/", "commits/", "state/"} {
		for info, err := range d.b.List(ctx, dir, objstore.ListOptions{}) {
			if err != nil {
				return "", fmt.Errorf("stream: list checkpoint %s: %w", dir, err)
			}
			return info.Key, nil
		}
	}
	return "", nil
}

// Head is where a query stands when a run starts: the batch to resume after, or to re-run.
type Head struct {
	QueryID string
	// Last is the highest batch with an offsets file (-1: none yet) when it is committed, or
	// else the first batch without a commit record: the one to re-run. Entry is its offsets.
	Last  int64
	Entry *Offsets
	// Commit is commits/Last when batch Last is committed; nil when it must be re-run.
	Commit *Commit
	// Prev is offsets/(Last-1) when batch Last must be re-run (nil for batch 0): where the
	// re-run resumes from.
	Prev *Offsets
	// Committed is the commit record of the last committed batch (nil: none), whatever the
	// case: its Tables are what the tables must hold (CheckTable).
	Committed *Commit
	// Recorded is the highest batch with an offsets file. Above Last only in a checkpoint rolled
	// back (Rollback): batches Last+1..Recorded are re-run, in order, with their recorded
	// offsets, before any new batch.
	Recorded int64
}

// ReadHead reads the query id (creating it on the first run), the latest offsets and whether
// that batch committed, and the entries a restarting query needs to resume.
func (d *Dir) ReadHead(ctx context.Context) (Head, error) {
	h := Head{Last: -1, Recorded: -1}
	var err error
	if h.QueryID, err = d.QueryID(ctx); err != nil {
		return h, err
	}
	if h.Last, err = d.LatestOffsets(ctx); err != nil || h.Last < 0 {
		return h, err
	}
	h.Recorded = h.Last
	lastCommit, err := d.LatestCommit(ctx)
	if err != nil {
		return h, err
	}
	if lastCommit >= h.Last {
		if h.Entry, err = d.ReadOffsets(ctx, h.Last); err != nil {
			return h, err
		}
		c, err := d.ReadCommit(ctx, h.Last)
		if err != nil {
			return h, err
		}
		h.Commit, h.Committed = &c, &c
		return h, nil
	}
	// The first batch without a commit record is re-run; a checkpoint rolled back has more.
	h.Last = lastCommit + 1
	if h.Entry, err = d.ReadOffsets(ctx, h.Last); err != nil {
		return h, err
	}
	if lastCommit >= 0 {
		if h.Prev, err = d.ReadOffsets(ctx, lastCommit); err != nil {
			return h, err
		}
		c, err := d.ReadCommit(ctx, lastCommit)
		if err != nil {
			return h, err
		}
		h.Committed = &c
	}
	return h, nil
}

// LatestOffsets returns the highest batch with an offsets file, or -1.
func (d *Dir) LatestOffsets(ctx context.Context) (int64, error) { return d.latest(ctx, "offsets") }

// LatestCommit returns the highest committed batch, or -1.
func (d *Dir) LatestCommit(ctx context.Context) (int64, error) { return d.latest(ctx, "commits") }

// latest returns the highest batch number under dir, or -1.
func (d *Dir) latest(ctx context.Context, dir string) (int64, error) {
	n := int64(-1)
	for info, err := range d.b.List(ctx, dir+"/", objstore.ListOptions{}) {
		if err != nil {
			return 0, fmt.Errorf("stream: list checkpoint %s: %w", dir, err)
		}
		name := path.Base(info.Key)
		v, err := strconv.ParseInt(name, 10, 64)
		if err != nil || v < 0 {
			continue // Spark ignores foreign files (e.g. .crc) in its logs too
		}
		n = max(n, v)
	}
	return n, nil
}

// ReadOffsets reads offsets/n.
func (d *Dir) ReadOffsets(ctx context.Context, n int64) (*Offsets, error) {
	key := OffsetsKey(n)
	data, err := objstore.ReadAll(ctx, d.b, key)
	if err != nil {
		return nil, fmt.Errorf("stream: read checkpoint %s: %w", key, err)
	}
	return ParseOffsets(key, data)
}

// ReadCommit reads commits/n.
func (d *Dir) ReadCommit(ctx context.Context, n int64) (Commit, error) {
	key := CommitsKey(n)
	data, err := objstore.ReadAll(ctx, d.b, key)
	if err != nil {
		return Commit{}, fmt.Errorf("stream: read checkpoint %s: %w", key, err)
	}
	return ParseCommit(key, data)
}

// WriteOffsets writes the WAL entry of batch n. If another run wrote it first, the existing
// entry wins and is returned: a batch runs with exactly what its WAL says.
func (d *Dir) WriteOffsets(ctx context.Context, n int64, e *Offsets) (*Offsets, error) {
	err := objstore.PutBytesIfAbsent(ctx, d.b, OffsetsKey(n), e.Marshal())
	if err == nil {
		return e, nil
	}
	if !errors.Is(err, objstore.ErrAlreadyExists) {
		// The write may have landed (an unknown outcome): read it back before deciding.
		if got, rerr := d.ReadOffsets(ctx, n); rerr == nil {
			return got, nil
		}
		return nil, fmt.Errorf("stream: write checkpoint %s: %w", OffsetsKey(n), err)
	}
	return d.ReadOffsets(ctx, n)
}

// WriteCommit marks batch n committed, with the watermark the next batch runs with.
func (d *Dir) WriteCommit(ctx context.Context, n, nextWM int64) error {
	return d.WriteCommitRecord(ctx, n, Commit{NextBatchWatermarkMs: nextWM})
}

// WriteCommitRecord marks batch n committed with c: the watermark the next batch runs with and
// what the tables hold.
func (d *Dir) WriteCommitRecord(ctx context.Context, n int64, c Commit) error {
	m, _ := json.Marshal(c)
	data := append([]byte("v1\n"), m...)
	if err := objstore.PutBytesIfAbsent(ctx, d.b, CommitsKey(n), data); err != nil && !errors.Is(err, objstore.ErrAlreadyExists) {
		return fmt.Errorf("stream: write checkpoint %s: %w", CommitsKey(n), err)
	}
	return nil
}

// RemoveCommit deletes commits/n: batch n is re-run, with its recorded offsets, by the next
// run (a rollback; see stream.Rollback).
func (d *Dir) RemoveCommit(ctx context.Context, n int64) error {
	if err := d.b.Delete(ctx, CommitsKey(n)); err != nil && !errors.Is(err, objstore.ErrNotFound) {
		return fmt.Errorf("stream: remove checkpoint %s: %w", CommitsKey(n), err)
	}
	return nil
}

// ReadState reads the sections of state version v.
func (d *Dir) ReadState(ctx context.Context, v int64) (map[string][]byte, error) {
	key := StateKey(v)
	data, err := objstore.ReadAll(ctx, d.b, key)
	if err != nil {
		return nil, fmt.Errorf("stream: read checkpoint %s: %w", key, err)
	}
	return decodeState(key, data)
}

// WriteState writes state version v: the sections, in order.
func (d *Dir) WriteState(ctx context.Context, v int64, sections map[string][]byte, order []string) error {
	return d.WriteSections(ctx, v, Sections(sections, order))
}

// Section is one named section of a state file: its bytes (Data) or, for a section as big as
// the state (a backlog's first state delta), its Size and Write, which writes exactly that
// many bytes while the file is written, so that the section is never held whole.
type Section struct {
	Name  string
	Data  []byte
	Size  int64
	Write func(io.Writer) error
}

func (s *Section) size() int64 {
	if s.Write != nil {
		return s.Size
	}
	return int64(len(s.Data))
}

// Sections are the named sections, in order, as Section values.
func Sections(sections map[string][]byte, order []string) []Section {
	out := make([]Section, 0, len(order))
	for _, name := range order {
		out = append(out, Section{Name: name, Data: sections[name]})
	}
	return out
}

// errStateAborted ends a state file's encoding when the store stopped reading it.
var errStateAborted = errors.New("stream: the state file's write stopped")

// WriteSections writes state version v: the sections, in order, encoded as the file is
// stored. The file was encoded whole first, a copy of every section at the moment the state
// is largest; now no section is copied whole, and one with Write is not held at all. The
// bytes are what ReadState has always read.
func (d *Dir) WriteSections(ctx context.Context, v int64, secs []Section) error {
	pr, pw := io.Pipe()
	encoded := make(chan error, 1)
	go func() {
		err := encodeStateTo(pw, secs)
		pw.CloseWithError(err)
		encoded <- err
	}()
	err := d.b.Put(ctx, StateKey(v), pr, stateSize(secs))
	pr.CloseWithError(errStateAborted) // an encoder still writing stops: nobody reads it now
	encErr := <-encoded
	switch {
	case encErr != nil && !errors.Is(encErr, errStateAborted):
		return fmt.Errorf("stream: write checkpoint %s: %w", StateKey(v), encErr)
	case err != nil:
		return fmt.Errorf("stream: write checkpoint %s: %w", StateKey(v), err)
	case encErr != nil:
		// The store took the object without reading it to its end: never a state file.
		return fmt.Errorf("stream: write checkpoint %s: the store stopped reading before the end", StateKey(v))
	}
	return nil
}

// WriteProgress keeps batch n's progress report (StreamingQueryProgress JSON).
func (d *Dir) WriteProgress(ctx context.Context, n int64, data []byte) error {
	if err := objstore.PutBytes(ctx, d.b, ProgressKey(n), data); err != nil {
		return fmt.Errorf("stream: write checkpoint %s: %w", ProgressKey(n), err)
	}
	return nil
}

// ProgressBatches lists the batches that have a progress file, in batch order.
func (d *Dir) ProgressBatches(ctx context.Context) ([]int64, error) {
	infos, err := objstore.ListAll(ctx, d.b, "progress/", objstore.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("stream: list checkpoint progress: %w", err)
	}
	var out []int64
	for _, o := range infos {
		ns, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, "progress/"), ".json")
		n, err := strconv.ParseInt(ns, 10, 64)
		if !ok || err != nil || n < 0 {
			continue // not a progress file (temporary or foreign objects)
		}
		out = append(out, n)
	}
	slices.SortFunc(out, cmp.Compare)
	return out, nil
}

// ReadProgress reads batch n's progress file as it is; objstore.ErrNotFound when a cleanup
// removed it.
func (d *Dir) ReadProgress(ctx context.Context, n int64) ([]byte, error) {
	return objstore.ReadAll(ctx, d.b, ProgressKey(n))
}

// Cleanup removes the files of batch n (and state version n) once they fall out of the
// retention. A crash between deletes leaves files behind that nothing reads.
func (d *Dir) Cleanup(ctx context.Context, n int64) error {
	for _, key := range []string{OffsetsKey(n), CommitsKey(n), StateKey(n), ProgressKey(n)} {
		if err := d.b.Delete(ctx, key); err != nil && !errors.Is(err, objstore.ErrNotFound) {
			return fmt.Errorf("stream: clean up checkpoint %s: %w", key, err)
		}
	}
	return nil
}

// State files hold named sections (the dedup state, each aggregation's snapshot) with a
// version and a CRC-32, so a torn or foreign file fails loudly.
const stateMagic = "MDLSTRM1"

func encodeState(sections map[string][]byte, order []string) []byte {
	secs := Sections(sections, order)
	var b bytes.Buffer
	b.Grow(int(stateSize(secs)))
	_ = encodeStateTo(&b, secs) // a bytes.Buffer takes every write
	return b.Bytes()
}

// stateSize is the length of the state file of secs.
func stateSize(secs []Section) int64 {
	n := int64(len(stateMagic)+uvarintLen(uint64(len(secs)))) + 4
	for i := range secs {
		l := secs[i].size()
		n += int64(uvarintLen(uint64(len(secs[i].Name)))+len(secs[i].Name)+uvarintLen(uint64(l))) + l
	}
	return n
}

func uvarintLen(x uint64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], x)
}

// crcWriter passes writes on and keeps the CRC-32 of what passed.
type crcWriter struct {
	w   io.Writer
	crc uint32
	n   int64
}

func (c *crcWriter) Write(p []byte) (int, error) {
	c.crc = crc32.Update(c.crc, crc32.IEEETable, p)
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// encodeStateTo writes the state file of secs to w: magic, section count, each section's name
// and bytes with their lengths, and the CRC-32 of all that.
func encodeStateTo(w io.Writer, secs []Section) error {
	cw := &crcWriter{w: w}
	var hdr []byte
	hdr = append(hdr, stateMagic...)
	hdr = binary.AppendUvarint(hdr, uint64(len(secs)))
	for i := range secs {
		sec := &secs[i]
		hdr = binary.AppendUvarint(hdr, uint64(len(sec.Name)))
		hdr = append(hdr, sec.Name...)
		hdr = binary.AppendUvarint(hdr, uint64(sec.size()))
		if _, err := cw.Write(hdr); err != nil {
			return err
		}
		hdr = hdr[:0]
		if sec.Write == nil {
			if _, err := cw.Write(sec.Data); err != nil {
				return err
			}
			continue
		}
		at := cw.n
		if err := sec.Write(cw); err != nil {
			return fmt.Errorf("section %s: %w", sec.Name, err)
		}
		if got := cw.n - at; got != sec.Size {
			return fmt.Errorf("section %s: %d bytes written, %d announced", sec.Name, got, sec.Size)
		}
	}
	if len(secs) == 0 {
		if _, err := cw.Write(hdr); err != nil {
			return err
		}
	}
	_, err := w.Write(binary.BigEndian.AppendUint32(nil, cw.crc))
	return err
}

func decodeState(key string, b []byte) (map[string][]byte, error) {
	bad := func(what string) error { return fmt.Errorf("%w: %s: %s", ErrBad, key, what) }
	if len(b) < len(stateMagic)+4 || string(b[:len(stateMagic)]) != stateMagic {
		return nil, bad("not a state file")
	}
	body := b[:len(b)-4]
	if crc32.ChecksumIEEE(body) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return nil, bad("checksum mismatch")
	}
	r := bufio.NewReader(bytes.NewReader(body[len(stateMagic):]))
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, bad("section count")
	}
	out := map[string][]byte{}
	read := func() ([]byte, error) {
		l, err := binary.ReadUvarint(r)
		if err != nil || l > uint64(len(body)) {
			return nil, bad("section length")
		}
		p := make([]byte, l)
		if _, err := io.ReadFull(r, p); err != nil {
			return nil, bad("truncated section")
		}
		return p, nil
	}
	for range n {
		name, err := read()
		if err != nil {
			return nil, err
		}
		data, err := read()
		if err != nil {
			return nil, err
		}
		out[string(name)] = data
	}
	return out, nil
}

// RefreshPrefix holds the aggregation states full refreshes of golds left (stream's
// RefreshGold): outside offsets/, commits/ and state/, so Cleanup never removes one that a
// gold table still names.
const RefreshPrefix = "refresh/"

// WriteRefresh stores a refresh's state under key (which starts with RefreshPrefix).
func (d *Dir) WriteRefresh(ctx context.Context, key string, data []byte) error {
	if !strings.HasPrefix(key, RefreshPrefix) {
		return fmt.Errorf("stream: checkpoint: %s is not under %s", key, RefreshPrefix)
	}
	if err := d.b.Put(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
		return fmt.Errorf("stream: write checkpoint %s: %w", key, err)
	}
	return nil
}

// ReadRefresh reads what WriteRefresh stored under key.
func (d *Dir) ReadRefresh(ctx context.Context, key string) ([]byte, error) {
	if !strings.HasPrefix(key, RefreshPrefix) {
		return nil, fmt.Errorf("stream: checkpoint: %s is not under %s", key, RefreshPrefix)
	}
	rc, err := d.b.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("stream: read checkpoint %s: %w", key, err)
	}
	defer rc.Close()
	return io.ReadAll(rc)
}
