"""Differential test of the stream-stream join (issue 18 item 6): real PySpark 3.5.8 and medallion's
join operator run the same randomized micro-batches, and must agree batch by batch on the emitted
rows (as multisets), on numRowsDroppedByWatermark and on the batch watermark, for every join type.

Spark runs the workload the way spec/stream-joins.md's vectors were verified: one continuously
running query per join type, both inputs in one JSON file source split by a `side` column,
withWatermark on each side, the contract's condition `L.k = R.k AND R.t BETWEEN L.t + lower AND
L.t + upper`, a foreachBatch sink recording rows per batch id, processAllAvailable() after each
step (a data batch per file, plus the no-data batch Spark runs when the watermark moved), and
recentProgress for the watermarks and the drop counts. medallion runs tests/interop/cmd/joindiff,
which drives join.Operator with join.Watermarks as a stream host does.

Workloads are seeded: skewed keys (two hot keys take half the rows), null keys (at least one a
side), rows up to 1.6x their side's delay behind its frontier, a row on or just behind the late
boundary in every step after the first (the generator tracks the watermark as a full outer
join's nodes do, so the row is late there), sub-millisecond times, exact resends of earlier
rows, some steps written as a backlog of 2-3 files read one a batch (maxFilesPerTrigger 1: no
no-data batch between them, so the late watermark lags), three (lower, upper, delays) shapes.
MEDALLION_JOIN_DIFF_SEEDS=N runs seeds 1..N (default 1: each seed costs Spark about a minute per
shape at load average 20, less on a quiet machine). Every workload of the selected tests runs
once, all side by side on the one Spark session (the `runs` fixture), and each test checks its own.

The one deliberate difference (spec §9.2): in a full outer join Spark pairs null keys, emitting
(Lnull, Rnull) when the later of the two arrives; medallion never matches a null key. So for
full_outer every such Spark pair is removed and each null-key row Spark paired is expected as
medallion's null-extended row in the batch whose state watermark evicts it, computed here from
Spark's own watermarks by the spec's formula (left: t <= W - upper - 1 ms; right: t <= W + lower
- 1 ms). Null-key rows are never resent, so that a row id names one state row.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest


TYPES = ["inner", "left_outer", "right_outer", "full_outer", "left_semi"]

# name: (lower ms, upper ms, left delay ms, right delay ms)
SHAPES = {
    "jv1": (-5_000, 10_000, 20_000, 30_000),  # spec vector JV1's shape: different delays
    "tight": (0, 5_000, 5_000, 5_000),  # JV3's: matches only forward in time, short delays
    "skewed": (-3_000, 3_000, 12_000, 2_000),  # a slow left, a fast right, symmetric range
}

STEPS = 5
SEEDS = range(1, int(os.environ.get("MEDALLION_JOIN_DIFF_SEEDS", "1")) + 1)


def workload(seed: int, shape: str) -> dict:
    lower, upper, ldelay, rdelay = SHAPES[shape]
    rng = random.Random(f"{seed}/{shape}")
    frontier = 100_000_000  # µs, shared by both sides so that their rows can meet
    delay = {"left": ldelay, "right": rdelay}
    node = {"left": 0, "right": 0}  # the generator's own estimate of Spark's watermark nodes (ms)
    seen: dict[str, list] = {"left": [], "right": []}
    next_id = 1
    steps = []
    for _ in range(STEPS):
        step = {"left": [], "right": []}
        # Rows placed on the late boundary: the previous batch's watermark, as far as the
        # generator can tell (it ignores null keys and no-data batches, which is good enough to
        # land rows on, just below and just above it).
        w_est = min(node.values())
        frontier += rng.randint(0, 10) * (max(ldelay, rdelay) + upper) * 100  # µs: 0 to delay + upper
        for side in ("left", "right"):
            for _ in range(rng.randint(1, 10)):
                u = rng.random()
                key = None if u < 0.1 else rng.randint(0, 1) if u < 0.55 else rng.randint(2, 8)
                if w_est and rng.random() < 0.15:
                    t = w_est * 1000 + rng.choice([-1000, -1, 0, 1, 1000])
                else:
                    t = frontier - rng.randint(0, int(1.6 * delay[side])) * 1000
                    if rng.random() < 0.2:
                        t += rng.randint(1, 999)  # sub-millisecond: watermarks truncate to ms
                row = [next_id, key, max(t, 1000)]
                next_id += 1
                step[side].append(row)
                if key is not None:
                    seen[side].append(row)
            if seen[side] and rng.random() < 0.3:
                step[side].append(list(rng.choice(seen[side])))  # an exact resend
        if not steps:
            # Every workload has null keys on both sides...
            for side in ("left", "right"):
                step[side].append([next_id, None, frontier - rng.randint(0, delay[side]) * 1000])
                next_id += 1
        elif w_est:
            # ... and a row on or just behind the late boundary in every later step.
            side = rng.choice(("left", "right"))
            step[side].append([next_id, rng.randint(0, 3), w_est * 1000 - rng.choice([0, 1, 1000])])
            next_id += 1
        for side in ("left", "right"):
            if step[side]:
                node[side] = max(node[side], max(t for _, _, t in step[side]) // 1000 - delay[side])
        if rng.random() < 0.35:
            step = split_files(rng, step)
        steps.append(step)
    return {"types": TYPES, "lower_us": lower * 1000, "upper_us": upper * 1000,
            "left_delay_ms": ldelay, "right_delay_ms": rdelay, "steps": steps}


def split_files(rng: random.Random, step: dict) -> dict:
    """Spreads a step's rows over 2 or 3 files written together: a backlog, which Spark reads one
    file a batch (maxFilesPerTrigger 1) with no no-data batch in between."""
    n = rng.randint(2, 3)
    files = [{"left": [], "right": []} for _ in range(n)]
    for side in ("left", "right"):
        for row in step[side]:
            files[rng.randrange(n)][side].append(row)
    files = [f for f in files if f["left"] or f["right"]]
    return {**files[0], "more": files[1:]}


def step_files(step: dict) -> list[dict]:
    return [{"left": step["left"], "right": step["right"]}] + step.get("more", [])


@pytest.fixture(scope="session")
def joindiff_bin(go_programs) -> Path:
    return go_programs("joindiff")


def medallion_batches(joindiff_bin: Path, wl: dict) -> dict[str, list[dict]]:
    proc = subprocess.run([str(joindiff_bin)], input=json.dumps(wl), capture_output=True,
                          text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def watermark_ms(progress: dict) -> int:
    s = progress.get("eventTime", {}).get("watermark")
    if not s:
        return 0
    dt = datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
    return round(dt.timestamp() * 1000)


def spark_batches(spark, tmp: Path, wl: dict) -> dict[str, list[dict]]:
    """Runs wl through one Spark query per join type, all fed by the same directory, and returns
    per type the batches in the joindiff output's form."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    src_dir = tmp / "in"
    src_dir.mkdir()
    schema = T.StructType([T.StructField("side", T.StringType()), T.StructField("id", T.LongType()),
                           T.StructField("k", T.LongType()), T.StructField("t_us", T.LongType())])
    src = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).json(str(src_dir))

    def side(name: str, p: str, delay_ms: int):
        return (src.where(F.col("side") == name)
                .select(F.col("id").alias(p + "id"), F.col("k").alias(p + "k"),
                        F.expr("timestamp_micros(t_us)").alias(p + "t"))
                .withWatermark(p + "t", f"{delay_ms} milliseconds"))

    left, right = side("L", "l", wl["left_delay_ms"]), side("R", "r", wl["right_delay_ms"])
    lo, hi = wl["lower_us"] / 1e6, wl["upper_us"] / 1e6
    cond = F.expr(f"lk = rk AND rt >= lt + INTERVAL '{lo:.3f}' SECOND "
                  f"AND rt <= lt + INTERVAL '{hi:.3f}' SECOND")
    got: dict[str, dict[int, list]] = {}
    queries = {}
    for jt in wl["types"]:
        rid = F.lit(None).cast("long") if jt == "left_semi" else F.col("rid")
        joined = left.join(right, cond, jt).select("lid", rid.alias("rid"))
        got[jt] = {}

        def sink(df, batch_id, rows=got[jt]):
            rows[batch_id] = [(r[0], r[1]) for r in df.collect()]

        queries[jt] = (joined.writeStream.foreachBatch(sink)
                       .option("checkpointLocation", str(tmp / f"ck-{jt}")).start())
    step_end: dict[str, list[int]] = {jt: [] for jt in wl["types"]}
    try:
        t0 = time.monotonic()
        mtime = int(time.time())
        for s, step in enumerate(wl["steps"]):
            parts = []
            for f, fl in enumerate(step_files(step)):
                lines = [json.dumps({"side": "L" if sd == "left" else "R", "id": i, "k": k, "t_us": t})
                         for sd in ("left", "right") for i, k, t in fl[sd]]
                # Written aside and renamed in: the file source must never list a partial file.
                # It takes files oldest first: distinct modification times fix the order.
                part = tmp / f".step-{s:04d}-{f}.json"
                part.write_text("\n".join(lines) + "\n")
                mtime += 1
                os.utime(part, (mtime, mtime))
                parts.append((part, src_dir / f"step-{s:04d}-{f}.json"))
            # A backlog's files appear back to back (all written first), so that a listing in
            # between, which would run a no-data batch inside the backlog, is as unlikely as it
            # can be.
            for part, final in parts:
                part.rename(final)
            for jt, q in queries.items():
                q.processAllAvailable()
                step_end[jt].append(max(got[jt]))
        print(f"spark: {time.monotonic() - t0:.1f}s for {len(wl['steps'])} steps")
        progress = {}
        for jt, q in queries.items():
            progress[jt] = {}
            for p in q.recentProgress:
                if "addBatch" in p["durationMs"]:  # a batch that ran, not an idle report
                    progress[jt].setdefault(p["batchId"], p)
    finally:
        for q in queries.values():
            q.stop()

    out = {}
    for jt in wl["types"]:
        batches, first = [], 0
        for s, end in enumerate(step_end[jt]):
            for b in range(first, end + 1):
                p = progress[jt].get(b)
                assert p is not None and p["stateOperators"], f"{jt}: no progress for batch {b}"
                batches.append({"step": s, "batch_id": b, "watermark_ms": watermark_ms(p),
                                "dropped": sum(o["numRowsDroppedByWatermark"] for o in p["stateOperators"]),
                                "rows": got[jt].get(b, [])})
            first = end + 1
        out[jt] = batches
    return out


