"""Type widening (issue 30): `qty` goes from integer to long in `schema:`.

Without `schema_evolution.type_widening` medallion refuses the change at start (a table with
the typeWidening reader feature can no longer be read by delta-rs 1.6 nor Polars). With it, the
real CLI widens bronze, silver and the quarantine in place (Delta's typeWidening feature), and
this test records which readers read the result: Spark (delta-spark 3.3.2) must read every row
with the right values, delta-rs and Polars are expected to refuse the feature (asserted, so
docs/schema-evolution.md stays true when a new delta-rs learns it). Spark 3.3.2 knows the
feature but reads only Delta 3.3's preview set of changes (short -> int reads, int -> long is
refused: "upgrade to Delta 4.0"); both are asserted. The oracle is the landing lines
(json.loads), not medallion.

A table that Spark widened itself (ALTER COLUMN ... TYPE, the typeWidening-preview feature of
Delta 3.3) is read by `medallion table scan` at the new type.
"""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from interop_engines import read_deltars, read_medallion, read_polars, read_spark, run_medallion

pytestmark = pytest.mark.needs_medallion

SCHEMA = ("schema:\n"
          "  - {name: event_id,   type: string, required: true}\n"
          "  - {name: event_type, type: string}\n"
          "  - {name: amount,     type: double}\n"
          "  - {name: event_time, type: timestamp, required: true}\n"
          "  - {name: qty,        type: %s}\n")


def pipeline(lake: Path, qty_type: str, opt_in: bool) -> str:
    return (f"lake: {lake}\n"
            "landing: {path: landing/events/, format: json}\n"
            + ("schema_evolution: {type_widening: true}\n" if opt_in else "")
            + SCHEMA % qty_type +
            "stream: {name: events, watermark: 2m, dedup: [event_id], trigger: available-now}\n"
            "gold:\n"
            "  - name: t5m\n"
            "    window: {type: tumbling, size: 5m}\n"
            "    group_by: [event_type]\n"
            "    aggregates: [{fn: count, as: count}]\n")


WIDENED = ["bronze/events", "silver/events", "silver/late_t5m"]


def land(landing: Path, name: str, rows: list[tuple[str, datetime, int]]):
    landing.mkdir(parents=True, exist_ok=True)
    (landing / name).write_text("".join(json.dumps({
        "event_id": eid, "event_type": "w", "amount": 1.0,
        "event_time": at.strftime("%Y-%m-%dT%H:%M:%SZ"), "qty": qty}) + "\n" for eid, at, qty in rows))


def oracle(landing: Path) -> dict[str, int]:
    out = {}
    for f in sorted(landing.glob("*.json")):
        for line in f.read_text().splitlines():
            row = json.loads(line)
            out.setdefault(row["event_id"], row["qty"])
    return out


# (old type, new type, whether delta-spark 3.3.2 reads the result, values before, values after).
# Delta 3.3 reads only its preview set of type changes (byte -> short -> int); any other
# (int -> long, float -> double, ...) it refuses with DELTA_UNSUPPORTED_TYPE_CHANGE_IN_PREVIEW
# ("upgrade to Delta 4.0"), found by running this test.
CASES = [
    ("short", "integer", True, [7, 32767, -5, -32768], [2147483647, -2147483648]),
    ("integer", "long", False, [7, 2147483647, -5, -2147483648], [1 << 40, -(1 << 40)]),
]


