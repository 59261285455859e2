"""Table paths with characters that URLs treat specially (issue 30, item 9: '%').

A gold table whose path holds `%41` was written fine and read by Spark, but delta-rs took the
`%41` for an escaped "A", looked for the log elsewhere and could not open it. medallion now
refuses `%` in table paths at config load, naming the key. Every other character tried here
(space, `#`, `?`, `+`, `{}`, `^`) is kept, and delta-rs and DuckDB open those tables by path:
bronze with as many rows as `medallion gen` wrote JSON lines, gold with the rows medallion's own
scan reads (and DuckDB with delta-rs' gold rows).
"""

from __future__ import annotations

import json
import subprocess

import pytest

from interop_engines import read_duckdb, read_medallion, run_medallion

pytestmark = pytest.mark.needs_medallion

CONFIG = """
lake: {lake}
schema:
  - {{name: event_id,   type: string, required: true}}
  - {{name: event_time, type: timestamp, required: true}}
tables: {{bronze: "bronze/{name}", rejects: bronze/rejects, silver: silver/events}}
stream: {{watermark: 10m, dedup: [event_id]}}
gold:
  - name: g5
    table: "gold/{name}"
    window: {{type: tumbling, size: 5m}}
    aggregates: [{{fn: count, as: count}}]
"""


@pytest.mark.parametrize("name", ["sp ace", "hash#x", "q?x", "plus+x", "br{x}", "caret^x"])
def test_table_path_with_url_characters_opens_in_delta_rs(tmp_path, medallion_bin, deltalake, duckdb,
                                                          name):
    lake = tmp_path / "lake"
    config = tmp_path / "pipeline.yaml"
    config.write_text(CONFIG.format(lake=lake, name=name))
    gen = json.loads(run_medallion(medallion_bin, "gen", "--config", str(config), "--events", "3000",
                                   "--files", "1", "--start", "2024-05-01T00:00:00Z"))
    run_medallion(medallion_bin, "run", "ingest", "--config", str(config))
    run_medallion(medallion_bin, "run", "stream", "--config", str(config))
    # Every generated line that is a JSON object is a bronze row (gen counts what it wrote).
    objects = gen["lines"] - gen["invalid_json"] - gen["truncated"] - gen["garbage"]
    bronze = lake / "bronze" / name
    assert deltalake.DeltaTable(str(bronze)).to_pyarrow_table().num_rows == objects
    gold = lake / "gold" / name
    rows = deltalake.DeltaTable(str(gold)).to_pyarrow_table().to_pylist()
    assert rows, f"gold/{name}: no window closed: the test reads nothing"
    ours = read_medallion(medallion_bin, gold)
    assert len(ours) == len(rows) and sum(r["count"] for r in ours) == sum(r["count"] for r in rows)
    assert len(read_duckdb(duckdb, bronze)) == objects, f"DuckDB reading bronze/{name}"
    key = lambda r: json.dumps(r, sort_keys=True, default=str)  # noqa: E731
    assert sorted(map(key, read_duckdb(duckdb, gold))) == sorted(map(key, rows)), f"DuckDB reading gold/{name}"


def test_percent_in_table_path_is_refused(tmp_path, medallion_bin):
    config = tmp_path / "pipeline.yaml"
    config.write_text(CONFIG.format(lake=tmp_path / "lake", name="pct%41"))
    proc = subprocess.run([str(medallion_bin), "run", "ingest", "--config", str(config)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "gold[0].table" in proc.stderr and "'%' is not allowed" in proc.stderr, proc.stderr
