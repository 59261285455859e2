"""The Spark anchor of the join benchmark: Spark's stream-stream join over the micro-batch files
`joinbench gen` writes (bench/cmd/joinbench, which runs medallion's join over the same files).

JSON file source with the declared schema, one file per micro-batch (maxFilesPerTrigger 1), the
two sides split by their `side` column, withWatermark on each (impressions 10 minutes, clicks
20 minutes), a left outer join on the impression id with `click.t BETWEEN impression.t AND
impression.t + 1 hour`, Trigger.AvailableNow (over this backlog Spark runs one no-data batch,
after the last file: a data batch takes the place of each earlier one), and the noop
sink: the output is computed and discarded, as joinbench discards ours. local[2], like the other
anchors. Prints a one-line JSON summary on stdout: input rows, batches, rows dropped by the
watermark, output rows, the peak state rows, and the seconds of the query alone (session start
excluded) and in total.

The JVM is a child of this process and is waited for before exit, so the parent's wait4 rusage
(CPU, peak RSS) includes it.
"""
import argparse
import json
import os
import sys
import tempfile
import time
from sparklocal import TUNED, local_session
from sparkstop import stop_and_wait


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True, help="the micro-batch files (joinbench gen)")
    ap.add_argument("--checkpoint", default="", help="checkpoint directory (default: a temp dir)")
    ap.add_argument("--driver-memory", default="2g")
    a = ap.parse_args()
    began = time.time()

    from pyspark.sql import functions as F, types as T

    spark = local_session("medallion-bench-join", a.driver_memory, TUNED,
                          {"spark.sql.streaming.numRecentProgressUpdates": "100000"})
    spark.sparkContext.setLogLevel("WARN")
    schema = T.StructType([T.StructField("side", T.StringType()), T.StructField("id", T.LongType()),
                           T.StructField("k", T.LongType()), T.StructField("t_us", T.LongType())])
    src = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).json(a.dir)

    def side(name, p, delay):
        return (src.where(F.col("side") == name)
                .select(F.col("id").alias(p + "id"), F.col("k").alias(p + "k"),
                        F.expr("timestamp_micros(t_us)").alias(p + "t"))
                .withWatermark(p + "t", delay))

    impressions, clicks = side("L", "l", "10 minutes"), side("R", "r", "20 minutes")
    joined = impressions.join(
        clicks, F.expr("lk = rk AND rt >= lt AND rt <= lt + INTERVAL 1 HOUR"), "left_outer")
    checkpoint = a.checkpoint or tempfile.mkdtemp(prefix="spark-join-ck-")
    job = time.time()
    q = (joined.writeStream.format("noop").option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start())
    q.awaitTermination()
    done = time.time()
    batches, rows, dropped, out, state_peak = 0, 0, 0, 0, 0
    for p in q.recentProgress:
        if "addBatch" not in p["durationMs"]:
            continue  # an idle report, not a batch
        batches += 1
        rows += p["numInputRows"]
        out += max(p.get("sink", {}).get("numOutputRows", 0), 0)
        for op in p["stateOperators"]:
            dropped += op.get("numRowsDroppedByWatermark", 0)
            state_peak = max(state_peak, op.get("numRowsTotal", 0))
    stop_and_wait(spark)
    print(json.dumps({"engine": "spark", "events": rows, "batches": batches, "dropped": dropped,
                      "out_rows": out, "state_rows_peak": state_peak,
                      "job_seconds": round(done - job, 3), "total_seconds": round(time.time() - began, 3)}))


if __name__ == "__main__":
    sys.exit(main())
