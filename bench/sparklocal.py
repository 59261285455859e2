"""The local Spark session the benchmark's Spark anchors start: local[2] on 127.0.0.1 without
the UI, with each anchor's own settings on top (one place for what they share, so that the
anchors cannot drift apart in it)."""
import os
import sys

# Delta's session extension and catalog: the anchors that read or write Delta tables.
DELTA = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}

# The usual local tuning: 200 shuffle partitions on 2 cores would be unfair to Spark; times in
# UTC as medallion's.
TUNED = {
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.extraJavaOptions": "-Duser.timezone=UTC",
}


def interop_jars(script):
    """The jars of Delta (and its dependencies) scripts/interop.sh names; exits with a message
    naming script when they are not set."""
    jars = os.environ.get("MEDALLION_INTEROP_JARS", "")
    if not jars:
        sys.exit(script + ": MEDALLION_INTEROP_JARS is not set (eval \"$(scripts/interop.sh env)\")")
    return jars


def local_session(app, driver_memory, *confs):
    """A local[2] session named app with the driver's memory, on 127.0.0.1 and without the UI,
    and every setting of confs (dicts, later ones winning)."""
    from pyspark.sql import SparkSession

    b = (SparkSession.builder.master("local[2]").appName(app)
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.driver.memory", driver_memory)
         .config("spark.ui.enabled", "false"))
    for conf in confs:
        for k, v in conf.items():
            b = b.config(k, v)
    return b.getOrCreate()
