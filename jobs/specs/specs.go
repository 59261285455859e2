// Package specs builds the engines' typed specs from the pipeline config, so that no engine
// reads YAML (DESIGN.md §1). It is pure: nothing here touches storage or keeps state, so a
// crash loses nothing.
package specs

import (
	"github.com/medallion-lake/medallion/bronze/timefmt"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table/source"
)

// Query is the streaming query of cfg's top-level source (stream.name), with cfg's trigger and
// the gold aggregations over that source. For a single-source config that is every aggregation.
func Query(cfg *config.Pipeline) spec.Query {
	s := &cfg.Stream
	q := spec.Query{
		Name:              s.Name,
		Tables:            SourceTables(cfg),
		Rules:             silver.Rules{EventTime: s.EventTime, MaxFutureSkew: s.MaxFutureSkew.Duration},
		Dedup:             s.Dedup,
		Watermark:         spec.Watermark{Delay: s.Watermark.Duration, Set: s.Watermark.IsSet()},
		IdleTimeout:       s.IdleTimeout.Duration,
		Trigger:           Trigger(s.Trigger),
		Limit:             source.ReadLimit{MaxFiles: s.MaxFilesPerTrigger, MaxBytes: s.MaxBytesPerTrigger.Bytes},
		Source:            source.Options{IgnoreDeletes: s.IgnoreDeletes, IgnoreChanges: s.IgnoreChanges},
		LateAlertFraction: s.LateAlertFraction,
		State: spec.State{MinDeltasForSnapshot: s.State.MinDeltasForSnapshot, MinBatchesToRetain: s.State.MinBatchesToRetain,
			DedupRetention: s.State.DedupRetention.Duration},
	}
	for _, c := range cfg.Schema {
		if c.Required {
			q.Rules.Required = append(q.Rules.Required, c.Name)
		}
		if c.Name == s.EventTime && (c.Format != "" || c.Unit != "") {
			// Validate compiled it: a config that reaches here has no error to see.
			tp, _ := timefmt.New(c.Format, c.Unit)
			q.Rules.EventTimeFormat = tp.Expected()
		}
	}
	for _, e := range cfg.Expectations {
		q.Rules.Expectations = append(q.Rules.Expectations, silver.Expectation{Name: e.Name, Expect: e.Expect, OnViolation: silver.Action(e.OnViolation)})
	}
	q.Rules.Transform = Transform(cfg.Transform)
	for _, g := range cfg.GoldOf(s.Name) {
		q.Gold = append(q.Gold, aggregation(g))
	}
	return q
}

// Transform is a source's transform: as configured, for silver.
func Transform(t config.Transform) silver.Transform {
	var out silver.Transform
	for _, c := range t.Columns {
		out.Columns = append(out.Columns, silver.ComputedColumn{Name: c.Name, Expr: c.Expr})
	}
	if f := t.Filter; f != nil {
		out.Filter = &silver.Filter{Name: f.Name, Expr: f.Expr, Drop: f.OnFilter == config.OnFilterDrop}
	}
	return out
}

// SourceTables are the tables of cfg's top-level source (a source's view: config ForSource),
// with the properties they are created with (spec.Tables.TableProps).
func SourceTables(cfg *config.Pipeline) spec.Tables {
	return spec.Tables{Bronze: cfg.Tables.Bronze, Silver: cfg.Tables.Silver, Rejects: cfg.Tables.Rejects,
		Checkpoint: cfg.Stream.Checkpoint, ChangeDataFeed: cfg.Tables.ChangeDataFeed}
}

// Queries are the streaming queries of every source, the top-level one first, each with its own
// tables, checkpoint and gold aggregations.
func Queries(cfg *config.Pipeline) []spec.Query {
	var out []spec.Query
	for _, s := range cfg.AllSources() {
		if q, ok := SourceQuery(cfg, s.Name); ok {
			out = append(out, q)
		}
	}
	return out
}

// SourceQuery is the streaming query of the source named name.
func SourceQuery(cfg *config.Pipeline, name string) (spec.Query, bool) {
	v, ok := cfg.ForSource(name)
	if !ok {
		return spec.Query{}, false
	}
	return Query(v), true
}

// Joins are the join queries of cfg, each with the aggregations over it (TimeColumn set).
func Joins(cfg *config.Pipeline) []spec.Join {
	out := make([]spec.Join, 0, len(cfg.Joins))
	for _, j := range cfg.Joins {
		out = append(out, joinSpec(cfg, j))
	}
	return out
}

