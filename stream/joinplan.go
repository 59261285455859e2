package stream

// The join query's plan: its columns resolved in the two silver schemas, its aggregations in
// the joined schema, the tables it writes, and its operators restored from the checkpoint.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/join"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// plan resolves the join against the two silver schemas and restores the operator, the
// watermarks and the aggregations from state version nextBatch. It reports false, without an
// error, while a silver table does not exist yet: it has no schema to plan with. An empty silver
// table is "no rows yet" and a batch runs for the other side's rows, as in Spark, so jobs
// creates a missing input's tables (as init does) before it runs a join.
func (r *joinQuery) plan(ctx context.Context) (bool, error) {
	if r.jp != nil {
		return true, nil
	}
	p, err := r.newPlan(ctx)
	if p == nil || err != nil {
		return false, err
	}
	if err := checkDefinitions(ctx, joinDefinedTables(r.j, r.out, r.golds)); err != nil {
		return false, err
	}
	if err := r.checkOutputColumns(ctx, p); err != nil {
		return false, err
	}
	v := r.e.pos.nextBatch
	sections, err := r.e.stateSections(ctx, v)
	if err != nil {
		return false, err
	}
	var wm *join.Watermarks
	if sections == nil {
		wm, err = join.NewWatermarks(&r.spec, r.delayMs[0], r.delayMs[1])
	} else if s, ok := sections[secJoinWM]; ok {
		wm, err = join.RestoreWatermarks(&r.spec, r.delayMs[0], r.delayMs[1], s)
	} else {
		err = errors.New("no join-wm section")
	}
	if err != nil {
		return false, fmt.Errorf("%w: %s: %v", checkpoint.ErrBad, checkpoint.StateKey(v), err)
	}
	// The watermarks must be the ones the checkpoint says the next batch runs with.
	_, evict := wm.Batch()
	if want := r.e.counts.WatermarkMs; (r.e.pos.pending != nil || v > 0) && evict != want {
		return false, fmt.Errorf("%w: %s has watermark %d ms, the offsets and commits logs give %d", checkpoint.ErrBad, checkpoint.StateKey(v), evict, want)
	}
	op, deltas, err := r.restoreOperator(ctx, v, sections)
	if err != nil {
		return false, err
	}
	// An aggregation a full refresh rebuilt takes that state (RefreshJoinGold), and the next
	// batch writes full snapshots: no later restore walks back into the old definition's.
	refreshed := make([]*gold.Aggregation, len(p.agg.aggs))
	anyRefreshed := false
	for i, ap := range p.agg.aggs {
		var ok bool
		if refreshed[i], ok, err = refreshedState(ctx, r.e, r.golds[i], ap, v); err != nil {
			return false, err
		}
		anyRefreshed = anyRefreshed || ok
	}
	aggs, aggDeltas, err := restoreAggs(ctx, p.agg.aggs, v, sections, r.e.stateSections, refreshed)
	if err != nil {
		return false, fmt.Errorf("stream: join %s: %w", r.j.Name, err)
	}
	if anyRefreshed {
		aggDeltas = max(aggDeltas, r.j.State.MinDeltasForSnapshot)
	}
	r.jp, r.op, r.wm, r.aggs, r.joinDeltas, r.aggDeltas = p, op, wm, aggs, deltas, aggDeltas
	r.aggBufs = make([]aggBuffers, len(aggs))
	return true, nil
}

// newPlan resolves the join against its two silver tables' schemas: nil, without an error,
// while one does not exist yet.
func (r *joinQuery) newPlan(ctx context.Context) (*joinPlan, error) {
	var schemas [2]*txlog.StructType
	for s := range r.in {
		snap, err := r.in[s].Log().Snapshot(ctx)
		if errors.Is(err, txlog.ErrTableNotFound) {
			r.e.cfg.logger.Info("join waits for its sources' silver tables", "join", r.j.Name, "missing", []string{r.j.Left.Silver, r.j.Right.Silver}[s])
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("stream: join %s: %s silver table: %w", r.j.Name, join.Side(s), err)
		}
		if schemas[s], err = snap.Schema(); err != nil {
			return nil, fmt.Errorf("stream: join %s: %s silver schema: %w", r.j.Name, join.Side(s), err)
		}
	}
	return newJoinPlan(r.j, r.spec, schemas)
}

