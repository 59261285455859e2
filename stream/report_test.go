package stream

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

// TestReportJSONKeys pins the key order of the stream and join summaries (docs/commands.md,
// the `stream` rows): both reports start with the fields every query's run has (RunSummary),
// embedded, and the CLI prints them in this order.
func TestReportJSONKeys(t *testing.T) {
	cases := []struct {
		name string
		v    any
		want []string
	}{
		{"stream", Report{Gold: []GoldReport{}, Expectations: []ExpectationProgress{{}}}, []string{"queryId", "batches", "lastBatchId", "watermarkMs",
			"numInputRows", "numSilverRows", "numValidationRejects", "numDuplicatesDropped", "gold", "expectations"}},
		{"join", JoinReport{Gold: []GoldReport{}, SourceWatermarksMs: map[string]int64{"a": 1}}, []string{"name", "queryId", "batches", "lastBatchId",
			"watermarkMs", "numLeftRows", "numRightRows", "numOutputRows", "numLateLeftRows", "numLateRightRows", "gold",
			"numMatchedRows", "numLeftUnmatchedRows", "numRightUnmatchedRows", "sourceWatermarksMs"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data, err := json.Marshal(c.v)
			if err != nil {
				t.Fatal(err)
			}
			if got := topKeys(t, data); !slices.Equal(got, c.want) {
				t.Fatalf("keys %v, want %v", got, c.want)
			}
		})
	}
}

// topKeys are the keys of the JSON object data, in order.
func topKeys(t *testing.T, data []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // {
		t.Fatal(err)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}
