"""Change data feed, reading half (issue 32): tables with delta.enableChangeDataFeed=true that
Spark (delta-spark 3.3.2) and delta-rs wrote with UPDATE, DELETE, MERGE and INSERT; `medallion
table changes --format jsonl` must give, version by version, the same rows (as multisets) as
Spark's table_changes and delta-rs' load_cdf. Neither engine's output is produced by medallion:
each is the oracle for the other two.

_commit_timestamp: medallion follows Spark (the commit file's modification time, monotonized, as
CDCReader.getTimestampsByVersion does), so it is compared with Spark's exactly. delta-rs stamps
rows with commitInfo.timestamp instead, a few milliseconds before the file is written, so its
comparison leaves that column out.
"""

from __future__ import annotations

import collections
from datetime import timedelta
from pathlib import Path

import pytest

from interop_engines import run_medallion, spark_schema
from interop_rows import canonical_rows, parse_jsonl, row_key

pytestmark = pytest.mark.needs_medallion

COLUMNS = {"id": "long", "name": "string", "amount": "double", "part": "string"}
CDF = {"_change_type": "string", "_commit_version": "long", "_commit_timestamp": "timestamp"}
FEED = {**COLUMNS, **CDF}
NO_TS = {k: v for k, v in FEED.items() if k != "_commit_timestamp"}


def by_version(rows: list[dict]) -> dict[int, collections.Counter]:
    """Canonical change rows grouped by _commit_version, each version a multiset."""
    out: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in rows:
        out[int(r["_commit_version"])][row_key(r)] += 1
    return dict(out)


def assert_same_feed(got: list[dict], want: list[dict], label: str) -> None:
    g, w = by_version(got), by_version(want)
    problems = []
    for v in sorted(set(g) | set(w)):
        missing, extra = w.get(v, collections.Counter()) - g.get(v, collections.Counter()), \
            g.get(v, collections.Counter()) - w.get(v, collections.Counter())
        if missing or extra:
            problems.append(f"version {v}: missing {sorted(missing.elements())[:5]}, "
                            f"unexpected {sorted(extra.elements())[:5]}")
    assert not problems, f"{label}:\n  " + "\n  ".join(problems)


def medallion_feed(binary: Path, path: Path, columns: dict[str, str], *args: str) -> list[dict]:
    url = path.resolve().as_uri()
    out = run_medallion(binary, "table", "changes", url, "--format", "jsonl", *args)
    rows = parse_jsonl(out, f"medallion table changes {url}")
    return canonical_rows([{k: r[k] for k in columns} for r in rows], columns)


def spark_feed(spark, path: Path, columns: dict[str, str], start: int = 0) -> list[dict]:
    df = spark.sql(f"SELECT * FROM table_changes_by_path('{path}', {start})")
    return canonical_rows([{k: r[k] for k in columns} for r in
                           (row.asDict(recursive=True) for row in df.collect())], columns)


def deltars_feed(path: Path, columns: dict[str, str], start: int = 0) -> list[dict]:
    import pyarrow as pa
    from deltalake import DeltaTable

    rows = pa.table(DeltaTable(str(path)).load_cdf(starting_version=start).read_all()).to_pylist()
    return canonical_rows([{k: r[k] for k in columns} for r in rows], columns)


@pytest.fixture(scope="module")
def spark_cdf_table(spark, tmp_path_factory) -> Path:
    """Spark's CDF table, partitioned by part: one commit per kind of change. v1 INSERT, v2 UPDATE
    (change files with pre/post images), v3 DELETE of some rows (change files), v4 MERGE
    (update, delete and insert in one commit), v5 INSERT, v6 OPTIMIZE (dataChange=false:
    nothing), v7 DELETE of a whole partition (files removed without change files: the reader
    infers deletes from the removes)."""
    path = tmp_path_factory.mktemp("cdf") / "spark"
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, name STRING, amount DOUBLE, part STRING) USING delta "
              "PARTITIONED BY (part) TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', 1.0, 'x'), (2, 'b', 2.0, 'x'), (3, 'c', 3.0, 'y'), "
              "(4, 'd', 4.0, 'y'), (5, 'e', 5.0, 'z')")
    spark.sql(f"UPDATE {t} SET amount = amount * 10 WHERE id IN (1, 3)")
    spark.sql(f"DELETE FROM {t} WHERE id = 2")
    spark.sql(f"""MERGE INTO {t} AS t USING (SELECT * FROM VALUES
                    (3, 'c', 33.0, 'y', 'u'), (4, 'd', 0.0, 'y', 'd'), (6, 'f', 6.0, 'x', 'i')
                    AS s(id, name, amount, part, op)) AS s ON t.id = s.id
                  WHEN MATCHED AND s.op = 'd' THEN DELETE
                  WHEN MATCHED THEN UPDATE SET amount = s.amount
                  WHEN NOT MATCHED THEN INSERT (id, name, amount, part) VALUES (s.id, s.name, s.amount, s.part)""")
    spark.sql(f"INSERT INTO {t} VALUES (7, NULL, NULL, 'x'), (8, 'h', 8.0, 'z')")
    spark.sql(f"OPTIMIZE {t}")
    spark.sql(f"DELETE FROM {t} WHERE part = 'z'")
    return path


