package late

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// Derived tables (docs/derived-tables.md). A derived table is kept from its upstream gold's
// change feed by one reconciler pass per run:
//
//   - find: the downstream windows the upstream versions it has not read yet changed (their
//     rows' window.start, from the feed's inserts, deletes and pre/post images), plus the
//     windows the watermark closed since the last pass; only windows the watermark has
//     closed are kept (a window is written once complete, then corrected in place);
//   - recompute: those windows from the upstream table at its latest version, folding the
//     upstream rows' mergeable aggregates (gold.AggValue.Merge: counts and sums add, exact
//     float sums add exactly, min and max take the extreme) so that the result is what a
//     batch group-by of the events gives at the downstream grain;
//   - rewrite: the table's rows of those windows replaced in one commit that records, as two
//     txn actions, the upstream version read (DerivedApp + name) and the watermark emitted to
//     (DerivedWatermarkApp + name). A rerun after the commit finds nothing to do; a crash
//     before it leaves the table as it was and the next pass does the same work again.
//
// The upstream's watermark is its query's (a gold over a source or a join: the checkpoint's
// eviction watermark, read before the upstream table so that every window it closed is in
// the version read), or, for an upstream that is itself derived, the watermark that table
// emitted to, so that a level never writes a window its upstream has not completed.

// DerivedApp and DerivedWatermarkApp prefix the txn app ids of a derived table's two
// positions: the upstream version it has read, and the watermark (ms) it emitted to.
const (
	DerivedApp          = "medallion-derived-"
	DerivedWatermarkApp = "medallion-derived-wm-"
)

// DeriveReport is what one derived table's pass did.
type DeriveReport struct {
	Name     string `json:"name"`
	Upstream string `json:"upstream"`
	// FromVersion and ToVersion are the upstream versions read: (from, to]; from -1 on the
	// first pass, which reads the upstream table whole.
	FromVersion int64 `json:"fromUpstreamVersion"`
	ToVersion   int64 `json:"toUpstreamVersion"`
	// WatermarkMs is the watermark emitted to: every window ending at or before it is written.
	WatermarkMs int64 `json:"watermarkMs"`
	// Windows are the downstream windows recomputed, UpstreamRows the upstream rows read for them.
	Windows      int   `json:"windows"`
	UpstreamRows int64 `json:"upstreamRows"`
	UpToDate     bool  `json:"upToDate,omitempty"`
	// Commit is the table version written (absent when nothing was committed).
	Commit     *int64 `json:"commit,omitempty"`
	RowsAdded  int64  `json:"rowsWritten"`
	ChangeRows int64  `json:"changeRows,omitempty"`
	Note       string `json:"note,omitempty"`
}

// DeriveAll keeps each derived table of ds in order (each after its upstream), stopping at
// the first failure: a level below a failed one would read an upstream that is behind.
func DeriveAll(ctx context.Context, opts Options, ds []spec.Derived) ([]DeriveReport, error) {
	opts.defaults()
	return deriveEach(ctx, &opts, ds, false, func(*spec.Derived) bool { return true })
}

// deriveEach runs one pass (whole: a refresh) of each table of ds that pick selects, in the
// order of ds and each under the conflict retry, stopping at the first failure; the reports
// of the tables done come back either way.
func deriveEach(ctx context.Context, opts *Options, ds []spec.Derived, whole bool, pick func(*spec.Derived) bool) ([]DeriveReport, error) {
	what := "derived table"
	if whole {
		what = "refresh derived table"
	}
	var out []DeriveReport
	for i := range ds {
		if !pick(&ds[i]) {
			continue
		}
		var rep DeriveReport
		err := opts.retry(ctx, ds[i].Name, func() error {
			var err error
			rep, err = deriveOnce(ctx, opts, &ds[i], whole)
			return err
		})
		out = append(out, rep)
		if err != nil {
			return out, fmt.Errorf("late: %s %s: %w", what, ds[i].Name, err)
		}
	}
	return out, nil
}

// ErrNotDerived reports a refresh of a table that is not a derived table.
var ErrNotDerived = errors.New("late: not a derived table")

// RefreshDerived rebuilds the derived table name (when it is one: a gold over a source just
// refreshed names itself) and every derived table below it (in the order of ds, each after
// its upstream): each from scratch from its upstream at its latest
// version, committed as one overwrite of the whole table that records both positions, so that
// readers see the old table or the rebuilt one and the next pass starts from the rebuild.
// With the change data feed on, the overwrite's change rows are the difference (update pairs
// for the rows that differ, nothing for the rows that were right). A changed definition (or
// upstream columns changed by a refresh of the upstream) is the way a refresh is meant for:
// the table is replaced with the new columns (table.Replace), where a pass refuses it
// (ErrDefinitionChanged). ErrNotDerived: name is neither a derived table nor the upstream of one.
func RefreshDerived(ctx context.Context, opts Options, ds []spec.Derived, name string) ([]DeriveReport, error) {
	opts.defaults()
	if !slices.ContainsFunc(ds, func(d spec.Derived) bool { return d.Name == name || d.Upstream == name }) {
		return nil, fmt.Errorf("%w: %s", ErrNotDerived, name)
	}
	// ds lists each table after its upstream, so one pass in order marks every level below.
	below := map[string]bool{name: true}
	return deriveEach(ctx, &opts, ds, true, func(d *spec.Derived) bool {
		if !below[d.Name] && !below[d.Upstream] {
			return false
		}
		below[d.Name] = true
		return true
	})
}

