"""The event log (docs/event-log.md) after `medallion demo`: a Delta table that delta-rs and
DuckDB read alike, with a run row for every job the demo ran and a batch row for every
micro-batch whose progress the checkpoints keep; and every SQL example of docs/event-log.md,
extracted from the doc, runs as written on DuckDB (delta_scan) and on Spark SQL."""

from __future__ import annotations

import glob
import importlib.util
import json
import re
from pathlib import Path

import pytest

from conftest import REPO_ROOT, require_module, unavailable

pytestmark = pytest.mark.needs_medallion

DOC = REPO_ROOT / "docs" / "event-log.md"
LOG = "lake/_medallion/event_log"


def readme_example() -> str:
    """The DuckDB example of the README's event log section."""
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## The event log\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```sql\n(.*?)^```$", section, flags=re.S | re.M)
    assert len(blocks) == 1, f"the README's event log section has {len(blocks)} sql blocks"
    return blocks[0]


def doc_examples(dialect: str) -> list[str]:
    """The doc's ```sql <dialect> blocks, in order."""
    text = DOC.read_text(encoding="utf-8")
    return re.findall(r"^```sql " + dialect + r"\n(.*?)^```$", text, flags=re.S | re.M)


def duckdb_connect():
    """DuckDB with the Delta extension the duckdb-ext-delta package ships (no download): the
    package installs duckdb_ext/extensions/v<duckdb>/<platform>/delta.duckdb_extension, loaded
    with allow_unsigned_extensions."""
    duckdb = require_module("duckdb")
    spec = importlib.util.find_spec("duckdb_ext")
    if spec is None or not spec.submodule_search_locations:
        unavailable("duckdb-ext-delta", "the duckdb_ext package is not installed")
    files = sorted(f for d in spec.submodule_search_locations
                   for f in glob.glob(str(Path(d) / "extensions" / f"v{duckdb.__version__}" / "*" / "delta.duckdb_extension")))
    assert files, f"duckdb-ext-delta ships no delta.duckdb_extension for DuckDB {duckdb.__version__} under {spec.submodule_search_locations}"
    con = duckdb.connect(config={"allow_unsigned_extensions": "true", "autoinstall_known_extensions": "false",
                                 "autoload_known_extensions": "false"})
    con.execute(f"LOAD '{files[0]}'")
    return con


@pytest.fixture
def demo_root(demo_lake) -> Path:
    """The directory holding the session's demo lake (conftest.demo_lake): the doc's examples
    name the table relative to it, as lake/_medallion/event_log."""
    return demo_lake.parent


def progress_oracle(lake: Path) -> set[tuple[str, int]]:
    """(query id, batch id) of every progress file the demo's checkpoints keep: read from the
    engine's own files, not from the event log."""
    out = set()
    for f in lake.glob("_checkpoints/**/progress/*.json"):
        p = json.loads(f.read_text())
        out.add((p["id"], p["batchId"]))
    return out


def test_event_log_has_every_job_and_batch(demo_root, deltalake):
    lake = demo_root / "lake"
    table = deltalake.DeltaTable(str(lake / "_medallion" / "event_log")).to_pyarrow_table()
    rows = table.to_pylist()
    assert len({r["event_id"] for r in rows}) == len(rows), "event_id is not unique"

    runs = [r for r in rows if r["event_type"] == "job_run"]
    assert all(r["outcome"] == "ok" and r["error"] is None for r in runs), runs
    jobs = {(r["job"], r["source"]) for r in runs}
    for want in [("ingest", None), ("stream", "events"), ("stream", "clicks"), ("merge-late", None)]:
        assert want in jobs, f"no run row for {want}: {sorted(jobs, key=str)}"

    batches = {(r["query_id"], r["batch_id"]) for r in rows if r["event_type"] == "batch"}
    oracle = progress_oracle(lake)
    assert oracle, "the demo's checkpoints keep no progress file"
    assert batches == oracle, f"batch rows {sorted(batches)} != progress files {sorted(oracle)}"
    late = sum(r["rows_late"] or 0 for r in rows if r["event_type"] == "batch")
    quarantined = sum(len(deltalake.DeltaTable(str(p)).to_pyarrow_table())
                      for p in lake.glob("silver/late_*") if (p / "_delta_log").is_dir())
    assert late == quarantined, f"batch rows_late add up to {late}, the quarantine tables hold {quarantined}"

    # DuckDB reads the same rows.
    con = duckdb_connect()
    got = con.execute(f"SELECT event_id, event_type, batch_id FROM delta_scan('{lake / '_medallion' / 'event_log'}')").fetchall()
    assert sorted(got, key=str) == sorted(((r["event_id"], r["event_type"], r["batch_id"]) for r in rows), key=str)


def test_doc_examples_run_on_duckdb(demo_root, monkeypatch):
    examples = doc_examples("duckdb")
    assert len(examples) >= 5, f"docs/event-log.md has {len(examples)} DuckDB examples"
    monkeypatch.chdir(demo_root)  # the examples name the table as lake/_medallion/event_log
    con = duckdb_connect()
    # As Arrow: DuckDB's Python rows would need pytz for timestamps with a time zone.
    results = [con.execute(sql).fetch_arrow_table() for sql in examples]
    # The oracle for two of them: the demo's batches quarantined late rows today, and its jobs
    # succeeded.
    assert results[0].num_rows > 0, "no batch with quarantined rows in the last day after the demo"
    assert set(results[3].column(0).to_pylist()) >= {"ingest", "stream", "merge-late"}, results[3]
    readme = con.execute(readme_example()).fetch_arrow_table()
    assert set(readme.column(0).to_pylist()) >= {"ingest", "stream", "merge-late"}, readme


def test_doc_examples_run_on_spark(demo_root, spark):
    examples = doc_examples("spark")
    assert len(examples) == len(doc_examples("duckdb")), "every example needs both dialects"
    absolute = str((demo_root / LOG).resolve())
    results = []
    for sql in examples:
        assert LOG in sql, f"example does not read {LOG}: {sql}"
        results.append(spark.sql(sql.replace(LOG, absolute).rstrip().rstrip(";")).collect())
    assert results[0], "no batch with quarantined rows in the last day after the demo"
    assert {r[0] for r in results[3]} >= {"ingest", "stream", "merge-late"}, results[3]