// restoreOperator rebuilds the join state of version v: its nearest full snapshot at or
// before v, then every later delta in order. It returns the number of deltas replayed.
func (r *joinQuery) restoreOperator(ctx context.Context, v int64, sections map[string][]byte) (*join.Operator, int, error) {
	fail := func(v int64, err error) error {
		return fmt.Errorf("stream: join %s state %s: %w", r.j.Name, checkpoint.StateKey(v), err)
	}
	c := chain[*join.Operator]{
		open: openSnapshot(secJoin,
			func() (*join.Operator, error) { return join.New(r.spec) },
			func(s []byte) (*join.Operator, error) { return join.Restore(r.spec, s) }, fail),
		delta: secJoinDelta,
		apply: func(op *join.Operator, delta []byte, v int64) error {
			if err := op.ApplyDelta(delta); err != nil {
				return fail(v, err)
			}
			return nil
		},
		missing: func(v int64) error {
			return fmt.Errorf("%w: %s has no join state", checkpoint.ErrBad, checkpoint.StateKey(v))
		},
	}
	op, deltas, _, err := c.restore(ctx, v, sections, r.e.stateSections)
	return op, deltas, err
}

// newJoinPlan resolves the join's columns in the two silver schemas and its aggregations in
// the joined schema.
func newJoinPlan(j *spec.Join, js join.Spec, schemas [2]*txlog.StructType) (*joinPlan, error) {
	p := &joinPlan{schema: schemas}
	inputs := [2]spec.JoinInput{j.Left, j.Right}
	for s, in := range inputs {
		sc := schemas[s]
		p.cols[s] = len(sc.Fields)
		idx := map[string]int{}
		for i, f := range sc.Fields {
			idx[f.Name] = i
		}
		col := func(what, name string) (int, error) {
			i, ok := idx[name]
			if !ok {
				return 0, fmt.Errorf("stream: join %s: %s column %q is not in %s's silver table (%s)", j.Name, what, name, in.Source, in.Silver)
			}
			return i, nil
		}
		var err error
		if p.evCol[s], err = col(join.Side(s).String()+" event time", in.EventTime); err != nil {
			return nil, err
		}
		if k, _ := pq.KindOf(sc.Fields[p.evCol[s]].Type); k != pq.KindInt64 {
			return nil, fmt.Errorf("stream: join %s: %s event time column %q is %s, want timestamp", j.Name, in.Source, in.EventTime, typeName(sc.Fields[p.evCol[s]].Type))
		}
		for _, k := range j.On {
			name := k.Left
			if s == 1 {
				name = k.Right
			}
			i, err := col("on:", name)
			if err != nil {
				return nil, err
			}
			kind, err := pq.KindOf(sc.Fields[i].Type)
			if err != nil {
				return nil, fmt.Errorf("stream: join %s: column %s: %w", j.Name, name, err)
			}
			if err := keyable(name, kind); err != nil {
				return nil, fmt.Errorf("stream: join %s: %w", j.Name, err)
			}
			p.keyCols[s] = append(p.keyCols[s], i)
		}
	}
	var err error
	if p.out, err = join.Output(js.Type, schemas[0], schemas[1], j.Right.Source); err != nil {
		return nil, fmt.Errorf("stream: join %s: %w", j.Name, err)
	}
	if p.qschema, err = join.QuarantineSchema(schemas[0], schemas[1], j.Right.Source); err != nil {
		return nil, fmt.Errorf("stream: join %s: %w", j.Name, err)
	}
	// The aggregations read the joined table as a source query reads silver.
	ag := &plan{silver: p.out.Schema}
	index := map[string]int{}
	for i, f := range ag.silver.Fields {
		k, err := pq.KindOf(f.Type)
		if err != nil {
			return nil, fmt.Errorf("stream: join %s: column %s: %w", j.Name, f.Name, err)
		}
		ag.kinds = append(ag.kinds, k)
		index[f.Name] = i
	}
	col := func(what, name string) (int, error) {
		i, ok := index[name]
		if !ok {
			return 0, fmt.Errorf("stream: join %s: %s column %q is not in the joined table's schema", j.Name, what, name)
		}
		return i, nil
	}
	for gi := range j.Gold {
		g := &j.Gold[gi]
		ap, err := ag.newAggPlan(g, col, !js.HasStateWatermark())
		if err != nil {
			return nil, err
		}
		tc := g.TimeColumn
		if tc == "" {
			tc = j.Left.EventTime // the left columns keep their names in the joined table
		}
		i, err := col("gold "+g.Name+" time_column", tc)
		if err != nil {
			return nil, err
		}
		if ag.kinds[i] != pq.KindInt64 || typeName(ag.silver.Fields[i].Type) == txlog.TypeLong {
			return nil, fmt.Errorf("stream: join %s: gold %s time_column %q is %s, want timestamp", j.Name, g.Name, tc, typeName(ag.silver.Fields[i].Type))
		}
		ag.aggs = append(ag.aggs, ap)
		p.timeCols = append(p.timeCols, i)
	}
	p.agg = ag
	return p, nil
}

