package main

import (
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
  - {name: event_time, type: timestamp, required: true}
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
	out, err := runGenCLI(t, "export", "spark", "--config", writeExportConfig(t, lake))
	if err != nil {
		t.Fatalf("export spark: %v\n%s", err, out)
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
		"return (F.when(F.col(\"`event_time`\").isNull(), F.lit(\"missing_event_time\"))\n" +
			"            .when(F.col(\"`event_id`\").isNull(), F.lit(\"missing_required\"))\n" +
			"            .when(F.col(\"`qty`\").isNull(), F.lit(\"missing_required\"))\n" +
			"            .when(F.col(\"`_ingest_time`\").isNotNull() & (F.unix_micros(F.col(\"`event_time`\")) > " +
			"F.unix_micros(F.col(\"`_ingest_time`\")) + 5400250000), F.lit(\"future\")))",
		// the rejects' texts are medallion's
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
		`"s10m": {"table": "gold/s10m", "quarantine": "silver/late_s10m", "output_mode": "update", "keys": [],` +
			"\n" + `        "window": {"type": "sliding", "size_us": 600000000, "slide_us": 300000000, "start_us": 60000000}},`,
		`F.session_window(EVENT_TIME, "1500 milliseconds")`,
		`"sess": {"table": "gold/sess", "quarantine": "silver/late_sess", "output_mode": "complete", "keys": ["event_id"],`,
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
	// The job must at least be valid Python (Spark itself runs it in tests/interop).
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH: the job was checked as text only")
	}
	job := filepath.Join(t.TempDir(), "job.py")
	if err := os.WriteFile(job, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command(python, "-m", "py_compile", job).CombinedOutput(); err != nil {
		t.Fatalf("the job is not valid Python: %v\n%s", err, msg)
	}
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
