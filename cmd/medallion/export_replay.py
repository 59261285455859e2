

# --------------------------------------------------------------------------------------------
# replay and derived tables on Spark (--job replay, --job derive): the same for every pipeline
# (cmd/medallion/export_replay.py).

def stream_state(spark, ckpt):
    """What medallion's replay and derived pass read of a query's checkpoint: its id, its last
    committed batch (-1: none) and the watermark (ms) up to which it has emitted windows: the
    batch's, or the bound the job's closing step reached after it (Job.close). None: no query."""
    meta = read_text(spark, ckpt + "/metadata")
    if meta is None:
        return None
    st = {"id": json.loads(meta.splitlines()[0])["id"], "batch": -1, "evict_ms": 0}
    commits = [int(c) for c in list_names(spark, ckpt + "/commits") if c.isdigit()]
    if not commits:
        return st
    n = st["batch"] = max(commits)
    st["evict_ms"] = json.loads(read_text(spark, f"{ckpt}/offsets/{n}").splitlines()[1]).get("batchWatermarkMs", 0)
    rec = read_text(spark, f"{ckpt}/{RECORDS}/close-{n}")
    if rec:
        st["evict_ms"] = max(st["evict_ms"], json.loads(rec)["closedMs"])
    return st


def table_txns_at(spark, path, version):
    """{appId: version} of the txn actions as of the table's version."""
    jvm = spark._jvm
    log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path)
    return snapshot_txns(log.getSnapshotAt(int(version), jvm.scala.Option.empty(), jvm.scala.Option.empty()))


def silver_as_of(spark, path, qid, up_to):
    """The silver version holding batch up_to of query qid: the latest, less what a batch after
    up_to wrote (a batch running now), as medallion's replay reads it."""
    v = snapshot(spark, path).version()
    while v > 0:
        b = table_txns_at(spark, path, v).get(qid)
        if b is None or b <= up_to:
            break
        v -= 1
    return v


def _align(t, start, slide):
    """The start of the newest window (starts start + k*slide) starting at or before t (µs)."""
    return t - (t - start) % slide


