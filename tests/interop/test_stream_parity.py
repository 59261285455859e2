"""Spark parity of the stream (issue 9 item 5): the PySpark job printed by `medallion export spark`,
run with --plain (Spark's own streaming aggregation, one query per gold table), and medallion's
own stream run over the same bronze table, with the same maxFilesPerTrigger, so
that their micro-batches coincide. Our gold before merge-late must equal Spark's gold (rows as
multisets, floating-point aggregates within a relative 1e-9: the two engines add in different
orders), and per batch id our group-level numRowsDroppedByWatermark must equal Spark's.

The workload comes from `medallion gen` (lag tail, outage bursts delivered an hour late,
duplicates, wrong types, far-future events, a malformed line), ingested by `medallion run ingest`
two landing files per bronze commit, in two rounds: both engines first start from bronze's
snapshot (files in modification-time order), then restart from their checkpoints and read the
commits of the second round. Batches are aligned by batch id and the rows read so far; the one
exception is a complete-mode gold table: medallion's single stream runs the no-data batches its
append/update/session tables need, Spark's complete-mode query alone does not, so there the batch
ids drift apart and batches are matched by rows read (medallion's extra ones must be empty).

Dedup: the exported job runs dropDuplicates(keys) BEFORE withWatermark, so Spark keeps every key
forever and drops no row as late in dedup, which is medallion's exact dedup. The two agree here
because gen's duplicates are exact resends (same event time), so the watermark, which medallion
observes before dedup and Spark after, comes out the same. (A resend with a different event time
could move medallion's watermark but not Spark's; dropDuplicatesWithinWatermark would also count a
late resend twice. Neither is what this test compares.)
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import textwrap
from pathlib import Path

import pytest

from interop_engines import read_deltars, read_duckdb, run_medallion
from interop_rows import schema_columns

pytestmark = pytest.mark.needs_medallion

SCHEMA = """\
schema:
  - {name: event_id,   type: string, required: true}
  - {name: event_type, type: string}
  - {name: amount,     type: double}
  - {name: event_time, type: timestamp, required: true}
"""

WINDOWS = {
    # Append mode: tumbling and sliding (with a start offset) in one stream, every aggregate,
    # with dedup, two bronze files a batch.
    "append_tumbling_sliding_dedup": ("""\
  - name: t5m
    window: {type: tumbling, size: 5m}
    group_by: [event_type]
    aggregates:
      - {fn: count, as: count}
      - {fn: sum, column: amount, as: total_amount}
      - {fn: avg, column: amount, as: avg_amount}
      - {fn: min, column: amount, as: min_amount}
      - {fn: max, column: amount, as: max_amount}
  - name: s10m
    window: {type: sliding, size: 10m, slide: 5m, start_time: 1m}
    group_by: [event_type]
    aggregates: [{fn: count, as: count}, {fn: count, column: amount, as: amounts}]
""", "dedup: [event_id]", 2),
    # Session windows (append), update and complete modes, no dedup (duplicates counted by
    # both), several bronze files a batch.
    "session_update_complete": ("""\
  - name: sess
    window: {type: session, gap: 2s}
    group_by: [event_type]
    aggregates: [{fn: count, as: count}, {fn: max, column: amount, as: max_amount}]
  - name: upd
    window: {type: tumbling, size: 2m}
    group_by: [event_type]
    aggregates: [{fn: count, as: count}, {fn: avg, column: amount, as: avg_amount}]
    output_mode: update
  - name: cpl
    window: {type: sliding, size: 10m, slide: 5m}
    group_by: [event_type]
    aggregates: [{fn: count, as: count}, {fn: sum, column: amount, as: total}]
    output_mode: complete
""", "", 3),
}

GEN_FLAGS = ["--events", "2400", "--files", "12", "--seed", "11", "--rate", "2", "--start", "now",
             "--lag-median", "20s", "--outage-rate", "0.002", "--duplicates", "0.02",
             "--future", "0.003", "--wrong-types", "0.003", "--event-types", "3"]


def pipeline_config(root: Path, golds: str, dedup: str, max_files: int) -> Path:
    cfg = root / "pipeline.yaml"
    cfg.write_text(f"lake: {root / 'lake'}\n"
                   "landing: {path: landing/events/, format: json, max_files_per_trigger: 2}\n"
                   + SCHEMA +
                   "stream:\n"
                   "  name: events\n"
                   "  event_time: event_time\n"
                   "  watermark: 2m\n"
                   "  max_future_skew: 1h\n"
                   f"  max_files_per_trigger: {max_files}\n"
                   "  trigger: available-now\n"
                   + (f"  {dedup}\n" if dedup else "")
                   + "gold:\n" + golds)
    return cfg


def load_job(path: Path):
    spec = importlib.util.spec_from_file_location(f"exported_{path.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def group_drops(report: dict) -> int:
    """The aggregation's numRowsDroppedByWatermark in one progress report (dedupe excluded)."""
    ops = [o for o in report["stateOperators"] if o["operatorName"] != "dedupe"]
    assert len(ops) == 1, f"batch {report['batchId']}: operators {ops}"
    return ops[0]["numRowsDroppedByWatermark"]


