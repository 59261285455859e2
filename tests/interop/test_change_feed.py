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
# Tables medallion wrote with the feed on (gold and joined tables are created so), read three
# ways that must agree, and the feed applied in order must give the table (invariant C):
#
# * the session's demo lake (conftest.demo_lake, read only): its left-outer join after the join's
#   merge-late, where a null-extended row replaced by its match is a pre/post pair;
# * windows_lake: every window type (tumbling, sliding, session) after the stream, merge-late
#   and a replay over silver rows that Spark corrected (pre/post images for changed window
#   groups, deletes for groups that disappear, inserts for new ones).

OURS = [("demo_lake", "silver/events_clicks"),
        ("windows_lake", "gold/tumbling"), ("windows_lake", "gold/sliding"), ("windows_lake", "gold/session")]
OURS_IDS = [f"{lake}:{name}" for lake, name in OURS]


WINDOWS_YAML = """lake: {lake}
landing: {{path: landing/events/, format: json, max_files_per_trigger: 1}}
schema:
  - {{name: event_id, type: string, required: true}}
  - {{name: event_type, type: string}}
  - {{name: amount, type: double}}
  - {{name: event_time, type: timestamp, required: true}}
  - {{name: device_id, type: string}}
stream: {{name: events, watermark: 10m, dedup: [event_id], max_files_per_trigger: 1}}
gold:
  - name: tumbling
    window: {{type: tumbling, size: 5m}}
    group_by: [event_type]
    aggregates: [{{fn: count}}, {{fn: sum, column: amount, as: total}}]
  - name: sliding
    window: {{type: sliding, size: 10m, slide: 5m}}
    group_by: [event_type]
    aggregates: [{{fn: count}}, {{fn: max, column: amount, as: top}}]
  - name: session
    window: {{type: session, gap: 5m}}
    group_by: [device_id]
    aggregates: [{{fn: count}}]
"""


@pytest.fixture(scope="module")
def windows_lake(medallion_bin, spark, tmp_path_factory) -> Path:
    """Every window type over one late-data workload: `medallion gen` with outage bursts
    delivered late, one landing object a micro-batch, merge-late; then Spark corrects silver (some
    rows move to another event_type and device, the purchases of the first half go) and `run
    replay` recomputes the whole range."""
    tmp = tmp_path_factory.mktemp("cdf-windows")
    lake = tmp / "lake"
    cfg = tmp / "pipeline.yaml"
    cfg.write_text(WINDOWS_YAML.format(lake=lake))
    run = lambda *a: run_medallion(medallion_bin, *a, timeout=600)  # noqa: E731
    run("gen", "--config", str(cfg), "--events", "3000", "--files", "12", "--seed", "32",
        "--start", "2026-01-10T12:00:00Z", "--rate", "0.5", "--devices", "40", "--outage-rate", "0.004")
    for job in ("ingest", "stream", "merge-late"):
        run("run", job, "--config", str(cfg))
    silver = f"delta.`{lake / 'silver' / 'events'}`"
    lo, hi = spark.sql(f"SELECT min(event_time), max(event_time) FROM {silver}").first()
    before = f"event_time < TIMESTAMP '{(lo + (hi - lo) / 2).strftime('%Y-%m-%d %H:%M:%S')}'"
    moved = spark.sql(f"UPDATE {silver} SET event_type = 'refund', device_id = 'd-moved' "
                      f"WHERE pmod(hash(event_id), 7) = 0").first()[0]
    deleted = spark.sql(f"DELETE FROM {silver} WHERE event_type = 'purchase' AND {before}").first()[0]
    assert moved > 0 and deleted > 0, f"the corrections matched nothing: {moved} moved, {deleted} deleted"
    run("run", "replay", "--config", str(cfg), "--format", "json",
        "--from", lo.strftime("%Y-%m-%dT00:00:00Z"), "--to", "2100-01-01T00:00:00Z")
    return lake


def feed_columns(spark, path: Path) -> dict[str, str]:
    return {**spark_schema(spark, path), **CDF}


@pytest.fixture(scope="module")
def spark_feeds(spark):
    """spark_feeds(path) -> (columns, Spark's table_changes rows from version 0) of a table of
    OURS, read once per module: both tests of each table compare against the same read, and the
    tables do not change after their fixtures wrote them."""
    read: dict[Path, tuple[dict[str, str], list[dict]]] = {}

    def get(path: Path) -> tuple[dict[str, str], list[dict]]:
        if path not in read:
            cols = feed_columns(spark, path)
            read[path] = (cols, spark_feed(spark, path, cols))
        return read[path]

    return get


