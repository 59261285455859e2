package late

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/medallion-lake/medallion/join"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// paramWatermark is the commitInfo operation parameter where a join merge records the
// eviction watermark it judged match windows with: the next run's W_prev.
const paramWatermark = "joinWatermarkMs"

// maxWalkBack bounds how many commits of the joined table a merge reads back to find the
// previous merge's watermark; past it every earlier quarantined row counts as pending, which
// costs reads and changes nothing.
const maxWalkBack = 1000

// sideCols names one side's columns on each table: silver (its own names) and the joined
// table and quarantine (the joined names), with the event time and the join keys.
type sideCols struct {
	silver    *txlog.StructType
	joined    []string // joined name of silver field i
	time      string   // silver name
	joinedT   string
	keys      []string // silver names
	joinedKey []string
}

// merger is one attempt of a join's merge-late: the reconciler's plug-in for a joined table
// (outputKind[*joinScope]).
type merger struct {
	opts *Options
	p    *joinPlan
	st   streamState
	in   joinInputs
	cols [2]sideCols
	snap [2]*txlog.Snapshot // silver as the join read it (nil: nothing)
	tab  [2]*table.Table
	rep  *JoinMergeReport
	// d is the joined table and its quarantine (find reads them); touched collects the
	// event times (either side's) of the joined rows reconciled.
	d       *delta
	touched *span
}

// joinScope is what a join merge finds affected: the candidates of each side (by value) and
// the batch join's rows that hold them.
type joinScope struct {
	X    [2]map[string]*cand
	want *wantRows
}

// cand is a row whose joined-table rows the merge reconciles, identified by its value.
type cand struct {
	side    join.Side
	t       int64
	key     string
	keyNull bool
	enc     string
}

// sideRow is one silver row read into memory.
type sideRow struct {
	b       *pq.Batch
	i       int
	t       int64
	key     string
	keyNull bool
	enc     string
}

// sideIndex is the silver rows of one side read for a merge: by join key, and how many
// copies of each value (identical rows give identical output rows, spec §5.3).
type sideIndex struct {
	byKey map[string][]*sideRow
	count map[string]int
}

// span is an inclusive range of times (µs): event times, or window starts (tagPlan).
type span struct{ lo, hi int64 }

// mergeJoinOnce is one attempt of MergeLateJoin. It returns the range of event times (either
// side's) of the joined rows it reconciled, empty when none.
func mergeJoinOnce(ctx context.Context, opts *Options, p *joinPlan, st streamState, in joinInputs, rep *JoinMergeReport) (span, error) {
	touched := span{lo: math.MaxInt64, hi: math.MinInt64}
	err := reconcile(ctx, &merger{opts: opts, p: p, st: st, in: in, rep: rep, touched: &touched})
	return touched, err
}

// find opens the joined table and its quarantine and finds the candidates: the quarantined
// rows of the versions not merged yet, the earlier ones not settled at the last merge's
// watermark, and the rows they pair with; and what the batch join makes of them.
func (m *merger) find(ctx context.Context) (*joinScope, bool, error) {
	j, rep, st := m.p.j, m.rep, m.st
	d, state, err := openDelta(ctx, m.opts, st, deltaTables{out: j.Table, quarantine: j.Quarantine,
		outWhat: "join " + j.Name + ": joined table", qWhat: "join " + j.Name + ": quarantine", checkWrap: "join " + j.Name,
		guard: func(which string, snap *txlog.Snapshot) error {
			if v, ok := snap.TxnVersion(st.queryID); ok && v > st.batch {
				return fmt.Errorf("%w: join %s: the %s holds batch %d, the checkpoint commits up to %d", ErrJoinUncommitted, j.Name, which, v, st.batch)
			}
			return nil
		}})
	m.d, rep.FromVersion = d, d.from
	switch {
	case err != nil:
		return nil, false, err
	case state == deltaNoOutput:
		rep.Note = "the joined table does not exist yet"
		return nil, false, nil
	case state == deltaNoQuarantine:
		rep.ToVersion = rep.FromVersion
		rep.Note = "no late rows yet"
		return nil, false, nil
	}
	rep.ToVersion = d.to
	if err := m.resolve(ctx, d.outSnap, d.qSnap); err != nil {
		return nil, false, err
	}
	prevW := int64(-1) // no earlier merge: every quarantined row is new
	if rep.FromVersion >= 0 {
		prevW = previousWatermark(ctx, d.out.Bucket(), d.outSnap.Version(), d.appID)
	}
	qc, err := m.readQuarantine(ctx, d.q, d.qSnap, rep, prevW)
	if err != nil {
		return nil, false, err
	}
	if len(qc[0])+len(qc[1]) == 0 && rep.ToVersion <= rep.FromVersion {
		rep.Note = "up to date: no new or pending late rows"
		return nil, false, nil
	}
	sc := &joinScope{}
	if sc.X, err = m.candidates(ctx, qc); err != nil {
		return nil, false, err
	}
	return sc, true, nil
}

