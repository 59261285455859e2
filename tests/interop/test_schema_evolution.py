"""A schema evolved mid-stream (issue 30): every table stays readable by Spark, delta-rs and
Polars before and after, and the added column holds what the landing files say.

The real CLI runs the whole loop on a local lake: init, gen, ingest, stream, merge-late, replay;
then `country` is added to `schema:`, rows that carry it land, the loop runs again, and
`run backfill-columns` moves the values that older rows kept in _rescued_data into the column.
The oracle is computed here from the landing lines (json.loads), not by medallion: a row's
country is its line's "country" when that is a string, and null otherwise (a number stays
rescued, as ingest would leave it). Each step's tables are read by every engine, which must
agree on every table's rows; the oracle checks delta-rs' rows and DuckDB's each.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from interop_engines import (deltars_history, read_deltars, read_duckdb, read_polars, read_spark,
                             run_medallion)

pytestmark = pytest.mark.needs_medallion

SCHEMA = ("schema:\n"
          "  - {name: event_id,   type: string, required: true}\n"
          "  - {name: event_type, type: string}\n"
          "  - {name: amount,     type: double}\n"
          "  - {name: event_time, type: timestamp, required: true}\n")
COUNTRY = "  - {name: country,    type: string}\n"


def pipeline(lake: Path, schema: str) -> str:
    return (f"lake: {lake}\n"
            "landing: {path: landing/events/, format: json}\n"
            + schema +
            "stream: {name: events, watermark: 2m, dedup: [event_id], trigger: available-now}\n"
            "gold:\n"
            "  - name: t5m\n"
            "    window: {type: tumbling, size: 5m}\n"
            "    group_by: [event_type]\n"
            "    aggregates: [{fn: count, as: count}, {fn: sum, column: amount, as: total}]\n")


TABLES = ["bronze/events", "bronze/rejects", "silver/events", "silver/late_t5m", "gold/t5m"]


def lines(ids_countries: list[tuple[str, object]], at: datetime) -> str:
    out = []
    for i, (eid, country) in enumerate(ids_countries):
        row = {"event_id": eid, "event_type": "evo", "amount": 1.5,
               "event_time": (at + timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")}
        if country is not ...:
            row["country"] = country
        out.append(json.dumps(row))
    return "\n".join(out) + "\n"


def oracle(landing: Path) -> dict[tuple[str, str], object]:
    """(landing file name, event_id) -> the country its first line in that file gives (a
    string), or None."""
    want: dict[tuple[str, str], object] = {}
    for f in sorted(landing.glob("*.json")):
        for line in f.read_text().splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if not isinstance(row, dict) or not isinstance(row.get("event_id"), str):
                continue
            c = row.get("country")
            want.setdefault((f.name, row["event_id"]), c if isinstance(c, str) else None)
    return want


def canon(rows: list[dict]) -> list[str]:
    def norm(v):
        if isinstance(v, datetime):
            return (v if v.tzinfo else v.replace(tzinfo=timezone.utc)).astimezone(timezone.utc).isoformat()
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        if isinstance(v, float):
            return repr(v)
        if isinstance(v, (bytes, bytearray, memoryview)):
            return bytes(v).hex()  # delta-rs gives bytes, Spark bytearray: the same binary value
        return v
    return sorted(json.dumps({k: norm(v) for k, v in r.items()}, sort_keys=True, default=str) for r in rows)


def read_all(spark, duckdb, lake: Path, step: str) -> dict[str, dict[str, list[dict]]]:
    """Every table with delta-rs, Spark, Polars and DuckDB; they must agree row for row. Returns
    {reader: {table: rows}} for delta-rs and DuckDB, each of which the oracle then checks."""
    out: dict[str, dict[str, list[dict]]] = {"delta-rs": {}, "DuckDB": {}}
    for name in TABLES:
        path = lake / name
        if not (path / "_delta_log").is_dir():
            continue
        rs = read_deltars(path)
        sp = read_spark(spark, path)
        pl = read_polars(path)
        dk = read_duckdb(duckdb, path)
        assert canon(rs) == canon(sp), f"{step}: {name}: delta-rs and Spark read different rows"
        assert canon(dk) == canon(sp), f"{step}: {name}: DuckDB and Spark read different rows"
        assert len(pl) == len(rs), f"{step}: {name}: Polars read {len(pl)} rows, delta-rs {len(rs)}"
        out["delta-rs"][name], out["DuckDB"][name] = rs, dk
    return out


def check_country(tables: dict[str, list[dict]], want: dict[tuple[str, str], object], step: str,
                  evolved: bool, backfilled: bool, files_before: set[str]):
    """Every bronze and silver row against the oracle of its own landing line (its
    _source_file and event_id): rows of files ingested before the column existed keep the value
    rescued until the backfill moves it."""
    for name in ("bronze/events", "silver/events"):
        rows = tables[name]
        assert rows, f"{step}: {name} is empty"
        for r in rows:
            f = r["_source_file"].rsplit("/", 1)[-1]
            key = (f, r["event_id"])
            assert key in want, f"{step}: {name}: row {key} is in no landing file"
            if not evolved:
                assert "country" not in r, f"{step}: {name} has country before the config does"
                continue
            got, rescued = r["country"], r["_rescued_data"]
            if f in files_before and not backfilled:
                assert got is None, f"{step}: {name}: {key} country {got!r} before the backfill"
                if want[key] is not None:
                    assert rescued and json.loads(rescued).get("country") == want[key], \
                        f"{step}: {name}: {key} rescued {rescued!r} lost {want[key]!r}"
                continue
            assert got == want[key], f"{step}: {name}: {key} country {got!r}, want {want[key]!r}"
            if got is not None:
                assert not rescued or "country" not in json.loads(rescued), \
                    f"{step}: {name}: {key} has country both in the column and in {rescued!r}"


def test_schema_evolves_mid_stream(tmp_path, medallion_bin, spark, deltalake, polars, duckdb):
    lake = tmp_path / "lake"
    landing = lake / "landing" / "events"
    cfg = tmp_path / "pipeline.yaml"
    cfg.write_text(pipeline(lake, SCHEMA))

    def med(*args):
        return run_medallion(medallion_bin, *args, "--config", str(cfg), timeout=300)

    def loop():
        med("run", "ingest")
        med("run", "stream")
        med("run", "merge-late")
        med("run", "replay", "--since", "24h")

    now = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(minutes=30)
    med("init")
    med("gen", "--events", "600", "--seed", "7", "--files", "3", "--start", "now")
    before = [("evo-b1", "FR"), ("evo-b2", 5), ("evo-b3", ...), ("evo-b4", "IT")]
    landing.mkdir(parents=True, exist_ok=True)
    (landing / "zz-before.json").write_text(lines(before, now))
    loop()
    want = oracle(landing)
    files_before = {f for f, _ in want}  # every file so far was ingested without the column
    for reader, tables in read_all(spark, duckdb, lake, "before").items():
        check_country(tables, want, f"before ({reader})", False, False, files_before)

    cfg.write_text(pipeline(lake, SCHEMA + COUNTRY))
    after = [("evo-a1", "DE"), ("evo-a2", ...), ("evo-a3", "ES"), ("evo-b1", "XX")]  # b1 resent: a duplicate
    (landing / "zzz-after.json").write_text(lines(after, now + timedelta(minutes=1)))
    loop()
    want = oracle(landing)
    for reader, tables in read_all(spark, duckdb, lake, "evolved").items():
        check_country(tables, want, f"evolved ({reader})", True, False, files_before)
        assert any(r["event_id"] == "evo-a1" and r["country"] == "DE" for r in tables["silver/events"]), reader
    ops = [op for _, op in deltars_history(lake / "bronze/events")]
    assert ops.count("ADD COLUMNS") == 1, f"bronze history {ops}"

    med("run", "backfill-columns")
    for reader, tables in read_all(spark, duckdb, lake, "backfilled").items():
        check_country(tables, want, f"backfilled ({reader})", True, True, files_before)
        silver = {r["event_id"]: r for r in tables["silver/events"]}
        assert silver["evo-b1"]["country"] == "FR" and silver["evo-b4"]["country"] == "IT", reader
        assert silver["evo-b2"]["country"] is None, reader
        assert json.loads(silver["evo-b2"]["_rescued_data"]) == {"country": 5}, reader
        for r in tables["silver/late_t5m"]:
            key = (r["_source_file"].rsplit("/", 1)[-1], r["event_id"])
            assert r["country"] == want[key], \
                f"{reader}: quarantine: {key} country {r['country']!r}, want {want[key]!r}"
    versions = {name: len(deltars_history(lake / name)) for name in TABLES}
    med("run", "backfill-columns")
    assert {name: len(deltars_history(lake / name)) for name in TABLES} == versions, "a second backfill committed"
    # The loop goes on over the backfilled tables.
    loop()
    read_all(spark, duckdb, lake, "after the backfill")
