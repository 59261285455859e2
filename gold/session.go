package gold

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
)

// SessionSpec is session_window(col, gap) with a static gap in microseconds. A per-row
// (dynamic) gap can be supplied through Input.SessionGap; Gap is then the default for rows
// whose gap column is absent.
type SessionSpec struct {
	Gap int64
}

// NewSessionSpec validates a static gap. Spark silently filters every row when a literal gap is
// <= 0; a pipeline configured that way would emit nothing forever, so we reject it instead.
func NewSessionSpec(gap int64) (SessionSpec, error) {
	if gap <= 0 {
		return SessionSpec{}, valueOutOfRange("gap_duration", gap)
	}
	return SessionSpec{Gap: gap}, nil
}

// ProtoSession is the session a single event starts: [t, t+gap). ok is false when the session
// is empty (gap <= 0 or null), in which case Spark filters the row silently (not as late).
func ProtoSession(t, gap int64) (w Window, ok bool) {
	if gap <= 0 {
		return Window{}, false
	}
	return Window{Start: t, End: t + gap}, true
}

// MergeSessions sorts ws by start and merges, in place, every session whose start is <= the
// current end (touching sessions merge, Spark's MergingSessionsIterator rule). It returns the
// merged prefix of ws. With the sessions sorted by start this is the same as Spark's inclusive
// overlap test for pulling stored sessions into a merge (s1.start in [s2.start, s2.end]).
func MergeSessions(ws []Window) []Window {
	if len(ws) < 2 {
		return ws
	}
	slices.SortFunc(ws, func(a, b Window) int {
		if a.Start != b.Start {
			return cmp.Compare(a.Start, b.Start)
		}
		return cmp.Compare(a.End, b.End)
	})
	out := ws[:1]
	for _, w := range ws[1:] {
		cur := &out[len(out)-1]
		if w.Start <= cur.End {
			cur.End = max(cur.End, w.End)
			continue
		}
		out = append(out, w)
	}
	return out
}

func (w Window) String() string { return fmt.Sprintf("[%d,%d)", w.Start, w.End) }

// Settled sessions and corrections.
//
// Spark cannot extend a session it has emitted: a row that is on time by its rule (t + gap >
// the late watermark) but whose proto-session touches a session already emitted starts a
// second session that overlaps the first, and both reach gold. A batch sessionization puts
// them in one. So, beyond Spark, an aggregation of session windows in Append mode with a
// static gap remembers per key the settled extents: the union, merged by the session rule, of
// the sessions it has emitted and of the proto-sessions of the rows it quarantined (late and
// corrections), that is of every row of the key the stream no longer holds. An on-time input
// row whose proto-session touches a settled extent of its key (known before the batch) is a
// correction: it is reported in Result.LateRows and Result.NumCorrectionRows, not merged into
// state, so the stream emits no session overlapping one in gold; merge-late re-sessionizes
// that key over silver and replaces its gold sessions. The rows of the key the stream still
// holds and the rows gold and the quarantine hold are thus disjoint: a correction that
// bridges into a session still in state makes merge-late wait until the stream has emitted it.
//
// The memory is bounded: an extent is forgotten once end + gap <= the eviction watermark,
// which is the next batch's late watermark, because an on-time row then has t > end and
// cannot touch it. A per-row (dynamic) gap has no such bound; those aggregations keep
// Spark's behaviour, as does Complete mode, which evicts and settles nothing.

// tracksSettled says whether the aggregation keeps settled extents and routes corrections.
func (a *Aggregation) tracksSettled() bool {
	return a.cfg.Session != nil && a.cfg.Session.Gap > 0 && a.cfg.Mode == Append
}

// touchesSettled says whether w merges with (overlaps or touches) a settled extent of key.
func (a *Aggregation) touchesSettled(key int32, w Window) bool {
	if int(key) >= len(a.settled) {
		return false
	}
	for _, e := range a.settled[key] {
		if w.Start <= e.End && e.Start <= w.End {
			return true
		}
	}
	return false
}

// settle adds w to key's settled extents, merging it with the extents it touches. A key with
// extents holds one reference, so that its id stays valid while they are kept.
func (a *Aggregation) settle(key int32, w Window) {
	if n := len(a.keyLocs); len(a.settled) < n {
		a.settled = append(a.settled, make([][]Window, n-len(a.settled))...)
	}
	es := a.settled[key]
	switch {
	case len(es) == 0:
		a.keyRefs[key]++
		a.settledKeys = append(a.settledKeys, key)
		es = append(es, w)
	case es[len(es)-1].End < w.Start: // the common case: after everything settled before
		es = append(es, w)
	default:
		es = MergeSessions(append(es, w))
	}
	a.settled[key] = es
	a.settledMinEnd = min(a.settledMinEnd, w.End)
}

