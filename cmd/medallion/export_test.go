package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const exportConfig = `lake: %LAKE%
schema:
  - {name: event_id,   type: string, required: true}
  - {name: event type, type: string}
  - {name: amount,     type: double}
  - {name: qty,        type: integer, required: true}
  - {name: event_time, type: timestamp, required: true, unit: ms}
stream:
  name: clicks
  watermark: 90s
  max_future_skew: 1h30m0.25s
  dedup: [event_id]
  max_files_per_trigger: 7
gold:
  - name: t5m
    window: {type: tumbling, size: 5m}
    group_by: [event type]
    aggregates:
      - {fn: count, as: n}
      - {fn: sum, column: qty, as: qty_total}
      - {fn: avg, column: amount, as: avg_amount}
      - {fn: max, column: amount}
  - name: s10m
    window: {type: sliding, size: 10m, slide: 5m, start_time: 1m}
    aggregates: [{fn: count, column: amount, as: amounts}]
    output_mode: update
  - name: sess
    window: {type: session, gap: 1500ms}
    group_by: [event_id]
    aggregates: [{fn: min, column: qty}]
    output_mode: complete
`

func writeExportConfig(t *testing.T, lake string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pipeline.yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(exportConfig, "%LAKE%", lake)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestExportSpark checks the job's pieces against what the config says, spelled out by hand.
func TestExportSpark(t *testing.T) {
	// The job's S3 settings come from the environment where the config has none: make it say
	// nothing (scripts/minio.sh, which runs the tests, exports AWS_ENDPOINT_URL).
	for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION"} {
		t.Setenv(k, "")
	}
	lake := t.TempDir()
	out, notices, err := runExportCLI(t, "export", "spark", "--config", writeExportConfig(t, lake))
	if err != nil {
		t.Fatalf("export spark: %v\n%s%s", err, out, notices)
	}
	// The session window is said at export time, by name, on stderr (stdout is the job).
	if !strings.Contains(notices, "export spark: notice: gold sess: session windows are not carried") {
		t.Errorf("no notice naming gold sess on stderr: %q", notices)
	}
	for _, want := range []string{
		`LAKE = "file://` + lake + `"`,
		`BRONZE = LAKE + "/" + "bronze/events"`,
		`MAX_FILES_PER_TRIGGER = 7`,
		`WATERMARK = "90 seconds"`,
		`EVENT_TIME = "event_time"`,
		`DEDUP = ["event_id"]`,
		`CHECKPOINT = "_checkpoints/clicks"`,
		`SILVER = "silver/events"`,
		`REJECTS = "bronze/rejects"`,
		// validation in medallion's order: event time, then the required columns in schema order
		// (event_id, qty), then the future skew of 1h30m0.25s = 5400250000 µs.
		"return (F.when(F.col(\"`event_time`\").isNull() & F.get_json_object(F.col(\"`_rescued_data`\"), \"$['event_time']\").isNotNull(), F.lit(\"bad_event_time\"))\n" +
			"            .when(F.col(\"`event_time`\").isNull(), F.lit(\"missing_event_time\"))\n" +
			"            .when(F.col(\"`event_id`\").isNull(), F.lit(\"missing_required\"))\n" +
			"            .when(F.col(\"`qty`\").isNull(), F.lit(\"missing_required\"))\n" +
			"            .when(F.col(\"`_ingest_time`\").isNotNull() & (F.unix_micros(F.col(\"`event_time`\")) > " +
			"F.unix_micros(F.col(\"`_ingest_time`\")) + 5400250000), F.lit(\"future\")))",
		// the rejects' texts are medallion's; a bad event time quotes the value, cut at 100
		// characters as silver cuts it
		`F.lit("event time column \"event_time\" has value \""), F.when(F.length(F.get_json_object(F.col("` + "`_rescued_data`" + `"), "$['event_time']")) > 100, F.concat(F.substring(`,
		`"\", which does not parse: expected epoch milliseconds (a number or a string of one)")`,
		`F.lit("required column \"qty\" is missing or null (a value that did not parse is in _rescued_data)")`,
		`is more than max_future_skew 1h30m0.25s after its ingest time `,
		`df = df.dropDuplicates(DEDUP)`,
		`return df.withWatermark(EVENT_TIME, WATERMARK)`,
		// tumbling: slide = size, start 0; the key with a space is quoted
		"F.window(EVENT_TIME, \"300 seconds\", \"300 seconds\", \"0 seconds\").alias(\"window\"), F.col(\"`event type`\"))",
		`F.count(F.lit(1)).alias("n")`,
		// integer sums stay integral (long in Spark), doubles are read as double
		"F.sum(F.col(\"`qty`\")).alias(\"qty_total\")",
		"F.avg(F.col(\"`amount`\").cast(\"double\")).alias(\"avg_amount\")",
		"F.sum(F.col(\"`amount`\").cast(\"double\")).alias(\"avg_amount_sum\")",
		"F.count(F.col(\"`amount`\").cast(\"double\")).alias(\"avg_amount_count\")",
		"F.max(F.col(\"`amount`\").cast(\"double\")).alias(\"max_amount\")",
		`F.lit(0).cast("long").alias("late_rows")`,
		`F.window(EVENT_TIME, "600 seconds", "300 seconds", "60 seconds")`,
		`"s10m": {"table": "gold/s10m", "quarantine": "silver/late_s10m", "output_mode": "update", "keys": [], "change_feed": True,` +
			"\n" + `        "window": {"type": "sliding", "size_us": 600000000, "slide_us": 300000000, "start_us": 60000000}},`,
		`F.session_window(EVENT_TIME, "1500 milliseconds")`,
		`"sess": {"table": "gold/sess", "quarantine": "silver/late_sess", "output_mode": "complete", "keys": ["event_id"], "change_feed": True,`,
		`S3 = {"endpoint": "", "region": "us-east-1", "path_style": None}`,
		"f\"t.`{c}` <=> s.`{c}`\"",
		`TRIGGER = "available-now"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("job lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("job:\n%s", out)
	}
	checkPython(t, out)
}

// runExportCLI runs the CLI with stdout (the job) and stderr (the notices) apart.
func runExportCLI(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errOut.String(), err
}

// checkPython checks that the job is at least valid Python (Spark itself runs it in
// tests/interop).
func checkPython(t *testing.T, job string) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH: the job was checked as text only")
	}
	path := filepath.Join(t.TempDir(), "job.py")
	if err := os.WriteFile(path, []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command(python, "-m", "py_compile", path).CombinedOutput(); err != nil {
		t.Fatalf("the job is not valid Python: %v\n%s", err, msg)
	}
}

// TestExportSparkSeveralSources: a config with sources: exports every source as its own query
// (tables, checkpoint, watermark, dedup, validation and expectations of that source, as
// medallion's single-source view of it has them), the aggregations over each source with that
// source's time column; a join is its own query (JOINS) with the gold over it, and what Spark
// does otherwise there is named on stderr and in the job's NOT_EXPORTED: never silently.
func TestExportSparkSeveralSources(t *testing.T) {
	lake := t.TempDir()
	path := filepath.Join(t.TempDir(), "pipeline.yaml")
	cfg := `lake: ` + lake + `
schema:
  - {name: event_id,   type: string, required: true}
  - {name: ad_id,      type: string}
  - {name: event_time, type: timestamp, required: true}
stream: {watermark: 10m, dedup: [event_id]}
sources:
  - name: clicks
    schema:
      - {name: click_id,   type: string, required: true}
      - {name: ad_id,      type: string, required: true}
      - {name: click_time, type: timestamp, required: true}
    stream: {event_time: click_time, watermark: 30m, dedup: [click_id], max_files_per_trigger: 4, trigger: once}
    expectations:
      - {name: ad_is_even, expect: "ad_id IN ('ad0', 'ad2')", on_violation: drop}
joins:
  - {name: ec, left: events, right: clicks, type: inner, on: [{left: ad_id, right: ad_id}], time: {lower: 0s, upper: 1h}}
gold:
  - name: events_5m
    window: {type: tumbling, size: 5m}
    aggregates: [{fn: count}]
  - name: clicks_1h
    source: clicks
    window: {type: tumbling, size: 1h}
    group_by: [ad_id]
    aggregates: [{fn: count}]
  - name: ec_1h
    source: ec
    window: {type: tumbling, size: 1h}
    aggregates: [{fn: count}]
`
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out, notices, err := runExportCLI(t, "export", "spark", "--config", path)
	if err != nil {
		t.Fatalf("export spark: %v\n%s", err, notices)
	}
	for _, want := range []string{
		// the top-level source keeps the single-source constants
		`QUERY = "events"`, `BRONZE = LAKE + "/" + "bronze/events"`, `CHECKPOINT = "_checkpoints/events"`,
		// the second source: its own tables, checkpoint (defaults from its name), settings
		`    "clicks": {"bronze": LAKE + "/" + "bronze/clicks", "silver": "silver/clicks", "rejects": "bronze/rejects", "checkpoint": "_checkpoints/clicks",`,
		`        "max_files": 4, "max_bytes": 0, "event_time": "click_time",`,
		`        "watermark": "1800 seconds", "dedup": ["click_id"], "trigger": "once",`,
		`{"name": "ad_is_even", "expect": "ad_id IN ('ad0', 'ad2')", "on_violation": "drop"}`,
		`"reject_reason": reject_reason_s1, "reject_detail": reject_detail_s1, "events": events_s1,`,
		// dedup_retention defaults to the source's watermark (30m): the join input's files.
		`"dedup_retention_ms": 1800000},`,
		// its validation: its own event time and required columns, in schema order
		"def reject_reason_s1():",
		"return (F.when(F.col(\"`click_time`\").isNull() & F.get_json_object(F.col(\"`_rescued_data`\"), \"$['click_time']\").isNotNull(), F.lit(\"bad_event_time\"))\n" +
			"            .when(F.col(\"`click_time`\").isNull(), F.lit(\"missing_event_time\"))\n" +
			"            .when(F.col(\"`click_id`\").isNull(), F.lit(\"missing_required\"))\n" +
			"            .when(F.col(\"`ad_id`\").isNull(), F.lit(\"missing_required\"))",
		`df = df.dropDuplicates(["click_id"])`,
		`return df.withWatermark("click_time", "1800 seconds")`,
		// each aggregation knows its source and time column; clicks_1h windows over click_time
		`"clicks_1h": {"source": "clicks", "time": "click_time"}`,
		`"events_5m": {"source": "events", "time": "event_time"}`,
		`F.window("click_time", "3600 seconds", "3600 seconds", "0 seconds").alias("window"), F.col("` + "`ad_id`" + `"))`,
		`F.window(EVENT_TIME, "300 seconds", "300 seconds", "0 seconds")`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("job lacks %q", want)
		}
	}
	// The join is the job's: its settings, the state watermarks Spark derives from its bounds,
	// the gold over it (over the joined columns), and one notice naming what Spark does otherwise.
	for _, want := range []string{
		`"ec": {"left": "events", "right": "clicks", "type": "inner", "left_keys": ["ad_id"], "right_keys": ["ad_id"],`,
		`"left_time": "event_time", "right_time": "click_time", "lower_us": 0, "upper_us": 3600000000,`,
		`"left_watermark": "600 seconds", "right_watermark": "1800 seconds",`,
		`"evicts_left": True, "evicts_right": True,`,
		`"table": "silver/ec", "quarantine": "silver/late_ec", "checkpoint": "_checkpoints/ec"}}`,
		`JOIN_INPUTS = {"events", "clicks"}`,
		`"ec_1h": {"source": "ec", "time": "event_time"}`,
		"def gold_ec_1h(events):",
		"class JoinJob(Job):",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("job lacks %q", want)
		}
	}
	wantNotice := "export spark: notice: join ec: Spark's per-source watermarks live in the query's memory"
	if strings.Count(notices, "export spark: notice: ") != 1 || !strings.Contains(notices, wantNotice) {
		t.Errorf("stderr = %q, want one notice naming join ec", notices)
	}
	if !strings.Contains(out, "NOT_EXPORTED = [\"join ec: Spark's per-source watermarks") {
		t.Errorf("the job's NOT_EXPORTED does not name join ec")
	}
	if t.Failed() {
		t.Logf("job:\n%s", out)
	}
	checkPython(t, out)
}

func TestExportSparkLakes(t *testing.T) {
	for _, tc := range []struct{ lake, want string }{
		{"s3://bucket/some/prefix/", `LAKE = "s3a://bucket/some/prefix"`},
		{"s3://bucket", `LAKE = "s3a://bucket"`},
		{"file:///var/lake", `LAKE = "file:///var/lake"`},
	} {
		out, err := runGenCLI(t, "export", "spark", "--config", writeExportConfig(t, tc.lake))
		if err != nil || !strings.Contains(out, tc.want+"\n") {
			t.Errorf("lake %s: err %v, want %s in the job", tc.lake, err, tc.want)
		}
	}
}

func TestExportSparkTrigger(t *testing.T) {
	for set, want := range map[string]string{
		"stream.trigger=once":                 `"once"`,
		"stream.trigger=processing-time=90s":  `"processing-time=90 seconds"`,
		"stream.trigger=processing-time=1.5s": `"processing-time=1500 milliseconds"`,
	} {
		out, err := runGenCLI(t, "export", "spark", "--config", writeExportConfig(t, t.TempDir()), "--set", set)
		if err != nil || !strings.Contains(out, "TRIGGER = "+want+"\n") {
			t.Errorf("--set %s: err %v, want the trigger %s", set, err, want)
		}
	}
}

// TestExportSparkExpectations: the job carries the config's expectations, in order, with their
// SQL text unchanged (quotes included) for F.expr, and the empty list when there are none.
func TestExportSparkExpectations(t *testing.T) {
	lake := t.TempDir()
	out, err := runGenCLI(t, "export", "spark", "--config", writeExportConfig(t, lake))
	if err != nil || !strings.Contains(out, "EXPECTATIONS = []\n") {
		t.Fatalf("no expectations: err %v, want EXPECTATIONS = []", err)
	}
	cfg := filepath.Join(t.TempDir(), "pipeline.yaml")
	body := strings.ReplaceAll(exportConfig, "%LAKE%", lake) + `expectations:
  - {name: positive, expect: "amount IS NULL OR amount > 0", on_violation: drop}
  - {name: known, expect: "` + "`event type`" + ` IN ('a', 'b')"}
