package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// twoSources is impressions (top level) and clicks (sources:), joined; the tests edit it.
const twoSources = `
schema:
  - {name: impression_id, type: string, required: true}
  - {name: ad_id, type: string}
  - {name: impression_time, type: timestamp, required: true}
stream: {name: impressions, event_time: impression_time, watermark: 2h}
sources:
  - name: clicks
    schema:
      - {name: click_id, type: string}
      - {name: ad_id, type: string}
      - {name: click_time, type: timestamp}
      - {name: price, type: double}
    stream: {event_time: click_time, watermark: 3h}
joins:
  - name: ic
    left: impressions
    right: clicks
    type: left_outer
    on: [{left: ad_id, right: ad_id}]
    time: {lower: 0s, upper: 1h}
gold:
  - name: g1
    window: {type: tumbling, size: 1h}
    aggregates: [{fn: count}]
  - name: g2
    source: ic
    window: {type: tumbling, size: 1h}
    group_by: [ad_id]
    aggregates: [{fn: count, column: click_id, as: clicks}]
`

func TestJoinsExample(t *testing.T) {
	p, err := Load("../examples/joins.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srcs := p.AllSources()
	if len(srcs) != 2 || srcs[0].Name != "impressions" || srcs[1].Name != "clicks" {
		t.Fatalf("sources = %+v", srcs)
	}
	c := srcs[1]
	checks := []struct {
		name      string
		got, want any
	}{
		{"clicks checkpoint", c.Stream.Checkpoint, "_checkpoints/clicks"},
		{"clicks rejects", c.Tables.Rejects, "bronze/rejects"},
		{"clicks watermark", c.Stream.Watermark.Duration, 3 * time.Hour},
		{"clicks trigger from the top level", c.Stream.Trigger.Kind, TriggerAvailableNow},
		{"clicks max future skew", c.Stream.MaxFutureSkew.Duration, time.Hour},
		{"clicks expectation action", c.Expectations[0].OnViolation, OnViolationDrop},
		{"join type", p.Joins[0].Type, JoinLeftOuter},
		{"join time.right", p.Joins[0].Time.Right, "click_time"},
		{"gold source default", p.GoldSource(p.Gold[0]), "impressions"},
		{"gold time default", p.GoldTimeColumn(p.Gold[0]), "impression_time"},
		{"join gold source", p.GoldSource(p.Gold[1]), "impressions_clicks"},
		{"gold of clicks", len(p.GoldOf("clicks")), 0},
		{"multi", p.MultiSource(), true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	out, ok := p.JoinColumns(p.Joins[0])
	if !ok {
		t.Fatal("no joined columns")
	}
	var names []string
	for _, c := range out {
		names = append(names, c.Name)
	}
	// Written out by hand from DESIGN.md §8: left's silver columns, then right's, taken names
	// prefixed with the right source's name.
	want := "impression_id ad_id campaign impression_time _rescued_data _ingest_time _source_file _source_offset " +
		"click_id clicks_ad_id click_time clicks__rescued_data clicks__ingest_time clicks__source_file clicks__source_offset"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("joined columns\n got %s\nwant %s", got, want)
	}
}

func TestForSource(t *testing.T) {
	p, err := Parse([]byte(twoSources), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	v, ok := p.ForSource("clicks")
	if !ok {
		t.Fatal("no clicks")
	}
	if v.Stream.Name != "clicks" || v.Tables.Bronze != "bronze/clicks" || v.Tables.Silver != "silver/clicks" ||
		v.Landing.Path != "landing/clicks/" || v.Stream.Checkpoint != "_checkpoints/clicks" || v.Schema[0].Name != "click_id" ||
		len(v.Gold) != 0 || v.MultiSource() {
		t.Errorf("clicks view: %+v", v)
	}
	top, _ := p.ForSource("impressions")
	if top.Tables.Bronze != "bronze/events" || len(top.Gold) != 1 || top.Gold[0].Name != "g1" {
		t.Errorf("impressions view: tables %+v gold %+v", top.Tables, top.Gold)
	}
	if _, ok := p.ForSource("ic"); ok {
		t.Error("a join is not a source")
	}
	if p.Joins[0].Table != "silver/ic" || p.Joins[0].Quarantine != "silver/late_ic" || p.Joins[0].Checkpoint != "_checkpoints/ic" {
		t.Errorf("join defaults: %+v", p.Joins[0])
	}
	if got := p.GoldTimeColumn(p.Gold[1]); got != "impression_time" {
		t.Errorf("join gold time column = %q", got)
	}
}

func TestSourcesAndJoinsErrors(t *testing.T) {
	cases := []struct {
		name     string
		old, new string
		want     []string
	}{
		{"source without name", "  - name: clicks\n", "  - landing: {}\n", []string{"sources[0].name: required"}},
		{"source stream name", "stream: {event_time: click_time", "stream: {name: other, event_time: click_time", []string{`sources[0].stream.name: "other"`}},
		{"duplicate names", "  - name: ic\n", "  - name: clicks\n", []string{`joins[0].name: duplicate name "clicks" (also sources[0].name)`}},
		{"source named like the stream", "  - name: clicks\n", "  - name: impressions\n", []string{`sources[0].name: duplicate name "impressions" (also stream.name)`}},
		{"unknown left", "left: impressions", "left: views", []string{`joins[0].left: unknown source "views"`}},
		{"join of a join", "right: clicks", "right: ic", []string{`joins[0].right: "ic" is a join`}},
		{"unknown type", "type: left_outer", "type: outer", []string{`joins[0].type: invalid value "outer"`}},
		{"left anti parses (Spark's answer comes from jobs/specs.Check)", "type: left_outer", "type: left_anti", nil},
		{"no equality", "on: [{left: ad_id, right: ad_id}]", "on: []", []string{`joins[0].on: required: Stream-stream join without equality predicate is not supported`}},
		{"on column missing", "on: [{left: ad_id, right: ad_id}]", "on: [{left: ad_id, right: adid}]", []string{`joins[0].on[0].right: column "adid" is not in sources[0].schema`}},
		{"on second pair", "on: [{left: ad_id, right: ad_id}]", "on: [{left: ad_id, right: ad_id}, {left: impression_id, right: nope}]", []string{`joins[0].on[1].right: column "nope"`}},
		{"on types differ", "on: [{left: ad_id, right: ad_id}]", "on: [{left: ad_id, right: price}]", []string{`joins[0].on[0].right: column "price" has type double but the left key "ad_id" has type string`}},
		{"on event time", "on: [{left: ad_id, right: ad_id}]", "on: [{left: impression_time, right: click_time}]", []string{`joins[0].on[0].left: "impression_time" is the event-time column of source "impressions"`, "state key watermark, which medallion does not support"}},
		{"time.left not event time", "time: {lower: 0s, upper: 1h}", "time: {left: ad_id, lower: 0s, upper: 1h}", []string{`joins[0].time.left: "ad_id" is not the event-time column of source "impressions"`}},
		{"time.right not event time", "time: {lower: 0s, upper: 1h}", "time: {right: ad_id, lower: 0s, upper: 1h}", []string{`joins[0].time.right: "ad_id" is not the event-time column of source "clicks"`}},
		{"upper missing", "time: {lower: 0s, upper: 1h}", "time: {lower: 0s}", []string{`joins[0].time.upper: required`}},
		{"lower above upper", "time: {lower: 0s, upper: 1h}", "time: {lower: 2h, upper: 1h}", []string{`joins[0].time.lower: 2h is greater than upper 1h`}},
		{"bad offset", "time: {lower: 0s, upper: 1h}", "time: {lower: soon, upper: 1h}", []string{`joins[0].time.lower: invalid duration "soon"`}},
		{"join table collides", "    time: {lower: 0s, upper: 1h}\n", "    time: {lower: 0s, upper: 1h}\n    table: silver/clicks\n", []string{`joins[0].table: path "silver/clicks" is also sources[0].tables.silver`}},
		{"source bronze collides", "    stream: {event_time: click_time", "    tables: {bronze: bronze/events}\n    stream: {event_time: click_time", []string{`sources[0].tables.bronze: path "bronze/events" is also tables.bronze`}},
		{"checkpoint collides", "    stream: {event_time: click_time", "    stream: {checkpoint: _checkpoints/impressions, event_time: click_time", []string{`sources[0].stream.checkpoint: path "_checkpoints/impressions" is also stream.checkpoint`}},
		{"gold unknown source", "source: ic", "source: icc", []string{`gold[1].source: unknown source or join "icc"`}},
		{"gold join column", "group_by: [ad_id]", "group_by: [campaign]", []string{`gold[1].group_by[0]: column "campaign" is not in the columns of join "ic"`}},
		{"gold join renamed column", "group_by: [ad_id]", "group_by: [clicks_ad_id]", nil},
		{"gold join time column type", "source: ic\n", "source: ic\n    time_column: ad_id\n", []string{`gold[1].time_column: column "ad_id" has type string: expected a timestamp column of join "ic"`}},
		{"gold join right time column", "source: ic\n", "source: ic\n    time_column: click_time\n", nil},
		{"gold source time column", "  - name: g1\n", "  - name: g1\n    time_column: ad_id\n", []string{`gold[0].time_column: "ad_id" is not the event-time column of source "impressions"`}},
		{"gold over clicks", "source: ic", "source: clicks", nil},
		{"right outer", "type: left_outer", "type: right_outer", nil},
		{"full outer", "type: left_outer", "type: full_outer", nil},
		{"negative lower", "time: {lower: 0s, upper: 1h}", "time: {lower: -5s, upper: 10s}", nil},
		{"self join renames every right column", "right: clicks", "right: impressions",
			[]string{`gold[1].aggregates[0].column: column "click_id" is not in the columns of join "ic"`, "impressions_ad_id, impressions_impression_time"}},
		{"gold over clicks wrong column", "    source: ic\n    window: {type: tumbling, size: 1h}\n    group_by: [ad_id]", "    source: clicks\n    window: {type: tumbling, size: 1h}\n    group_by: [impression_id]",
			[]string{`gold[1].group_by[0]: column "impression_id" is not in sources[0].schema`}},
		{"semi join has left columns only", "type: left_outer", "type: left_semi", []string{`gold[1].aggregates[0].column: column "click_id" is not in the columns of join "ic"`}},
		{"source unknown key", "    stream: {event_time: click_time", "    steam: {}\n    stream: {event_time: click_time", []string{`unknown key "steam" in sources[0] (did you mean "stream"?)`}},
		{"source event time missing", "stream: {event_time: click_time, watermark: 3h}", "stream: {event_time: clicktime, watermark: 3h}", []string{`sources[0].stream.event_time: column "clicktime" is not in sources[0].schema`}},
		{"source dedup column", "stream: {event_time: click_time, watermark: 3h}", "stream: {event_time: click_time, watermark: 3h, dedup: [nope]}", []string{`sources[0].stream.dedup[0]: column "nope"`}},
		{"source expectation", "    stream: {event_time: click_time", "    expectations: [{name: e, expect: \"nope > 1\"}]\n    stream: {event_time: click_time", []string{`sources[0].expectations[0].expect: expectation "e"`}},
		{"source kafka without kafka", "    stream: {event_time: click_time", "    landing: {kind: kafka}\n    stream: {event_time: click_time", []string{`sources[0].landing.kafka: required with kind: kafka`}},
		{"source landing path", "    stream: {event_time: click_time", "    landing: {path: landing/events/}\n    stream: {event_time: click_time", []string{`sources[0].landing.path: path "landing/events" is also landing.path`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(twoSources, c.old) {
				t.Fatalf("case edits %q, which the base config does not contain", c.old)
			}
			text := strings.Replace(twoSources, c.old, c.new, 1)
			_, err := Parse([]byte(text), "p.yaml")
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("rejected:\n%v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted:\n%s", text)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("not ErrInvalid: %v", err)
			}
			fieldErrors(t, err)
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q; got:\n%v", w, err)
				}
			}
		})
	}
}

