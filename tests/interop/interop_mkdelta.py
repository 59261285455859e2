"""Tables written by medallion's own writer (tests/interop/cmd/mkdelta, which calls the table,
merge and txlog packages), each with the rows, schema and history it must show to Spark and
delta-rs. As in interop_scenarios, the expectations are declared here in Python, never taken from
medallion's output.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path
from typing import Callable

from interop_rows import canonical_rows, parse_type
from interop_scenarios import (EVENTS, MERGE_SOURCE, PARTITIONED, PARTITIONED_ROWS, TYPES,
                               TYPES_ROWS, assert_has_checkpoint, assert_null_partitions, events,
                               merged_rows, replacement_rows)

MKDELTA_TIMEOUT_S = 120


def delta_type(t) -> object:
    """A parse_type tree as a Delta schema JSON type."""
    if isinstance(t, str):
        return t
    kind = t[0]
    if kind == "decimal":
        return f"decimal({t[1]},{t[2]})"
    if kind == "array":
        return {"type": "array", "elementType": delta_type(t[1]), "containsNull": True}
    if kind == "map":
        return {"type": "map", "keyType": delta_type(t[1]), "valueType": delta_type(t[2]),
                "valueContainsNull": True}
    return {"type": "struct", "fields": [
        {"name": n, "type": delta_type(ft), "nullable": True, "metadata": {}} for n, ft in t[1]]}


def delta_schema(columns: dict[str, str]) -> str:
    """{column: compact type} as a Delta schemaString (every column nullable)."""
    return json.dumps(delta_type(("struct", [(n, parse_type(t)) for n, t in columns.items()])))


def jsonl(rows: list[dict], columns: dict[str, str]) -> str:
    """Rows in the canonical JSON form, one object a line: mkdelta's input."""
    return "".join(json.dumps(r) + "\n" for r in canonical_rows(rows, columns))


class MkDelta:
    """Runs mkdelta subcommands against one table URL (with extra environment for S3)."""

    def __init__(self, binary: Path, env: dict[str, str] | None = None):
        self.binary = binary
        self.env = {**os.environ, **(env or {})}

    def __call__(self, sub: str, url: str, *args: str, stdin: str = "") -> str:
        cmd = [str(self.binary), sub, url, *args]
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, check=False,
                              timeout=MKDELTA_TIMEOUT_S, env=self.env)
        if proc.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-4000:]}")
        return proc.stdout

    def create(self, url: str, columns: dict[str, str], partition_by=()) -> None:
        args = ["--schema", delta_schema(columns)]
        if partition_by:
            args += ["--partition-by", ",".join(partition_by)]
        self("create", url, *args)

    def append(self, url: str, rows: list[dict], columns: dict[str, str], each=False) -> None:
        self("append", url, *(["--each"] if each else []), stdin=jsonl(rows, columns))


@dataclasses.dataclass(frozen=True)
class Written:
    """A table medallion writes: build(mkdelta, url) runs the operations; the rest is the oracle."""
    name: str
    build: Callable[[MkDelta, str], None]
    columns: dict[str, str]
    rows: list[dict]
    history: list[tuple[int, str]]  # (version, operation) that the readers must list
    exercises: Callable[[Path], None] | None = None  # raw _delta_log check (file tables only)


def _events_table(mk: MkDelta, url: str, *id_ranges) -> None:
    mk.create(url, EVENTS)
    for ids in id_ranges:
        mk.append(url, events(ids), EVENTS)


def build_append(mk, url):
    _events_table(mk, url, range(5), range(5, 10))


def build_overwrite(mk, url):
    _events_table(mk, url, range(5))
    mk("overwrite", url, stdin=jsonl(events(range(10, 13)), EVENTS))


def build_replace_where(mk, url):
    _events_table(mk, url, range(10))
    mk("overwrite", url, "--where", "id >= 5", stdin=jsonl(replacement_rows(), EVENTS))


def build_merge(mk, url):
    # Two files, so the merge rewrites one and leaves the other alone.
    _events_table(mk, url, range(5), range(5, 10))
    mk("merge", url, "--key", "id", "--set", "name",
       stdin=jsonl(MERGE_SOURCE, {**EVENTS, "op": "string"}))


