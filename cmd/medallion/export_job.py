

# --------------------------------------------------------------------------------------------
# The rest of this file is the same for every pipeline (cmd/medallion/export_job.py).

def session(confs):
    builder = (SparkSession.builder.appName("medallion-" + QUERY)
               .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
               .config("spark.sql.catalog.spark_catalog",
                       "org.apache.spark.sql.delta.catalog.DeltaCatalog")
               # Window bounds are UTC instants, as in medallion.
               .config("spark.sql.session.timeZone", "UTC"))
    for key, value in s3a_settings(os.environ).items():
        builder = builder.config("spark.hadoop." + key, value)
    for kv in confs:
        key, _, value = kv.partition("=")
        builder = builder.config(key, value)
    return builder.getOrCreate()


def s3a_settings(env):
    """Hadoop S3A settings for an s3a:// lake: the pipeline config's s3 block first, the AWS
    environment second (as medallion reads them), credentials from AWS's default provider chain
    (environment, profile, web identity, instance role) so no secret is ever printed here."""
    if not LAKE.startswith("s3a://"):
        return {}
    endpoint = S3["endpoint"] or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or ""
    region = S3["region"] or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
    path_style = S3["path_style"]
    if path_style is None:
        path_style = bool(endpoint)  # MinIO and LocalStack serve buckets by path, AWS by host
    out = {
        "fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "fs.s3a.endpoint.region": region,
        "fs.s3a.path.style.access": str(path_style).lower(),
        "fs.s3a.aws.credentials.provider": "com.amazonaws.auth.DefaultAWSCredentialsProviderChain",
    }
    if endpoint:
        out["fs.s3a.endpoint"] = endpoint
        out["fs.s3a.connection.ssl.enabled"] = str(endpoint.startswith("https://")).lower()
    return out


# ---- Files next to the tables (checkpoint records), through Hadoop's file systems ----------

def _path(spark, p):
    jpath = spark._jvm.org.apache.hadoop.fs.Path(p)
    return jpath.getFileSystem(spark._jsc.hadoopConfiguration()), jpath


def read_text(spark, p):
    fs, jpath = _path(spark, p)
    if not fs.exists(jpath):
        return None
    jvm = spark._jvm
    stream = fs.open(jpath)
    try:
        reader = jvm.java.io.BufferedReader(jvm.java.io.InputStreamReader(stream, "UTF-8"))
        lines = []
        line = reader.readLine()
        while line is not None:
            lines.append(line)
            line = reader.readLine()
        return "\n".join(lines)
    finally:
        stream.close()


def write_text(spark, p, text):
    fs, jpath = _path(spark, p)
    out = fs.create(jpath, True)
    try:
        out.write(bytearray(text.encode("utf-8")))
    finally:
        out.close()


def delete(spark, p):
    fs, jpath = _path(spark, p)
    fs.delete(jpath, False)


def list_names(spark, p):
    fs, jpath = _path(spark, p)
    if not fs.exists(jpath):
        return []
    return [s.getPath().getName() for s in fs.listStatus(jpath)]


def is_delta(spark, path):
    from delta.tables import DeltaTable

    return DeltaTable.isDeltaTable(spark, path)


def snapshot(spark, path):
    """The table's latest Delta snapshot (JVM), None when there is no table: read from the log
    in the driver, without a Spark job."""
    if not is_delta(spark, path):
        return None
    jvm = spark._jvm
    log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path)
    return log.update(False, jvm.scala.Option.empty(), jvm.scala.Option.empty())


def table_txns(spark, path):
    """{appId: version} of the txn actions in the table's log (Delta's snapshot keeps the
    latest per appId), {} when there is no table."""
    snap = snapshot(spark, path)
    if snap is None:
        return {}
    return snapshot_txns(snap)


def snapshot_txns(snap):
    """{appId: version} of the txn actions of a Delta snapshot (a Scala Map read through py4j)."""
    it = snap.transactions().iterator()
    out = {}
    while it.hasNext():
        kv = it.next()
        out[kv._1()] = kv._2()
    return out


def _nullable(t):
    """t with every field nullable, as a DataFrame write creates a table (metadata kept)."""
    from pyspark.sql import types as T

    if isinstance(t, T.StructType):
        return T.StructType([T.StructField(f.name, _nullable(f.dataType), True, f.metadata) for f in t.fields])
    return t


