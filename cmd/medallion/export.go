package main

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/objstore/bucketurl"
)

func newExportCmd() *cobra.Command {
	export := &cobra.Command{
		Use:   "export spark --config F",
		Short: "Print the pipeline's stream as a job for another engine",
	}
	spark := &cobra.Command{
		Use:   "spark --config F",
		Short: "Print a PySpark job that runs the stream on Spark and keeps the promise",
		Long: `export spark prints a Python program that runs the pipeline's stream on Spark with Delta and
keeps medallion's promise: validation with rejects, silver with exact dedup (first arrival wins
across all time), each aggregation's quarantine judged with the previous batch's watermark, gold
with medallion's schema; every write carries txn(query id, batch id). medallion's merge-late,
replay, optimize, vacuum, lag, report and status page work on the tables it writes.

Safe by default: it writes its own tables under <lake>/spark/ (spark/silver/events,
spark/gold/<name>, spark/silver/late_<name>, spark/bronze/rejects, spark/_checkpoints/<stream>)
and refuses to write into a table whose log holds another query's txn, naming both. With
--takeover it continues medallion's own stream (its checkpoint and tables) once medallion's
stream has stopped: see docs/past-one-machine.md. --plain runs Spark's own aggregation
(late rows dropped, no silver or rejects), the baseline the promise is measured against.

Run it:
  medallion export spark --config pipeline.yaml > job.py
  spark-submit --packages io.delta:delta-spark_2.12:3.3.2,org.apache.hadoop:hadoop-aws:3.3.4 job.py
  python job.py --help     # where it writes, and its options
On S3 (MinIO, LocalStack, AWS) the s3a settings come from the config's s3 block and the AWS
environment (AWS_ENDPOINT_URL[_S3], AWS_REGION); credentials from AWS's default provider chain.

Databricks (Jobs API 2.1), the job uploaded to dbfs:/medallion/job.py:
  {"name": "medallion-events", "tasks": [{"task_key": "stream",
    "spark_python_task": {"python_file": "dbfs:/medallion/job.py", "parameters": ["--trigger", "available-now"]},
    "new_cluster": {"spark_version": "15.4.x-scala2.12", "node_type_id": "i3.xlarge", "num_workers": 2}}],
   "schedule": {"quartz_cron_expression": "0 * * * * ?", "timezone_id": "UTC"}}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, _ := cmd.Flags().GetString("config")
			if p == "" {
				return usageError("export spark: --config is required")
			}
			sets, _ := cmd.Flags().GetStringArray("set")
			cfg, err := loadPipelineConfig(cmd.Context(), p, sets)
			if err != nil {
				return err
			}
			if cfg.MultiSource() {
				// The exported job is one query over one bronze table; several sources and
				// joins would need one job per query and the join host's per-source
				// watermarks, which the export does not write.
				return usageError("export spark: %s has sources: or joins:, which the export does not support yet: export a single-source config (several sources and joins run in medallion itself)", p)
			}
			return writeSparkJob(cmd.OutOrStdout(), cfg)
		},
	}
	spark.Flags().String("config", "", "pipeline config (YAML)")
	spark.Flags().StringArray("set", nil, "override a config key, e.g. --set stream.max_files_per_trigger=10 (repeatable)")
	export.AddCommand(spark)
	return export
}

// sparkLake is the lake as Spark's Hadoop file systems spell it: s3a:// for S3, file:// for a
// local path (made absolute now, as medallion resolves it against the working directory).
func sparkLake(lake string) (string, error) {
	loc, err := bucketurl.Parse(lake)
	if err != nil {
		return "", fmt.Errorf("export spark: lake: %w", err)
	}
	if loc.Scheme == "s3" {
		return strings.TrimSuffix("s3a://"+path.Join(loc.Bucket, loc.Prefix), "/"), nil
	}
	return "file://" + loc.Path, nil
}

// py renders a Python string literal (JSON's escapes are Python's).
func py(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// pyCol renders a column reference that survives dots and spaces in names.
func pyCol(name string) string {
	return "F.col(" + py("`"+strings.ReplaceAll(name, "`", "``")+"`") + ")"
}

// sparkInterval spells a duration as a Spark interval string, exactly (microseconds at most).
func sparkInterval(d time.Duration) string {
	switch {
	case d%time.Second == 0:
		return fmt.Sprintf("%d seconds", d/time.Second)
	case d%time.Millisecond == 0:
		return fmt.Sprintf("%d milliseconds", d/time.Millisecond)
	}
	return fmt.Sprintf("%d microseconds", d/time.Microsecond)
}