`
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = runGenCLI(t, "export", "spark", "--config", cfg)
	want := "EXPECTATIONS = [\n" +
		`    {"name": "positive", "expect": "amount IS NULL OR amount \u003e 0", "on_violation": "drop"},` + "\n" +
		`    {"name": "known", "expect": "` + "`event type`" + ` IN ('a', 'b')", "on_violation": "warn"}]` + "\n"
	if err != nil || !strings.Contains(out, want) {
		i := strings.Index(out, "EXPECTATIONS")
		t.Fatalf("err %v; want\n%s\ngot\n%s", err, want, out[max(i, 0):min(len(out), max(i, 0)+300)])
	}
}

func TestExportSparkErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("lake: x\nschema: []\nnope: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"export", "spark"},
		{"export", "spark", "--config", bad},
		{"export", "spark", "--config", writeExportConfig(t, t.TempDir()), "--set", "stream.watermark=soon"},
	} {
		_, err := runGenCLI(t, args...)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 {
			t.Errorf("%q: err = %v, want exit code 2", args, err)
		}
	}
}

func TestSparkInterval(t *testing.T) {
	for d, want := range map[time.Duration]string{
		10 * time.Minute:        "600 seconds",
		1500 * time.Millisecond: "1500 milliseconds",
		3 * time.Microsecond:    "3 microseconds",
		0:                       "0 seconds",
	} {
		if got := sparkInterval(d); got != want {
			t.Errorf("sparkInterval(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestExportSparkS3 checks that the config's s3 block reaches the job's S3A settings, and that
// the job points its tables under <lake>/spark by default.
func TestExportSparkS3(t *testing.T) {
	cfg := writeExportConfig(t, "s3://bucket/lake")
	out, err := runGenCLI(t, "export", "spark", "--config", cfg,
		"--set", "s3.endpoint=http://127.0.0.1:9000", "--set", "s3.region=eu-west-3", "--set", "s3.path_style=true")
	if err != nil {
		t.Fatalf("export spark: %v\n%s", err, out)
	}
	for _, want := range []string{
		`S3 = {"endpoint": "http://127.0.0.1:9000", "region": "eu-west-3", "path_style": True}` + "\n",
		`LAKE = "s3a://bucket/lake"` + "\n",
		`self.root = opts.root or (LAKE if opts.takeover else LAKE + "/spark")`,
		`"fs.s3a.aws.credentials.provider": "com.amazonaws.auth.DefaultAWSCredentialsProviderChain"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("job lacks %q", want)
		}
	}
}

