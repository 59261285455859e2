"""The exported Spark job keeps medallion's promise (issue 22): on the same bronze, the job printed
by `medallion export spark` and medallion's own stream write equal tables.

One workload (`medallion gen`: lag tail, outage bursts delivered an hour late, duplicates, wrong
types, far-future events, a malformed line) is ingested once; medallion's stream and the job
(default root: <lake>/spark) then each run over that bronze, with the same maxFilesPerTrigger,
and medallion's merge-late runs on both sets of tables (on Spark's through a config whose tables
and checkpoint are the ones under spark/). Compared as row multisets:

* silver: every column (dedup's first arrival, lineage columns included, the transform's
  computed columns last);
* rejects of the validate stage: stage, reason, error, source file and offset (the raw JSON is
  each engine's rendering of the row);
* each quarantine: every column but batch_id and query_id (the ids are the queries' own: Spark's
  query runs no no-data batches, the job closes windows after its last batch instead);
* gold after merge-late, tumbling and sliding windows: public columns equal, doubles within a
  relative 1e-9 (Spark adds in its own order and rounds at every addition; medallion's sums
  are exact), medallion's internal exact-sum columns (_<as>_exact) left out;
* medallion's own float sums and averages, exactly: each window's sum is math.fsum of its
  silver amounts and its average the exact sum over the count rounded once (Fraction);
* invariant E on Spark's tables: its gold counts equal a count of its silver over the windows
  the watermark closed, computed here in Python.

On the file backend the late-data loop runs on Spark too (replay_on_both): the same range of
gold is spoiled in both engines, then medallion's `run replay` and the exported `--job replay`
(its merge-late with medallion's txn, the range's windows with replaceWhere, then the derived
table r10m, a rollup of t5m, MERGEd) run; medallion's merge-late on Spark's tables afterwards
finds nothing left to apply, and r10m equals medallion's and holds invariant E.

Every comparison reads the tables with delta-rs; DuckDB (delta_scan; on MinIO through httpfs
with an S3 secret) reads every table of both engines, bronze included, with delta-rs' rows
(test_duckdb_reads_every_table_as_deltars), so each comparison holds for DuckDB's reading too
without running it a second time.

The runs happen once per backend (the file system, and MinIO when the suite has it) in a
module-scoped fixture, sharing the session's one SparkSession; on the file system the job is
killed once in the middle of batch 1 and run again, so its tables are a crashed job's: Spark's start-up and per-batch
overhead dominate, so the workload is small (3 batches) but still has late rows.
"""

from __future__ import annotations

import collections
import copy
import importlib.util
import json
import math
import os
from datetime import datetime, timedelta, timezone
from fractions import Fraction
from pathlib import Path

import pytest

from conftest import s3a_url
from interop_engines import read_deltars, read_deltars_s3, read_duckdb, run_medallion

pytestmark = pytest.mark.needs_medallion

GOLDS = {
    "t5m": ("tumbling", timedelta(minutes=5), timedelta(minutes=5), timedelta(0)),
    "s10m": ("sliding", timedelta(minutes=10), timedelta(minutes=5), timedelta(minutes=1)),
}

GEN_FLAGS = ["--events", "1600", "--files", "8", "--seed", "11", "--rate", "2", "--start", "now",
             "--lag-median", "20s", "--outage-rate", "0.003", "--duplicates", "0.03",
             "--future", "0.004", "--wrong-types", "0.004", "--event-types", "3"]