def batch_views(reports: list[tuple[dict, int]], by_id: bool) -> dict[tuple, tuple]:
    """Progress reports (each with its aggregation's dropped groups) as {alignment key: compared
    values}. A batch is identified by the input rows read up to and including it (a no-data
    batch repeats its predecessor's count) and, unless by_id is false, by its batch id too;
    compared: input rows, the watermark the batch ran with, dropped groups. Source offsets are
    not compared: rows and boundaries are what must agree (see the README on offsets)."""
    out, seen = {}, 0
    for p, dropped in sorted(reports, key=lambda r: r[0]["batchId"]):
        seen += p["numInputRows"]
        key = (p["batchId"] if by_id else None, seen, p["numInputRows"] == 0)
        out[key] = (p["numInputRows"], p["eventTime"].get("watermark"), dropped)
    return out


def our_progress(lake: Path, gold_index: int, by_id: bool) -> dict[tuple, tuple]:
    """medallion's progress/N.json (stateOperators: dedupe if configured, then one per gold, in
    config order), viewed for gold #gold_index."""
    reports = []
    for f in (lake / "_checkpoints" / "events" / "progress").glob("*.json"):
        p = json.loads(f.read_text())
        aggs = [o for o in p["stateOperators"] if o["operatorName"] != "dedupe"]
        reports.append((p, aggs[gold_index]["numRowsDroppedByWatermark"]))
    return batch_views(reports, by_id)


def spark_progress(reports: list[dict], by_id: bool) -> dict[tuple, tuple]:
    return batch_views([(p, group_drops(p)) for p in reports], by_id)


def row_key(row: dict, float_cols: set[str]) -> str:
    return json.dumps({k: v for k, v in row.items() if k not in float_cols}, sort_keys=True,
                      default=str)


def assert_same_gold(ours: list[dict], theirs: list[dict], float_cols: set[str], label: str):
    """Multiset equality on the exact columns; the float columns of rows that pair up must agree
    within a relative 1e-9."""
    index: dict[str, list[dict]] = {}
    for r in theirs:
        index.setdefault(row_key(r, float_cols), []).append(r)
    missing = []
    for r in ours:
        bucket = index.get(row_key(r, float_cols))
        if not bucket:
            missing.append(r)
            continue
        s = bucket.pop()
        for c in float_cols:
            a, b = r[c], s[c]
            assert (a is None) == (b is None) and (a is None or math.isclose(a, b, rel_tol=1e-9)), \
                f"{label}: {c} differs for {row_key(r, float_cols)}: medallion {a}, Spark {b}"
    unexpected = [r for rows in index.values() for r in rows]
    assert not missing and not unexpected, (
        f"{label}: {len(ours)} rows from medallion, {len(theirs)} from Spark\n"
        + "".join(f"  only medallion: {r}\n" for r in missing[:10])
        + "".join(f"  only Spark:     {r}\n" for r in unexpected[:10]))