def full_outer_expectation(wl: dict, batches: list[dict]) -> list[list]:
    """Spark's full outer rows per batch, with its (Lnull, Rnull) pairs turned into medallion's
    null-extended rows (spec §9.2), each in the first batch at or after its arrival whose state
    watermark evicts it."""
    info = {}  # id -> (side, t_us, (step, file)) of the null-key rows
    for s, step in enumerate(wl["steps"]):
        for f, fl in enumerate(step_files(step)):
            for sd in ("left", "right"):
                for i, k, t in fl[sd]:
                    if k is None:
                        info[i] = (sd, t, (s, f))
    # Each batch's place: (step, index within the step); file f of a step is its batch f.
    place, prev, j = [], None, 0
    for b in batches:
        j = j + 1 if b["step"] == prev else 0
        prev = b["step"]
        place.append((b["step"], j))
    paired = set()
    rows = []
    for b in batches:
        keep = []
        for lid, rid in b["rows"]:
            if lid in info and rid in info:
                paired.update((lid, rid))
            else:
                keep.append((lid, rid))
        rows.append(keep)
    lower_ms, upper_ms = wl["lower_us"] // 1000, wl["upper_us"] // 1000
    for i in sorted(paired):
        sd, t, arrival = info[i]
        for n, b in enumerate(batches):
            if place[n] < arrival:
                continue
            w = b["watermark_ms"]
            state_wm = w - upper_ms - 1 if sd == "left" else w + lower_ms - 1
            if t <= state_wm * 1000:
                rows[n].append((i, None) if sd == "left" else (None, i))
                break
    return rows


