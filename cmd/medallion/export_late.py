

# --------------------------------------------------------------------------------------------
# merge-late on Spark (--job merge-late): the same for every pipeline (cmd/medallion/export_late.py).

def merge_late_one(spark, root, name):
    """Folds gold name's new quarantine rows into its gold table, as medallion's merge-late:
    the rows of the quarantine versions after the one gold's txn(merge-late:<query id>)
    records, each applied to the windows that had closed when it was judged (window end at or
    before its late_watermark), MERGEd on (window, keys) in one commit carrying
    txn(merge-late:<query id>, quarantine version). Returns what it did, for the report."""
    from delta.tables import DeltaTable

    spec, late = GOLD[name], LATE[name]
    if late["skip"]:
        return {"gold": name, "skipped": late["skip"]}
    source = GOLD_INPUT[name]["source"]
    meta = read_text(spark, root + "/" + SOURCES[source]["checkpoint"] + "/metadata")
    gold_path, q_path = root + "/" + spec["table"], root + "/" + spec["quarantine"]
    if meta is None or not is_delta(spark, gold_path) or not is_delta(spark, q_path):
        return {"gold": name, "skipped": "no stream, gold or quarantine yet"}
    # The stream's query id, read, never created: merge-late's txn is keyed by it.
    app = "merge-late:" + json.loads(meta.splitlines()[0])["id"]
    merged = table_txns(spark, gold_path).get(app, -1)
    to = snapshot(spark, q_path).version()
    if to <= merged:
        return {"gold": name, "upToDate": True, "toQuarantineVersion": merged}
    rows = spark.read.format("delta").option("versionAsOf", to).load(q_path)
    if merged >= 0:
        # The quarantine is append-only: the new rows are the multiset difference.
        rows = rows.exceptAll(spark.read.format("delta").option("versionAsOf", merged).load(q_path))
    rows = rows.persist()
    try:
        n_late = rows.count()
        if n_late == 0:
            # Nothing to fold: no commit, as medallion's (the next run reads the same versions).
            return {"gold": name, "fromQuarantineVersion": merged, "toQuarantineVersion": to, "lateRows": 0}
        s = globals()["late_" + name.replace("-", "_")](rows)
        gold_cols = spark.read.format("delta").load(gold_path).columns
        update = {f"`{c}`": e for c, e in late["set"].items()}
        # medallion's exact-sum columns (docs/exact-sums.md): null stands for the double's value.
        update.update({f"`{c}`": "NULL" for c in gold_cols if c.startswith("_") and c.endswith("_exact")})
        insert = {f"`{c}`": f"s.`{c}`" for c in s.columns}
        cond = " AND ".join(f"t.`{c}` <=> s.`{c}`" for c in ["window", *spec["keys"]])
        conf = spark.conf
        with _SESSION_TXN_LOCK:
            conf.set("spark.databricks.delta.write.txnAppId", app)
            conf.set("spark.databricks.delta.write.txnVersion", str(to))
            try:
                (DeltaTable.forPath(spark, gold_path).alias("t").merge(s.alias("s"), cond)
                 .whenMatchedUpdate(set=update).whenNotMatchedInsert(values=insert).execute())
            finally:
                conf.unset("spark.databricks.delta.write.txnAppId")
                conf.unset("spark.databricks.delta.write.txnVersion")
    finally:
        rows.unpersist()
    return {"gold": name, "fromQuarantineVersion": merged, "toQuarantineVersion": to, "lateRows": n_late}


def merge_late(spark, opts):
    """merge-late over the job's tables (--root, or the lake with --takeover), every aggregation
    or --gold's, then the derived tables; what it leaves to medallion (sessions, sketches, golds
    over a join) is said."""
    root = opts.root or (LAKE if opts.takeover else LAKE + "/spark")
    report = []
    for name in opts.gold or list(GOLD):
        r = merge_late_one(spark, root, name)
        if r.get("skipped"):
            print(f"medallion merge-late: gold {name}: not merged here: {r['skipped']}", flush=True)
        report.append(r)
    print(json.dumps({"mergeLate": report}), flush=True)
    # The derived tables below, corrected in the same run, as medallion's merge-late does.
    derive(spark, opts)
    return report
