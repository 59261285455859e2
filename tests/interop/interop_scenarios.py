"""Tables the reference engines write, each with its expected rows, schema and history.

A scenario builds one Delta table with one engine (Spark with Delta, or delta-rs) and declares,
independently of every reader, what the table must contain: the expected rows are Python values
computed here, the schema is a line of compact types, the history is the list of operations the
scenario performed. `exercises` checks, on the raw `_delta_log` files, that the table really uses
the feature the scenario is named after (deletion vectors, a checkpoint, column mapping, null
partitions), so a writer that silently fell back would fail the suite rather than weaken it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Callable

UTC = dt.timezone.utc
EVENTS = {"id": "long", "name": "string", "amount": "double"}
EVENTS_DDL = "id BIGINT, name STRING, amount DOUBLE"


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    writer: str  # "spark" or "deltars"
    build: Callable  # (spark or None, path) -> None
    columns: dict[str, str]
    rows: list[dict]
    history: list[str]  # operations, version 0 first
    partition_columns: tuple[str, ...] = ()
    exercises: Callable[[Path], None] | None = None


def event(i: int, name: str | None = None) -> dict:
    return {"id": i, "name": name if name is not None else f"n{i}", "amount": i * 1.25}


def events(ids) -> list[dict]:
    return [event(i) for i in ids]


def tuples(rows: list[dict], columns) -> list[tuple]:
    return [tuple(r[c] for c in columns) for r in rows]


# --- raw log inspection (no engine) ----------------------------------------------------------


def log_actions(path: Path) -> list[dict]:
    actions = []
    for f in sorted((path / "_delta_log").glob("*.json")):
        actions += [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return actions


def assert_has_deletion_vectors(path: Path) -> None:
    dvs = [a["add"]["deletionVector"] for a in log_actions(path)
           if "add" in a and a["add"].get("deletionVector")]
    assert dvs, f"{path}: no add action carries a deletionVector; the scenario did not use DVs"


def assert_no_deletion_vectors(path: Path) -> None:
    dvs = [a for a in log_actions(path) if "add" in a and a["add"].get("deletionVector")]
    assert not dvs, f"{path}: copy-on-write scenario unexpectedly wrote deletion vectors"


def assert_has_checkpoint(path: Path) -> None:
    log = path / "_delta_log"
    assert (log / "_last_checkpoint").is_file(), f"{log}: no _last_checkpoint"
    assert list(log.glob("*.checkpoint*.parquet")), f"{log}: no checkpoint parquet"


def assert_column_mapping(path: Path) -> None:
    metas = [a["metaData"] for a in log_actions(path) if "metaData" in a]
    assert metas and metas[-1]["configuration"].get("delta.columnMapping.mode") == "name", \
        f"{path}: column mapping mode is not 'name'"
    fields = json.loads(metas[-1]["schemaString"])["fields"]
    physical = {f["name"]: f["metadata"].get("delta.columnMapping.physicalName") for f in fields}
    assert any(p and p != n for n, p in physical.items()), \
        f"{path}: every physical name equals its logical name {physical}; mapping is not exercised"


def assert_column_mapping_id(path: Path) -> None:
    """Spark wrote column mapping in id mode, with field ids in the Parquet files."""
    metas = [a["metaData"] for a in log_actions(path) if "metaData" in a]
    assert metas and metas[-1]["configuration"].get("delta.columnMapping.mode") == "id", \
        f"{path}: column mapping mode is not 'id'"
    fields = json.loads(metas[-1]["schemaString"])["fields"]
    assert all("delta.columnMapping.id" in f["metadata"] for f in fields), \
        f"{path}: a field has no column mapping id: {fields}"


def assert_null_partitions(path: Path) -> None:
    values = [a["add"]["partitionValues"] for a in log_actions(path) if "add" in a]
    assert any(None in v.values() for v in values), f"{path}: no null partition value in {values}"


# --- shared data -----------------------------------------------------------------------------

MERGE_SOURCE = [
    {"id": 3, "name": "updated", "amount": 0.0, "op": "update"},
    {"id": 5, "name": "gone", "amount": 0.0, "op": "delete"},
    {"id": 20, "name": "inserted", "amount": 20.5, "op": "insert"},
]


def merged_rows() -> list[dict]:
    rows = [event(i, "updated" if i == 3 else None) for i in range(10) if i != 5]
    return rows + [{"id": 20, "name": "inserted", "amount": 20.5}]


def replacement_rows() -> list[dict]:
    return [event(i, "replaced") for i in (5, 6, 7)]


PARTITIONED = {"part": "string", "n": "integer", "id": "long"}
PARTITIONED_ROWS = [
    {"part": p, "n": n, "id": i}
    for i, (p, n) in enumerate([("a", 1), ("A/A", 1), ("B B", 2), ("x=y%z", None), (None, 1),
                                (None, None), ("a", None), ("ünï", 3)])
]

TYPES = {
    "b": "byte", "s": "short", "i": "integer", "l": "long", "f": "float", "d": "double",
    "dec": "decimal(10,2)", "big": "decimal(38,18)", "str": "string", "bin": "binary",
    "flag": "boolean", "day": "date", "ts": "timestamp", "ntz": "timestamp_ntz",
    "st": "struct<a:integer,b:string>", "arr": "array<long>", "m": "map<string,integer>",
}
TYPES_DDL = ("b TINYINT, s SMALLINT, i INT, l BIGINT, f FLOAT, d DOUBLE, dec DECIMAL(10,2), "
             "big DECIMAL(38,18), str STRING, bin BINARY, flag BOOLEAN, day DATE, ts TIMESTAMP, "
             "ntz TIMESTAMP_NTZ, st STRUCT<a: INT, b: STRING>, arr ARRAY<BIGINT>, "
             "m MAP<STRING, INT>")
TYPES_ROWS = [
    {"b": -128, "s": -32768, "i": -(2**31), "l": -(2**63), "f": -1.5, "d": -1e300,
     "dec": Decimal("-99999999.99"), "big": Decimal("-12345678901234567890.123456789012345678"),
     "str": "", "bin": b"", "flag": False, "day": dt.date(1900, 1, 1),
     "ts": dt.datetime(1900, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
     "ntz": dt.datetime(1969, 12, 31, 23, 59, 59, 999999), "st": {"a": -1, "b": ""},
     "arr": [], "m": {}},
    {"b": 127, "s": 32767, "i": 2**31 - 1, "l": 2**63 - 1, "f": 3.4028234663852886e38,
     "d": 1.7976931348623157e308, "dec": Decimal("99999999.99"),
     "big": Decimal("99999999999999999999.999999999999999999"),
     "str": 'héllo "quoted"\n\ttab ünï 😀', "bin": b"\x00\xff\x10", "flag": True,
     "day": dt.date(9999, 12, 31), "ts": dt.datetime(2262, 4, 11, 23, 47, 16, 854775, tzinfo=UTC),
     "ntz": dt.datetime(2024, 2, 29, 12, 0, 0), "st": {"a": None, "b": "x"},
     "arr": [1, None, 3], "m": {"k": 1, "z": None}},
    {"b": 1, "s": 2, "i": 3, "l": 4, "f": 1.1, "d": 0.1, "dec": Decimal("1.05"),
     "big": Decimal("0.000000000000000001"), "str": "abc", "bin": b"abc", "flag": True,
     "day": dt.date(2024, 2, 29), "ts": dt.datetime(2021, 9, 8, 11, 11, 11, tzinfo=UTC),
     "ntz": dt.datetime(2021, 9, 8, 11, 11, 11, 123456), "st": {"a": 7, "b": None},
     "arr": [None], "m": {"a": None}},
    {c: None for c in TYPES},
]


# --- Spark -----------------------------------------------------------------------------------


def _spark_df(spark, rows, columns, ddl):
    return spark.createDataFrame(tuples(rows, columns), ddl)


def _spark_events(spark, ids):
    return _spark_df(spark, events(ids), EVENTS, EVENTS_DDL).repartition(2)


def _spark_create(spark, path, ddl, props):
    tbl = ", ".join(f"'{k}' = '{v}'" for k, v in props.items())
    spark.sql(f"CREATE TABLE delta.`{path}` ({ddl}) USING delta TBLPROPERTIES ({tbl})")


def spark_append(spark, path):
    _spark_events(spark, range(5)).write.format("delta").save(str(path))
    _spark_events(spark, range(5, 10)).write.format("delta").mode("append").save(str(path))


def spark_overwrite(spark, path):
    _spark_events(spark, range(5)).write.format("delta").save(str(path))
    _spark_events(spark, range(10, 13)).write.format("delta").mode("overwrite").save(str(path))


def spark_replace_where(spark, path):
    _spark_events(spark, range(10)).write.format("delta").save(str(path))
    _spark_df(spark, replacement_rows(), EVENTS, EVENTS_DDL).write.format("delta") \
        .mode("overwrite").option("replaceWhere", "id >= 5").save(str(path))


def spark_merge(spark, path):
    _spark_events(spark, range(10)).write.format("delta").save(str(path))
    cols = [*EVENTS, "op"]
    spark.createDataFrame(tuples(MERGE_SOURCE, cols), EVENTS_DDL + ", op STRING") \
        .createOrReplaceTempView("merge_src")
    spark.sql(f"""
        MERGE INTO delta.`{path}` t USING merge_src s ON t.id = s.id
        WHEN MATCHED AND s.op = 'delete' THEN DELETE
        WHEN MATCHED THEN UPDATE SET t.name = s.name
        WHEN NOT MATCHED THEN INSERT (id, name, amount) VALUES (s.id, s.name, s.amount)""")


def spark_delete(spark, path):
    _spark_events(spark, range(10)).write.format("delta").save(str(path))
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id % 3 = 0")


def spark_delete_dv(spark, path):
    _spark_create(spark, path, EVENTS_DDL, {"delta.enableDeletionVectors": "true"})
    _spark_events(spark, range(10)).write.format("delta").mode("append").save(str(path))
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id % 3 = 0")


def spark_checkpoint(spark, path):
    _spark_create(spark, path, EVENTS_DDL, {"delta.checkpointInterval": "2"})
    for start in (0, 3, 6):
        _spark_events(spark, range(start, start + 3)).write.format("delta").mode("append") \
            .save(str(path))


def spark_column_mapping(spark, path):
    _spark_create(spark, path, EVENTS_DDL, {
        "delta.columnMapping.mode": "name", "delta.minReaderVersion": "2",
        "delta.minWriterVersion": "5"})
    _spark_events(spark, range(5)).write.format("delta").mode("append").save(str(path))
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN name TO label")
    spark.sql(f"ALTER TABLE delta.`{path}` DROP COLUMN amount")
    spark.createDataFrame([(5, "five"), (6, None)], "id BIGINT, label STRING") \
        .write.format("delta").mode("append").save(str(path))


def spark_column_mapping_id(spark, path):
    """As spark_column_mapping, in id mode (Iceberg-compatible tables): a rename and a drop, so
    that only the field ids bind the old files' columns."""
    _spark_create(spark, path, EVENTS_DDL, {
        "delta.columnMapping.mode": "id", "delta.minReaderVersion": "2",
        "delta.minWriterVersion": "5"})
    _spark_events(spark, range(5)).write.format("delta").mode("append").save(str(path))
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN name TO label")
    spark.sql(f"ALTER TABLE delta.`{path}` DROP COLUMN amount")
    spark.createDataFrame([(5, "five"), (6, None)], "id BIGINT, label STRING") \
        .write.format("delta").mode("append").save(str(path))