// CreateDerived creates the derived tables of ds that do not exist yet, empty, with the
// columns their definitions give over their upstreams' (in order, so that a level's upstream
// exists when it is reached): what `medallion init` does, so that readers find every table
// before the first window closes. A table whose upstream does not exist is left for the
// first pass.
func CreateDerived(ctx context.Context, opts Options, ds []spec.Derived) error {
	opts.defaults()
	for i := range ds {
		d := &ds[i]
		upSnap, err := opts.open(d.UpstreamTable).Latest(ctx)
		if errors.Is(err, txlog.ErrTableNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("derived table %s: upstream %s: %w", d.Name, d.Upstream, err)
		}
		upSchema, err := upSnap.Schema()
		if err != nil {
			return fmt.Errorf("derived table %s: upstream %s: %w", d.Name, d.Upstream, err)
		}
		dp, err := newDerivePlan(d, upSchema)
		if err != nil {
			return err
		}
		if _, err := ensureDerived(ctx, opts.open(d.Table), dp, d); err != nil {
			return fmt.Errorf("derived table %s: %w", d.Name, err)
		}
	}
	return nil
}

// deriveOnce runs one pass of d (see the package comment above); whole: a refresh, every
// window recomputed and the whole table overwritten.
func deriveOnce(ctx context.Context, opts *Options, d *spec.Derived, whole bool) (DeriveReport, error) {
	rep := DeriveReport{Name: d.Name, Upstream: d.Upstream, FromVersion: -1, ToVersion: -1}
	up := opts.open(d.UpstreamTable)
	wm, ok, err := upstreamWatermark(ctx, opts, d, up)
	if err != nil || !ok {
		rep.Note = "the upstream has emitted no window yet"
		return rep, err
	}
	upSnap, err := up.Latest(ctx)
	if errors.Is(err, txlog.ErrTableNotFound) {
		rep.Note = "the upstream table does not exist yet"
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("upstream %s: %w", d.Upstream, err)
	}
	upSchema, err := upSnap.Schema()
	if err != nil {
		return rep, fmt.Errorf("upstream %s: %w", d.Upstream, err)
	}
	dp, err := newDerivePlan(d, upSchema)
	if err != nil {
		return rep, err
	}
	out := opts.open(d.Table)
	snap, err := ensureDerived(ctx, out, dp, d)
	if err != nil {
		return rep, err
	}
	changed := dp.sameDefinition(snap)
	if changed != nil && !whole {
		return rep, changed
	}
	rep.ToVersion, rep.WatermarkMs = upSnap.Version(), wm
	from, seen := snap.TxnVersion(DerivedApp + d.Name)
	prevWm, wmSeen := snap.TxnVersion(DerivedWatermarkApp + d.Name)
	if !seen || !wmSeen || whole {
		from, prevWm = -1, math.MinInt64
	}
	rep.FromVersion = from
	if !whole && from >= upSnap.Version() && prevWm >= wm {
		rep.UpToDate = true
		return rep, nil
	}
	wins, err := dp.affected(ctx, up, upSnap, from, prevWm, wm)
	if err != nil {
		return rep, err
	}
	rep.Windows = len(wins)
	rows, n, err := dp.recompute(ctx, up, upSnap, wins)
	if err != nil {
		return rep, err
	}
	rep.UpstreamRows = n
	txns := []table.AppTxn{{AppID: DerivedApp + d.Name, Version: upSnap.Version()}, {AppID: DerivedWatermarkApp + d.Name, Version: wm}}
	if changed != nil {
		// A refresh under a changed definition: the table's columns are replaced with the rows.
		var batches []*pq.Batch
		if rows.Len() > 0 {
			batches = []*pq.Batch{rows}
		}
		res, err := out.Replace(ctx, table.Replace{Snapshot: snap, Schema: dp.schema, Rows: batches, Txns: txns})
		if err != nil {
			return rep, fmt.Errorf("derived table %s: %w", d.Name, err)
		}
		rep.Commit, rep.RowsAdded, rep.Note = &res.Version, res.RowsWritten, "definition changed: table replaced with its new columns"
		return rep, nil
	}
	res, err := dp.rewrite(ctx, out, snap, wins, whole, rows, txns)
	if err != nil {
		return rep, err
	}
	rep.Commit, rep.RowsAdded, rep.ChangeRows = &res.Version, res.RowsWritten, res.ChangeRows.Total()
	return rep, nil
}

