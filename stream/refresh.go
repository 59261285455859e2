package stream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// Full refresh of one gold over a source (docs/derived-tables.md, "Refreshing a table"): the
// way out when its definition changes. Below, append mode; in complete mode nothing is late or
// evicted: the eviction step emits every group, the table the stream's next batch would write,
// and the state keeps them all; in update mode the table is every window, from a complete
// mode pass, and the state the open ones, from an update mode pass (refreshPass). For session windows, the eviction at W settles the sessions it writes, as the
// stream's eviction does, so a later on-time row touching one is routed to merge-late. With the stream stopped at a committed batch N (eviction
// watermark W), the refresh feeds every silver row (silver as batch N left it) to a fresh
// aggregation of the config's definition, with no late rows and no eviction, then evicts at
// W. What it emits is the gold table: every window closed by W, over every valid event in it,
// late ones included (invariant E, as after merge-late to quiescence). What stays in the
// operator is exactly the state the stream would hold after batch N had it always run under
// the new definition: every silver row of a window still open at W reached that window in the
// stream (the window was open when the row was judged, the watermark only moves forward).
//
// One commit replaces the gold table (table.Replace: new schema, the new definition in
// PropDefinition, PropRefresh naming the batch and the rebuilt state's file, written under
// the checkpoint before the commit) and records merge-late's txn at the quarantine's latest
// version: the late rows quarantined so far are in silver, so in the rebuilt windows, and must
// not be merged again. The stream, restoring the state of version N+1 (that of batch N), takes
// the aggregation's state from that file instead of the chain of state files written under
// the old definition, and writes a full snapshot with its next batch, so no later restore
// walks back past the refresh. A kill before the commit leaves the table and state as they
// were (the file is an orphan, rewritten alike by the rerun); after it, a rerun rebuilds the
// same table from the same silver.

// PropRefresh is the gold table property a full refresh records (refreshMark, JSON).
const PropRefresh = "medallion.refresh"

// mergeLateApp is late.AppIDPrefix (late imports stream, so it cannot be imported here; a
// test in jobs holds the two equal).
const mergeLateApp = "merge-late:"

// MergeLateApp is mergeLateApp, for that test.
const MergeLateApp = mergeLateApp

// ErrRefreshRefused reports a full refresh that cannot be done exactly now (a batch in
// flight, a running stream, a join that has not run).
var ErrRefreshRefused = errors.New("stream: full refresh refused")

// refreshMark is PropRefresh's value: the state of version Batch+1 of aggregation Gold in the
// checkpoint of query QueryID is the object State under the checkpoint.
type refreshMark struct {
	QueryID string `json:"queryId"`
	Gold    string `json:"gold"`
	Batch   int64  `json:"batch"`
	State   string `json:"state"`
}

// RefreshReport is what RefreshGold did.
type RefreshReport struct {
	Name string `json:"name"`
	// Batch is the query's last committed batch the refresh rebuilt from (-1: none), and
	// WatermarkMs its eviction watermark: windows ending at or before it are in the table.
	Batch       int64 `json:"batch"`
	WatermarkMs int64 `json:"watermarkMs"`
	SilverRows  int64 `json:"silverRows"`
	RowsWritten int64 `json:"rowsWritten"`
	// OpenGroups are the (window, key) groups still open, handed to the stream as its state.
	OpenGroups    int64  `json:"openGroups"`
	SchemaChanged bool   `json:"schemaChanged,omitempty"`
	Commit        *int64 `json:"commit,omitempty"`
	Note          string `json:"note,omitempty"`
}

// refreshLowMs is a watermark below every event time (ms; ×1000 stays in range).
const refreshLowMs int64 = math.MinInt64 / 4000

// RefreshGold rebuilds gold aggregation name of opts.Query from silver (see above). The
// stream of the query must be stopped: a batch in flight, or silver ahead of the last commit,
// is refused with ErrRefreshRefused.
func RefreshGold(ctx context.Context, opts Options, name string) (RefreshReport, error) {
	rn, err := New(opts)
	if err != nil {
		return RefreshReport{Name: name, Batch: -1}, err
	}
	return refreshGold(ctx, rn.q, name)
}

