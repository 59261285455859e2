package txlog

import (
	"context"
	"time"
)

// CommitTimestamps returns the commit time of every version whose commit file is still in the
// log, as time travel and Spark's change data feed see it: the commit file's modification
// time, monotonized (a time not after the previous one becomes previous + 1 ms), or the
// in-commit timestamp from the version that enabled it on. Readers of the change feed stamp
// each change row's _commit_timestamp with it.
func (l *Log) CommitTimestamps(ctx context.Context) (map[int64]time.Time, error) {
	versions, times, _, err := l.commitTimes(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]time.Time, len(versions))
	for i, v := range versions {
		out[v] = time.UnixMilli(times[i]).UTC()
	}
	return out, nil
}
