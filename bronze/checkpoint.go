package bronze

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/medallion-lake/medallion/objstore"
)

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
	var err error
	if st.appID, err = checkpointAppID(ctx, x.ckpt, "ingest", x.opts.CheckpointPath); err != nil {
		return nil, err
	}
	err = readBatchRecords(ctx, x.ckpt, "ingest", func(b *batchRecord) {
		st.batches[b.BatchID] = b
		// Batches are listed in batch order, so a key's later read replaces its earlier one.
		for _, f := range b.Files {
			st.claimed[f.Key] = f
			st.claimedIn[f.Key] = b.BatchID
		}
		st.next = max(st.next, b.BatchID+1)
	})
	if err != nil {
		return nil, err
	}
	if st.committed, err = committedBatches(ctx, x.ckpt, "ingest"); err != nil {
		return nil, err
	}
	return st, nil
}

// checkpointAppID reads the query id of an ingest checkpoint (kind "ingest" or "kafka ingest",
// at path), creating it the first time with put-if-absent: the txn appId of every table commit,
// "medallion-ingest-<id>", is distinct for every checkpoint.
func checkpointAppID(ctx context.Context, ckpt objstore.Bucket, kind, path string) (string, error) {
	meta, err := objstore.ReadAll(ctx, ckpt, "metadata.json")
	if errors.Is(err, objstore.ErrNotFound) {
		if err := checkLostID(ctx, ckpt, kind+" checkpoint "+path); err != nil {
			return "", err
		}
		fresh, _ := json.Marshal(map[string]string{"id": uuid.NewString()})
		if err := objstore.PutBytesIfAbsent(ctx, ckpt, "metadata.json", fresh); err != nil && !errors.Is(err, objstore.ErrAlreadyExists) {
			return "", fmt.Errorf("bronze: create %s checkpoint: %w", kind, err)
		}
		meta, err = objstore.ReadAll(ctx, ckpt, "metadata.json")
	}
	if err != nil {
		return "", fmt.Errorf("bronze: read %s checkpoint metadata: %w", kind, err)
	}
	var m struct{ ID string }
	if err := json.Unmarshal(meta, &m); err != nil || m.ID == "" {
		return "", fmt.Errorf("bronze: %s checkpoint metadata.json is corrupt (%v): move the checkpoint away only if you know the tables hold no ingested data", kind, err)
	}
	return "medallion-ingest-" + m.ID, nil
}

// readBatchRecords decodes every batches/N of an ingest checkpoint (kind as checkpointAppID)
// into a B of its own and hands it to each, in batch order.
func readBatchRecords[B any](ctx context.Context, ckpt objstore.Bucket, kind string, each func(*B)) error {
	for info, err := range ckpt.List(ctx, "batches/", objstore.ListOptions{}) {
		if err != nil {
			return fmt.Errorf("bronze: list %s batches: %w", kind, err)
		}
		data, err := objstore.ReadAll(ctx, ckpt, info.Key)
		if err != nil {
			return fmt.Errorf("bronze: read %s: %w", info.Key, err)
		}
		b := new(B)
		if err := json.Unmarshal(data, b); err != nil {
			return fmt.Errorf("bronze: %s checkpoint %s is corrupt: %w", kind, info.Key, err)
		}
		each(b)
	}
	return nil
}

// committedBatches are the ids of an ingest checkpoint's commits/N records.
func committedBatches(ctx context.Context, ckpt objstore.Bucket, kind string) (map[int64]bool, error) {
	committed := map[int64]bool{}
	for info, err := range ckpt.List(ctx, "commits/", objstore.ListOptions{}) {
		if err != nil {
			return nil, fmt.Errorf("bronze: list %s commits: %w", kind, err)
		}
		var id int64
		if _, err := fmt.Sscanf(strings.TrimPrefix(info.Key, "commits/"), "%020d.json", &id); err == nil {
			committed[id] = true
		}
	}
	return committed, nil
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
