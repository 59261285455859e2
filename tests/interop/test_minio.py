"""Delta tables on MinIO over S3: delta-rs writes them with conditional-put commits and reads them
back (runs now), and `medallion table scan s3://...` reads them (needs_medallion). Spark is not
pointed at S3: that needs hadoop-aws and the AWS SDK bundle (~300 MB from Maven) for no extra
coverage of medallion's side."""

from __future__ import annotations

import pytest

from interop_engines import run_medallion
from interop_rows import assert_same_rows, canonical_rows, parse_jsonl
from interop_scenarios import EVENTS, PARTITIONED, PARTITIONED_ROWS, events


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


def read_deltars_s3(deltalake, s3, url: str) -> list[dict]:
    import pyarrow as pa

    table = deltalake.DeltaTable(url, storage_options=s3["options"])
    reader = deltalake.QueryBuilder().register("t", table).execute("SELECT * FROM t")
    return pa.table(reader.read_all()).to_pylist()


def test_deltars_round_trip_on_minio(deltalake, s3):
    url, want = write_events_on_minio(deltalake, s3, "deltars-events")
    history = deltalake.DeltaTable(url, storage_options=s3["options"]).history()
    assert sorted((h["version"], h["operation"]) for h in history) == \
        [(0, "WRITE"), (1, "WRITE"), (2, "DELETE")], f"delta-rs history of {url}"
    assert_same_rows(canonical_rows(read_deltars_s3(deltalake, s3, url), EVENTS),
                     canonical_rows(want, EVENTS), f"delta-rs reading {url}")


def test_deltars_partitioned_on_minio(deltalake, s3):
    url = write_partitioned_on_minio(deltalake, s3, "deltars-partitioned")
    assert_same_rows(canonical_rows(read_deltars_s3(deltalake, s3, url), PARTITIONED),
                     canonical_rows(PARTITIONED_ROWS, PARTITIONED), f"delta-rs reading {url}")


@pytest.mark.needs_medallion
def test_medallion_scans_deltars_tables_on_minio(deltalake, s3, medallion_bin):
    url, want = write_events_on_minio(deltalake, s3, "medallion-reads-events")
    out = run_medallion(medallion_bin, "table", "scan", url, "--format", "jsonl", env=s3["env"])
    assert_same_rows(canonical_rows(parse_jsonl(out, f"scan {url}"), EVENTS),
                     canonical_rows(want, EVENTS), f"medallion table scan {url}")

    url = write_partitioned_on_minio(deltalake, s3, "medallion-reads-partitioned")
    out = run_medallion(medallion_bin, "table", "scan", url, "--format", "jsonl", env=s3["env"])
    assert_same_rows(canonical_rows(parse_jsonl(out, f"scan {url}"), PARTITIONED),
                     canonical_rows(PARTITIONED_ROWS, PARTITIONED), f"medallion table scan {url}")


def test_concurrent_deltars_appends_lose_no_commit(deltalake, s3):
    """Two writers append to one table at once; conditional put must turn every lost race into a
    retry, never into an overwritten commit. (Groundwork for medallion + delta-rs, issue 9 item 4.)"""
    import concurrent.futures

    import pyarrow as pa

    url = table_url(s3, "concurrent-appends")
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64())])
    deltalake.write_deltalake(url, pa.Table.from_pylist([], schema=schema),
                              storage_options=s3["options"])
    writers, appends = 2, 5

    def writer(w: int) -> None:
        for a in range(appends):
            rows = events([w * 100 + a])
            deltalake.write_deltalake(url, pa.Table.from_pylist(rows, schema=schema),
                                      mode="append", storage_options=s3["options"])

    with concurrent.futures.ThreadPoolExecutor(writers) as pool:
        list(pool.map(writer, range(writers)))

    table = deltalake.DeltaTable(url, storage_options=s3["options"])
    assert table.version() == writers * appends, f"{url}: commits lost or doubled"
    want = events(w * 100 + a for w in range(writers) for a in range(appends))
    assert_same_rows(canonical_rows(read_deltars_s3(deltalake, s3, url), EVENTS),
                     canonical_rows(want, EVENTS), f"delta-rs reading {url}")
