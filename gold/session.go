package gold

import (
	"fmt"
	"slices"
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
			return cmpInt64(a.Start, b.Start)
		}
		return cmpInt64(a.End, b.End)
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

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (w Window) String() string { return fmt.Sprintf("[%d,%d)", w.Start, w.End) }