def create_table(spark, path, schema, props):
    """Creates an empty Delta table at path with the columns of schema (nullable, as a DataFrame
    write makes them) and the table properties props, in one commit; a table already there is
    left as it is."""
    from delta.tables import DeltaTable

    # The location as Hadoop qualifies it (file:/x, not file:///x): Delta refuses two spellings.
    fs, jpath = _path(spark, path)
    builder = DeltaTable.createIfNotExists(spark).location(fs.makeQualified(jpath).toString()).addColumns(_nullable(schema))
    for key, value in props.items():
        builder = builder.property(key, value)
    builder.execute()


class OwnershipError(RuntimeError):
    """A table the job would write holds another query's txn."""


# ---- The job ---------------------------------------------------------------------------------

class Job:
    """The promise-keeping stream. One streaming query reads bronze (the watermark is tracked by
    Spark on the valid rows' event times; the query has no stateful operator) and hands every
    micro-batch to batch(), which writes, each with txn(query id, batch id):
      rejects     rows failing validation (missing event time or required column, future skew),
      silver      the batch's rows whose dedup key silver has never held (first arrival wins,
                  across all time: an anti-join with silver as of the version before the batch),
      quarantine  per aggregation, the batch's silver rows with a window that had already closed
                  (window end <= the previous batch's watermark: the judging watermark),
      gold        append: the windows the batch closes (end <= its watermark), aggregated from
                  silver, which holds every on-time row of a still-open window; update: the
                  groups the batch touched, cumulative, merged; complete: all of silver.
    Every table gets medallion's schema, so merge-late, replay, optimize, vacuum and the reports
    work on them. A rerun of a batch (after a crash) reads the same silver version and writes
    nothing twice (txn)."""

    def __init__(self, spark, opts, source=None):
        self.spark, self.opts = spark, opts
        self.source = source or QUERY
        self.src = src = SOURCES[self.source]
        src.setdefault("transform", transform_of(self.source))
        self.root = opts.root or (LAKE if opts.takeover else LAKE + "/spark")
        self.ckpt = opts.checkpoint or (self.root + "/" + src["checkpoint"])
        self.bronze = opts.bronze or src["bronze"]
        self.names = [n for n in (opts.gold or list(GOLD)) if GOLD_INPUT[n]["source"] == self.source]
        self.silver = self.root + "/" + src["silver"]
        self.rejects = self.root + "/" + src["rejects"]
        self.tables = {n: (self.root + "/" + GOLD[n]["table"], self.root + "/" + GOLD[n]["quarantine"])
                       for n in self.names}
        for n in self.names:
            if GOLD[n]["window"]["type"] == "session":
                raise NotImplementedError(
                    f"gold {n}: session windows are not carried by the exported job yet (merge-late "
                    "re-sessionizes from silver); run it with --plain, or keep it on medallion")
        self.query_id = None
        # The query ids of the job's other queries: sources share the rejects table.
        self.peers = set()
        self.created = set()

    # -- ownership ---------------------------------------------------------------------------

    def own_query_id(self):
        """The checkpoint's query id, written now when the checkpoint is new: Spark adopts an
        existing metadata file, so the id is known before the first write."""
        meta = read_text(self.spark, self.ckpt + "/metadata")
        if meta is None:
            import uuid

            qid = str(uuid.uuid4())
            write_text(self.spark, self.ckpt + "/metadata", json.dumps({"id": qid}) + "\n")
            return qid
        return json.loads(meta.splitlines()[0])["id"]

    def owned_paths(self):
        """The tables the query writes (and refuses to write when another query owns them)."""
        return [self.silver, self.rejects] + [p for pair in self.tables.values() for p in pair]

    def check_ownership(self):
        qid = self.query_id
        allowed = {app for q in {qid, *self.peers} for app in (q, q + CLOSE_SUFFIX, "merge-late:" + q)}
        for path in self.owned_paths():
            for app, version in table_txns(self.spark, path).items():
                # Ingest writes the rejects table too; it is no streaming query.
                if app in allowed or app.startswith("medallion-ingest-"):
                    continue
                raise OwnershipError(
                    f"refusing to write {path}: its log holds txn(appId={app}, version={version}) "
                    f"of another query, not this job's query {qid} (checkpoint {self.ckpt}). "
                    "Write elsewhere (--root), or hand the pipeline over with --takeover "
                    "(docs/past-one-machine.md)")

    # -- checkpoint records --------------------------------------------------------------------

    def offsets(self, n):
        """offsets/n's batch metadata (batchWatermarkMs, batchTimestampMs)."""
        text = read_text(self.spark, f"{self.ckpt}/offsets/{n}")
        return json.loads(text.splitlines()[1]) if text else None

    def closed_before(self, n):
        """The judging (late-row) watermark of batch n, ms: every window ending at or before it
        has been emitted. The previous batch's watermark, or the bound its closing step reached."""
        if n == 0:
            return 0
        prev = self.offsets(n - 1)
        closed = prev["batchWatermarkMs"] if prev else 0
        rec = read_text(self.spark, f"{self.ckpt}/{RECORDS}/close-{n - 1}")
        if rec:
            closed = max(closed, json.loads(rec)["closedMs"])
        return closed

    def silver_version(self, n):
        """The silver version batch n dedups against: recorded before its first write, so that a
        rerun of the batch reads the same one."""
        p = f"{self.ckpt}/{RECORDS}/silver-{n}"
        rec = read_text(self.spark, p)
        if rec is not None:
            return json.loads(rec)["version"]
        snap = snapshot(self.spark, self.silver)
        version = -1 if snap is None else snap.version()
        write_text(self.spark, p, json.dumps({"version": version}))
        return version

    # -- writes ----------------------------------------------------------------------------------

    def append(self, df, path, app, version):
        """Appends df with txn(app, version), unless df is empty: an empty batch leaves the table
        as it is (a rerun computes the same nothing)."""
        if df.isEmpty():
            return
        (df.write.format("delta").mode("append").option("txnAppId", app)
         .option("txnVersion", version).save(path))

    def ensure(self, path, schema):
        """Creates the table (empty, with its schema) on first use, as medallion creates its
        tables before the first batch; a gold table with its change data feed on, as medallion
        creates it (a derived table's pass reads its upstream's changes)."""
        if path in self.created:
            return
        if not is_delta(self.spark, path):
            if any(spec["change_feed"] and path == self.root + "/" + spec["table"] for spec in GOLD.values()):
                create_table(self.spark, path, schema, {"delta.enableChangeDataFeed": "true"})
            else:
                self.spark.createDataFrame([], schema).write.format("delta").mode("append").save(path)
        self.created.add(path)

    # -- one micro-batch -----------------------------------------------------------------------

    def batch(self, df, n):
        spark = self.spark
        meta = self.offsets(n)
        late_ms = self.closed_before(n)
        evict_ms = max(late_ms, meta["batchWatermarkMs"])
        qid = self.query_id
        src = self.src
        check_expectations_fail(df.drop(WM_COLUMN).where(src["reject_reason"]().isNull()), n, src["expectations"])
        df = df.drop(WM_COLUMN).withColumn("_reason", silver_reject_reason(src)).persist()
        try:
            bronze_cols = [c for c in df.columns if c != "_reason"]
            rejected = df.where(F.col("_reason").isNotNull())
            # The row as JSON, nulls and microseconds kept, as medallion's rejects hold it.
            raw = F.to_json(F.struct(*[F.col(f"`{c}`") for c in bronze_cols]),
                            {"ignoreNullFields": "false", "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX"})
            rej = rejected.select(
                F.lit("validate").alias("stage"), F.col("_reason").alias("reason"),
                silver_reject_detail(src).alias("error"),
                raw.alias("raw"), F.octet_length(raw).cast("long").alias("raw_bytes"),
                F.coalesce(F.col("_source_file"), F.lit("")).alias("source_file"),
                F.coalesce(F.col("_source_offset"), F.lit(-1)).cast("long").alias("source_offset"),
                F.timestamp_millis(F.lit(meta["batchTimestampMs"])).alias("rejected_at"))
            self.ensure(self.rejects, rej.schema)
            self.append(rej, self.rejects, qid, n)

            valid = df.where(F.col("_reason").isNull()).drop("_reason")
            if filter_drops(src.get("transform")):
                valid = valid.where(filter_keeps(src["transform"]))
            version = self.silver_version(n)
            fresh = (self.dedup(valid, version) if src["dedup"] else valid).persist()
            files = self.join_input_files(fresh, late_ms) if self.source in JOIN_INPUTS else fresh
            self.ensure(self.silver, valid.schema)
            self.append(files, self.silver, qid, n)
            silver = spark.read.format("delta").load(self.silver)
            for name in self.names:
                self.aggregate(name, fresh, silver, n, late_ms, evict_ms)
            fresh.unpersist()
            # Records as old as the offsets Spark keeps (minBatchesToRetain, 100) are never read
            # again: a rerun only ever repeats the last batch.
            for old in (f"silver-{n - RETAIN}", f"close-{n - RETAIN}"):
                delete(spark, f"{self.ckpt}/{RECORDS}/{old}")
        finally:
            df.unpersist()

    def join_input_files(self, fresh, late_ms):
        """The batch's silver rows in the files medallion writes them in: a join reads silver
        file by file (maxFilesPerTrigger), so its micro-batches, and with them its watermarks
        and late rows, are medallion's only if the files are. medallion writes one file of the
        rows its dedup state judged, then one of the rows it judged against silver's keys
        (event time at or before the late watermark less state.dedup_retention), each only when
        it has rows. A union of the two, one partition each, writes them in that order (a
        commit lists its files by partition). (medallion cuts a batch of over 65,536 judged rows
        into 2-4 files; this writes one.)"""
        if not self.src["dedup"]:
            return fresh.coalesce(1)
        cut_us = (late_ms - self.src["dedup_retention_ms"]) * 1000
        is_old = F.col(f"`{self.src['event_time']}`") <= F.timestamp_micros(F.lit(cut_us))
        counts = fresh.select(F.count(F.lit(1)).alias("rows"),
                              F.count(F.when(is_old, 1)).alias("old")).first()
        if counts["old"] == 0 or counts["old"] == counts["rows"]:
            return fresh.coalesce(1)
        return fresh.where(~is_old).coalesce(1).union(fresh.where(is_old).coalesce(1))

    def dedup(self, valid, version):
        """First arrival wins: within the batch, the earliest row per key in bronze order; across
        batches, only keys silver (as of `version`) has never held. Null keys compare equal, as
        in medallion's key encoding."""
        keys = self.src["dedup"]
        order = [F.col("_ingest_time"), F.col("_source_file"), F.col("_source_offset")]
        w = Window.partitionBy(*[F.col(f"`{k}`") for k in keys]).orderBy(*order)
        first = valid.withColumn("_rn", F.row_number().over(w)).where("_rn = 1").drop("_rn")
        if version < 0:
            return first
        old = (self.spark.read.format("delta").option("versionAsOf", version).load(self.silver)
               .select(*[F.col(f"`{k}`").alias(f"_old_{i}") for i, k in enumerate(keys)]).distinct())
        cond = [first[f"`{k}`"].eqNullSafe(old[f"_old_{i}"]) for i, k in enumerate(keys)]
        return first.join(old, cond, "left_anti")

    def aggregate(self, name, fresh, silver, n, late_ms, evict_ms):
        spec = GOLD[name]
        gold_path, quarantine_path = self.tables[name]
        build = globals()["gold_" + name.replace("-", "_")]
        qid = self.query_id
        if spec["output_mode"] == "complete":
            # No late rows and no eviction in complete mode: the whole result every batch.
            (build(silver).write.format("delta").mode("overwrite").option("txnAppId", qid)
             .option("txnVersion", n).save(gold_path))
            return
        w = spec["window"]
        late = fresh.where(min_window_end_us(w, GOLD_INPUT[name]["time"]) <= late_ms * 1000)
        q = late.select("*", F.timestamp_millis(F.lit(late_ms)).alias("late_watermark"),
                        F.lit(n).cast("long").alias("batch_id"), F.lit(qid).alias("query_id"))
        self.ensure(quarantine_path, q.schema)
        self.append(q, quarantine_path, qid, n)
        if spec["output_mode"] == "append":
            self.emit(name, silver, late_ms, evict_ms, qid, n)
            return
        # Update: the groups this batch's on-time rows touched, with their cumulative values
        # (from silver: a window gets rows only while open), merged on (window, keys).
        touched = build(fresh).where(F.col("window.end") > ts_us(late_ms * 1000))
        keys = ["window", *spec["keys"]]
        tk = touched.select(*[F.col(f"`{k}`").alias(f"_k{i}") for i, k in enumerate(keys)])
        lo, hi = touched.agg(F.min("window.start"), F.max("window.end")).collect()[0]
        if lo is None:
            return
        ev = F.col(f"`{GOLD_INPUT[name]['time']}`")
        rows = build(silver.where((ev >= F.lit(lo)) & (ev < F.lit(hi))))
        rows = rows.join(tk, [rows[f"`{k}`"].eqNullSafe(tk[f"_k{i}"]) for i, k in enumerate(keys)], "left_semi")
        self.upsert(rows, gold_path, spec["keys"], qid, n)

    def emit(self, name, silver, closed_ms, evict_ms, app, version):
        """Append the windows ending in (closed_ms, evict_ms] to gold, aggregated from silver."""
        if evict_ms <= closed_ms:
            return
        w = GOLD[name]["window"]
        lo_us, hi_us = closed_ms * 1000 - w["size_us"], evict_ms * 1000
        ev = F.col(f"`{GOLD_INPUT[name]['time']}`")
        rows = globals()["gold_" + name.replace("-", "_")](
            silver.where((ev >= ts_us(lo_us)) & (ev < ts_us(hi_us))))
        rows = rows.where((F.col("window.end") > ts_us(closed_ms * 1000)) & (F.col("window.end") <= ts_us(hi_us)))
        gold_path = self.tables[name][0]
        self.ensure(gold_path, rows.schema)
        self.append(rows, gold_path, app, version)

    def upsert(self, rows, path, keys, app, version):
        from delta.tables import DeltaTable

        self.ensure(path, rows.schema)
        cond = " AND ".join(f"t.`{c}` <=> s.`{c}`" for c in ["window", *keys])
        update = {f"`{c}`": f"s.`{c}`" for c in rows.columns if c not in ("late_rows",)}
        conf = self.spark.conf
        # MERGE carries the txn through these session settings (Delta's idempotent DML); the
        # lock keeps concurrent queries (a processing-time trigger) from mixing their txns.
        with _SESSION_TXN_LOCK:
            conf.set("spark.databricks.delta.write.txnAppId", app)
            conf.set("spark.databricks.delta.write.txnVersion", str(version))
            try:
                (DeltaTable.forPath(self.spark, path).alias("t").merge(rows.alias("s"), cond)
                 .whenMatchedUpdate(set=update).whenNotMatchedInsertAll().execute())
            finally:
                conf.unset("spark.databricks.delta.write.txnAppId")
                conf.unset("spark.databricks.delta.write.txnVersion")

    def close(self):
        """What Spark's no-data batch would do after the last batch of a run (a query without a
        stateful operator runs none): emit the windows the final watermark closes, and record
        the bound, which is then the next batch's judging watermark, as in medallion."""
        commits = [int(c) for c in list_names(self.spark, self.ckpt + "/commits") if c.isdigit()]
        if not commits:
            return
        n = max(commits)
        rec_path = f"{self.ckpt}/{RECORDS}/close-{n}"
        if read_text(self.spark, rec_path) is not None:
            return
        final = json.loads(read_text(self.spark, f"{self.ckpt}/commits/{n}").splitlines()[1]).get("nextBatchWatermarkMs", 0)
        evict_ms = max(self.closed_before(n), self.offsets(n)["batchWatermarkMs"])
        if final > evict_ms:
            silver = self.spark.read.format("delta").load(self.silver)
            for name in self.names:
                if GOLD[name]["output_mode"] == "append":
                    self.emit(name, silver, evict_ms, final, self.query_id + CLOSE_SUFFIX, n)
        write_text(self.spark, rec_path, json.dumps({"closedMs": max(final, evict_ms)}))

    def start(self):
        src = self.src
        if self.query_id is None:
            self.query_id = self.own_query_id()
        self.check_ownership()
        reader = self.spark.readStream.format("delta").option(
            "maxFilesPerTrigger", self.opts.max_files_per_trigger or src["max_files"])
        if src["max_bytes"]:
            reader = reader.option("maxBytesPerTrigger", str(src["max_bytes"]))
        df = with_computed(reader.load(self.bronze), src["transform"])
        # The watermark sees the valid rows' event times only (rejected rows never move it, nor
        # rows the transform's filter takes out); Spark tracks it even without a stateful
        # operator and records it in offsets/N.
        df = df.withColumn(WM_COLUMN, F.when(src["reject_reason"]().isNull() & filter_keeps(src["transform"]),
                                             F.col(f"`{src['event_time']}`")))
        df = df.withWatermark(WM_COLUMN, src["watermark"])
        writer = (df.writeStream.queryName(self.source).option("checkpointLocation", self.ckpt)
                  .foreachBatch(lambda batch, n: self.batch(batch, n)))
        return trigger(writer, self.opts.trigger or src["trigger"]).start()

    def finish(self, query):
        """Waits for the query's end, closes what its last batch left open, returns its progress."""
        query.awaitTermination()
        self.close()
        return [p if isinstance(p, dict) else json.loads(p.json) for p in query.recentProgress]

    def run(self):
        return self.finish(self.start())


