package config

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// transformed: computed columns used as the event time, a dedup key, a group-by and an
// aggregate column, and a filter.
const transformed = `lake: file:///var/lake
schema:
  - {name: event_id, type: string, required: true}
  - {name: event_type, type: string}
  - {name: amount, type: double}
  - {name: event_time, type: timestamp}
transform:
  columns:
    - {name: id_norm, expr: "upper(trim(event_id))"}
    - {name: kind, expr: "lower(coalesce(event_type, 'unknown'))"}
    - {name: amount_cents, expr: "amount * 100"}
    - {name: at, expr: "coalesce(event_time, _ingest_time)"}
  filter: {name: no_test_traffic, expr: "kind <> 'test'"}
stream:
  event_time: at
  watermark: 10m
  dedup: [id_norm]
gold:
  - name: g5
    window: {type: tumbling, size: 5m}
    group_by: [kind]
    aggregates: [{fn: count}, {fn: sum, column: amount_cents, as: cents}]
`

func TestTransformConfig(t *testing.T) {
	p := mustParse(t, transformed)
	if n := len(p.Transform.Columns); n != 4 {
		t.Fatalf("%d computed columns", n)
	}
	if f := p.Transform.Filter; f == nil || f.OnFilter != OnFilterReject {
		t.Fatalf("filter %+v: on_filter defaults to reject", f)
	}
	s, _ := p.SourceByName(p.Stream.Name)
	st := s.SilverSchema()
	var got []string
	for _, f := range st.Fields[len(st.Fields)-4:] {
		got = append(got, f.Name+" "+f.Type.TypeName())
	}
	if want := "id_norm string, kind string, amount_cents double, at timestamp"; strings.Join(got, ", ") != want {
		t.Errorf("computed columns %s, want %s", strings.Join(got, ", "), want)
	}
	v, _ := p.ForSource(p.Stream.Name)
	if len(v.Transform.Columns) != 4 {
		t.Error("ForSource lost the transform")
	}
}

// Every problem of a transform is reported at load with its line, its field (the source's
// path included), the column or filter and, for an expression, the position.
func TestTransformConfigErrors(t *testing.T) {
	base := strings.SplitN(transformed, "transform:", 2)[0]
	tail := "stream:\n  watermark: 10m\ngold:\n  - name: g5\n    window: {type: tumbling, size: 5m}\n    aggregates: [{fn: count}]\n"
	cases := []struct{ transform, want string }{
		{"columns: [{name: a, expr: \"b + 1\"}, {name: b, expr: \"amount\"}]",
			`p.yaml:8: transform.columns[0].expr: computed column "a" reads computed column "b", defined after it (transform.columns[1]): columns are computed in order, so move "b" before "a"`},
		{"columns: [{name: a, expr: \"a + 1\"}]", `transform.columns[0].expr: computed column "a" reads itself`},
		{"columns: [{name: a, expr: \"amount\"}, {name: A, expr: \"amount\"}]",
			`transform.columns[1].name: duplicate computed column "A" (already transform.columns[0]`},
		{"columns: [{name: amount, expr: \"amount * 2\"}]", `transform.columns[0].name: computed column "amount" has the name of a declared column "amount"`},
		{"columns: [{name: _ingest_time, expr: \"amount\"}]", `transform.columns[0].name: "_ingest_time" is reserved for bronze metadata`},
		{"columns: [{name: a, expr: \"amount +\"}]", `transform.columns[0].expr: computed column "a": at position 9: expected a column`},
		{"columns: [{name: a, expr: \"amout * 2\"}]", `transform.columns[0].expr: computed column "a": at position 1: column amout does not exist`},
		{"columns: [{name: a, expr: \"NULL\"}]", `transform.columns[0].expr: computed column "a": at position 1: NULL: expected a value with a column type (cast it`},
		{"columns: [{name: a}]", `transform.columns[0].expr: required: expected a Spark SQL expression for computed column "a"`},
		{"columns: [{expr: \"amount\"}]", `transform.columns[0].name: required`},
		{"filter: {name: f, expr: \"amount\"}", `transform.filter.expr: filter "f": at position 1: amount: expected a boolean expression, found double`},
		{"filter: {expr: \"amount > 0\"}", `transform.filter.name: required: expected a name such as no_test_traffic`},
		{"filter: {name: f, expr: \"amount > 0\", on_filter: skip}", `transform.filter.on_filter: invalid value "skip": expected reject or drop`},
		{"columns: [{name: a, expr: \"amount\", type: long}]", `unknown key "type" in transform.columns[0]`},
		{"columns: [{name: a, expr: \"CURRENT_TIMESTAMP()\"}]", `transform.columns[0].expr: computed column "a": current_timestamp() is not allowed in a transform`},
		{"filter: {name: f, expr: \"event_time < current_timestamp()\"}", `transform.filter.expr: filter "f": current_timestamp() is not allowed`},
	}
	for _, c := range cases {
		_, err := Parse([]byte(base+"transform:\n  "+c.transform+"\n"+tail), "p.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant ~%s", c.transform, err, c.want)
		}
	}
}

