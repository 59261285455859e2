"""Writer features (issue 30, "writer obligations"): tables made by Spark (delta-spark 3.3.2) or
delta-rs with one writer feature on, then written by medallion's writer (mkdelta: the table and
merge packages; the medallion CLI for the pipeline). For each feature medallion either honours
what the protocol requires of a writer, checked by Spark reading the result (and running its own
checks on our commits), or refuses the write before any data file is written, with an error that
names the feature. The expected rows are written here, never taken from medallion's output.

docs/table-features.md is the user-facing list these tests hold medallion to.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from interop_engines import delta_log_versions, run_medallion
from interop_mkdelta import MKDELTA_TIMEOUT_S, MkDelta, jsonl

pytestmark = pytest.mark.needs_medallion

COLUMNS = {"id": "long", "amount": "double"}


def spark_table(spark, path: Path, ddl: str, props: dict[str, str] | None = None,
                cluster_by: str = "") -> str:
    """Creates the table at path with Spark and returns its file:// URL."""
    sql = f"CREATE TABLE delta.`{path}` ({ddl}) USING delta"
    if cluster_by:
        sql += f" CLUSTER BY ({cluster_by})"
    if props:
        sql += " TBLPROPERTIES (" + ", ".join(f"'{k}' = '{v}'" for k, v in props.items()) + ")"
    spark.sql(sql)
    return path.resolve().as_uri()


def builder_table(spark, path: Path, columns: list[tuple]) -> str:
    """Creates the table at path with delta-spark's DeltaTable builder (generated and identity
    columns are not available to CREATE TABLE on a path): columns are (name, type) or
    (name, type, {"generatedAlwaysAs": ...}) tuples. Returns its file:// URL."""
    from delta.tables import DeltaTable

    b = DeltaTable.create(spark).location(str(path))
    for name, typ, *extra in columns:
        b = b.addColumn(name, typ, **(extra[0] if extra else {}))
    b.execute()
    return path.resolve().as_uri()


def spark_rows(spark, path: Path, columns: list[str]) -> list[tuple]:
    df = spark.read.format("delta").load(str(path))
    return sorted(tuple(r[c] for c in columns) for r in df.collect())


def protocol(path: Path) -> dict:
    """The newest protocol action, read from the JSON log (no engine involved)."""
    found = {}
    for v in delta_log_versions(path):
        for line in (path / "_delta_log" / f"{v:020d}.json").read_text().splitlines():
            action = json.loads(line)
            if "protocol" in action:
                found = action["protocol"]
    return found


def data_files(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*.parquet") if "_delta_log" not in p.parts}


def refused(mk: MkDelta, sub: str, url: str, *args: str, stdin: str = "") -> str:
    """Runs an mkdelta subcommand that must fail; returns its stderr."""
    proc = subprocess.run([str(mk.binary), sub, url, *args], input=stdin, capture_output=True,
                          text=True, check=False, timeout=MKDELTA_TIMEOUT_S, env=mk.env)
    assert proc.returncode != 0, f"mkdelta {sub} {url} was accepted:\n{proc.stdout}"
    return proc.stderr


def assert_refused_before_writing(mk, path: Path, sub: str, url: str, *args: str, stdin: str = "",
                                  names: tuple[str, ...]) -> None:
    before_versions, before_files = delta_log_versions(path), data_files(path)
    err = refused(mk, sub, url, *args, stdin=stdin)
    for want in names:
        assert want in err, f"the refusal of mkdelta {sub} does not say {want!r}:\n{err}"
    assert delta_log_versions(path) == before_versions, "a refused write committed"
    assert data_files(path) == before_files, "a refused write left data files behind"


def rows(ids, amount=1.0) -> list[dict]:
    return [{"id": i, "amount": float(amount)} for i in ids]


def test_change_data_feed(spark, mkdelta_bin, tmp_path):
    """CDF on (writer 4, made by Spark): appends need no change files (readers see inserts); a
    MERGE that updates a row writes its pre and post image in the same commit, as Spark's own
    MERGE does; optimize (dataChange=false) writes none. Spark's readChangeFeed is the oracle."""
    path = tmp_path / "cdf"
    url = spark_table(spark, path, "id BIGINT, amount DOUBLE", {"delta.enableChangeDataFeed": "true"})
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 1.0), (2, 2.0)")
    mk = MkDelta(mkdelta_bin)

    def changes_from(v):
        return sorted((r["id"], r["amount"], r["_change_type"]) for r in
                      spark.read.format("delta").option("readChangeFeed", "true")
                      .option("startingVersion", v).load(str(path)).collect())

    mk.append(url, rows([3, 4]), COLUMNS)
    appended = max(delta_log_versions(path))
    assert changes_from(appended) == [(3, 1.0, "insert"), (4, 1.0, "insert")]
    mk("merge", url, "--key", "id", "--set", "amount",
       stdin=jsonl([{"id": 1, "amount": 9.0, "op": "update"}], {**COLUMNS, "op": "string"}))
    merged = max(delta_log_versions(path))
    assert merged == appended + 1
    assert changes_from(merged) == [(1, 1.0, "update_preimage"), (1, 9.0, "update_postimage")]
    assert list((path / "_change_data").rglob("*.parquet")), "the MERGE wrote no change file"
    mk("optimize", url)  # dataChange=false: no change rows
    assert max(delta_log_versions(path)) > merged
    assert changes_from(merged + 1) == []
    assert spark_rows(spark, path, ["id", "amount"]) == [(1, 9.0), (2, 2.0), (3, 1.0), (4, 1.0)]