def test_spark_table_changes_equal_medallion(spark, spark_cdf_table, medallion_bin):
    path = spark_cdf_table
    want = spark_feed(spark, path, FEED)
    got = medallion_feed(medallion_bin, path, FEED, "--from-version", "0")
    # The oracle has every kind of version this test means to cover.
    kinds = {(int(r["_commit_version"]), r["_change_type"]) for r in want}
    for v, kind in [(1, "insert"), (2, "update_postimage"), (3, "delete"), (4, "update_preimage"),
                    (4, "insert"), (4, "delete"), (5, "insert"), (7, "delete")]:
        assert (v, kind) in kinds, f"Spark's feed lacks {kind} at version {v}: {sorted(kinds)}"
    assert not any(int(r["_commit_version"]) == 6 for r in want), "OPTIMIZE changed rows in Spark's feed"
    assert_same_feed(got, want, "medallion table changes vs Spark table_changes (Spark's table)")
    # A sub-range from the middle, as both read it.
    assert_same_feed(medallion_feed(medallion_bin, path, FEED, "--from-version", "4", "--to-version", "5"),
                     [r for r in want if 4 <= int(r["_commit_version"]) <= 5],
                     "versions 4..5")


def test_deltars_load_cdf_of_spark_table_equals_medallion(spark_cdf_table, medallion_bin, deltalake):
    path = spark_cdf_table
    assert_same_feed(medallion_feed(medallion_bin, path, NO_TS, "--from-version", "0"),
                     deltars_feed(path, NO_TS), "medallion table changes vs delta-rs load_cdf (Spark's table)")


@pytest.fixture(scope="module")
def spark_dv_cdf_table(spark, tmp_path_factory) -> Path:
    """Spark's CDF table with deletion vectors: DELETE marks rows in a deletion vector (no change
    files: the reader diffs the vectors), UPDATE writes change files. Column mapping (name) puts
    physical column names in the data and change files; in-commit timestamps date the commits."""
    path = tmp_path_factory.mktemp("cdf") / "spark-dv"
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, name STRING, amount DOUBLE, part STRING) USING delta "
              "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true', 'delta.enableDeletionVectors' = 'true', "
              "'delta.columnMapping.mode' = 'name', 'delta.enableInCommitTimestamps' = 'true')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', 1.0, 'x'), (2, 'b', 2.0, 'x'), (3, 'c', 3.0, 'y')")
    spark.sql(f"DELETE FROM {t} WHERE id = 2")
    spark.sql(f"UPDATE {t} SET amount = -1 WHERE id = 3")
    spark.sql(f"INSERT INTO {t} VALUES (4, 'd', 4.0, 'y')")
    return path


def test_spark_dv_table_changes_equal_medallion(spark, spark_dv_cdf_table, medallion_bin):
    path = spark_dv_cdf_table
    assert_same_feed(medallion_feed(medallion_bin, path, FEED, "--from-version", "0"),
                     spark_feed(spark, path, FEED), "medallion vs Spark (deletion vectors)")


