"""Differential reader test (issue 25 item 2): medallion's Parquet reader, through every read
path of package table, must return exactly what pyarrow returns for the same file.

Files (interop_readerdiff has the generators and the comparison):
  * written by pyarrow: every Delta primitive type (long, int, short, byte, double, float, string,
    binary, boolean, date, timestamp as us/ms/ns, timestamp_ntz, decimals of small and large
    precision, INT32 read as long and FLOAT as double), each column with its own null layout
    (all null, all present, runs, isolated values, sparse nulls, values only at page and row
    group boundaries, and issue 25's few values then nulls for many pages), cardinality,
    dictionary or not (and a small dictionary page limit, so dictionaries fall back to plain),
    codec and encoding; per file: one or several row groups, small or large pages, data page v1
    or v2, sometimes INT96 timestamps, integer-stored decimals, page indexes, checksums,
    content-defined chunking. Plus a file of struct, list and map columns, at fewer rows.
  * written by medallion's own writer (`pqread gen`, package table/tabletest): pyarrow's read
    of it must equal the rows generated, and medallion's read paths must equal pyarrow's.

Each file is read by `tests/interop/cmd/pqread` through DecodeFile, FileScan.Read, a
projection (reordered subset), a filter (random expression, evaluated by pyarrow.compute), both
together, and ReadWith with a shared ReadBuffer; every path must match pyarrow row for row.

The seed is random per run and named in every failure; set MEDALLION_READER_DIFF_SEED to replay
it. MEDALLION_READER_DIFF_LARGE=1 runs more and larger files (3M rows).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import subprocess
import time

import pytest

from conftest import require_module

pytestmark = pytest.mark.needs_medallion

SEED_ENV = "MEDALLION_READER_DIFF_SEED"
LARGE = os.environ.get("MEDALLION_READER_DIFF_LARGE") == "1"
SEED = int(os.environ[SEED_ENV]) if os.environ.get(SEED_ENV) else random.SystemRandom().randrange(10**9)

# case -> (rows, row groups: None draws them); ours: case -> (rows, nested columns)
if LARGE:
    PYARROW_FLAT = {f"flat{i}": (3_000_000, [1, 4, None][i % 3]) for i in range(4)}
    PYARROW_NESTED = {f"nested{i}": 150_000 for i in range(2)}
    OURS = {**{f"ours_flat{i}": (3_000_000, False) for i in range(2)}, "ours_nested0": (300_000, True)}
    READWITH_PASSES = 2
else:
    PYARROW_FLAT = {"flat0": (1_000_000, 3), "flat1": (1_000_000, 1)}
    PYARROW_NESTED = {"nested0": 30_000}
    OURS = {"ours_flat0": (1_000_000, False), "ours_nested0": (50_000, True)}
    READWITH_PASSES = 1


@pytest.fixture(scope="module")
def rd():
    require_module("pyarrow")
    import interop_readerdiff

    return interop_readerdiff


@contextlib.contextmanager
def reproducible(case: str, what: str = ""):
    """Names the seed (and how to replay it) in any failure of the block."""
    try:
        yield
    except Exception as err:  # noqa: BLE001 - re-raised with the seed
        large = " MEDALLION_READER_DIFF_LARGE=1" if LARGE else ""
        raise AssertionError(
            f"reader differential {case} failed with {SEED_ENV}={SEED}; replay: "
            f"{SEED_ENV}={SEED}{large} scripts/interop.sh run --with-medallion "
            f"-k 'reader_diff and {case}'\n{what}\n{type(err).__name__}: {err}") from err


def _log(msg: str) -> None:
    print(f"[reader_diff seed={SEED}] {msg}", flush=True)


@pytest.mark.parametrize("case", list(PYARROW_FLAT) + list(PYARROW_NESTED))
def test_reader_diff_pyarrow_file(case, rd, pqread_bin, tmp_path):
    seed = f"{SEED}:pyarrow:{case}"
    t0 = time.monotonic()
    spec = None
    with reproducible(case):
        if case in PYARROW_FLAT:
            rows, groups = PYARROW_FLAT[case]
            spec = rd.random_flat_file(seed, rows, groups=groups)
        else:
            spec = rd.random_nested_file(seed, PYARROW_NESTED[case])
    path = tmp_path / f"{case}.parquet"
    with reproducible(case, spec.describe()):
        spec.write(path)
        t1 = time.monotonic()
        schema = spec.delta_schema()
        types = {c.name: c.delta for c in spec.columns}
        table = rd.read_table(path)
        plan = rd.plan_reads(random.Random(seed + ":plan"), types, table,
                             prefer=[c.name for c in spec.columns if "issue 25" in c.desc])
        report = rd.check_paths(pqread_bin, path, schema, tmp_path / "out", plan,
                                f"file {path} ({path.stat().st_size} bytes)", table, READWITH_PASSES)
    _log(f"{case}: {spec.rows} rows, {path.stat().st_size >> 20} MiB; generate+write "
         f"{t1 - t0:.1f}s, read+compare {time.monotonic() - t1:.1f}s; "
         + ", ".join(f"{p} {v['rows']} rows {v['seconds']:.1f}s" for p, v in report.items()))


@pytest.mark.parametrize("case", list(OURS))
def test_reader_diff_our_file(case, rd, pqread_bin, tmp_path):
    """A random file of medallion's writer: pyarrow reads back the generated rows, and every
    read path of ours reads what pyarrow reads."""
    rows, nested = OURS[case]
    seed = int.from_bytes(random.Random(f"{SEED}:ours:{case}").randbytes(8), "little")
    path, dump = tmp_path / f"{case}.parquet", tmp_path / "generated"
    t0 = time.monotonic()
    cmd = [str(pqread_bin), "gen", "--seed", str(seed), "--rows", str(rows), "--file", str(path),
           "--dump", str(dump)] + (["--nested"] if nested else [])
    gen = f"pqread gen --seed {seed} --rows {rows}{' --nested' if nested else ''}"
    with reproducible(case, gen):
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
        assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stderr}"
    info = (dump / "gen.json").read_text()
    with reproducible(case, f"{gen}: {info}"):
        t1 = time.monotonic()
        schema = (dump / "schema.json").read_text()
        types = {f["name"]: f["type"] for f in json.loads(schema)["fields"]}
        generated = rd.load_dump(dump / "generated")
        table = rd.read_table(path)
        assert table.column_names == list(types), f"pyarrow reads columns {table.column_names}"
        problems = [rd.diff(table.column(c), generated.columns[c], types[c],
                            f"pyarrow reading our column {c} ({json.dumps(types[c])})") for c in types]
        problems = [d for d in problems if d is not None]
        assert not problems, ("pyarrow does not read back what our writer wrote:\n"
                              + "\n".join(problems))
        plan = rd.plan_reads(random.Random(f"{seed}:plan"), types, table, prefer=[])
        report = rd.check_paths(pqread_bin, path, schema, tmp_path / "out", plan,
                                f"file {path} ({path.stat().st_size} bytes)", table, READWITH_PASSES)
    _log(f"{case}: {rows} rows, {path.stat().st_size >> 20} MiB; generate+write "
         f"{t1 - t0:.1f}s, read+compare {time.monotonic() - t1:.1f}s; "
         + ", ".join(f"{p} {v['rows']} rows {v['seconds']:.1f}s" for p, v in report.items()))


@pytest.mark.parametrize("page_version,codec", [("2.0", "none"), ("2.0", "snappy"), ("1.0", "snappy")])
def test_reader_diff_rle_booleans(rd, pqread_bin, tmp_path, page_version, codec):
    """RLE-encoded BOOLEAN pages (pyarrow's default for booleans in data page v2; forced in
    v1), flat and in a list, are read as pyarrow reads them. parquet-go v0.32.0 misreads
    standard RLE boolean runs; medallion decodes such chunks itself (table/readbool.go)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    r = random.Random(1)
    path = tmp_path / "rle_booleans.parquet"
    values = pa.array([None if r.random() < 0.1 else r.random() < 0.5 for _ in range(5000)], pa.bool_())
    lists = pa.array([None if r.random() < 0.1 else
                      [None if r.random() < 0.1 else r.random() < 0.5 for _ in range(r.randrange(4))]
                      for _ in range(5000)], pa.list_(pa.bool_()))
    opts = {}
    if page_version == "1.0":
        opts = {"use_dictionary": False, "column_encoding": {"b": "RLE", "l.list.element": "RLE"}}
    pq.write_table(pa.table({"b": values, "l": lists}), path, data_page_version=page_version,
                   compression=codec, **opts)
    rg = pq.ParquetFile(path).metadata.row_group(0)
    for c in range(rg.num_columns):  # RLE values (and levels), no PLAIN page
        assert rg.column(c).encodings == ("RLE",), rg.column(c).encodings
    schema = json.dumps({"type": "struct", "fields": [
        {"name": "b", "type": "boolean", "nullable": True, "metadata": {}},
        {"name": "l", "type": {"type": "array", "elementType": "boolean", "containsNull": True},
         "nullable": True, "metadata": {}}]})
    rd.check_paths(pqread_bin, path, schema, tmp_path / "out", rd.Plan(["l", "b"], None, None),
                   f"file {path}")