// sparkJobBody is the part of the job that is the same for every pipeline: the promise-keeping
// stream (Job), the plain Spark baseline, the storage settings and the command line.
//
//go:embed export_job.py
var sparkJobBody string

func writeSparkJob(w io.Writer, cfg *config.Pipeline) error {
	lake, err := sparkLake(cfg.Lake)
	if err != nil {
		return err
	}
	st := &cfg.Stream
	var b strings.Builder
	pf := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	pf(`#!/usr/bin/env python3
"""PySpark job equivalent to medallion's stream %s of pipeline %s.

Generated by 'medallion export spark'. It keeps medallion's promise on Spark: bronze -> validation
(rejects) -> exact dedup (silver: first arrival wins across all time) -> each aggregation's
quarantine (rows late for a window that had closed, with the watermark that judged them) and gold
(append, update or complete, medallion's schema), every write with txn(query id, batch id), so
medallion's merge-late, replay, optimize, vacuum, lag, report and status page work on its tables.

Safe by default: its tables go under <lake>/spark/ (spark/silver/events, spark/gold/<name>, ...),
never into tables whose log holds another query's txn. --takeover continues medallion's own
stream (its checkpoint and tables) after medallion's stream has stopped.

Run it with
  spark-submit --packages io.delta:delta-spark_2.12:3.3.2,org.apache.hadoop:hadoop-aws:3.3.4 THIS_FILE
or with a python that has pyspark and delta-spark (--conf passes Spark settings). On S3 the
s3a settings come from the pipeline config and the AWS environment (see s3a_settings).

Differences from medallion: session windows are not carried (use --plain or keep them on
medallion); sketch aggregates use Spark's own sketches (values close to, not equal to,
medallion's; no <name>_sketch column); the rejects' raw column is Spark's JSON of the row.
"""

import argparse
import json
import os

from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F

LAKE = %s
BRONZE = LAKE + "/" + %s
SILVER = %s
REJECTS = %s
CHECKPOINT = %s  # relative to the root (medallion's own checkpoint under --takeover)
QUERY = %s
MAX_FILES_PER_TRIGGER = %d
MAX_BYTES_PER_TRIGGER = %d  # 0: no bound
EVENT_TIME = %s
WATERMARK = %s
DEDUP = [%s]
`, py(st.Name), py(cfg.Source()), py(lake), py(cfg.Tables.Bronze), py(cfg.Tables.Silver), py(cfg.Tables.Rejects),
		py(st.Checkpoint), py(st.Name), st.MaxFilesPerTrigger, st.MaxBytesPerTrigger.Bytes, py(st.EventTime),
		py(sparkInterval(st.Watermark.Duration)), joinPy(st.Dedup))
	trigger := string(st.Trigger.Kind)
	if st.Trigger.Kind == config.TriggerProcessingTime {
		// Spark parses "30 seconds", not Go's "30s".
		trigger += "=" + sparkInterval(st.Trigger.Interval)
	}
	pf("TRIGGER = %s\n", py(trigger))
	pf("S3 = {\"endpoint\": %s, \"region\": %s, \"path_style\": %s}\n", py(cfg.S3.Endpoint), py(cfg.S3.Region),
		pyBool(cfg.S3.PathStyle))
	pf("GOLD = {\n")
	var tablesHelp strings.Builder
	fmt.Fprintf(&tablesHelp, "tables, under the root: %s, %s", cfg.Tables.Silver, cfg.Tables.Rejects)
	for _, g := range cfg.Gold {
		win := g.Window
		pf("    %s: {\"table\": %s, \"quarantine\": %s, \"output_mode\": %s, \"keys\": [%s],\n", py(g.Name), py(g.Table),
			py(g.Quarantine), py(g.OutputMode), joinPy(g.GroupBy))
		pf("        \"window\": {\"type\": %s, \"size_us\": %d, \"slide_us\": %d, \"start_us\": %d}},\n", py(string(win.Type)),
			win.Size.Microseconds(), win.EffectiveSlide().Microseconds(), win.StartTime.Microseconds())
		fmt.Fprintf(&tablesHelp, ", %s, %s", g.Table, g.Quarantine)
	}
	pf("}\n")
	pf("TABLES_HELP = %s\n", py(tablesHelp.String()))
	// Data-quality expectations of the source (DESIGN.md §4), applied in the silver stage:
	// [{"name", "expect" (a Spark SQL boolean expression), "on_violation": warn|drop|fail}].
	// Expect is Spark SQL as the user wrote it: the job hands it to F.expr unchanged.
	pf("EXPECTATIONS = [")
	for i, e := range cfg.Expectations {
		if i > 0 {
			pf(",")
		}
		pf("\n    {\"name\": %s, \"expect\": %s, \"on_violation\": %s}", py(e.Name), py(e.Expect), py(e.OnViolation))
	}
	pf("]\n")

	writeSparkValidation(&b, cfg)

	b.WriteString(`

def events(spark, bronze=None, max_files=None):
    """--plain: bronze as a stream of valid, deduplicated events with the watermark."""
    reader = spark.readStream.format("delta").option("maxFilesPerTrigger", max_files or MAX_FILES_PER_TRIGGER)
    if MAX_BYTES_PER_TRIGGER:
        reader = reader.option("maxBytesPerTrigger", str(MAX_BYTES_PER_TRIGGER))
    df = reader.load(bronze or BRONZE)
    df = df.where(reject_reason().isNull())
`)
	if len(st.Dedup) > 0 {
		pf("    # dropDuplicates before the watermark: exact within the query (keys never expire).\n")
		pf("    df = df.dropDuplicates(DEDUP)\n")
	}
	if st.Watermark.Duration > 0 {
		pf("    return df.withWatermark(EVENT_TIME, WATERMARK)\n")
	} else {
		pf("    return df\n")
	}

	for _, g := range cfg.Gold {
		if err := writeSparkGold(&b, cfg, &g); err != nil {
			return err
		}
	}
	b.WriteString(sparkJobBody)
	_, err = io.WriteString(w, b.String())
	return err
}

