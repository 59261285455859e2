package specs

import (
	"reflect"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table/source"
)

// TestQueryOfTheExample maps every stream and gold setting of examples/pipeline.yaml.
func TestQueryOfTheExample(t *testing.T) {
	cfg, err := config.Load("../../examples/pipeline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	q := Query(cfg)
	want := spec.Tables{Bronze: cfg.Tables.Bronze, Silver: cfg.Tables.Silver, Rejects: cfg.Tables.Rejects, Checkpoint: "_checkpoints/events"}
	if q.Name != "events" || q.Tables != want {
		t.Errorf("name %q, tables %+v; want events, %+v", q.Name, q.Tables, want)
	}
	rules := silver.Rules{EventTime: "event_time", Required: q.Rules.Required, MaxFutureSkew: time.Hour}
	if !reflect.DeepEqual(q.Rules, rules) || len(q.Rules.Required) == 0 {
		t.Errorf("rules %+v", q.Rules)
	}
	if q.Watermark != (spec.Watermark{Delay: 10 * time.Minute, Set: true}) || q.IdleTimeout != 0 {
		t.Errorf("watermark %+v, idle %v", q.Watermark, q.IdleTimeout)
	}
	if !reflect.DeepEqual(q.Dedup, []string{"event_id"}) || q.Trigger.Kind != spec.AvailableNow ||
		q.Limit != (source.ReadLimit{MaxFiles: 1000}) || q.Source != (source.Options{}) {
		t.Errorf("dedup %v, trigger %+v, limit %+v, source %+v", q.Dedup, q.Trigger, q.Limit, q.Source)
	}
	if q.State != (spec.State{MinDeltasForSnapshot: 10, MinBatchesToRetain: 100, DedupRetention: 10 * time.Minute}) {
		t.Errorf("state %+v", q.State)
	}
	if len(q.Gold) != len(cfg.Gold) {
		t.Fatalf("%d aggregations, want %d", len(q.Gold), len(cfg.Gold))
	}
	g := q.Gold[0]
	if g.Name != "events_5m" || g.Table != "gold/events_5m" || g.Quarantine != "silver/late_events_5m" ||
		g.Window != (spec.Window{Size: 5 * time.Minute, Slide: 5 * time.Minute}) || !reflect.DeepEqual(g.GroupBy, []string{"event_type"}) {
		t.Errorf("gold[0] %+v", g)
	}
	if a := g.Aggregates[1]; a.Fn != "sum" || a.Column != "amount" || a.As != "total_amount" {
		t.Errorf("gold[0] aggregate 1 %+v", a)
	}
}

func TestTrigger(t *testing.T) {
	tr, err := config.ParseTrigger("processing-time=30s")
	if err != nil {
		t.Fatal(err)
	}
	if got := Trigger(tr); got != (spec.Trigger{Kind: spec.ProcessingTime, Interval: 30 * time.Second}) {
		t.Errorf("Trigger = %+v", got)
	}
	if got := Trigger(config.Trigger{}); got.Kind != "" {
		t.Errorf("an unset trigger became %+v", got)
	}
}

// TestQueriesAndJoinsOfTheJoinsExample maps examples/joins.yaml: one query per source, the
// top-level one first, each with only its own aggregations; one join with its own.
func TestQueriesAndJoinsOfTheJoinsExample(t *testing.T) {
	cfg, err := config.Load("../../examples/joins.yaml")
	if err != nil {
		t.Fatal(err)
	}
	qs := Queries(cfg)
	if len(qs) != 2 || qs[0].Name != "impressions" || qs[1].Name != "clicks" {
		t.Fatalf("queries %+v", qs)
	}
	if qs[1].Tables != (spec.Tables{Bronze: "bronze/clicks", Silver: "silver/clicks", Rejects: "bronze/rejects", Checkpoint: "_checkpoints/clicks"}) ||
		qs[1].Rules.EventTime != "click_time" || qs[1].Watermark != (spec.Watermark{Delay: 3 * time.Hour, Set: true}) ||
		len(qs[1].Gold) != 0 || len(qs[1].Rules.Expectations) != 1 {
		t.Errorf("clicks query %+v", qs[1])
	}
	if len(qs[0].Gold) != 1 || qs[0].Gold[0].Name != "impressions_1h" || !reflect.DeepEqual(Query(cfg), qs[0]) {
		t.Errorf("impressions query gold %+v", qs[0].Gold)
	}
	js := Joins(cfg)
	if len(js) != 1 {
		t.Fatalf("joins %+v", js)
	}
	j := js[0]
	want := spec.Join{Name: "impressions_clicks", Type: "left_outer",
		Left:  spec.JoinInput{Source: "impressions", Silver: "silver/impressions", EventTime: "impression_time", Watermark: spec.Watermark{Delay: 2 * time.Hour, Set: true}},
		Right: spec.JoinInput{Source: "clicks", Silver: "silver/clicks", EventTime: "click_time", Watermark: spec.Watermark{Delay: 3 * time.Hour, Set: true}},
		On:    []spec.JoinKey{{Left: "ad_id", Right: "ad_id"}}, Lower: 0, Upper: time.Hour,
		Table: "silver/impressions_clicks", Quarantine: "silver/late_impressions_clicks", Checkpoint: "_checkpoints/impressions_clicks",
		Trigger: spec.Trigger{Kind: spec.AvailableNow}, Limit: source.ReadLimit{MaxFiles: 1000},
		State: spec.State{MinDeltasForSnapshot: 10, MinBatchesToRetain: 100}}
	gold := j.Gold
	j.Gold = nil
	if !reflect.DeepEqual(j, want) {
		t.Errorf("join\n got %+v\nwant %+v", j, want)
	}
	if len(gold) != 1 || gold[0].Name != "clicks_per_ad_1h" || gold[0].TimeColumn != "impression_time" {
		t.Errorf("join gold %+v", gold)
	}
	if _, ok := SourceQuery(cfg, "impressions_clicks"); ok {
		t.Error("a join has no source query")
	}
}
