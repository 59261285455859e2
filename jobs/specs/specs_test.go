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
