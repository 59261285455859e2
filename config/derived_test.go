package config

import (
	"errors"
	"strings"
	"testing"
)

// threeLevels is 5m -> 1h -> 1d rollups of one source; the tests edit it.
const threeLevels = `lake: file:///var/lake
schema:
  - {name: event_id, type: string, required: true}
  - {name: event_type, type: string}
  - {name: country, type: string}
  - {name: amount, type: double}
  - {name: event_time, type: timestamp, required: true}
stream:
  watermark: 10m
gold:
  - name: e5m
    window: {type: tumbling, size: 5m}
    group_by: [event_type, country]
    aggregates:
      - {fn: count, as: n}
      - {fn: sum, column: amount, as: total}
      - {fn: min, column: amount, as: lo}
      - {fn: max, column: amount, as: hi}
      - {fn: avg, column: amount, as: mean}
  - name: e1h
    source: e5m
    window: {type: tumbling, size: 1h}
    group_by: [event_type]
    aggregates:
      - {fn: sum, column: n, as: n}
      - {fn: sum, column: total, as: total}
      - {fn: min, column: lo, as: lo}
      - {fn: max, column: hi, as: hi}
      - {fn: avg, column: mean, as: mean}
  - name: e1d
    source: e1h
    window: {type: tumbling, size: 1d}
    aggregates:
      - {fn: count, column: n, as: n}
      - {fn: avg, column: mean, as: mean}
`

func TestDerivedTables(t *testing.T) {
	p := mustParse(t, threeLevels)
	var order []string
	for _, g := range p.DerivedOrder() {
		order = append(order, g.Name)
	}
	if strings.Join(order, ",") != "e1h,e1d" {
		t.Errorf("DerivedOrder = %v, want e1h,e1d", order)
	}
	e1h, _ := p.GoldByName("e1h")
	if up, ok := p.UpstreamGold(*e1h); !ok || up.Name != "e5m" {
		t.Errorf("UpstreamGold(e1h) = %v, %v", up, ok)
	}
	if tc := p.GoldTimeColumn(*e1h); tc != DerivedTimeColumn {
		t.Errorf("time column %q", tc)
	}
	if got := p.GoldOf(p.Stream.Name); len(got) != 1 || got[0].Name != "e5m" {
		t.Errorf("the stream's golds = %v: a derived table is no aggregation of the stream", got)
	}
	if d := p.DerivedOf("e5m"); len(d) != 1 || d[0].Name != "e1h" {
		t.Errorf("DerivedOf(e5m) = %v", d)
	}
	e1d, _ := p.GoldByName("e1d")
	r, err := p.RollupOf(*e1h, e1d.Name, e1d.Aggregates[0])
	if err != nil || r != (Rollup{Kind: RollupSum, Column: "n", Fn: FnCount}) {
		t.Errorf("count over a summed count: %+v, %v", r, err)
	}
}

func TestDerivedTablesRefused(t *testing.T) {
	cases := []struct {
		name, old, new string
		want           []string
	}{
		{"valid", "", "", nil},
		{"size not a multiple", "size: 1h}", "size: 7m}", []string{`gold[1].window.size: window 7m of gold e1h is not a multiple of window 5m of gold e5m`}},
		{"not aligned", "size: 1h}", "size: 1h, start_time: 2m}", []string{`gold[1].window.start_time: windows of gold e1h (start_time 2m) are not aligned with those of gold e5m`}},
		{"aligned offset", "size: 1d}", "size: 1d, start_time: 2h}", nil},
		{"sliding downstream", "{type: tumbling, size: 1h}", "{type: sliding, size: 1h, slide: 30m}", []string{`gold[1].window.type: "sliding": gold e1h, derived from gold e5m, needs a tumbling window`}},
		{"sliding upstream", "{type: tumbling, size: 5m}", "{type: sliding, size: 10m, slide: 5m}", []string{`gold e1h is derived from gold e5m, whose sliding windows overlap`}},
		{"key not upstream", "group_by: [event_type]\n", "group_by: [amount]\n", []string{`gold[1].group_by[0]: "amount" is not a group_by column of gold e5m (event_type, country)`}},
		{"unknown column", "{fn: sum, column: total, as: total}", "{fn: sum, column: amount, as: total}", []string{`gold[1].aggregates[1]: column "amount" is not an aggregate column of gold e5m (its aggregates: n, total, lo, hi, mean)`}},
		{"count rows", "{fn: sum, column: n, as: n}", "{fn: count, as: n}", []string{`gold e1h counts rows of gold e5m, which are windows, not events: name the upstream count column, e.g. {fn: sum, column: n}`}},
		{"sum of a min", "{fn: sum, column: total, as: total}", "{fn: sum, column: lo, as: total}", []string{`gold e1h cannot compute sum over lo (a min of gold e5m)`}},
		{"min of a max", "{fn: min, column: lo, as: lo}", "{fn: min, column: hi, as: lo}", []string{`gold e1h cannot compute min over hi (a max of gold e5m)`}},
		{"avg of a sum", "{fn: avg, column: mean, as: mean}\n  - name: e1d", "{fn: avg, column: total, as: mean}\n  - name: e1d",
			[]string{`gold e1h cannot compute avg over total (a sum of gold e5m): an avg over a rollup is the sum of the upstream's total_sum over the sum of its total_count, which only an upstream avg keeps`}},
		{"count of a count, third level", "{fn: count, column: n, as: n}", "{fn: count, column: mean, as: n}", []string{`gold e1d cannot compute count over mean (a avg of gold e1h)`}},
		{"sketch", "{fn: max, column: hi, as: hi}", "{fn: approx_count_distinct, column: hi, as: hi}", []string{`sketch aggregates are not supported on a derived table yet`}},
		{"time column", "    source: e5m\n", "    source: e5m\n    time_column: event_time\n", []string{`gold[1].time_column: "event_time": gold e1h rolls up the windows of gold e5m, so its time column is window.start`}},
		{"update mode", "    source: e5m\n", "    source: e5m\n    output_mode: update\n", []string{`gold[1].output_mode: "update": gold e1h, derived from gold e5m, is written in append mode`}},
		{"feed off upstream", "  - name: e5m\n", "  - name: e5m\n    change_data_feed: false\n", []string{`gold[1].source: gold e1h is kept from the change feed of gold e5m, which has change_data_feed: false`}},
		{"cycle", "    source: e5m\n", "    source: e1d\n", []string{`gold[1].source: gold e1h is derived from itself through e1h -> e1d -> e1h`, `gold[2].source: gold e1d is derived from itself through e1d -> e1h -> e1d`}},
		{"self", "    source: e5m\n", "    source: e1h\n", []string{`gold e1h is derived from itself through e1h -> e1h`}},
		{"unknown source", "    source: e5m\n", "    source: e5n\n", []string{`gold[1].source: unknown source or join "e5n": expected one of events, or the name of another gold`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(threeLevels, c.old) {
				t.Fatalf("case edits %q, which the base config does not contain", c.old)
			}
			text := strings.Replace(threeLevels, c.old, c.new, 1)
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
