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

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/bronze/timefmt"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/objstore/bucketurl"
	"github.com/medallion-lake/medallion/silver"
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

Every source of sources: is its own query with its own checkpoint (--source NAME runs one),
and so is every join of joins: (Spark's own stream-stream join, late inputs quarantined, the
aggregations over it in its query), run after the sources. What the job does not do as
medallion does is named on stderr now, one notice per item, and again by the job when it starts.

--job merge-late prints the same program as a batch job folding each quarantine into its gold
(Spark MERGE) with the txn medallion's merge-late records: either may run after the other.
--job replay prints it as a batch job doing what medallion run replay does (job.py --from F --to T,
or --since 24h): merge-late, then the range's whole windows recomputed from silver and written
with replaceWhere. --job derive keeps the derived tables (a gold over another gold): their closed
windows recomputed from the upstream and MERGEd, with medallion's txn; merge-late and replay run
it after their own work, as medallion does.

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
			// What Spark cannot run as medallion does is said now, per item, on stderr
			// (the job on stdout lists it too, in NOT_EXPORTED, and prints it when it starts).
			for _, n := range planExport(cfg).notices {
				fmt.Fprintf(cmd.ErrOrStderr(), "export spark: notice: %s\n", n)
			}
			kind, _ := cmd.Flags().GetString("job")
			switch kind {
			case jobStream, jobMergeLate, jobReplay, jobDerive:
			default:
				return usageError("export spark --job %q: expected stream (default), merge-late, replay or derive", kind)
			}
			if kind == jobReplay {
				fmt.Fprintf(cmd.ErrOrStderr(), "export spark: notice: %s\n", replayBronzeNotice)
			}
			return writeSparkJobKind(cmd.OutOrStdout(), cfg, kind)
		},
	}
	spark.Flags().String("config", "", "pipeline config (YAML)")
	spark.Flags().String("job", jobStream, "the job: stream, merge-late (a batch job folding each quarantine into its gold, with medallion's txn), "+
		"replay (a batch job recomputing a time range of gold from silver, replaceWhere) or derive (the derived tables, MERGEd)")
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

// sparkNames are the Python expressions a source's generated functions read its settings
// through: the top-level source's are the job's module constants (BRONZE, EVENT_TIME, ...), the
// other sources' are literals; suffix tells the source's functions apart (reject_reason<suffix>).
type sparkNames struct {
	suffix, bronze, maxFiles, maxBytes, eventTime, watermark, dedup string
}

// topLevelNames are the top-level source's: the module constants.
var topLevelNames = sparkNames{bronze: "BRONZE", maxFiles: "MAX_FILES_PER_TRIGGER",
	maxBytes: "MAX_BYTES_PER_TRIGGER", eventTime: "EVENT_TIME", watermark: "WATERMARK", dedup: "DEDUP"}

// sourceNames are the names of the i-th source of sources: (counted from 1).
func sourceNames(i int, view *config.Pipeline) sparkNames {
	st := &view.Stream
	return sparkNames{suffix: fmt.Sprintf("_s%d", i), bronze: "LAKE + \"/\" + " + py(view.Tables.Bronze),
		maxFiles: fmt.Sprint(st.MaxFilesPerTrigger), maxBytes: fmt.Sprint(st.MaxBytesPerTrigger.Bytes),
		eventTime: py(st.EventTime), watermark: py(sparkInterval(st.Watermark.Duration)),
		dedup: "[" + joinPy(st.Dedup) + "]"}
}

// sparkTrigger spells a trigger as the job's --trigger takes it.
func sparkTrigger(t config.Trigger) string {
	if t.Kind == config.TriggerProcessingTime {
		// Spark parses "30 seconds", not Go's "30s".
		return string(t.Kind) + "=" + sparkInterval(t.Interval)
	}
	return string(t.Kind)
}

// exportPlan is what of a config the job carries: every source (the top-level one first, as a
// single-source view), the aggregations over sources and over joins (the joins themselves are
// JOINS, export_join.go); notices name, per item, what the job does not do as medallion does.
type exportPlan struct {
	views   []*config.Pipeline
	gold    []config.Gold
	notices []string
}