def _violated(e):
    # A NULL result is a violation, as in medallion (and Databricks' expectations).
    return ~F.coalesce(F.expr(e["expect"]), F.lit(False))


def silver_reject_reason(src):
    """Validation first, then the first `drop` expectation a row violates
    ("expectation:<name>"); null when the row goes on to silver."""
    out = src["reject_reason"]()
    for e in src["expectations"]:
        if e["on_violation"] == "drop":
            out = F.when(out.isNotNull(), out).when(_violated(e), F.lit("expectation:" + e["name"]))
    t = src.get("transform")
    if t and t.get("filter") and not filter_drops(t):
        out = F.when(out.isNotNull(), out).when(~filter_keeps(t), F.lit("filtered:" + t["filter"]["name"]))
    return out


def transform_of(source):
    """The source's transform (docs/transforms.md): computed columns and filter as the Spark SQL
    text medallion evaluates; None without one."""
    return globals().get("TRANSFORMS", {}).get(source)


def with_computed(df, t):
    """Appends the computed columns in order, each the same SQL text through F.expr."""
    for c in (t or {}).get("columns", []):
        df = df.withColumn(c["name"], F.expr(c["expr"]))
    return df


def filter_keeps(t):
    """Where the transform's filter keeps the row: false or NULL filters it out, as WHERE."""
    f = (t or {}).get("filter")
    return F.coalesce(F.expr(f["expr"]), F.lit(False)) if f else F.lit(True)