def test_append_only(spark, mkdelta_bin, tmp_path):
    path = tmp_path / "append_only"
    url = spark_table(spark, path, "id BIGINT, amount DOUBLE", {"delta.appendOnly": "true"})
    mk = MkDelta(mkdelta_bin)
    mk.append(url, rows([1, 2]), COLUMNS)
    mk.append(url, rows([3]), COLUMNS)
    assert_refused_before_writing(
        mk, path, "merge", url, "--key", "id", "--set", "amount",
        stdin=jsonl([{"id": 1, "amount": 9.0, "op": "update"}], {**COLUMNS, "op": "string"}),
        names=("appendOnly", "delta.appendOnly=false"))
    mk("optimize", url)  # rearranging is allowed
    assert spark_rows(spark, path, ["id", "amount"]) == [(1, 1.0), (2, 1.0), (3, 1.0)]


def test_check_constraint_is_enforced(spark, mkdelta_bin, tmp_path):
    path = tmp_path / "check"
    url = spark_table(spark, path, "id BIGINT, amount DOUBLE")
    spark.sql(f"ALTER TABLE delta.`{path}` ADD CONSTRAINT positive CHECK (amount > 0)")
    assert protocol(path)["minWriterVersion"] >= 3
    mk = MkDelta(mkdelta_bin)
    mk.append(url, rows([1, 2], amount=5), COLUMNS)
    assert_refused_before_writing(mk, path, "append", url, stdin=jsonl(rows([3], amount=-1), COLUMNS),
                                  names=("CHECK constraint positive", "amount > 0"))
    # Spark's own check holds on what we committed: it accepts its next insert.
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (4, 1.5)")
    assert spark_rows(spark, path, ["id", "amount"]) == [(1, 5.0), (2, 5.0), (4, 1.5)]


def test_generated_column_is_checked(spark, mkdelta_bin, tmp_path):
    path = tmp_path / "generated"
    url = builder_table(spark, path, [("id", "BIGINT"), ("amount", "DOUBLE"),
                                      ("twice", "BIGINT", {"generatedAlwaysAs": "id * 2"})])
    cols = {**COLUMNS, "twice": "long"}
    mk = MkDelta(mkdelta_bin)
    mk.append(url, [{"id": 1, "amount": 1.0, "twice": 2}], cols)
    assert_refused_before_writing(mk, path, "append", url,
                                  stdin=jsonl([{"id": 2, "amount": 1.0, "twice": 5}], cols),
                                  names=("generated column twice", "id * 2"))
    assert spark_rows(spark, path, ["id", "twice"]) == [(1, 2)]


def test_identity_column_is_refused(spark, mkdelta_bin, tmp_path):
    path = tmp_path / "identity"
    from delta.tables import IdentityGenerator

    url = builder_table(spark, path, [("key", "BIGINT", {"generatedAlwaysAs": IdentityGenerator()}),
                                      ("id", "BIGINT"), ("amount", "DOUBLE")])
    spark.sql(f"INSERT INTO delta.`{path}` (id, amount) VALUES (1, 1.0)")
    mk = MkDelta(mkdelta_bin)
    assert_refused_before_writing(mk, path, "append", url, stdin=jsonl(rows([2]), COLUMNS),
                                  names=("identityColumns", "key"))


def test_row_tracking_is_refused(spark, mkdelta_bin, tmp_path):
    path = tmp_path / "row_tracking"
    url = spark_table(spark, path, "id BIGINT, amount DOUBLE", {"delta.enableRowTracking": "true"})
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 1.0)")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (2, 1.0)")
    assert "rowTracking" in protocol(path)["writerFeatures"]
    mk = MkDelta(mkdelta_bin)
    assert_refused_before_writing(mk, path, "append", url, stdin=jsonl(rows([3]), COLUMNS),
                                  names=("rowTracking",))
    assert_refused_before_writing(mk, path, "optimize", url, names=("rowTracking",))


