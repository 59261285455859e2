"""Change data feed, writing half (issue 32): the tables medallion creates with the feed on
(gold: delta.enableChangeDataFeed=true at writer version 4) stay writable by the other engines.
Spark (delta-spark 3.3.2) UPDATEs a gold table and delta-rs DELETEs from it, each writing its own
change files; then `medallion run replay` recomputes gold from silver, undoing both, with its
own change rows. Over every version, `medallion table changes`, Spark's table_changes and
delta-rs' load_cdf give the same rows, and the feed applied in order is the table (invariant C,
from Spark's read).
"""

from __future__ import annotations

import collections
import shutil
from pathlib import Path

import pytest

from interop_engines import run_medallion
from interop_rows import canonical_rows, row_key
from test_change_feed import CDF, assert_same_feed, deltars_feed, feed_columns, medallion_feed, spark_feed

pytestmark = pytest.mark.needs_medallion

GOLD = "gold/events_5m"


@pytest.fixture(scope="module")
def written_by_all(demo_lake, medallion_bin, spark, tmp_path_factory) -> tuple[Path, dict[str, int]]:
    lake = tmp_path_factory.mktemp("cdf-writes") / "lake"
    shutil.copytree(demo_lake, lake)
    cfg = lake / "pipeline.yaml"
    cfg.write_text("\n".join(f"lake: {lake}" if line.startswith("lake:") else line
                             for line in cfg.read_text().splitlines()) + "\n")
    path = lake / GOLD
    props = {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES delta.`{path}`").collect()}
    assert props.get("delta.enableChangeDataFeed") == "true", f"gold was not created with the feed: {props}"
    versions = {}
    spark.sql(f"UPDATE delta.`{path}` SET count = count + 1000 WHERE event_type = 'click'")
    versions["spark update"] = spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").first()["version"]
    from deltalake import DeltaTable

    dt = DeltaTable(str(path))
    dt.delete("event_type = 'view'")
    versions["delta-rs delete"] = DeltaTable(str(path)).version()
    silver = f"delta.`{lake / 'silver' / 'events'}`"
    lo, hi = spark.sql(f"SELECT min(event_time), max(event_time) FROM {silver}").first()
    run_medallion(medallion_bin, "run", "replay", "--config", str(cfg), "--format", "json",
                  "--from", lo.strftime("%Y-%m-%dT00:00:00Z"), "--to", "2100-01-01T00:00:00Z", timeout=600)
    versions["replay"] = DeltaTable(str(path)).version()
    assert versions["replay"] > versions["delta-rs delete"], f"replay committed nothing: {versions}"
    return path, versions


def test_engines_write_our_feed_tables(written_by_all, spark, medallion_bin):
    path, versions = written_by_all
    cols = feed_columns(spark, path)
    ours = medallion_feed(medallion_bin, path, cols, "--from-version", "0")
    kinds = collections.defaultdict(set)
    for r in ours:
        kinds[int(r["_commit_version"])].add(r["_change_type"])
    assert kinds[versions["spark update"]] == {"update_preimage", "update_postimage"}, kinds[versions["spark update"]]
    assert kinds[versions["delta-rs delete"]] == {"delete"}, kinds[versions["delta-rs delete"]]
    # Replay restores the clicks (update pairs back) and the views (inserts).
    assert {"update_preimage", "update_postimage", "insert"} <= kinds[versions["replay"]], kinds[versions["replay"]]
    assert_same_feed(ours, spark_feed(spark, path, cols), "medallion vs Spark table_changes")
    no_ts = {k: v for k, v in cols.items() if k != "_commit_timestamp"}
    assert_same_feed([{k: r[k] for k in no_ts} for r in ours], deltars_feed(path, no_ts),
                     "medallion vs delta-rs load_cdf")


def test_invariant_c_across_engines(written_by_all, spark):
    path, _ = written_by_all
    cols = feed_columns(spark, path)
    data = {k: v for k, v in cols.items() if k not in CDF}
    feed = spark_feed(spark, path, cols)
    state: collections.Counter = collections.Counter()
    for v in sorted({int(r["_commit_version"]) for r in feed}):
        rows = [r for r in feed if int(r["_commit_version"]) == v]
        gone = collections.Counter(row_key({c: r[c] for c in data}) for r in rows
                                   if r["_change_type"] in ("delete", "update_preimage"))
        assert not gone - state, f"version {v} removes rows the table does not hold"
        state -= gone
        state += collections.Counter(row_key({c: r[c] for c in data}) for r in rows
                                     if r["_change_type"] in ("insert", "update_postimage"))
    table = canonical_rows([{k: r[k] for k in data} for r in
                            (row.asDict(recursive=True) for row in spark.read.format("delta").load(str(path)).collect())], data)
    assert state == collections.Counter(row_key(r) for r in table), "the feed applied in order is not the table"
