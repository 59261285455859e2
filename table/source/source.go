package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/txlog"
)

// ErrDataRemoved reports a source commit that removes data files: a streaming source cannot
// un-read rows it already delivered, so it stops unless told to ignore such commits.
var ErrDataRemoved = errors.New("source: the source table removed data")

// ErrTableReplaced reports that the source table's id changed under the stream.
var ErrTableReplaced = errors.New("source: the source table was replaced")

// Offset is Delta's streaming source offset: the position after file Index of version
// ReservoirVersion (Index -1: before every file of that version). While IsStartingVersion, the
// version's files are those of the snapshot the stream started from; after that they are the
// files a commit added. Offsets compare lexicographically on (ReservoirVersion, Index).
type Offset struct {
	SourceVersion     int    `json:"sourceVersion"`
	ReservoirID       string `json:"reservoirId"`
	ReservoirVersion  int64  `json:"reservoirVersion"`
	Index             int64  `json:"index"`
	IsStartingVersion bool   `json:"isStartingVersion"`
}

// Less orders offsets.
func (o Offset) Less(p Offset) bool {
	if o.ReservoirVersion != p.ReservoirVersion {
		return o.ReservoirVersion < p.ReservoirVersion
	}
	return o.Index < p.Index
}

// String renders the offset as Delta writes it in the offsets log.
func (o Offset) String() string {
	b, _ := json.Marshal(o)
	return string(b)
}

// IndexedFile is one data file of the source with its position.
type IndexedFile struct {
	Version int64
	Index   int64
	Add     *txlog.Add
}

// Options tune the source.
type Options struct {
	// IgnoreDeletes skips commits that only remove files (deleting data upstream).
	IgnoreDeletes bool
	// IgnoreChanges skips the removes of commits that rewrite files, delivering their adds
	// again (rows may repeat; silver's dedup catches repeated keys).
	IgnoreChanges bool
}

// Source reads a Delta table as a stream of added files, the way Delta's DeltaSource does.
type Source struct {
	log  *txlog.Log
	opts Options

	mu   sync.Mutex
	last *txlog.Snapshot // the newest snapshot seen: later ones replay only the new commits
}

// New streams the table in b (rooted at the table folder).
func New(b objstore.Bucket, opts Options) *Source {
	return &Source{log: txlog.New(b, txlog.Options{}), opts: opts}
}

// Latest returns the newest version of the source table, or -1 when the table does not exist yet.
func (s *Source) Latest(ctx context.Context) (int64, string, error) {
	s.mu.Lock()
	prev := s.last
	s.mu.Unlock()
	snap, err := s.log.Refresh(ctx, prev)
	if errors.Is(err, txlog.ErrTableNotFound) {
		return -1, "", nil
	}
	if err != nil {
		return 0, "", err
	}
	s.mu.Lock()
	// Keep the newest snapshot; one older than the one refreshed from means the table went
	// back (restored or replaced, which Refresh detected): drop what was kept.
	if s.last == nil || snap.Version() > s.last.Version() || (s.last == prev && snap.Version() < prev.Version()) {
		s.last = snap
	}
	s.mu.Unlock()
	return snap.Version(), snap.Metadata().ID, nil
}

// snapshotAt is the snapshot of version v, the one Latest last saw when it is that version
// (a batch reads up to the latest version, so it usually is).
func (s *Source) snapshotAt(ctx context.Context, v int64) (*txlog.Snapshot, error) {
	s.mu.Lock()
	last := s.last
	s.mu.Unlock()
	if last != nil && last.Version() == v {
		return last, nil
	}
	return s.log.SnapshotAt(ctx, v)
}

// ReadLimit bounds one micro-batch, as Delta's maxFilesPerTrigger and maxBytesPerTrigger do;
// the zero value reads everything. MaxBytes is a soft limit: the batch ends with the file that
// reaches it, so a batch always has at least one file.
type ReadLimit struct {
	MaxFiles int
	MaxBytes int64
}

