package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/internal/testutil"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/stream"
)

// TestReportExpectations: the expectation counts the stream writes into progress reach the
// report's section (totals table, per-batch chart) and its JSON.
func TestReportExpectations(t *testing.T) {
	lake := mem.New()
	at := time.Date(2024, 5, 4, 12, 0, 0, 0, time.UTC)
	for n := range int64(3) {
		p := &stream.Progress{ID: "q", RunID: "r", Name: "events", Timestamp: at.Add(time.Duration(n) * time.Minute), BatchID: n,
			NumInputRows: 100, DurationMs: map[string]int64{"triggerExecution": 10},
			Sink: stream.SinkProgress{Description: "DeltaSink[silver/events]", NumOutputRows: -1, Metrics: map[string]string{}},
			Expectations: []stream.ExpectationProgress{
				{Name: "non_negative", OnViolation: "drop", Passed: 90 - n, Failed: 10 + n, Dropped: 10 + n},
				{Name: "known_type", OnViolation: "warn", Passed: 100},
			}}
		data, err := p.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if err := objstore.PutBytes(context.Background(), lake, fmt.Sprintf("_checkpoints/events/progress/%d.json", n), data); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testutil.Pipeline(t, "lake: mem\n"+testutil.EventsSchema+`stream: {watermark: 10m}
gold:
  - name: g5
    window: {type: tumbling, size: 5m}
    aggregates: [{fn: count}]
`)
	batches, problems, err := StreamProgress(context.Background(), lake, cfg, 0)
	if err != nil || len(problems) > 0 || len(batches) != 3 {
		t.Fatalf("StreamProgress: %d batches, %v, %v", len(batches), problems, err)
	}
	r := &Report{Generated: at, Source: "p.yaml", Lake: "mem", Checkpoint: "_checkpoints/events", Batches: batches}
	totals := r.ExpectationTotals()
	want := []ExpectationTotal{
		{ExpectationCounts{Name: "non_negative", OnViolation: "drop", Passed: 267, Failed: 33, Dropped: 33}, 0.11},
		{ExpectationCounts{Name: "known_type", OnViolation: "warn", Passed: 300}, 0},
	}
	if fmt.Sprint(totals) != fmt.Sprint(want) {
		t.Errorf("totals %+v, want %+v", totals, want)
	}
	var page bytes.Buffer
	if err := r.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	checkPage(t, page.String())
	for _, s := range []string{`<section id="expectations">`, `<tr id="expectation-non_negative"><td>non_negative</td><td>drop</td><td class="num">267</td><td class="num problem">33</td><td class="num">33</td><td class="num">11.00%</td></tr>`,
		"Expectation violations per batch", "non_negative (drop)"} {
		if !strings.Contains(page.String(), s) {
			t.Errorf("page lacks %s", s)
		}
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Batches []struct {
			Expectations []ExpectationCounts `json:"expectations"`
		} `json:"batches"`
	}
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Batches) != 3 || back.Batches[2].Expectations[0].Failed != 12 {
		t.Errorf("JSON batches %+v", back.Batches)
	}
	// Without expectations there is no section.
	r.Batches = r.Batches[:0]
	page.Reset()
	if err := r.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page.String(), `id="expectations"`) {
		t.Error("a report without expectations shows the section")
	}
}
