// Package specs builds the engines' typed specs from the pipeline config, so that no engine
// reads YAML (DESIGN.md §1). It is pure: nothing here touches storage or keeps state, so a
// crash loses nothing.
package specs

import (
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table/source"
)

// Query is the streaming query of cfg, with cfg's trigger.
func Query(cfg *config.Pipeline) spec.Query {
	s := &cfg.Stream
	q := spec.Query{
		Name: s.Name,
		Tables: spec.Tables{Bronze: cfg.Tables.Bronze, Silver: cfg.Tables.Silver, Rejects: cfg.Tables.Rejects,
			Checkpoint: s.Checkpoint},
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
	}
	for _, e := range cfg.Expectations {
		q.Rules.Expectations = append(q.Rules.Expectations, silver.Expectation{Name: e.Name, Expect: e.Expect, OnViolation: silver.Action(e.OnViolation)})
	}
	for _, g := range cfg.Gold {
		q.Gold = append(q.Gold, aggregation(g))
	}
	return q
}

// Trigger is a config trigger as the stream runs it (an unset trigger stays unset).
func Trigger(t config.Trigger) spec.Trigger {
	return spec.Trigger{Kind: spec.TriggerKind(t.Kind), Interval: t.Interval}
}

func aggregation(g config.Gold) spec.Aggregation {
	a := spec.Aggregation{Name: g.Name, Table: g.Table, Quarantine: g.Quarantine, GroupBy: g.GroupBy, OutputMode: g.OutputMode,
		Window: spec.Window{Session: g.Window.Type == config.WindowSession, Size: g.Window.Size.Duration,
			Slide: g.Window.EffectiveSlide().Duration, Start: g.Window.StartTime.Duration, Gap: g.Window.Gap.Duration}}
	for _, x := range g.Aggregates {
		a.Aggregates = append(a.Aggregates, spec.Aggregate{Fn: x.Fn, Column: x.Column, As: x.As, Percentiles: x.Percentiles,
			RelativeAccuracy: x.RelativeAccuracy, RSD: x.RSD})
	}
	return a
}