// TestSingleSourceUnchanged: a config without sources: keeps its meaning, and the sources view
// of it is the top-level one.
func TestSingleSourceUnchanged(t *testing.T) {
	p, err := Load("../examples/pipeline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p.MultiSource() || len(p.AllSources()) != 1 || p.AllSources()[0].Name != p.Stream.Name {
		t.Fatalf("single source: %+v", p.AllSources())
	}
	v, _ := p.ForSource(p.Stream.Name)
	if v.Tables != p.Tables || len(v.Gold) != len(p.Gold) || v.Stream.Checkpoint != p.Stream.Checkpoint {
		t.Errorf("the view of the only source differs from the config")
	}
	if strings.Contains(p.Redacted(), "sources:") || strings.Contains(p.Redacted(), "joins:") {
		t.Error("the effective config of a single-source file grew sources:/joins:")
	}
}

// FuzzJoinsConfig feeds YAML snippets in place of the joins: block (and of a gold aggregation
// over it): Parse never panics, and every problem it reports is a *FieldError naming a field
// or a line (YAML syntax errors that yaml.v3 does not locate excepted).
func FuzzJoinsConfig(f *testing.F) {
	base, joinsAndGold, ok := strings.Cut(twoSources, "joins:\n")
	if !ok {
		f.Fatal("base config has no joins:")
	}
	for _, seed := range []string{
		joinsAndGold,
		"  - {name: j, left: impressions, right: clicks, on: [{left: ad_id, right: ad_id}], time: {lower: 0s, upper: 1h}}\ngold:\n  - {name: g, source: j, window: {type: tumbling, size: 1h}, aggregates: [{fn: count}]}\n",
		"  - {name: j, left: impressions, right: impressions, type: full_outer, on: [{left: ad_id, right: ad_id}], time: {lower: -1h, upper: 1h}}\ngold: []\n",
		"  - {name: j, type: left_anti, on: []}\n",
		"  - {name: j, left: clicks, right: impressions, type: cross, on: [{left: click_time, right: impression_time}], time: {left: x, right: y, lower: 1d, upper: -1d}}\n",
		"  - name: j\n    on: [{}, {left: 1}, [1]]\n    time: [1]\n",
		"  - {name: \"\", left: j, right: j, time: {lower: 99999999d, upper: 1h}}\n",
		"  []\n",
		"  - null\n",
		"  - {name: j, left: impressions, right: clicks, on: [{left: ad_id, right: ad_id}], time: {lower: 0s, upper: 1h}, table: silver/impressions_clicks, checkpoint: _checkpoints/impressions}\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, snippet string) {
		_, err := Parse([]byte(base+"joins:\n"+snippet), "p.yaml")
		if err == nil {
			return
		}
		for _, e := range unjoin(err) {
			var fe *FieldError
			if !errors.As(e, &fe) {
				t.Fatalf("error %q is not a *FieldError", e)
			}
			if fe.Source != "p.yaml" {
				t.Fatalf("error %q does not name the file", e)
			}
			if fe.Path == "" && fe.Line == 0 && !strings.HasPrefix(fe.Msg, "invalid YAML") {
				t.Fatalf("error %q names neither a field nor a line", e)
			}
		}
	})
}

