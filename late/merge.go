package late

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// AppIDPrefix starts the txn appId merge-late records in gold ("merge-late:" + query id),
// whose version is the last quarantine version merged.
const AppIDPrefix = "merge-late:"

// MergeReport sums up one merge-late run.
type MergeReport struct {
	QueryID string `json:"queryId,omitempty"`
	// LateRows is the number of quarantined rows folded into gold by this run.
	LateRows int64             `json:"lateRows"`
	Gold     []MergeGoldReport `json:"gold"`
}

// MergeGoldReport is one aggregation's merge.
type MergeGoldReport struct {
	Name string `json:"name"`
	// FromVersion (exclusive) and ToVersion (inclusive) are the quarantine versions merged.
	FromVersion int64 `json:"fromQuarantineVersion"`
	ToVersion   int64 `json:"toQuarantineVersion"`
	// UpToDate: gold already held every quarantine version (a rerun changes nothing).
	UpToDate bool  `json:"upToDate"`
	LateRows int64 `json:"lateRows"`
	// Pairs counts the (row, window) pairs applied: a row late for several sliding windows
	// counts once per window.
	Pairs int64 `json:"pairs"`
	// InputRows is the stream's input over the batches whose late rows were merged (from its
	// progress files, when still kept): the base of the late-row alert.
	InputRows int64 `json:"inputRows,omitempty"`
	// Gold is the commit, nil when there was nothing to commit.
	Gold *writeStats `json:"commit,omitempty"`
	Note string      `json:"note,omitempty"`
}

// MergeLate folds each aggregation's new quarantine rows into its gold table.
func MergeLate(ctx context.Context, opts Options) (MergeReport, error) {
	opts.defaults()
	var rep MergeReport
	var err error
	rep.QueryID, err = opts.eachGold(ctx, "merge", func(g *spec.Aggregation, st streamState) error {
		gr, err := mergeOne(ctx, &opts, g, st)
		if err != nil {
			return err
		}
		rep.Gold = append(rep.Gold, gr)
		rep.LateRows += gr.LateRows
		opts.Logger.Info("late: merge-late", "gold", g.Name, "lateRows", gr.LateRows, "pairs", gr.Pairs,
			"fromVersion", gr.FromVersion, "toVersion", gr.ToVersion, "commit", gr.Gold, "note", gr.Note)
		return nil
	})
	return rep, err
}

// upsert combines each group with its gold row (null-safe on the keys) or inserts it.
func upsert(rw *rewriter, groups []*group, txn *table.AppTxn) (*rewrite, error) {
	a := rw.a
	index := newGroupIndex(groups)
	matched := make(map[*group]bool, len(groups))
	lo, hi := int64(0), int64(0)
	for k, g := range groups {
		if k == 0 || g.win.Start < lo {
			lo = g.win.Start
		}
		if k == 0 || g.win.Start > hi {
			hi = g.win.Start
		}
	}
	prune := sqlexpr.Or() // no group: read nothing
	if len(groups) > 0 {
		prune = sqlexpr.And(sqlexpr.Ge(gold.ColWindow+".start", time.UnixMicro(lo).UTC()), sqlexpr.Le(gold.ColWindow+".start", time.UnixMicro(hi).UTC()))
	}
	var key []byte
	gr := goldRow{a: a}
	row := gr.rows(func(out, b *pq.Batch, i int, start, end int64, keys []*pq.Column) (rowAction, error) {
		g := index.find(&key, start, end, keys, i)
		if g == nil {
			return keepRow, nil
		}
		vals, late, err := a.valuesOf(b, i)
		if err != nil {
			return keepRow, err
		}
		for k := range vals {
			if err := vals[k].Merge(&g.vals[k]); err != nil {
				return keepRow, fmt.Errorf("late: gold %s: %w", a.cfg.Name, err)
			}
		}
		if err := a.appendRow(out, g.win, g.keys, vals, late+g.rows); err != nil {
			return keepRow, err
		}
		matched[g] = true
		rw.st.Updated++
		return rewroteRow, nil
	})
	extra := func(out *pq.Batch, _ func() error) error {
		for _, g := range groups {
			if matched[g] {
				continue
			}
			if err := a.appendRow(out, g.win, g.keys, g.vals, g.rows); err != nil {
				return err
			}
			rw.st.Inserted++
		}
		return nil
	}
	return rw.rewrite(prune, row, extra, txn, txlog.Operation{Name: "MERGE", Parameters: map[string]any{
		"predicate": fmt.Sprintf("[\"(target.window <=> source.window) AND keys %v <=> source\"]", a.keyNames), "appId": txn.AppID}})
}

// groupIndex finds the group of a gold row among a merge's groups, window first. Gold files
// hold a window's rows together, so the groups of the window in hand stay in the caches from
// one gold row to the next; one map of every group (a quarter of a million at 100k keys)
// missed them on about every gold row read: a quarter of merge-late's CPU at 10M events.
type groupIndex struct {
	byWin map[gold.Window]winGroups
	// win and cur are the window looked up last and its groups.
	win gold.Window
	cur winGroups
	ok  bool // win and cur are set
}

// winGroups are one window's groups: a few in a list, more in a map by their groupKey.
type winGroups struct {
	list []*group
	m    map[string]*group
}

// listMax is the most groups a window keeps in a list, searched one by one.
const listMax = 8