func planExport(cfg *config.Pipeline) exportPlan {
	var plan exportPlan
	for _, s := range cfg.AllSources() {
		v, _ := cfg.ForSource(s.Name)
		plan.views = append(plan.views, v)
		plan.gold = append(plan.gold, v.Gold...)
		for _, g := range v.Gold {
			if g.Window.Type == config.WindowSession {
				// Not exact on Spark (docs/late-data.md): session_window drops a row whose
				// session ends at or before the late watermark, and a row on time by that rule
				// that touches a session already emitted starts a second, overlapping session
				// where medallion quarantines it as a correction for merge-late.
				plan.notices = append(plan.notices, fmt.Sprintf("gold %s: session windows are not carried by the job "+
					"(it refuses to run them): Spark's session_window drops late rows and cannot extend a session "+
					"it already emitted (a correction becomes a second, overlapping session; docs/late-data.md), "+
					"so --plain differs from medallion there: keep gold %s on medallion", g.Name, g.Name))
			}
		}
	}
	for _, j := range cfg.Joins {
		plan.gold = append(plan.gold, cfg.GoldOf(j.Name)...)
		plan.notices = append(plan.notices, joinNotices(cfg, j)...)
	}
	plan.notices = append(plan.notices, derivedNotices(cfg)...)
	return plan
}

// writeSparkJobKind writes the program; kind (jobStream, jobMergeLate) is its JOB, what main runs.
func writeSparkJobKind(w io.Writer, cfg *config.Pipeline, kind string) error {
	lake, err := sparkLake(cfg.Lake)
	if err != nil {
		return err
	}
	plan := planExport(cfg)
	top := plan.views[0]
	st := &top.Stream
	var b strings.Builder
	pf := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	writeSparkHeader(&b, cfg, lake)
	pf("TRIGGER = %s\n", py(sparkTrigger(st.Trigger)))
	pf("S3 = {\"endpoint\": %s, \"region\": %s, \"path_style\": %s}\n", py(cfg.S3.Endpoint), py(cfg.S3.Region),
		pyBool(cfg.S3.PathStyle))
	pf("GOLD = {\n")
	var tablesHelp strings.Builder
	for i, v := range plan.views {
		if i > 0 {
			tablesHelp.WriteString(", ")
		}
		fmt.Fprintf(&tablesHelp, "%s, %s", v.Tables.Silver, v.Tables.Rejects)
	}
	for _, g := range plan.gold {
		win := g.Window
		feed := g.ChangeFeed()
		pf("    %s: {\"table\": %s, \"quarantine\": %s, \"output_mode\": %s, \"keys\": [%s], \"change_feed\": %s,\n", py(g.Name),
			py(g.Table), py(g.Quarantine), py(g.OutputMode), joinPy(g.GroupBy), pyBool(&feed))
		pf("        \"window\": {\"type\": %s, \"size_us\": %d, \"slide_us\": %d, \"start_us\": %d}},\n", py(string(win.Type)),
			win.Size.Microseconds(), win.EffectiveSlide().Microseconds(), win.StartTime.Microseconds())
		fmt.Fprintf(&tablesHelp, ", %s, %s", g.Table, g.Quarantine)
	}
	pf("}\n")
	// Each aggregation's input: the source whose query computes it and the column its windows
	// are over (the source's event time unless time_column says otherwise).
	pf("GOLD_INPUT = {")
	for i, g := range plan.gold {
		if i > 0 {
			pf(",")
		}
		pf("\n    %s: {\"source\": %s, \"time\": %s}", py(g.Name), py(cfg.GoldSource(g)), py(cfg.GoldTimeColumn(g)))
	}
	pf("}\n")
	pf("TABLES_HELP = %s\n", py(tablesHelp.String()))
	// What the export leaves to medallion, per item: the job prints it at start.
	pf("NOT_EXPORTED = [%s]\n", joinPy(plan.notices))
	// Data-quality expectations of the source (DESIGN.md §4), applied in the silver stage:
	// [{"name", "expect" (a Spark SQL boolean expression), "on_violation": warn|drop|fail}].
	// Expect is Spark SQL as the user wrote it: the job hands it to F.expr unchanged.
	pf("EXPECTATIONS = %s\n", pyExpectations(top.Expectations))
	writeSparkTransforms(&b, plan.views)

	writeSparkValidation(&b, top, "")
	writeSparkEvents(&b, top, topLevelNames)
	for i, v := range plan.views[1:] {
		names := sourceNames(i+1, v)
		writeSparkValidation(&b, v, names.suffix)
		writeSparkEvents(&b, v, names)
	}
	for _, g := range plan.gold {
		v := goldView(cfg, g)
		ev := py(cfg.GoldTimeColumn(g))
		if v.Stream.Name == top.Stream.Name && cfg.GoldTimeColumn(g) == st.EventTime {
			ev = "EVENT_TIME"
		}
		if err := writeSparkGold(&b, v, &g, ev); err != nil {
			return err
		}
	}
	if err := writeSparkJoins(&b, cfg); err != nil {
		return err
	}
	pf("JOB = %s  # what main runs: the stream, merge-late, replay or derive (--job)\n", py(kind))
	if err := writeSparkLate(&b, cfg, plan.gold); err != nil {
		return err
	}
	writeSparkReplay(&b, cfg, plan.gold)
	writeSparkDerived(&b, cfg)
	writeSparkSources(&b, plan.views)
	b.WriteString(sparkJobBody)
	b.WriteString(sparkJoinBody)
	b.WriteString(sparkLateBody)
	b.WriteString(sparkReplayBody)
	b.WriteString(sparkMain)
	_, err = io.WriteString(w, b.String())
	return err
}