def filter_drops(t):
    f = (t or {}).get("filter")
    return bool(f) and f["on_filter"] == "drop"


def silver_reject_detail(src):
    """The rejects' error column; a row a `drop` expectation rejects names every expectation it
    violates, in order, worded as medallion words it."""
    out = src["reject_detail"]()
    t = src.get("transform")
    if t and t.get("filter") and not filter_drops(t):
        f = t["filter"]
        filtered = F.lit(f"filter {f['name']} (on_filter: reject): {f['expr']} is false or NULL")
    else:
        filtered = None
    drops = [e for e in src["expectations"] if e["on_violation"] == "drop"]
    if not drops:
        return out if filtered is None else F.when(out.isNotNull(), out).when(~filter_keeps(t), filtered)
    dropped = _violated(drops[0])
    for e in drops[1:]:
        dropped = dropped | _violated(e)
    parts = [F.when(_violated(e), F.lit(f"{e['name']} ({e['on_violation']}): {e['expect']} is false or NULL"))
             for e in src["expectations"]]
    out = F.when(out.isNotNull(), out).when(
        dropped, F.concat(F.lit("violated expectations: "), F.concat_ws("; ", *parts)))
    return out if filtered is None else out.when(~filter_keeps(t), filtered)


class ExpectationFailed(RuntimeError):
    """A `fail` expectation was violated: the batch commits nothing."""


