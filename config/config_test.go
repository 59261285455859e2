package config

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

// minimal is the smallest valid config; error cases edit it.
const minimal = `lake: file:///var/lake
schema:
  - {name: event_id, type: string, required: true}
  - {name: event_type, type: string}
  - {name: amount, type: double}
  - {name: event_time, type: timestamp, required: true}
stream:
  watermark: 10m
gold:
  - name: g5
    window: {type: tumbling, size: 5m}
    group_by: [event_type]
    aggregates: [{fn: count}]
`

func mustParse(t *testing.T, text string) *Pipeline {
	t.Helper()
	p, err := Parse([]byte(text), "p.yaml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

// fieldErrors flattens a joined error into its FieldErrors.
func fieldErrors(t *testing.T, err error) []*FieldError {
	t.Helper()
	var out []*FieldError
	for _, e := range unjoin(err) {
		var fe *FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("error %q is not a *FieldError", e)
		}
		out = append(out, fe)
	}
	return out
}

func TestParseExample(t *testing.T) {
	// The example leaves the endpoint to the environment, as scripts/minio.sh start sets it.
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000")
	p, err := Load("../examples/pipeline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"lake", p.Lake, "s3://lake"},
		{"endpoint", p.S3.Endpoint, "http://127.0.0.1:9000"},
		{"path style", p.S3.UsePathStyle(), true},
		{"landing", p.Landing.Path, "landing/events/"},
		{"max line", p.Landing.MaxLineBytes.Bytes, int64(1 << 20)},
		{"max decompressed", p.Landing.MaxDecompressedBytes.Bytes, int64(1 << 30)},
		{"columns", len(p.Schema), 4},
		{"event_time type", p.Schema[3].Type.Kind, KindTimestamp},
		{"event_id required", p.Schema[0].Required, true},
		{"amount required", p.Schema[2].Required, false},
		{"silver", p.Tables.Silver, "silver/events"},
		{"watermark", p.Stream.Watermark.Duration, 10 * time.Minute},
		{"skew", p.Stream.MaxFutureSkew.Duration, time.Hour},
		{"dedup", p.Stream.Dedup, []string{"event_id"}},
		{"trigger", p.Stream.Trigger.Kind, TriggerAvailableNow},
		{"gold count", len(p.Gold), 2},
		{"gold 1h size", p.Gold[1].Window.Size.Duration, time.Hour},
		{"gold 5m slide", p.Gold[0].Window.EffectiveSlide().Duration, 5 * time.Minute},
		{"aggregate", p.Gold[0].Aggregates[1], Aggregate{Fn: "sum", Column: "amount", As: "total_amount"}},
		{"replay lookback", p.Jobs.Replay.Lookback.Duration, 24 * time.Hour},
		{"replay schedule", p.Jobs.Replay.Schedule, "30 2 * * *"},
		{"stream after", p.Jobs.Stream.After, "ingest"},
		{"vacuum retain", p.Jobs.Vacuum.Retain.Duration, 168 * time.Hour},
		{"optimize size", p.Jobs.Optimize.TargetFileSize.Bytes, int64(128 << 20)},
		{"listen", p.Serve.Listen, "127.0.0.1:9464"},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
	if g, ok := p.GoldByName("events_1h"); !ok || g.Quarantine != "silver/late_events_1h" {
		t.Errorf("GoldByName(events_1h) = %+v, %v", g, ok)
	}
}

func TestGoldenRedacted(t *testing.T) {
	data, err := os.ReadFile("../examples/pipeline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(data, "pipeline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p.ApplyEnv(mapEnv(map[string]string{"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "s3cr3t-value"}))
	got := p.Redacted()
	golden := filepath.Join("testdata", "example.golden.yaml")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("Redacted() differs from %s (rerun with -update after checking):\n%s", golden, got)
	}
	if strings.Contains(got, "s3cr3t") || strings.Contains(got, "AKIAEXAMPLE") {
		t.Errorf("Redacted() shows a secret:\n%s", got)
	}
	// The printed config is itself a valid config meaning the same thing.
	q, err := Parse([]byte(got), "pipeline.yaml")
	if err != nil {
		t.Fatalf("Redacted output does not parse: %v", err)
	}
	q.ApplyEnv(mapEnv(map[string]string{"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "s3cr3t-value"}))
	if q.Redacted() != got {
		t.Errorf("Redacted is not a fixed point:\n%s", q.Redacted())
	}
}

func mapEnv(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestDefaults(t *testing.T) {
	p := mustParse(t, minimal)
	checks := []struct {
		name      string
		got, want any
	}{
		{"landing", p.Landing.Path, "landing/events/"},
		{"format", p.Landing.Format, "json"},
		{"landing files", p.Landing.MaxFilesPerTrigger, 1000},
		{"bronze", p.Tables.Bronze, "bronze/events"},
		{"rejects", p.Tables.Rejects, "bronze/rejects"},
		{"silver", p.Tables.Silver, "silver/events"},
		{"stream name", p.Stream.Name, "events"},
		{"checkpoint", p.Stream.Checkpoint, "_checkpoints/events"},
		{"event_time", p.Stream.EventTime, "event_time"},
		{"skew", p.Stream.MaxFutureSkew.Duration, time.Hour},
		{"trigger", p.Stream.Trigger.String(), "available-now"},
		{"gold table", p.Gold[0].Table, "gold/g5"},
		{"quarantine", p.Gold[0].Quarantine, "silver/late_g5"},
		{"output mode", p.Gold[0].OutputMode, "append"},
		{"agg name", p.Gold[0].Aggregates[0].As, "count"},
		{"path style", p.S3.UsePathStyle(), false},
		{"listen", p.Serve.Listen, "127.0.0.1:9464"},
		{"lease", p.Serve.LeaseTTL.Duration, time.Minute},
		{"notify", p.Landing.Notify.Mode, "poll"},
		{"state", []any{p.Stream.State.MinDeltasForSnapshot, p.Stream.State.MinBatchesToRetain}, []any{10, 100}},
		{"dedup retention defaults to the watermark", p.Stream.State.DedupRetention.Duration, p.Stream.Watermark.Duration},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
	p = mustParse(t, strings.Replace(minimal, "aggregates: [{fn: count}]",
		"aggregates: [{fn: sum, column: amount}, {fn: approx_count_distinct, column: event_id}, {fn: approx_percentile, column: amount, percentiles: [0.5]}]", 1))
	a := p.Gold[0].Aggregates
	if a[0].As != "sum_amount" || a[1].RSD != 0.05 || a[2].RelativeAccuracy != 0.01 || a[2].As != "approx_percentile_amount" {
		t.Errorf("aggregate defaults: %+v", a)
	}
}

func TestErrors(t *testing.T) {
	// Each case edits minimal (replace old with new; old "" appends) and lists substrings that
	// must each appear in one of the reported errors, location included.
	cases := []struct {
		name     string
		old, new string
		want     []string
	}{
		{"unknown key with hint", "  watermark: 10m", "  watermrk: 10m", []string{`p.yaml:8: unknown key "watermrk" in stream (did you mean "watermark"?)`}},
		{"unknown top-level key", "", "lakes: x\n", []string{`p.yaml:14: unknown key "lakes" in the top level (did you mean "lake"?)`}},
		{"unknown key, no hint", "", "zzz: 1\n", []string{`p.yaml:14: unknown key "zzz" in the top level (expected one of: lake, s3, `}},
		{"unknown nested key", "{type: tumbling, size: 5m}", "{type: tumbling, size: 5m, sise: 1m}", []string{`p.yaml:11: unknown key "sise" in gold[0].window (did you mean "size"?)`}},
		{"duplicate key", "  watermark: 10m", "  watermark: 10m\n  watermark: 5m", []string{`p.yaml:9: duplicate key "watermark" in stream (first at line 8)`}},
		{"bad duration", "watermark: 10m", "watermark: 10x", []string{`p.yaml:8: stream.watermark: invalid duration "10x"`}},
		{"bare number duration", "watermark: 10m", "watermark: 10", []string{`p.yaml:8: stream.watermark: invalid duration "10"`}},
		{"empty duration is not the default", "watermark: 10m", "watermark: 10m\n  max_future_skew: \"\"", []string{`p.yaml:9: stream.max_future_skew: invalid duration ""`}},
		{"empty byte size is not the default", "", "landing: {max_line_bytes: \"\"}\n", []string{`landing.max_line_bytes: invalid byte size ""`}},
		{"empty trigger is not the default", "watermark: 10m", "watermark: 10m\n  trigger: \"\"", []string{`stream.trigger: invalid trigger ""`}},
		{"negative duration", "watermark: 10m", "watermark: -10m", []string{`p.yaml:8: stream.watermark: -10m is too small`}},
		{"duration as mapping", "watermark: 10m", "watermark: {a: 1}", []string{`p.yaml:8: stream.watermark: expected a single value, got a mapping`}},
		{"negative int", "", "landing: {max_files_per_trigger: -3}\n", []string{`p.yaml:14: landing.max_files_per_trigger: -3 is negative`}},
		{"bad byte size", "watermark: 10m", "watermark: 10m\n  max_bytes_per_trigger: 2 pages", []string{`p.yaml:9: stream.max_bytes_per_trigger: invalid byte size "2 pages"`}},
		{"negative byte size", "watermark: 10m", "watermark: 10m\n  max_bytes_per_trigger: -5MB", []string{`p.yaml:9: stream.max_bytes_per_trigger: -5MB is negative`}},
		{"int as string", "", "landing: {max_files_per_trigger: lots}\n", []string{`p.yaml:14: landing.max_files_per_trigger: expected an integer, got "lots"`}},
		{"bool as string", "required: true}", "required: yes please}", []string{`p.yaml:3: schema[0].required: expected true or false, got "yes please"`}},
		{"list expected", "group_by: [event_type]", "group_by: event_type", []string{`p.yaml:12: gold[0].group_by: expected a list, got "event_type"`}},
		{"unknown type", "type: double", "type: dbl", []string{`p.yaml:5: schema[2].type: unknown type "dbl"`}},
		{"type alias hint", "type: double", "type: bigint", []string{`schema[2].type: unknown type "bigint" (did you mean "long"?)`}},
		{"format on a string", "{name: event_type, type: string}", "{name: event_type, type: string, format: \"yyyy\"}", []string{`p.yaml:4: schema[1].format: column "event_type" has type string: format and unit are only for timestamp columns`}},
		{"unit on a double", "type: double}", "type: double, unit: ms}", []string{`schema[2].unit: column "amount" has type double: format and unit are only for timestamp columns`}},
		{"format and unit", "type: timestamp, required: true}", "type: timestamp, required: true, unit: ms, format: \"yyyy\"}", []string{`schema[3].format: column "event_time": format and unit are exclusive`}},
		{"unknown pattern letter", "type: timestamp, required: true}", "type: timestamp, required: true, format: \"YYYY-MM-dd\"}", []string{`schema[3].format: column "event_time": bad timestamp format: pattern "YYYY-MM-dd": unsupported pattern letter 'Y'`}},
		{"unknown unit", "type: timestamp, required: true}", "type: timestamp, required: true, unit: seconds}", []string{`schema[3].unit: column "event_time": bad timestamp format: unit "seconds": expected s, ms, us or ns`}},
		{"bad decimal", "type: double", "type: \"decimal(40,2)\"", []string{`schema[2].type: invalid type "decimal(40,2)": decimal precision must be 1..38`}},
		{"decimal without args", "type: double", "type: decimal", []string{`schema[2].type: invalid type "decimal": expected decimal(precision,scale)`}},
		{"missing type", "{name: amount, type: double}", "{name: amount}", []string{`p.yaml:5: schema[2].type: required`}},
		{"duplicate column", "{name: amount, type: double}", "{name: Event_ID, type: double}", []string{`schema[2].name: duplicate column "Event_ID"`}},
		{"reserved column", "{name: amount, type: double}", "{name: _rescued_data, type: string}", []string{`schema[2].name: "_rescued_data" is reserved`}},
		{"no schema", "schema:\n  - {name: event_id, type: string, required: true}\n  - {name: event_type, type: string}\n  - {name: amount, type: double}\n  - {name: event_time, type: timestamp, required: true}\n", "", []string{`p.yaml: schema: required`}},
		{"event_time missing", "  watermark: 10m", "  watermark: 10m\n  event_time: ts", []string{`p.yaml:9: stream.event_time: column "ts" is not in schema (columns: event_id, event_type, amount, event_time)`}},
		{"event_time not timestamp", "  watermark: 10m", "  watermark: 10m\n  event_time: amount", []string{`p.yaml:9: stream.event_time: column "amount" has type double: expected timestamp or timestamp_ntz`}},
		{"dedup not in schema", "  watermark: 10m", "  watermark: 10m\n  dedup: [id]", []string{`p.yaml:9: stream.dedup[0]: column "id" is not in schema`}},
		{"group_by not in schema", "group_by: [event_type]", "group_by: [kind]", []string{`p.yaml:12: gold[0].group_by[0]: column "kind" is not in schema`}},
		{"group_by case hint", "group_by: [event_type]", "group_by: [Event_Type]", []string{`gold[0].group_by[0]: column "Event_Type" is not in schema (did you mean "event_type"? names are matched exactly)`}},
		{"group_by twice", "group_by: [event_type]", "group_by: [event_type, event_type]", []string{`gold[0].group_by[1]: column "event_type" is listed twice`}},
		{"unknown fn", "{fn: count}", "{fn: median, column: amount}", []string{`p.yaml:13: gold[0].aggregates[0].fn: unknown aggregate function "median"`}},
		{"count distinct", "{fn: count}", "{fn: count_distinct, column: event_id}", []string{`Distinct aggregations are not supported on streaming DataFrames/Datasets. Consider using approx_count_distinct() instead.`}},
		{"sum of string", "{fn: count}", "{fn: sum, column: event_type}", []string{`gold[0].aggregates[0].column: sum needs a numeric column; "event_type" has type string`}},
		{"avg without column", "{fn: count}", "{fn: avg}", []string{`gold[0].aggregates[0].column: required: avg needs a numeric column`}},
		{"min without column", "{fn: count}", "{fn: min}", []string{`gold[0].aggregates[0].column: required: min needs a column`}},
		{"agg column missing", "{fn: count}", "{fn: max, column: price}", []string{`gold[0].aggregates[0].column: column "price" is not in schema`}},
		{"percentile without list", "{fn: count}", "{fn: approx_percentile, column: amount}", []string{`gold[0].aggregates[0].percentiles: required`}},
		{"percentile out of range", "{fn: count}", "{fn: approx_percentile, column: amount, percentiles: [0.5, 1.5]}", []string{`gold[0].aggregates[0].percentiles[1]: 1.5: expected a fraction between 0 and 1`}},
		{"percentile of string", "{fn: count}", "{fn: approx_percentile, column: event_type, percentiles: [0.5]}", []string{`approx_percentile needs a numeric, date or timestamp column; "event_type" has type string`}},
		{"percentiles on sum", "{fn: count}", "{fn: sum, column: amount, percentiles: [0.5]}", []string{`gold[0].aggregates[0].percentiles: only approx_percentile takes percentiles`}},
		{"rsd out of range", "{fn: count}", "{fn: approx_count_distinct, column: event_id, rsd: 0.5}", []string{`gold[0].aggregates[0].rsd: 0.5: expected a relative standard deviation`}},
		{"output name collides", "{fn: count}", "{fn: count, as: event_type}", []string{`gold[0].aggregates[0].as: output column "event_type" collides with group_by[0]`}},
		{"output name twice", "{fn: count}", "{fn: count}, {fn: count, column: amount, as: count}", []string{`gold[0].aggregates[1].as: output column "count" collides with aggregates[0]`}},
		{"exact-sum column collides", "{fn: count}", "{fn: max, column: amount, as: _total_exact}, {fn: sum, column: amount, as: total}", []string{`gold[0].aggregates[1].as: gold keeps this aggregate's exact sum in the internal column "_total_exact", which collides with aggregates[0]`}},
		{"no aggregates", "    aggregates: [{fn: count}]\n", "", []string{`gold[0].aggregates: required`}},
		{"unknown window type", "type: tumbling", "type: hopping", []string{`p.yaml:11: gold[0].window.type: invalid value "hopping": expected tumbling, sliding or session`}},
		{"missing size", "{type: tumbling, size: 5m}", "{type: tumbling}", []string{`p.yaml:11: gold[0].window.size: required`}},
		{"zero size", "size: 5m", "size: 0s", []string{`gold[0].window.size: 0s is too small`}},
		{"slide > size", "{type: tumbling, size: 5m}", "{type: sliding, size: 5m, slide: 10m}", []string{`p.yaml:11: gold[0].window.slide: slide 10m is larger than size 5m: expected slide <= size`}},
		{"sliding without slide", "{type: tumbling, size: 5m}", "{type: sliding, size: 10m}", []string{`gold[0].window.slide: required`}},
		{"slide on tumbling", "{type: tumbling, size: 5m}", "{type: tumbling, size: 5m, slide: 5m}", []string{`gold[0].window.slide: not allowed for a tumbling window`}},
		{"start not < slide", "{type: tumbling, size: 5m}", "{type: sliding, size: 10m, slide: 5m, start_time: 5m}", []string{`gold[0].window.start_time: |start_time| = 5m is not smaller than the slide 5m`}},
		{"negative start not < slide", "{type: tumbling, size: 5m}", "{type: tumbling, size: 1h, start_time: -1h}", []string{`gold[0].window.start_time: |start_time| = 1h is not smaller than the slide 1h`}},
		{"session without gap", "{type: tumbling, size: 5m}", "{type: session}", []string{`gold[0].window.gap: required`}},
		{"session with size", "{type: tumbling, size: 5m}", "{type: session, gap: 5m, size: 5m}", []string{`gold[0].window.size: not allowed for a session window`}},
		{"gap on tumbling", "{type: tumbling, size: 5m}", "{type: tumbling, size: 5m, gap: 1m}", []string{`gold[0].window.gap: not allowed for a tumbling window`}},
		{"session without key", "{type: tumbling, size: 5m}\n    group_by: [event_type]", "{type: session, gap: 5m}", []string{`gold[0].group_by: Global aggregation with session window in streaming query is not supported.`}},
		{"update with session", "{type: tumbling, size: 5m}", "{type: session, gap: 5m}\n    output_mode: update", []string{`gold[0].output_mode: Update output mode not supported for session window on streaming DataFrames/DataSets`}},
		{"bad output mode", "{type: tumbling, size: 5m}", "{type: tumbling, size: 5m}\n    output_mode: upsert", []string{`gold[0].output_mode: invalid value "upsert": expected append, update or complete`}},
		{"append without watermark", "  watermark: 10m\n", "  name: q\n", []string{`stream.watermark: required by gold[0] (g5) in append mode: Append output mode not supported when there are streaming aggregations on streaming DataFrames/DataSets without watermark`}},
		{"duplicate gold name", "", "  - name: g5\n    table: gold/other\n    quarantine: silver/other\n    window: {type: tumbling, size: 1h}\n    aggregates: [{fn: count}]\n", []string{`gold[1].name: duplicate gold name "g5" (also gold[0])`}},
		{"duplicate gold table", "", "  - name: g1h\n    table: gold/g5\n    window: {type: tumbling, size: 1h}\n    aggregates: [{fn: count}]\n", []string{`p.yaml:15: gold[1].table: path "gold/g5" is also gold[0].table`}},
		{"nested table paths", "", "tables: {silver: bronze/events/silver}\n", []string{`tables.silver: path "bronze/events/silver" is inside tables.bronze ("bronze/events")`}},
		{"containing table path", "", "tables: {bronze: silver}\n", []string{`path "silver/events" is inside tables.bronze ("silver")`}},
		{"table path escapes", "", "tables: {bronze: ../bronze}\n", []string{`tables.bronze: invalid table path "../bronze"`}},
		{"absolute table path", "", "tables: {bronze: /bronze}\n", []string{`tables.bronze: invalid table path "/bronze"`}},
		// delta-rs reads %41 in a table path as "A" and cannot open the table (Spark can).
		{"percent in table path", "", "tables: {silver: \"silver/100%\"}\n", []string{`tables.silver: invalid table path "silver/100%": '%' is not allowed in a path under the lake`}},
		{"percent in gold table", "", "  - name: g1h\n    table: gold/g%41\n    window: {type: tumbling, size: 1h}\n    aggregates: [{fn: count}]\n", []string{`gold[1].table: invalid table path "gold/g%41": '%' is not allowed`}},
		{"bad trigger", "  watermark: 10m", "  watermark: 10m\n  trigger: every-minute", []string{`p.yaml:9: stream.trigger: invalid trigger "every-minute": expected once, available-now or processing-time=<duration>`}},
		{"bad trigger interval", "  watermark: 10m", "  watermark: 10m\n  trigger: processing-time=soon", []string{`stream.trigger: invalid trigger "processing-time=soon": invalid duration "soon"`}},
		{"bad cron", "", "jobs: {ingest: {schedule: \"61 * * * *\"}}\n", []string{`p.yaml:14: jobs.ingest.schedule: invalid schedule "61 * * * *"`}},
		{"bad descriptor", "", "jobs: {stream: {schedule: \"@every tuesday\"}}\n", []string{`jobs.stream.schedule: invalid schedule "@every tuesday"`}},
		{"short vacuum retention", "", "jobs: {vacuum: {retain: 1h}}\n", []string{`jobs.vacuum.retain: 1h is shorter than 168h`}},
		{"bad listen", "", "serve: {listen: localhost}\n", []string{`p.yaml:14: serve.listen: invalid address "localhost": expected host:port`}},
		{"bad port", "", "serve: {listen: \"127.0.0.1:99999\"}\n", []string{`serve.listen: invalid port "99999"`}},
		{"secret in file", "", "s3: {secret_access_key: abc}\n", []string{`p.yaml:14: s3.secret_access_key: secrets are not read from the config file: remove this key and set AWS_SECRET_ACCESS_KEY in the environment`}},
		{"access key in file", "", "s3: {access_key_id: abc}\n", []string{`set AWS_ACCESS_KEY_ID in the environment`}},
		{"bad endpoint", "", "s3: {endpoint: \"127.0.0.1:9000\"}\n", []string{`s3.endpoint: invalid endpoint "127.0.0.1:9000"`}},
		{"bad lake scheme", "lake: file:///var/lake", "lake: gs://bucket", []string{`p.yaml:1: lake: unsupported scheme "gs"`}},
		{"lake with credentials", "lake: file:///var/lake", "lake: s3://key:secret@bucket", []string{`lake: credentials in the URL are not allowed`}},
		{"bad log level", "", "log: {level: loud}\n", []string{`log.level: invalid value "loud": expected debug, info, warn or error`}},
		{"bad notify mode", "", "landing: {notify: {mode: push}}\n", []string{`landing.notify.mode: invalid value "push": expected poll or webhook`}},
		{"notify listen is gone", "", "landing: {notify: {mode: listen}}\n", []string{`landing.notify.mode: invalid value "listen": expected poll or webhook`}},
		{"after unknown job", "", "jobs: {stream: {after: ingets}}\n", []string{`jobs.stream.after: invalid value "ingets": expected ingest, stream, merge_late`}},
		{"after itself", "", "jobs: {stream: {after: stream}}\n", []string{`jobs.stream.after: stream runs after stream, which leads back to stream`}},
		{"after loop", "", "jobs: {stream: {after: ingest}, ingest: {after: merge_late}, merge_late: {after: stream}}\n", []string{`jobs.ingest.after: ingest runs after merge_late`, `a chain must not loop`}},
		{"bad byte size", "", "landing: {max_line_bytes: 1 furlong}\n", []string{`landing.max_line_bytes: invalid byte size "1 furlong"`}},
		{"bad gold name", "- name: g5", "- name: g 5", []string{`gold[0].name: invalid name "g 5"`}},
		{"late alert range", "  watermark: 10m", "  watermark: 10m\n  late_alert_fraction: 2", []string{`stream.late_alert_fraction: 2: expected a fraction between 0 and 1`}},
		{"yaml syntax", "", "gold: [\n", []string{`p.yaml:`, `invalid YAML`}},
		{"top level list", minimal, "- a\n- b\n", []string{`p.yaml:1: expected a mapping at the top level, got a list`}},
		{"empty file", minimal, "", []string{`p.yaml: the config is empty`}},
		{"several errors at once", "watermark: 10m", "watermark: 10x\n  trigger: never", []string{`stream.watermark: invalid duration`, `stream.trigger: invalid trigger "never"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := minimal + c.new
			if c.old != "" {
				if !strings.Contains(minimal, c.old) {
					t.Fatalf("case edits %q, which minimal does not contain", c.old)
				}
				text = strings.Replace(minimal, c.old, c.new, 1)
			}
			_, err := Parse([]byte(text), "p.yaml")
			if err == nil {
				t.Fatalf("Parse accepted:\n%s", text)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error does not wrap ErrInvalid: %v", err)
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

func TestErrorsAreCollectedNotCascaded(t *testing.T) {
	// A bad size must be reported once, not again as "slide > size" or "start_time".
	text := strings.Replace(minimal, "{type: tumbling, size: 5m}", "{type: sliding, size: 5q, slide: 1m, start_time: 0s}", 1)
	_, err := Parse([]byte(text), "p.yaml")
	errs := fieldErrors(t, err)
	if len(errs) != 1 || errs[0].Path != "gold[0].window.size" || errs[0].Line != 11 {
		t.Errorf("want exactly one error at gold[0].window.size line 11, got %v", err)
	}
}

func TestValidConfigs(t *testing.T) {
	cases := []struct{ name, old, new string }{
		{"sliding with start", "{type: tumbling, size: 5m}", "{type: sliding, size: 10m, slide: 5m, start_time: -2m}"},
		{"uneven sliding", "{type: tumbling, size: 5m}", "{type: sliding, size: 12m, slide: 5m, start_time: 2m}"},
		{"session", "{type: tumbling, size: 5m}", "{type: session, gap: 30s}"},
		{"complete without watermark", "  watermark: 10m\ngold:\n  - name: g5\n", "  trigger: once\ngold:\n  - name: g5\n    output_mode: complete\n"},
		{"complete mode", "{type: tumbling, size: 5m}", "{type: tumbling, size: 5m}\n    output_mode: complete"},
		{"update mode", "{type: tumbling, size: 5m}", "{type: tumbling, size: 5m}\n    output_mode: update"},
		{"all types", "  - {name: amount, type: double}", "  - {name: amount, type: double}\n  - {name: a, type: long}\n  - {name: b, type: integer}\n  - {name: c, type: short}\n  - {name: d, type: byte}\n  - {name: e, type: float}\n  - {name: f, type: boolean}\n  - {name: g, type: binary}\n  - {name: h, type: date}\n  - {name: i, type: timestamp_ntz}\n  - {name: j, type: \"decimal(10, 2)\"}"},
		{"all aggregates", "{fn: count}", "{fn: count}, {fn: count, column: amount}, {fn: sum, column: amount}, {fn: min, column: event_type}, {fn: max, column: event_time}, {fn: avg, column: amount}, {fn: approx_count_distinct, column: event_id}, {fn: approx_percentile, column: amount, percentiles: [0.5, 0.99]}"},
		{"processing time", "  watermark: 10m", "  watermark: 10m\n  trigger: processing-time=30s"},
		{"cron with seconds", "", "jobs: {ingest: {schedule: \"*/10 * * * * *\"}, stream: {schedule: \"@every 1m\"}, merge_late: {schedule: \"@hourly\"}}\n"},
		{"short retention allowed", "", "jobs: {vacuum: {retain: 0s, allow_short_retention: true}}\n"},
		{"chained jobs", "", "jobs: {ingest: {schedule: \"@every 1m\"}, stream: {after: ingest}, merge_late: {schedule: \"@hourly\", after: stream}}\n"},
		{"listen any host", "", "serve: {listen: \":9464\"}\n"},
		{"days", "watermark: 10m", "watermark: 1d"},
		{"anchors and merge keys", "", "x-defaults: &d {type: tumbling}\n"},
		{"s3 lake", "lake: file:///var/lake", "lake: s3://bucket/prefix"},
		{"relative lake", "lake: file:///var/lake", "lake: ./lake"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := minimal + c.new
			if c.old != "" {
				text = strings.Replace(minimal, c.old, c.new, 1)
			}
			if c.name == "anchors and merge keys" {
				// Anchors and merge keys are plain YAML; strictness must still see through them.
				text = "common: &w {type: tumbling, size: 5m}\n" + minimal
				if _, err := Parse([]byte(text), "p.yaml"); err == nil || !strings.Contains(err.Error(), `unknown key "common"`) {
					t.Fatalf("unknown anchor holder not reported: %v", err)
				}
				text = strings.Replace(minimal, "window: {type: tumbling, size: 5m}", "window: &w {type: tumbling, size: 5m}", 1) +
					"  - name: g2\n    window: {<<: *w, size: 1h}\n    aggregates: [{fn: count}]\n"
			}
			mustParse(t, text)
		})
	}
}

func TestAliasBomb(t *testing.T) {
	// 100 gold entries x 100 aggregates x 1000 percentiles, through aliases: 10^7 values from
	// a 10 kB file. The anchors sit under an unknown key, which is reported but still parsed.
	rep := func(s string, n int) string { return strings.TrimSuffix(strings.Repeat(s+", ", n), ", ") }
	doc := "x:\n  - &p [" + rep("0.5", 1000) + "]\n" +
		"  - &m {fn: approx_percentile, column: amount, percentiles: *p}\n" +
		"  - &a [" + rep("*m", 100) + "]\n" +
		"  - &g {name: g, window: {type: tumbling, size: 1m}, aggregates: *a}\n" +
		strings.Replace(minimal, "gold:\n", "gold: ["+rep("*g", 100)+"]\nx-unused:\n", 1)
	_, err := Parse([]byte(doc), "bomb.yaml")
	if err == nil || !strings.Contains(err.Error(), "expands to more than 100000 values through aliases") {
		t.Fatalf("alias bomb: %v", err)
	}
}

func TestErrorCap(t *testing.T) {
	var b strings.Builder
	for i := range 200 {
		fmt.Fprintf(&b, "unknown_%d: 1\n", i)
	}
	_, err := Parse([]byte(minimal+b.String()), "p.yaml")
	errs := unjoin(err)
	if len(errs) != maxErrors+1 || !strings.Contains(errs[maxErrors].Error(), "p.yaml: 150 more problems not shown") {
		t.Fatalf("%d errors, last %v", len(errs), errs[len(errs)-1])
	}
	if !strings.Contains(errs[0].Error(), `p.yaml:14: unknown key "unknown_0"`) {
		t.Errorf("first error %v", errs[0])
	}
}

func TestManyCollidingTables(t *testing.T) {
	// Every entry reuses the same table: one problem per entry (each against the first), not
	// one per pair.
	gold := "x: &g {name: g, window: {type: tumbling, size: 1m}, aggregates: [{fn: count}]}\ngold: [" +
		strings.TrimSuffix(strings.Repeat("*g, ", 12), ", ") + "]\n"
	text := strings.Replace(minimal, "gold:\n", "x-old:\n", 1)
	_, err := Parse([]byte(gold+text), "p.yaml")
	got := err.Error()
	for _, want := range []string{`path "gold/g" is also gold[0].table`, `path "silver/late_g" is also gold[0].quarantine`, `duplicate gold name "g" (also gold[0])`} {
		if n := strings.Count(got, want); n != 11 {
			t.Errorf("%d times %q, want 11 (one per later entry):\n%s", n, want, got)
		}
	}
}

func TestOverride(t *testing.T) {
	p := mustParse(t, minimal+"  - name: g1h\n    window: {type: tumbling, size: 1h}\n    aggregates: [{fn: count}]\n")
	p.ApplyEnv(mapEnv(map[string]string{"AWS_ACCESS_KEY_ID": "AKIA1234", "AWS_ENDPOINT_URL": "http://minio:9000"}))
	steps := []struct {
		key, value string
		check      func(*Pipeline) bool
	}{
		{"stream.trigger", "processing-time=30s", func(p *Pipeline) bool {
			return p.Stream.Trigger.Kind == TriggerProcessingTime && p.Stream.Trigger.Interval == 30*time.Second
		}},
		{"stream.watermark", "1h", func(p *Pipeline) bool { return p.Stream.Watermark.Duration == time.Hour }},
		{"gold.g1h.output_mode", "complete", func(p *Pipeline) bool { return p.Gold[1].OutputMode == "complete" }},
		{"gold[0].window.size", "10m", func(p *Pipeline) bool { return p.Gold[0].Window.Size.Duration == 10*time.Minute }},
		{"gold.1.table", "gold/hourly", func(p *Pipeline) bool { return p.Gold[1].Table == "gold/hourly" }},
		{"landing.notify.mode", "webhook", func(p *Pipeline) bool { return p.Landing.Notify.Mode == "webhook" }},
		{"stream.dedup", "[event_id, event_type]", func(p *Pipeline) bool { return len(p.Stream.Dedup) == 2 }},
		{"lake", "s3://other", func(p *Pipeline) bool { return p.Lake == "s3://other" }},
	}
	for _, s := range steps {
		if err := p.Override(s.key, s.value); err != nil {
			t.Fatalf("Override(%s, %s): %v", s.key, s.value, err)
		}
		if !s.check(p) {
			t.Errorf("Override(%s, %s) did not take effect", s.key, s.value)
		}
	}
	if p.S3.Credentials.AccessKeyID != "AKIA1234" || p.S3.Endpoint != "http://minio:9000" {
		t.Errorf("Override lost the environment: %+v", p.S3)
	}
	// The derived default follows the overridden name.
	if err := p.Override("stream.name", "clicks"); err != nil || p.Stream.Checkpoint != "_checkpoints/clicks" {
		t.Errorf("checkpoint after renaming the stream = %q (%v)", p.Stream.Checkpoint, err)
	}
	bad := []struct{ key, value, want string }{
		{"stream.watermrk", "1h", `unknown key "watermrk" in stream (did you mean "watermark"?)`},
		{"stream.trigger", "sometimes", `stream.trigger: invalid trigger "sometimes"`},
		{"gold.nope.table", "x", `no item "nope" in gold`},
		{"gold[0].window.slide", "1m", `gold[0].window.slide: not allowed for a tumbling window`},
		{"lake.x", "1", `lake is a single value`},
		{"", "1", `empty key`},
	}
	before := p.Redacted()
	for _, b := range bad {
		err := p.Override(b.key, b.value)
		if err == nil || !strings.Contains(err.Error(), b.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("Override(%q, %q) = %v, want an ErrInvalid containing %q", b.key, b.value, err, b.want)
		}
	}
	if p.Redacted() != before {
		t.Errorf("a failed Override changed the config")
	}
}

func TestApplyEnv(t *testing.T) {
	p := mustParse(t, minimal)
	p.ApplyEnv(mapEnv(map[string]string{
		"AWS_ENDPOINT_URL": "http://minio:9000", "AWS_DEFAULT_REGION": "eu-west-1",
		"AWS_ACCESS_KEY_ID": "minioadmin", "AWS_SECRET_ACCESS_KEY": "hunter22", "AWS_SESSION_TOKEN": "tok",
	}))
	if p.S3.Endpoint != "http://minio:9000" || p.S3.Region != "eu-west-1" || !p.S3.UsePathStyle() {
		t.Errorf("env not applied: %+v", p.S3)
	}
	c := p.S3.Credentials
	if c.AccessKeyID != "minioadmin" || c.SecretAccessKey != "hunter22" || c.SessionToken != "tok" {
		t.Errorf("credentials = %#v", c)
	}
	for _, s := range []string{c.String(), c.GoString(), p.Redacted()} {
		if strings.Contains(s, "hunter22") || strings.Contains(s, "tok\n") || strings.Contains(s, "minioadmin") {
			t.Errorf("secret printed: %s", s)
		}
	}
	// The file wins over the environment for settings that are not secrets.
	p = mustParse(t, minimal+"s3: {endpoint: \"http://127.0.0.1:9000\", region: us-east-2, path_style: false}\n")
	p.ApplyEnv(mapEnv(map[string]string{"AWS_ENDPOINT_URL": "http://other:1", "AWS_REGION": "x"}))
	if p.S3.Endpoint != "http://127.0.0.1:9000" || p.S3.Region != "us-east-2" || p.S3.UsePathStyle() {
		t.Errorf("file settings lost: %+v", p.S3)
	}
	p = mustParse(t, minimal)
	p.ApplyEnv(mapEnv(nil))
	if p.S3.Region != "us-east-1" || p.S3.Endpoint != "" {
		t.Errorf("defaults without env: %+v", p.S3)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") || errors.Is(err, ErrInvalid) {
		t.Errorf("Load(missing) = %v", err)
	}
}

func TestParseSchedule(t *testing.T) {
	base := time.Date(2024, 5, 1, 12, 0, 30, 0, time.UTC)
	cases := []struct {
		spec string
		next time.Time
	}{
		{"@every 1m", base.Add(time.Minute)},
		{"0 * * * *", time.Date(2024, 5, 1, 13, 0, 0, 0, time.UTC)},
		{"*/10 * * * * *", time.Date(2024, 5, 1, 12, 0, 40, 0, time.UTC)},
		{"30 2 * * *", time.Date(2024, 5, 2, 2, 30, 0, 0, time.UTC)},
		{"@hourly", time.Date(2024, 5, 1, 13, 0, 0, 0, time.UTC)},
	}
	for _, c := range cases {
		s, err := ParseSchedule(c.spec)
		if err != nil {
			t.Errorf("ParseSchedule(%q): %v", c.spec, err)
			continue
		}
		if got := s.Next(base); !got.Equal(c.next) {
			t.Errorf("ParseSchedule(%q).Next = %v, want %v", c.spec, got, c.next)
		}
	}
}

func TestEventLogSetting(t *testing.T) {
	for _, tc := range []struct {
		yaml, path string
		on         bool
		err        string
	}{
		{yaml: "", path: "_medallion/event_log", on: true},
		{yaml: "event_log: ops/events\n", path: "ops/events", on: true},
		{yaml: "event_log: off\n", on: false},
		{yaml: "event_log: false\n", err: "write event_log: off"},
		{yaml: "event_log: /abs\n", err: "invalid table path"},
		{yaml: "event_log: silver/events\n", err: "every table needs its own path"},
	} {
		cfg, err := Parse([]byte(eventLogBase+tc.yaml), "p.yaml")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.yaml, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.yaml, err)
		}
		if p, on := cfg.EventLogPath(); p != tc.path || on != tc.on {
			t.Errorf("%q: EventLogPath() = %q, %v; want %q, %v", tc.yaml, p, on, tc.path, tc.on)
		}
	}
}

const eventLogBase = `lake: lake
schema:
  - {name: event_id, type: string, required: true}
  - {name: event_time, type: timestamp, required: true}
stream: {watermark: 10m}
gold:
  - name: g
    window: {type: tumbling, size: 5m}
    aggregates: [{fn: count, as: count}]
`
