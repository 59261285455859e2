"""Derived tables (issue 33): a three-level rollup (5m -> 1h -> 1d) that medallion keeps from
the change feed of the level above, after ingest, stream and merge-late on a late-data workload.
Spark (delta-spark) and delta-rs read every level, and each level equals a polars group-by of
all of silver at its grain over the windows the watermark closed: counts exactly, and the float
sums bit for bit against math.fsum (the correctly rounded sum, which medallion's exact sums
give whatever the order of the additions). The oracle is computed here from silver alone.
"""

from __future__ import annotations

import json
import math
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from interop_engines import run_medallion

pytestmark = pytest.mark.needs_medallion

CONFIG = """lake: {lake}
schema:
  - {{name: event_id,   type: string, required: true}}
  - {{name: event_type, type: string}}
  - {{name: amount,     type: double}}
  - {{name: event_time, type: timestamp, required: true}}
landing: {{max_files_per_trigger: 1}}
stream: {{watermark: 1m, dedup: [event_id], max_files_per_trigger: 1}}
gold:
  - name: g5
    window: {{type: tumbling, size: 5m}}
    group_by: [event_type]
    aggregates: [{{fn: count, as: count}}, {{fn: sum, column: amount, as: total}}]
  - name: g1h
    source: g5
    window: {{type: tumbling, size: 1h}}
    group_by: [event_type]
    aggregates: [{{fn: sum, column: count, as: count}}, {{fn: sum, column: total, as: total}}]
  - name: g1d
    source: g1h
    window: {{type: tumbling, size: 1d}}
    aggregates: [{{fn: count, column: count, as: count}}, {{fn: sum, column: total, as: total}}]
"""

LEVELS = {"g5": ("5m", ["event_type"]), "g1h": ("1h", ["event_type"]), "g1d": ("1d", [])}


def landing_objects() -> list[list[dict]]:
    """Three landing objects, ingested and streamed one per micro-batch: two days of events,
    then six hours of the third day (the watermark passes the second day's end), then events of
    the first two days delivered late (quarantined, folded in by merge-late, and reaching the
    hourly and daily levels only as corrections)."""
    rng = random.Random(33)
    base = datetime(2024, 5, 1, tzinfo=timezone.utc)

    def events(n, lo_s, hi_s, tag):
        out = []
        for i in range(n):
            t = base + timedelta(seconds=rng.uniform(lo_s, hi_s))
            out.append({"event_id": f"{tag}-{i}",
                        "event_type": rng.choice(["click", "view", "buy", None]),
                        "amount": None if rng.random() < 0.05 else round(rng.uniform(-50, 500), 2),
                        "event_time": t.isoformat().replace("+00:00", "Z")})
        return out

    return [events(3000, 0, 2 * 86400, "a"), events(600, 2 * 86400, 2 * 86400 + 6 * 3600, "b"),
            events(500, 0, 2 * 86400, "late")]


@pytest.fixture(scope="module")
def derived_lake(tmp_path_factory, medallion_bin) -> tuple[Path, int]:
    """The lake after ingest, stream and merge-late, and the watermark (ms) the derived tables
    were kept to."""
    root = tmp_path_factory.mktemp("derived")
    lake = root / "lake"
    cfg = root / "pipeline.yaml"
    cfg.write_text(CONFIG.format(lake=lake))
    landing = lake / "landing" / "events"
    landing.mkdir(parents=True)
    for i, objs in enumerate(landing_objects()):
        (landing / f"part-{i:03d}.json").write_text("".join(json.dumps(o) + "\n" for o in objs))
    for job in ("ingest", "stream", "merge-late"):
        out = run_medallion(medallion_bin, "run", job, "--config", str(cfg))
    summary = json.loads(out.strip().splitlines()[-1])["result"]
    assert summary["lateRows"] > 0, f"merge-late folded no late row: {summary}"
    derived = summary["derived"]
    assert [d["name"] for d in derived] == ["g1h", "g1d"], derived
    return lake, derived[0]["watermarkMs"]


def micros(v) -> int:
    if isinstance(v, datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=timezone.utc)
        return int(v.timestamp()) * 1_000_000 + v.microsecond
    return int(v)


def as_rows(records, keys) -> dict:
    """{(window start µs, keys...): (count, total)} of a gold table's rows."""
    out = {}
    for r in records:
        k = (micros(r["window"]["start"]), *(r[c] for c in keys))
        assert k not in out, f"window {k} twice"
        out[k] = (int(r["count"]), r["total"])
    return out


def oracle(lake: Path, every: str, keys: list[str], wm_ms: int, polars) -> dict:
    """polars over silver: per window of `every` (and keys), the count and the exact sum."""
    from deltalake import DeltaTable

    pl = polars
    silver = pl.from_arrow(DeltaTable(str(lake / "silver" / "events")).to_pyarrow_table(
        columns=["event_type", "amount", "event_time"]))
    g = (silver.with_columns(pl.col("event_time").dt.truncate(every).alias("start"))
         .group_by(["start", *keys])
         .agg(pl.len().alias("count"), pl.col("amount").drop_nulls().alias("amounts")))
    size_us = {"5m": 300, "1h": 3600, "1d": 86400}[every] * 1_000_000
    out = {}
    for r in g.iter_rows(named=True):
        start = micros(r["start"])
        if start + size_us > wm_ms * 1000:
            continue
        total = math.fsum(r["amounts"]) + 0.0 if r["amounts"] else None
        out[(start, *(r[c] for c in keys))] = (r["count"], total)
    return out


def check_level(name: str, got: dict, want: dict) -> None:
    assert want, f"{name}: the workload closes no window at this grain"
    missing = sorted(set(want) - set(got), key=str)[:5]
    extra = sorted(set(got) - set(want), key=str)[:5]
    wrong = [(k, got[k], want[k]) for k in sorted(set(got) & set(want), key=str) if got[k] != want[k]][:5]
    assert not (missing or extra or wrong), f"{name}: missing {missing}, unexpected {extra}, differ {wrong}"


def test_every_level_equals_polars_batch(derived_lake, spark, deltalake, polars):
    lake, wm = derived_lake
    for name, (every, keys) in LEVELS.items():
        path = lake / "gold" / name
        want = oracle(lake, every, keys, wm, polars)
        spark_rows = [r.asDict(recursive=True) for r in spark.read.format("delta").load(str(path)).collect()]
        check_level(f"{name} read by Spark", as_rows(spark_rows, keys), want)
        rs_rows = deltalake.DeltaTable(str(path)).to_pyarrow_table().to_pylist()
        check_level(f"{name} read by delta-rs", as_rows(rs_rows, keys), want)
    late_rows = sum(r["late_rows"] for r in deltalake.DeltaTable(str(lake / "gold" / "g1d")).to_pyarrow_table().to_pylist())
    assert late_rows > 0, "no late row reached the daily level: the workload does not exercise corrections"