@pytest.mark.parametrize("mode", ["name", "id"])
def test_column_mapping_is_honoured(spark, mkdelta_bin, tmp_path, mode):
    """Our files use the physical names (and field ids): Spark reads them under renamed columns."""
    path = tmp_path / f"mapping_{mode}"
    url = spark_table(spark, path, "id BIGINT, value DOUBLE", {"delta.columnMapping.mode": mode})
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 1.0)")
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN value TO amount")
    mk = MkDelta(mkdelta_bin)
    mk.append(url, rows([2, 3], amount=2), COLUMNS)
    expected = [(1, 1.0), (2, 2.0), (3, 2.0)]
    assert spark_rows(spark, path, ["id", "amount"]) == expected
    mk("optimize", url)
    assert spark_rows(spark, path, ["id", "amount"]) == expected


def test_deletion_vectors_stay_deleted(spark, mkdelta_bin, tmp_path):
    """A rewrite (optimize, merge) of a file with a DV keeps the rows the DV deleted deleted."""
    path = tmp_path / "dv"
    url = spark_table(spark, path, "id BIGINT, amount DOUBLE", {"delta.enableDeletionVectors": "true"})
    spark.sql(f"INSERT INTO delta.`{path}` SELECT id, 1.0 FROM range(0, 20)")
    spark.sql(f"INSERT INTO delta.`{path}` SELECT id, 1.0 FROM range(20, 30)")
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id % 3 = 0")
    assert any("deletionVector" in line and '"add"' in line
               for v in delta_log_versions(path)
               for line in (path / "_delta_log" / f"{v:020d}.json").read_text().splitlines()), \
        "Spark's DELETE wrote no deletion vector"
    kept = [i for i in range(30) if i % 3]
    mk = MkDelta(mkdelta_bin)
    mk("merge", url, "--key", "id", "--set", "amount",
       stdin=jsonl([{"id": 1, "amount": 7.0, "op": "update"}], {**COLUMNS, "op": "string"}))
    mk("optimize", url)
    assert spark_rows(spark, path, ["id", "amount"]) == [(i, 7.0 if i == 1 else 1.0) for i in kept]


def test_in_commit_timestamps(spark, mkdelta_bin, tmp_path):
    """Our commits carry commitInfo first with inCommitTimestamp, later than the one before."""
    path = tmp_path / "ict"
    url = spark_table(spark, path, "id BIGINT, amount DOUBLE", {"delta.enableInCommitTimestamps": "true"})
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 1.0)")
    assert "inCommitTimestamp" in protocol(path)["writerFeatures"]
    mk = MkDelta(mkdelta_bin)
    mk.append(url, rows([2]), COLUMNS)
    mk.append(url, rows([3]), COLUMNS)
    stamps = []
    for v in delta_log_versions(path):
        first = json.loads((path / "_delta_log" / f"{v:020d}.json").read_text().splitlines()[0])
        assert "commitInfo" in first, f"version {v}: the first action is not commitInfo"
        stamps.append(first["commitInfo"]["inCommitTimestamp"])
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps), stamps
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    by_version = {r["version"]: int(r["timestamp"].timestamp() * 1000) for r in history}
    assert [by_version[v] for v in delta_log_versions(path)] == stamps
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (4, 1.0)")  # Spark continues from ours
    assert spark_rows(spark, path, ["id"]) == [(1,), (2,), (3,), (4,)]


def test_clustered_table(spark, mkdelta_bin, tmp_path):
    """Liquid clustering: appends keep the delta.clustering domain and carry stats on the
    clustering column; medallion's optimize is no clustering implementation: refused."""
    path = tmp_path / "clustered"
    url = spark_table(spark, path, "id BIGINT, amount DOUBLE", cluster_by="id")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 1.0)")
    assert {"clustering", "domainMetadata"} <= set(protocol(path)["writerFeatures"])
    mk = MkDelta(mkdelta_bin)
    mk.append(url, rows([2, 3]), COLUMNS)
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
    assert list(detail["clusteringColumns"]) == ["id"]
    ours = json.loads([line for line in (path / "_delta_log" / f"{max(delta_log_versions(path)):020d}.json")
                       .read_text().splitlines() if '"add"' in line][0])["add"]
    assert "id" in json.loads(ours["stats"])["minValues"]
    assert_refused_before_writing(mk, path, "optimize", url, names=("clustering",))
    assert spark_rows(spark, path, ["id"]) == [(1,), (2,), (3,)]