// candidates are every row whose joined rows can be wrong: the late rows qc and the rows
// they pair with.
func (m *merger) candidates(ctx context.Context, qc [2]map[string]*cand) ([2]map[string]*cand, error) {
	X := [2]map[string]*cand{{}, {}}
	var spans [2][]span
	keys := [2]map[string]bool{{}, {}}
	for s := range qc {
		for _, c := range qc[s] {
			X[s][c.enc] = c
			m.want(c, &spans, keys)
		}
	}
	idx, err := m.readSides(ctx, spans, keys)
	if err != nil {
		return X, err
	}
	for s := range qc {
		o := 1 - join.Side(s)
		for _, c := range qc[s] {
			for _, r := range m.partners(idx[o], c) {
				if X[o][r.enc] == nil {
					X[o][r.enc] = &cand{side: o, t: r.t, key: r.key, keyNull: r.keyNull, enc: r.enc}
				}
			}
		}
	}
	return X, nil
}

// recompute reads every candidate's partners and copies from silver, computes the batch
// join's rows that hold a candidate, and rewrites the joined table's rows that do where they
// differ (see rewriteJoined).
func (m *merger) recompute(ctx context.Context, sc *joinScope) (*rewrite, error) {
	var spans [2][]span
	keys := [2]map[string]bool{{}, {}}
	for s := range sc.X {
		for _, c := range sc.X[s] {
			m.want(c, &spans, keys)
			m.touched.lo, m.touched.hi = min(m.touched.lo, c.t-m.p.reach), max(m.touched.hi, c.t+m.p.reach)
		}
	}
	idx, err := m.readSides(ctx, spans, keys)
	if err != nil {
		return nil, err
	}
	if sc.want, err = m.desired(idx, sc.X); err != nil {
		return nil, err
	}
	return m.rewriteJoined(ctx, sc.X, sc.want)
}

// committed notes the joined table's version written.
func (m *merger) committed(_ context.Context, _ *joinScope, ws writeStats) {
	if !ws.skipped {
		v := ws.Version
		m.rep.Commit = &v
		m.rep.ChangeRows = ws.ChangeRows
	}
}