// upstreamWatermark is the watermark (ms) below which the upstream's windows are complete:
// read before the upstream table (see the comment at the top). ok false: none yet.
func upstreamWatermark(ctx context.Context, opts *Options, d *spec.Derived, up *table.Table) (int64, bool, error) {
	if d.UpstreamDerived {
		snap, err := up.Latest(ctx)
		if errors.Is(err, txlog.ErrTableNotFound) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, fmt.Errorf("upstream %s: %w", d.Upstream, err)
		}
		wm, ok := snap.TxnVersion(DerivedWatermarkApp + d.Upstream)
		return wm, ok, nil
	}
	st, _, err := readState(ctx, opts.Lake, d.Checkpoint)
	if errors.Is(err, errNoStream) {
		return 0, false, nil
	}
	if err != nil || st.batch < 0 {
		return 0, false, err
	}
	if d.Join != nil {
		p, err := newJoinPlan(d.Join)
		if err != nil {
			return 0, false, err
		}
		return p.spec.OutputWatermark(st.evictMs), true, nil
	}
	return st.evictMs, true, nil
}

// ensureDerived returns the derived table's latest snapshot, creating it first when missing.
func ensureDerived(ctx context.Context, t *table.Table, dp *derivePlan, d *spec.Derived) (*txlog.Snapshot, error) {
	snap, err := t.Latest(ctx)
	if errors.Is(err, txlog.ErrTableNotFound) {
		if _, err := t.Create(ctx, dp.schema, nil, spec.CreateProps(nil, d.NoChangeDataFeed)); err != nil && !errors.Is(err, table.ErrTableExists) {
			return nil, fmt.Errorf("create %s: %w", d.Table, err)
		}
		snap, err = t.Latest(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.Table, err)
	}
	return snap, nil
}

// ErrDefinitionChanged reports a derived table whose columns are not those its definition
// (and its upstream's columns) give now: a changed definition.
var ErrDefinitionChanged = errors.New("late: derived table definition changed")

// sameDefinition refuses a table whose columns (names and types, in order) differ from the
// plan's: its rows would not fit, and folding new rows into old ones would mix definitions.
func (dp *derivePlan) sameDefinition(snap *txlog.Snapshot) error {
	have, err := snap.Schema()
	if err != nil {
		return err
	}
	a, errA := txlog.MarshalSchema(have)
	b, errB := txlog.MarshalSchema(dp.schema)
	if errA != nil || errB != nil || a != b {
		return fmt.Errorf("%w: table %s has columns %s, its definition gives %s; delete the table (a derived table is rebuilt "+
			"from its upstream when it does not exist: docs/derived-tables.md)", ErrDefinitionChanged, dp.d.Table, fieldNames(have), fieldNames(dp.schema))
	}
	return nil
}

func fieldNames(s *txlog.StructType) []string {
	var out []string
	for _, f := range s.Fields {
		out = append(out, f.Name)
	}
	return out
}

// derivePlan is a derived table resolved against its upstream's schema.
type derivePlan struct {
	d       *spec.Derived
	schema  *txlog.StructType // the derived table's
	specs   []gold.AggSpec
	size    int64 // window size and start, µs
	start   int64
	upKeys  []string // the group-by columns, read from the upstream
	upAggs  [][]string
	upExact []string // per aggregate, the upstream exact-sum column ("" none)
	exact   []int    // per aggregate, its exact column in schema (-1 none)
	aggCol  []int    // per aggregate, its first column in schema
}