@pytest.fixture(scope="module")
def deltars_cdf_table(deltalake, tmp_path_factory) -> Path:
    """delta-rs' CDF table: create with an append, then update, delete and merge (each writes
    change files), then another append."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    path = tmp_path_factory.mktemp("cdf") / "deltars"
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64()), ("part", pa.string())])

    def batch(rows):
        return pa.Table.from_pylist([dict(zip(schema.names, r)) for r in rows], schema=schema)

    write_deltalake(str(path), batch([(1, "a", 1.0, "x"), (2, "b", 2.0, "x"), (3, "c", 3.0, "y")]),
                    partition_by=["part"], configuration={"delta.enableChangeDataFeed": "true"})
    dt = DeltaTable(str(path))
    dt.update(predicate="id = 1", updates={"amount": "100.0"})
    dt.delete(predicate="id = 2")
    (dt.merge(batch([(3, "c", 33.0, "y"), (4, "d", 4.0, "x")]), predicate="t.id = s.id",
              source_alias="s", target_alias="t")
       .when_matched_update(updates={"amount": "s.amount"})
       .when_not_matched_insert_all().execute())
    write_deltalake(str(path), batch([(5, "e", 5.0, "z")]), mode="append")
    return path


def test_deltars_table_changes_equal_medallion(spark, deltars_cdf_table, medallion_bin):
    path = deltars_cdf_table
    got = medallion_feed(medallion_bin, path, FEED, "--from-version", "0")
    want = deltars_feed(path, NO_TS)
    kinds = {r["_change_type"] for r in want}
    assert kinds == {"insert", "update_preimage", "update_postimage", "delete"}, kinds
    assert_same_feed([{k: r[k] for k in NO_TS} for r in got], want,
                     "medallion table changes vs delta-rs load_cdf (delta-rs' table)")
    assert_same_feed(got, spark_feed(spark, path, FEED),
                     "medallion table changes vs Spark table_changes (delta-rs' table)")


# --- medallion's own lake ----------------------------------------------------------------------
#
# The session's demo lake (conftest.demo_lake: ingest, stream, merge-late over late events and a
# left-outer join with late clicks), copied, then corrected the way an operator would: Spark
# moves some silver rows to another event_type and deletes others, and `medallion run replay`
# recomputes that range of gold (pre/post images for changed windows, deletes for groups that
# disappear, inserts for new ones). Gold and the joined table were created with the feed on, so
# their feed is read three ways and must agree, and applying it in order must give the table.

OURS = ["gold/events_5m", "silver/events_clicks"]


@pytest.fixture(scope="module")
def our_lake(demo_lake, medallion_bin, spark, tmp_path_factory) -> Path:
    import shutil

    lake = tmp_path_factory.mktemp("cdf-ours") / "lake"
    shutil.copytree(demo_lake, lake)
    cfg = lake / "pipeline.yaml"
    cfg.write_text("\n".join(f"lake: {lake}" if line.startswith("lake:") else line
                             for line in cfg.read_text().splitlines()) + "\n")
    silver = f"delta.`{lake / 'silver' / 'events'}`"
    lo, hi = spark.sql(f"SELECT min(event_time), max(event_time) FROM {silver}").first()
    start = lo.replace(minute=0, second=0, microsecond=0)
    end = lo + (hi - lo) / 2
    before = f"event_time < TIMESTAMP '{end.strftime('%Y-%m-%d %H:%M:%S')}'"  # UTC, as the session
    moved = spark.sql(f"UPDATE {silver} SET event_type = 'refund' "
                      f"WHERE event_type = 'click' AND {before} AND pmod(hash(event_id), 3) = 0").first()[0]
    deleted = spark.sql(f"DELETE FROM {silver} WHERE event_type = 'search' AND {before}").first()[0]
    assert moved > 0 and deleted > 0, f"the corrections matched nothing: {moved} moved, {deleted} deleted"
    to = end.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    run_medallion(medallion_bin, "run", "replay", "--config", str(cfg), "--format", "json",
                  "--from", start.strftime("%Y-%m-%dT%H:%M:%SZ"), "--to", to.strftime("%Y-%m-%dT%H:%M:%SZ"),
                  timeout=600)
    return lake


def feed_columns(spark, path: Path) -> dict[str, str]:
    return {**spark_schema(spark, path), **CDF}


@pytest.mark.parametrize("name", OURS)
def test_our_feed_read_by_spark_and_deltars(name, our_lake, spark, deltalake, medallion_bin):
    path = our_lake / name
    cols = feed_columns(spark, path)
    ours = medallion_feed(medallion_bin, path, cols, "--from-version", "0")
    kinds = {r["_change_type"] for r in ours}
    assert {"insert", "update_preimage", "update_postimage"} <= kinds, f"{name}: the workload wrote only {kinds}"
    if name.startswith("gold/"):
        assert "delete" in kinds, f"{name}: replay deleted no window group: {kinds}"
    assert_same_feed(ours, spark_feed(spark, path, cols), f"{name}: medallion vs Spark table_changes")
    no_ts = {k: v for k, v in cols.items() if k != "_commit_timestamp"}
    assert_same_feed([{k: r[k] for k in no_ts} for r in ours], deltars_feed(path, no_ts),
                     f"{name}: medallion vs delta-rs load_cdf")
    # Spark's streaming read of the feed from version 0, run to the end (availableNow).
    query = (spark.readStream.format("delta").option("readChangeFeed", "true")
             .option("startingVersion", 0).load(str(path))
             .writeStream.format("memory").queryName(f"cdf_{name.replace('/', '_')}")
             .trigger(availableNow=True).start())
    query.awaitTermination()
    streamed = spark.sql(f"SELECT * FROM cdf_{name.replace('/', '_')}").collect()
    streamed = canonical_rows([{k: r.asDict(recursive=True)[k] for k in cols} for r in streamed], cols)
    assert_same_feed(ours, streamed, f"{name}: medallion vs Spark readChangeFeed (streaming)")


@pytest.mark.parametrize("name", OURS)
def test_invariant_c_from_spark(name, our_lake, spark):
    """Invariant C as Spark sees it: from the empty table, version by version in order, each
    version's deletes and pre-images must be rows of the table at that point; removing them and
    adding its inserts and post-images gives, at the end, Spark's read of the table."""
    path = our_lake / name
    cols = feed_columns(spark, path)
    data = {k: v for k, v in cols.items() if k not in CDF}
    feed = spark_feed(spark, path, cols)
    state: collections.Counter = collections.Counter()
    for v in sorted({int(r["_commit_version"]) for r in feed}):
        rows = [r for r in feed if int(r["_commit_version"]) == v]
        gone = collections.Counter(row_key({k: r[k] for k in data}) for r in rows
                                   if r["_change_type"] in ("delete", "update_preimage"))
        missing = gone - state
        assert not missing, f"{name} version {v}: removes rows the table does not hold: {sorted(missing)[:3]}"
        state -= gone
        state += collections.Counter(row_key({k: r[k] for k in data}) for r in rows
                                     if r["_change_type"] in ("insert", "update_postimage"))
    table = canonical_rows([{k: r[k] for k in data} for r in
                            (row.asDict(recursive=True) for row in
                             spark.read.format("delta").load(str(path)).collect())], data)
    want = collections.Counter(row_key(r) for r in table)
    assert state == want, (f"{name}: the feed applied in order differs from the table: "
                           f"missing {sorted((want - state).elements())[:3]}, "
                           f"extra {sorted((state - want).elements())[:3]}")