def check_expectations_fail(valid, n, expectations):
    for e in expectations:
        if e["on_violation"] == "fail":
            sample = valid.where(_violated(e)).limit(1).collect()
            if sample:
                raise ExpectationFailed(f"batch {n}: expectation {e['name']} ({e['expect']}) failed "
                                        f"on {json.dumps(sample[0].asDict(), default=str)}")


CLOSE_SUFFIX = ":close"
RETAIN = 100
RECORDS = "medallion_export"
WM_COLUMN = "_medallion_watermark_time"
_SESSION_TXN_LOCK = threading.Lock()


def ts_us(us):
    return F.timestamp_micros(F.lit(int(us)))


def min_window_end_us(w, time_column):
    """The end (µs) of the earliest window holding the row's time (time_column), as Spark
    assigns windows (size, slide, start offset): a row is late for some window iff this end is
    at or before the judging watermark."""
    t = F.unix_micros(F.col(f"`{time_column}`"))
    size, slide, start = F.lit(w["size_us"]), F.lit(w["slide_us"]), F.lit(w["start_us"])
    last = t - F.pmod(t - start, slide)
    # the earliest start still > t - size: last - k*slide, k = ceil((last - t + size) / slide) - 1
    k = F.floor((last - t + size + slide - 1) / slide) - 1
    return last - k * slide + size


