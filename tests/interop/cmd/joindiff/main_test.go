package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestRunJV4 is spec/stream-joins.md's vector JV4 (inner ±5s, delays 10s; verified on PySpark):
// step 1 pairs (L1@20, R1@20) and moves W to 10 s, so a no-data batch follows; step 2 drops
// the two rows at exactly W_late = 10 s and pairs the two at 10.001 s. Ids: 1-2 step 1, 3-6
// step 2.
func TestRunJV4(t *testing.T) {
	in := `{"types": ["inner"], "lower_us": -5000000, "upper_us": 5000000,
	  "left_delay_ms": 10000, "right_delay_ms": 10000,
	  "steps": [{"left": [[1, 1, 20000000]], "right": [[2, 1, 20000000]]},
	            {"left": [[3, 1, 10000000], [4, 1, 10001000]], "right": [[5, 1, 10000000], [6, 1, 10001000]]}]}`
	var out bytes.Buffer
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	want := `{"inner":[` +
		`{"step":0,"no_data":false,"late_ms":0,"watermark_ms":0,"dropped":0,"rows":[[1,2]]},` +
		`{"step":0,"no_data":true,"late_ms":0,"watermark_ms":10000,"dropped":0,"rows":[]},` +
		`{"step":1,"no_data":false,"late_ms":10000,"watermark_ms":10000,"dropped":2,"rows":[[4,6]]}]}`
	if got := strings.TrimSpace(out.String()); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestRunRejects(t *testing.T) {
	for name, in := range map[string]string{
		"unknown type": `{"types": ["left_anti"], "lower_us": 0, "upper_us": 1, "steps": []}`,
		"missing id":   `{"types": ["inner"], "lower_us": 0, "upper_us": 1, "steps": [{"left": [[null, 1, 5]]}]}`,
		"unknown key":  `{"types": ["inner"], "lowr_us": 0}`,
	} {
		if err := run(strings.NewReader(in), &bytes.Buffer{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestRunBacklog is JV4's two steps as two files of one step: no no-data batch runs between
// them (Spark runs one only when no new data is available), so the second file is judged late
// against W = 0, not 10 s, and its four rows pair up instead of two being dropped.
func TestRunBacklog(t *testing.T) {
	in := `{"types": ["inner"], "lower_us": -5000000, "upper_us": 5000000,
	  "left_delay_ms": 10000, "right_delay_ms": 10000,
	  "steps": [{"left": [[1, 1, 20000000]], "right": [[2, 1, 20000000]],
	             "more": [{"left": [[3, 1, 10000000], [4, 1, 10001000]], "right": [[5, 1, 10000000], [6, 1, 10001000]]}]}]}`
	var out bytes.Buffer
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	var got map[string][]batch
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	b := got["inner"]
	if len(b) != 2 || b[0].WatermarkMs != 0 || b[1].LateMs != 0 || b[1].WatermarkMs != 10000 || b[1].Dropped != 0 || b[1].NoData {
		t.Fatalf("batches %+v, want two data batches, the second judged late at 0 and evicting at 10 s", b)
	}
	var pairs []string
	for _, r := range b[1].Rows {
		pairs = append(pairs, fmt.Sprintf("%d-%d", *r[0], *r[1]))
	}
	slices.Sort(pairs)
	if want := []string{"3-5", "3-6", "4-5", "4-6"}; !slices.Equal(pairs, want) {
		t.Errorf("second batch pairs %v, want %v", pairs, want)
	}
}