// writeSparkHeader writes the job's doc string, imports and the top-level source's constants.
func writeSparkHeader(b *strings.Builder, cfg *config.Pipeline, lake string) {
	st := &cfg.Stream
	fmt.Fprintf(b, `#!/usr/bin/env python3
"""PySpark job equivalent to medallion's stream %s of pipeline %s.

Generated by 'medallion export spark'. It keeps medallion's promise on Spark: bronze -> validation
(rejects) -> exact dedup (silver: first arrival wins across all time) -> each aggregation's
quarantine (rows late for a window that had closed, with the watermark that judged them) and gold
(append, update or complete, medallion's schema), every write with txn(query id, batch id), so
medallion's merge-late, replay, optimize, vacuum, lag, report and status page work on its tables.
With several sources, each source is its own query with its own checkpoint (SOURCES), run one
after the other as medallion runs them (concurrently with a processing-time trigger).

Safe by default: its tables go under <lake>/spark/ (spark/silver/events, spark/gold/<name>, ...),
never into tables whose log holds another query's txn. --takeover continues medallion's own
stream (its checkpoint and tables) after medallion's stream has stopped.

Run it with
  spark-submit --packages io.delta:delta-spark_2.12:3.3.2,org.apache.hadoop:hadoop-aws:3.3.4 THIS_FILE
or with a python that has pyspark and delta-spark (--conf passes Spark settings). On S3 the
s3a settings come from the pipeline config and the AWS environment (see s3a_settings).

Each join of JOINS is one more query, after the sources: Spark's own stream-stream join of
their silver tables, the input rows it drops as late in the join's quarantine, the aggregations
over the join in its query.

Differences from medallion: session windows are not carried (use --plain or keep them on
medallion); NOT_EXPORTED lists, per item, what does not run exactly as in medallion; sketch
aggregates use Spark's own sketches (values close to, not equal to, medallion's; no
<name>_sketch column); the rejects' raw column is Spark's JSON of the row.
"""

import argparse
import json
import os
import threading

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
}

// pyExpectations renders expectations as the job's list of dicts.
func pyExpectations(exps []config.Expectation) string {
	var b strings.Builder
	b.WriteString("[")
	for i, e := range exps {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n    {\"name\": %s, \"expect\": %s, \"on_violation\": %s}", py(e.Name), py(e.Expect), py(e.OnViolation))
	}
	b.WriteString("]")
	return b.String()
}

// writeSparkTransforms writes TRANSFORMS, each source's transform (docs/transforms.md) by
// name, when a source has one: the job adds the computed columns with F.expr of the same SQL
// text and applies the filter as medallion does (transform_of, with_computed, filter_keeps).
func writeSparkTransforms(b *strings.Builder, views []*config.Pipeline) {
	first := true
	for _, v := range views {
		t := v.Transform
		if t.IsZero() {
			continue
		}
		if first {
			b.WriteString("TRANSFORMS = {")
			first = false
		}
		fmt.Fprintf(b, "\n    %s: {\"columns\": [", py(v.Stream.Name))
		for i, c := range t.Columns {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(b, "{\"name\": %s, \"expr\": %s}", py(c.Name), py(c.Expr))
		}
		b.WriteString("], \"filter\": ")
		if f := t.Filter; f != nil {
			fmt.Fprintf(b, "{\"name\": %s, \"expr\": %s, \"on_filter\": %s}", py(f.Name), py(f.Expr), py(f.OnFilter))
		} else {
			b.WriteString("None")
		}
		b.WriteString("},")
	}
	if !first {
		b.WriteString("\n}\n")
	}
}

// writeSparkEvents writes events<suffix>(): --plain's stream of a source's valid, deduplicated
// events with the watermark.
func writeSparkEvents(b *strings.Builder, view *config.Pipeline, n sparkNames) {
	pf := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	pf("\n\ndef events%s(spark, bronze=None, max_files=None):\n", n.suffix)
	pf("    \"\"\"--plain: bronze of source %s as a stream of valid, deduplicated events with the watermark.\"\"\"\n",
		view.Stream.Name)
	pf("    reader = spark.readStream.format(\"delta\").option(\"maxFilesPerTrigger\", max_files or %s)\n", n.maxFiles)
	pf("    if %s:\n", n.maxBytes)
	pf("        reader = reader.option(\"maxBytesPerTrigger\", str(%s))\n", n.maxBytes)
	pf("    df = reader.load(bronze or %s)\n", n.bronze)
	if !view.Transform.IsZero() {
		pf("    df = with_computed(df, transform_of(%s))\n", py(view.Stream.Name))
		pf("    df = df.where(filter_keeps(transform_of(%s)))\n", py(view.Stream.Name))
	}
	pf("    df = df.where(reject_reason%s().isNull())\n", n.suffix)
	if len(view.Stream.Dedup) > 0 {
		pf("    # dropDuplicates before the watermark: exact within the query (keys never expire).\n")
		pf("    df = df.dropDuplicates(%s)\n", n.dedup)
	}
	if view.Stream.Watermark.Duration > 0 {
		pf("    return df.withWatermark(%s, %s)\n", n.eventTime, n.watermark)
	} else {
		pf("    return df\n")
	}
}

// writeSparkSources writes SOURCES: every source's query, the top-level one (QUERY) first.
func writeSparkSources(b *strings.Builder, views []*config.Pipeline) {
	pf := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	pf("\n\n# Every source's query, the top-level one (QUERY) first: its tables (under the root), its\n")
	pf("# checkpoint, its stream settings and its validation, as medallion's single-source view of it.\n")
	pf("SOURCES = {\n")
	pf("    QUERY: {\"bronze\": BRONZE, \"silver\": SILVER, \"rejects\": REJECTS, \"checkpoint\": CHECKPOINT,\n")
	pf("            \"max_files\": MAX_FILES_PER_TRIGGER, \"max_bytes\": MAX_BYTES_PER_TRIGGER, \"event_time\": EVENT_TIME,\n")
	pf("            \"watermark\": WATERMARK, \"dedup\": DEDUP, \"trigger\": TRIGGER, \"expectations\": EXPECTATIONS,\n")
	pf("            \"reject_reason\": reject_reason, \"reject_detail\": reject_detail, \"events\": events,\n")
	pf("            \"dedup_retention_ms\": %d},\n", views[0].Stream.State.DedupRetention.Milliseconds())
	for i, v := range views[1:] {
		n := sourceNames(i+1, v)
		pf("    %s: {\"bronze\": %s, \"silver\": %s, \"rejects\": %s, \"checkpoint\": %s,\n", py(v.Stream.Name),
			n.bronze, py(v.Tables.Silver), py(v.Tables.Rejects), py(v.Stream.Checkpoint))
		pf("        \"max_files\": %s, \"max_bytes\": %s, \"event_time\": %s,\n", n.maxFiles, n.maxBytes, n.eventTime)
		pf("        \"watermark\": %s, \"dedup\": %s, \"trigger\": %s,\n", n.watermark, n.dedup, py(sparkTrigger(v.Stream.Trigger)))
		pf("        \"expectations\": %s,\n", strings.ReplaceAll(pyExpectations(v.Expectations), "\n", "\n    "))
		pf("        \"reject_reason\": reject_reason%[1]s, \"reject_detail\": reject_detail%[1]s, \"events\": events%[1]s,\n", n.suffix)
		pf("        \"dedup_retention_ms\": %d},\n", v.Stream.State.DedupRetention.Milliseconds())
	}
	pf("}\n")
}

// writeSparkValidation writes reject_reason() and reject_detail(): medallion's validation
// (silver.Rules) as Spark column expressions, the reasons and texts of medallion's rejects.
func writeSparkValidation(b *strings.Builder, cfg *config.Pipeline, suffix string) {
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
	pf("\n\ndef reject_reason%s():\n", suffix)
	pf("    \"\"\"Why a bronze row fails validation (null when it passes), in medallion's order: event\n")
	pf("    time, required columns (schema order), event time beyond _ingest_time + max_future_skew.\"\"\"\n")
	badEv := fmt.Sprintf("F.get_json_object(%s, %s)", pyCol(bronze.ColRescued), py("$['"+st.EventTime+"']"))
	pf("    return (F.when(%s.isNull() & %s.isNotNull(), F.lit(%s))", pyCol(st.EventTime), badEv, py(silver.ReasonBadEventTime))
	pf("\n            .when(%s.isNull(), F.lit(\"missing_event_time\"))", pyCol(st.EventTime))
	for _, c := range required {
		pf("\n            .when(%s.isNull(), F.lit(\"missing_required\"))", pyCol(c))
	}
	if future != "" {
		pf("\n            .when(%s, F.lit(\"future\"))", future)
	}
	pf(")\n")

	pf("\n\ndef reject_detail%s():\n", suffix)
	pf("    \"\"\"The rejects' error column, worded as medallion words it.\"\"\"\n")
	// bad_event_time's detail: silver.BadEventTimeDetail around the value, cut as silver cuts it.
	const mark = "\x00"
	parts := strings.SplitN(silver.BadEventTimeDetail(st.EventTime, eventTimeExpected(cfg), mark), mark, 2)
	pf("    return (F.when(%s.isNull() & %s.isNotNull(),\n", pyCol(st.EventTime), badEv)
	pf("                  F.concat(F.lit(%s), F.when(F.length(%s) > %d, F.concat(F.substring(%s, 1, %d), F.lit(\"...\"))).otherwise(%s), F.lit(%s)))\n",
		py(parts[0]), badEv, silver.MaxDetailValue, badEv, silver.MaxDetailValue, badEv, py(parts[1]))
	evMsg := fmt.Sprintf("event time column %q is missing or null", st.EventTime)
	pf("            .when(%s.isNull(), F.lit(%s))", pyCol(st.EventTime), py(evMsg))
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

// eventTimeExpected is what the event time column accepts, as bad_event_time details say it.
func eventTimeExpected(cfg *config.Pipeline) string {
	for _, c := range cfg.Schema {
		if c.Name == cfg.Stream.EventTime {
			tp, _ := timefmt.New(c.Format, c.Unit) // Validate compiled it
			return tp.Expected()
		}
	}
	return (*timefmt.Parser)(nil).Expected()
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

// sparkWindow is the gold's window as a Spark column expression over the time column ev.
func sparkWindow(g *config.Gold, ev string) string {
	if g.Window.Type == config.WindowSession {
		return fmt.Sprintf("F.session_window(%s, %s)", ev, py(sparkInterval(g.Window.Gap.Duration)))
	}
	return fmt.Sprintf("F.window(%s, %s, %s, %s)", ev, py(sparkInterval(g.Window.Size.Duration)),
		py(sparkInterval(g.Window.EffectiveSlide().Duration)), py(sparkInterval(g.Window.StartTime.Duration)))
}

// writeSparkGold writes gold_<name>(events): the aggregation of one gold table, with its columns
// in medallion's order and types.
func writeSparkGold(b *strings.Builder, cfg *config.Pipeline, g *config.Gold, ev string) error {
	pf := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	win := sparkWindow(g, ev)
	aggs, cols, err := sparkAggs(cfg, g)
	if err != nil {
		return err
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

// sparkAggs are the gold's aggregates as Spark column expressions (aliased) and the output
// columns they make, in medallion's order and types (avg: <as>, <as>_sum, <as>_count).
func sparkAggs(cfg *config.Pipeline, g *config.Gold) (aggs, cols []string, err error) {
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
				return nil, nil, fmt.Errorf("export spark: gold %s: aggregate %s reads unknown column %q", g.Name, a.As, a.Column)
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
			return nil, nil, fmt.Errorf("export spark: gold %s: aggregate %q has no Spark equivalent", g.Name, a.Fn)
		}
	}
	return aggs, cols, nil
}