def pipeline_yaml(lake: str, prefix: str = "") -> str:
    """The pipeline; prefix moves every table the stream writes (and its checkpoint) under
    prefix, bronze stays: prefix "spark/" is the exported job's default layout."""
    return (f"lake: {lake}\n"
            "landing: {path: landing/events/, format: json, max_files_per_trigger: 1}\n"
            "schema:\n"
            "  - {name: event_id,   type: string, required: true}\n"
            "  - {name: event_type, type: string}\n"
            "  - {name: amount,     type: double}\n"
            "  - {name: event_time, type: timestamp, required: true}\n"
            f"tables: {{bronze: bronze/events, rejects: {prefix}bronze/rejects, silver: {prefix}silver/events}}\n"
            "stream:\n"
            "  name: events\n"
            f"  checkpoint: {prefix}_checkpoints/events\n"
            "  event_time: event_time\n"
            "  watermark: 2m\n"
            "  max_future_skew: 1h\n"
            "  max_files_per_trigger: 3\n"
            "  dedup: [event_id]\n"
            "  trigger: available-now\n"
            # Expectations: the drop one sends the larger amounts (about one row in six) to
            # rejects on both engines, reading the transform's computed cents (expectations are
            # judged after the computed columns); the warn one only counts.
            "expectations:\n"
            "  - {name: modest_amount, expect: \"cents IS NULL OR cents < 4000\", on_violation: drop}\n"
            "  - {name: has_type, expect: \"event_type IS NOT NULL\", on_violation: warn}\n"
            # A transform (docs/transforms.md): two computed columns, silver's last, and a filter
            # that sends the purchases (and rows without a type) to rejects as
            # filtered:no_purchase on both engines (the job through F.expr of the same text).
            "transform:\n"
            "  columns:\n"
            "    - {name: kind, expr: \"upper(trim(event_type))\"}\n"
            "    - {name: cents, expr: \"amount * 100\"}\n"
            "  filter: {name: no_purchase, expr: \"kind <> 'PURCHASE'\", on_filter: reject}\n"
            "gold:\n"
            "  - name: t5m\n"
            f"    table: {prefix}gold/t5m\n"
            f"    quarantine: {prefix}silver/late_t5m\n"
            "    window: {type: tumbling, size: 5m}\n"
            "    group_by: [event_type]\n"
            "    aggregates:\n"
            "      - {fn: count, as: count}\n"
            "      - {fn: sum, column: amount, as: total_amount}\n"
            "      - {fn: avg, column: amount, as: avg_amount}\n"
            "  - name: s10m\n"
            f"    table: {prefix}gold/s10m\n"
            f"    quarantine: {prefix}silver/late_s10m\n"
            "    window: {type: sliding, size: 10m, slide: 5m, start_time: 1m}\n"
            "    group_by: [event_type]\n"
            "    aggregates: [{fn: count, as: count}, {fn: max, column: amount, as: max_amount}]\n"
            # A derived table (docs/derived-tables.md): a 10-minute rollup of t5m, kept on Spark
            # by the merge-late, replay and derive jobs (a MERGE of its closed windows).
            "  - name: r10m\n"
            "    source: t5m\n"
            f"    table: {prefix}gold/r10m\n"
            "    window: {type: tumbling, size: 10m}\n"
            "    group_by: [event_type]\n"
            "    aggregates:\n"
            "      - {fn: sum, column: count, as: count}\n"
            "      - {fn: sum, column: total_amount, as: total_amount}\n"
            "      - {fn: avg, column: avg_amount, as: avg_amount}\n")


