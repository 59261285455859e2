package report

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/internal/testutil"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
)

const joinsYAML = `
landing: {path: landing/impressions/}
schema:
  - {name: impression_id, type: string}
  - {name: ad_id, type: string}
  - {name: impression_time, type: timestamp}
tables: {bronze: bronze/impressions, silver: silver/impressions}
stream: {name: impressions, event_time: impression_time, watermark: 2h}
sources:
  - name: clicks
    schema:
      - {name: click_id, type: string}
      - {name: ad_id, type: string}
      - {name: click_time, type: timestamp}
    stream: {event_time: click_time, watermark: 3h}
joins:
  - {name: ic, left: impressions, right: clicks, type: left_outer, on: [{left: ad_id, right: ad_id}], time: {lower: 0s, upper: 1h}}
gold:
  - name: g1
    window: {type: tumbling, size: 1h}
    aggregates: [{fn: count}]
`

// TestJoinPanelsLenient: the join panel sums the per-side figures of the join's progress
// files (state rows: the last batch's), and a figure no file carries stays nil ("—" on the
// page) instead of failing the page.
func TestJoinPanelsLenient(t *testing.T) {
	ctx := context.Background()
	cfg := testutil.Pipeline(t, joinsYAML)
	lake := mem.New()
	put := func(key, body string) {
		if err := objstore.PutBytes(ctx, lake, key, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	put("_checkpoints/ic/progress/0.json", `{"batchId":0,"timestamp":"2024-05-01T12:00:00Z","eventTime":{"watermark":"2024-05-01T10:00:00.000Z"},
"stateOperators":[{"operatorName":"symmetricHashJoin","numRowsTotal":5,"customMetrics":{"numLeftInputRows":10,"numRightInputRows":4,"numLeftStateRows":7,"numLeftStateRows_unused":1,"numLateLeftRows":1}}],
"sink":{"metrics":{"numOutputRows":"3"}}}`)
	put("_checkpoints/ic/progress/1.json", `{"batchId":1,"timestamp":"2024-05-01T12:01:00Z",
"stateOperators":[{"operatorName":"stateStoreSave","customMetrics":{"numLeftInputRows":1000}},{"operatorName":"symmetricHashJoin","customMetrics":{"numLeftInputRows":2,"numRightInputRows":6,"numLeftStateRows":3,"numLateLeftRows":0}}],
"sink":{"metrics":{"numOutputRows":"5"}}}`)
	put("_checkpoints/ic/progress/2.json", `not json`)
	panels, err := JoinPanels(ctx, lake, cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(panels) != 1 {
		t.Fatalf("panels %+v", panels)
	}
	p := panels[0]
	val := func(v *int64) any {
		if v == nil {
			return nil
		}
		return *v
	}
	for name, c := range map[string]struct{ got, want any }{
		"left rows":   {val(p.LeftRows), int64(12)},
		"right rows":  {val(p.RightRows), int64(10)},
		"output rows": {val(p.OutputRows), int64(8)},
		"late left":   {val(p.LateLeft), int64(1)},
		"late right":  {val(p.LateRight), nil},
		"state left":  {val(p.StateLeft), int64(3)},
		"state right": {val(p.StateRight), nil},
		"last batch":  {val(p.LastBatch), int64(1)},
		"batches":     {p.Batches, 2},
		"problems":    {len(p.Problems), 1},
		"watermark":   {p.Watermark, "2024-05-01T10:00:00Z"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", name, c.got, c.want)
		}
	}

	// The page: a row per source (nothing ran: dashes) and the join's panel with its figures.
	r, err := Build(ctx, lake, cfg, ReportOptions{Now: time.Date(2024, 5, 1, 13, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	var html bytes.Buffer
	if err := r.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	page := html.String()
	for _, want := range []string{`<tr id="source-impressions"><td>impressions</td><td><code>bronze/impressions</code>`,
		`<tr id="source-clicks"><td>clicks</td><td><code>bronze/clicks</code>`,
		`<h3 id="join-ic">ic: impressions left_outer clicks</h3>`,
		`<tr><td>input rows</td><td class="num">12</td><td class="num">10</td></tr>`,
		`<tr><td>late rows (quarantined)</td><td class="num">1</td><td class="num">—</td></tr>`,
		`id="join-ic-output-rows">8<`,
		`<code>silver/ic</code>`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	var j struct {
		Name    string      `json:"name"`
		Sources []SourceRow `json:"sources"`
		Joins   []JoinPanel `json:"joins"`
		Tables  []struct {
			Role, Path string
		} `json:"tables"`
	}
	data, err := r.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &j); err != nil {
		t.Fatal(err)
	}
	if j.Name != "impressions" || len(j.Sources) != 2 || j.Sources[1].Name != "clicks" || len(j.Joins) != 1 || *j.Joins[0].LeftRows != 12 {
		t.Errorf("json: %s", data)
	}
	var roles []string
	for _, tb := range j.Tables {
		roles = append(roles, tb.Role+"="+tb.Path)
	}
	want := "impressions bronze=bronze/impressions impressions rejects=bronze/rejects impressions silver=silver/impressions " +
		"impressions quarantine g1=silver/late_g1 impressions gold g1=gold/g1 clicks bronze=bronze/clicks clicks silver=silver/clicks " +
		"ic joined=silver/ic ic quarantine=silver/late_ic"
	if got := strings.Join(roles, " "); got != want {
		t.Errorf("tables\n got %s\nwant %s", got, want)
	}
}
