package txlog

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/medallion-lake/medallion/objstore"
)

// Refresh returns the latest snapshot by replaying only the commits after prev (nil: a full
// load). A long-running reader (the stream, a writer between batches) pays for the new commits
// instead of the whole log, whatever the table's age: it asks for the commit files after prev's
// version one by one (commits are created with put-if-absent, so they appear in order), which
// costs a request per new commit plus one, where a listing would read every name of
// _delta_log on a file system.
//
// A table restored from an older backup or replaced since prev no longer holds prev's commit:
// Refresh then loads the table afresh, and the snapshot it returns may be older than prev,
// which callers that keep snapshots must take as the table's state (ErrTableBehind checks
// compare against it). A gap right after the commits found ends the refresh there; a full load
// reports it (ErrNotContiguous).
//
// It starts from the Log's head instead of prev when that is newer (the snapshot of a commit
// this Log wrote: head.go), and within a WithSnapshotScope scope that already knows the
// latest snapshot it returns that without a request.
func (l *Log) Refresh(ctx context.Context, prev *Snapshot) (*Snapshot, error) {
	if prev == nil {
		snap, err := l.Snapshot(ctx)
		if err == nil {
			l.advance(nil, snap)
			scopeOf(ctx).note(l, snap)
		}
		return snap, err
	}
	prev = l.startFrom(prev)
	sc := scopeOf(ctx)
	if s := sc.known(l, prev); s != nil {
		return s, nil
	}
	snap, err := l.refresh(ctx, prev)
	if err != nil {
		return nil, err
	}
	l.advance(prev, snap)
	sc.note(l, snap)
	return snap, nil
}

// refresh is Refresh from prev, asking the store.
func (l *Log) refresh(ctx context.Context, prev *Snapshot) (*Snapshot, error) {
	// After its own commit a writer expects no newer one: whether prev's version is still there
	// (a table restored behind it) is asked beside the next version, one round trip where the
	// two took two on every batch's path (the stream's six tables: 423 HEADs at 10M/1k). Should
	// the next version exist after all, that answer is left unread: one request spent.
	var early chan goneAnswer
	if l.wroteHead(prev) {
		early = make(chan goneAnswer, 1)
		go func() {
			gone, err := l.versionGone(ctx, prev)
			early <- goneAnswer{gone, err}
		}()
	}
	var commits []logFile
	for v := prev.version + 1; ; v++ {
		key := CommitKey(v)
		info, err := l.bucket.Stat(ctx, key)
		if errors.Is(err, objstore.ErrNotFound) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("txlog: stat %s: %w", key, err)
		}
		commits = append(commits, logFile{key: key, kind: kindCommit, version: v, size: info.Size, modMs: info.ModTime.UnixMilli()})
	}
	if len(commits) == 0 {
		var a goneAnswer
		if early != nil {
			a = <-early
		} else {
			a.gone, a.err = l.versionGone(ctx, prev)
		}
		gone, err := a.gone, a.err
		if err != nil {
			return nil, err
		}
		if gone {
			l.logger.Warn("txlog: the table lost the version a reader knew (restored from a backup or replaced); loading it afresh",
				"version", prev.version)
			return l.load(ctx, -1)
		}
		return prev, nil
	}
	datas, err := l.fetchFiles(ctx, commits)
	if err != nil {
		return nil, err
	}
	st := stateOf(prev)
	var last []Action
	for i, data := range datas {
		if last, err = ParseActions(data); err != nil {
			return nil, fmt.Errorf("txlog: %s: %w", commits[i].key, err)
		}
		st.applyAll(last)
	}
	seg := segment{version: commits[len(commits)-1].version, cpVersion: prev.cpVersion, commits: commits, last: &commits[len(commits)-1]}
	snap, err := st.snapshot(seg.version, seg.cpVersion)
	if err != nil {
		return nil, err
	}
	if err := CheckRead(snap.protocol, snap.metadata); err != nil {
		return nil, err
	}
	if snap.timestamp, err = l.commitTimestamp(ctx, snap, seg, last); err != nil {
		return nil, err
	}
	return snap, nil
}

// goneAnswer is versionGone's answer, asked ahead.
type goneAnswer struct {
	gone bool
	err  error
}

// stateOf rebuilds the replay state a snapshot was made from; the snapshot stays untouched.
func stateOf(s *Snapshot) *replayState {
	p, m := s.protocol, s.metadata
	st := &replayState{
		protocol:   &p,
		metadata:   &m,
		files:      make(map[fileKey]*Add, len(s.files)),
		tombstones: make(map[fileKey]*Remove, len(s.tombstones)),
		txns:       maps.Clone(s.txnActions),
		domains:    maps.Clone(s.domains),
	}
	for _, a := range s.files {
		st.files[addKey(a)] = a
	}
	for _, r := range s.tombstones {
		st.tombstones[removeKey(r)] = r
	}
	return st
}

// versionGone reports whether the log no longer has prev's version: neither its commit nor,
// when prev was loaded from a checkpoint of that very version, that checkpoint. Log cleanup
// never deletes the latest version, so a missing one means the table went back.
func (l *Log) versionGone(ctx context.Context, prev *Snapshot) (bool, error) {
	keys := []string{CommitKey(prev.version)}
	if prev.cpVersion == prev.version {
		keys = append(keys, CheckpointKey(prev.version))
	}
	for _, key := range keys {
		_, err := l.bucket.Stat(ctx, key)
		if err == nil {
			return false, nil
		}
		if !errors.Is(err, objstore.ErrNotFound) {
			return false, fmt.Errorf("txlog: stat %s: %w", key, err)
		}
	}
	return true, nil
}