def load_job(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Run:
    """Both engines' tables over one bronze: read(table) gives rows (delta-rs' unless
    with_reader swapped the reader), locate(table) the table's path or s3:// URL. replay holds,
    when the late-data loop ran on Spark (the file backend), both replays' reports and
    medallion's merge-late report on Spark's tables afterwards."""

    def __init__(self, read, locate, job, lake_uri, watermark_ms, cfg, env, crash, replay=None):
        self.read, self.locate, self.job, self.lake_uri = read, locate, job, lake_uri
        self.watermark_ms, self.cfg, self.env, self.crash = watermark_ms, cfg, env, crash
        self.replay = replay

    def with_reader(self, read) -> "Run":
        other = copy.copy(self)
        other.read = read
        return other


class Killed(Exception):
    pass


def run_crashing(job, spark, args, batch: int) -> dict:
    """Runs the job with batch `batch` killed after silver's write, before the quarantines and
    gold, and says what the checkpoint held then."""
    original = job.Job.aggregate

    def crash(self, name, fresh, silver, n, late_ms, evict_ms):
        if n == batch:
            raise Killed(f"killed in batch {n} after silver's write")
        return original(self, name, fresh, silver, n, late_ms, evict_ms)

    job.Job.aggregate = crash
    try:
        with pytest.raises(Exception, match=f"killed in batch {batch}"):
            job.run(spark, args)
    finally:
        job.Job.aggregate = original
    ckpt = job.LAKE + "/spark/" + job.CHECKPOINT
    return {"offsets": job.read_text(spark, f"{ckpt}/offsets/{batch}") is not None,
            "commits": job.read_text(spark, f"{ckpt}/commits/{batch}") is not None,
            "silver_record": job.read_text(spark, f"{ckpt}/{job.RECORDS}/silver-{batch}") is not None}


def run_both(tmp: Path, medallion_bin, spark, lake: str, lake_uri: str, read, locate, env=None,
             crash_batch=None, spark_replay=False) -> Run:
    """medallion's stream and merge-late, then the job (killed once in crash_batch, if given,
    and run again) and merge-late on its tables. With spark_replay, the late-data loop runs on
    Spark (replay_on_both) before medallion's merge-late on Spark's tables."""
    cfg = tmp / "pipeline.yaml"
    cfg.write_text(pipeline_yaml(lake))
    spark_cfg = tmp / "spark.yaml"
    spark_cfg.write_text(pipeline_yaml(lake, "spark/"))

    def med(*args, timeout=300):
        return run_medallion(medallion_bin, *args, timeout=timeout, env=env)

    med("gen", "--config", str(cfg), *GEN_FLAGS)
    med("run", "ingest", "--config", str(cfg))
    stream = json.loads(med("run", "stream", "--config", str(cfg)))
    med("run", "merge-late", "--config", str(cfg))

    job_path = tmp / "job.py"
    job_path.write_text(med("export", "spark", "--config", str(cfg)))
    job = load_job(job_path, f"exported_{tmp.name}")
    crash = None
    if crash_batch is not None:
        crash = run_crashing(job, spark, job.parse_args([]), crash_batch)
    reports = job.run(spark, job.parse_args([]))[job.QUERY]
    assert reports and reports[-1]["eventTime"]["watermark"] > "1970", reports[-1]
    if crash is not None:
        crash["rerun_from"] = reports[0]["batchId"]
    replay = replay_on_both(tmp, med, spark, cfg, lake_uri, read) if spark_replay else None
    merged = json.loads(med("run", "merge-late", "--config", str(spark_cfg)))["result"]
    if replay is not None:
        replay["merge_late_after"] = merged
    return Run(read, locate, job, lake_uri, stream["result"]["watermarkMs"], spark_cfg, env, crash, replay)


# The aggregates replay_on_both spoils in both engines' gold before replaying the range.
SPOIL = {"t5m": "`count` = `count` + 1000, total_amount = total_amount * 2",
         "s10m": "`count` = `count` + 1000, max_amount = -1"}


def replay_on_both(tmp: Path, med, spark, cfg: Path, lake_uri: str, read) -> dict:
    """The replay on both engines over the same range (the middle third of medallion's t5m
    windows), after spoiling the range's gold rows the same way in both (counts +1000, sums
    doubled: what a bad deploy leaves behind), so that the replays must rewrite them: medallion's
    `run replay` on its tables (merge-late ran already), the exported `--job replay` on Spark's,
    whose quarantines nothing has merged yet: it merges them first with medallion's txn, then
    replaces the range's windows, then derives r10m. Returns both reports."""
    starts = sorted({parse_ts(r["window"]["start"]) for r in read("gold/t5m")})
    frm, to = starts[len(starts) // 3], starts[2 * len(starts) // 3]
    frm, to = (t.strftime("%Y-%m-%dT%H:%M:%SZ") for t in (frm, to))
    for prefix in ("", "spark/"):
        for gold, spoil in SPOIL.items():
            spark.sql(f"UPDATE delta.`{lake_uri}/{prefix}gold/{gold}` SET {spoil} WHERE window.start >= "
                      f"timestamp'{frm.replace('T', ' ')[:-1]}' AND window.start < timestamp'{to.replace('T', ' ')[:-1]}'")
    ours = json.loads(med("run", "replay", "--config", str(cfg), "--from", frm, "--to", to))["result"]
    job_path = tmp / "replay.py"
    job_path.write_text(med("export", "spark", "--config", str(cfg), "--job", "replay"))
    job = load_job(job_path, f"exported_{tmp.name}_replay")
    theirs = job.run(spark, job.parse_args(["--from", frm, "--to", to]))
    return {"from": frm, "to": to, "medallion": ours, "spark": theirs}


@pytest.fixture(scope="module")
def on_files(tmp_path_factory, medallion_bin, spark, deltalake) -> Run:
    tmp = tmp_path_factory.mktemp("export-files")
    lake = tmp / "lake"
    # Killed once in batch 1: every comparison with medallion below is of tables a crashed and
    # rerun job wrote.
    return run_both(tmp, medallion_bin, spark, str(lake), lake.as_uri(),
                    lambda table: read_deltars(lake / table), lambda table: lake / table,
                    crash_batch=1, spark_replay=True)


@pytest.fixture(scope="module")
def on_minio(tmp_path_factory, medallion_bin, spark_s3, s3) -> Run:
    tmp = tmp_path_factory.mktemp("export-minio")
    prefix = "export-promise"
    lake = f"s3://{s3['bucket']}/{prefix}"
    return run_both(tmp, medallion_bin, spark_s3, lake, s3a_url(s3, prefix),
                    lambda table: read_deltars_s3(s3, f"{lake}/{table}"),
                    lambda table: f"{lake}/{table}", env=s3["env"])


def on_backend(request, backend: str, reader: str) -> Run:
    """The run on backend ("files" or "minio") with its tables read by reader ("delta-rs" or
    "duckdb")."""
    run = request.getfixturevalue("on_" + backend)
    if reader == "delta-rs":
        return run
    con = request.getfixturevalue("duckdb" if backend == "files" else "duckdb_s3")
    return run.with_reader(lambda table: read_duckdb(con, run.locate(table)))


# delta-rs only: DuckDB's rows of every table equal delta-rs' (test_duckdb_reads_every_table_as_deltars),
# so repeating each comparison through DuckDB proves nothing more and costs a read of every table.
@pytest.fixture(params=[("files", "delta-rs"), ("minio", "delta-rs")], ids="-".join)
def both(request) -> Run:
    return on_backend(request, *request.param)


# Every table the runs write: medallion's, and the exported job's under spark/ (bronze is shared).
TABLES = ["bronze/events", "bronze/rejects", "silver/events", "silver/late_t5m", "silver/late_s10m",
          "gold/t5m", "gold/s10m", "spark/bronze/rejects", "spark/silver/events",
          "spark/silver/late_t5m", "spark/silver/late_s10m", "spark/gold/t5m", "spark/gold/s10m"]


@pytest.mark.parametrize("backend", ["files", "minio"])
def test_duckdb_reads_every_table_as_deltars(request, backend):
    """DuckDB's rows of each table equal delta-rs', every column (timestamps, the window struct,
    exact-sum decimals, nulls), as multisets."""
    deltars, duckdb = on_backend(request, backend, "delta-rs"), on_backend(request, backend, "duckdb")
    for table in TABLES:
        theirs = deltars.read(table)
        assert theirs, f"{table} is empty: nothing to compare"
        assert_multiset(duckdb.read(table), theirs, f"{backend}: DuckDB vs delta-rs reading {table}")


def internal_columns(*tables: list[dict]) -> set[str]:
    """medallion's internal exact-sum columns (_<as>_exact, docs/exact-sums.md) in the rows:
    not part of gold's public columns, absent from a table Spark created until merge-late adds
    them, so the comparisons with Spark leave them out."""
    return {c for rows in tables for r in rows[:1] for c in r if c.startswith("_") and c.endswith("_exact")}


def canon(row: dict, drop=()) -> str:
    return json.dumps({k: v for k, v in row.items() if k not in drop}, sort_keys=True, default=str)


def assert_multiset(ours: list[dict], theirs: list[dict], label: str, drop=(), floats=()):
    """Multiset equality on every column but drop; floats equal within a relative 1e-9."""
    index: dict[str, list[dict]] = collections.defaultdict(list)
    for r in theirs:
        index[canon(r, (*drop, *floats))].append(r)
    missing = []
    for r in ours:
        bucket = index.get(canon(r, (*drop, *floats)))
        if not bucket:
            missing.append(r)
            continue
        s = bucket.pop()
        for c in floats:
            assert (r[c] is None) == (s[c] is None) and (r[c] is None or math.isclose(r[c], s[c], rel_tol=1e-9)), \
                f"{label}: {c}: medallion {r[c]}, Spark {s[c]} in {canon(r, floats)}"
    extra = [r for rows in index.values() for r in rows]
    assert not missing and not extra, (
        f"{label}: {len(ours)} rows from medallion, {len(theirs)} from Spark\n"
        + "".join(f"  only medallion: {canon(r)}\n" for r in missing[:5])
        + "".join(f"  only Spark:     {canon(r)}\n" for r in extra[:5]))


def test_silver_equals_medallions(both):
    ours, theirs = both.read("silver/events"), both.read("spark/silver/events")
    assert len(ours) > 800  # of 1600 events: the transform's filter takes the purchases out
    assert all(r["kind"] == r["event_type"].upper() and r["kind"] != "PURCHASE" for r in ours)
    # The workload's resends were dropped by both, and nothing else.
    assert len({r["event_id"] for r in theirs}) == len(theirs)
    assert_multiset(ours, theirs, "silver")


def test_rejects_equal_medallions(both):
    cols = ("stage", "reason", "error", "source_file", "source_offset")
    ours = [{c: r[c] for c in cols} for r in both.read("bronze/rejects") if r["stage"] == "validate"]
    theirs = [{c: r[c] for c in cols} for r in both.read("spark/bronze/rejects")]
    reasons = {r["reason"] for r in ours}
    # gen's event times that are not timestamps ("yesterday", "", true, ...) are bad_event_time
    assert "future" in reasons and "bad_event_time" in reasons and "expectation:modest_amount" in reasons, reasons
    assert "filtered:no_purchase" in reasons, reasons
    assert_multiset(ours, theirs, "rejects")
    raw = both.read("spark/bronze/rejects")
    assert all(json.loads(r["raw"])["event_id"] and r["raw_bytes"] == len(r["raw"].encode()) for r in raw)


@pytest.mark.parametrize("gold", list(GOLDS))
def test_quarantine_equals_medallions(both, gold):
    ours, theirs = both.read(f"silver/late_{gold}"), both.read(f"spark/silver/late_{gold}")
    assert ours, f"{gold}: the workload quarantined nothing: the late path is not exercised"
    assert_multiset(ours, theirs, f"quarantine {gold}", drop=("batch_id", "query_id"))
    spark_qids = {r["query_id"] for r in theirs}
    assert len(spark_qids) == 1 and spark_qids != {r["query_id"] for r in ours}


@pytest.mark.parametrize("gold", list(GOLDS))
def test_gold_after_merge_late_equals_medallions(both, gold):
    ours, theirs = both.read(f"gold/{gold}"), both.read(f"spark/gold/{gold}")
    assert any(r["late_rows"] for r in theirs), f"{gold}: merge-late folded nothing into Spark's gold"
    floats = {c for c in ("total_amount", "avg_amount", "avg_amount_sum", "max_amount") if c in ours[0]}
    assert_multiset(ours, theirs, f"gold {gold}", drop=internal_columns(ours, theirs), floats=floats)


def test_medallions_gold_sums_are_exact(both):
    """Issue 30: medallion's float sums are exact. After the stream and merge-late, each window's
    total_amount is math.fsum of its silver amounts (correctly rounded) and avg_amount the exact
    sum divided by the count, rounded once, bit for bit; so is avg_amount_sum."""
    _, size, slide, start = GOLDS["t5m"]
    wm = datetime.fromtimestamp(both.watermark_ms / 1000, tz=timezone.utc)
    amounts = collections.defaultdict(list)
    for r in both.read("silver/events"):
        for end in window_ends(parse_ts(r["event_time"]), size, slide, start):
            if end <= wm and r["amount"] is not None:
                amounts[(end, r["event_type"])].append(r["amount"])
    rows = both.read("gold/t5m")
    assert any(r["late_rows"] for r in rows), "merge-late folded nothing into gold: the test proves little"
    summed = 0
    for r in rows:
        xs = amounts[(parse_ts(r["window"]["end"]), r["event_type"])]
        total = math.fsum(xs) if xs else None
        avg = float(sum(map(Fraction, xs)) / len(xs)) if xs else None
        got = (r["total_amount"], r["avg_amount_sum"], r["avg_amount"])
        assert got == (total, total, avg), f"window {r['window']} {r['event_type']}: {got}, want {(total, total, avg)}"
        summed += len(xs) > 1
    # About 12 minutes of events over 3 types: some 6 to 12 closed windows; a few suffice.
    assert summed >= 3, f"only {summed} windows sum more than one amount"


def window_ends(t: datetime, size: timedelta, slide: timedelta, start: timedelta) -> list[datetime]:
    """Every window holding t, by its end: starts at epoch + start + k*slide."""
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    k = (t - epoch - start) // slide
    out = []
    s = epoch + start + k * slide
    while s > t - size:
        out.append(s + size)
        s -= slide
    return out


def parse_ts(v) -> datetime:
    if isinstance(v, datetime):
        return v if v.tzinfo else v.replace(tzinfo=timezone.utc)
    return datetime.fromisoformat(str(v).replace("Z", "+00:00"))


@pytest.mark.parametrize("gold", list(GOLDS))
def test_invariant_e_on_sparks_tables(both, gold):
    """Spark's gold after merge-late = silver counted over every window the watermark closed."""
    _, size, slide, start = GOLDS[gold]
    wm = datetime.fromtimestamp(both.watermark_ms / 1000, tz=timezone.utc)
    want = collections.Counter()
    for r in both.read("spark/silver/events"):
        for end in window_ends(parse_ts(r["event_time"]), size, slide, start):
            if end <= wm:
                want[(end, r["event_type"])] += 1
    got = collections.Counter()
    for r in both.read(f"spark/gold/{gold}"):
        got[(parse_ts(r["window"]["end"]), r["event_type"])] += r["count"]
    assert want and got == want, f"{gold}: gold differs from silver's batch count:\n" + \
        f"  missing/different: {sorted((k, v) for k, v in want.items() if got.get(k) != v)[:5]}\n" + \
        f"  unexpected: {sorted((k, v) for k, v in got.items() if want.get(k) != v)[:5]}"


def test_derived_table_equals_medallions(on_files):
    """The derived table r10m (a rollup of t5m) as the exported jobs keep it (Spark's replay job
    MERGEs it after replaying t5m) equals medallion's, row for row (doubles within 1e-9). File
    backend only: on MinIO medallion's merge-late derives Spark's r10m itself, and its pass reads
    the watermark of the job's last offsets, not the job's closing step's (a window that step
    closed reaches r10m one pass later)."""
    both = on_files
    ours, theirs = both.read("gold/r10m"), both.read("spark/gold/r10m")
    assert ours and any(r["late_rows"] for r in ours), "r10m holds no corrected window: the test proves little"
    assert_multiset(ours, theirs, "derived r10m", drop=internal_columns(ours, theirs),
                    floats=("total_amount", "avg_amount", "avg_amount_sum"))


def test_invariant_e_on_sparks_derived_table(on_files):
    """Spark's r10m = its silver counted over every 10-minute window the watermark closed, and
    each total the sum of the window's amounts (within 1e-9): invariant E one level down."""
    both = on_files
    wm = datetime.fromtimestamp(both.watermark_ms / 1000, tz=timezone.utc)
    counts, sums = collections.Counter(), collections.defaultdict(list)
    for r in both.read("spark/silver/events"):
        for end in window_ends(parse_ts(r["event_time"]), timedelta(minutes=10), timedelta(minutes=10), timedelta(0)):
            if end <= wm:
                counts[(end, r["event_type"])] += 1
                if r["amount"] is not None:
                    sums[(end, r["event_type"])].append(r["amount"])
    rows = both.read("spark/gold/r10m")
    got = collections.Counter({(parse_ts(r["window"]["end"]), r["event_type"]): r["count"] for r in rows})
    assert counts and got == counts, (sorted(set(counts.items()) ^ set(got.items()))[:5])
    for r in rows:
        want = math.fsum(sums[(parse_ts(r["window"]["end"]), r["event_type"])])
        assert math.isclose(r["total_amount"], want, rel_tol=1e-9), (r, want)


def test_spark_replay_equals_medallions_replay(on_files):
    """The exported --job replay and medallion's run replay, over the same range of gold rows
    both spoiled alike (replay_on_both): the same whole windows replaced (t5m's and the sliding
    s10m's), each engine rewrote them (neither found its gold unchanged), and the rows after
    equal medallion's (test_gold_after_merge_late_equals_medallions, on these tables); no
    spoiled count is left, and Spark's merge-late inside its replay folded the quarantines in."""
    rp = on_files.replay
    ours = {g["name"]: g for g in rp["medallion"]["gold"]}
    theirs = {g["gold"]: g for g in rp["spark"]["replay"]}
    assert set(ours) == set(theirs) == set(GOLDS)
    for gold in GOLDS:
        o, t = ours[gold], theirs[gold]
        assert (parse_ts(o["windowStartFrom"]), parse_ts(o["windowStartTo"])) == \
            (parse_ts(t["windowStartFrom"]), parse_ts(t["windowStartTo"])), (gold, o, t)
        assert o.get("commit") and not o.get("unchanged"), (gold, o)
        assert t["rowsWritten"] > 0 and not t.get("unchanged"), (gold, t)
        assert t["mergeLate"]["lateRows"] > 0, (gold, t["mergeLate"])
        for prefix in ("", "spark/"):
            assert all(r["count"] < 1000 for r in on_files.read(f"{prefix}gold/{gold}")), f"{prefix}gold/{gold} still spoiled"


def test_spark_late_loop_applied_once(on_files):
    """After Spark's replay job (its merge-late with medallion's txn, its replay, its derived
    pass with medallion's two positions), medallion's merge-late on the same tables finds every
    quarantine merged up to the version Spark merged and r10m up to date: nothing applied
    twice, either may run after the other."""
    rp = on_files.replay
    after = rp["merge_late_after"]
    spark_merged = {g["gold"]: g["mergeLate"]["toQuarantineVersion"] for g in rp["spark"]["replay"]}
    for g in after["gold"]:
        assert g["upToDate"] and g["toQuarantineVersion"] == spark_merged[g["name"]], (g, spark_merged)
    assert [d["name"] for d in rp["spark"]["derived"]] == ["r10m"] and rp["spark"]["derived"][0].get("commit")
    assert [(d["name"], d.get("upToDate")) for d in after["derived"]] == [("r10m", True)], after["derived"]


def test_replay_range_reads_medallions_flags(on_files):
    """The replay job's range flags read as medallion's: --from/--to in RFC 3339 or 'YYYY-MM-DD
    HH:MM:SS' UTC, --since a duration ending now; a reversed range or a bad duration is refused.
    Whole windows align as medallion's alignStart, before the epoch too (floor, not truncation)."""
    job = on_files.job
    hour = 3600 * 10**6
    t0 = int(datetime(2026, 12, 1, 10, tzinfo=timezone.utc).timestamp()) * 10**6
    assert job.replay_range(job.parse_args(["--from", "2026-12-01 10:00:00", "--to", "2026-12-01T11:30:00.5Z"])) == \
        (t0, t0 + hour + hour // 2 + 500_000)
    assert job.replay_range(job.parse_args(["--since", "1h30m"]), now_us=t0) == (t0 - hour - hour // 2, t0)
    for argv in (["--since", "1x"], ["--from", "2026-12-01T11:00:00Z", "--to", "2026-12-01T10:00:00Z"], ["--to", "2026-12-01"]):
        with pytest.raises(ValueError):
            job.replay_range(job.parse_args(argv))
    minute = 60 * 10**6
    assert job._align(-1, minute, 5 * minute) == -4 * minute
    assert job._align(11 * minute, minute, 5 * minute) == 11 * minute


def test_default_job_refuses_medallions_tables(on_files, spark):
    """--root at the lake itself (medallion's tables) without --takeover: refused before any
    write, naming the table and the query that owns it."""
    job = on_files.job
    root = on_files.lake_uri
    before = read_log_versions(root)
    with pytest.raises(job.OwnershipError) as err:
        job.run(spark, job.parse_args(["--root", root, "--checkpoint", root + "/spark/_ckpt_refused"]))
    msg = str(err.value)
    assert "refusing to write" in msg and root + "/silver/events" in msg, msg
    medallion_qid = on_files.read("silver/late_t5m")[0]["query_id"]
    assert medallion_qid in msg, msg
    assert read_log_versions(root) == before


def read_log_versions(root_uri: str) -> dict[str, int]:
    root = Path(root_uri.removeprefix("file://"))
    return {t: len(list((root / t / "_delta_log").glob("*.json")))
            for t in ("silver/events", "gold/t5m", "gold/s10m", "silver/late_t5m", "bronze/rejects")}


def test_job_s3a_settings_follow_config_and_environment(on_files):
    job = on_files.job
    saved = job.LAKE, job.S3
    job.LAKE, job.S3 = "s3a://bucket/lake", {"endpoint": "", "region": "", "path_style": None}
    try:
        got = job.s3a_settings({"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_REGION": "eu-west-3"})
        assert got["fs.s3a.endpoint"] == "http://127.0.0.1:9000"
        assert got["fs.s3a.path.style.access"] == "true"
        assert got["fs.s3a.endpoint.region"] == "eu-west-3"
        assert got["fs.s3a.connection.ssl.enabled"] == "false"
        assert got["fs.s3a.aws.credentials.provider"] == "com.amazonaws.auth.DefaultAWSCredentialsProviderChain"
        aws = job.s3a_settings({})
        assert "fs.s3a.endpoint" not in aws and aws["fs.s3a.path.style.access"] == "false"
        # The pipeline config's s3 block wins over the environment, as in medallion.
        job.S3 = {"endpoint": "https://s3.example", "region": "us-east-2", "path_style": False}
        cfg = job.s3a_settings({"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_REGION": "eu-west-3"})
        assert (cfg["fs.s3a.endpoint"], cfg["fs.s3a.endpoint.region"], cfg["fs.s3a.path.style.access"],
                cfg["fs.s3a.connection.ssl.enabled"]) == ("https://s3.example", "us-east-2", "false", "true")
    finally:
        job.LAKE, job.S3 = saved
    assert job.s3a_settings({"AWS_ENDPOINT_URL": "http://x"}) == {}  # a file lake needs none


def test_takeover_continues_medallions_stream(tmp_path, medallion_bin, spark, deltalake):
    """--takeover: medallion's stream runs the first half of the workload, then the job continues
    its checkpoint and tables for the second half. The result equals a lake where medallion ran
    everything (same bronze: the lake is copied after the second ingest), after merge-late on
    both: no event lost, none counted twice."""
    import shutil

    ours_lake, theirs_lake = tmp_path / "medallion" / "lake", tmp_path / "handover" / "lake"
    ours_lake.parent.mkdir()
    cfg = tmp_path / "medallion" / "pipeline.yaml"
    cfg.write_text(pipeline_yaml(str(ours_lake)))
    run_medallion(medallion_bin, "gen", "--config", str(cfg), *GEN_FLAGS)
    landing = ours_lake / "landing" / "events"
    held = tmp_path / "held"
    held.mkdir()
    files = sorted(landing.iterdir())
    for f in files[len(files) // 2:]:
        f.rename(held / f.name)
    run_medallion(medallion_bin, "run", "ingest", "--config", str(cfg))
    run_medallion(medallion_bin, "run", "stream", "--config", str(cfg), timeout=300)
    run_medallion(medallion_bin, "run", "merge-late", "--config", str(cfg))
    for f in held.iterdir():
        f.rename(landing / f.name)
    run_medallion(medallion_bin, "run", "ingest", "--config", str(cfg))
    # The handover lake: medallion's tables and checkpoint as they are when its stream stops.
    shutil.copytree(ours_lake, theirs_lake)
    theirs_cfg = tmp_path / "handover" / "pipeline.yaml"
    theirs_cfg.write_text(pipeline_yaml(str(theirs_lake)))
    medallion_qid = json.loads((theirs_lake / "_checkpoints/events/metadata").read_text())["id"]

    stream = json.loads(run_medallion(medallion_bin, "run", "stream", "--config", str(cfg), timeout=300))
    assert stream["result"]["numInputRows"] > 0, "the second half must reach the stream"
    run_medallion(medallion_bin, "run", "merge-late", "--config", str(cfg))

    job_path = tmp_path / "handover" / "job.py"
    job_path.write_text(run_medallion(medallion_bin, "export", "spark", "--config", str(theirs_cfg)))
    job = load_job(job_path, "exported_takeover")
    reports = job.run(spark, job.parse_args(["--takeover"]))[job.QUERY]
    assert sum(r["numInputRows"] for r in reports) == stream["result"]["numInputRows"]
    assert reports[0]["id"] == medallion_qid, "the job continues medallion's query"
    run_medallion(medallion_bin, "run", "merge-late", "--config", str(theirs_cfg))

    def both(table):
        return read_deltars(ours_lake / table), read_deltars(theirs_lake / table)

    assert_multiset(*both("silver/events"), "silver after takeover")
    for gold in GOLDS:
        ours, theirs = both(f"silver/late_{gold}")
        assert ours, f"{gold}: nothing quarantined"
        assert_multiset(ours, theirs, f"quarantine {gold} after takeover", drop=("batch_id",))
        ours, theirs = both(f"gold/{gold}")
        floats = {c for c in ("total_amount", "avg_amount", "avg_amount_sum", "max_amount") if c in ours[0]}
        assert_multiset(ours, theirs, f"gold {gold} after takeover", drop=internal_columns(ours, theirs), floats=floats)
    cols = ("stage", "reason", "error", "source_file", "source_offset")
    ours, theirs = ([{c: r[c] for c in cols} for r in rows] for rows in both("bronze/rejects"))
    assert_multiset(ours, theirs, "rejects after takeover")


def test_job_rerun_after_a_crash_converges(on_files):
    """The file-backend job was killed in batch 1 after silver's write, before the quarantines
    and gold (batch 1 offset logged, not committed), and run again from batch 1: the tables the
    other tests compare with medallion's are the rerun's. The rerun dedups against the silver
    version recorded before the crash (without it, every row of the batch would look like a
    duplicate and the quarantines and gold would lose it) and txn skips what had landed."""
    assert on_files.crash == {"offsets": True, "commits": False, "silver_record": True,
                              "rerun_from": 1}, on_files.crash


def test_medallions_jobs_work_on_sparks_tables(on_files, medallion_bin, tmp_path):
    """replay, optimize, vacuum, lag and report run on the tables the job wrote (merge-late ran in
    the fixture), and gold still holds invariant E afterwards. Runs last: it rewrites Spark's
    gold and compacts its files."""
    cfg = str(on_files.cfg)
    out = {}
    for args in (["run", "replay", "--since", "48h"], ["run", "optimize"], ["run", "vacuum"],
                 ["lag"]):
        out[args[-1]] = run_medallion(medallion_bin, *args, "--config", cfg, timeout=300)
    optimized = {r["table"]: r for r in json.loads(out["optimize"])["result"]}
    assert optimized["spark/silver/events"].get("filesRemoved", 0) > 1, optimized
    html = tmp_path / "report.html"
    run_medallion(medallion_bin, "report", "--config", cfg, "--html", str(html))
    assert "spark/gold/t5m" in html.read_text()
    for gold in GOLDS:
        test_invariant_e_on_sparks_tables(on_files, gold)
