package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/medallion-lake/medallion/bench"
)

// kafkaLanding is the landing mapping of a Kafka lake: the whole topic from the earliest offset,
// with ingest's default batch bound (landing.kafka.max_records_per_trigger, 1M records).
func kafkaLanding(brokers, topic string) string {
	var q []string
	for _, b := range split(brokers) {
		q = append(q, fmt.Sprintf("%q", b))
	}
	return fmt.Sprintf("{kind: kafka, kafka: {brokers: [%s], topic: %q, starting_offsets: earliest}}", strings.Join(q, ", "), topic)
}

// kafkaTopic names a case's topic; the time makes a rerun of a killed harness use a fresh topic
// (gen produces again into an existing one), so both readers always see exactly the case's records.
func kafkaTopic(c bench.Case, now time.Time) string {
	return fmt.Sprintf("bench-%s-%d", caseName(c), now.UnixNano())
}

// kafkaCase measures Kafka -> bronze on one file case: `medallion gen` produces the case's
// records (the same gen arguments, so the same lines as its landing files) into a fresh topic,
// then our `run ingest` with landing.kind kafka and, when the case is small enough, Spark's Kafka
// source (bench/spark_kafka.py) each read the whole topic into a Delta bronze table.
func kafkaCase(ctx context.Context, o options, c bench.Case) ([]bench.Run, []string) {
	base := bench.Run{Engine: bench.EngineOurs, Backend: c.Backend, Events: c.Events, Keys: c.Keys}
	failed := func(status string) []bench.Run {
		var runs []bench.Run
		for _, st := range []string{bench.StageKafkaGen, bench.StageKafkaIngest} {
			r := base
			r.Stage, r.Status = st, status
			runs = append(runs, r)
		}
		logf("%s: kafka stages %s", c, status)
		return runs
	}
	dir := filepath.Join(o.work, caseName(c)+"-kafka")
	if err := os.RemoveAll(dir); err != nil {
		return failed("failed: " + err.Error()), nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return failed("failed: " + err.Error()), nil
	}
	topic := kafkaTopic(c, time.Now())
	t := microTriggers()
	t.landing = kafkaLanding(o.kafkaBrokers, topic)
	l, err := newLake(ctx, c, dir, "lake", t)
	if err != nil {
		return failed("failed: kafka lake: " + err.Error()), nil
	}
	defer l.bucket.Close()

	logf("%s: gen into Kafka topic %s (%d partitions)", c, topic, o.kafkaPartitions)
	g := generate(ctx, o, base, l, append(workloadArgs(o, c), "--partitions", fmt.Sprint(o.kafkaPartitions)))
	g.Stage = bench.StageKafkaGen
	runs := []bench.Run{g}
	if !g.OK() {
		r := base
		r.Stage, r.Status = bench.StageKafkaIngest, "skipped: kafka gen "+g.Status
		return append(runs, r), nil
	}
	base.InputBytes = g.InputBytes

	logf("%s: medallion kafka ingest", c)
	r, out := measure(ctx, base, bench.StageKafkaIngest, l.bucket, nil, o.bin, "run", "ingest", "--config", l.cfgPath)
	r.Detail = detail(bench.StageIngest, out)
	runs = append(runs, r)

	var notes []string
	switch {
	case !o.anchors || o.kafkaJars == "":
		notes = append(notes, fmt.Sprintf("%s: no Spark Kafka anchor (needs the interop venv and --kafka-jars)", c))
	case c.Events > o.kafkaSparkMax:
		notes = append(notes, fmt.Sprintf("%s: no Spark Kafka anchor above --kafka-spark-max %s records; the ratio uses none", c, bench.Count(o.kafkaSparkMax)))
	default:
		out := filepath.Join(dir, "spark")
		logf("%s: spark kafka ingest", c)
		anchor := base
		anchor.Engine = bench.EngineSpark
		sr, sout := measure(ctx, anchor, bench.StageKafkaIngest, nil, []string{out}, o.python,
			filepath.Join(o.repo, "bench", "spark_kafka.py"), "--brokers", o.kafkaBrokers, "--topic", topic,
			"--out", out, "--kafka-jars", o.kafkaJars)
		sr.Detail = string(bytes.TrimSpace(lastLine(sout)))
		runs = append(runs, sr)
	}
	return runs, notes
}

// kafkaLine is the workload bullet about the Kafka stages.
func kafkaLine(o options) string {
	return fmt.Sprintf("Kafka (`%s`, `%s`; file cases, issue 19): `medallion gen` produces each case's records (same arguments, so the same lines) "+
		"into a fresh %d-partition topic of a local single-node broker (scripts/kafka.sh, on the same 2 cores); our `run ingest` with "+
		"`landing.kind: kafka` (one batch per 1M records) and Spark's Kafka source (spark-sql-kafka-0-10, local[2], `from_json` with the "+
		"declared schema plus the Kafka columns, one Delta append; bench/spark_kafka.py, cases up to %s records) each write a Delta bronze "+
		"table of the whole topic. Records/s is the events/s column; CPU µs/event is CPU per record. Ours also writes a rejects table and "+
		"keeps offsets in its checkpoint for exactly-once; Spark's batch read keeps none",
		bench.StageKafkaGen, bench.StageKafkaIngest, o.kafkaPartitions, bench.Count(o.kafkaSparkMax))
}