// NextBatch returns the files after start (nil: a fresh stream, which starts from the snapshot
// at `until`) up to and including version `until`, as many as limit allows,
// and the end offset of that batch. When nothing is new, the end offset equals start.
func (s *Source) NextBatch(ctx context.Context, start *Offset, until int64, limit ReadLimit) ([]IndexedFile, Offset, error) {
	var files []IndexedFile
	var size int64
	take := func(f IndexedFile) bool {
		files = append(files, f)
		size += f.Add.Size
		return limit.MaxFiles > 0 && len(files) >= limit.MaxFiles || limit.MaxBytes > 0 && size >= limit.MaxBytes
	}
	var pos Offset
	if until < 0 {
		if start != nil {
			return nil, *start, nil
		}
		return nil, Offset{}, nil
	}
	if start == nil {
		snap, err := s.snapshotAt(ctx, until)
		if err != nil {
			return nil, Offset{}, fmt.Errorf("source: source snapshot %d: %w", until, err)
		}
		pos = Offset{SourceVersion: 1, ReservoirID: snap.Metadata().ID, ReservoirVersion: until, Index: -1, IsStartingVersion: true}
	} else {
		pos = *start
	}
	if err := s.checkTableID(ctx, pos, until); err != nil {
		return nil, pos, err
	}
	for v := pos.ReservoirVersion; v <= until; v++ {
		var versionFiles []*txlog.Add
		var err error
		if pos.IsStartingVersion && v == pos.ReservoirVersion {
			versionFiles, err = s.snapshotFiles(ctx, v)
		} else {
			versionFiles, err = s.commitFiles(ctx, v)
		}
		if err != nil {
			return nil, pos, err
		}
		from := int64(0)
		if v == pos.ReservoirVersion {
			from = pos.Index + 1
		}
		for i := from; i < int64(len(versionFiles)); i++ {
			if take(IndexedFile{Version: v, Index: i, Add: versionFiles[i]}) {
				end := Offset{SourceVersion: 1, ReservoirID: pos.ReservoirID, ReservoirVersion: v, Index: i, IsStartingVersion: pos.IsStartingVersion && v == pos.ReservoirVersion}
				if i == int64(len(versionFiles))-1 {
					// Ending on a version's last file: the offset points before the next version.
					end = Offset{SourceVersion: 1, ReservoirID: pos.ReservoirID, ReservoirVersion: v + 1, Index: -1}
				}
				return files, end, nil
			}
		}
	}
	return files, Offset{SourceVersion: 1, ReservoirID: pos.ReservoirID, ReservoirVersion: until + 1, Index: -1}, nil
}

func (s *Source) checkTableID(ctx context.Context, pos Offset, until int64) error {
	if pos.ReservoirID == "" || until < 0 {
		return nil
	}
	snap, err := s.snapshotAt(ctx, until)
	if err != nil {
		return fmt.Errorf("source: source snapshot %d: %w", until, err)
	}
	if id := snap.Metadata().ID; id != pos.ReservoirID {
		return fmt.Errorf("%w: table id %s, the stream started on %s; start a new checkpoint", ErrTableReplaced, id, pos.ReservoirID)
	}
	return nil
}

// snapshotFiles lists the files of a version's snapshot in Delta's stable order:
// modification time, then path. (Bronze's ingest gives its files strictly increasing
// modification times in commit order, so for bronze this order is the commit order, the same in
// every copy of the pipeline and for Spark reading the same table.)
func (s *Source) snapshotFiles(ctx context.Context, v int64) ([]*txlog.Add, error) {
	snap, err := s.snapshotAt(ctx, v)
	if err != nil {
		return nil, fmt.Errorf("source: source snapshot %d: %w", v, err)
	}
	files := append([]*txlog.Add(nil), snap.Files()...)
	sort.SliceStable(files, func(i, j int) bool {
		if files[i].ModificationTime != files[j].ModificationTime {
			return files[i].ModificationTime < files[j].ModificationTime
		}
		return files[i].Path < files[j].Path
	})
	return files, nil
}

// commitFiles returns the data files a commit added, in the commit's order. Files added with
// dataChange=false (compaction) carry no new rows and are skipped; removes with dataChange=true
// stop the stream unless ignored.
func (s *Source) commitFiles(ctx context.Context, v int64) ([]*txlog.Add, error) {
	data, err := objstore.ReadAll(ctx, s.log.Bucket(), txlog.CommitKey(v))
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, fmt.Errorf("source: source commit %d is gone (log cleanup ran past the stream's position): %w", v, err)
	}
	if err != nil {
		return nil, fmt.Errorf("source: read source commit %d: %w", v, err)
	}
	actions, err := txlog.ParseActions(data)
	if err != nil {
		return nil, fmt.Errorf("source: source commit %d: %w", v, err)
	}
	var adds []*txlog.Add
	removed, restore := false, false
	for _, a := range actions {
		switch {
		case a.CommitInfo != nil && a.CommitInfo.Operation == txlog.OperationRestore:
			restore = true
		case a.Add != nil && a.Add.DataChange:
			adds = append(adds, a.Add)
		case a.Remove != nil && a.Remove.DataChange:
			removed = true
		}
	}
	switch {
	case !removed:
	case len(adds) == 0 && (s.opts.IgnoreDeletes || s.opts.IgnoreChanges):
	case len(adds) > 0 && s.opts.IgnoreChanges:
	case restore:
		return nil, fmt.Errorf("%w: version %d is a RESTORE that takes back rows the stream has read; a stream cannot "+
			"un-read them, and ignoring the change would count the rows it brings back again (docs/recovery.md, "+
			"\"A table was restored\")", ErrDataRemoved, v)
	default:
		return nil, fmt.Errorf("%w: version %d removes data files; set stream.ignore_deletes (deletes only) or stream.ignore_changes to go on", ErrDataRemoved, v)
	}
	return adds, nil
}