def describe(wl: dict, jt: str, ours: list[dict], theirs: list[dict]) -> str:
    lines = [f"join type {jt}, workload {json.dumps({k: v for k, v in wl.items() if k != 'types'})}"]
    for o, t in zip(ours, theirs):
        lines.append(f"  step {t['step']} batch {t['batch_id']}: W spark {t['watermark_ms']} ours "
                     f"{o['watermark_ms']}; dropped spark {t['dropped']} ours {o['dropped']}; rows "
                     f"spark {sorted(t['rows'], key=str)} ours {sorted(map(tuple, o['rows']), key=str)}")
    return "\n".join(lines)


def check(ours: dict, theirs: dict, wl: dict):
    for jt in wl["types"]:
        mine, spk = ours[jt], theirs[jt]
        msg = describe(wl, jt, mine, spk)
        assert [b["step"] for b in mine] == [b["step"] for b in spk], "batches per step differ\n" + msg
        expected = full_outer_expectation(wl, spk) if jt == "full_outer" else [b["rows"] for b in spk]
        for o, t, exp in zip(mine, spk, expected):
            where = f"{jt} step {t['step']} batch {t['batch_id']}"
            assert o["watermark_ms"] == t["watermark_ms"], f"{where}: watermark\n{msg}"
            assert o["dropped"] == t["dropped"], f"{where}: numRowsDroppedByWatermark\n{msg}"
            assert Counter(map(tuple, o["rows"])) == Counter(map(tuple, exp)), f"{where}: rows\n{msg}"