// Join is the join query named name.
func Join(cfg *config.Pipeline, name string) (spec.Join, bool) {
	j, ok := cfg.JoinByName(name)
	if !ok {
		return spec.Join{}, false
	}
	return joinSpec(cfg, *j), true
}

func joinSpec(cfg *config.Pipeline, j config.Join) spec.Join {
	s := &cfg.Stream
	out := spec.Join{
		Name: j.Name, Type: j.Type,
		Left: joinInput(cfg, j.Left), Right: joinInput(cfg, j.Right),
		Lower: j.Time.Lower.Duration, Upper: j.Time.Upper.Duration,
		Table: j.Table, Quarantine: j.Quarantine, Checkpoint: j.Checkpoint,
		Trigger: Trigger(s.Trigger),
		Limit:   source.ReadLimit{MaxFiles: s.MaxFilesPerTrigger, MaxBytes: s.MaxBytesPerTrigger.Bytes},
		State:   spec.State{MinDeltasForSnapshot: s.State.MinDeltasForSnapshot, MinBatchesToRetain: s.State.MinBatchesToRetain},

		NoChangeDataFeed: !j.ChangeFeed(),
	}
	for _, on := range j.On {
		out.On = append(out.On, spec.JoinKey{Left: on.Left, Right: on.Right})
	}
	for _, g := range cfg.GoldOf(j.Name) {
		a := aggregation(g)
		a.TimeColumn = cfg.GoldTimeColumn(g)
		out.Gold = append(out.Gold, a)
	}
	return out
}

func joinInput(cfg *config.Pipeline, name string) spec.JoinInput {
	src, _ := cfg.SourceByName(name)
	return spec.JoinInput{Source: src.Name, Silver: src.Tables.Silver, EventTime: src.Stream.EventTime,
		Watermark: spec.Watermark{Delay: src.Stream.Watermark.Duration, Set: src.Stream.Watermark.IsSet()}}
}

// Trigger is a config trigger as the stream runs it (an unset trigger stays unset).
func Trigger(t config.Trigger) spec.Trigger {
	return spec.Trigger{Kind: spec.TriggerKind(t.Kind), Interval: t.Interval}
}

func aggregation(g config.Gold) spec.Aggregation {
	a := spec.Aggregation{Name: g.Name, Table: g.Table, Quarantine: g.Quarantine, GroupBy: g.GroupBy, OutputMode: g.OutputMode,
		NoChangeDataFeed: !g.ChangeFeed(),
		Window: spec.Window{Session: g.Window.Type == config.WindowSession, Size: g.Window.Size.Duration,
			Slide: g.Window.EffectiveSlide().Duration, Start: g.Window.StartTime.Duration, Gap: g.Window.Gap.Duration}}
	for _, x := range g.Aggregates {
		a.Aggregates = append(a.Aggregates, spec.Aggregate{Fn: x.Fn, Column: x.Column, As: x.As, Percentiles: x.Percentiles,
			RelativeAccuracy: x.RelativeAccuracy, RSD: x.RSD})
	}
	return a
}

// Derived are cfg's derived tables (gold over another gold) in the order they are kept: each
// after its upstream. Each carries the checkpoint of the query that feeds its graph's first
// gold, whose watermark closes windows.
func Derived(cfg *config.Pipeline) []spec.Derived {
	var out []spec.Derived
	for _, g := range cfg.DerivedOrder() {
		up, _ := cfg.UpstreamGold(g)
		d := spec.Derived{Name: g.Name, Table: g.Table, Upstream: up.Name, UpstreamTable: up.Table, UpstreamDerived: cfg.IsDerived(*up),
			Size: g.Window.Size.Duration, Start: g.Window.StartTime.Duration, GroupBy: g.GroupBy, NoChangeDataFeed: !g.ChangeFeed()}
		for _, a := range g.Aggregates {
			r, _ := cfg.RollupOf(*up, g.Name, a)
			d.Aggregates = append(d.Aggregates, spec.Rollup{Fn: r.Fn, Column: r.Column, As: a.As})
		}
		src := cfg.GoldSource(cfg.RootGold(*up))
		if j, ok := cfg.JoinByName(src); ok {
			js := joinSpec(cfg, *j)
			d.Checkpoint, d.Join = j.Checkpoint, &js
		} else if s, ok := cfg.SourceByName(src); ok {
			d.Checkpoint = s.Stream.Checkpoint
		}
		out = append(out, d)
	}
	return out
}