@pytest.mark.parametrize("old,new,spark_reads,before,after", CASES, ids=[f"{c[0]}_to_{c[1]}" for c in CASES])
def test_type_widening_readers(tmp_path, medallion_bin, spark, deltalake, polars, old, new, spark_reads, before, after):
    lake = tmp_path / "lake"
    landing = lake / "landing" / "events"
    cfg = tmp_path / "pipeline.yaml"

    def med(*args, check=True):
        cmd = [str(medallion_bin), *args, "--config", str(cfg)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-4000:]}")
        return proc

    t0 = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(minutes=30)
    cfg.write_text(pipeline(lake, old, False))
    land(landing, "a.json", [("a1", t0, before[0]), ("a2", t0 + timedelta(seconds=1), before[1])])
    med("run", "ingest"); med("run", "stream")
    land(landing, "b.json", [("b1", t0 + timedelta(minutes=10), before[2])])
    med("run", "ingest"); med("run", "stream")
    land(landing, "c.json", [("c1", t0 + timedelta(seconds=5), before[3])])  # late: to the quarantine
    med("run", "ingest"); med("run", "stream")

    # Default: refused at start, saying why and how to opt in.
    cfg.write_text(pipeline(lake, new, False))
    proc = med("run", "ingest", check=False)
    assert proc.returncode != 0, "a widening without the opt-in was applied"
    for w in (f"column qty changed from {{type: {old}}} to {{type: {new}}}", "delta-rs 1.6", "type_widening: true"):
        assert w in proc.stderr, f"ingest's refusal does not say {w!r}:\n{proc.stderr}"

    cfg.write_text(pipeline(lake, new, True))
    land(landing, "d.json", [("d1", t0 + timedelta(minutes=11), after[0])])
    med("run", "ingest"); med("run", "stream")
    land(landing, "e.json", [("e1", t0 + timedelta(seconds=6), after[1])])  # late
    med("run", "ingest"); med("run", "stream")
    med("run", "merge-late")

    want = oracle(landing)
    for name in WIDENED:
        path = lake / name
        # Our own reader reads every row at the new type.
        ours = {r["event_id"]: r["qty"] for r in read_medallion(medallion_bin, path)}
        for eid, qty in ours.items():
            assert qty == want[eid], f"medallion: {name}: {eid} qty {qty!r}, want {want[eid]!r}"
        assert set(ours) >= {"c1", "e1"} if name == "silver/late_t5m" else set(ours) == set(want), \
            f"medallion: {name}: rows {sorted(ours)}"
        # delta-rs 1.6 and Polars refuse the reader feature: the documented limitation.
        with pytest.raises(Exception, match="(?i)typewidening"):
            read_deltars(path)
        with pytest.raises(Exception, match="(?i)typewidening"):
            read_polars(path)
        if not spark_reads:
            with pytest.raises(Exception, match="DELTA_UNSUPPORTED_TYPE_CHANGE_IN_PREVIEW"):
                read_spark(spark, path)
            continue
        rows = read_spark(spark, path)
        got = {r["event_id"]: r["qty"] for r in rows}
        assert got, f"Spark read no rows of {name}"
        for eid, qty in got.items():
            assert qty == want[eid], f"Spark: {name}: {eid} qty {qty!r}, want {want[eid]!r}"
        assert set(got) >= {"c1", "e1"} if name == "silver/late_t5m" else set(got) == set(want), \
            f"Spark: {name}: rows {sorted(got)}"
        field = spark.read.format("delta").load(str(path)).schema["qty"]
        assert field.dataType.typeName() == new, f"Spark: {name}: qty is {field.dataType}"


def test_spark_widened_table_read_by_medallion(tmp_path, medallion_bin, spark):
    """Spark widens a column itself (ALTER COLUMN TYPE under delta.enableTypeWidening); the
    files written before keep INT32 and medallion reads every row at the new type."""
    path = tmp_path / "spark_widened"
    spark.sql(f"CREATE TABLE delta.`{path}` (id STRING, n SMALLINT) USING delta "
              "TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES ('a', 32767), ('b', -3)")
    spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN n TYPE INT")  # Delta 3.3 widens byte/short only
    spark.sql(f"INSERT INTO delta.`{path}` VALUES ('c', 2147483647)")
    log = [json.loads(line) for f in sorted((path / "_delta_log").glob("*.json"))
           for line in f.read_text().splitlines()]
    features = {f for a in log if "protocol" in a for f in a["protocol"].get("readerFeatures", [])}
    assert any(f.startswith("typeWidening") for f in features), f"Spark's protocol: {features}"
    got = {r["id"]: r["n"] for r in read_medallion(medallion_bin, path)}
    assert got == {"a": 32767, "b": -3, "c": 2147483647}, got
