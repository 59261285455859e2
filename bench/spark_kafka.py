"""The Spark anchor of the Kafka ingest benchmark: Spark's Kafka source writing a Delta bronze table.

Reads every record of a topic (earliest to latest, as Trigger.AvailableNow would in one batch),
parses the value with the declared schema (from_json; a value that is not a record gives nulls,
Spark has no rejects), keeps the Kafka columns, and appends to a Delta table. local[2], like the
other anchors. Prints a one-line JSON summary on stdout: rows, seconds of the job alone (session
start excluded) and in total.

Jars: spark.jars must hold Delta's (eval "$(scripts/interop.sh env)") and the Kafka source's,
spark-sql-kafka-0-10_2.12-3.5.7 with spark-token-provider-kafka-0-10_2.12-3.5.7,
kafka-clients-3.4.1 and commons-pool2-2.11.1 (3.5.7: the 3.5.8 of pyspark is not on Maven
Central), passed with --kafka-jars (bench/run.sh --kafka fetches them). The JVM is a child of
this process and is waited for before exit, so the parent's wait4 rusage (CPU, peak RSS)
includes it.
"""
import argparse
import json
import time
from sparklocal import DELTA, interop_jars, local_session
from sparkstop import stop_and_wait


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--out", required=True, help="directory of the Delta table")
    ap.add_argument("--kafka-jars", required=True, help="comma-separated jars of the Kafka source")
    ap.add_argument("--driver-memory", default="2g")
    a = ap.parse_args()
    began = time.time()

    from pyspark.sql import functions as F, types as T

    spark = local_session("medallion-bench-kafka", a.driver_memory, DELTA,
                          {"spark.jars": interop_jars("spark_kafka.py") + "," + a.kafka_jars})
    spark.sparkContext.setLogLevel("WARN")
    schema = T.StructType([
        T.StructField("event_id", T.StringType()),
        T.StructField("event_type", T.StringType()),
        T.StructField("amount", T.DoubleType()),
        T.StructField("event_time", T.TimestampType()),
    ])
    job = time.time()
    raw = (spark.read.format("kafka").option("kafka.bootstrap.servers", a.brokers)
           .option("subscribe", a.topic).option("startingOffsets", "earliest")
           .option("endingOffsets", "latest").load())
    rows = raw.select(
        F.from_json(F.col("value").cast("string"), schema).alias("v"),
        F.current_timestamp().alias("_ingest_time"),
        F.col("topic").alias("_kafka_topic"), F.col("partition").alias("_kafka_partition"),
        F.col("offset").alias("_kafka_offset"), F.col("timestamp").alias("_kafka_timestamp"),
        F.col("key").alias("_kafka_key"),
    ).select("v.*", "_ingest_time", "_kafka_topic", "_kafka_partition", "_kafka_offset", "_kafka_timestamp", "_kafka_key")
    rows.write.format("delta").mode("append").save(a.out)
    done = time.time()
    n = spark.read.format("delta").load(a.out).count()
    stop_and_wait(spark)
    print(json.dumps({"engine": "spark", "rows": n, "job_seconds": round(done - job, 3),
                      "total_seconds": round(time.time() - began, 3)}))


if __name__ == "__main__":
    main()