// The names a query's later stages use may be computed columns, and are checked against their
// types: a string computed column cannot be summed, a double one is no event time.
func TestTransformConfigColumnUses(t *testing.T) {
	cases := []struct{ from, to, want string }{
		{"{fn: sum, column: amount_cents, as: cents}", "{fn: sum, column: kind, as: cents}", `needs a numeric column`},
		{"event_time: at", "event_time: amount_cents", `stream.event_time: column "amount_cents" has type double: expected timestamp`},
		{"dedup: [id_norm]", "dedup: [id_nrom]", `stream.dedup[0]: column "id_nrom" is not in schema`},
	}
	for _, c := range cases {
		text := strings.Replace(transformed, c.from, c.to, 1)
		_, err := Parse([]byte(text), "p.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant ~%s", c.to, err, c.want)
		}
	}
}

// Under sources[] the paths name the source, and a join may use a computed column as its key.
func TestTransformConfigSources(t *testing.T) {
	text := transformed + `sources:
  - name: clicks
    schema:
      - {name: click_id, type: string}
      - {name: ref, type: string}
      - {name: click_time, type: timestamp}
    transform:
      columns: [{name: ref_norm, expr: "upper(trim(ref))"}]
    stream: {event_time: click_time, watermark: 1h}
joins:
  - {name: ec, left: events, right: clicks, on: [{left: id_norm, right: ref_norm}], time: {lower: 0s, upper: 1h}}
`
	text = strings.Replace(text, "stream:\n  event_time: at", "stream:\n  name: events\n  event_time: at", 1)
	p := mustParse(t, text)
	if p.Sources[0].Transform.Columns[0].Name != "ref_norm" {
		t.Fatalf("sources[0].transform %+v", p.Sources[0].Transform)
	}
	bad := strings.Replace(text, `"upper(trim(ref))"`, `"upper(trim(reff))"`, 1)
	_, err := Parse([]byte(bad), "p.yaml")
	if want := `sources[0].transform.columns[0].expr: computed column "ref_norm": at position 12: column reff does not exist`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v\nwant ~%s", err, want)
	}
}

// The commented transform of examples/pipeline.yaml is a valid config once uncommented, and a
// printed config (Redacted) keeps a transform as written.
func TestTransformExampleAndPrint(t *testing.T) {
	data, err := os.ReadFile("../examples/pipeline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i := strings.Index(text, "# transform:\n")
	if i < 0 {
		t.Fatal("examples/pipeline.yaml has no commented transform: example")
	}
	var block []string
	for _, line := range strings.Split(text[i:], "\n") {
		if !strings.HasPrefix(line, "# ") {
			break
		}
		block = append(block, strings.TrimPrefix(line, "# "))
	}
	p, err := Parse([]byte(text+"\n"+strings.Join(block, "\n")+"\n"), "pipeline.yaml")
	if err != nil {
		t.Fatalf("the example's transform: %v", err)
	}
	if len(p.Transform.Columns) != 3 || p.Transform.Filter == nil {
		t.Fatalf("the example's transform: %+v", p.Transform)
	}
	q, err := Parse([]byte(mustParse(t, transformed).Redacted()), "printed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(q.Transform, mustParse(t, transformed).Transform) {
		t.Errorf("printed transform %+v", q.Transform)
	}
}

// Expectations are judged after the computed columns are computed (docs/transforms.md), so
// they may read them, typed by their expressions; a typo or a type error in such an expectation
// fails at load, and an expectation over a computed column that does not type is not reported
// twice (the column's own error is).
func TestTransformConfigExpectations(t *testing.T) {
	ok := transformed + "expectations:\n  - {name: cents_ok, expect: \"amount_cents IS NULL OR amount_cents < 1e6\", on_violation: drop}\n" +
		"  - {name: known_kind, expect: \"kind IN ('view', 'click')\", on_violation: warn}\n"
	if _, err := Parse([]byte(ok), "p.yaml"); err != nil {
		t.Fatalf("an expectation on computed columns: %v", err)
	}
	cases := []struct{ expect, want string }{
		{"amount_cent > 0", `expectations[0].expect: expectation "e": at position 1: column amount_cent does not exist`},
		{"kind + 1", `expectations[0].expect: expectation "e": at position 1: (kind + 1): expected a boolean expression, found double`},
	}
	for _, c := range cases {
		text := transformed + "expectations:\n  - {name: e, expect: \"" + c.expect + "\"}\n"
		_, err := Parse([]byte(text), "p.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant ~%s", c.expect, err, c.want)
		}
	}
	bad := strings.Replace(transformed, `"amount * 100"`, `"amout * 100"`, 1) +
		"expectations:\n  - {name: e, expect: \"amount_cents > 0\"}\n"
	_, err := Parse([]byte(bad), "p.yaml")
	if err == nil || !strings.Contains(err.Error(), "column amout does not exist") || strings.Contains(err.Error(), "expectations[0]") {
		t.Errorf("a computed column that does not type: got %v, want its own error only", err)
	}
}
