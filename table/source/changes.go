package source

import (
	"context"
	"fmt"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
)

// ChangeRows are the change rows of one file of a change feed stream: the table's columns,
// then _change_type, _commit_version and _commit_timestamp (table.ChangeFeed's schema).
type ChangeRows struct {
	Version   int64
	Index     int64 // the file's position within its version, as offsets count it
	Timestamp time.Time
	Rows      *pq.Batch
}

// ChangeSource reads a table's change data feed as a stream, the way Delta's DeltaSource does
// with readChangeFeed: a fresh stream first delivers the snapshot it starts from as inserts
// (stamped with that version), then each later version's change rows (table.ChangeFeed chooses
// the files: change data files, or the adds and removes of a version without them). Offsets
// and read limits are the Source's: a version's position counts its change files, so a batch
// ends on a file and the next one goes on from the file after it.
type ChangeSource struct {
	src *Source // the log, its latest snapshot, table ids and snapshot file order
	tbl *table.Table
}

// NewChanges streams the change feed of the table in b (rooted at the table folder); opts are
// the options the table is opened with (OpenURL for files outside the root).
func NewChanges(b objstore.Bucket, opts table.Options) *ChangeSource {
	return &ChangeSource{src: New(b, Options{}), tbl: table.Open(b, opts)}
}

// Latest returns the newest version of the table, or -1 when it does not exist yet, and its id.
func (s *ChangeSource) Latest(ctx context.Context) (int64, string, error) {
	return s.src.Latest(ctx)
}

// StartAt is the offset of a stream that starts with the changes of version v (Spark's
// startingVersion): nothing of the snapshot before it is delivered.
func StartAt(tableID string, v int64) Offset {
	return Offset{SourceVersion: 1, ReservoirID: tableID, ReservoirVersion: v, Index: -1}
}

// NextBatch returns the change rows after start (nil: a fresh stream, which starts with the
// snapshot at `until` as inserts) up to and including version `until`, as many files as limit
// allows, and the end offset of that batch. When nothing is new, the end offset equals start.
// The feed must be on at every version read: table.ErrChangeFeedOff otherwise, and
// table.ErrChangeDataGone when vacuum deleted a file the stream still needs.
func (s *ChangeSource) NextBatch(ctx context.Context, start *Offset, until int64, limit ReadLimit) ([]ChangeRows, Offset, error) {
	if until < 0 {
		if start != nil {
			return nil, *start, nil
		}
		return nil, Offset{}, nil
	}
	var pos Offset
	if start == nil {
		snap, err := s.src.snapshotAt(ctx, until)
		if err != nil {
			return nil, Offset{}, fmt.Errorf("source: source snapshot %d: %w", until, err)
		}
		pos = Offset{SourceVersion: 1, ReservoirID: snap.Metadata().ID, ReservoirVersion: until, Index: -1, IsStartingVersion: true}
	} else {
		pos = *start
	}
	if pos.ReservoirVersion > until {
		return nil, pos, nil
	}
	if err := s.src.checkTableID(ctx, pos, until); err != nil {
		return nil, pos, err
	}
	feed, err := s.tbl.OpenChanges(ctx, pos.ReservoirVersion, until)
	if err != nil {
		return nil, pos, fmt.Errorf("source: change feed %d..%d: %w", pos.ReservoirVersion, until, err)
	}
	var out []ChangeRows
	var size int64
	for v := pos.ReservoirVersion; v <= until; v++ {
		vc, err := s.versionFiles(ctx, feed, v, pos.IsStartingVersion && v == pos.ReservoirVersion)
		if err != nil {
			return nil, pos, err
		}
		from := int64(0)
		if v == pos.ReservoirVersion {
			from = pos.Index + 1
		}
		for i := from; i < int64(len(vc.Files)); i++ {
			rows, err := feed.ReadFile(ctx, vc, vc.Files[i])
			if err != nil {
				return nil, pos, fmt.Errorf("source: %w", err)
			}
			out = append(out, ChangeRows{Version: v, Index: i, Timestamp: vc.Timestamp, Rows: rows})
			size += vc.Files[i].Size
			if limit.MaxFiles > 0 && len(out) >= limit.MaxFiles || limit.MaxBytes > 0 && size >= limit.MaxBytes {
				end := Offset{SourceVersion: 1, ReservoirID: pos.ReservoirID, ReservoirVersion: v, Index: i,
					IsStartingVersion: pos.IsStartingVersion && v == pos.ReservoirVersion}
				if i == int64(len(vc.Files))-1 {
					end = Offset{SourceVersion: 1, ReservoirID: pos.ReservoirID, ReservoirVersion: v + 1, Index: -1}
				}
				return out, end, nil
			}
		}
	}
	return out, Offset{SourceVersion: 1, ReservoirID: pos.ReservoirID, ReservoirVersion: until + 1, Index: -1}, nil
}

// versionFiles plans version v: the files of its snapshot as inserts when it is the version a
// fresh stream starts from, else its change files.
func (s *ChangeSource) versionFiles(ctx context.Context, feed *table.ChangeFeed, v int64, starting bool) (table.VersionChanges, error) {
	if !starting {
		vc, err := feed.Plan(ctx, v)
		if err != nil {
			return vc, fmt.Errorf("source: %w", err)
		}
		return vc, nil
	}
	adds, err := s.src.snapshotFiles(ctx, v)
	if err != nil {
		return table.VersionChanges{}, err
	}
	vc := table.VersionChanges{Version: v, Timestamp: feed.Timestamp(v)}
	for _, a := range adds {
		vc.Files = append(vc.Files, table.ChangeFile{Path: a.Path, PartitionValues: a.PartitionValues, Size: a.Size,
			Type: table.ChangeInsert, DeletionVector: a.DeletionVector})
	}
	return vc, nil
}