// TestExportSparkMergeLateJob: --job merge-late prints the program with JOB = "merge-late", how
// each gold over a source absorbs its late rows, and, per gold it leaves to medallion (a
// session window, a sketch, a gold over a join), why; --job replay the same for the replay, and
// an unknown job is refused.
func TestExportSparkMergeLateJob(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pipeline.yaml")
	cfg := `lake: ` + t.TempDir() + `
schema:
  - {name: event_id,   type: string, required: true}
  - {name: ad_id,      type: string}
  - {name: amount,     type: double}
  - {name: event_time, type: timestamp, required: true}
stream: {watermark: 10m, dedup: [event_id]}
sources:
  - name: clicks
    schema:
      - {name: click_id,   type: string, required: true}
      - {name: ad_id,      type: string, required: true}
      - {name: click_time, type: timestamp, required: true}
    stream: {event_time: click_time, watermark: 30m, dedup: [click_id]}
joins:
  - {name: ec, left: events, right: clicks, type: inner, on: [{left: ad_id, right: ad_id}], time: {lower: 0s, upper: 1h}}
gold:
  - name: events_5m
    window: {type: sliding, size: 10m, slide: 5m}
    group_by: [ad_id]
    aggregates: [{fn: count}, {fn: sum, column: amount, as: total}, {fn: avg, column: amount, as: mean},
                 {fn: min, column: amount, as: lo}]
  - name: sess
    window: {type: session, gap: 5m}
    group_by: [ad_id]
    aggregates: [{fn: count}]
  - name: distinct_ads
    window: {type: tumbling, size: 1h}
    aggregates: [{fn: approx_count_distinct, column: ad_id, as: ads}]
  - name: ec_1h
    source: ec
    window: {type: tumbling, size: 1h}
    aggregates: [{fn: count}]
`
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := runExportCLI(t, "export", "spark", "--config", path, "--job", "merge-late")
	if err != nil {
		t.Fatalf("export spark --job merge-late: %v\n%s", err, stderr)
	}
	for _, want := range []string{
		`JOB = "merge-late"`,
		`"events_5m": {"skip": None, "set": {"count": "t.` + "`count` + s.`count`" + `", ` +
			`"total": "coalesce(t.` + "`total` + s.`total`, t.`total`, s.`total`" + `)", ` +
			`"mean_sum": "coalesce(t.` + "`mean_sum` + s.`mean_sum`, t.`mean_sum`, s.`mean_sum`" + `)", ` +
			`"mean_count": "t.` + "`mean_count` + s.`mean_count`" + `", ` +
			`"mean": "CAST(coalesce(t.` + "`mean_sum` + s.`mean_sum`, t.`mean_sum`, s.`mean_sum`" + `) AS DOUBLE) / nullif(t.` + "`mean_count` + s.`mean_count`" + `, 0)", ` +
			`"lo": "least(t.` + "`lo`, s.`lo`" + `)", "late_rows": "t.` + "`late_rows` + s.`late_rows`" + `"}}`,
		`"sess": {"skip": "session windows re-sessionize from silver: run medallion run merge-late"`,
		`"distinct_ads": {"skip": "aggregate ads (approx_count_distinct) cannot be merged from Spark's sketches`,
		`"ec_1h": {"skip": "over a join: medallion run merge-late merges the join and replays its aggregations"`,
		// the late rows' windows: only those that had closed when the row was judged
		"def late_events_5m(rows):",
		`F.window(F.col("` + "`event_time`" + `"), "600 seconds", "300 seconds", "0 seconds").alias("window")).where(F.col("window.end") <= F.col("late_watermark"))`,
		"if __name__ == \"__main__\":\n    main()\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("merge-late job lacks %q", want)
		}
	}
	if strings.Contains(out, "def late_sess(") || strings.Contains(out, "def late_ec_1h(") {
		t.Errorf("the merge-late job computes a gold it leaves to medallion")
	}
	checkPython(t, out)
	replay, stderr, err := runExportCLI(t, "export", "spark", "--config", path, "--job", "replay")
	if err != nil {
		t.Fatalf("export spark --job replay: %v\n%s", err, stderr)
	}
	// Per gold, what the Spark replay leaves to medallion and why; the rest it replays itself.
	for _, want := range []string{
		`JOB = "replay"`,
		`"events_5m": None`,
		`"sess": "session windows re-sessionize the range from silver: run medallion run replay"`,
		`"distinct_ads": "aggregate ads (approx_count_distinct): Spark's sketches are not medallion's: run medallion run replay"`,
		`"ec_1h": "over a join: medallion run replay recomputes it from the joined table"`,
		"def replay_one(spark, root, name, frm, to):",
	} {
		if !strings.Contains(replay, want) {
			t.Errorf("replay job lacks %q", want)
		}
	}
	if !strings.Contains(stderr, "notice: replay --source bronze is not exported") {
		t.Errorf("--job replay does not say that it replays from silver only: %s", stderr)
	}
	checkPython(t, replay)
	if _, _, err := runExportCLI(t, "export", "spark", "--config", path, "--job", "compact"); err == nil ||
		!strings.Contains(err.Error(), "expected stream (default), merge-late, replay or derive") {
		t.Errorf("--job compact: err = %v, want a refusal naming the jobs", err)
	}
	stream, _, err := runExportCLI(t, "export", "spark", "--config", path)
	if err != nil || !strings.Contains(stream, `JOB = "stream"`) {
		t.Errorf("the default job is not the stream: err %v", err)
	}
}

