

# --------------------------------------------------------------------------------------------
# Joins: the same for every pipeline (cmd/medallion/export_join.py).

JOIN_KIND = "_medallion_join_kind"  # what a row of the join query's batch is: pair, left or right


def _tdiv(a, b):
    """a / b truncated toward zero, as Spark's (Scala's) long division."""
    q = abs(a) // b
    return q if a >= 0 else -q


def _q(name):
    return "`" + name.replace("`", "``") + "`"


def _seconds(us):
    """A µs count as an exact ANSI day-time interval literal."""
    sign = "-" if us < 0 else ""
    return f"INTERVAL '{sign}{abs(us) // 1000000}.{abs(us) % 1000000:06d}' SECOND"


class JoinJob(Job):
    """One join of JOINS as a streaming query: Spark's own stream-stream join of the two silver
    tables the job's source queries write (the config's watermarks on each side, the BETWEEN
    bounds as Spark's time-range condition, so Spark buffers, matches, evicts and emits the
    null-extended rows itself), and medallion's promise around it:

      joined table  the join's output rows, with medallion's columns (the left source's, then
                    the right's, a right column whose name the left has prefixed <right>_),
      quarantine    the input rows Spark drops as late (event time at or before the previous
                    batch's watermark, on a side with a watermark), with side, late_watermark,
                    batch_id and query_id as medallion writes them,
      gold          each aggregation over the join, over the joined rows, with the watermark
                    the join propagates (min of the global and the state watermarks, spec §3.4).

    Spark drops late rows inside the join operator, so the query also carries each side's raw
    rows next to the joined ones (a union, told apart by JOIN_KIND; those rows bypass the join
    and its watermarks) and batch() keeps the ones at or before the late watermark. Every write
    carries txn(query id, batch id), so a rerun of a batch writes nothing twice."""

    def __init__(self, spark, opts, name):
        self.spark, self.opts = spark, opts
        self.source = name
        self.spec = spec = JOINS[name]
        self.root = opts.root or (LAKE if opts.takeover else LAKE + "/spark")
        self.ckpt = opts.checkpoint or (self.root + "/" + spec["checkpoint"])
        # The aggregations over the join read the joined table as a source query's read silver.
        self.silver = self.root + "/" + spec["table"]
        self.quarantine = self.root + "/" + spec["quarantine"]
        self.inputs = {side: self.root + "/" + SOURCES[spec[side]]["silver"] for side in ("left", "right")}
        self.names = [n for n in (opts.gold or list(GOLD)) if GOLD_INPUT[n]["source"] == name]
        self.tables = {n: (self.root + "/" + GOLD[n]["table"], self.root + "/" + GOLD[n]["quarantine"])
                       for n in self.names}
        for n in self.names:
            if GOLD[n]["window"]["type"] == "session":
                raise NotImplementedError(f"gold {n}: session windows over a join are not carried by the "
                                          "exported job; keep it on medallion")
        self.query_id = None
        self.peers = set()
        self.created = set()
        self.left_cols = self.pair_cols = None

    def owned_paths(self):
        return [self.silver, self.quarantine] + [p for pair in self.tables.values() for p in pair]

    def ready(self):
        """Both silver tables exist (the joined schema needs both), as medallion waits for."""
        return all(is_delta(self.spark, p) for p in self.inputs.values())

    def output_watermark(self, w_ms):
        """The watermark the join hands to an aggregation over it (spec §3.4), ms, at least 0."""
        out = w_ms
        if self.spec["evicts_left"]:
            out = min(out, _tdiv(w_ms * 1000 - self.spec["upper_us"], 1000) - 1)
        if self.spec["evicts_right"]:
            out = min(out, _tdiv(w_ms * 1000 + self.spec["lower_us"], 1000) - 1)
        return max(0, out)

    def batch(self, df, n):
        spec, qid = self.spec, self.query_id
        w_ms = self.offsets(n)["batchWatermarkMs"]
        prev = self.offsets(n - 1) if n > 0 else None
        late_ms = prev["batchWatermarkMs"] if prev else 0
        df = df.persist()
        try:
            kind = F.col(JOIN_KIND)
            pairs = df.where(kind == "pair").select(*[F.col(_q(c)) for c in self.out_cols])
            self.ensure(self.silver, pairs.schema)
            self.append(pairs, self.silver, qid, n)

            # The rows Spark dropped as late: at or before the previous batch's watermark.
            late_ts = F.timestamp_millis(F.lit(late_ms))
            late = F.lit(False)
            for side in ("left", "right"):
                if spec[side + "_watermark"]:
                    late = late | ((kind == side) & (F.col(_q(self.times[side])) <= late_ts))
            q = df.where(late).select(*[F.col(_q(c)) for c in self.pair_cols], kind.alias("side"),
                                      late_ts.alias("late_watermark"), F.lit(n).cast("long").alias("batch_id"),
                                      F.lit(qid).alias("query_id"))
            self.ensure(self.quarantine, q.schema)
            self.append(q, self.quarantine, qid, n)

            if self.names:
                fresh = pairs.persist()
                joined = self.spark.read.format("delta").load(self.silver)
                for name in self.names:
                    self.aggregate(name, fresh, joined, n, self.output_watermark(late_ms), self.output_watermark(w_ms))
                fresh.unpersist()
        finally:
            df.unpersist()

    def close(self):
        """Nothing: the join has state watermarks, so Spark runs the no-data batch itself."""

    def read(self, path):
        reader = self.spark.readStream.format("delta").option(
            "maxFilesPerTrigger", self.opts.max_files_per_trigger or MAX_FILES_PER_TRIGGER)
        if MAX_BYTES_PER_TRIGGER:
            reader = reader.option("maxBytesPerTrigger", str(MAX_BYTES_PER_TRIGGER))
        return reader.load(path)

    def plan(self):
        """The query's DataFrame: the join's rows (JOIN_KIND pair) and each side's input rows
        (left, right), all in the quarantine's pair layout."""
        spec = self.spec
        left, right = self.read(self.inputs["left"]), self.read(self.inputs["right"])
        taken, names = set(left.columns), {}
        for c in right.columns:
            names[c] = spec["right"] + "_" + c if c in taken else c
            taken.add(names[c])
        right = right.select(*[F.col(_q(c)).alias(names[c]) for c in right.columns])
        self.left_cols = list(left.columns)
        self.pair_cols = self.left_cols + [names[c] for c in names]
        self.out_cols = self.left_cols if spec["type"] == "left_semi" else self.pair_cols
        self.times = {"left": spec["left_time"], "right": names[spec["right_time"]]}
        types = {f.name: f.dataType for f in left.schema.fields + right.schema.fields}

        def layout(df, kind):
            have = set(df.columns)
            return df.select(F.lit(kind).alias(JOIN_KIND), *[
                F.col(_q(c)) if c in have else F.lit(None).cast(types[c]).alias(c) for c in self.pair_cols])

        lw, rw = left, right
        if spec["left_watermark"]:
            lw = lw.withWatermark(self.times["left"], spec["left_watermark"])
        if spec["right_watermark"]:
            rw = rw.withWatermark(self.times["right"], spec["right_watermark"])
        lt, rt = lw[_q(self.times["left"])], rw[_q(self.times["right"])]
        cond = None
        for lk, rk in zip(spec["left_keys"], spec["right_keys"]):
            c = lw[_q(lk)] == rw[_q(names[rk])]
            if spec["type"] == "full_outer":
                # Spark 3.5 pairs two null keys in a full outer join; medallion never does.
                c = c & lw[_q(lk)].isNotNull() & rw[_q(names[rk])].isNotNull()
            cond = c if cond is None else cond & c
        cond = cond & (rt >= lt + F.expr(_seconds(spec["lower_us"]))) & (rt <= lt + F.expr(_seconds(spec["upper_us"])))
        joined = lw.join(rw, cond, spec["type"])
        return layout(joined, "pair").union(layout(left, "left")).union(layout(right, "right"))

    def start(self):
        if self.query_id is None:
            self.query_id = self.own_query_id()
        self.check_ownership()
        writer = (self.plan().writeStream.queryName(self.source).option("checkpointLocation", self.ckpt)
                  .foreachBatch(lambda batch, n: self.batch(batch, n)))
        return trigger(writer, self.opts.trigger or TRIGGER).start()


def takeover_join(opts, name):
    """True when --takeover leaves join name to medallion: its state (buffered rows, per-source
    watermarks) is medallion's own format, which Spark's join cannot continue. Said, never
    silent; asked for by name (--source) it is an error."""
    if not opts.takeover:
        return False
    if opts.source == name:
        raise ValueError(f"--takeover --source {name}: Spark cannot continue medallion's join state; "
                         "keep the join on medallion (it reads the silver tables the job writes), "
                         "or run it on Spark under a new --root")
    print(f"medallion job: join {name}: not taken over (its state is medallion's): it stays with "
          "medallion, which reads the silver tables this job writes", flush=True)
    return True