// writeSparkValidation writes reject_reason() and reject_detail(): medallion's validation
// (silver.Rules) as Spark column expressions, the reasons and texts of medallion's rejects.
func writeSparkValidation(b *strings.Builder, cfg *config.Pipeline) {
	pf := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	st := &cfg.Stream
	var required []string
	for _, c := range cfg.Schema {
		if c.Required && c.Name != st.EventTime { // checked first, with its own reason
			required = append(required, c.Name)
		}
	}
	skewUs := st.MaxFutureSkew.Microseconds()
	future := ""
	if skewUs > 0 {
		future = fmt.Sprintf("%s.isNotNull() & (F.unix_micros(%s) > F.unix_micros(%s) + %d)",
			pyCol("_ingest_time"), pyCol(st.EventTime), pyCol("_ingest_time"), skewUs)
	}
	pf("\n\ndef reject_reason():\n")
	pf("    \"\"\"Why a bronze row fails validation (null when it passes), in medallion's order: event\n")
	pf("    time, required columns (schema order), event time beyond _ingest_time + max_future_skew.\"\"\"\n")
	pf("    return (F.when(%s.isNull(), F.lit(\"missing_event_time\"))", pyCol(st.EventTime))
	for _, c := range required {
		pf("\n            .when(%s.isNull(), F.lit(\"missing_required\"))", pyCol(c))
	}
	if future != "" {
		pf("\n            .when(%s, F.lit(\"future\"))", future)
	}
	pf(")\n")

	pf("\n\ndef reject_detail():\n")
	pf("    \"\"\"The rejects' error column, worded as medallion words it.\"\"\"\n")
	evMsg := fmt.Sprintf("event time column %q is missing, null or not a valid timestamp (a value that did not parse is in _rescued_data)", st.EventTime)
	pf("    return (F.when(%s.isNull(), F.lit(%s))", pyCol(st.EventTime), py(evMsg))
	for _, c := range required {
		msg := fmt.Sprintf("required column %q is missing or null (a value that did not parse is in _rescued_data)", c)
		pf("\n            .when(%s.isNull(), F.lit(%s))", pyCol(c), py(msg))
	}
	if future != "" {
		ts := func(col string) string {
			return fmt.Sprintf("F.regexp_replace(F.date_format(%s, \"yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'\"), \"\\\\.000000Z$\", \"Z\")", pyCol(col))
		}
		pf("\n            .when(%s,\n                  F.concat(F.lit(\"event time \"), %s, F.lit(%s), %s)))\n", future, ts(st.EventTime),
			py(" is more than max_future_skew "+st.MaxFutureSkew.Duration.String()+" after its ingest time "), ts("_ingest_time"))
		return
	}
	pf(")\n")
}

