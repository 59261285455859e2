package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	spec := `{"schema": {"type":"struct","fields":[{"name":"a","type":"double","nullable":true,"metadata":{}},
	  {"name":"t","type":"timestamp","nullable":true,"metadata":{}}]},
	  "rows": [{"a": 1.5, "t": "2024-01-01T00:00:00Z"}, {"a": "NaN"}, {}],
	  "exprs": ["a > 1", "t < current_timestamp()", "a >"], "now": "2024-06-01T00:00:00Z"}`
	var out bytes.Buffer
	if err := run(strings.NewReader(spec), &out); err != nil {
		t.Fatal(err)
	}
	want := `{"results":[[true,true,null],[true,null,null],null],"errors":[null,null,"at position 4: expected a column, a literal, a function call, ( or NOT, found the end of the expression"]}`
	if got := strings.TrimSpace(out.String()); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