// ensureTables creates the joined table, the join quarantine and the aggregations' tables
// that do not exist yet, once per runner.
func (r *joinQuery) ensureTables(ctx context.Context) error {
	if r.ready {
		return nil
	}
	defs := joinDefinedTables(r.j, r.out, r.golds)
	var o outputs
	o.add(outTable{t: r.out, schema: r.jp.out.Schema, path: r.j.Table, props: spec.CreateProps(defs[0].def.props(), r.j.NoChangeDataFeed),
		name: "join " + r.j.Name + " (table " + r.j.Table + ")", kind: txlog.WriteAppend})
	o.add(outTable{t: r.quar, schema: r.jp.qschema, path: r.j.Quarantine, name: "join quarantine " + r.j.Quarantine, kind: txlog.WriteAppend})
	o.addAggs(r.jp.agg.aggs, r.golds, r.quars, defs[1:], false)
	if err := o.ensure(ctx, func(err error) error { return fmt.Errorf("stream: join %s: %w", r.j.Name, err) }); err != nil {
		return err
	}
	r.ready = true
	return nil
}

// checkOutputColumns refuses a joined table that exists without columns the join's output now
// has: a source's silver gained columns (schema evolution). The join's state holds rows of
// the old width and its joined table and quarantine were written without the columns, so the
// join cannot take them where it stands; it says so rather than decode state it cannot.
func (r *joinQuery) checkOutputColumns(ctx context.Context, p *joinPlan) error {
	snap, err := r.out.Log().Snapshot(ctx)
	if errors.Is(err, txlog.ErrTableNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stream: join %s: joined table %s: %w", r.j.Name, r.j.Table, err)
	}
	have, err := snap.Schema()
	if err != nil {
		return fmt.Errorf("stream: join %s: joined table %s: %w", r.j.Name, r.j.Table, err)
	}
	d := table.DiffSchema(have, p.out.Schema)
	if len(d.Added) == 0 && d.Compatible() {
		return nil
	}
	var what []string
	for _, f := range d.Added {
		what = append(what, f.Name+" is new")
	}
	if !d.Compatible() {
		what = append(what, d.Error())
	}
	return fmt.Errorf("%w: join %s: the columns of its sources' silver tables (%s, %s) changed since the joined table %s was created: %s. "+
		"A join does not evolve its schema in place (its state holds rows of the old columns). Ways out: a full refresh of the join "+
		"(delete %s, %s, the join's gold and quarantine tables and its checkpoint %s; the next run joins both silver tables from the start), "+
		"or a new join name with new tables and checkpoint. See docs/schema-evolution.md",
		ErrDefinitionChanged, r.j.Name, r.j.Left.Silver, r.j.Right.Silver, r.j.Table, strings.Join(what, "; "), r.j.Table, r.j.Quarantine, r.j.Checkpoint)
}
