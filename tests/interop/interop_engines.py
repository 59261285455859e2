"""Readers for one Delta table: Spark, delta-rs, polars, DuckDB and `medallion table scan`.

Each `read_*` returns raw rows (dicts of Python values) for interop_rows.canonical_rows; each
`*_schema` returns {column: compact type}; each `*_history` returns [(version, operation)] in
ascending version order. Engine modules are imported inside the functions so that this module
imports without them (conftest decides whether a missing engine fails or skips).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from interop_rows import parse_jsonl, schema_columns

SCAN_TIMEOUT_S = 120


# --- Spark -----------------------------------------------------------------------------------


def read_spark(spark, path: Path) -> list[dict]:
    return [r.asDict(recursive=True) for r in spark.read.format("delta").load(str(path)).collect()]


def spark_schema(spark, path: Path) -> dict[str, str]:
    return schema_columns(spark.read.format("delta").load(str(path)).schema.jsonValue())


def spark_history(spark, path: Path) -> list[tuple[int, str]]:
    rows = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").select("version", "operation").collect()
    return sorted((r.version, r.operation) for r in rows)


# --- delta-rs --------------------------------------------------------------------------------


def read_deltars(path: Path) -> list[dict]:
    """Reads through delta-rs' DataFusion scan, which (unlike to_pyarrow_table in deltalake 1.6)
    applies deletion vectors."""
    import pyarrow as pa
    from deltalake import DeltaTable, QueryBuilder

    reader = QueryBuilder().register("t", DeltaTable(str(path))).execute("SELECT * FROM t")
    return pa.table(reader.read_all()).to_pylist()


def read_deltars_s3(s3, url: str) -> list[dict]:
    """read_deltars for a table on the MinIO of the `s3` fixture (s3://bucket/...)."""
    import pyarrow as pa
    from deltalake import DeltaTable, QueryBuilder

    table = DeltaTable(url, storage_options=s3["options"])
    reader = QueryBuilder().register("t", table).execute("SELECT * FROM t")
    return pa.table(reader.read_all()).to_pylist()


def deltars_schema(path: Path) -> dict[str, str]:
    from deltalake import DeltaTable

    return schema_columns(DeltaTable(str(path)).schema().to_json())


def deltars_history(path: Path) -> list[tuple[int, str]]:
    from deltalake import DeltaTable

    return sorted((h["version"], h["operation"]) for h in DeltaTable(str(path)).history())


def deltars_version(path: Path) -> int:
    from deltalake import DeltaTable

    return DeltaTable(str(path)).version()


# --- polars ----------------------------------------------------------------------------------


def read_polars(path: Path) -> list[dict]:
    import polars as pl

    return pl.read_delta(str(path)).to_dicts()


# --- DuckDB ----------------------------------------------------------------------------------

# The pinned extension packages (requirements.txt) and the extension each ships.
DUCKDB_EXTENSIONS = {"delta": "duckdb-ext-delta", "httpfs": "duckdb-ext-httpfs"}


def duckdb_extension_file(name: str) -> Path:
    """The .duckdb_extension file that the pinned package of extension `name` installed (under
    site-packages/duckdb_ext/extensions/v<duckdb version>/<platform>/). Found through the
    package's own file list, so a package built for another DuckDB version or platform is an
    error naming what it holds, not a network install of something else."""
    from importlib import metadata

    dist = DUCKDB_EXTENSIONS[name]
    files = [f for f in metadata.files(dist) or [] if f.name == f"{name}.duckdb_extension"]
    if len(files) != 1:
        raise FileNotFoundError(f"package {dist} holds {len(files)} {name}.duckdb_extension files "
                                f"({[str(f) for f in files]}); reinstall with scripts/interop.sh setup")
    return Path(files[0].locate())


def duckdb_connect():
    """An in-memory DuckDB with the delta and httpfs extensions loaded from the pinned packages'
    files (they are not signed by a key DuckDB knows, hence allow_unsigned_extensions), with
    autoinstall and autoload off so that nothing is fetched from the network, in UTC."""
    import duckdb

    con = duckdb.connect(config={"allow_unsigned_extensions": "true",
                                 "autoinstall_known_extensions": "false",
                                 "autoload_known_extensions": "false"})
    for name in DUCKDB_EXTENSIONS:
        con.execute(f"LOAD '{duckdb_extension_file(name)}'")
    con.execute("SET TimeZone = 'UTC'")
    return con


def duckdb_s3_secret_sql(env: dict[str, str]) -> str:
    """CREATE SECRET for the MinIO of the `s3` fixture (its AWS_* environment): path-style URLs,
    TLS as the endpoint's scheme says."""
    scheme, _, host = env["AWS_ENDPOINT_URL"].partition("://")
    return ("CREATE OR REPLACE SECRET minio (TYPE s3, "
            f"KEY_ID '{env['AWS_ACCESS_KEY_ID']}', SECRET '{env['AWS_SECRET_ACCESS_KEY']}', "
            f"ENDPOINT '{host}', URL_STYLE 'path', USE_SSL {str(scheme == 'https').lower()}, "
            f"REGION '{env['AWS_REGION']}')")


def read_duckdb(con, location) -> list[dict]:
    """delta_scan of a table (a path, or s3://bucket/... once the secret is made), through Arrow
    so that values reach Python as the other readers' do (timestamps with their zone, binary as
    bytes, structs as dicts)."""
    return con.execute("SELECT * FROM delta_scan(?)", [str(location)]).fetch_arrow_table().to_pylist()


# --- medallion -------------------------------------------------------------------------------


def run_medallion(binary: Path, *args: str, timeout: float = SCAN_TIMEOUT_S,
                  env: dict[str, str] | None = None) -> str:
    """Runs the medallion CLI (with extra environment `env`) and returns stdout; a non-zero exit
    fails with its stderr."""
    cmd = [str(binary), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False,
                          env={**os.environ, **(env or {})})
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    return proc.stdout


def read_medallion(binary: Path, path: Path) -> list[dict]:
    """`medallion table scan URL --format jsonl`, parsed as the DESIGN.md section 8 contract."""
    url = path.resolve().as_uri()
    out = run_medallion(binary, "table", "scan", url, "--format", "jsonl")
    return parse_jsonl(out, f"medallion table scan {url}")


def delta_log_versions(path: Path) -> list[int]:
    """The commit versions present in _delta_log, read from file names (no engine involved)."""
    return sorted(int(p.stem) for p in (path / "_delta_log").glob("*.json") if p.stem.isdigit())


def last_commit_info(path: Path) -> dict:
    """The commitInfo action of the newest commit file, read directly from the JSON log."""
    latest = max(delta_log_versions(path))
    log = path / "_delta_log" / f"{latest:020d}.json"
    for line in log.read_text().splitlines():
        action = json.loads(line)
        if "commitInfo" in action:
            return action["commitInfo"]
    raise AssertionError(f"{log}: no commitInfo action")