// newGroupIndex indexes groups, which collector.groups orders by window: each window's list
// is then a slice of groups, and only windows with more than listMax groups allocate a map.
func newGroupIndex(groups []*group) *groupIndex {
	x := &groupIndex{byWin: map[gold.Window]winGroups{}}
	for i := 0; i < len(groups); {
		j := i + 1
		for j < len(groups) && groups[j].win == groups[i].win {
			j++
		}
		wg := x.byWin[groups[i].win]
		if wg.list == nil {
			wg.list = groups[i:j:j]
		} else {
			wg.list = append(wg.list, groups[i:j]...) // groups out of window order
		}
		x.byWin[groups[i].win] = wg
		i = j
	}
	for w, wg := range x.byWin {
		if len(wg.list) > listMax {
			wg.m = make(map[string]*group, len(wg.list))
			for _, g := range wg.list {
				wg.m[g.key] = g
			}
			x.byWin[w] = wg
		}
	}
	return x
}

// find returns the group of the row with window [start, end) and row i of keys, or nil; key
// is a scratch buffer for its encoding.
func (x *groupIndex) find(key *[]byte, start, end int64, keys []*pq.Column, i int) *group {
	if w := (gold.Window{Start: start, End: end}); !x.ok || w != x.win {
		x.win, x.cur, x.ok = w, x.byWin[w], true
	}
	if x.cur.list == nil {
		return nil // the common case: a window no late row reached
	}
	*key = groupKey((*key)[:0], start, end, keys, i)
	if x.cur.m != nil {
		return x.cur.m[string(*key)]
	}
	for _, g := range x.cur.list {
		if g.key == string(*key) {
			return g
		}
	}
	return nil
}

// Quarantine column names: the stream's tables define them.
const (
	colLateWatermark = silver.ColLateWatermark
	colBatchID       = silver.ColBatchID
)

// lateRead is what the quarantine rows merge-late reads say.
type lateRead struct {
	rows, pairs int64 // late rows, and (row, window) pairs added to the collector
	// affected is, for session windows, the last late event time of each key; lo and hi
	// bound the late rows' event times.
	affected map[string]int64
	// times holds, for session windows, every late event time of each key, so that each
	// recomputed session's late_rows can count the late rows it absorbed.
	times              map[string][]int64
	lo, hi             int64
	minBatch, maxBatch int64 // the batches that quarantined them (-1: unknown)
}

// readLate reads the quarantine rows of files adds (through scan of snapshot qsnap) into c,
// each applied to the windows closed when it was judged; for session windows it only notes
// the keys and times.
func readLate(ctx context.Context, qt *table.Table, qsnap *txlog.Snapshot, a *agg, adds []*txlog.Add, c *collector) (lateRead, error) {
	g := a.cfg
	lr := lateRead{affected: map[string]int64{}, times: map[string][]int64{}, lo: math.MaxInt64, hi: math.MinInt64, minBatch: -1, maxBatch: -1}
	qschema, err := qsnap.Schema()
	if err != nil {
		return lr, fmt.Errorf("late: quarantine %s: %w", g.Name, err)
	}
	cols := append(append([]string{a.evName, colLateWatermark}, a.keyNames...), a.inCols...)
	if qschema.Field(colBatchID) != nil {
		cols = append(cols, colBatchID)
	}
	fs, err := qt.FileScan(qsnap, dedupe(cols), nil)
	if err != nil {
		return lr, fmt.Errorf("late: quarantine %s: %w", g.Name, err)
	}
	var wins []gold.Window
	var kb []byte
	for b, err := range fs.Read(ctx, adds) {
		if err != nil {
			// A file of late rows gone (a VACUUM after an OPTIMIZE of the quarantine, a lifecycle
			// rule): replay runs merge-late first and stops here too; the rows are in silver.
			return lr, table.ExplainMissing(fmt.Errorf("late: read quarantine %s: %w", g.Name, err), "late: quarantine "+g.Name,
				"restore it from the bucket's versioning or a backup, or rebuild gold from silver (which holds the late rows) with "+
					"`medallion run refresh --table "+g.Name+" --config F`, which records the quarantine as merged (docs/recovery.md)")
		}
		s, err := a.source(b)
		if err != nil {
			return lr, err
		}
		lw, bid := b.Column(colLateWatermark), b.Column(colBatchID)
		for i := range b.Len() {
			if bid != nil && !bid.IsNull(i) {
				if lr.minBatch < 0 || bid.Int64[i] < lr.minBatch {
					lr.minBatch = bid.Int64[i]
				}
				lr.maxBatch = max(lr.maxBatch, bid.Int64[i])
			}
			if s.ev.IsNull(i) || lw.IsNull(i) {
				return lr, fmt.Errorf("late: quarantine %s: a row without %s or %s", g.Quarantine, a.evName, colLateWatermark)
			}
			lr.rows++
			if a.session != nil {
				// Sessions are recomputed, not added to: the late rows only say which keys
				// and times.
				kb = kb[:0]
				for _, c := range s.keys {
					kb = pq.AppendKeyPart(kb, c, i)
				}
				t := s.ev.Int64[i]
				if last, ok := lr.affected[string(kb)]; !ok || t > last {
					lr.affected[string(kb)] = t
				}
				lr.times[string(kb)] = append(lr.times[string(kb)], t)
				lr.lo, lr.hi = min(lr.lo, t), max(lr.hi, t+1)
				continue
			}
			wins = a.windowsOf(wins[:0], s.ev.Int64[i], floorDiv(lw.Int64[i], 1000))
			for _, w := range wins {
				lr.pairs++
				if err := c.add(s, i, w); err != nil {
					return lr, err
				}
			}
		}
	}
	return lr, nil
}

func dedupe(cols []string) []string {
	seen := map[string]bool{}
	out := cols[:0]
	for _, c := range cols {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
