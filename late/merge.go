package late

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"time"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/internal/backoff"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// ErrUnknownGold reports a --gold name the config does not declare.
var ErrUnknownGold = errors.New("late: unknown gold aggregation")

// quarantineBehind is the checkpoint.ErrTableBehind of quarantine q at version has, whose
// rows target records as merged up to version merged under appID (a deleted _delta_log entry,
// a restore from an older backup): merging on would take the rows the stream writes into
// those versions again as merged.
func quarantineBehind(q, target, appID string, has, merged int64) error {
	return fmt.Errorf("late: %w: quarantine %s is at version %d, but %s holds txn(%s) for version %d; recover the "+
		"stream first (its run refuses and names the recovery: medallion recover rollback --config F --query NAME, "+
		"docs/recovery.md), then run merge-late", checkpoint.ErrTableBehind, q, has, target, appID, merged)
}

// AppIDPrefix starts the txn appId merge-late records in gold ("merge-late:" + query id),
// whose version is the last quarantine version merged.
const AppIDPrefix = "merge-late:"

// Options configure merge-late and replay.
type Options struct {
	// Lake is the bucket every path of Query is relative to.
	Lake  objstore.Bucket
	Query spec.Query
	// Gold limits the job to one aggregation (empty: all).
	Gold   string
	Clock  func() time.Time
	Logger *slog.Logger
	// WriteOptions tune the gold data files written.
	WriteOptions pq.WriteOptions
	// MaxAttempts bounds the runs of one aggregation's job after conflicts with another
	// writer (default 8).
	MaxAttempts int
	// Progress, when set, follows a Replay (the other jobs do not call it): see ReplayProgress.
	Progress func(ReplayProgress)
	// Workers is how many goroutines a replay reads and aggregates silver with (0: GOMAXPROCS).
	Workers int
	// SlicePairs bounds the (row, window) pairs a replay of count, sum, avg, min and max
	// aggregates at once, as the source's statistics estimate them: the range is cut into
	// slices of whole windows, aggregated and written one after another into one commit, so
	// memory follows the slice, not the range (0: DefaultSlicePairs; < 0: one slice).
	SlicePairs int64

	// Join, when set, is the join whose joined table Query.Tables.Silver is and whose
	// checkpoint Query.Tables.Checkpoint is (JoinQuery builds that Query): its aggregations
	// were judged and emitted with the watermark the join propagates (join.Spec.
	// OutputWatermark of the batch watermark, spec/stream-joins.md §3.4), not the batch
	// watermark itself.
	Join *spec.Join

	// track carries Progress's figures down to the source reads of a replay (nil: no hook).
	track *replayTracker
}

func (o *Options) defaults() {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 8
	}
}

// DefaultSlicePairs is Options.SlicePairs's default: about 2M groups at most, a few hundred
// MB of aggregation state over both cores' partial tables.
const DefaultSlicePairs = 2_000_000

func (o *Options) slicePairs() int64 {
	switch {
	case o.SlicePairs == 0:
		return DefaultSlicePairs
	case o.SlicePairs < 0:
		return 0
	}
	return o.SlicePairs
}

func (o *Options) workers() int {
	if o.Workers > 0 {
		return o.Workers
	}
	return runtime.GOMAXPROCS(0)
}

func (o *Options) open(p string) *table.Table {
	return table.Open(objstore.WithPrefix(o.Lake, p), table.Options{Clock: o.Clock, Write: o.WriteOptions})
}

