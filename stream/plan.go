package stream

import (
	"context"
	"fmt"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/txlog"
)

// aggPlan is one gold aggregation, resolved against the silver schema.
type aggPlan struct {
	cfg      *spec.Aggregation
	agg      gold.AggConfig
	keyCols  []int // silver column indexes of the group-by columns
	aggCols  []int // silver column index per AggSpec.Column (-1 for count(*))
	schema   *txlog.StructType
	qschema  *txlog.StructType
	complete bool
	update   bool
}

// plan is the query resolved against the silver schema: bronze's columns, then the transform's
// computed columns (none: silver = bronze).
type plan struct {
	bronze *txlog.StructType
	silver *txlog.StructType
	// transform computes silver's computed columns and filters rows (nil: no transform).
	transform *silver.Transformer
	kinds     []pq.Kind
	evCol     int
	dedup     []int
	rules     silver.Rules
	expect    *silver.Expectations // nil: none
	aggs      []*aggPlan
}

func longType() txlog.DataType   { return txlog.PrimitiveType{Name: txlog.TypeLong} }
func doubleType() txlog.DataType { return txlog.PrimitiveType{Name: txlog.TypeDouble} }

func newPlan(q *spec.Query, bronzeSchema *txlog.StructType) (*plan, error) {
	p := &plan{bronze: bronzeSchema, silver: bronzeSchema}
	if !q.Rules.Transform.IsZero() {
		x, err := silver.NewTransformer(context.Background(), q.Rules.Transform, bronzeSchema)
		if err != nil {
			return nil, fmt.Errorf("stream: query %s: transform: %w", q.Name, err)
		}
		p.transform, p.silver = x, x.Schema()
	}
	silverSchema := p.silver
	index := map[string]int{}
	for i, f := range silverSchema.Fields {
		k, err := pq.KindOf(f.Type)
		if err != nil {
			return nil, fmt.Errorf("stream: column %s: %w", f.Name, err)
		}
		p.kinds = append(p.kinds, k)
		index[f.Name] = i
	}
	col := func(what, name string) (int, error) {
		i, ok := index[name]
		if !ok {
			return 0, fmt.Errorf("stream: %s column %q is not in the bronze table's schema", what, name)
		}
		return i, nil
	}
	var err error
	if p.evCol, err = col("stream.event_time", q.Rules.EventTime); err != nil {
		return nil, err
	}
	if p.kinds[p.evCol] != pq.KindInt64 {
		return nil, fmt.Errorf("stream: event time column %q is %s, want timestamp", q.Rules.EventTime, typeName(silverSchema.Fields[p.evCol].Type))
	}
	for _, d := range q.Dedup {
		i, err := col("stream.dedup", d)
		if err != nil {
			return nil, err
		}
		if err := keyable(d, p.kinds[i]); err != nil {
			return nil, err
		}
		p.dedup = append(p.dedup, i)
	}
	p.rules = q.Rules
	if len(q.Rules.Expectations) > 0 {
		x, err := silver.NewExpectations(q.Rules.Expectations)
		if err != nil {
			return nil, fmt.Errorf("stream: %w", err)
		}
		if err := x.Compile(silverSchema); err != nil {
			return nil, fmt.Errorf("stream: %w", err)
		}
		p.expect = x
	}
	for _, c := range q.Rules.Required {
		if _, err := col("schema", c); err != nil {
			return nil, err
		}
	}
	delayed := q.Watermark.Set && q.Watermark.Delay >= 0
	for gi := range q.Gold {
		ap, err := p.newAggPlan(&q.Gold[gi], col, !delayed)
		if err != nil {
			return nil, err
		}
		p.aggs = append(p.aggs, ap)
	}
	return p, nil
}

func keyable(name string, k pq.Kind) error {
	switch k {
	case pq.KindBytes, pq.KindInt64, pq.KindInt32, pq.KindFloat64, pq.KindFloat32, pq.KindBool:
		return nil
	}
	return fmt.Errorf("stream: column %q cannot be a key (decimals and nested types are not supported as keys)", name)
}