// refreshable is a query (sourceQuery) or a join (joinQuery) as a full refresh of one of its
// golds sees it: the steps of refreshGold that differ between the two.
type refreshable interface {
	// refreshIdentity names it in errors ("query X", "join X") and gives its aggregations, its
	// checkpoint and that checkpoint's prefix.
	refreshIdentity() (owner string, golds []spec.Aggregation, ckpt *checkpoint.Dir, prefix string)
	// refreshWatermarkMs is the eviction watermark of the batch whose offsets are e.
	refreshWatermarkMs(e *checkpoint.Offsets) int64
	// refreshPlan plans it and returns gold gi's input (snap not read yet) with the name its
	// snapshot's errors give it, its aggregation plan and the target of the commit (id not set).
	refreshPlan(ctx context.Context, gi int) (in refreshInput, snapWhat string, ap *aggPlan, tgt refreshTarget, err error)
}

// refreshGold rebuilds gold name of r from its input table (silver, or a join's joined table):
// RefreshGold and RefreshJoinGold once their query is built.
func refreshGold(ctx context.Context, r refreshable, name string) (RefreshReport, error) {
	rep := RefreshReport{Name: name, Batch: -1}
	owner, golds, ckpt, prefix := r.refreshIdentity()
	gi, err := refreshGoldIndex(golds, owner, name)
	if err != nil {
		return rep, err
	}
	id, h, err := refreshHead(ctx, ckpt, owner, name)
	if err != nil {
		return rep, err
	}
	if id != "" {
		rep.Batch = h.Last
		if h.Entry != nil {
			rep.WatermarkMs = r.refreshWatermarkMs(h.Entry)
		}
	}
	in, snapWhat, ap, tgt, err := r.refreshPlan(ctx, gi)
	if err != nil {
		return rep, err
	}
	if in.snap, err = refreshInputSnap(ctx, in.t, snapWhat, name, refreshOwner{owner, in.path, prefix, id, &h}); err != nil {
		return rep, err
	}
	state, out, err := refreshPass(ctx, in, ap, &rep)
	if err != nil {
		return rep, err
	}
	tgt.id, tgt.g = id, &golds[gi]
	return refreshCommit(ctx, tgt, state, out, rep)
}

func (r *sourceQuery) refreshIdentity() (string, []spec.Aggregation, *checkpoint.Dir, string) {
	return "query " + r.q.Name, r.q.Gold, r.e.ckpt, r.q.Tables.Checkpoint
}

func (r *sourceQuery) refreshWatermarkMs(e *checkpoint.Offsets) int64 { return e.BatchWatermarkMs }

func (r *sourceQuery) refreshPlan(ctx context.Context, gi int) (refreshInput, string, *aggPlan, refreshTarget, error) {
	p, err := r.newPlan(ctx)
	if err != nil {
		return refreshInput{}, "", nil, refreshTarget{}, err
	}
	ap := p.aggs[gi]
	in := refreshInput{t: r.t.silver, path: r.q.Tables.Silver, what: r.q.Tables.Silver, schema: p.silver, kinds: p.kinds, tc: p.evCol}
	return in, "silver", ap, refreshTarget{ckpt: r.e.ckpt, eventTime: r.q.Rules.EventTime, gold: r.t.golds[gi], quar: r.t.quars[gi], ap: ap}, nil
}

// refreshHead reads the query id and the head of checkpoint d of query (or join) owner for a
// refresh of gold name: id "" when the query has never run; a batch not committed is refused.
func refreshHead(ctx context.Context, d *checkpoint.Dir, owner, name string) (string, checkpoint.Head, error) {
	var h checkpoint.Head
	id, err := d.ReadQueryID(ctx)
	if errors.Is(err, checkpoint.ErrNoQuery) {
		return "", h, nil
	}
	if err != nil {
		return "", h, fmt.Errorf("stream: refresh %s: %w", name, err)
	}
	if h, err = d.ReadHead(ctx); err != nil {
		return "", h, fmt.Errorf("stream: refresh %s: %w", name, err)
	}
	if h.Last >= 0 && h.Commit == nil {
		return "", h, fmt.Errorf("%w: batch %d of %s is not committed (the stream is running, or was stopped mid-batch): "+
			"stop the stream, run `medallion run stream --trigger once` to finish the batch, then refresh %s", ErrRefreshRefused, h.Last, owner, name)
	}
	return id, h, nil
}

// refreshInput is the table a refresh reads: silver, or a join's joined table (at path; what
// names it; snap nil: it does not exist yet), with its schema, column kinds and the time column.
type refreshInput struct {
	t      *table.Table
	path   string
	what   string
	snap   *txlog.Snapshot
	schema *txlog.StructType
	kinds  []pq.Kind
	tc     int
}

