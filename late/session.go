package late

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/table"
)

// sessRow is one source row of a session replay.
type sessRow struct {
	t int64
	s *source
	i int
}

// sessKey is one key's rows and the range [lo, hi) of session starts replay replaces for it.
type sessKey struct {
	rows   []sessRow
	lo, hi int64
	// open is the start of the key's first session the stream still holds (hasOpen).
	open    int64
	hasOpen bool
}

// sessionResult is what resessionize replaces.
type sessionResult struct {
	inputRows int64
	from, to  time.Time // session starts replaced, inclusive
	// deferred: a late row lies in a session still open in the stream; no txn is committed.
	deferred bool
}

// resessionScope is the range [from, to) (µs) a re-sessionization covers, only the keys of only
// when set, committed with txn when set.
type resessionScope struct {
	from, to int64
	only     map[string]int64
	// late lists the event times of the late rows being merged, per encoded group key (not
	// sorted); nil for a replay, which merges none.
	late map[string][]int64
	txn  *table.AppTxn
}

// sessionKeys reads the source rows of each key around the range, widening the read until
// every key's sessions that touch the range lie inside it, and finds each key's widened range.
func sessionKeys(ctx context.Context, a *agg, src *replaySource, sc resessionScope) (map[string]*sessKey, error) {
	from, to, only, gap := sc.from, sc.to, sc.only, a.session.Gap
	margin := max(4*gap, (to-from)/2)
	var keys map[string]*sessKey
	for {
		readLo, readHi := from-margin, to+margin
		keys = map[string]*sessKey{}
		var kb []byte
		err := src.read(ctx, a, readLo, readHi, func(s *source, i int) error {
			kb = kb[:0]
			for _, c := range s.keys {
				kb = pq.AppendKeyPart(kb, c, i)
			}
			if _, ok := only[string(kb)]; only != nil && !ok {
				return nil
			}
			k := keys[string(kb)]
			if k == nil {
				k = &sessKey{}
				keys[string(kb)] = k
			}
			k.rows = append(k.rows, sessRow{t: s.ev.Int64[i], s: s, i: i})
			return nil
		})
		if err != nil {
			return nil, err
		}
		whole := true
		for _, k := range keys {
			slices.SortStableFunc(k.rows, func(x, y sessRow) int { return cmp.Compare(x.t, y.t) })
			first, _ := slices.BinarySearchFunc(k.rows, from, func(x sessRow, t int64) int { return cmp.Compare(x.t, t) })
			k.lo, k.hi = from, to
			for j := first - 1; j >= 0 && k.rows[j].t >= k.lo-gap; j-- {
				k.lo = k.rows[j].t
			}
			for j := first; j < len(k.rows); j++ {
				if t := k.rows[j].t; t >= k.hi {
					if t >= k.hi+gap {
						break
					}
					k.hi = t + 1
				}
			}
			whole = whole && k.lo-gap > readLo && k.hi+gap < readHi
		}
		if whole {
			break
		}
		margin *= 4
	}
	return keys, nil
}

// resessionize is the rewrite that replaces the sessions overlapping [from, to) of the keys
// only lists (encoded group key -> the latest late row's time; nil: every key) with the batch
// sessionization of the source, in one commit carrying txn when set. A late row that falls
// into a session the stream still holds cannot be placed yet (the stream will emit that
// session without it): the commit then goes without txn, so that the next merge-late sees the
// row again.
func resessionize(ctx context.Context, rw *rewriter, src *replaySource, st streamState, sc resessionScope) (*rewrite, sessionResult, error) {
	var res sessionResult
	a, from, to, only, txn := rw.a, sc.from, sc.to, sc.only, sc.txn
	gap := a.session.Gap
	keys, err := sessionKeys(ctx, a, src, sc)
	if err != nil {
		return nil, res, err
	}
	wm := st.evictMs * 1000
	c, err := newCollector(a)
	if err != nil {
		return nil, res, err
	}
	lo, hi := from, to
	// The late rows each new session absorbs in this merge, by gold group key.
	absorbed := map[string]int64{}
	for _, ts := range sc.late {
		slices.Sort(ts)
	}
	var gk []byte
	for ks, k := range keys {
		lo, hi = min(lo, k.lo), max(hi, k.hi)
		rows := k.rows
		for i := 0; i < len(rows); {
			if rows[i].t < k.lo || rows[i].t >= k.hi {
				i++
				continue
			}
			j, end := i, rows[i].t+gap
			for j+1 < len(rows) && rows[j+1].t < k.hi && rows[j+1].t <= end {
				j++
				end = max(end, rows[j].t+gap)
			}
			res.inputRows += int64(j + 1 - i)
			if end > wm {
				k.open, k.hasOpen = rows[i].t, true
				break
			}
			w := gold.Window{Start: rows[i].t, End: end}
			if ts := sc.late[ks]; len(ts) > 0 {
				a, _ := slices.BinarySearch(ts, w.Start)
				b, _ := slices.BinarySearch(ts, w.End)
				if b > a {
					gk = groupKey(gk[:0], w.Start, w.End, rows[i].s.keys, rows[i].i)
					absorbed[string(gk)] = int64(b - a)
				}
			}
			for _, sr := range rows[i : j+1] {
				if err := c.add(sr.s, sr.i, w); err != nil {
					return nil, res, err
				}
			}
			i = j + 1
		}
	}
	groups, err := c.groups()
	if err != nil {
		return nil, res, err
	}
	s, e := time.UnixMicro(lo).UTC(), time.UnixMicro(hi-1).UTC()
	res.from, res.to = s, e
	var kb []byte
	drop := func(start, _ int64, cols []*pq.Column, i int) bool {
		kb = kb[:0]
		for _, c := range cols {
			kb = pq.AppendKeyPart(kb, c, i)
		}
		if _, ok := only[string(kb)]; only != nil && !ok {
			return false
		}
		k := keys[string(kb)]
		if k == nil { // no source row near the range: only a session inside it can be wrong
			return start >= from && start < to
		}
		return start >= k.lo && start < k.hi && (!k.hasOpen || start < k.open)
	}
	for key, last := range only {
		if k := keys[key]; k != nil && k.hasOpen && last >= k.open {
			res.deferred, txn = true, nil
		}
	}
	if res.deferred {
		// Without txn the next merge-late reads these late rows again and counts them then.
		clear(absorbed)
	}
	prune := sqlexpr.And(sqlexpr.Ge(gold.ColWindow+".start", s), sqlexpr.Le(gold.ColWindow+".start", e))
	rep, err := replace(rw, replacement{prune: prune, drop: drop, groups: groups, txn: txn, sessions: true, absorbed: absorbed,
		desc: fmt.Sprintf("session_window.start >= '%s' AND session_window.start <= '%s' (per key: its widened range, up to its first open session)",
			s.Format(time.RFC3339Nano), e.Format(time.RFC3339Nano))})
	return rep, res, err
}