func (p *plan) newAggPlan(g *spec.Aggregation, col func(what, name string) (int, error), noWatermark bool) (*aggPlan, error) {
	ap := &aggPlan{cfg: g}
	var err error
	switch {
	case g.Window.Session:
		s, err := gold.NewSessionSpec(g.Window.Gap.Microseconds())
		if err != nil {
			return nil, fmt.Errorf("stream: gold %s: %w", g.Name, err)
		}
		ap.agg.Session = &s
	default:
		ap.agg.Window, err = gold.NewWindowSpec(g.Window.Size.Microseconds(), g.Window.Slide.Microseconds(), g.Window.Start.Microseconds())
		if err != nil {
			return nil, fmt.Errorf("stream: gold %s: %w", g.Name, err)
		}
	}
	switch g.OutputMode {
	case spec.OutputComplete:
		ap.agg.Mode, ap.complete = gold.Complete, true
	case spec.OutputUpdate:
		// Spark's Delta sink rejects Update (DELTA_UNSUPPORTED_OUTPUT_MODE); we upsert the
		// updated groups with MERGE on (window, keys) instead, as foreachBatch users do.
		ap.agg.Mode, ap.update = gold.Update, true
	default:
		ap.agg.Mode = gold.Append
	}
	ap.agg.NoWatermark = noWatermark
	ap.agg.NumKeys = len(g.GroupBy)
	fields := []txlog.StructField{gold.WindowField()}
	for _, k := range g.GroupBy {
		i, err := col("gold "+g.Name+" group_by", k)
		if err != nil {
			return nil, err
		}
		if err := keyable(k, p.kinds[i]); err != nil {
			return nil, err
		}
		ap.keyCols = append(ap.keyCols, i)
		fields = append(fields, txlog.StructField{Name: k, Type: p.silver.Fields[i].Type, Nullable: true})
	}
	for _, a := range g.Aggregates {
		fn, err := gold.ParseFunc(a.Fn)
		if err != nil {
			return nil, fmt.Errorf("stream: gold %s aggregate %s: %w", g.Name, a.As, err)
		}
		spec := gold.AggSpec{Fn: fn, Column: -1, Name: a.As, Percentiles: a.Percentiles, RelativeAccuracy: a.RelativeAccuracy, RSD: a.RSD}
		var inType txlog.DataType = longType()
		if a.Column != "" {
			i, err := col("gold "+g.Name+" aggregate "+a.As, a.Column)
			if err != nil {
				return nil, err
			}
			k := p.kinds[i]
			numeric := k == pq.KindInt64 || k == pq.KindInt32 || k == pq.KindFloat64 || k == pq.KindFloat32
			if fn != gold.Count && fn != gold.ApproxCountDistinct && !numeric {
				return nil, fmt.Errorf("stream: gold %s aggregate %s: %s needs a numeric column, %s is %s", g.Name, a.As, a.Fn, a.Column, typeName(p.silver.Fields[i].Type))
			}
			if fn == gold.ApproxCountDistinct && keyable(a.Column, k) != nil {
				return nil, fmt.Errorf("stream: gold %s aggregate %s: approx_count_distinct cannot read %s", g.Name, a.As, typeName(p.silver.Fields[i].Type))
			}
			spec.Int = k == pq.KindInt64 || k == pq.KindInt32
			spec.Column = len(ap.aggCols)
			ap.aggCols = append(ap.aggCols, i)
			if spec.Int {
				inType = p.silver.Fields[i].Type
			} else {
				inType = doubleType()
			}
		}
		ap.agg.Aggs = append(ap.agg.Aggs, spec)
		num := inType
		if spec.Int {
			num = longType()
		}
		fields = append(fields, gold.AggregateFields(fn, a.As, inType, num)...)
	}
	fields = append(fields, gold.LateRowsField())
	fields = append(fields, gold.ExactFields(ap.agg.Aggs)...)
	if err := ap.agg.Validate(); err != nil {
		return nil, fmt.Errorf("stream: gold %s: %w", g.Name, err)
	}
	ap.schema = &txlog.StructType{Fields: fields}
	ap.qschema = silver.QuarantineSchema(p.silver)
	return ap, nil
}

func typeName(t txlog.DataType) string {
	if p, ok := t.(txlog.PrimitiveType); ok {
		return p.Name
	}
	return fmt.Sprintf("%T", t)
}