// settlePending settles the windows of this batch's late and correction rows, after the
// batch's rows have been routed (a row is a correction only for what earlier batches settled:
// rows of one batch that touch each other reach merge-late together).
func (a *Aggregation) settlePending() {
	for _, it := range a.pendingSettle {
		a.settle(it.key, it.w)
	}
	a.pendingSettle = a.pendingSettle[:0]
}

// evictSettled forgets the extents no on-time row of a later batch can touch: end + gap <=
// evictUs. Only batches whose watermark passed the least such end pay for the scan.
func (a *Aggregation) evictSettled(evictUs int64) {
	gap := a.cfg.Session.Gap
	if len(a.settledKeys) == 0 || evictUs < a.settledMinEnd+gap {
		return
	}
	a.settledMinEnd = math.MaxInt64
	keys := a.settledKeys[:0]
	for _, key := range a.settledKeys {
		es := a.settled[key]
		kept := es[:0]
		for _, e := range es {
			if e.End+gap > evictUs {
				kept = append(kept, e)
				a.settledMinEnd = min(a.settledMinEnd, e.End)
			}
		}
		a.settled[key] = kept
		if len(kept) > 0 {
			keys = append(keys, key)
			continue
		}
		a.releaseKey(key)
	}
	a.settledKeys = keys
}

// NumSettled is the number of settled extents kept (for tests and state metrics).
func (a *Aggregation) NumSettled() int {
	n := 0
	for _, k := range a.settledKeys {
		n += len(a.settled[k])
	}
	return n
}

// settledTag starts the settled section that follows the groups in a snapshot of an
// aggregation that tracks settled extents. Snapshots written before the section existed end
// after the groups and restore with no extents (corrections are then only caught for
// sessions settled after the restart).
const settledTag = 's'

// appendSettled appends the settled section: the tag, the number of keys, then per key in
// byte order its key, its number of extents and each extent's start and length.
func (a *Aggregation) appendSettled(dst []byte) []byte {
	keys := slices.Clone(a.settledKeys)
	slices.SortFunc(keys, func(x, y int32) int { return strings.Compare(a.key(x), a.key(y)) })
	dst = append(dst, settledTag)
	dst = binary.AppendUvarint(dst, uint64(len(keys)))
	for _, k := range keys {
		kb := a.key(k)
		dst = binary.AppendUvarint(dst, uint64(len(kb)))
		dst = append(dst, kb...)
		es := a.settled[k]
		dst = binary.AppendUvarint(dst, uint64(len(es)))
		for _, e := range es {
			dst = binary.AppendVarint(dst, e.Start)
			dst = binary.AppendVarint(dst, e.End-e.Start)
		}
	}
	return dst
}

// restoreSettled reads a settled section (after its tag) and returns the bytes after it.
func (a *Aggregation) restoreSettled(p []byte) ([]byte, error) {
	n, w := binary.Uvarint(p)
	if w <= 0 || n > uint64(len(p)) {
		return nil, fmt.Errorf("%w: settled key count", ErrBadState)
	}
	p = p[w:]
	for i := uint64(0); i < n; i++ {
		key, rest, ok := sizedBytes(p)
		if !ok {
			return nil, fmt.Errorf("%w: settled key %d", ErrBadState, i)
		}
		p = rest
		m, w := binary.Uvarint(p)
		if w <= 0 || m == 0 || m > uint64(len(p)) {
			return nil, fmt.Errorf("%w: settled key %d extent count", ErrBadState, i)
		}
		p = p[w:]
		id, _ := a.internKey(key)
		if int(id) < len(a.settled) && len(a.settled[id]) > 0 {
			return nil, fmt.Errorf("%w: settled key %d repeats a key", ErrBadState, i)
		}
		for j := uint64(0); j < m; j++ {
			var e Window
			var size int64
			if e.Start, w = binary.Varint(p); w <= 0 {
				return nil, fmt.Errorf("%w: settled key %d extent %d start", ErrBadState, i, j)
			}
			p = p[w:]
			if size, w = binary.Varint(p); w <= 0 || size <= 0 {
				return nil, fmt.Errorf("%w: settled key %d extent %d length", ErrBadState, i, j)
			}
			p = p[w:]
			if e.Start > math.MaxInt64-size {
				return nil, fmt.Errorf("%w: settled key %d extent %d ends past the largest time", ErrBadState, i, j)
			}
			e.End = e.Start + size
			a.settle(id, e)
		}
	}
	return p, nil
}