def upsert(path, keys):
    """foreachBatch for update mode of the plain job: the Delta sink takes append and complete
    only, so each batch's updated groups (cumulative values) are merged on (window, keys);
    replaying a batch merges the same values again."""
    def write(batch, batch_id):
        from delta.tables import DeltaTable

        if not DeltaTable.isDeltaTable(batch.sparkSession, path):
            batch.limit(0).write.format("delta").mode("append").save(path)
        cond = " AND ".join(f"t.`{c}` <=> s.`{c}`" for c in ["window", *keys])
        (DeltaTable.forPath(batch.sparkSession, path).alias("t")
         .merge(batch.alias("s"), cond).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    return write


def trigger(writer, spec):
    if spec == "once":
        return writer.trigger(once=True)
    if spec.startswith("processing-time="):
        return writer.trigger(processingTime=spec.partition("=")[2])
    return writer.trigger(availableNow=True)


def start_plain(spark, name, opts):
    """--plain: Spark's own streaming aggregation (late rows dropped, no silver, no rejects),
    to measure what the promise costs."""
    spec = GOLD[name]
    source = GOLD_INPUT[name]["source"]
    src = SOURCES[source]
    root = opts.root or LAKE + "/spark/plain"
    df = globals()["gold_" + name.replace("-", "_")](src["events"](spark, opts.bronze, opts.max_files_per_trigger))
    path = root + "/" + spec["table"]
    writer = (df.writeStream.queryName(source + "_" + name)
              .option("checkpointLocation", (opts.checkpoint or root + "/" + src["checkpoint"]) + "/" + name))
    writer = trigger(writer, opts.trigger or src["trigger"])
    if spec["output_mode"] == "update":
        return writer.outputMode("update").foreachBatch(upsert(path, spec["keys"])).start()
    return writer.format("delta").outputMode(spec["output_mode"]).start(path)


def run_sources(spark, opts):
    """The promise-keeping queries: every source's (or --source's), each on its own checkpoint.
    With once or available-now they run one after the other, the top-level source first, as
    medallion runs them; with a processing-time trigger all at once (they never end)."""
    names = [opts.source] if opts.source else list(SOURCES) + list(JOINS)
    if len(names) > 1 and (opts.checkpoint or opts.bronze):
        raise ValueError("--checkpoint and --bronze name one query's: add --source NAME (one of "
                         + ", ".join(SOURCES) + ")")
    if opts.bronze and names[0] in JOINS:
        raise ValueError(f"--bronze: {names[0]} is a join; it reads the sources' silver tables")
    jobs = [Job(spark, opts, name) for name in names if name in SOURCES]
    # The joins run after the sources (their silver is the joins' input), as in medallion.
    joins = [JoinJob(spark, opts, name) for name in names if name in JOINS and not takeover_join(opts, name)]
    for job in jobs:
        job.query_id = job.own_query_id()
    for job in jobs:
        job.peers = {other.query_id for other in jobs}
    for job in joins:
        job.query_id = job.own_query_id()
    if any((opts.trigger or job.src["trigger"]).startswith("processing-time=") for job in jobs):
        queries = [job.start() for job in jobs] + [job.start() for job in joins if job.ready()]
        running = jobs + [job for job in joins if job.ready()]
        return {job.source: job.finish(q) for job, q in zip(running, queries)}
    progress = {job.source: job.run() for job in jobs}
    for job in joins:
        if not job.ready():
            print(f"medallion job: join {job.source}: waits for both silver tables", flush=True)
            continue
        progress[job.source] = job.run()
    return progress


def run(spark, opts):
    """Runs the job: the promise-keeping stream (default), or with opts.plain one Spark
    aggregation query per gold table. Returns {name: progress reports}: one entry per gold
    table for --plain, one entry per source (QUERY: the top-level one) otherwise."""
    if JOB == "merge-late":
        return merge_late(spark, opts)
    if JOB == "replay":
        return replay(spark, opts)
    if JOB == "derive":
        return derive(spark, opts)
    for notice in NOT_EXPORTED:
        print("medallion job: not exported: " + notice, flush=True)
    if not opts.plain:
        progress = run_sources(spark, opts)
    else:
        if opts.takeover:
            raise ValueError("--plain never takes over medallion's tables")
        names = opts.gold or list(GOLD)
        queries = {name: start_plain(spark, name, opts) for name in names}
        progress = {}
        for name, query in queries.items():
            query.awaitTermination()
            # dicts in PySpark 3.5, StreamingQueryProgress objects in 4.x
            progress[name] = [p if isinstance(p, dict) else json.loads(p.json)
                              for p in query.recentProgress]
    if opts.progress_dir:
        os.makedirs(opts.progress_dir, exist_ok=True)
        for name, reports in progress.items():
            with open(os.path.join(opts.progress_dir, name + ".json"), "w") as f:
                json.dump(reports, f, indent=1)
    return progress


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=TABLES_HELP)
    ap.add_argument("--root", help="where the job's tables go (default: " + LAKE + "/spark; "
                    "with --takeover, the lake itself)")
    ap.add_argument("--source", choices=list(SOURCES) + list(JOINS),
                    help="run only this source's or join's query (default: every source's, then every join's: "
                    + ", ".join(list(SOURCES) + list(JOINS)) + ")")
    ap.add_argument("--checkpoint", help="the query's checkpoint (default: <root>/" + CHECKPOINT + "; "
                    "with several sources, give --source too)")
    ap.add_argument("--takeover", action="store_true",
                    help="continue medallion's stream: write the lake's own tables and continue "
                         "medallion's checkpoint (stop medallion's stream first; docs/past-one-machine.md)")
    ap.add_argument("--bronze", help="bronze table (default: " + BRONZE + "; with several sources, give --source too)")
    ap.add_argument("--gold", action="append", choices=list(GOLD), help="only this aggregation (repeatable)")
    ap.add_argument("--plain", action="store_true",
                    help="Spark's own aggregation only (drops late rows; no silver, rejects or "
                         "quarantine): the baseline the promise is measured against")
    ap.add_argument("--max-files-per-trigger", type=int, help=f"default {MAX_FILES_PER_TRIGGER}")
    ap.add_argument("--trigger", help="once | available-now | processing-time=30 seconds (default: each "
                    "source's, " + TRIGGER + " for " + QUERY + ")")
    ap.add_argument("--progress-dir", help="write the progress reports here as <query>.json")
    ap.add_argument("--conf", action="append", default=[], help="a Spark setting key=value (repeatable)")
    ap.add_argument("--from", dest="from_", help="replay job: range start (RFC 3339 or 'YYYY-MM-DD HH:MM:SS' UTC), with --to")
    ap.add_argument("--to", help="replay job: range end (exclusive), with --from")
    ap.add_argument("--since", help="replay job: the range ending now, e.g. 24h (or --from/--to)")
    return ap.parse_args(argv)


def main(argv=None):
    opts = parse_args(argv)
    spark = session(opts.conf)
    try:
        run(spark, opts)
    finally:
        spark.stop()