// TestKafkaSourceBrokersFromEnv: a Kafka source of sources: without brokers takes
// KAFKA_BROKERS, as the top-level landing does.
func TestKafkaSourceBrokersFromEnv(t *testing.T) {
	p, err := Parse([]byte(strings.Replace(twoSources, "    stream: {event_time: click_time", "    landing: {kind: kafka, kafka: {topic: clicks}}\n    stream: {event_time: click_time", 1)), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p.ApplyEnv(func(k string) (string, bool) {
		if k == "KAFKA_BROKERS" {
			return "b1:9092, b2:9092", true
		}
		return "", false
	})
	if got := p.Sources[0].Landing.Kafka.Brokers; len(got) != 2 || got[0] != "b1:9092" || got[1] != "b2:9092" {
		t.Errorf("brokers %v", got)
	}
}

// TestSchemaEvolutionDefaults: schema_evolution.type_widening is off unless set; a sources:
// entry takes the top-level value unless it sets its own; each source's view names the columns
// its stateful definitions keep (event time, dedup keys, gold columns, join keys and times).
func TestSchemaEvolutionDefaults(t *testing.T) {
	p, err := Parse([]byte(twoSources), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p.SchemaEvolution.Widening() || p.AllSources()[1].SchemaEvolution.Widening() {
		t.Error("type widening is on without the key")
	}
	on := "schema_evolution: {type_widening: true}\n" + strings.Replace(twoSources,
		"  - name: clicks\n", "  - name: clicks\n    schema_evolution: {type_widening: false}\n", 1)
	p, err = Parse([]byte(on), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	imp, _ := p.ForSource("impressions")
	clicks, _ := p.ForSource("clicks")
	if !imp.SchemaEvolution.Widening() || clicks.SchemaEvolution.Widening() {
		t.Errorf("impressions widening %v (want true, the top level), clicks %v (want false, its own)",
			imp.SchemaEvolution.Widening(), clicks.SchemaEvolution.Widening())
	}
	inherit, err := Parse([]byte("schema_evolution: {type_widening: true}\n"+twoSources), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := inherit.ForSource("clicks"); !c.SchemaEvolution.Widening() {
		t.Error("clicks does not inherit the top-level type_widening")
	}
	want := map[string]map[string]string{
		"impressions": {"impression_time": "the event time (stream.event_time)", "ad_id": "a key of join ic"},
		"clicks":      {"click_time": "the event time (stream.event_time)", "ad_id": "a key of join ic"},
	}
	for name, w := range want {
		v, _ := p.ForSource(name)
		got := v.PinnedColumns()
		for c, what := range w {
			if got[c] != what {
				t.Errorf("%s: pinned %s = %q, want %q (all: %v)", name, c, got[c], what, got)
			}
		}
		if _, ok := got["price"]; ok {
			t.Errorf("%s: price is pinned, but no definition uses it: %v", name, got)
		}
	}
}