def _iso(us):
    from datetime import datetime, timezone

    return datetime.fromtimestamp(us / 1e6, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def replay_one(spark, root, name, frm, to):
    """Recomputes gold name's whole windows of [frm, to) (µs) as medallion's replay does: its
    merge-late first (so the quarantine rows the replay recounts from silver are never folded in
    again), then the windows overlapping the range that the stream has emitted, from silver as
    of the last batch gold has absorbed, written with replaceWhere on window.start; each new row
    keeps the late_rows of the row it replaces. Equal rows: nothing committed."""
    from delta.tables import DeltaTable  # noqa: F401  (the Delta session is required)

    rep = {"gold": name}
    if REPLAY[name]:
        rep["skipped"] = REPLAY[name]
        return rep
    spec, src = GOLD[name], SOURCES[GOLD_INPUT[name]["source"]]
    st = stream_state(spark, root + "/" + src["checkpoint"])
    if st is None or st["batch"] < 0:
        rep["note"] = "the stream has not committed a batch: no window was emitted yet"
        return rep
    rep["mergeLate"] = merge_late_one(spark, root, name)
    gold_path, q_path = root + "/" + spec["table"], root + "/" + spec["quarantine"]
    if not is_delta(spark, gold_path):
        rep["note"] = "the gold table does not exist yet"
        return rep
    up_to = st["batch"]
    merged = table_txns(spark, gold_path).get("merge-late:" + st["id"])
    if merged is not None:
        b = table_txns_at(spark, q_path, merged).get(st["id"])
        if b is not None:
            up_to = max(up_to, b)
    w = spec["window"]
    size, slide, start = w["size_us"], w["slide_us"], w["start_us"]
    # Whole windows: every window with start in (frm - size, to), of those the stream emitted.
    lo = _align(frm - size, start, slide) + slide
    hi = min(_align(to - 1, start, slide), _align(st["evict_ms"] * 1000 - size, start, slide))
    if hi < lo:
        rep["note"] = "no window of the range has been emitted by the stream yet"
        return rep
    rep["windowStartFrom"], rep["windowStartTo"] = _iso(lo), _iso(hi)
    silver_path = root + "/" + src["silver"]
    version = silver_as_of(spark, silver_path, st["id"], up_to)
    tcol = F.col("`" + GOLD_INPUT[name]["time"] + "`")
    events = (spark.read.format("delta").option("versionAsOf", version).load(silver_path)
              .where((tcol >= ts_us(lo)) & (tcol < ts_us(hi + size))))
    start_us = F.unix_micros(F.col("window.start"))
    in_range = (start_us >= lo) & (start_us <= hi)
    keys = ["window", *spec["keys"]]
    new = globals()["gold_" + name.replace("-", "_")](events).where(in_range).drop("late_rows")
    gold = spark.read.format("delta").load(gold_path)
    old = gold.where(in_range)
    # late_rows of the rows replaced, by window and keys (null keys match: <=>).
    late = old.groupBy(*[F.col(f"`{k}`") for k in keys]).agg(F.sum("late_rows").alias("_late"))
    cond = [new[f"`{k}`"].eqNullSafe(late[f"`{k}`"]) for k in keys]
    new = (new.join(late, cond, "left")
           .select(*[new[f"`{c}`"] for c in new.columns], F.coalesce(late["_late"], F.lit(0)).cast("long").alias("late_rows"))
           .persist())
    try:
        public = new.columns
        mine = old.select(*[F.col(f"`{c}`") for c in public])
        if new.exceptAll(mine).isEmpty() and mine.exceptAll(new).isEmpty():
            rep["unchanged"] = True
            rep["note"] = "the recomputed windows equal gold's rows of the range: nothing committed"
            return rep
        schema = {f.name: f.dataType for f in gold.schema.fields}
        # medallion's exact-sum columns (docs/exact-sums.md): null stands for the double's value.
        out = new.select(*[F.col(f"`{c}`") if c in public else F.lit(None).cast(schema[c]).alias(c) for c in gold.columns])
        where = f"window.start >= timestamp_micros({lo}) AND window.start <= timestamp_micros({hi})"
        out.write.format("delta").mode("overwrite").option("replaceWhere", where).save(gold_path)
        rep["rowsWritten"] = new.count()  # persisted: no second read of silver
    finally:
        new.unpersist()
    return rep


def replay_range(opts, now_us=None):
    """[from, to) in µs from --from/--to (RFC 3339 or 'YYYY-MM-DD HH:MM:SS', UTC) or --since."""
    import re
    import time
    from datetime import datetime, timedelta, timezone

    def parse(s):
        t = datetime.fromisoformat(s.strip().replace("Z", "+00:00").replace(" ", "T", 1))
        if t.tzinfo is None:
            t = t.replace(tzinfo=timezone.utc)
        return (t - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(microseconds=1)

    if opts.since:
        units = {"h": 3600e6, "m": 60e6, "s": 1e6, "ms": 1e3, "us": 1.0}
        parts = re.findall(r"(\d+(?:\.\d+)?)(h|ms|us|m|s)", opts.since)
        if not parts or "".join(n + u for n, u in parts) != opts.since:
            raise ValueError(f"--since {opts.since!r}: expected a duration such as 24h or 90m")
        to = now_us if now_us is not None else int(time.time() * 1e6)
        return to - int(sum(float(n) * units[u] for n, u in parts)), to
    if not (opts.from_ and opts.to):
        raise ValueError("replay: give --from and --to, or --since")
    frm, to = parse(opts.from_), parse(opts.to)
    if frm >= to:
        raise ValueError(f"replay: --from {opts.from_} is not before --to {opts.to}")
    return frm, to


def replay(spark, opts):
    """replay over the job's tables (--root, or the lake with --takeover), every aggregation or
    --gold's, then the derived tables; what it leaves to medallion is said, per gold."""
    root = opts.root or (LAKE if opts.takeover else LAKE + "/spark")
    frm, to = replay_range(opts)
    report = []
    for name in opts.gold or list(GOLD):
        r = replay_one(spark, root, name, frm, to)
        if r.get("skipped"):
            print(f"medallion replay: gold {name}: not replayed here: {r['skipped']}", flush=True)
        report.append(r)
    print(json.dumps({"replay": report}), flush=True)
    derived = derive(spark, opts)
    return {"replay": report, "derived": derived}


# ---- derived tables ---------------------------------------------------------------------------

def derived_watermark(spark, root, d):
    """The upstream's watermark (ms): every window ending at or before it is complete upstream.
    An upstream derived table's is the one its last pass recorded; else the graph's first
    gold's query's. None: nothing emitted yet."""
    if d["upstream_derived"]:
        return table_txns(spark, root + "/" + d["upstream_table"]).get(DERIVED_WM_APP + d["upstream"])
    st = stream_state(spark, root + "/" + SOURCES[d["source"]]["checkpoint"])
    if st is None or st["batch"] < 0:
        return None
    return st["evict_ms"]


def derived_schema(d, up):
    """The derived table's columns as medallion creates them from the upstream's (up): window,
    keys, each aggregate's columns, late_rows, then the exact-sum columns of float sums."""
    from pyspark.sql import types as T

    ts = T.TimestampType()
    fields = [T.StructField("window", T.StructType([T.StructField("start", ts, True), T.StructField("end", ts, True)]), True)]
    fields += [up[k] for k in d["keys"]]
    exact = []
    for a in d["aggs"]:
        fn, col, name = a["fn"], a["column"], a["as"]
        num = up[col + "_sum"].dataType if fn == "avg" else up[col].dataType
        if fn == "count":
            fields.append(T.StructField(name, T.LongType(), False))
        elif fn in ("sum", "min", "max"):
            fields.append(T.StructField(name, up[col].dataType, True))
        else:
            fields += [T.StructField(name, T.DoubleType(), True), T.StructField(name + "_sum", num, True),
                       T.StructField(name + "_count", T.LongType(), False)]
        if fn in ("sum", "avg") and not isinstance(num, (T.LongType, T.IntegerType)):
            exact.append(T.StructField("_" + name + "_exact", T.BinaryType(), True))
    fields.append(T.StructField("late_rows", T.LongType(), False))
    return T.StructType(fields + exact)


def derived_rows(d, up, wm_ms):
    """The derived table's rows of every window its upstream rows (up) fall in that ends at or
    before the watermark: the upstream's aggregates folded (counts and sums add, min and max
    take the extreme, avg is the summed _sum over the summed _count), late_rows added."""
    size, start = d["size_us"], d["start_us"]
    s = F.unix_micros(F.col("window.start"))
    rows = (up.where(F.col("window.start").isNotNull()).withColumn("_ds", s - F.pmod(s - F.lit(start), F.lit(size)))
            .where(F.col("_ds") + size <= F.lit(wm_ms * 1000)))
    aggs, cols = [], []
    for a in d["aggs"]:
        fn, c, name = a["fn"], F.col(f"`{a['column']}`"), a["as"]
        if fn in ("count", "sum"):
            aggs.append(F.sum(c).cast(up.schema[a["column"]].dataType).alias(name))
        elif fn in ("min", "max"):
            aggs.append(getattr(F, fn)(c).alias(name))
        else:
            s_, n_ = F.col(f"`{a['column']}_sum`"), F.col(f"`{a['column']}_count`")
            aggs += [F.sum(s_).cast(up.schema[a["column"] + "_sum"].dataType).alias(name + "_sum"),
                     F.sum(n_).cast("long").alias(name + "_count")]
            cols.append((name, F.when(F.col(f"`{name}_count`") != 0, F.col(f"`{name}_sum`").cast("double") / F.col(f"`{name}_count`"))))
    keys = [F.col(f"`{k}`") for k in d["keys"]]
    out = rows.groupBy("_ds", *keys).agg(*aggs, F.sum("late_rows").cast("long").alias("late_rows"))
    for name, e in cols:
        out = out.withColumn(name, e)
    window = F.struct(F.timestamp_micros(F.col("_ds")).alias("start"),
                      F.timestamp_micros(F.col("_ds") + F.lit(size)).alias("end")).alias("window")
    return out.select(window, *keys, *[c for a in d["aggs"] for c in _derived_cols(a)], F.col("late_rows"))


def _derived_cols(a):
    if a["fn"] == "avg":
        return [F.col(f"`{a['as']}{s}`") for s in ("", "_sum", "_count")]
    return [F.col(f"`{a['as']}`")]


def derive_one(spark, root, d):
    """One derived table's pass: its closed windows recomputed from the upstream at its latest
    version and MERGEd (rows that differ updated, new ones inserted, closed windows the upstream
    no longer has deleted), recording the upstream version read and the watermark emitted to as
    medallion's derived pass does (txn DERIVED_APP+name, DERIVED_WM_APP+name). Up to date when
    both positions are: nothing committed."""
    from delta.tables import DeltaTable

    name = d["name"]
    rep = {"name": name, "upstream": d["upstream"]}
    wm = derived_watermark(spark, root, d)
    up_path, path = root + "/" + d["upstream_table"], root + "/" + d["table"]
    up_snap = snapshot(spark, up_path) if wm is not None else None
    if up_snap is None:
        rep["note"] = "the upstream has emitted no window yet" if wm is None else "the upstream table does not exist yet"
        return rep
    up_version = up_snap.version()
    rep["toUpstreamVersion"], rep["watermarkMs"] = up_version, wm
    up = spark.read.format("delta").option("versionAsOf", up_version).load(up_path)
    if not is_delta(spark, path):
        # medallion's columns, nullability included: its derived pass refuses other columns.
        fs, jpath = _path(spark, path)
        builder = (DeltaTable.createIfNotExists(spark).location(fs.makeQualified(jpath).toString())
                   .addColumns(derived_schema(d, up.schema)))
        if d["change_feed"]:
            builder = builder.property("delta.enableChangeDataFeed", "true")
        builder.execute()
    txns = table_txns(spark, path)
    seen, prev = txns.get(DERIVED_APP + name, -1), txns.get(DERIVED_WM_APP + name)
    if seen >= up_version and prev is not None and prev >= wm:
        rep["upToDate"] = True
        return rep
    s = derived_rows(d, up, wm)
    table = spark.read.format("delta").load(path)
    keys = ["window", *d["keys"]]
    values = [c for c in s.columns if c not in keys]
    exact = {f"`{c}`": "NULL" for c in table.columns if c.startswith("_") and c.endswith("_exact")}
    conf = spark.conf
    # One commit for the rows with one of the two positions, one for the other: Delta skips a
    # write whose txn version is not above the recorded one, so each goes where it is new.
    first = (DERIVED_WM_APP + name, wm) if prev is None or wm > prev else (DERIVED_APP + name, up_version)
    with _SESSION_TXN_LOCK:
        conf.set("spark.databricks.delta.write.txnAppId", first[0])
        conf.set("spark.databricks.delta.write.txnVersion", str(first[1]))
        try:
            (DeltaTable.forPath(spark, path).alias("t")
             .merge(s.alias("s"), " AND ".join(f"t.`{c}` <=> s.`{c}`" for c in keys))
             .whenMatchedUpdate(condition=" OR ".join(f"NOT (t.`{c}` <=> s.`{c}`)" for c in values),
                                set={**{f"`{c}`": f"s.`{c}`" for c in values}, **exact})
             .whenNotMatchedInsert(values={**{f"`{c}`": f"s.`{c}`" for c in s.columns}, **exact})
             .whenNotMatchedBySourceDelete(condition=f"t.window.end <= timestamp_micros({wm * 1000})")
             .execute())
        finally:
            conf.unset("spark.databricks.delta.write.txnAppId")
            conf.unset("spark.databricks.delta.write.txnVersion")
    if first[0] != DERIVED_APP + name and up_version > seen:
        (spark.createDataFrame([], table.schema).write.format("delta").mode("append")
         .option("txnAppId", DERIVED_APP + name).option("txnVersion", up_version).save(path))
    rep["fromUpstreamVersion"], rep["commit"] = seen, snapshot(spark, path).version()
    return rep


def derive(spark, opts):
    """Every derived table the job keeps, each after its upstream (stopping at the first failure:
    a level below would read an upstream that is behind)."""
    root = opts.root or (LAKE if opts.takeover else LAKE + "/spark")
    report = [derive_one(spark, root, d) for d in DERIVED]
    if report:
        print(json.dumps({"derived": report}), flush=True)
    return report