// resolve reads the silver schemas and checks that the joined table and the quarantine lay
// their columns out as join.Output and join.QuarantineSchema say.
func (m *merger) resolve(ctx context.Context, jsnap, qsnap *txlog.Snapshot) error {
	j := m.p.j
	var schemas [2]*txlog.StructType
	for s, ji := range [2]struct{ path string }{{j.Left.Silver}, {j.Right.Silver}} {
		m.tab[s] = m.opts.open(ji.path)
		snap, err := m.in.silverSnapshot(ctx, m.tab[s], join.Side(s))
		if err != nil {
			return fmt.Errorf("late: join %s: %s silver %s: %w", j.Name, join.Side(s), ji.path, err)
		}
		m.snap[s] = snap
		latest := snap
		if latest == nil {
			if latest, err = m.tab[s].Log().Snapshot(ctx); err != nil {
				return fmt.Errorf("late: join %s: %s silver %s: %w", j.Name, join.Side(s), ji.path, err)
			}
		}
		if schemas[s], err = latest.Schema(); err != nil {
			return fmt.Errorf("late: join %s: %s silver %s: %w", j.Name, join.Side(s), ji.path, err)
		}
	}
	oc, err := join.Output(m.p.typ, schemas[0], schemas[1], j.Right.Source)
	if err != nil {
		return fmt.Errorf("late: join %s: %w", j.Name, err)
	}
	for s := range m.cols {
		c := &m.cols[s]
		c.silver = schemas[s]
		for i, f := range schemas[s].Fields {
			name := f.Name
			if s == 1 {
				name = oc.RightNames[i]
			}
			c.joined = append(c.joined, name)
		}
	}
	m.cols[0].time, m.cols[1].time = j.Left.EventTime, j.Right.EventTime
	for _, k := range j.On {
		m.cols[0].keys = append(m.cols[0].keys, k.Left)
		m.cols[1].keys = append(m.cols[1].keys, k.Right)
	}
	for s := range m.cols {
		c := &m.cols[s]
		name := func(n string) (string, error) {
			i := c.silver.FieldIndex(n)
			if i < 0 {
				return "", fmt.Errorf("late: join %s: column %q is not in the %s silver table", j.Name, n, join.Side(s))
			}
			return c.joined[i], nil
		}
		if c.joinedT, err = name(c.time); err != nil {
			return err
		}
		for _, k := range c.keys {
			n, err := name(k)
			if err != nil {
				return err
			}
			c.joinedKey = append(c.joinedKey, n)
		}
	}
	js, err := jsnap.Schema()
	if err != nil {
		return fmt.Errorf("late: join %s: joined table: %w", j.Name, err)
	}
	if len(js.Fields) < len(oc.Schema.Fields) {
		return fmt.Errorf("late: join %s: the joined table %s has %d columns, the join's output %d", j.Name, j.Table, len(js.Fields), len(oc.Schema.Fields))
	}
	for i, f := range oc.Schema.Fields {
		if js.Fields[i].Name != f.Name {
			return fmt.Errorf("late: join %s: joined table %s column %d is %q, want %q", j.Name, j.Table, i, js.Fields[i].Name, f.Name)
		}
	}
	qs, err := qsnap.Schema()
	if err != nil {
		return fmt.Errorf("late: join %s: quarantine: %w", j.Name, err)
	}
	need := append([]string{join.ColSide}, m.cols[0].joined...)
	for _, n := range append(need, m.cols[1].joined...) {
		if qs.Field(n) == nil {
			return fmt.Errorf("late: join %s: quarantine %s has no column %q", j.Name, j.Quarantine, n)
		}
	}
	return nil
}

// previousWatermark finds the watermark the last merge of appID recorded, reading the joined
// table's commits back from version v; -1 when it is not found (every earlier quarantined row
// then counts as pending).
func previousWatermark(ctx context.Context, b objstore.Bucket, v int64, appID string) int64 {
	for k := v; k >= 0 && v-k < maxWalkBack; k-- {
		actions, err := txlog.ReadActions(ctx, b, k)
		if err != nil {
			return -1 // cleaned up (or unreadable): fall back to re-merging every earlier row
		}
		for _, a := range actions {
			ci := a.CommitInfo
			if ci == nil || ci.OperationParameters == nil {
				continue
			}
			var id string
			var w int64
			if json.Unmarshal(ci.OperationParameters["appId"], &id) != nil || id != appID {
				continue
			}
			if raw, ok := ci.OperationParameters[paramWatermark]; ok && json.Unmarshal(raw, &w) == nil {
				return w
			}
		}
	}
	return -1
}

// encoder encodes a side's key and whole row from a batch, with the names it has there.
type encoder struct {
	t    *pq.Column
	keys []*pq.Column
	cols []*pq.Column
}

func newEncoder(b *pq.Batch, timeName string, keys, cols []string) (*encoder, error) {
	e := &encoder{t: b.Column(timeName)}
	if e.t == nil {
		return nil, fmt.Errorf("column %q missing", timeName)
	}
	for _, k := range keys {
		c := b.Column(k)
		if c == nil {
			return nil, fmt.Errorf("column %q missing", k)
		}
		e.keys = append(e.keys, c)
	}
	for _, n := range cols {
		c := b.Column(n)
		if c == nil {
			return nil, fmt.Errorf("column %q missing", n)
		}
		e.cols = append(e.cols, c)
	}
	return e, nil
}

// row encodes row i: its key (and whether a part is null) and the whole row. Two rows are
// the same value exactly when their row encodings are equal, so the row is encoded with the
// exact row codec (pq.EncodeRow, the payload codec of the join's state), exact for
// every column kind (decimal, nested, float bits), not with the key encoding, which writes
// decimal and nested values as null and normalizes -0 and NaN: rows differing only there
// would count as one value, and the merge would write one row's values for both. Keys keep
// the key encoding: it is what the join operator matches on.
func (e *encoder) row(i int, kb, rb []byte) (key, enc []byte, keyNull bool) {
	for _, c := range e.keys {
		keyNull = keyNull || c.IsNull(i)
		kb = pq.AppendKeyPart(kb, c, i)
	}
	return kb, pq.EncodeRow(rb, e.cols, i), keyNull
}