def null_key_workload() -> dict:
    """The smallest workload on which a host that feeds every row to the watermark disagrees with
    Spark (found by the randomized test): null-key rows at 100 s on both sides (see
    test_join_null_key_watermark)."""
    s = 1_000_000
    return {"types": TYPES, "lower_us": -5 * s, "upper_us": 5 * s, "left_delay_ms": 10_000,
            "right_delay_ms": 10_000, "steps": [
                {"left": [[1, 1, 20 * s], [2, None, 100 * s]], "right": [[3, 1, 20 * s], [4, None, 100 * s]]},
                {"left": [[5, 1, 50 * s]], "right": [[6, 1, 50 * s]]}]}


def one_side_empty_first_workload() -> dict:
    """Seed 1 of the jv1 shape with the first two steps' right rows removed, each of those steps
    one file (see test_join_one_side_empty_first)."""
    wl = workload(1, "jv1")
    for st in wl["steps"][:2]:
        left = [r for fl in step_files(st) for r in fl["left"]]
        st.clear()
        st.update({"left": left, "right": []})
    return wl


def workload_name(item) -> str:
    """The workload a test of this module runs: <shape>-<seed> for the randomized test, its own
    name for the others."""
    params = getattr(item, "callspec", None)
    if item.originalname == "test_join_differential":
        return f"{params.params['shape']}-{params.params['seed']}"
    return item.originalname


def workload_of(name: str) -> dict:
    if name == "test_join_null_key_watermark":
        return null_key_workload()
    if name == "test_join_one_side_empty_first":
        return one_side_empty_first_workload()
    shape, seed = name.rsplit("-", 1)
    return workload(int(seed), shape)


def run_both(spark, joindiff_bin: Path, tmp: Path, wl: dict):
    ours = medallion_batches(joindiff_bin, wl)
    tmp.mkdir(parents=True)
    return ours, spark_batches(spark, tmp, wl)


