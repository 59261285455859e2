package txlog

import (
	"context"
	"fmt"
	"maps"
)

// Refresh returns the latest snapshot by replaying only the commits after prev (nil: a full
// load). A long-running reader (the stream, a committer that lost a race) pays for the new
// commits instead of the whole log. When the commits after prev are not all there (cleaned
// up, or a gap) it falls back to a full load.
func (l *Log) Refresh(ctx context.Context, prev *Snapshot) (*Snapshot, error) {
	if prev == nil {
		return l.Snapshot(ctx)
	}
	files, err := l.list(ctx, fmt.Sprintf("%s%020d.json", LogDir, prev.version))
	if err != nil {
		return nil, err
	}
	var commits []logFile
	for _, f := range files {
		if f.kind != kindCommit {
			continue
		}
		if f.version != prev.version+1+int64(len(commits)) {
			return l.load(ctx, -1)
		}
		commits = append(commits, f)
	}
	if len(commits) == 0 {
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
