package stream

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/medallion-lake/medallion/table/source"
	"github.com/medallion-lake/medallion/txlog"
)

// ErrBronzeFilesMissing reports bronze data files the stream has yet to read that are gone
// from the store: a vacuum deleted them after a compaction or a delete removed them from the
// table, while the stream lagged further behind than the vacuum's retention. The stream cannot
// go past them on its own, so every run fails the same way until an operator acts; the
// message names the versions and files and the ways out.
var ErrBronzeFilesMissing = errors.New("stream: bronze data files the stream has not read yet are gone")

// missingFilesError explains the files of a batch that are gone (cause is one of their read
// errors, kept for errors.Is), with what the bronze log's tombstones still say about each.
func missingFilesError(snap *txlog.Snapshot, missing []source.IndexedFile, cause error) error {
	tomb := map[string]*txlog.Remove{}
	for _, r := range snap.Tombstones() {
		tomb[r.Path] = r
	}
	var versions []string
	var lines []string
	compacted, deleted := false, false
	for _, f := range missing {
		v := fmt.Sprint(f.Version)
		if len(versions) == 0 || versions[len(versions)-1] != v {
			versions = append(versions, v)
		}
		why := "no tombstone left in the log"
		if r := tomb[f.Add.Path]; r != nil {
			when := ""
			if r.DeletionTimestamp != nil {
				when = " at " + time.UnixMilli(*r.DeletionTimestamp).UTC().Format(time.RFC3339)
			}
			if r.DataChange {
				why, deleted = "deleted from the table"+when, true
			} else {
				why, compacted = "compacted"+when+"; its rows are still in bronze, in the compacted files", true
			}
		}
		if len(lines) < 20 {
			lines = append(lines, fmt.Sprintf("version %d: %s (%s)", f.Version, f.Add.Path, why))
		}
	}
	if len(missing) > len(lines) {
		lines = append(lines, fmt.Sprintf("and %d more", len(missing)-len(lines)))
	}
	var fix []string
	fix = append(fix, "restore the files (bucket versioning or a backup) and run the stream again")
	if compacted || !deleted {
		// Not the old silver: a new query's dedup starts empty and does not look its first
		// batches' keys up in silver, so silver would hold every row twice (and the stream
		// refuses a new checkpoint over tables that hold the old query's batches).
		fix = append(fix, "or start the stream over on a new stream.checkpoint with new silver, quarantine and gold tables "+
			"(copy the old checkpoint's ingest/ folder into the new one, so that ingest goes on where it was; the new query "+
			"reads the current bronze snapshot, compacted files included)")
	}
	if deleted {
		fix = append(fix, "rows deleted from bronze are gone for good: stream.ignore_deletes skips a delete commit, "+
			"not the files it deleted, so a stream that must skip them needs a new stream.checkpoint too")
	}
	return fmt.Errorf("%w: %d files added by bronze versions %s: %s; a vacuum deleted them while the stream lagged behind "+
		"(keep jobs.vacuum.retain longer than the stream's lag). To recover: %s: %w",
		ErrBronzeFilesMissing, len(missing), strings.Join(versions, ", "), strings.Join(lines, "; "), strings.Join(fix, "; "), cause)
}