// refreshPass feeds every row of in to a fresh aggregation of ap, evicts at the watermark of
// the batch the refresh rebuilds from (rep.Batch; before the first: nothing), and returns
// the state left and the table's rows: the windows evicted (append), every group (complete).
// For update mode the table also holds the open windows, which the eviction does not emit: a
// second pass of the same aggregation in complete mode gives every group for the table, the
// update mode one the state.
func refreshPass(ctx context.Context, in refreshInput, ap *aggPlan, rep *RefreshReport) ([]byte, *pq.Batch, error) {
	evict := refreshLowMs
	if rep.Batch >= 0 {
		evict = rep.WatermarkMs
	}
	run := func(ap *aggPlan, out *pq.Batch) ([]byte, error) {
		op, err := gold.NewAggregation(ap.agg)
		if err != nil {
			return nil, fmt.Errorf("stream: gold %s: %w", rep.Name, err)
		}
		a := &aggRun{ap: ap, op: op, ab: &aggBuffers{}, schema: in.schema, kinds: in.kinds}
		if in.snap != nil {
			if rep.SilverRows, err = feedSilver(ctx, in.t, in.what, in.snap, in.schema, in.tc, a, out); err != nil {
				return nil, fmt.Errorf("stream: refresh %s: %w", rep.Name, err)
			}
		}
		return refreshEvict(a, out, evict, rep)
	}
	out, err := pq.NewBatch(ap.schema)
	if err != nil {
		return nil, nil, fmt.Errorf("stream: gold %s: %w", rep.Name, err)
	}
	if !ap.update {
		state, err := run(ap, out)
		return state, out, err
	}
	all := *ap
	all.agg.Mode, all.update, all.complete = gold.Complete, false, true
	if _, err := run(&all, out); err != nil {
		return nil, nil, err
	}
	groups := int64(out.Len())
	scratch, err := pq.NewBatch(ap.schema)
	if err != nil {
		return nil, nil, fmt.Errorf("stream: gold %s: %w", rep.Name, err)
	}
	state, err := run(ap, scratch)
	if err == nil && scratch.Len() > 0 {
		err = fmt.Errorf("stream: refresh %s: an update mode eviction emitted %d rows", rep.Name, scratch.Len())
	}
	if err == nil && rep.OpenGroups > groups {
		err = fmt.Errorf("stream: refresh %s: %d groups open, more than the %d of the complete pass", rep.Name, rep.OpenGroups, groups)
	}
	return state, out, err
}

// refreshEvict evicts the windows closed by evict from a's aggregation into out, and returns
// the state of the open ones.
func refreshEvict(a *aggRun, out *pq.Batch, evict int64, rep *RefreshReport) ([]byte, error) {
	a.rows, a.sel, a.selEvt = &silver.Rows{}, nil, nil
	in := a.input()
	in.Out = out
	res, err := a.op.ProcessBatch(in, refreshLowMs, evict)
	if err != nil {
		return nil, fmt.Errorf("stream: gold %s: %w", rep.Name, err)
	}
	rep.OpenGroups = res.NumRowsTotal
	state, err := a.op.AppendSnapshot(nil)
	if err != nil {
		return nil, fmt.Errorf("stream: gold %s state: %w", rep.Name, err)
	}
	return state, nil
}

// refreshGoldIndex is the index of gold name among the aggregations of owner ("query X" or
// "join X").
func refreshGoldIndex(golds []spec.Aggregation, owner, name string) (int, error) {
	gi := slices.IndexFunc(golds, func(g spec.Aggregation) bool { return g.Name == name })
	if gi < 0 {
		return -1, fmt.Errorf("stream: %s has no gold %s", owner, name)
	}
	return gi, nil
}

// refreshOwner is the query or join ("query X", "join X") whose input table, at path, a
// refresh reads, with the checkpoint it is checked against: its prefix, query id (""
// before the first run) and head.
type refreshOwner struct {
	owner, path, ckpt, id string
	h                     *checkpoint.Head
}

// refreshInputSnap reads the latest snapshot of a refresh's input table t (what names it in
// errors: silver, or the joined table) for gold name: nil when it does not exist yet.
func refreshInputSnap(ctx context.Context, t *table.Table, what, name string, o refreshOwner) (*txlog.Snapshot, error) {
	snap, err := t.Latest(ctx)
	if errors.Is(err, txlog.ErrTableNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("stream: refresh %s: %s: %w", name, what, err)
	}
	return snap, refreshCheckInput(ctx, o, t.Log(), snap)
}

