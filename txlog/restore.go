package txlog

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Restore is a RESTORE commit (Spark's RESTORE TABLE, delta-rs's restore): at Version the
// table took back the files of version To. To is -1 when the commit names its target by a time
// that no commit left in the log resolves, or names none.
type Restore struct {
	Version int64
	To      int64
	// Past is the version whose commit it undid: v, or the last commit after v that carries
	// a txn of one of the apps RestoredPast was given.
	Past int64
}

// Describe says what the restore did to the table named what.
func (r *Restore) Describe(what string) string {
	to := "a version its commit does not name"
	if r.To >= 0 {
		to = fmt.Sprintf("version %d", r.To)
	}
	return fmt.Sprintf("table %s was restored (RESTORE, version %d) to %s, which does not hold the rows of its "+
		"version %d, though its txn still says it does", what, r.Version, to, r.Past)
}

// UndoHint says how to undo the restore: restore the version before it, whose files are still
// there unless a vacuum removed them.
func (r *Restore) UndoHint() string {
	return fmt.Sprintf("undo the restore with RESTORE TABLE delta.`<table path>` TO VERSION AS OF %d (Spark) or "+
		"DeltaTable(<table path>).restore(%d) (delta-rs), then run again", r.Version-1, r.Version-1)
}

// OperationRestore is the commitInfo operation of Spark's and delta-rs's RESTORE.
const OperationRestore = "RESTORE"

// replaceOperations rewrite the whole table: what was in it before no longer counts. Our own
// full replace (table.Replace, a gold's refresh) writes the first.
var replaceOperations = []string{"CREATE OR REPLACE TABLE AS SELECT", "CREATE OR REPLACE TABLE", "REPLACE TABLE AS SELECT", "REPLACE TABLE"}

// RestoredPast reports the RESTORE commit after version v that took the table back to a
// version before v, as the latest version sees it: nil when the files of version v's commit
// still count. With apps, the last commit after v that carries a txn of one of them must still
// count too (a writer whose own commits follow the recorded one, as merge-late's follow the
// stream's in gold). A restore is a new, higher version that keeps every txn, so version and txn
// checks alone take a table whose rows went back for one that holds them.
//
// Walking back from the latest version, the last restore or full replace decides: a replace
// (a refresh) rebuilt the table, so nothing before it counts; a restore to a version at or
// after v hands the question to that version (undoing a restore is a restore to the version
// before it); a restore to a version before v, or to one it does not name, is the answer.
// Commits after v that log cleanup removed are not seen. The cost is one listing and a read
// of each commit after v, which callers pay once per run.
func (l *Log) RestoredPast(ctx context.Context, v int64, apps ...string) (*Restore, error) {
	versions, commits, err := l.commitsAfter(ctx, v, -1)
	if err != nil || len(commits) == 0 {
		return nil, err
	}
	type barrier struct {
		version int64
		replace bool
		info    *CommitInfo
	}
	var barriers []barrier
	past := v
	for i, actions := range commits {
		for _, a := range actions {
			if a.Txn != nil && slices.Contains(apps, a.Txn.AppID) {
				past = versions[i]
			}
			if ci := a.CommitInfo; ci != nil {
				switch {
				case ci.Operation == OperationRestore:
					barriers = append(barriers, barrier{version: versions[i], info: ci})
				case slices.Contains(replaceOperations, ci.Operation):
					barriers = append(barriers, barrier{version: versions[i], replace: true})
				}
			}
		}
	}
	latest := versions[len(versions)-1]
	// undid walks back from the latest version: does the table still hold the commit of
	// version since?
	undid := func(since int64) (*Restore, error) {
		upTo := latest
		for i := len(barriers) - 1; i >= 0; i-- {
			b := barriers[i]
			if b.version > upTo || b.version <= since {
				continue
			}
			if b.replace {
				return nil, nil
			}
			to, err := l.restoreTarget(ctx, b.version, b.info)
			if err != nil {
				return nil, fmt.Errorf("txlog: the restore at version %d: %w", b.version, err)
			}
			if to < since {
				return &Restore{Version: b.version, To: to, Past: since}, nil
			}
			upTo = to
		}
		return nil, nil
	}
	r, err := undid(v)
	if r != nil || err != nil || past == v {
		return r, err
	}
	return undid(past)
}

// restoreTarget is the version the RESTORE commit at version r took the table back to: its
// "version" parameter (delta-rs writes it as a string, Spark as a number), else the version its
// time names (delta-rs's "datetime" in ms, Spark's "timestamp"), as time travel resolves it; -1
// when it names neither in a form this reads, or the time is before every commit left in the log.
func (l *Log) restoreTarget(ctx context.Context, r int64, ci *CommitInfo) (int64, error) {
	param := func(name string) (string, bool) {
		raw, ok := ci.OperationParameters[name]
		if !ok || string(raw) == "null" {
			return "", false
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s, s != ""
		}
		return string(raw), true
	}
	if s, ok := param("version"); ok {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
			return n, nil
		}
	}
	var at time.Time
	if s, ok := param("datetime"); ok {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return -1, nil
		}
		at = time.UnixMilli(ms)
	} else if s, ok := param("timestamp"); ok {
		t, zoned, err := parseRestoreTime(s)
		if err != nil {
			return -1, nil
		}
		if !zoned {
			return l.restoreTargetByFiles(ctx, r, t)
		}
		at = t
	} else {
		return -1, nil
	}
	versions, times, _, err := l.commitTimes(ctx)
	if err != nil {
		return 0, err
	}
	i := sort.Search(len(times), func(i int) bool { return times[i] > at.UnixMilli() }) - 1
	if i < 0 {
		return -1, nil
	}
	return versions[i], nil
}