@pytest.mark.parametrize("case", list(WINDOWS))
def test_gold_and_dropped_counts_equal_sparks(case, tmp_path, medallion_bin, spark, deltalake,
                                              duckdb):
    golds, dedup, max_files = WINDOWS[case]
    cfg = pipeline_config(tmp_path, golds, dedup, max_files)
    lake = tmp_path / "lake"
    run_medallion(medallion_bin, "gen", "--config", str(cfg), *GEN_FLAGS)
    job_path = tmp_path / "job.py"
    job_path.write_text(run_medallion(medallion_bin, "export", "spark", "--config", str(cfg)))
    job = load_job(job_path)
    spark_root = tmp_path / "spark"
    # --plain: Spark's own streaming aggregation, whose counters this test compares.
    args = job.parse_args(["--plain", "--root", spark_root.as_uri(),
                           "--checkpoint", (spark_root / "_ckpt").as_uri()])

    # Two rounds: the later half of the landing files arrives after both streams ran once, so
    # each engine starts from bronze's snapshot, then restarts from its checkpoint and reads
    # the new bronze commits.
    landing = lake / "landing" / "events"
    held = tmp_path / "held"
    held.mkdir()
    files = sorted(landing.iterdir())
    for f in files[len(files) // 2:]:
        f.rename(held / f.name)
    progress: dict[str, list] = {}
    for round_ in range(2):
        if round_:
            for f in held.iterdir():
                f.rename(landing / f.name)
        ingest = json.loads(run_medallion(medallion_bin, "run", "ingest", "--config", str(cfg)))
        assert ingest["result"]["batches"] >= 3, f"bronze should get several commits: {ingest}"
        run_medallion(medallion_bin, "run", "stream", "--config", str(cfg), timeout=300)
        for name, reports in job.run(spark, args).items():
            progress.setdefault(name, []).extend(reports)

    names = list(job.GOLD)
    assert names and len(progress) == len(names)
    total_dropped = 0
    for gi, name in enumerate(names):
        label = f"{case}/{name}"
        # One medallion stream serves every gold table, so it runs a no-data batch when any of
        # them needs one (append/update/session after the watermark moved), where Spark's
        # query for a complete-mode table alone does not: those batch ids drift apart, and the
        # batches are matched by the rows read so far; medallion's extra batches must be empty.
        complete = job.GOLD[name]["output_mode"] == "complete"
        ours = our_progress(lake, gi, by_id=not complete)
        theirs = spark_progress(progress[name], by_id=not complete)
        if complete:
            extra = {k: v for k, v in ours.items() if k not in theirs}
            assert all(k[2] and v[2] == 0 for k, v in extra.items()), \
                f"{label}: batches only medallion ran must be no-data batches: {extra}"
            ours = {k: v for k, v in ours.items() if k in theirs}
        # The same batches, each with the same input rows, watermark and dropped groups.
        assert ours == theirs, textwrap.dedent(f"""\
            {label}: per batch (numInputRows, watermark, numRowsDroppedByWatermark) differ
              medallion {sorted(ours.items())}
              Spark     {sorted(theirs.items())}""")
        total_dropped += sum(d for _, _, d in ours.values())

        table = job.GOLD[name]["table"]
        ours_path, theirs_path = lake / table, spark_root / table
        columns = schema_columns(deltalake.DeltaTable(str(ours_path)).schema().to_json())
        # medallion's internal exact-sum columns (_<as>_exact, docs/exact-sums.md) are not part
        # of gold's public columns, which Spark's job writes.
        internal = {c for c in columns if c.startswith("_") and c.endswith("_exact")}
        columns = {c: t for c, t in columns.items() if c not in internal}
        assert schema_columns(deltalake.DeltaTable(str(theirs_path)).schema().to_json()) == columns, \
            f"{label}: gold schema"
        floats = {c for c, t in columns.items() if t == "double"}
        ours_rows, theirs_rows = read_deltars(ours_path), read_deltars(theirs_path)
        ours_rows = [{c: v for c, v in r.items() if c not in internal} for r in ours_rows]
        assert ours_rows, f"{label}: medallion's gold is empty; the workload closed no window"
        assert_same_gold(ours_rows, theirs_rows, floats, label)
        # The same comparison on both gold tables as DuckDB reads them (session windows,
        # update mode's MERGEs, complete mode's overwrites).
        dk_ours = [{c: v for c, v in r.items() if c not in internal} for r in read_duckdb(duckdb, ours_path)]
        assert_same_gold(dk_ours, read_duckdb(duckdb, theirs_path), floats, f"{label} (DuckDB)")
    # The workload must exercise the late path, or the counter comparison proves nothing.
    assert total_dropped > 0, f"{case}: no group was dropped by the watermark in any batch"


def test_exported_job_runs_as_a_program(tmp_path, medallion_bin, spark):
    """The job is also a standalone program (spark-submit or python): its command line parses
    and names the config's tables, without starting Spark. (The spark fixture only makes a
    missing pyspark skip, or fail under CI, like every Spark test.)"""
    import subprocess
    import sys

    cfg = pipeline_config(tmp_path, WINDOWS["session_update_complete"][0], "", 3)
    job = tmp_path / "job.py"
    job.write_text(run_medallion(medallion_bin, "export", "spark", "--config", str(cfg)))
    # COLUMNS: argparse would wrap the long default paths.
    proc = subprocess.run([sys.executable, str(job), "--help"], capture_output=True, text=True,
                          timeout=120, check=False, env={**os.environ, "COLUMNS": "1000"})
    assert proc.returncode == 0, proc.stderr
    for want in ("--root", "--checkpoint", "--takeover", "--plain", "{sess,upd,cpl}",
                 (tmp_path / "lake").as_uri() + "/bronze/events"):
        assert want in proc.stdout, f"job --help lacks {want!r}:\n{proc.stdout}"