@pytest.fixture(scope="module")
def runs(request, spark, joindiff_bin, tmp_path_factory) -> dict[str, tuple | BaseException]:
    """{workload name: (workload, medallion's batches, Spark's batches)} for the workloads of the
    tests selected in this module, or the exception its run raised. Spark runs them all at once,
    each workload its own queries on the one session: a workload's run mostly waits on Spark's
    per-batch latency (planning, state commits, the trigger loop), so side by side they take
    little longer than the longest alone. Each query has its own source directory, checkpoint
    and sink, so the runs cannot see each other's rows or batches."""
    from concurrent.futures import ThreadPoolExecutor

    names = sorted({workload_name(item) for item in request.session.items
                    if item.module is request.module})
    root = tmp_path_factory.mktemp("joindiff")
    conf = spark.conf
    saved = {k: conf.get(k) for k in ("spark.sql.shuffle.partitions",
                                      "spark.sql.streaming.numRecentProgressUpdates")}
    # One state partition per operator: the answer does not depend on it, the run time does. And
    # room for every progress report of a long run on a loaded machine (idle ones included).
    conf.set("spark.sql.shuffle.partitions", "1")
    conf.set("spark.sql.streaming.numRecentProgressUpdates", "10000")
    out: dict[str, tuple | BaseException] = {}
    try:
        # Five at a time: every workload of the default run; more seeds queue behind them.
        with ThreadPoolExecutor(max_workers=5) as pool:
            futures = {n: (wl, pool.submit(run_both, spark, joindiff_bin, root / n, wl))
                       for n in names for wl in [workload_of(n)]}
            for n, (wl, fut) in futures.items():
                try:
                    out[n] = (wl, *fut.result())
                except Exception as err:  # noqa: BLE001 - re-raised by the workload's test
                    out[n] = err
    finally:
        for k, v in saved.items():
            conf.set(k, v)
    return out


def run_of(runs: dict, request) -> tuple[dict, dict, dict]:
    """(workload, ours, theirs) of the calling test's workload, or its run's error."""
    name = workload_name(request.node)
    got = runs[name]
    if isinstance(got, BaseException):
        raise AssertionError(f"workload {name}: {type(got).__name__}: {got}") from got
    return got


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_join_differential(runs, request, seed, shape):
    wl, ours, theirs = run_of(runs, request)
    # The workload must exercise what it is meant to: late rows, null keys, no-data batches,
    # null-extended rows.
    assert sum(b["dropped"] for b in theirs["full_outer"]) > 0, "no late row in the workload"
    assert any(k is None for st in wl["steps"] for fl in step_files(st) for sd in ("left", "right")
               for _, k, _ in fl[sd])
    assert len(theirs["inner"]) > len(wl["steps"]), "no no-data batch in the workload"
    assert any(None in r for b in theirs["full_outer"] for r in b["rows"]), "no null-extended row"
    check(ours, theirs, wl)


def test_join_null_key_watermark(runs, request):
    """The smallest workload on which a host that feeds every row to the watermark disagrees with
    Spark (found by the randomized test): null-key rows at 100 s on both sides. Spark's inferred
    `key IS NOT NULL` filter runs below withWatermark on a side the join does not preserve, so for
    inner and left_semi W stays 10 s and step 2's rows at 50 s are joined; for full_outer both
    nodes see the null rows, W becomes 90 s and they are late (join.Watermarks.ObserveInput)."""
    wl, ours, theirs = run_of(runs, request)
    # The oracle of the vector, from the rule above; then batch by batch against Spark.
    assert [b["watermark_ms"] for b in theirs["inner"]] == [0, 10_000, 10_000, 40_000]
    assert [b["watermark_ms"] for b in theirs["full_outer"]] == [0, 90_000, 90_000]
    assert theirs["inner"][2]["rows"] == [(5, 6)]
    assert theirs["full_outer"][2]["dropped"] == 2
    check(ours, theirs, wl)


def test_join_one_side_empty_first(runs, request):
    """The right input has no row in the first two steps (issue 30, item 9): Spark runs a data
    micro-batch for each step's left rows all the same, and since the right node has never had a
    row it counts 0 (spec §2.2), the global watermark stays 0 and no no-data batch follows. The
    workload is seed 1 of the jv1 shape with the first two steps' right rows removed (each step
    one file, so every step is one batch)."""
    wl, ours, theirs = run_of(runs, request)
    for jt in wl["types"]:
        first = theirs[jt][:2]
        assert [(b["step"], b["batch_id"], b["watermark_ms"]) for b in first] == [(0, 0, 0), (1, 1, 0)], \
            f"{jt}: Spark's first batches {first}"
    check(ours, theirs, wl)
