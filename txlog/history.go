package txlog

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// CommitEntry is one commit in the table history.
type CommitEntry struct {
	Version    int64
	Timestamp  time.Time   // the commit time used for time travel
	CommitInfo *CommitInfo // nil when the commit has none
}

// commitTimes lists the commit files and computes each version's commit time, monotonized as
// Spark does (a time not after the previous one becomes previous + 1 ms). In-commit timestamps
// replace file times from their enablement version on. It also returns the earliest version a
// snapshot can be built at.
func (l *Log) commitTimes(ctx context.Context) (versions []int64, times []int64, earliest int64, err error) {
	files, err := l.list(ctx, "")
	if err != nil {
		return nil, nil, 0, err
	}
	seg, err := buildSegment(files, -1, nil)
	if err != nil {
		return nil, nil, 0, err
	}
	earliest = seg.cpVersion
	cps := map[int64]bool{}
	var commits []logFile
	for _, f := range files {
		switch f.kind {
		case kindCommit:
			commits = append(commits, f)
		case kindCheckpointClassic, kindCheckpointV2:
			cps[f.version] = true
		}
	}
	sort.Slice(commits, func(i, j int) bool { return commits[i].version < commits[j].version })
	if len(commits) > 0 && commits[0].version == 0 {
		earliest = 0
	} else {
		for v := range cps {
			if v < earliest || earliest < 0 {
				earliest = v
			}
		}
	}
	latest, err := l.load(ctx, -1)
	if err != nil {
		return nil, nil, 0, err
	}
	ictFrom := int64(-1)
	if latest.metadata.Configuration["delta.enableInCommitTimestamps"] == "true" {
		ictFrom = 0
		for v := int64(0); v <= latest.version; v++ {
			if ictEnabledAt(latest.metadata, v) {
				ictFrom = v
				break
			}
		}
	}
	var ictKeys []string
	var ictIdx []int
	for _, c := range commits {
		if c.version < earliest {
			continue
		}
		versions = append(versions, c.version)
		times = append(times, c.modMs)
		if ictFrom >= 0 && c.version >= ictFrom {
			ictKeys = append(ictKeys, c.key)
			ictIdx = append(ictIdx, len(times)-1)
		}
	}
	if len(ictKeys) > 0 {
		datas, err := l.fetch(ctx, ictKeys)
		if err != nil {
			return nil, nil, 0, err
		}
		for i, data := range datas {
			actions, err := ParseActions(data)
			if err != nil {
				return nil, nil, 0, fmt.Errorf("txlog: %s: %w", ictKeys[i], err)
			}
			for _, a := range actions {
				if a.CommitInfo != nil && a.CommitInfo.InCommitTimestamp != nil {
					times[ictIdx[i]] = *a.CommitInfo.InCommitTimestamp
				}
			}
		}
	}
	for i := 1; i < len(times); i++ {
		if times[i] <= times[i-1] {
			times[i] = times[i-1] + 1
		}
	}
	return versions, times, earliest, nil
}

// SnapshotAsOf loads the latest version whose commit time is <= t. A time before the earliest
// reconstructable commit or after the latest commit is ErrVersionNotFound (as Spark; delta-rs
// would return version 0 for an early time).
func (l *Log) SnapshotAsOf(ctx context.Context, t time.Time) (*Snapshot, error) {
	versions, times, _, err := l.commitTimes(ctx)
	if err != nil {
		return nil, err
	}
	if len(versions) == 0 {
		return nil, fmt.Errorf("%w: no commit files to time travel over", ErrVersionNotFound)
	}
	ms := t.UnixMilli()
	last := len(times) - 1
	switch {
	case ms < times[0]:
		return nil, fmt.Errorf("%w: timestamp %s is before the earliest available commit (version %d at %s)",
			ErrVersionNotFound, t.UTC().Format(time.RFC3339Nano), versions[0], time.UnixMilli(times[0]).UTC().Format(time.RFC3339Nano))
	case ms > times[last]:
		return nil, fmt.Errorf("%w: timestamp %s is after the latest commit (version %d at %s)",
			ErrVersionNotFound, t.UTC().Format(time.RFC3339Nano), versions[last], time.UnixMilli(times[last]).UTC().Format(time.RFC3339Nano))
	}
	i := sort.Search(len(times), func(i int) bool { return times[i] > ms }) - 1
	return l.SnapshotAt(ctx, versions[i])
}

// History returns up to limit commits (all when limit <= 0), newest first.
func (l *Log) History(ctx context.Context, limit int) ([]CommitEntry, error) {
	versions, times, _, err := l.commitTimes(ctx)
	if err != nil {
		return nil, err
	}
	n := len(versions)
	if limit > 0 && limit < n {
		n = limit
	}
	keys := make([]string, n)
	for i := 0; i < n; i++ {
		keys[i] = CommitKey(versions[len(versions)-1-i])
	}
	datas, err := l.fetch(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := make([]CommitEntry, n)
	for i, data := range datas {
		j := len(versions) - 1 - i
		out[i] = CommitEntry{Version: versions[j], Timestamp: time.UnixMilli(times[j]).UTC()}
		actions, err := ParseActions(data)
		if err != nil {
			return nil, fmt.Errorf("txlog: %s: %w", keys[i], err)
		}
		for _, a := range actions {
			if a.CommitInfo != nil {
				out[i].CommitInfo = a.CommitInfo
				break
			}
		}
	}
	return out, nil
}
