"""Hostile landing bytes never make a table unreadable (issue 23, items 2 and 3).

Polars and pyarrow refuse a whole table when one string cell is not valid UTF-8. This writes a
landing set with bytes that are not UTF-8 in JSON lines, CSV fields, CSV header names, rescued
fields and an object key, plus lines and CSV records over `landing.max_line_bytes` and a CSV
quoted field never closed (written from Python, next to `medallion gen`'s objects), runs
`medallion run ingest` and `medallion run stream`, and reads every table of the lake with Polars,
with DuckDB (delta_scan, every row) and with pyarrow (every data file, every column).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from interop_engines import read_duckdb, run_medallion

pytestmark = pytest.mark.needs_medallion

TS = b"2024-05-01T12:07:00Z"

CONFIG = """
lake: {lake}
landing: {{path: landing/events/, format: {fmt}, max_line_bytes: 4KiB}}
schema:
  - {{name: event_id,   type: string, required: true}}
  - {{name: event_type, type: string}}
  - {{name: amount,     type: double}}
  - {{name: event_time, type: timestamp, required: true}}
tables: {{bronze: bronze/events, rejects: bronze/rejects, silver: silver/events}}
stream: {{name: events, event_time: event_time, watermark: 10m, dedup: [event_id], max_future_skew: 100000h}}
gold:
  - name: events_5m
    window: {{type: tumbling, size: 5m}}
    group_by: [event_type]
    aggregates: [{{fn: count, as: count}}]
    output_mode: append
"""

HOSTILE = {
    "json": {
        b"zz-hostile.json":
            b'{"event_id":"h\xff1","event_time":"' + TS + b'"}\n'
            b'{"event_id":"h2","ex\xfetra":1,"event_time":"' + TS + b'"}\n'
            b'{"event_id":"h3","event_type":"t","extra":"ok","event_time":"' + TS + b'"}\n'
            b'\xc3\xc3\n',
        b"zz-bad\xffkey.json":
            b'{"event_id":"h4","event_type":"t","event_time":"' + TS + b'"}\n{"event_id":\n',
        b"zz-long.json": b'{"event_id":"h5","event_type":"' + "é".encode() * 5000 + b'"}\n',
    },
    "csv": {
        b"zz-hostile.csv":
            b"event_id,ex\xfftra,event_time,amount,event_type\n"
            b"h1,x," + TS + b",1,t\n"
            b"h2,y\xfe," + TS + b",2,t\n"
            b"h3,z," + TS + b",not\xc0number,t\n"
            b"h4,w," + TS + b",3,t,\xe2\x82\n"
            b"h\xff5,v," + TS + b",4,t\n"
            b"h6,v," + TS + b",4,t\xff\n",
        b"zz-bad\xc0key.csv": b"event_id,event_time,event_type\nh7," + TS + b",t\n\"h8\"x\n",
        # Item 3: a record over max_line_bytes (its text cut inside a UTF-8 sequence), then a
        # quoted field never closed, which takes the rest of the object.
        b"zz-long.csv":
            b"event_id,event_time,event_type\nh9," + TS + b",\"" + "é".encode() * 5000 + b"\"\n"
            b"h10," + TS + b",t\nh11," + TS + b",\"open\nh12," + TS + b",t\n",
    },
}


def delta_tables_under(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.rglob("_delta_log") if p.is_dir())


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_hostile_utf8_tables_readable(tmp_path, medallion_bin, polars, deltalake, duckdb, fmt):
    import pyarrow.parquet as pq

    lake = tmp_path / "lake"
    config = tmp_path / "pipeline.yaml"
    config.write_text(CONFIG.format(lake=lake, fmt=fmt))
    run_medallion(medallion_bin, "gen", "--config", str(config), "--events", "200", "--files", "2",
                  "--start", "2024-05-01T12:00:00Z")
    landing = os.fsencode(lake / "landing" / "events")
    os.makedirs(landing, exist_ok=True)
    for name, data in HOSTILE[fmt].items():
        with open(os.path.join(landing, name), "wb") as f:
            f.write(data)

    ingest = json.loads(run_medallion(medallion_bin, "run", "ingest", "--config", str(config)).splitlines()[-1])
    run_medallion(medallion_bin, "run", "stream", "--config", str(config), timeout=600)

    tables = delta_tables_under(lake)
    names = [str(t.relative_to(lake)) for t in tables]
    for want in ("bronze/events", "bronze/rejects", "silver/events"):
        assert want in names, f"no {want} table: {names}"
    for path in tables:
        height = polars.read_delta(str(path)).height  # raises on a string cell that is not UTF-8
        assert len(read_duckdb(duckdb, path)) == height, f"{path}: DuckDB and Polars row counts"
        for uri in deltalake.DeltaTable(str(path)).file_uris():
            pq.read_table(uri.removeprefix("file://")).to_pylist()  # every cell, decoded
    # Nothing was dropped: every landing line is a bronze row or an ingest reject.
    stats = ingest["result"]
    assert stats["lines"] == stats["rows"] + stats["rejected"], stats
    by_reason = stats["rejectsByReason"]
    assert by_reason.get("invalid_utf8", 0) > 0 and by_reason.get("line_too_long", 0) > 0, stats
    if fmt == "csv":
        assert by_reason.get("unterminated_quote") == 1, stats
    rejects = polars.read_delta(str(lake / "bronze" / "rejects"))
    assert rejects.filter(polars.col("reason") == "invalid_utf8").height > 0
    bronze = polars.read_delta(str(lake / "bronze" / "events"))
    assert bronze.height + rejects.filter(polars.col("stage") == "ingest").height == stats["lines"]
    dk_bronze = read_duckdb(duckdb, lake / "bronze" / "events")
    dk_ingest_rejects = [r for r in read_duckdb(duckdb, lake / "bronze" / "rejects") if r["stage"] == "ingest"]
    assert len(dk_bronze) + len(dk_ingest_rejects) == stats["lines"], "DuckDB: bronze + ingest rejects"
    assert any(s.startswith('"') and "\\x" in s for s in bronze["_source_file"].to_list()), \
        "the key that is not UTF-8 is stored Go-quoted"