func pyBool(b *bool) string {
	switch {
	case b == nil:
		return "None"
	case *b:
		return "True"
	}
	return "False"
}

func joinPy(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = py(n)
	}
	return strings.Join(q, ", ")
}

// writeSparkGold writes gold_<name>(events): the aggregation of one gold table, with its columns
// in medallion's order and types.
func writeSparkGold(b *strings.Builder, cfg *config.Pipeline, g *config.Gold) error {
	pf := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	ev := "EVENT_TIME"
	var win string
	switch g.Window.Type {
	case config.WindowSession:
		win = fmt.Sprintf("F.session_window(%s, %s)", ev, py(sparkInterval(g.Window.Gap.Duration)))
	default:
		win = fmt.Sprintf("F.window(%s, %s, %s, %s)", ev, py(sparkInterval(g.Window.Size.Duration)),
			py(sparkInterval(g.Window.EffectiveSlide().Duration)), py(sparkInterval(g.Window.StartTime.Duration)))
	}
	var aggs, cols []string
	out := func(expr, as string) {
		aggs = append(aggs, expr+".alias("+py(as)+")")
		cols = append(cols, pyCol(as))
	}
	for _, a := range g.Aggregates {
		var in string
		integral := false
		if a.Column != "" {
			c, ok := cfg.Column(a.Column)
			if !ok {
				return fmt.Errorf("export spark: gold %s: aggregate %s reads unknown column %q", g.Name, a.As, a.Column)
			}
			in = pyCol(a.Column)
			switch c.Type.Kind {
			case config.KindLong, config.KindInteger, config.KindShort, config.KindByte,
				config.KindTimestamp, config.KindTimestampNTZ, config.KindDate:
				integral = true
			}
			if !integral && c.Type.Numeric() {
				// medallion aggregates non-integral numbers as doubles.
				in += `.cast("double")`
			}
		}
		switch a.Fn {
		case config.FnCount:
			if in == "" {
				out("F.count(F.lit(1))", a.As)
			} else {
				out("F.count("+in+")", a.As)
			}
		case config.FnSum:
			out("F.sum("+in+")", a.As)
		case config.FnMin:
			out("F.min("+in+")", a.As)
		case config.FnMax:
			out("F.max("+in+")", a.As)
		case config.FnAvg:
			out("F.avg("+in+")", a.As)
			out("F.sum("+in+")", a.As+"_sum")
			out("F.count("+in+")", a.As+"_count")
		case config.FnApproxCountDistinct:
			out(fmt.Sprintf("F.approx_count_distinct(%s, %g)", in, a.RSD), a.As)
		case config.FnApproxPercentile:
			ps := make([]string, len(a.Percentiles))
			for i, p := range a.Percentiles {
				ps[i] = fmt.Sprintf("%g", p)
			}
			out(fmt.Sprintf("F.percentile_approx(%s.cast(\"double\"), [%s], %d)", in, strings.Join(ps, ", "),
				int(1/a.RelativeAccuracy+0.5)), a.As)
		default:
			return fmt.Errorf("export spark: gold %s: aggregate %q has no Spark equivalent", g.Name, a.Fn)
		}
	}
	keys := make([]string, len(g.GroupBy))
	for i, k := range g.GroupBy {
		keys[i] = pyCol(k)
	}
	pf("\n\ndef gold_%s(events):\n", strings.ReplaceAll(g.Name, "-", "_"))
	pf("    \"\"\"%s: %s window, group by [%s], output mode %s.\"\"\"\n", g.Name, g.Window.Type,
		strings.Join(g.GroupBy, ", "), g.OutputMode)
	pf("    return (events.groupBy(%s)\n", strings.Join(append([]string{win + ".alias(\"window\")"}, keys...), ", "))
	pf("            .agg(%s)\n", strings.Join(aggs, ",\n                 "))
	sel := []string{`"window"`}
	for _, k := range g.GroupBy {
		sel = append(sel, pyCol(k))
	}
	sel = append(sel, cols...)
	pf("            .select(%s,\n", strings.Join(sel, ", "))
	pf("                    F.lit(0).cast(\"long\").alias(\"late_rows\")))\n")
	return nil
}