// TestExportSparkDerivedTables: the derived tables are exported in level order (a third level
// reads its upstream's recorded watermark), with the rollup of each column and medallion's txn
// app ids; a graph that starts at a gold over a join is left to medallion, said per table, at
// export time and in the job.
func TestExportSparkDerivedTables(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pipeline.yaml")
	cfg := `lake: ` + t.TempDir() + `
schema:
  - {name: event_id,   type: string, required: true}
  - {name: ad_id,      type: string}
  - {name: amount,     type: double}
  - {name: event_time, type: timestamp, required: true}
stream: {watermark: 10m, dedup: [event_id]}
sources:
  - name: clicks
    schema:
      - {name: click_id,   type: string, required: true}
      - {name: ad_id,      type: string, required: true}
      - {name: click_time, type: timestamp, required: true}
    stream: {event_time: click_time, watermark: 30m, dedup: [click_id]}
joins:
  - {name: ec, left: events, right: clicks, type: inner, on: [{left: ad_id, right: ad_id}], time: {lower: 0s, upper: 1h}}
gold:
  - name: e5m
    window: {type: tumbling, size: 5m}
    group_by: [ad_id]
    aggregates: [{fn: count}, {fn: sum, column: amount, as: total}, {fn: avg, column: amount, as: mean},
                 {fn: max, column: amount, as: hi}]
  - name: e1d
    source: e1h
    window: {type: tumbling, size: 24h}
    aggregates: [{fn: count, column: count, as: count}]
  - name: e1h
    source: e5m
    window: {type: tumbling, size: 1h}
    group_by: [ad_id]
    aggregates: [{fn: sum, column: count, as: count}, {fn: sum, column: total, as: total},
                 {fn: avg, column: mean, as: mean}, {fn: max, column: hi, as: hi}]
  - name: ec_5m
    source: ec
    window: {type: tumbling, size: 5m}
    aggregates: [{fn: count}]
  - name: ec_1h
    source: ec_5m
    window: {type: tumbling, size: 1h}
    aggregates: [{fn: sum, column: count, as: count}]
`
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := runExportCLI(t, "export", "spark", "--config", path, "--job", "derive")
	if err != nil {
		t.Fatalf("export spark --job derive: %v\n%s", err, stderr)
	}
	e1h := `{"name": "e1h", "table": "gold/e1h", "upstream": "e5m", "upstream_table": "gold/e5m", "upstream_derived": False,
     "source": "events", "size_us": 3600000000, "start_us": 0, "keys": ["ad_id"], "change_feed": True,
     "aggs": [{"fn": "count", "column": "count", "as": "count"}, {"fn": "sum", "column": "total", "as": "total"}, ` +
		`{"fn": "avg", "column": "mean", "as": "mean"}, {"fn": "max", "column": "hi", "as": "hi"}]}`
	e1d := `{"name": "e1d", "table": "gold/e1d", "upstream": "e1h", "upstream_table": "gold/e1h", "upstream_derived": True,
     "source": "events", "size_us": 86400000000, "start_us": 0, "keys": [], "change_feed": True,`
	for _, want := range []string{`JOB = "derive"`, `DERIVED_APP = "medallion-derived-"`, `DERIVED_WM_APP = "medallion-derived-wm-"`, e1h, e1d} {
		if !strings.Contains(out, want) {
			t.Errorf("derive job lacks %q", want)
		}
	}
	if i, j := strings.Index(out, `{"name": "e1h"`), strings.Index(out, `{"name": "e1d"`); i < 0 || j < i {
		t.Errorf("e1d is not after its upstream e1h in DERIVED")
	}
	if strings.Contains(out, `{"name": "ec_1h"`) {
		t.Errorf("the derive job keeps ec_1h, whose graph starts at a gold over a join")
	}
	for _, want := range []string{
		"notice: derived table e1h (from gold e5m): not kept by the stream job; the merge-late, replay and derive jobs",
		"notice: derived table e1d (from gold e1h): not kept by the stream job",
		"notice: derived table ec_1h: its graph starts at gold ec_5m over a join: keep it on medallion",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("export does not say %q:\n%s", want, stderr)
		}
	}
	if !strings.Contains(out, "derived table ec_1h: its graph starts at gold ec_5m over a join") {
		t.Errorf("NOT_EXPORTED does not name ec_1h")
	}
	checkPython(t, out)
}