// refreshCheckInput refuses an input table (silver, or a join's joined table) of o ahead of
// the checkpoint's last commit (a stream running) or behind it (a restored or damaged table,
// or a RESTORE that took it back: log is its log).
func refreshCheckInput(ctx context.Context, o refreshOwner, log *txlog.Log, snap *txlog.Snapshot) error {
	if o.id == "" {
		return nil
	}
	if v, ok := snap.TxnVersion(o.id); ok && v > o.h.Last {
		return fmt.Errorf("%w: %s holds batch %d of %s, past its last commit %d: the stream is running; stop it first",
			ErrRefreshRefused, o.path, v, o.owner, o.h.Last)
	}
	if o.h.Committed != nil {
		if m, ok := o.h.Committed.Tables[o.path]; ok {
			if err := checkpoint.CheckTable(o.path, o.ckpt, o.id, snap, m); err != nil {
				return fmt.Errorf("stream: refresh: %w", err)
			}
			if err := checkpoint.CheckRestored(ctx, o.path, o.ckpt, log, m); err != nil {
				return fmt.Errorf("stream: refresh: %w", err)
			}
		}
	}
	return nil
}

// feedSilver feeds every row of input table t (what: silver, or a joined table; schema) at snap
// whose time column tc is not null to a's aggregation, without late rows or eviction, and
// returns the rows fed.
func feedSilver(ctx context.Context, t *table.Table, what string, snap *txlog.Snapshot, schema *txlog.StructType, tc int, a *aggRun, out *pq.Batch) (int64, error) {
	v := snap.Version()
	var n int64
	var scratch *pq.Batch
	for b, err := range t.Scan(ctx, table.ScanOptions{Version: &v}) {
		if err != nil {
			return n, err
		}
		cols, err := pq.Conform(schema, b)
		if err != nil {
			return n, fmt.Errorf("%s: %w", what, err)
		}
		sb := &pq.Batch{Schema: schema, Columns: cols}
		rows := &silver.Rows{Batches: []*pq.Batch{sb}}
		ev := cols[tc]
		sel, selEvt := make([]int32, 0, sb.Len()), make([]int64, 0, sb.Len())
		for i := range sb.Len() {
			if ev.IsNull(i) {
				// Never in silver (the event time is required); in a joined table, the
				// missing side of a null-extended row, which the stream does not aggregate.
				continue
			}
			rows.Batch, rows.Row = append(rows.Batch, 0), append(rows.Row, int32(i))
			sel, selEvt = append(sel, int32(len(rows.Row)-1)), append(selEvt, ev.Int64[i])
		}
		a.rows, a.sel, a.selEvt = rows, sel, selEvt
		in := a.input()
		in.Out = out
		if a.ap.complete || a.ap.update {
			// Complete mode emits every group each batch, update mode the groups it changed,
			// as the stream does: into a scratch batch; the table's rows come from refreshEvict.
			if scratch == nil {
				if scratch, err = pq.NewBatch(out.Schema); err != nil {
					return n, err
				}
			}
			scratch.Reset()
			in.Out = scratch
		}
		res, err := a.op.ProcessBatch(in, refreshLowMs, refreshLowMs)
		if err != nil {
			return n, err
		}
		if len(res.LateRows) > 0 || (res.NumRowsOutput > 0 && !a.ap.complete && !a.ap.update) {
			return n, fmt.Errorf("a refresh pass dropped or emitted rows (%d late, %d out) before its eviction", len(res.LateRows), res.NumRowsOutput)
		}
		n += int64(len(sel))
	}
	return n, nil
}

// refreshTarget is the gold aggregation a refresh replaces: of a source query or of a join.
type refreshTarget struct {
	ckpt *checkpoint.Dir
	// id is the query's id ("": it has none yet, nothing to hand the stream).
	id         string
	g          *spec.Aggregation
	eventTime  string // the query's event time goldDefinition records ("" for a join's)
	gold, quar *table.Table
	ap         *aggPlan
}