def spark_partitioned(spark, path):
    _spark_df(spark, PARTITIONED_ROWS, PARTITIONED, "part STRING, n INT, id BIGINT") \
        .write.format("delta").partitionBy("part", "n").save(str(path))


def spark_types(spark, path):
    _spark_df(spark, TYPES_ROWS, TYPES, TYPES_DDL).coalesce(1) \
        .write.format("delta").save(str(path))


# --- delta-rs --------------------------------------------------------------------------------


def _arrow_events(rows, extra=()):
    import pyarrow as pa

    fields = [("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64()), *extra]
    schema = pa.schema(fields)
    return pa.Table.from_pylist([{k: r[k] for k, _ in fields} for r in rows], schema=schema)


def _write(path, table, **kw):
    from deltalake import write_deltalake

    write_deltalake(str(path), table, **kw)


def deltars_append(_spark, path):
    _write(path, _arrow_events(events(range(5))))
    _write(path, _arrow_events(events(range(5, 10))), mode="append")


def deltars_overwrite(_spark, path):
    _write(path, _arrow_events(events(range(5))))
    _write(path, _arrow_events(events(range(10, 13))), mode="overwrite")


def deltars_replace_where(_spark, path):
    _write(path, _arrow_events(events(range(10))))
    _write(path, _arrow_events(replacement_rows()), mode="overwrite", predicate="id >= 5")


def deltars_merge(_spark, path):
    import pyarrow as pa
    from deltalake import DeltaTable

    _write(path, _arrow_events(events(range(10))))
    source = _arrow_events(MERGE_SOURCE, extra=[("op", pa.string())])
    (DeltaTable(str(path))
     .merge(source, predicate="t.id = s.id", source_alias="s", target_alias="t")
     .when_matched_delete(predicate="s.op = 'delete'")
     .when_matched_update(updates={"name": "s.name"})
     .when_not_matched_insert(updates={"id": "s.id", "name": "s.name", "amount": "s.amount"})
     .execute())


def deltars_delete(_spark, path):
    from deltalake import DeltaTable

    _write(path, _arrow_events(events(range(10))))
    DeltaTable(str(path)).delete("id % 3 = 0")


def deltars_checkpoint(_spark, path):
    from deltalake import DeltaTable

    for start in (0, 3, 6):
        _write(path, _arrow_events(events(range(start, start + 3))), mode="append")
    DeltaTable(str(path)).create_checkpoint()


def deltars_partitioned(_spark, path):
    import pyarrow as pa

    schema = pa.schema([("part", pa.string()), ("n", pa.int32()), ("id", pa.int64())])
    _write(path, pa.Table.from_pylist(PARTITIONED_ROWS, schema=schema), partition_by=["part", "n"])


def deltars_types(_spark, path):
    import pyarrow as pa

    schema = pa.schema([
        ("b", pa.int8()), ("s", pa.int16()), ("i", pa.int32()), ("l", pa.int64()),
        ("f", pa.float32()), ("d", pa.float64()), ("dec", pa.decimal128(10, 2)),
        ("big", pa.decimal128(38, 18)), ("str", pa.string()), ("bin", pa.binary()),
        ("flag", pa.bool_()), ("day", pa.date32()), ("ts", pa.timestamp("us", tz="UTC")),
        ("ntz", pa.timestamp("us")),
        ("st", pa.struct([("a", pa.int32()), ("b", pa.string())])),
        ("arr", pa.list_(pa.int64())), ("m", pa.map_(pa.string(), pa.int32())),
    ])
    rows = [{**r, "m": None if r["m"] is None else list(r["m"].items())} for r in TYPES_ROWS]
    _write(path, pa.Table.from_pylist(rows, schema=schema))


# --- the catalogue ---------------------------------------------------------------------------

_ONE_FEATURE = {
    "append": (EVENTS, events(range(10)), None),
    "overwrite": (EVENTS, events(range(10, 13)), None),
    "replace_where": (EVENTS, events(range(5)) + replacement_rows(), None),
    "merge": (EVENTS, merged_rows(), assert_no_deletion_vectors),
    "delete": (EVENTS, events(i for i in range(10) if i % 3), assert_no_deletion_vectors),
    "checkpoint": (EVENTS, events(range(9)), assert_has_checkpoint),
}


def _catalogue() -> dict[str, Scenario]:
    out: list[Scenario] = []
    spark_history = {
        "append": ["WRITE", "WRITE"],
        "overwrite": ["WRITE", "WRITE"],
        "replace_where": ["WRITE", "WRITE"],
        "merge": ["WRITE", "MERGE"],
        "delete": ["WRITE", "DELETE"],
        "checkpoint": ["CREATE TABLE", "WRITE", "WRITE", "WRITE"],
    }
    # delta-rs records its first write_deltalake as WRITE too (not CREATE TABLE).
    deltars_history = {
        "append": ["WRITE", "WRITE"],
        "overwrite": ["WRITE", "WRITE"],
        "replace_where": ["WRITE", "WRITE"],
        "merge": ["WRITE", "MERGE"],
        "delete": ["WRITE", "DELETE"],
        "checkpoint": ["WRITE", "WRITE", "WRITE"],
    }
    for feature, (columns, rows, exercises) in _ONE_FEATURE.items():
        out.append(Scenario(f"spark_{feature}", "spark", globals()[f"spark_{feature}"], columns,
                            rows, spark_history[feature], exercises=exercises))
        out.append(Scenario(f"deltars_{feature}", "deltars", globals()[f"deltars_{feature}"],
                            columns, rows, deltars_history[feature], exercises=exercises))
    out += [
        Scenario("spark_delete_dv", "spark", spark_delete_dv, EVENTS,
                 events(i for i in range(10) if i % 3), ["CREATE TABLE", "WRITE", "DELETE"],
                 exercises=assert_has_deletion_vectors),
        Scenario("spark_column_mapping", "spark", spark_column_mapping,
                 {"id": "long", "label": "string"},
                 [{"id": i, "label": f"n{i}"} for i in range(5)]
                 + [{"id": 5, "label": "five"}, {"id": 6, "label": None}],
                 ["CREATE TABLE", "WRITE", "RENAME COLUMN", "DROP COLUMNS", "WRITE"],
                 exercises=assert_column_mapping),
        Scenario("spark_column_mapping_id", "spark", spark_column_mapping_id,
                 {"id": "long", "label": "string"},
                 [{"id": i, "label": f"n{i}"} for i in range(5)]
                 + [{"id": 5, "label": "five"}, {"id": 6, "label": None}],
                 ["CREATE TABLE", "WRITE", "RENAME COLUMN", "DROP COLUMNS", "WRITE"],
                 exercises=assert_column_mapping_id),
        Scenario("spark_partitioned", "spark", spark_partitioned, PARTITIONED, PARTITIONED_ROWS,
                 ["WRITE"], ("part", "n"), assert_null_partitions),
        Scenario("deltars_partitioned", "deltars", deltars_partitioned, PARTITIONED,
                 PARTITIONED_ROWS, ["WRITE"], ("part", "n"), assert_null_partitions),
        Scenario("spark_types", "spark", spark_types, TYPES, TYPES_ROWS, ["WRITE"]),
        Scenario("deltars_types", "deltars", deltars_types, TYPES, TYPES_ROWS, ["WRITE"]),
    ]
    return {s.name: s for s in out}


SCENARIOS = _catalogue()
