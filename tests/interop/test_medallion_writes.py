"""We write, they read: commits and checkpoints produced by medallion are read by Spark and delta-rs
with identical rows, schema and history, and by DuckDB with identical rows. Deselected until medallion's writer lands (run with
--with-medallion).

What medallion can write today through its contract CLI (DESIGN.md section 8):
  * `medallion table checkpoint|optimize|vacuum URL` on a table an engine wrote: the commit or
    checkpoint is ours, the readers are theirs;
  * `medallion demo --lake DIR`: bronze, silver, quarantine and gold tables written end to end;
    the README's DuckDB example runs on that lake as written.
Tables whose rows medallion writes itself (every type, partitions, append, overwrite, MERGE,
replaceWhere, optimize, vacuum, checkpoint; on file and MinIO) are in test_we_write.py.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from interop_engines import (deltars_history, deltars_schema, deltars_version,
                             duckdb_extension_file, last_commit_info, read_deltars, read_duckdb,
                             read_medallion, read_spark, run_medallion, spark_history,
                             spark_schema)
from interop_rows import assert_same_rows, canonical_rows, format_timestamp
from interop_scenarios import SCENARIOS

pytestmark = pytest.mark.needs_medallion

# One table of each shape: plain, partitioned with null partitions, every type, and one whose
# log has removes.
MAINTAINED = ["spark_append", "deltars_append", "spark_partitioned", "deltars_partitioned",
              "spark_types", "deltars_types", "deltars_delete"]


def copy_table(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def assert_engines_read(path: Path, columns: dict[str, str], rows: list[dict], label: str,
                        spark, duckdb) -> None:
    want = canonical_rows(rows, columns)
    assert_same_rows(canonical_rows(read_deltars(path), columns), want, f"delta-rs reading {label}")
    assert_same_rows(canonical_rows(read_spark(spark, path), columns), want, f"Spark reading {label}")
    assert_same_rows(canonical_rows(read_duckdb(duckdb, path), columns), want, f"DuckDB reading {label}")
    assert deltars_schema(path) == columns, f"delta-rs schema of {label}"
    assert spark_schema(spark, path) == columns, f"Spark schema of {label}"


@pytest.mark.parametrize("name", MAINTAINED)
def test_our_checkpoint_is_read_by_both_engines(name, scenario_table, table_dir, medallion_bin,
                                                spark, deltalake, duckdb):
    scenario = SCENARIOS[name]
    path = copy_table(scenario_table(name), table_dir)
    version = deltars_version(path)
    for stale in (path / "_delta_log").glob("*.checkpoint*.parquet"):
        stale.unlink()
    (path / "_delta_log" / "_last_checkpoint").unlink(missing_ok=True)
    run_medallion(medallion_bin, "table", "checkpoint", path.resolve().as_uri())

    log = path / "_delta_log"
    assert (log / f"{version:020d}.checkpoint.parquet").is_file(), f"{log}: no checkpoint at v{version}"
    assert (log / "_last_checkpoint").is_file(), f"{log}: no _last_checkpoint"
    # Drop the commits before the checkpoint, as log cleanup does (Spark wants the checkpoint's
    # own commit file kept): the engines can then only reconstruct the table from our checkpoint.
    for v in range(version):
        (log / f"{v:020d}.json").unlink()
    assert_engines_read(path, scenario.columns, scenario.rows,
                        f"{name} from medallion's checkpoint", spark, duckdb)


# Tables whose appends left several small files in one partition, so OPTIMIZE has work to do.
COMPACTABLE = ["spark_append", "deltars_append", "spark_checkpoint", "deltars_checkpoint"]


@pytest.mark.parametrize("name", COMPACTABLE)
def test_our_optimize_commit_is_read_by_both_engines(name, scenario_table, table_dir,
                                                     medallion_bin, spark, deltalake, duckdb):
    scenario = SCENARIOS[name]
    path = copy_table(scenario_table(name), table_dir)
    before = deltars_version(path)
    files_before = len(deltalake.DeltaTable(str(path)).file_uris())
    assert files_before >= 2, f"{name}: {files_before} live file(s), nothing to compact"
    run_medallion(medallion_bin, "table", "optimize", path.resolve().as_uri())

    label = f"{name} after medallion table optimize"
    assert deltars_version(path) == before + 1, f"{label}: expected exactly one new commit"
    assert last_commit_info(path).get("operation") == "OPTIMIZE", f"{label}: commitInfo"
    files_after = len(deltalake.DeltaTable(str(path)).file_uris())
    assert files_after < files_before, f"{label}: {files_before} -> {files_after} live files"
    assert_engines_read(path, scenario.columns, scenario.rows, label, spark, duckdb)
    want = [*enumerate(scenario.history), (before + 1, "OPTIMIZE")]
    assert deltars_history(path) == want, f"delta-rs history of {label}"
    assert spark_history(spark, path) == want, f"Spark history of {label}"


@pytest.mark.parametrize("name", ["spark_overwrite", "deltars_overwrite", "deltars_delete"])
def test_our_vacuum_keeps_the_table_readable(name, scenario_table, table_dir, medallion_bin,
                                             spark, deltalake, duckdb):
    scenario = SCENARIOS[name]
    path = copy_table(scenario_table(name), table_dir)
    run_medallion(medallion_bin, "table", "vacuum", path.resolve().as_uri())
    assert_engines_read(path, scenario.columns, scenario.rows,
                        f"{name} after medallion table vacuum", spark, duckdb)


def delta_tables_under(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.rglob("_delta_log") if p.is_dir())


def test_demo_tables_are_read_identically(demo_lake, medallion_bin, spark, deltalake, duckdb):
    lake = demo_lake
    tables = delta_tables_under(lake)
    names = [str(t.relative_to(lake)) for t in tables]
    for layer in ("bronze", "silver", "gold"):
        assert any(n.startswith(layer) for n in names), f"demo wrote no {layer} table: {names}"
    for path in tables:
        label = f"demo table {path.relative_to(lake)}"
        columns = deltars_schema(path)
        assert spark_schema(spark, path) == columns, f"Spark vs delta-rs schema of {label}"
        assert spark_history(spark, path) == deltars_history(path), f"history of {label}"
        reference = canonical_rows(read_deltars(path), columns)
        assert_same_rows(canonical_rows(read_spark(spark, path), columns), reference,
                         f"Spark vs delta-rs rows of {label}")
        assert_same_rows(canonical_rows(read_duckdb(duckdb, path), columns), reference,
                         f"DuckDB vs delta-rs rows of {label}")
        assert_same_rows(canonical_rows(read_medallion(medallion_bin, path), columns), reference,
                         f"medallion table scan vs delta-rs rows of {label}")


def readme_block(marker: str) -> str:
    """The one fenced ```sql block of README.md that contains marker, as written."""
    text = (REPO_ROOT / "README.md").read_text()
    blocks = [b for b in re.findall(r"^```sql\n(.*?)^```", text, re.S | re.M) if marker in b]
    assert len(blocks) == 1, f"README.md: {len(blocks)} sql blocks contain {marker!r}, want 1"
    return blocks[0]


def test_readme_duckdb_example_runs_as_written(demo_lake, deltalake, monkeypatch):
    """The README's DuckDB block on gold (INSTALL delta; LOAD delta; SELECT ...
    delta_scan('lake/gold/...')) runs unchanged in the directory holding the demo's lake/, and returns gold's windows as delta-rs
    reads them, ordered by window start. INSTALL takes the extension from the pinned package's
    directory (a local extension repository) instead of the network."""
    import duckdb

    sql = readme_block("delta_scan('lake/gold/")
    gold = re.search(r"delta_scan\('lake/([^']+)'\)", sql)
    assert gold, f"README's DuckDB example reads no table under lake/:\n{sql}"
    repository = duckdb_extension_file("delta").parents[2]  # <repo>/v<version>/<platform>/
    with tempfile.TemporaryDirectory() as extensions:
        con = duckdb.connect(config={"allow_unsigned_extensions": "true",
                                     "autoinstall_known_extensions": "false",
                                     "custom_extension_repository": str(repository),
                                     "extension_directory": extensions})
        monkeypatch.chdir(demo_lake.parent)
        # Through Arrow: DuckDB's Python rows need pytz for a timestamp with a zone.
        result = con.execute(sql).fetch_arrow_table()
        con.close()
    names = result.column_names
    got = [tuple(r.values()) for r in result.to_pylist()]
    assert names == ["start", "event_type", "count"], names
    rows = read_deltars(demo_lake / gold.group(1))
    assert rows, f"demo's {gold.group(1)} is empty: the example proves nothing"
    want = sorted((format_timestamp(r["window"]["start"]), r["event_type"], r["count"]) for r in rows)
    got_rows = [(format_timestamp(t), e, c) for t, e, c in got]
    assert sorted(got_rows) == want, f"README DuckDB example on {gold.group(1)}"
    starts = [t for t, _, _ in got_rows]
    assert starts == sorted(starts), "README DuckDB example: ORDER BY 1 not honoured"
