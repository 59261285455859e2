"""Delta tables on MinIO over S3, every engine through its own S3 client: delta-rs (object_store,
committing with conditional put), Spark (S3A from hadoop-aws, Delta's S3SingleDriverLogStore) and
medallion (`table scan s3://...`, the mkdelta writer).

* delta-rs writes (appends, DELETE, checkpoint; partitions with nulls and special characters) and
  reads back; Spark reads them (rows, schema, history); medallion scans them (needs_medallion).
* medallion writes (interop_mkdelta.ON_MINIO, every table of the file suite: every type,
  partitioned, overwrite, replaceWhere, MERGE, OPTIMIZE, VACUUM, checkpoint) and Spark reads them
  (needs_medallion; delta-rs' reads and the raw-log checks are in test_we_write.py).
* Spark writes (SPARK_ON_MINIO: append, DELETE with deletion vectors, a checkpoint; partitioned;
  every type); Spark and delta-rs read them back, medallion scans them (needs_medallion).
* DuckDB (delta_scan, httpfs with an S3 secret) reads the delta-rs and Spark tables; medallion's
  are in test_we_write.py.
* Concurrent delta-rs writers lose no commit.

Spark names a table s3a://bucket/name, the others s3://bucket/name: the same objects."""

from __future__ import annotations

import pytest

from conftest import download_table, s3a_url
from interop_engines import (read_deltars_s3, read_duckdb, read_spark, run_medallion,
                             spark_history, spark_schema)
from interop_mkdelta import ON_MINIO, WRITTEN
from interop_rows import assert_same_rows, canonical_rows, parse_jsonl
from interop_scenarios import (EVENTS, EVENTS_DDL, PARTITIONED, PARTITIONED_ROWS, SCENARIOS,
                               Scenario, assert_has_checkpoint, assert_has_deletion_vectors,
                               events, tuples)


def table_url(s3, name: str) -> str:
    return f"s3://{s3['bucket']}/{name}"


def write_events_on_minio(deltalake, s3, name: str) -> tuple[str, list[dict]]:
    """Two appends, a copy-on-write DELETE and a checkpoint, all through S3."""
    import pyarrow as pa

    url = table_url(s3, name)
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64())])
    for ids in (range(5), range(5, 10)):
        deltalake.write_deltalake(url, pa.Table.from_pylist(events(ids), schema=schema),
                                  mode="append", storage_options=s3["options"])
    table = deltalake.DeltaTable(url, storage_options=s3["options"])
    table.delete("id % 3 = 0")
    table.create_checkpoint()
    return url, events(i for i in range(10) if i % 3)


def write_partitioned_on_minio(deltalake, s3, name: str) -> str:
    import pyarrow as pa

    url = table_url(s3, name)
    schema = pa.schema([("part", pa.string()), ("n", pa.int32()), ("id", pa.int64())])
    deltalake.write_deltalake(url, pa.Table.from_pylist(PARTITIONED_ROWS, schema=schema),
                              partition_by=["part", "n"], storage_options=s3["options"])
    return url


def test_deltars_round_trip_on_minio(deltalake, s3):
    url, want = write_events_on_minio(deltalake, s3, "deltars-events")
    history = deltalake.DeltaTable(url, storage_options=s3["options"]).history()
    assert sorted((h["version"], h["operation"]) for h in history) == \
        [(0, "WRITE"), (1, "WRITE"), (2, "DELETE")], f"delta-rs history of {url}"
    assert_same_rows(canonical_rows(read_deltars_s3(s3, url), EVENTS),
                     canonical_rows(want, EVENTS), f"delta-rs reading {url}")


def test_deltars_partitioned_on_minio(deltalake, s3):
    url = write_partitioned_on_minio(deltalake, s3, "deltars-partitioned")
    assert_same_rows(canonical_rows(read_deltars_s3(s3, url), PARTITIONED),
                     canonical_rows(PARTITIONED_ROWS, PARTITIONED), f"delta-rs reading {url}")


def test_duckdb_reads_deltars_tables_on_minio(deltalake, s3, duckdb_s3):
    url, want = write_events_on_minio(deltalake, s3, "duckdb-reads-events")
    assert_same_rows(canonical_rows(read_duckdb(duckdb_s3, url), EVENTS),
                     canonical_rows(want, EVENTS), f"DuckDB reading {url}")

    url = write_partitioned_on_minio(deltalake, s3, "duckdb-reads-partitioned")
    assert_same_rows(canonical_rows(read_duckdb(duckdb_s3, url), PARTITIONED),
                     canonical_rows(PARTITIONED_ROWS, PARTITIONED), f"DuckDB reading {url}")


@pytest.mark.needs_medallion
def test_medallion_scans_deltars_tables_on_minio(deltalake, s3, medallion_bin):
    url, want = write_events_on_minio(deltalake, s3, "medallion-reads-events")
    assert_same_rows(canonical_rows(scan_medallion(medallion_bin, s3, url), EVENTS),
                     canonical_rows(want, EVENTS), f"medallion table scan {url}")

    url = write_partitioned_on_minio(deltalake, s3, "medallion-reads-partitioned")
    assert_same_rows(canonical_rows(scan_medallion(medallion_bin, s3, url), PARTITIONED),
                     canonical_rows(PARTITIONED_ROWS, PARTITIONED), f"medallion table scan {url}")


def scan_medallion(binary, s3, url: str) -> list[dict]:
    out = run_medallion(binary, "table", "scan", url, "--format", "jsonl", env=s3["env"])
    return parse_jsonl(out, f"medallion table scan {url}")


