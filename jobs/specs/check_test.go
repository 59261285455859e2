package specs

import (
	"errors"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/config"
)

// joinsBase is impressions (top level) and clicks, left-outer joined; the tests edit it.
const joinsBase = `
schema:
  - {name: impression_id, type: string}
  - {name: ad_id, type: string}
  - {name: impression_time, type: timestamp}
stream: {name: impressions, event_time: impression_time, watermark: 2h}
sources:
  - name: clicks
    schema:
      - {name: click_id, type: string}
      - {name: ad_id, type: string}
      - {name: click_time, type: timestamp}
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
`

// TestCheckSparkTexts: the combinations Spark rejects come back with Spark's exact text
// (spec/stream-joins.md §1), as a config error at joins[i].type with its line; the ones it
// accepts pass.
func TestCheckSparkTexts(t *testing.T) {
	const noWatermark = " join between two streaming DataFrame/Datasets is not supported without a watermark in the join keys, or a watermark on the nullable side and an appropriate range condition"
	for _, c := range []struct {
		name     string
		old, new string
		want     string // "" accepted
	}{
		{"left outer", "", "", ""},
		{"left anti", "type: left_outer", "type: left_anti", "p.yaml:18: joins[0].type: LeftAnti joins with a streaming DataFrame/Dataset on the right are not supported"},
		{"cross", "type: left_outer", "type: cross", "p.yaml:18: joins[0].type: Join type Cross is not supported with streaming DataFrame/Dataset"},
		{"left outer, right without watermark", "stream: {event_time: click_time, watermark: 3h}", "stream: {event_time: click_time}", "joins[0].type: Stream-stream LeftOuter" + noWatermark},
		{"left semi, right without watermark", "stream: {event_time: click_time, watermark: 3h}\njoins:\n  - name: ic\n    left: impressions\n    right: clicks\n    type: left_outer",
			"stream: {event_time: click_time}\njoins:\n  - name: ic\n    left: impressions\n    right: clicks\n    type: left_semi", "joins[0].type: Stream-stream LeftSemi" + noWatermark},
		{"right outer, left without watermark", "watermark: 2h}\nsources", "}\nsources", ""}, // placeholder: the type stays left_outer
		{"inner without any watermark", "watermark: 2h}\nsources", "}\nsources", ""},
		{"full outer, one side bounded", "type: left_outer", "type: full_outer", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := strings.Replace(joinsBase, c.old, c.new, 1)
			if c.name == "right outer, left without watermark" {
				text = strings.Replace(text, "type: left_outer", "type: right_outer", 1)
				text = strings.Replace(text, "gold:\n  - name: g1\n", "gold:\n  - name: g1\n    output_mode: update\n", 1)
				c.want = "joins[0].type: Stream-stream RightOuter" + noWatermark
			}
			if c.name == "inner without any watermark" {
				text = strings.Replace(strings.Replace(text, "type: left_outer", "type: inner", 1), ", watermark: 3h", "", 1)
				text = strings.Replace(text, "gold:\n  - name: g1\n", "gold:\n  - name: g1\n    output_mode: update\n", 1)
			}
			cfg, err := config.Parse([]byte(text), "p.yaml")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			err = Check(cfg)
			if c.want == "" {
				if err != nil {
					t.Fatalf("Check rejected: %v", err)
				}
				return
			}
			var fe *config.FieldError
			if !errors.As(err, &fe) || !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check = %v, want %q", err, c.want)
			}
		})
	}
}

// TestCheckJoinedColumnsAgree: config's joined column names are the operator's (join.Output),
// for every join type of the example and a self join, where every right column is renamed.
func TestCheckJoinedColumnsAgree(t *testing.T) {
	for _, typ := range []string{"inner", "left_outer", "right_outer", "full_outer", "left_semi"} {
		for _, right := range []string{"clicks", "impressions"} {
			text := strings.Replace(strings.Replace(joinsBase, "type: left_outer", "type: "+typ, 1), "right: clicks", "right: "+right, 1)
			cfg, err := config.Parse([]byte(text), "p.yaml")
			if err != nil {
				t.Fatalf("%s/%s: %v", typ, right, err)
			}
			sp, err := JoinOperatorSpec(cfg, cfg.Joins[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := sameColumns(cfg, cfg.Joins[0], sp.Type); err != nil {
				t.Errorf("%s/%s: %v", typ, right, err)
			}
		}
	}
}

// FuzzJoinsConfig feeds YAML snippets in place of the joins: block (and what follows it) through
// the whole validation, Parse then Check: never a panic, and every problem is a
// *config.FieldError that names a field or a line.
func FuzzJoinsConfig(f *testing.F) {
	base, joinsAndGold, ok := strings.Cut(joinsBase, "joins:\n")
	if !ok {
		f.Fatal("base config has no joins:")
	}
	for _, seed := range []string{
		joinsAndGold,
		"  - {name: j, left: impressions, right: clicks, on: [{left: ad_id, right: ad_id}], time: {lower: 0s, upper: 1h}}\ngold:\n  - {name: g, source: j, window: {type: tumbling, size: 1h}, aggregates: [{fn: count}]}\n",
		"  - {name: j, left: impressions, right: impressions, type: full_outer, on: [{left: ad_id, right: ad_id}], time: {lower: -1h, upper: 1h}}\ngold: []\n",
		"  - {name: j, left: impressions, right: clicks, type: left_anti, on: [{left: ad_id, right: ad_id}], time: {lower: 0s, upper: 1h}}\n",
		"  - {name: j, left: clicks, right: impressions, type: cross, on: [{left: click_time, right: impression_time}], time: {left: x, right: y, lower: 1d, upper: -1d}}\n",
		"  - {name: j, left: impressions, right: clicks, type: right_outer, on: [{left: ad_id, right: ad_id}], time: {lower: 36600d, upper: 36600d}}\n",
		"  - name: j\n    on: [{}, {left: 1}, [1]]\n    time: [1]\n",
		"  []\n",
		"  - null\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, snippet string) {
		cfg, err := config.Parse([]byte(base+"joins:\n"+snippet), "p.yaml")
		if err == nil {
			err = Check(cfg)
		}
		if err == nil {
			return
		}
		for _, e := range unjoin(err) {
			var fe *config.FieldError
			if !errors.As(e, &fe) {
				t.Fatalf("error %q is not a *config.FieldError", e)
			}
			if fe.Path == "" && fe.Line == 0 && !strings.HasPrefix(fe.Msg, "invalid YAML") {
				t.Fatalf("error %q names neither a field nor a line", e)
			}
		}
	})
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoin(e)...)
		}
		return out
	}
	return []error{err}
}