def test_deltars_cdf_table_on_minio(deltalake, s3, medallion_bin):
    """The same reading through the object store: delta-rs writes a CDF table on MinIO (an
    append, an update with change files, a delete), and `medallion table changes s3://...`
    equals delta-rs' load_cdf of it."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    url = f"s3://{s3['bucket']}/cdf/deltars"
    opts = s3["options"]
    rows = [{"id": 1, "name": "a", "amount": 1.0, "part": "x"}, {"id": 2, "name": "b", "amount": 2.0, "part": "y"}]
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64()), ("part", pa.string())])
    write_deltalake(url, pa.Table.from_pylist(rows, schema=schema), partition_by=["part"], storage_options=opts,
                    configuration={"delta.enableChangeDataFeed": "true"})
    dt = DeltaTable(url, storage_options=opts)
    dt.update(predicate="id = 1", updates={"amount": "10.0"})
    dt.delete(predicate="id = 2")
    out = run_medallion(medallion_bin, "table", "changes", url, "--from-version", "0", env=s3["env"])
    got = canonical_rows([{k: r[k] for k in NO_TS} for r in parse_jsonl(out, f"table changes {url}")], NO_TS)
    dt = DeltaTable(url, storage_options=opts)
    want = canonical_rows([{k: r[k] for k in NO_TS} for r in
                           pa.table(dt.load_cdf(starting_version=0).read_all()).to_pylist()], NO_TS)
    assert {r["_change_type"] for r in want} == {"insert", "update_preimage", "update_postimage", "delete"}
    assert_same_feed(got, want, "medallion vs delta-rs load_cdf on MinIO")