// readQuarantine reads the quarantined rows to merge, per side, by value: every row of the
// versions after rep.FromVersion, and the earlier rows not settled at prevW.
func (m *merger) readQuarantine(ctx context.Context, qt *table.Table, qsnap *txlog.Snapshot, rep *JoinMergeReport, prevW int64) ([2]map[string]*cand, error) {
	j := m.p.j
	out := [2]map[string]*cand{{}, {}}
	var fresh []*txlog.Add
	if rep.ToVersion > rep.FromVersion {
		var err error
		if fresh, err = addedFiles(ctx, qt.Bucket(), rep.FromVersion+1, rep.ToVersion); errors.Is(err, errCommitCleanedUp) {
			return out, fmt.Errorf("late: join %s quarantine: %w: run replay over its range", j.Name, err)
		} else if err != nil {
			return out, fmt.Errorf("late: join %s quarantine: %w", j.Name, err)
		}
	}
	isFresh := map[string]bool{}
	for _, a := range fresh {
		isFresh[a.Path] = true
	}
	var old []*txlog.Add
	if prevW >= 0 || rep.FromVersion >= 0 {
		for _, f := range qsnap.Files() {
			if !isFresh[f.Path] {
				old = append(old, f)
			}
		}
	}
	cols := append([]string{join.ColSide}, m.cols[0].joined...)
	cols = dedupe(append(cols, m.cols[1].joined...))
	read := func(files []*txlog.Add, filter sqlexpr.Expr, pending bool) error {
		fs, err := qt.FileScan(qsnap, cols, filter)
		if err != nil {
			return fmt.Errorf("late: join %s quarantine: %w", j.Name, err)
		}
		var kb, rb []byte
		var enc [2]*encoder
		for b, err := range fs.Read(ctx, fs.Files(files)) {
			if err != nil {
				return fmt.Errorf("late: join %s: read quarantine: %w", j.Name, err)
			}
			for s := range enc {
				c := &m.cols[s]
				if enc[s], err = newEncoder(b, c.joinedT, c.joinedKey, c.joined); err != nil {
					return fmt.Errorf("late: join %s quarantine: %w", j.Name, err)
				}
			}
			sc := b.Column(join.ColSide)
			for i := range b.Len() {
				var s join.Side
				switch {
				case sc.IsNull(i):
					return fmt.Errorf("late: join %s: quarantine %s: a row without %s", j.Name, j.Quarantine, join.ColSide)
				case sc.StringAt(i) == "left":
					s = join.Left
				case sc.StringAt(i) == "right":
					s = join.Right
				default:
					return fmt.Errorf("late: join %s: quarantine %s: %s %q (want left or right)", j.Name, j.Quarantine, join.ColSide, sc.StringAt(i))
				}
				e := enc[s]
				if e.t.IsNull(i) {
					return fmt.Errorf("late: join %s: quarantine %s: a %s row without %s", j.Name, j.Quarantine, s, m.cols[s].joinedT)
				}
				t := e.t.Int64[i]
				if pending && m.p.settled(s, t, prevW) {
					continue
				}
				var kn bool
				kb, rb, kn = e.row(i, kb[:0], rb[:0])
				if out[s][string(rb)] == nil {
					out[s][string(rb)] = &cand{side: s, t: t, key: string(kb), keyNull: kn, enc: string(rb)}
				}
				rep.LateRows++
				if pending {
					rep.PendingRows++
				}
			}
		}
		return nil
	}
	if err := read(fresh, nil, false); err != nil {
		return out, err
	}
	if len(old) > 0 {
		// Only rows recent enough to be unsettled at prevW can be pending: skip the files whose
		// event times are all older. Every bound settled tests lies above prevW minus twice
		// the condition's width and the widest window of the join's aggregations.
		w := max(prevW, 0) * 1000
		width := abs(j.Lower.Microseconds()) + abs(j.Upper.Microseconds())
		from := time.UnixMicro(max(w-2*width-m.p.goldHorizon-2_000_000, -62135596800000000)).UTC()
		filter := sqlexpr.Or(sqlexpr.Ge(m.cols[0].joinedT, from), sqlexpr.Ge(m.cols[1].joinedT, from))
		if prevW < 0 {
			filter = nil
		}
		if err := read(old, filter, true); err != nil {
			return out, err
		}
	}
	return out, nil
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// want notes what a candidate needs read: its own copies on its side, its partners on the
// other (by key, within its match range).
func (m *merger) want(c *cand, spans *[2][]span, keys [2]map[string]bool) {
	spans[c.side] = append(spans[c.side], span{c.t, c.t})
	keys[c.side][c.key] = true
	if c.keyNull {
		return
	}
	if lo, hi, ok := m.p.spec.MatchRange(c.side, c.t); ok {
		o := 1 - c.side
		spans[o] = append(spans[o], span{lo, hi})
		keys[o][c.key] = true
	}
}

// partners are the rows of the other side's index that c pairs with.
func (m *merger) partners(idx *sideIndex, c *cand) []*sideRow {
	if c.keyNull || idx == nil {
		return nil
	}
	var out []*sideRow
	for _, r := range idx.byKey[c.key] {
		if r.keyNull {
			continue
		}
		lt, rt := c.t, r.t
		if c.side == join.Right {
			lt, rt = r.t, c.t
		}
		if m.p.matches(lt, rt) {
			out = append(out, r)
		}
	}
	return out
}

func (p *joinPlan) matches(lt, rt int64) bool {
	for _, b := range p.spec.Condition {
		v := lt + b.Offset
		var ok bool
		switch b.Op {
		case join.LT:
			ok = rt < v
		case join.LE:
			ok = rt <= v
		case join.GT:
			ok = rt > v
		case join.GE:
			ok = rt >= v
		}
		if !ok {
			return false
		}
	}
	return true
}

// maxSpans bounds the ranges of one silver read: nearby ranges merge (reading a few more
// rows) so that the data-skipping filter stays small.
const maxSpans = 64

// coalesce sorts and merges the spans, then merges the closest neighbours down to maxSpans.
func coalesce(in []span) []span {
	slices.SortFunc(in, func(a, b span) int {
		if a.lo != b.lo {
			if a.lo < b.lo {
				return -1
			}
			return 1
		}
		return 0
	})
	var out []span
	for _, s := range in {
		if n := len(out); n > 0 && s.lo <= out[n-1].hi {
			out[n-1].hi = max(out[n-1].hi, s.hi)
			continue
		}
		out = append(out, s)
	}
	for len(out) > maxSpans {
		best := 1
		for k := 2; k < len(out); k++ {
			if out[k].lo-out[k-1].hi < out[best].lo-out[best-1].hi {
				best = k
			}
		}
		out[best-1].hi = max(out[best-1].hi, out[best].hi)
		out = slices.Delete(out, best, best+1)
	}
	return out
}

// readSides reads each side's silver rows of the keys within the spans (data skipping on the
// event time: only files whose range meets a span are opened).
func (m *merger) readSides(ctx context.Context, spans [2][]span, keys [2]map[string]bool) ([2]*sideIndex, error) {
	var out [2]*sideIndex
	for s := range out {
		idx := &sideIndex{byKey: map[string][]*sideRow{}, count: map[string]int{}}
		out[s] = idx
		if m.snap[s] == nil || len(spans[s]) == 0 {
			continue
		}
		c := &m.cols[s]
		var ors []sqlexpr.Expr
		for _, sp := range coalesce(spans[s]) {
			var and []sqlexpr.Expr
			if sp.lo != math.MinInt64 {
				and = append(and, sqlexpr.Ge(c.time, time.UnixMicro(sp.lo).UTC()))
			}
			if sp.hi != math.MaxInt64 {
				and = append(and, sqlexpr.Le(c.time, time.UnixMicro(sp.hi).UTC()))
			}
			if len(and) == 0 {
				ors = nil
				break
			}
			ors = append(ors, sqlexpr.And(and...))
		}
		var filter sqlexpr.Expr
		if len(ors) > 0 {
			filter = sqlexpr.Or(ors...)
		}
		names := make([]string, len(c.silver.Fields))
		for i, f := range c.silver.Fields {
			names[i] = f.Name
		}
		fs, err := m.tab[s].FileScan(m.snap[s], names, filter)
		if err != nil {
			return out, fmt.Errorf("late: join %s: %s silver: %w", m.p.j.Name, join.Side(s), err)
		}
		var kb, rb []byte
		files := fs.Files(m.snap[s].Files())
		m.rep.SilverFilesRead += len(files)
		m.rep.SilverFiles += len(m.snap[s].Files())
		for b, err := range fs.Read(ctx, files) {
			if err != nil {
				return out, fmt.Errorf("late: join %s: read %s silver: %w", m.p.j.Name, join.Side(s), err)
			}
			e, err := newEncoder(b, c.time, c.keys, names)
			if err != nil {
				return out, fmt.Errorf("late: join %s: %s silver: %w", m.p.j.Name, join.Side(s), err)
			}
			for i := range b.Len() {
				if e.t.IsNull(i) {
					continue // silver requires the event time; nothing can match such a row
				}
				var kn bool
				kb, rb, kn = e.row(i, kb[:0], rb[:0])
				if !keys[s][string(kb)] {
					continue
				}
				r := &sideRow{b: b, i: i, t: e.t.Int64[i], key: string(kb), keyNull: kn, enc: string(rb)}
				idx.byKey[r.key] = append(idx.byKey[r.key], r)
				idx.count[r.enc]++
			}
		}
	}
	return out, nil
}

// outRow is one joined row the batch join has, by its two sides' values ("" : null side).
type outRow struct{ l, r string }

// want is the desired multiset of the joined rows touching the candidates, with a silver row
// of each side to write it from.
type wantRows struct {
	count map[outRow]int
	rows  map[outRow][2]*sideRow
}

// add wants n more copies of row k, written from silver rows l and r (nil: a null side).
func (w *wantRows) add(k outRow, n int, l, r *sideRow) {
	w.count[k] += n
	w.rows[k] = [2]*sideRow{l, r}
}

// desired computes the batch join's rows that touch a candidate (spec §9.1): every pair of a
// candidate with its partners, each pair once, as many times as the product of the two
// values' copies; a null-extended row for an unmatched candidate of a preserved side whose
// match window is closed; for left_semi each matched left candidate once per copy.
func (m *merger) desired(idx [2]*sideIndex, X [2]map[string]*cand) (*wantRows, error) {
	w := &wantRows{count: map[outRow]int{}, rows: map[outRow][2]*sideRow{}}
	wm := m.st.evictMs
	self := func(c *cand) (*sideRow, int, error) {
		n := idx[c.side].count[c.enc]
		for _, r := range idx[c.side].byKey[c.key] {
			if r.enc == c.enc {
				return r, n, nil
			}
		}
		return nil, 0, fmt.Errorf("late: join %s: a %s row at %s of the quarantine is not in the %s silver table as the join read it",
			m.p.j.Name, c.side, time.UnixMicro(c.t).UTC().Format(time.RFC3339Nano), c.side)
	}
	for _, c := range X[join.Left] {
		l, n, err := self(c)
		if err != nil {
			return nil, err
		}
		ps := m.partners(idx[join.Right], c)
		if m.p.typ == join.LeftSemi {
			if len(ps) > 0 {
				w.add(outRow{l: c.enc}, n, l, nil)
			}
			continue
		}
		for _, r := range ps {
			w.add(outRow{l: c.enc, r: r.enc}, n, l, r)
		}
		if len(ps) == 0 && m.p.nullRow(join.Left, c.t, wm) {
			w.add(outRow{l: c.enc}, n, l, nil)
		}
	}
	if m.p.typ == join.LeftSemi {
		return w, nil
	}
	for _, c := range X[join.Right] {
		r, n, err := self(c)
		if err != nil {
			return nil, err
		}
		ps := m.partners(idx[join.Left], c)
		for _, l := range ps {
			if X[join.Left][l.enc] != nil {
				continue // counted from the left candidate
			}
			w.add(outRow{l: l.enc, r: c.enc}, n, l, r)
		}
		if len(ps) == 0 && m.p.nullRow(join.Right, c.t, wm) {
			w.add(outRow{r: c.enc}, n, nil, r)
		}
	}
	return w, nil
}

// rewriteJoined reads the joined table's rows touching a candidate, and when they differ
// from the batch join's, replaces them in one commit (copy-on-write of the files holding
// them) with txn(appID, quarantine version) when new quarantine versions were merged. The
// commit records the watermark the merge judged with, for the next run.
func (m *merger) rewriteJoined(ctx context.Context, X [2]map[string]*cand, want *wantRows) (*rewrite, error) {
	j, rep, jt, jsnap := m.p.j, m.rep, m.d.out, m.d.outSnap
	js, err := jsnap.Schema()
	if err != nil {
		return nil, fmt.Errorf("late: join %s: joined table: %w", j.Name, err)
	}
	what := fmt.Sprintf("join %s (table %s)", j.Name, j.Table)
	pred, files, err := prunedFiles(what, jsnap, js, m.prune(X))
	if err != nil {
		return nil, err
	}
	current, touched, err := m.current(ctx, jt, jsnap, files, X)
	if err != nil {
		return nil, err
	}
	same := m.difference(rep, current, want)
	newVersions := rep.ToVersion > rep.FromVersion
	if same && !newVersions {
		rep.Note = "up to date: the joined table already holds the batch join of the late rows"
		return nil, nil
	}
	rw := &rewrite{what: what, t: jt, snap: jsnap, schema: js, read: pred,
		rows: func(b *pq.Batch) (rowFunc, error) {
			cls, err := m.touching(b, X)
			if err != nil {
				return nil, err
			}
			return func(_ *pq.Batch, i int) (rowAction, error) {
				if _, hit := cls(i); hit {
					return dropRow, nil
				}
				return keepRow, nil
			}, nil
		},
		extra: func(out *pq.Batch, _ func() error) error {
			if !same {
				m.appendWanted(out, want)
			}
			return nil
		},
		changes: &changeKeys{of: func(b *pq.Batch) (func(dst [][]byte, i int) [][]byte, error) {
			// A null-extended row is keyed by its preserved side and a pair by each side:
			// the pair that replaces a null-extended row is its update.
			cls, err := m.touching(b, X)
			if err != nil {
				return nil, err
			}
			return func(dst [][]byte, i int) [][]byte {
				k, _ := cls(i)
				if k.l != "" {
					dst = append(dst, append([]byte{'L'}, k.l...))
				}
				if k.r != "" {
					dst = append(dst, append([]byte{'R'}, k.r...))
				}
				return dst
			}, nil
		}},
		op: func(res table.RewriteResult, _ *writeStats) txlog.Operation {
			return txlog.Operation{Name: "MERGE", Parameters: map[string]any{
				"appId": m.d.appID, paramWatermark: m.st.evictMs, "predicate": pred.String()},
				Metrics: map[string]int64{"numTargetRowsInserted": rep.PairsAdded + rep.NullRowsAdded + rep.SemiRowsAdded,
					"numTargetRowsDeleted": rep.NullRowsReplaced + rep.PairsRemoved + rep.SemiRowsRemoved,
					"numTargetFilesAdded":  int64(len(res.Added)), "numTargetFilesRemoved": int64(len(res.Removed))}}
		},
	}
	if newVersions {
		rw.txn = m.d.txn()
	}
	if !same {
		for _, f := range files {
			if touched[f.Path] {
				rw.candidates = append(rw.candidates, f)
			}
		}
	}
	return rw, nil
}

// prune bounds the joined rows that can hold a candidate: each side's candidates' event
// times (a left_semi table holds only left rows).
func (m *merger) prune(X [2]map[string]*cand) sqlexpr.Expr {
	var ors []sqlexpr.Expr
	for s := range X {
		if len(X[s]) == 0 || (m.p.typ == join.LeftSemi && s == 1) {
			continue
		}
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		for _, c := range X[s] {
			lo, hi = min(lo, c.t), max(hi, c.t)
		}
		ors = append(ors, sqlexpr.And(sqlexpr.Ge(m.cols[s].joinedT, time.UnixMicro(lo).UTC()), sqlexpr.Le(m.cols[s].joinedT, time.UnixMicro(hi).UTC())))
	}
	return sqlexpr.Or(ors...) // no candidate: read nothing
}

// touching classifies the rows of a joined batch: the row's two sides, and whether it
// touches a candidate.
func (m *merger) touching(b *pq.Batch, X [2]map[string]*cand) (func(i int) (outRow, bool), error) {
	var enc [2]*encoder
	for s := range enc {
		if m.p.typ == join.LeftSemi && s == 1 {
			break
		}
		c := &m.cols[s]
		var err error
		if enc[s], err = newEncoder(b, c.joinedT, c.joinedKey, c.joined); err != nil {
			return nil, fmt.Errorf("late: join %s: joined table: %w", m.p.j.Name, err)
		}
	}
	var buf [2][]byte
	return func(i int) (outRow, bool) {
		var k [2]string
		hit := false
		for s, e := range enc {
			if e == nil || e.t.IsNull(i) {
				continue
			}
			_, buf[s], _ = e.row(i, nil, buf[s][:0])
			k[s] = string(buf[s])
			hit = hit || X[s][k[s]] != nil
		}
		return outRow{l: k[0], r: k[1]}, hit
	}, nil
}

// current counts the joined table's rows that touch a candidate, in files, and notes the
// files holding them.
func (m *merger) current(ctx context.Context, jt *table.Table, jsnap *txlog.Snapshot, files []*txlog.Add, X [2]map[string]*cand) (map[outRow]int, map[string]bool, error) {
	j := m.p.j
	fs, err := jt.FileScan(jsnap, nil, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("late: join %s: joined table: %w", j.Name, err)
	}
	current := map[outRow]int{}
	touched := map[string]bool{}
	for _, f := range files {
		for b, err := range fs.Read(ctx, []*txlog.Add{f}) {
			if err != nil {
				return nil, nil, fmt.Errorf("late: join %s: read joined table: %w", j.Name, err)
			}
			cls, err := m.touching(b, X)
			if err != nil {
				return nil, nil, err
			}
			for i := range b.Len() {
				if k, hit := cls(i); hit {
					current[k]++
					touched[f.Path] = true
				}
			}
		}
	}
	return current, touched, nil
}

// difference counts into rep what turns the current rows into the wanted ones, and reports
// whether they are the same multiset.
func (m *merger) difference(rep *JoinMergeReport, current map[outRow]int, want *wantRows) bool {
	same := len(current) == len(want.count)
	for k, n := range want.count {
		d := n - current[k]
		same = same && d == 0
		m.count(rep, k, d)
	}
	for k, n := range current {
		if _, ok := want.count[k]; !ok {
			m.count(rep, k, -n)
		}
	}
	return same
}

// appendWanted appends the wanted rows to out, in a fixed order (by the two sides' values),
// each as many times as it is wanted: a side's silver row into its columns, nulls for a
// missing side and the joined table's further columns.
func (m *merger) appendWanted(out *pq.Batch, want *wantRows) {
	keys := make([]outRow, 0, len(want.count))
	for k := range want.count {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b outRow) int { return cmp.Or(strings.Compare(a.l, b.l), strings.Compare(a.r, b.r)) })
	nl := len(m.cols[0].silver.Fields)
	nr := len(m.cols[1].silver.Fields)
	if m.p.typ == join.LeftSemi {
		nr = 0
	}
	views := [2]*pq.Batch{
		{Schema: m.cols[0].silver, Columns: out.Columns[:nl]},
		{Schema: m.cols[1].silver, Columns: out.Columns[nl : nl+nr]},
	}
	for _, k := range keys {
		rows := want.rows[k]
		for range want.count[k] {
			for s, v := range views {
				if r := rows[s]; r != nil && len(v.Columns) > 0 {
					v.AppendRow(r.b, r.i)
				} else {
					for _, c := range v.Columns {
						c.AppendNull()
					}
				}
			}
			for _, c := range out.Columns[nl+nr:] {
				c.AppendNull()
			}
		}
	}
}

// count adds a difference d (desired minus current copies) of row k to the report.
func (m *merger) count(rep *JoinMergeReport, k outRow, d int) {
	if d == 0 {
		return
	}
	n := int64(d)
	switch {
	case m.p.typ == join.LeftSemi && d > 0:
		rep.SemiRowsAdded += n
	case m.p.typ == join.LeftSemi:
		rep.SemiRowsRemoved -= n
	case k.l != "" && k.r != "" && d > 0:
		rep.PairsAdded += n
	case k.l != "" && k.r != "":
		rep.PairsRemoved -= n
	case d > 0:
		rep.NullRowsAdded += n
	default:
		rep.NullRowsReplaced -= n
	}
}
