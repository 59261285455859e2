package txlog

import (
	"context"
	"sync"
	"time"
)

// A Log keeps the newest snapshot it has made (its head): the snapshot of a commit it wrote,
// built from the snapshot the transaction read, the winners it had to read anyway and its own
// actions, or the result of a Refresh. Refresh starts from the head when it is newer than the
// snapshot it is given, so a writer never reads back the commit it has just written.

// startFrom returns the snapshot Refresh should start from: prev, or the Log's head when that is
// newer.
func (l *Log) startFrom(prev *Snapshot) *Snapshot {
	l.headMu.Lock()
	defer l.headMu.Unlock()
	if h := l.head; h != nil && h.version > prev.version {
		return h
	}
	return prev
}

// advance makes to, a snapshot made from from, the Log's head when it is newer, or when the
// table went back (restored from an older backup, or created again: to is older than from)
// and the head is no newer than from. A snapshot made from nothing (a load, or the commit that
// creates the table) always does: it is the table as it is, whatever the head was.
func (l *Log) advance(from, to *Snapshot) {
	l.headMu.Lock()
	defer l.headMu.Unlock()
	wentBack := from != nil && to.version < from.version && l.head != nil && l.head.version <= from.version
	if from == nil || l.head == nil || to.version > l.head.version || wentBack {
		l.head, l.headOwn = to, false
	}
}

// wroteHead reports whether prev is the Log's head and the snapshot of a commit the Log wrote:
// a table its writer alone commits to has no newer version then, as a rule.
func (l *Log) wroteHead(prev *Snapshot) bool {
	l.headMu.Lock()
	defer l.headMu.Unlock()
	return l.headOwn && l.head == prev
}

// committed builds the snapshot of version, which this transaction has just written as data:
// the read snapshot, then the winners checkWinners read (versions read+1 .. version-1, in
// order), then the commit itself, parsed from the bytes written so that it equals what a reader
// of the store gets. Its timestamp is the in-commit timestamp, or else the commit's own time
// (commitInfo.timestamp, as Spark's snapshot after a commit has it): a load of the version
// reads the commit file's modification time instead. Nil when it cannot be built (the commit
// stands; the next Refresh reads the log).
func (tx *Transaction) committed(version int64, data []byte, now time.Time, ict *int64) *Snapshot {
	actions, err := ParseActions(data)
	if err != nil {
		return nil
	}
	var st *replayState
	cpVersion := int64(-1)
	switch {
	case tx.read == nil && version == 0:
		st = newReplayState()
	case tx.read != nil && tx.read.version+int64(len(tx.winners))+1 == version:
		st, cpVersion = stateOf(tx.read), tx.read.cpVersion
		for _, w := range tx.winners {
			st.applyAll(w)
		}
	default:
		return nil
	}
	st.applyAll(actions)
	snap, err := st.snapshot(version, cpVersion)
	if err != nil || CheckRead(snap.protocol, snap.metadata) != nil {
		return nil
	}
	snap.timestamp = now.UTC().Truncate(time.Millisecond)
	if ict != nil {
		snap.timestamp = time.UnixMilli(*ict).UTC()
	}
	return snap
}

// snapshotScope is what WithSnapshotScope puts in a context: each Log's snapshot that is known
// to be the latest within the scope.
type snapshotScope struct {
	mu     sync.Mutex
	latest map[*Log]*Snapshot
}

type scopeKey struct{}

// WithSnapshotScope returns a context within which a Log asks the store for its latest version
// at most once: a Refresh (Table.Latest) after the first returns the snapshot the first found,
// or the snapshot of a commit made within the scope, without a request. A micro-batch opens
// one, so that its several looks at a table (the dedup look-up, the writers, the commit) cost
// one look; the next batch's scope asks the store again.
//
// Commits are unaffected: a commit on a snapshot that another writer has passed loses the
// put-if-absent race, reads the winners and checks them for conflicts as it always does, and
// a failed commit drops the Log's snapshot from the scope, so that a retry sees the winner.
func WithSnapshotScope(ctx context.Context) context.Context {
	return context.WithValue(ctx, scopeKey{}, &snapshotScope{latest: map[*Log]*Snapshot{}})
}

func scopeOf(ctx context.Context) *snapshotScope {
	sc, _ := ctx.Value(scopeKey{}).(*snapshotScope)
	return sc
}

// known returns the scope's latest snapshot of l when it is at least as new as base.
func (sc *snapshotScope) known(l *Log, base *Snapshot) *Snapshot {
	if sc == nil {
		return nil
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if s := sc.latest[l]; s != nil && s.version >= base.version {
		return s
	}
	return nil
}

// note records snap as l's latest within the scope (nil: forget it).
func (sc *snapshotScope) note(l *Log, snap *Snapshot) {
	if sc == nil {
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if snap == nil {
		delete(sc.latest, l)
		return
	}
	sc.latest[l] = snap
}

// landed records the snapshot of the version this transaction has just committed as the Log's
// head and as its latest within ctx's scope, and returns it (nil when it cannot be built).
func (tx *Transaction) landed(ctx context.Context, version int64, data []byte, now time.Time, ict *int64) *Snapshot {
	snap := tx.committed(version, data, now, ict)
	if snap == nil {
		scopeOf(ctx).note(tx.log, nil)
		return nil
	}
	tx.log.advance(tx.read, snap)
	tx.log.headMu.Lock()
	tx.log.headOwn = tx.log.head == snap
	tx.log.headMu.Unlock()
	scopeOf(ctx).note(tx.log, snap)
	return snap
}