func (o *Options) golds() ([]*spec.Aggregation, error) {
	var out []*spec.Aggregation
	for i := range o.Query.Gold {
		g := &o.Query.Gold[i]
		if o.Gold == "" || g.Name == o.Gold {
			out = append(out, g)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %q", ErrUnknownGold, o.Gold)
	}
	return out, nil
}

// retry runs fn again from scratch while it loses against a concurrent writer.
func (o *Options) retry(ctx context.Context, name string, fn func() error) error {
	var err error
	for attempt := 1; attempt <= o.MaxAttempts; attempt++ {
		if err = fn(); !errors.Is(err, txlog.ErrConflict) {
			return err
		}
		o.Logger.Info("late: concurrent gold commit, starting over", "gold", name, "attempt", attempt, "err", err)
		if err := (backoff.Backoff{Min: 10 * time.Millisecond, Max: time.Second}).Sleep(ctx, attempt); err != nil {
			return err
		}
	}
	return err
}

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

// eachGold runs fn for every selected aggregation, each under the conflict retry, with the
// stream's committed state. Before the stream has committed anything there is nothing to do:
// it returns no query id and no error.
func (o *Options) eachGold(ctx context.Context, what string, fn func(*spec.Aggregation, streamState) error) (string, error) {
	golds, err := o.golds()
	if err != nil {
		return "", err
	}
	// readJoinState reads a source query's checkpoint as readStreamState does, and a join
	// query's too, whose offsets may list both sides' offsets.
	st, _, err := readJoinState(ctx, objstore.WithPrefix(o.Lake, o.Query.Tables.Checkpoint))
	st.ckpt = o.Query.Tables.Checkpoint
	if errors.Is(err, errNoStream) {
		o.Logger.Info("late: nothing to "+what, "reason", err)
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if o.Join != nil {
		p, err := newJoinPlan(o.Join)
		if err != nil {
			return "", err
		}
		st.evictMs = p.spec.OutputWatermark(st.evictMs)
	}
	for _, g := range golds {
		if err := o.retry(ctx, g.Name, func() error { return fn(g, st) }); err != nil {
			return st.queryID, err
		}
	}
	return st.queryID, nil
}

// mergeOne merges one aggregation's new quarantine rows into gold.
func mergeOne(ctx context.Context, opts *Options, g *spec.Aggregation, st streamState) (MergeGoldReport, error) {
	gr := MergeGoldReport{Name: g.Name, FromVersion: -1, ToVersion: -1}
	if g.OutputMode == spec.OutputComplete {
		gr.Note = "complete mode has no late rows"
		return gr, nil
	}
	gt, qt := opts.open(g.Table), opts.open(g.Quarantine)
	gsnap, err := gt.Log().Snapshot(ctx)
	if errors.Is(err, txlog.ErrTableNotFound) {
		gr.Note = "the gold table does not exist yet: nothing to merge into"
		return gr, nil
	}
	if err != nil {
		return gr, fmt.Errorf("late: gold %s: %w", g.Name, err)
	}
	appID := AppIDPrefix + st.queryID
	if v, ok := gsnap.TxnVersion(appID); ok {
		gr.FromVersion = v
	}
	qsnap, err := qt.Log().Snapshot(ctx)
	if errors.Is(err, txlog.ErrTableNotFound) {
		gr.UpToDate = true
		return gr, nil
	}
	if err != nil {
		return gr, fmt.Errorf("late: quarantine %s: %w", g.Name, err)
	}
	if err := errors.Join(st.check(g.Table, gsnap), st.check(g.Quarantine, qsnap)); err != nil {
		return gr, err
	}
	gr.ToVersion = qsnap.Version()
	if gr.ToVersion < gr.FromVersion {
		return gr, quarantineBehind(g.Quarantine, g.Table, appID, gr.ToVersion, gr.FromVersion)
	}
	if gr.ToVersion <= gr.FromVersion {
		gr.UpToDate, gr.ToVersion = true, gr.FromVersion
		return gr, nil
	}
	qschema, err := qsnap.Schema()
	if err != nil {
		return gr, fmt.Errorf("late: quarantine %s: %w", g.Name, err)
	}
	gschema, err := gsnap.Schema()
	if err != nil {
		return gr, fmt.Errorf("late: gold %s: %w", g.Name, err)
	}
	if err := checkGoldWritable(gsnap, gschema, g); err != nil {
		return gr, err
	}
	a, err := resolve(&opts.Query, g, qschema, gschema)
	if err != nil {
		return gr, err
	}
	if qschema.Field(colLateWatermark) == nil {
		return gr, fmt.Errorf("late: quarantine %s has no %s column", g.Quarantine, colLateWatermark)
	}
	adds, err := addedFiles(ctx, qt.Bucket(), gr.FromVersion+1, gr.ToVersion)
	if err != nil {
		return gr, fmt.Errorf("late: quarantine %s: %w", g.Name, err)
	}
	c, err := newCollector(a)
	if err != nil {
		return gr, err
	}
	lr, err := readLate(ctx, qt, qsnap, a, adds, c)
	if err != nil {
		return gr, err
	}
	gr.LateRows, gr.Pairs = lr.rows, lr.pairs
	affected, lo, hi := lr.affected, lr.lo, lr.hi
	txn := &table.AppTxn{AppID: appID, Version: gr.ToVersion}
	rw := &rewriter{t: gt, snap: gsnap, a: a}
	if a.session != nil {
		if len(affected) == 0 {
			return gr, nil
		}
		// Silver as of the last batch the merged quarantine holds: later rows reach gold through
		// the stream or the next merge-late, which recomputes these sessions again.
		upTo := st.batch
		if b, ok := qsnap.TxnVersion(st.queryID); ok {
			upTo = max(upTo, b)
		}
		src, err := openSource(ctx, opts, SourceSilver, st.queryID, upTo)
		if err != nil {
			return gr, err
		}
		if err := evolveGold(ctx, &opts.Query, g, rw, qschema); err != nil {
			return gr, err
		}
		res, err := resessionize(ctx, rw, src, st, resessionScope{from: lo, to: hi, only: affected, late: lr.times, txn: txn})
		gr.Gold = res.gold
		if res.deferred {
			gr.Note = "late rows inside sessions the stream still holds: merged again by the next run"
		}
		return gr, err
	}
	groups, err := c.groups()
	if err != nil {
		return gr, err
	}
	if len(groups) == 0 {
		// Nothing to fold in: leave gold alone rather than commit only the txn; the next run
		// reads these (row-less) versions again, which costs a few small reads.
		return gr, nil
	}
	if err := evolveGold(ctx, &opts.Query, g, rw, qschema); err != nil {
		return gr, err
	}
	ws, err := upsert(ctx, rw, groups, txn)
	if err != nil {
		return gr, err
	}
	gr.Gold = &ws
	opts.noteInput(ctx, &gr, lr)
	return gr, nil
}

// noteInput sets the rows the stream read in the batches that quarantined the merged rows, and
// warns when the late rows exceed the alert fraction of them.
func (o *Options) noteInput(ctx context.Context, gr *MergeGoldReport, lr lateRead) {
	if lr.minBatch >= 0 {
		gr.InputRows = progressInput(ctx, checkpoint.Open(objstore.WithPrefix(o.Lake, o.Query.Tables.Checkpoint)), lr.minBatch, lr.maxBatch)
	}
	if f := o.Query.LateAlertFraction; f > 0 && gr.InputRows > 0 && float64(gr.LateRows) > f*float64(gr.InputRows) {
		o.Logger.Warn("late: late rows above the alert fraction", "gold", gr.Name, "lateRows", gr.LateRows,
			"inputRows", gr.InputRows, "fromBatch", lr.minBatch, "toBatch", lr.maxBatch, "fraction", f)
	}
}

// upsert combines each group with its gold row (null-safe on the keys) or inserts it.
func upsert(ctx context.Context, rw *rewriter, groups []*group, txn *table.AppTxn) (writeStats, error) {
	a := rw.a
	index := make(map[string]*group, len(groups))
	matched := make(map[*group]bool, len(groups))
	lo, hi := int64(0), int64(0)
	for k, g := range groups {
		index[g.key] = g
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
	var keys []*pq.Column
	row := func(out, b *pq.Batch, i int) (rowAction, error) {
		win := b.Columns[a.winCol]
		if win.IsNull(i) || win.Children[0].IsNull(i) || win.Children[1].IsNull(i) {
			return keepRow, nil
		}
		keys = keys[:0]
		for _, ci := range a.keyCols {
			keys = append(keys, b.Columns[ci])
		}
		key = groupKey(key[:0], win.Children[0].Int64[i], win.Children[1].Int64[i], keys, i)
		g := index[string(key)]
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
	}
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
	return rw.run(ctx, prune, row, extra, txn, txlog.Operation{Name: "MERGE", Parameters: map[string]any{
		"predicate": fmt.Sprintf("[\"(target.window <=> source.window) AND keys %v <=> source\"]", a.keyNames), "appId": txn.AppID}})
}

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
			return lr, fmt.Errorf("late: read quarantine %s: %w", g.Name, err)
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

// progressInput sums numInputRows of the stream's kept progress files of batches from..to.
// Progress is informational: a file already cleaned up is simply not counted.
func progressInput(ctx context.Context, ckpt *checkpoint.Dir, from, to int64) int64 {
	var n int64
	for b := from; b <= to && b-from < 100_000; b++ {
		data, err := ckpt.ReadProgress(ctx, b)
		if err != nil {
			continue
		}
		var p struct {
			NumInputRows int64 `json:"numInputRows"`
		}
		if json.Unmarshal(data, &p) == nil {
			n += p.NumInputRows
		}
	}
	return n
}

// addedFiles lists the files the commits from..to (inclusive) added with dataChange: the rows
// those versions appended (compactions, with dataChange false, only move rows already seen).
func addedFiles(ctx context.Context, b objstore.Bucket, from, to int64) ([]*txlog.Add, error) {
	var out []*txlog.Add
	for v := max(from, 0); v <= to; v++ {
		data, err := objstore.ReadAll(ctx, b, txlog.CommitKey(v))
		if errors.Is(err, objstore.ErrNotFound) {
			return nil, fmt.Errorf("commit %d is no longer in the log (cleaned up before it was merged): run replay over its range", v)
		}
		if err != nil {
			return nil, err
		}
		actions, err := txlog.ParseActions(data)
		if err != nil {
			return nil, fmt.Errorf("commit %d: %w", v, err)
		}
		for _, a := range actions {
			if a.Add != nil && a.Add.DataChange {
				out = append(out, a.Add)
			}
		}
	}
	return out, nil
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