@pytest.mark.parametrize("lake,name", OURS, ids=OURS_IDS)
def test_our_feed_read_by_spark_and_deltars(lake, name, request, spark, spark_feeds, deltalake, medallion_bin):
    path = request.getfixturevalue(lake) / name
    cols, theirs = spark_feeds(path)
    ours = medallion_feed(medallion_bin, path, cols, "--from-version", "0")
    kinds = {r["_change_type"] for r in ours}
    assert {"insert", "update_preimage", "update_postimage"} <= kinds, f"{name}: the workload wrote only {kinds}"
    if name.startswith("gold/"):
        assert "delete" in kinds, f"{name}: replay deleted no window group: {kinds}"
    table = f"cdf_{lake}_{name.replace('/', '_')}"
    assert_same_feed(ours, theirs, f"{name}: medallion vs Spark table_changes")
    no_ts = {k: v for k, v in cols.items() if k != "_commit_timestamp"}
    assert_same_feed([{k: r[k] for k in no_ts} for r in ours], deltars_feed(path, no_ts),
                     f"{name}: medallion vs delta-rs load_cdf")
    # Spark's streaming read of the feed from version 0, run to the end (availableNow).
    query = (spark.readStream.format("delta").option("readChangeFeed", "true")
             .option("startingVersion", 0).load(str(path))
             .writeStream.format("memory").queryName(table)
             .trigger(availableNow=True).start())
    query.awaitTermination()
    streamed = spark.sql(f"SELECT * FROM {table}").collect()
    streamed = canonical_rows([{k: r.asDict(recursive=True)[k] for k in cols} for r in streamed], cols)
    assert_same_feed(ours, streamed, f"{name}: medallion vs Spark readChangeFeed (streaming)")


@pytest.mark.parametrize("lake,name", OURS, ids=OURS_IDS)
def test_invariant_c_from_spark(lake, name, request, spark, spark_feeds):
    """Invariant C as Spark sees it: from the empty table, version by version in order, each
    version's deletes and pre-images must be rows of the table at that point; removing them and
    adding its inserts and post-images gives, at the end, Spark's read of the table."""
    path = request.getfixturevalue(lake) / name
    cols, feed = spark_feeds(path)
    data = {k: v for k, v in cols.items() if k not in CDF}
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


def _live_tags(path: Path) -> dict[str, dict]:
    """The tags of the live files, from the JSON commits of the log (the table has no
    checkpoint of its own yet: medallion writes one every 10 versions, and this has fewer)."""
    import json

    live: dict[str, dict] = {}
    for f in sorted((path / "_delta_log").glob("*.json")):
        for line in f.read_text().splitlines():
            a = json.loads(line)
            if "remove" in a:
                live.pop(a["remove"]["path"], None)
            if "add" in a:
                live[a["add"]["path"]] = a["add"].get("tags") or {}
    return live


def _find(obj, name: str):
    """The objects named name anywhere in a JSON summary."""
    if isinstance(obj, dict):
        if obj.get("name") == name:
            yield obj
        for v in obj.values():
            yield from _find(v, name)
    elif isinstance(obj, list):
        for v in obj:
            yield from _find(v, name)


def test_gold_tags_survive_sparks_checkpoint(windows_lake, spark, medallion_bin):
    """Gold's files carry medallion's row tags (add.tags, a string map). Spark checkpoints the
    tagged log of gold/tumbling and keeps every tag in add.tags; medallion then reads the log
    from Spark's checkpoint, and a replay of the range decides from those tags that nothing
    changed (nothing committed). Runs after the feed tests of the module: a checkpoint changes
    no row, and the replay commits nothing."""
    import json

    import pyarrow.parquet as pq

    path = windows_lake / "gold" / "tumbling"
    ours = _live_tags(path)
    assert ours and all("medallion.rows" in t for t in ours.values()), f"untagged gold files: {ours}"
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, str(path)).checkpoint()
    cps = sorted((path / "_delta_log").glob("*.checkpoint*.parquet"))
    assert cps, "Spark wrote no checkpoint"
    adds = [r["add"] for r in pq.read_table(cps[-1], columns=["add"]).to_pylist() if r["add"]]
    theirs = {a["path"]: dict(a["tags"] or []) for a in adds}
    assert theirs == ours, "Spark's checkpoint lost or changed add.tags"
    cfg = windows_lake.parent / "pipeline.yaml"
    out = json.loads(run_medallion(medallion_bin, "run", "replay", "--config", str(cfg), "--format", "json",
                                   "--from", "2026-01-10T00:00:00Z", "--to", "2100-01-01T00:00:00Z", timeout=600))
    for name in ("tumbling", "sliding"):
        reps = [g for g in _find(out, name) if "inputRows" in g]
        assert reps and all(g.get("unchanged") and "tags" in g.get("note", "") for g in reps), \
            f"{name}: replay over Spark's checkpoint: {reps}"


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