def build_partitioned(mk, url):
    mk.create(url, PARTITIONED, ("part", "n"))
    mk.append(url, PARTITIONED_ROWS, PARTITIONED)


def build_types(mk, url):
    mk.create(url, TYPES)
    mk.append(url, TYPES_ROWS, TYPES)


def build_optimize(mk, url):
    _events_table(mk, url, range(3), range(3, 6), range(6, 9))
    mk("optimize", url)


def build_vacuum(mk, url):
    build_overwrite(mk, url)
    mk("vacuum", url)


def build_checkpoint(mk, url):
    _events_table(mk, url, range(3), range(3, 6), range(6, 9))
    mk("checkpoint", url, "--drop-commits")


def assert_only_commits_from(version: int) -> Callable[[Path], None]:
    def check(path: Path) -> None:
        assert_has_checkpoint(path)
        left = sorted(int(p.stem) for p in (path / "_delta_log").glob("*.json"))
        assert left == [version], f"{path}: commits {left} left, want only [{version}]"
    return check


def assert_vacuumed(path: Path) -> None:
    """The overwrite removed the first append's file; vacuum (retention 0) must delete it."""
    adds = []
    for f in sorted((path / "_delta_log").glob("*.json")):
        adds += [json.loads(line)["add"]["path"] for line in f.read_text().splitlines()
                 if '"add"' in line]
    present = [a for a in adds if (path / a).exists()]
    assert len(adds) == 2 and len(present) == 1, \
        f"{path}: {len(adds)} files ever added, {len(present)} still on disk (want 2 and 1)"


def assert_compacted(path: Path) -> None:
    actions = [json.loads(line) for line in
               (path / "_delta_log" / f"{4:020d}.json").read_text().splitlines()]
    adds = [a["add"] for a in actions if "add" in a]
    removes = [a["remove"] for a in actions if "remove" in a]
    assert len(removes) == 3 and len(adds) == 1, \
        f"{path}: optimize removed {len(removes)} and added {len(adds)} files (want 3 and 1)"
    assert all(a["dataChange"] is False for a in adds), f"{path}: optimize add with dataChange"


W = "WRITE"
WRITTEN = {w.name: w for w in [
    Written("med_append", build_append, EVENTS, events(range(10)),
            [(0, "CREATE TABLE"), (1, W), (2, W)]),
    Written("med_overwrite", build_overwrite, EVENTS, events(range(10, 13)),
            [(0, "CREATE TABLE"), (1, W), (2, W)]),
    Written("med_replace_where", build_replace_where, EVENTS,
            events(range(5)) + replacement_rows(), [(0, "CREATE TABLE"), (1, W), (2, W)]),
    Written("med_merge", build_merge, EVENTS, merged_rows(),
            [(0, "CREATE TABLE"), (1, W), (2, W), (3, "MERGE")]),
    Written("med_partitioned", build_partitioned, PARTITIONED, PARTITIONED_ROWS,
            [(0, "CREATE TABLE"), (1, W)], assert_null_partitions),
    Written("med_types", build_types, TYPES, TYPES_ROWS, [(0, "CREATE TABLE"), (1, W)]),
    Written("med_optimize", build_optimize, EVENTS, events(range(9)),
            [(0, "CREATE TABLE"), (1, W), (2, W), (3, W), (4, "OPTIMIZE")], assert_compacted),
    # VACUUM writes no commit (Delta only logs VACUUM START/END when vacuum logging is on).
    Written("med_vacuum", build_vacuum, EVENTS, events(range(10, 13)),
            [(0, "CREATE TABLE"), (1, W), (2, W)], assert_vacuumed),
    # Only the last commit is left next to the checkpoint: the readers must start from it.
    Written("med_checkpoint", build_checkpoint, EVENTS, events(range(9)), [(3, W)],
            assert_only_commits_from(3)),
]}

# Every table is also written on MinIO (s3://), where listing, conditional put and deletes go
# through medallion's S3 client instead of the file system.
ON_MINIO = list(WRITTEN)