func newDerivePlan(d *spec.Derived, up *txlog.StructType) (*derivePlan, error) {
	dp := &derivePlan{d: d, size: d.Size.Microseconds(), start: d.Start.Microseconds(), upKeys: d.GroupBy}
	if dp.size <= 0 {
		return nil, fmt.Errorf("derived table %s: window size %s", d.Name, d.Size)
	}
	fields := []txlog.StructField{gold.WindowField()}
	for _, k := range d.GroupBy {
		f := up.Field(k)
		if f == nil {
			return nil, fmt.Errorf("derived table %s: upstream %s has no column %s", d.Name, d.Upstream, k)
		}
		fields = append(fields, *f)
	}
	for _, r := range d.Aggregates {
		f := up.Field(r.Column)
		if f == nil {
			return nil, fmt.Errorf("derived table %s: upstream %s has no column %s", d.Name, d.Upstream, r.Column)
		}
		fn, err := gold.ParseFunc(r.Fn)
		if err != nil {
			return nil, fmt.Errorf("derived table %s: %w", d.Name, err)
		}
		in, num := f.Type, f.Type
		cols := []string{r.Column}
		if fn == gold.Avg {
			sf := up.Field(r.Column + gold.SuffixSum)
			if sf == nil || up.Field(r.Column+gold.SuffixCount) == nil {
				return nil, fmt.Errorf("derived table %s: upstream %s has no %s%s and %s%s columns for avg %s", d.Name, d.Upstream,
					r.Column, gold.SuffixSum, r.Column, gold.SuffixCount, r.As)
			}
			num = sf.Type
			cols = append(cols, r.Column+gold.SuffixSum, r.Column+gold.SuffixCount)
		}
		kind, err := pq.KindOf(num)
		if err != nil {
			return nil, err
		}
		if fn != gold.Count && kind != pq.KindInt64 && kind != pq.KindInt32 && kind != pq.KindFloat64 && kind != pq.KindFloat32 {
			return nil, fmt.Errorf("derived table %s: %s over %s of type %s is not supported yet (numbers and timestamps only)", d.Name, r.Fn, r.Column, num)
		}
		s := gold.AggSpec{Fn: fn, Column: len(dp.specs), Name: r.As, Int: kind == pq.KindInt64 || kind == pq.KindInt32}
		dp.specs = append(dp.specs, s)
		dp.aggCol = append(dp.aggCol, len(fields))
		fields = append(fields, gold.AggregateFields(fn, r.As, in, num)...)
		dp.upAggs = append(dp.upAggs, cols)
		ex := ""
		if s.ExactSum() && up.Field(gold.ExactColumn(r.Column)) != nil {
			ex = gold.ExactColumn(r.Column)
		}
		dp.upExact = append(dp.upExact, ex)
	}
	fields = append(fields, gold.LateRowsField())
	dp.exact = make([]int, len(dp.specs))
	for i := range dp.specs {
		dp.exact[i] = -1
		if dp.specs[i].ExactSum() {
			dp.exact[i] = len(fields)
			fields = append(fields, txlog.StructField{Name: gold.ExactColumn(dp.specs[i].Name), Type: txlog.PrimitiveType{Name: txlog.TypeBinary}, Nullable: true})
		}
	}
	dp.schema = &txlog.StructType{Fields: fields}
	return dp, nil
}

// window is the downstream window start (µs) holding an upstream window starting at s.
func (dp *derivePlan) window(s int64) int64 {
	return s - mod(s-dp.start, dp.size)
}

func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// affected lists the downstream windows to recompute: those the upstream versions (from, to]
// touched and those ending in (prevWm, wm], of the windows ending at or before wm. On the
// first pass (from < 0) every window of the upstream table.
func (dp *derivePlan) affected(ctx context.Context, up *table.Table, snap *txlog.Snapshot, from, prevWm, wm int64) ([]int64, error) {
	set := map[int64]bool{}
	wmUs := wm * 1000
	add := func(b *pq.Batch) {
		w := b.Column(gold.ColWindow)
		for i := range b.Len() {
			if w.IsNull(i) || w.Children[0].IsNull(i) {
				continue
			}
			if s := dp.window(w.Children[0].Int64[i]); s+dp.size <= wmUs {
				set[s] = true
			}
		}
	}
	// More windows closed than this since the last pass: read the upstream's windows rather
	// than list every empty one.
	const maxListed = 100_000
	if from < 0 || (wmUs-prevWm*1000)/dp.size > maxListed {
		fs, err := up.FileScan(snap, []string{gold.ColWindow}, nil)
		if err != nil {
			return nil, err
		}
		for b, err := range fs.Read(ctx, snap.Files()) {
			if err != nil {
				return nil, fmt.Errorf("upstream %s: %w", dp.d.Upstream, err)
			}
			add(b)
		}
	} else {
		for e := dp.window(prevWm*1000) + dp.size; e <= wmUs; e += dp.size {
			if e > prevWm*1000 {
				set[e-dp.size] = true
			}
		}
	}
	if from >= 0 && from < snap.Version() {
		for cs, err := range up.Changes(ctx, from+1, snap.Version()) {
			if err != nil {
				return nil, fmt.Errorf("upstream %s change feed: %w", dp.d.Upstream, err)
			}
			add(cs.Rows)
		}
	}
	out := make([]int64, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	slices.Sort(out)
	return out, nil
}

// windowRange is the predicate on window.start covering the downstream windows wins.
func (dp *derivePlan) windowRange(wins []int64) sqlexpr.Expr {
	lo, hi := wins[0], wins[len(wins)-1]+dp.size-1
	return sqlexpr.And(sqlexpr.Ge(gold.ColWindow+".start", time.UnixMicro(lo).UTC()), sqlexpr.Le(gold.ColWindow+".start", time.UnixMicro(hi).UTC()))
}