// maxZoneOffset bounds how far from UTC any time zone's wall clock is (UTC-12 to UTC+14).
const maxZoneOffset = 14 * time.Hour

// restoreTargetByFiles finds the target of the RESTORE commit at version r whose timestamp
// parameter has no zone. Spark records java.sql.Timestamp.toString: the wall clock of the
// driver JVM's default zone, which the log does not record. Taken as UTC, a restore by a
// Spark in Europe/Berlin resolves an hour late, past the version it took the table back to,
// and the jobs went on over a table that had lost batches. The candidates are the versions the
// time names in some zone; the target is the one whose files the restore brought back (the
// latest, when several hold the same files: they hold the same rows). -1 when none does.
func (l *Log) restoreTargetByFiles(ctx context.Context, r int64, wall time.Time) (int64, error) {
	versions, times, _, err := l.commitTimes(ctx)
	if err != nil {
		return 0, err
	}
	resolve := func(at time.Time) int {
		i := sort.Search(len(times), func(i int) bool { return times[i] > at.UnixMilli() }) - 1
		for i >= 0 && versions[i] >= r {
			i--
		}
		return i
	}
	lo, hi := resolve(wall.Add(-maxZoneOffset)), resolve(wall.Add(maxZoneOffset))
	if hi < 0 {
		return -1, nil
	}
	if lo == hi {
		return versions[hi], nil
	}
	lo = max(lo, 0)
	restored, err := l.SnapshotAt(ctx, r)
	if err != nil {
		return 0, err
	}
	want := map[string]bool{}
	for _, a := range restored.Files() {
		want[restoreFileKey(a.Path, a.DeletionVector)] = true
	}
	start, err := l.SnapshotAt(ctx, versions[lo])
	if err != nil {
		return 0, err
	}
	have := map[string]bool{}
	for _, a := range start.Files() {
		have[restoreFileKey(a.Path, a.DeletionVector)] = true
	}
	match := int64(-1)
	if maps.Equal(have, want) {
		match = versions[lo]
	}
	between, commits, err := l.commitsAfter(ctx, versions[lo], versions[hi])
	if err != nil {
		return 0, err
	}
	for i, actions := range commits {
		for _, a := range actions {
			if a.Remove != nil {
				delete(have, restoreFileKey(a.Remove.Path, a.Remove.DeletionVector))
			}
			if a.Add != nil {
				have[restoreFileKey(a.Add.Path, a.Add.DeletionVector)] = true
			}
		}
		if maps.Equal(have, want) {
			match = between[i]
		}
	}
	return match, nil
}

// commitsAfter reads the commits after version from, up to to (-1: the latest), in version
// order: their versions and their actions.
func (l *Log) commitsAfter(ctx context.Context, from, to int64) ([]int64, [][]Action, error) {
	files, err := l.list(ctx, CommitKey(from))
	if err != nil {
		return nil, nil, err
	}
	var commits []logFile
	for _, f := range files {
		if f.kind == kindCommit && f.version > from && (to < 0 || f.version <= to) {
			commits = append(commits, f)
		}
	}
	sort.Slice(commits, func(i, j int) bool { return commits[i].version < commits[j].version })
	datas, err := l.fetchFiles(ctx, commits)
	if err != nil {
		return nil, nil, err
	}
	versions, out := make([]int64, len(commits)), make([][]Action, len(commits))
	for i, data := range datas {
		if out[i], err = ParseActions(data); err != nil {
			return nil, nil, fmt.Errorf("txlog: %s: %w", commits[i].key, err)
		}
		versions[i] = commits[i].version
	}
	return versions, out, nil
}

// restoreFileKey is a live file's identity: its path and deletion vector, as the protocol
// keys the reconciliation of add and remove actions.
func restoreFileKey(path string, dv *DeletionVector) string {
	return path + "\x00" + dv.UniqueID()
}

// parseRestoreTime reads the timestamp Spark records for RESTORE ... TO TIMESTAMP AS OF: the
// JVM's wall clock (java.sql.Timestamp.toString), a date or a date and time; zoned says whether
// it names its zone.
func parseRestoreTime(s string) (t time.Time, zoned bool, err error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, true, nil
	}
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, false, nil
		}
	}
	return time.Time{}, false, fmt.Errorf("txlog: restore timestamp %q is not a date or a time", s)
}