// refreshCommit writes the rebuilt state under the checkpoint, then replaces the gold table
// with out in one commit naming it (PropRefresh).
func refreshCommit(ctx context.Context, t refreshTarget, state []byte, out *pq.Batch, rep RefreshReport) (RefreshReport, error) {
	gt, name := t.gold, t.g.Name
	props := goldDefinition(t.g, t.eventTime).props()
	var txns []table.AppTxn
	if t.id != "" {
		sum := sha256.Sum256(state)
		mark := refreshMark{QueryID: t.id, Gold: name, Batch: rep.Batch, State: fmt.Sprintf(checkpoint.RefreshPrefix+"%s-%d-%s", name, rep.Batch, hex.EncodeToString(sum[:8]))}
		if err := t.ckpt.WriteRefresh(ctx, mark.State, state); err != nil {
			return rep, fmt.Errorf("stream: refresh %s: %w", name, err)
		}
		b, err := json.Marshal(mark)
		if err != nil {
			return rep, err
		}
		props[PropRefresh] = string(b)
		qsnap, err := t.quar.Latest(ctx)
		switch {
		case errors.Is(err, txlog.ErrTableNotFound):
		case err != nil:
			return rep, fmt.Errorf("stream: refresh %s: quarantine: %w", name, err)
		default:
			txns = append(txns, table.AppTxn{AppID: mergeLateApp + t.id, Version: qsnap.Version()})
		}
	}
	snap, err := gt.Latest(ctx)
	if errors.Is(err, txlog.ErrTableNotFound) {
		if _, err := gt.Create(ctx, t.ap.schema, nil, spec.CreateProps(props, t.g.NoChangeDataFeed)); err != nil && !errors.Is(err, table.ErrTableExists) {
			return rep, fmt.Errorf("stream: refresh %s: create %s: %w", name, t.g.Table, err)
		}
		snap, err = gt.Latest(ctx)
	}
	if err != nil {
		return rep, fmt.Errorf("stream: refresh %s: %s: %w", name, t.g.Table, err)
	}
	have, err := snap.Schema()
	if err != nil {
		return rep, err
	}
	a, _ := txlog.MarshalSchema(have)
	b, _ := txlog.MarshalSchema(t.ap.schema)
	rep.SchemaChanged = a != b
	var rows []*pq.Batch
	if out.Len() > 0 {
		rows = []*pq.Batch{out}
	}
	res, err := gt.Replace(ctx, table.Replace{Snapshot: snap, Schema: t.ap.schema, Props: props, Rows: rows, Txns: txns})
	if err != nil {
		return rep, fmt.Errorf("stream: refresh %s: %w", name, err)
	}
	rep.Commit, rep.RowsWritten = &res.Version, res.RowsWritten
	return rep, nil
}

// refreshedState is the state of version v of aggregation ap, written to gold table gt by
// the query of engine e, that a full refresh left (see above): ok false when the gold table
// names none for v.
func refreshedState(ctx context.Context, e *engine, gt *table.Table, ap *aggPlan, v int64) (*gold.Aggregation, bool, error) {
	snap, err := gt.Latest(ctx)
	if errors.Is(err, txlog.ErrTableNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("stream: gold %s: %w", ap.cfg.Name, err)
	}
	raw, ok := snap.Metadata().Configuration[PropRefresh]
	if !ok {
		return nil, false, nil
	}
	var m refreshMark
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, false, fmt.Errorf("stream: gold %s: table property %s: %w", ap.cfg.Name, PropRefresh, err)
	}
	if m.QueryID != e.queryID || m.Gold != ap.cfg.Name || m.Batch < v-1 {
		return nil, false, nil
	}
	if m.Batch > v-1 {
		// A checkpoint rolled back past the refresh: its state files are the old definition's.
		return nil, false, fmt.Errorf("%w: gold %s was refreshed at batch %d, but the checkpoint %s restores batch %d, before it: "+
			"run `medallion run refresh --table %s` again", ErrRefreshRefused, ap.cfg.Name, m.Batch, e.cfg.checkpoint, v-1, ap.cfg.Name)
	}
	b, err := e.ckpt.ReadRefresh(ctx, m.State)
	if err != nil {
		return nil, false, fmt.Errorf("stream: gold %s: the state its refresh left (under %s): %w", ap.cfg.Name, e.cfg.checkpoint, err)
	}
	if sum := sha256.Sum256(b); fmt.Sprintf(checkpoint.RefreshPrefix+"%s-%d-%s", m.Gold, m.Batch, hex.EncodeToString(sum[:8])) != m.State {
		return nil, false, fmt.Errorf("%w: %s under %s does not hold the state its name says", checkpoint.ErrBad, m.State, e.cfg.checkpoint)
	}
	op, err := gold.RestoreAggregation(ap.agg, b)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %s: %v", checkpoint.ErrBad, m.State, err)
	}
	return op, true, nil
}
