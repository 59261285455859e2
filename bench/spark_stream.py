"""The Spark anchor of the benchmark: the medallion workload as Spark Structured Streaming.

JSON file source over the landing files (declared schema, maxFilesPerTrigger) -> withWatermark
-> window aggregation per gold table -> Delta sink in append mode, Trigger.AvailableNow. One
streaming query per window (Spark runs one stateful aggregation per query), both over the same
source, run concurrently in one local[2] session. Prints a one-line JSON summary on stdout.

The JVM is a child of this process: it is waited for before exit, so the parent's wait4 rusage
(peak RSS, CPU) includes it.
"""
import argparse
import json
import os
import time
from sparklocal import DELTA, TUNED, interop_jars, local_session
from sparkstop import stop_and_wait


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--landing", required=True, help="directory of landing NDJSON files")
    ap.add_argument("--out", required=True, help="directory for the Delta tables and checkpoints")
    ap.add_argument("--group", default="device_id")
    ap.add_argument("--watermark", default="10 minutes")
    ap.add_argument("--max-files", type=int, default=1)
    ap.add_argument("--driver-memory", default="2g")
    a = ap.parse_args()

    from pyspark.sql import functions as F, types as T

    spark = local_session("medallion-bench", a.driver_memory, DELTA, TUNED, {
        "spark.jars": interop_jars("spark_stream.py"),
        "spark.sql.catalogImplementation": "in-memory",
        "spark.sql.warehouse.dir": os.path.join(a.out, "warehouse"),
        "spark.databricks.delta.snapshotPartitions": "2",
    })
    spark.sparkContext.setLogLevel("ERROR")
    began = time.time()

    schema = T.StructType([
        T.StructField("event_id", T.StringType()),
        T.StructField("event_type", T.StringType()),
        T.StructField("device_id", T.StringType()),
        T.StructField("amount", T.DoubleType()),
        T.StructField("event_time", T.TimestampType()),
    ])
    events = (
        spark.readStream.schema(schema)
        .option("maxFilesPerTrigger", a.max_files)
        .option("timestampFormat", "yyyy-MM-dd'T'HH:mm:ss[.SSSSSS]XXX")
        .json(a.landing)
        .withWatermark("event_time", a.watermark)
    )
    windows = {
        "tumbling_5m": F.window("event_time", "5 minutes"),
        "sliding_10m_5m": F.window("event_time", "10 minutes", "5 minutes"),
    }
    queries = {}
    for name, win in windows.items():
        agg = events.groupBy(win, F.col(a.group)).agg(
            F.count(F.lit(1)).alias("count"), F.sum("amount").alias("total_amount"))
        queries[name] = (
            agg.writeStream.format("delta").outputMode("append")
            .option("checkpointLocation", os.path.join(a.out, "_checkpoints", name))
            .trigger(availableNow=True)
            .start(os.path.join(a.out, "gold", name))
        )
    summary = {"gold": {}}
    for name, q in queries.items():
        q.awaitTermination()
        progress = q.recentProgress
        summary["gold"][name] = {
            "batches": len(progress),
            "numInputRows": sum(p["numInputRows"] for p in progress),
            "numRowsDroppedByWatermark": sum(
                sum(s.get("numRowsDroppedByWatermark", 0) for s in p.get("stateOperators", []))
                for p in progress),
        }
    summary["stream_seconds"] = round(time.time() - began, 3)
    for name in windows:
        row = spark.read.format("delta").load(os.path.join(a.out, "gold", name)).agg(
            F.count(F.lit(1)).alias("rows"), F.sum("count").alias("events")).collect()[0]
        summary["gold"][name]["rows"] = row["rows"]
        summary["gold"][name]["events"] = row["events"]

    stop_and_wait(spark)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