# Reproduction 4 of issue 30: the change data feed set on a gold table by delta-rs, then merge-late.

LANDING = {
    "a.json": [("e1", "2024-01-01T00:00:00Z", 1.0), ("e2", "2024-01-01T00:01:00Z", 2.0),
               ("e3", "2024-01-01T00:02:00Z", 3.0)],
    "b.json": [("e4", "2024-01-01T01:00:00Z", 4.0)],  # moves the watermark past 00:05
    "c.json": [("e5", "2024-01-01T00:03:00Z", 5.0)],  # late: its window was emitted
}


def pipeline(root: Path) -> Path:
    cfg = root / "pipeline.yaml"
    cfg.write_text(
        f"lake: {root / 'lake'}\n"
        "landing: {path: landing/events/, format: json, max_files_per_trigger: 1}\n"
        "schema:\n"
        "  - {name: event_id,   type: string, required: true}\n"
        "  - {name: event_type, type: string}\n"
        "  - {name: amount,     type: double}\n"
        "  - {name: event_time, type: timestamp, required: true}\n"
        "tables: {bronze: bronze/events, rejects: bronze/rejects, silver: silver/events}\n"
        "stream:\n"
        "  name: events\n"
        "  checkpoint: _checkpoints/events\n"
        "  event_time: event_time\n"
        "  watermark: 2m\n"
        "  max_future_skew: 1h\n"
        "  max_files_per_trigger: 1\n"
        "  dedup: [event_id]\n"
        "  trigger: available-now\n"
        "gold:\n"
        "  - name: t5m\n"
        "    table: gold/t5m\n"
        "    quarantine: silver/late_t5m\n"
        "    window: {type: tumbling, size: 5m}\n"
        "    group_by: [event_type]\n"
        "    aggregates: [{fn: count, as: count}]\n")
    (root / "lake" / "landing" / "events").mkdir(parents=True)
    return cfg


def land(root: Path, name: str) -> None:
    (root / "lake" / "landing" / "events" / name).write_text("".join(json.dumps(
        {"event_id": e, "event_type": "click", "amount": a, "event_time": t}) + "\n"
        for e, t, a in LANDING[name]))


def gold_counts(deltalake, path: Path) -> dict[str, int]:
    table = deltalake.DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    return {str(r["window"]["start"]): r["count"] for r in table}


def test_merge_late_writes_the_change_data_feed_of_a_gold_table(tmp_path, medallion_bin, deltalake, spark):
    """A gold table whose feed another tool turned on (delta-rs) gets merge-late's correction as
    a pre/post pair in the same commit, read back by Spark's readChangeFeed."""
    cfg = pipeline(tmp_path)
    run = lambda *a: run_medallion(medallion_bin, *a, "--config", str(cfg), timeout=300)  # noqa: E731
    for name in LANDING:  # one object a micro-batch: e5 comes after the watermark passed it
        land(tmp_path, name)
        run("run", "ingest")
        run("run", "stream")
    gold = tmp_path / "lake" / "gold" / "t5m"
    before = gold_counts(deltalake, gold)
    assert sorted(before.values()) == [3], before  # [00:00, 00:05); e5 is in the quarantine
    deltalake.DeltaTable(str(gold)).alter.set_table_properties({"delta.enableChangeDataFeed": "true"})
    assert protocol(gold)["minWriterVersion"] >= 4 or "changeDataFeed" in protocol(gold).get("writerFeatures", [])
    turned_on = max(delta_log_versions(gold))

    run("run", "merge-late")
    merged = max(delta_log_versions(gold))
    assert merged == turned_on + 1, "merge-late did not commit once"
    assert sorted(gold_counts(deltalake, gold).values()) == [4]
    changes = (spark.read.format("delta").option("readChangeFeed", "true")
               .option("startingVersion", merged).load(str(gold)).collect())
    assert sorted((r["_change_type"], r["count"]) for r in changes) == [
        ("update_postimage", 4), ("update_preimage", 3)]
    assert sorted(r["count"] for r in spark.read.format("delta").load(str(gold)).collect()) == [4]


def test_optimize_names_the_table_and_feature(tmp_path, medallion_bin, spark):
    """`medallion table optimize` on a table it may not rewrite names the table and the feature."""
    path = tmp_path / "rt"
    url = spark_table(spark, path, "id BIGINT", {"delta.enableRowTracking": "true"})
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1)")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (2)")
    proc = subprocess.run([str(medallion_bin), "table", "optimize", url], capture_output=True,
                          text=True, timeout=120, check=False, env=os.environ)
    assert proc.returncode != 0
    assert "rowTracking" in proc.stderr and str(path) in proc.stderr, proc.stderr
