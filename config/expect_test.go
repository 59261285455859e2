package config

import (
	"strings"
	"testing"
)

func TestExpectationsConfig(t *testing.T) {
	p := mustParse(t, minimal+`expectations:
  - {name: non_negative, expect: "amount IS NULL OR amount >= 0", on_violation: drop}
  - {name: known_type, expect: "event_type IN ('click', 'view')"}
  - {name: recent, expect: "event_time > current_timestamp() - INTERVAL '7' DAY", on_violation: fail}
`)
	want := []Expectation{
		{Name: "non_negative", Expect: "amount IS NULL OR amount >= 0", OnViolation: "drop"},
		{Name: "known_type", Expect: "event_type IN ('click', 'view')", OnViolation: "warn"}, // the default
		{Name: "recent", Expect: "event_time > current_timestamp() - INTERVAL '7' DAY", OnViolation: "fail"},
	}
	if len(p.Expectations) != len(want) {
		t.Fatalf("expectations %+v", p.Expectations)
	}
	for i := range want {
		if p.Expectations[i] != want[i] {
			t.Errorf("expectation %d = %+v, want %+v", i, p.Expectations[i], want[i])
		}
	}
}

// Every problem of an expectation is reported at load with its line, field, the
// expectation's name and, for the expression, the position and what was expected.
func TestExpectationsConfigErrors(t *testing.T) {
	cases := []struct{ item, want string }{
		{`{name: a, expect: "amount >", on_violation: drop}`,
			`p.yaml:15: expectations[0].expect: expectation "a": at position 9: expected a column, a literal, a function call, ( or NOT, found the end of the expression`},
		{`{name: a, expect: "amount IN (1, 2", on_violation: drop}`,
			`expectations[0].expect: expectation "a": at position 16: expected , or ) in the IN list`},
		{`{name: a, expect: "amout > 1"}`,
			`expectations[0].expect: expectation "a": at position 1: column amout does not exist (expected one of: event_id, event_type, amount, event_time, _rescued_data`},
		{`{name: a, expect: "amount"}`,
			`expectations[0].expect: expectation "a": at position 1: amount: expected a boolean expression, found double`},
		{`{name: a, expect: "event_time + 1 > 0"}`,
			`expectation "a": at position 1: (event_time + 1): expected operands of addition`},
		{`{name: a, expect: "amount > 0", on_violation: skip}`,
			`expectations[0].on_violation: invalid value "skip": expected warn, drop or fail`},
		{`{name: "a b", expect: "amount > 0"}`, `expectations[0].name: invalid name "a b"`},
		{`{expect: "amount > 0"}`, `expectations[0].name: required`},
		{`{name: a}`, `expectations[0].expect: required: expected a boolean SQL expression`},
		{`{name: a, expect: "amount > 0", on_fail: drop}`, `unknown key "on_fail" in expectations[0]`},
	}
	for _, c := range cases {
		_, err := Parse([]byte(minimal+"expectations:\n  - "+c.item+"\n"), "p.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant ~%s", c.item, err, c.want)
		}
	}
	_, err := Parse([]byte(minimal+"expectations:\n  - {name: a, expect: \"amount > 0\"}\n  - {name: A, expect: \"amount > 1\"}\n"), "p.yaml")
	if err == nil || !strings.Contains(err.Error(), `expectations[1].name: duplicate expectation "A"`) {
		t.Errorf("duplicate names: %v", err)
	}
}