# --- Spark on MinIO (S3A) --------------------------------------------------------------------


def assert_spark_reads(spark, url: str, columns: dict[str, str], rows: list[dict],
                       history: list[tuple[int, str]]) -> None:
    assert_same_rows(canonical_rows(read_spark(spark, url), columns),
                     canonical_rows(rows, columns), f"Spark reading {url}")
    assert spark_schema(spark, url) == columns, f"Spark schema of {url}"
    assert spark_history(spark, url) == history, f"Spark history of {url}"


def test_spark_reads_deltars_tables_on_minio(deltalake, s3, spark_s3):
    _, want = write_events_on_minio(deltalake, s3, "spark-reads-events")
    assert_spark_reads(spark_s3, s3a_url(s3, "spark-reads-events"), EVENTS, want,
                       [(0, "WRITE"), (1, "WRITE"), (2, "DELETE")])

    write_partitioned_on_minio(deltalake, s3, "spark-reads-partitioned")
    assert_spark_reads(spark_s3, s3a_url(s3, "spark-reads-partitioned"), PARTITIONED,
                       PARTITIONED_ROWS, [(0, "WRITE")])


@pytest.mark.needs_medallion
@pytest.mark.parametrize("name", ON_MINIO)
def test_spark_reads_our_table_on_minio(name, written_on_minio, spark_s3, s3):
    w = WRITTEN[name]
    url = written_on_minio(name)
    assert url.startswith("s3://"), url
    assert_spark_reads(spark_s3, "s3a://" + url.removeprefix("s3://"), w.columns, w.rows,
                       w.history)


def spark_events_on_minio(spark, url: str) -> None:
    """CREATE TABLE with deletion vectors and a checkpoint every 2 commits, two appends (the
    checkpoint lands at version 2), then a DELETE that marks rows in deletion vectors instead of
    rewriting files."""
    spark.sql(f"""CREATE TABLE delta.`{url}` ({EVENTS_DDL}) USING delta
                  TBLPROPERTIES ('delta.enableDeletionVectors' = 'true',
                                 'delta.checkpointInterval' = '2')""")
    for ids in (range(5), range(5, 10)):
        spark.createDataFrame(tuples(events(ids), EVENTS), EVENTS_DDL).repartition(2) \
            .write.format("delta").mode("append").save(url)
    spark.sql(f"DELETE FROM delta.`{url}` WHERE id % 3 = 0")


def assert_dvs_and_checkpoint(path) -> None:
    assert_has_deletion_vectors(path)
    assert_has_checkpoint(path)


# Spark's tables on MinIO: the one above, and the partitioned one (partition directories with a
# null value, '/', ' ', '=', '%' and non-ASCII, as S3 keys) and every-type one of the file suite.
SPARK_ON_MINIO = [
    Scenario("spark_events_on_minio", "spark", spark_events_on_minio, EVENTS,
             events(i for i in range(10) if i % 3), ["CREATE TABLE", "WRITE", "WRITE", "DELETE"],
             exercises=assert_dvs_and_checkpoint),
    SCENARIOS["spark_partitioned"],
    SCENARIOS["spark_types"],
]


@pytest.fixture(scope="module")
def spark_written(spark_s3, s3) -> dict[str, str]:
    """{scenario name: its table name under the bucket}: SPARK_ON_MINIO written once by Spark
    through S3A, for every reader."""
    names = {}
    for scenario in SPARK_ON_MINIO:
        names[scenario.name] = f"spark-writes/{scenario.name}"
        scenario.build(spark_s3, s3a_url(s3, names[scenario.name]))
    return names


@pytest.mark.parametrize("scenario", SPARK_ON_MINIO, ids=lambda s: s.name)
def test_spark_round_trip_on_minio(scenario, spark_written, spark_s3, s3, deltalake, tmp_path):
    name = spark_written[scenario.name]
    if scenario.exercises:
        scenario.exercises(download_table(s3, table_url(s3, name), tmp_path / "table"))
    assert_spark_reads(spark_s3, s3a_url(s3, name), scenario.columns, scenario.rows,
                       list(enumerate(scenario.history)))
    url = table_url(s3, name)
    assert_same_rows(canonical_rows(read_deltars_s3(s3, url), scenario.columns),
                     canonical_rows(scenario.rows, scenario.columns), f"delta-rs reading {url}")


@pytest.mark.parametrize("scenario", SPARK_ON_MINIO, ids=lambda s: s.name)
def test_duckdb_reads_spark_table_on_minio(scenario, spark_written, s3, duckdb_s3):
    """Deletion vectors and a checkpoint, partitions with odd values, every type: over S3."""
    url = table_url(s3, spark_written[scenario.name])
    assert_same_rows(canonical_rows(read_duckdb(duckdb_s3, url), scenario.columns),
                     canonical_rows(scenario.rows, scenario.columns), f"DuckDB reading {url}")


@pytest.mark.needs_medallion
@pytest.mark.parametrize("scenario", SPARK_ON_MINIO, ids=lambda s: s.name)
def test_medallion_scans_spark_table_on_minio(scenario, spark_written, s3, medallion_bin):
    url = table_url(s3, spark_written[scenario.name])
    assert_same_rows(canonical_rows(scan_medallion(medallion_bin, s3, url), scenario.columns),
                     canonical_rows(scenario.rows, scenario.columns), f"medallion table scan {url}")
