"""Differential reader test (issue 25 item 2): random Parquet files, medallion's read paths
against pyarrow's read of the same file.

* `random_flat_file` / `random_nested_file` write a randomized file with pyarrow (null layouts,
  cardinalities, dictionary / plain / fallback, page sizes, page versions, codecs, encodings:
  see `FileSpec.describe`); `tests/interop/cmd/pqread gen` writes one with medallion's writer.
* `run_pqread` reads a file through every read path of package table (pqread's doc comment:
  DecodeFile, FileScan.Read, projection, filter, projection + filter, ReadWith with a shared
  ReadBuffer) and `load_dump` loads each path's raw column dump as pyarrow arrays.
* `check_paths` compares every path with pyarrow (`pq.read_table`, `Table.select` for the
  projection, `pyarrow.compute` for the filter), exactly: same rows in the same order, same
  nulls, same values (floats bit for bit), and the same batches (one per row group).

Values are compared in the dump's form (pqread's doc comment): timestamps as int64 microseconds
(pyarrow's ms multiplied by 1000, ns floor-divided by 1000, as medallion converts them), dates as
int32 days, short/byte as int32, floats as their IEEE bits, decimals as decimal128, maps as lists
of key/value structs. Every random choice comes from one seed, so a failure names the seed that
reproduces it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import subprocess
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

PQREAD_TIMEOUT_S = 900

# Boolean columns take pyarrow's default encoding: RLE in data page v2 files (PLAIN in v1), or
# either as drawn. This test found (seed 448255673) that parquet-go v0.32.0 reads standard RLE
# boolean runs wrong; medallion decodes those chunks itself (table/readbool.go).

# ---------------------------------------------------------------------------------------------
# randomness, vectorized


class Gen:
    """random.Random for the choices, pyarrow arrays built from its bytes for the values (no
    per-row Python work for millions of rows)."""

    def __init__(self, seed: int | str):
        self.r = random.Random(seed)

    def ints(self, n: int, t: pa.DataType) -> pa.Array:
        return pa.Array.from_buffers(t, n, [None, pa.py_buffer(self.r.randbytes(n * t.bit_width // 8))])

    def below(self, n: int, k: int) -> pa.Array:
        """n uniform indexes in [0, k) (int64)."""
        return pc.modulo(self.ints(n, pa.uint64()), pa.scalar(k, pa.uint64())).cast(pa.int64())

    def in_range(self, n: int, lo: int, hi: int) -> pa.Array:
        """n int64 uniform in [lo, hi] (hi - lo < 2**63)."""
        return pc.add(self.below(n, hi - lo + 1), pa.scalar(lo, pa.int64()))

    def chance(self, n: int, p: float) -> pa.Array:
        """n booleans, each true with probability p."""
        return pc.less(self.ints(n, pa.uint32()), pa.scalar(min(int(p * 2**32), 2**32 - 1), pa.uint32()))


def _bytes_of(mask: pa.Array) -> bytearray:
    return bytearray(mask.cast(pa.uint8()).buffers()[1].to_pybytes()[: len(mask)])


def bool_array(buf: bytes | bytearray) -> pa.Array:
    """A boolean array from one byte per row (nonzero = true)."""
    u8 = pa.Array.from_buffers(pa.uint8(), len(buf), [None, pa.py_buffer(bytes(buf))])
    return pc.not_equal(u8, pa.scalar(0, pa.uint8()))


# ---------------------------------------------------------------------------------------------
# null layouts

LAYOUTS = ["all_present", "all_null", "runs", "isolated", "sparse", "half", "few_then_null",
           "page_edges"]


def null_layout(g: Gen, kind: str, n: int, page_rows: int,
                group_rows: int) -> tuple[bytearray | None, str]:
    """Which rows hold a value (one byte per row), or None for every row; and a description.
    page_rows/group_rows are where the file's pages and row groups (roughly) start over."""
    if kind == "all_present":
        return None, kind
    if kind == "all_null":
        return bytearray(n), kind
    if kind == "runs":
        mean = g.r.choice([20, 300, 3000, 40000, 250000])
        buf, pos, on = bytearray(n), 0, g.r.random() < 0.5
        while pos < n:
            end = min(n, pos + 1 + int(g.r.expovariate(1 / mean)))
            if on:
                buf[pos:end] = b"\x01" * (end - pos)
            pos, on = end, not on
        return buf, f"runs(mean={mean})"
    if kind in ("isolated", "sparse"):
        rate = g.r.choice([1e-5, 1e-4, 1e-3, 1e-2])
        p = rate if kind == "isolated" else 1 - rate
        return _bytes_of(g.chance(n, p)), f"{kind}({rate:g})"
    if kind == "half":
        p = round(g.r.uniform(0.05, 0.95), 2)
        return _bytes_of(g.chance(n, p)), f"present({p})"
    if kind == "few_then_null":
        # Issue 25's shape: rare values (enough to start a dictionary), a few present rows,
        # then nulls for many whole pages, then values again (or nulls to the end).
        start = g.r.randrange(max(1, n // 4))
        buf = bytearray(n)
        buf[:start] = _bytes_of(g.chance(start, 0.003)) if start else b""
        few = g.r.randint(1, 64)
        buf[start:start + few] = b"\x01" * len(buf[start:start + few])
        lo = max(30000, 3 * page_rows)
        gap = g.r.randint(lo, max(lo, n // 2))
        rest = start + few + gap
        tail = g.r.choice(["none", "rare", "dense"])
        if rest < n and tail != "none":
            buf[rest:] = _bytes_of(g.chance(n - rest, 0.01 if tail == "rare" else 0.9))
        return buf, f"few_then_null(start={start},few={few},gap={gap},tail={tail})"
    if kind == "page_edges":
        # Values only next to page and row group boundaries.
        buf = bytearray(n)
        for s in range(0, n, group_rows):
            for b in [s] + list(range(s + page_rows, min(s + group_rows, n), page_rows)):
                for i in (b - 1, b, b + 1):
                    if 0 <= i < n and g.r.random() < 0.4:
                        buf[i] = 1
        return buf, f"page_edges(page_rows={page_rows})"
    raise AssertionError(kind)


def with_nulls(values: pa.Array, present: bytearray | None) -> pa.Array:
    if present is None:
        return values
    return pc.if_else(bool_array(present), values, pa.scalar(None, values.type))


# ---------------------------------------------------------------------------------------------
# values

# kind -> (Delta type, Arrow type written). "widened" kinds store a narrower physical type than
# the Delta type (Delta's type widening: medallion reads INT32 as long, FLOAT as double).
FLAT_KINDS: dict[str, tuple[str, pa.DataType]] = {
    "long": ("long", pa.int64()),
    "integer": ("integer", pa.int32()),
    "short": ("short", pa.int16()),
    "byte": ("byte", pa.int8()),
    "double": ("double", pa.float64()),
    "float": ("float", pa.float32()),
    "string": ("string", pa.string()),
    "binary": ("binary", pa.binary()),
    "boolean": ("boolean", pa.bool_()),
    "date": ("date", pa.date32()),
    "timestamp_us": ("timestamp", pa.timestamp("us", tz="UTC")),
    "timestamp_ms": ("timestamp", pa.timestamp("ms", tz="UTC")),
    "timestamp_ns": ("timestamp", pa.timestamp("ns", tz="UTC")),
    "timestamp_ntz": ("timestamp_ntz", pa.timestamp("us")),
    "timestamp_ntz_ms": ("timestamp_ntz", pa.timestamp("ms")),
    "decimal_small": ("decimal", None),  # precision 1..18, drawn per column
    "decimal_large": ("decimal", None),  # precision 19..38
    "long_from_int": ("long", pa.int32()),
    "double_from_float": ("double", pa.float32()),
}

US_MIN, US_MAX = -62135596800 * 10**6, 253402300799 * 10**6  # 0001-01-01 .. 9999-12-31
DAY_MIN, DAY_MAX = -719162, 2932896
CHARS = "abcxyz019 -_'\"\\\n\té日本語ü€😀"


def _text(r: random.Random) -> str:
    n = r.choice([0, 1, 3, 8, 20, 60]) if r.random() < 0.995 else r.randint(200, 1500)
    return "".join(r.choice(CHARS) for _ in range(n))


def _blob(r: random.Random) -> bytes:
    n = r.choice([0, 1, 3, 8, 20, 60]) if r.random() < 0.995 else r.randint(200, 1500)
    return r.randbytes(n)


def _decimal(g: Gen, m: int, p: int, s: int) -> pa.Array:
    t = pa.decimal128(p, s)
    if p <= 18:
        lim = 10**p - 1
        if g.r.random() < 0.3:
            lim = min(lim, 10 ** g.r.randint(1, p))  # small values in a wide column
        unscaled = g.in_range(m, -lim, lim).cast(pa.decimal128(38, 0))
        return pa.Array.from_buffers(t, m, [None, unscaled.buffers()[1]])
    if p == 19:  # every int64 has at most 19 digits
        unscaled = g.ints(m, pa.int64()).cast(pa.decimal128(38, 0))
        return pa.Array.from_buffers(t, m, [None, unscaled.buffers()[1]])
    # 16 random bytes with the high word cut to hi_bits bits, so |v| < 2**(64+hi_bits) <= 10**p,
    # half of them negated.
    hi_bits = int(p * 3.3219280948873626) - 65
    raw = g.ints(2 * m, pa.uint64())
    mask = pa.Array.from_buffers(pa.uint64(), 2 * m, [None, pa.py_buffer(
        (b"\xff" * 8 + ((1 << hi_bits) - 1).to_bytes(8, "little")) * m)])
    d = pa.Array.from_buffers(t, m, [None, pc.bit_wise_and(raw, mask).buffers()[1]])
    d = pc.if_else(g.chance(m, 0.5), pc.negate(d), d)
    if g.r.random() < 0.3:
        small = g.in_range(m, -10**17, 10**17).cast(pa.decimal128(38, 0))
        small = pa.Array.from_buffers(t, m, [None, small.buffers()[1]])
        d = pc.if_else(g.chance(m, 0.5), small, d)
    return d.cast(t)


def base_values(g: Gen, kind: str, t: pa.DataType, m: int) -> tuple[pa.Array, str]:
    """m values of arrow type t (no nulls), and how they were drawn."""
    if pa.types.is_integer(t):
        style = g.r.choice(["full", "narrow", "increasing"])
        if style == "full":
            return g.ints(m, t), style
        if style == "narrow":
            w = min(g.r.choice([1, 10, 1000]), 2 ** (t.bit_width - 1) - 1)
            return g.in_range(m, -w, w).cast(t), f"narrow({w})"
        return pc.cumulative_sum(g.in_range(m, 0, 3)).cast(t, safe=False), style
    if pa.types.is_floating(t):
        it = pa.int64() if t.bit_width == 64 else pa.int32()
        if g.r.random() < 0.3:  # any bit pattern: NaNs with payloads, infinities, subnormals, -0
            return pa.Array.from_buffers(t, m, [None, g.ints(m, it).buffers()[1]]), "bits"
        nice = pc.divide(g.in_range(m, -10**9, 10**9).cast(pa.float64()), 7.0).cast(t)
        specials = pa.array([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-310, 1.5],
                            pa.float64()).cast(t)
        return pc.if_else(g.chance(m, 0.01), pc.take(specials, g.below(m, len(specials))), nice), "nice"
    if pa.types.is_boolean(t):
        p = g.r.choice([0.0, 0.01, 0.5, 0.99, 1.0])
        return g.chance(m, p), f"p={p}"
    if pa.types.is_string(t) or pa.types.is_binary(t):
        mk = _text if pa.types.is_string(t) else _blob
        pool = pa.array([mk(g.r) for _ in range(min(m, 2000))], t)
        if m <= len(pool):
            return pool, "pool"
        num = g.ints(m, pa.int64()).cast(pa.string())
        if pa.types.is_binary(t):
            num = num.cast(pa.binary())
        sep = "|" if pa.types.is_string(t) else b"|"
        return pc.binary_join_element_wise(pc.take(pool, g.below(m, len(pool))), num, sep), "pool|number"
    if pa.types.is_date(t):
        return g.in_range(m, DAY_MIN, DAY_MAX).cast(pa.int32()).cast(t), "days"
    if pa.types.is_timestamp(t):
        if t.unit == "ns":
            v = g.ints(m, pa.int64()) if g.r.random() < 0.5 else g.in_range(m, -(10**18), 10**18)
        else:
            per = {"s": 10**6, "ms": 1000, "us": 1}[t.unit]
            v = g.in_range(m, US_MIN // per, US_MAX // per)
        return v.cast(t), t.unit
    if pa.types.is_decimal(t):
        return _decimal(g, m, t.precision, t.scale), "decimal"
    raise AssertionError(f"no generator for {kind} {t}")


CARDINALITIES = ["one", "low", "medium", "unique", "sorted"]


def column_values(g: Gen, kind: str, t: pa.DataType, n: int) -> tuple[pa.Array, str]:
    """n values with a drawn cardinality: one value, a handful, thousands, all distinct, or a
    few thousand in long sorted runs (RLE runs of dictionary indexes)."""
    card = g.r.choice(CARDINALITIES)
    m = {"one": 1, "low": g.r.choice([2, 3, 8, 40]), "medium": g.r.choice([500, 5000]),
         "unique": n, "sorted": g.r.choice([50, 3000])}[card]
    m = min(m, n) or 1
    base, how = base_values(g, kind, t, m)
    if m == n:
        return base, f"{card}/{how}"
    idx = g.below(n, m)
    if card == "sorted":
        idx = pc.take(idx, pc.sort_indices(idx))
    return pc.take(base, idx), f"{card}({m})/{how}"


# ---------------------------------------------------------------------------------------------
# files


@dataclass
class Column:
    name: str
    delta: Any  # Delta type as in the schema JSON
    nullable: bool
    arrow: pa.DataType  # type written
    values: pa.Array
    desc: str
    dictionary: bool = True
    compression: str = "snappy"
    encoding: str | None = None

    def delta_field(self) -> dict:
        return {"name": self.name, "type": self.delta, "nullable": self.nullable, "metadata": {}}


@dataclass
class FileSpec:
    name: str
    seed: str
    rows: int
    columns: list[Column]
    options: dict = field(default_factory=dict)

    def delta_schema(self) -> str:
        return json.dumps({"type": "struct", "fields": [c.delta_field() for c in self.columns]})

    def describe(self) -> str:
        per_column = ("use_dictionary", "compression", "column_encoding")
        opts = {k: v for k, v in self.options.items() if k not in per_column}
        lines = [f"{self.name}: {self.rows} rows, seed {self.seed!r}, options {opts}"]
        nested = self.name.startswith("nested")  # file-wide dictionary and codec settings
        for c in self.columns:
            extra = "" if nested else f" dict={c.dictionary} codec={c.compression} encoding={c.encoding}"
            null = "" if c.nullable else " NOT NULL"
            lines.append(f"  {c.name}: {json.dumps(c.delta)} as {c.arrow}{null}: {c.desc}{extra}")
        return "\n".join(lines)

    def write(self, path: Path) -> None:
        schema = pa.schema([pa.field(c.name, c.arrow, nullable=c.nullable) for c in self.columns])
        table = pa.Table.from_arrays([c.values for c in self.columns], schema=schema)
        pq.write_table(table, path, **self.options)


def _encodings_for(t: pa.DataType) -> list[str]:
    if pa.types.is_boolean(t):
        return ["PLAIN", "RLE"]
    if pa.types.is_floating(t):
        return ["PLAIN", "BYTE_STREAM_SPLIT"]
    if pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t):
        return ["PLAIN", "DELTA_BINARY_PACKED", "BYTE_STREAM_SPLIT"]
    if pa.types.is_string(t) or pa.types.is_binary(t):
        return ["PLAIN", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY"]
    return ["PLAIN"]


def random_flat_file(seed: str, rows: int, *, groups: int | None = None,
                     exotic_encodings: bool = True) -> FileSpec:
    """Every primitive kind once, a few drawn twice, a required id, and issue 25's column: a
    dictionary-encoded optional string with a few values, then nulls for many pages. groups
    (row groups, about) is drawn unless given."""
    g = Gen(seed)
    r = g.r
    opts: dict[str, Any] = {}
    groups = r.choice([1, 1, 2, 3, 5]) if groups is None else groups
    # Uneven: the last row group is the smallest.
    group_rows = rows if groups == 1 else max(1, -(-rows // groups) - r.randrange(0, 1 + rows // 1000))
    opts["row_group_size"] = group_rows
    opts["data_page_version"] = r.choice(["1.0", "2.0"])
    opts["data_page_size"] = r.choice([512, 4096, 64 << 10, 1 << 20, None])
    page_rows = r.choice([None, None, 1000, 5000, 20000])
    if page_rows:
        opts["max_rows_per_page"] = page_rows
    opts["write_batch_size"] = r.choice([None, 100, 1024, 10000])
    opts["dictionary_pagesize_limit"] = r.choice([None, None, 256, 4096, 64 << 10])
    opts["version"] = r.choice(["2.6", "2.6", "2.4"])
    if opts["version"] == "2.4":  # no nanoseconds in Parquet 2.4: pyarrow stores microseconds
        opts["coerce_timestamps"], opts["allow_truncated_timestamps"] = "us", True
    opts["store_decimal_as_integer"] = r.random() < 0.5
    if r.random() < 0.15:
        opts["use_deprecated_int96_timestamps"] = True
    opts["write_page_index"] = r.random() < 0.3
    opts["write_page_checksum"] = r.random() < 0.3
    if r.random() < 0.15:
        opts["use_content_defined_chunking"] = True
    opts = {k: v for k, v in opts.items() if v is not None}
    edge = page_rows or opts.get("write_batch_size") or 1024

    kinds = list(FLAT_KINDS) + r.sample(list(FLAT_KINDS), 4) + ["bug"]
    cols: list[Column] = []
    cols.append(Column("id", "long", False, pa.int64(),
                       pc.cumulative_sum(pa.Array.from_buffers(
                           pa.int64(), rows, [None, pa.py_buffer((1).to_bytes(8, "little") * rows)])),
                       "row number + 1", dictionary=False, compression="snappy"))
    for i, kind in enumerate(kinds):
        name = f"c{i:02d}_{kind}"
        if kind == "bug":
            # A small dictionary (like a device id), so that even a 256-byte dictionary page
            # limit keeps it: the all-null pages are then dictionary pages.
            t, delta = pa.string(), "string"
            base = pa.array([f"device-{k}" for k in r.sample(range(1000), r.choice([1, 3, 10]))], t)
            values = pc.take(base, g.below(rows, len(base)))
            present, lay = null_layout(g, "few_then_null", rows, edge, group_rows)
            cols.append(Column(name, delta, True, t, with_nulls(values, present),
                               f"issue 25: dictionary string, {lay}", dictionary=True,
                               compression=r.choice(["snappy", "zstd", "none"])))
            continue
        delta, t = FLAT_KINDS[kind]
        if kind.startswith("decimal"):
            p = r.randint(1, 18) if kind == "decimal_small" else r.randint(19, 38)
            s = r.randint(0, p)
            t, delta = pa.decimal128(p, s), f"decimal({p},{s})"
        values, how = column_values(g, kind, t, rows)
        nullable = r.random() < 0.9
        lay_kind = r.choice(LAYOUTS) if nullable else "all_present"
        present, lay = null_layout(g, lay_kind, rows, edge, group_rows)
        dictionary = r.random() < 0.6
        encoding = None
        if not dictionary and exotic_encodings and r.random() < 0.4:
            if not (pa.types.is_timestamp(t) and opts.get("use_deprecated_int96_timestamps")):
                encoding = r.choice(_encodings_for(t))
        cols.append(Column(name, delta, nullable, t, with_nulls(values, present), f"{how}, {lay}",
                           dictionary=dictionary, encoding=encoding,
                           compression=r.choice(["snappy", "zstd", "none"] * 3 + ["gzip"])))
    r.shuffle(cols)
    opts["use_dictionary"] = [c.name for c in cols if c.dictionary]
    opts["compression"] = {c.name: c.compression for c in cols}
    enc = {c.name: c.encoding for c in cols if c.encoding}
    if enc:
        opts["column_encoding"] = enc
    return FileSpec(f"flat-{seed}", seed, rows, cols, opts)


def _nested_value(r: random.Random, t: Any, depth: int) -> Any:
    if isinstance(t, str):
        if t == "long":
            return r.randint(-2**63, 2**63 - 1) if r.random() < 0.5 else r.randint(-5, 5)
        if t == "integer":
            return r.randint(-2**31, 2**31 - 1)
        if t == "double":
            return r.choice([0.0, -0.0, 1.5, float("inf"), r.uniform(-1e9, 1e9)])
        if t == "string":
            return _text(r)
        if t == "boolean":
            return r.random() < 0.5
        if t == "date":
            return dt.date(1970, 1, 1) + dt.timedelta(days=r.randint(-700000, 2900000))
        if t == "timestamp":
            epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
            return epoch + dt.timedelta(microseconds=r.randint(-10**16, 10**16))
        if t.startswith("decimal"):
            return Decimal(r.randint(-10**12 + 1, 10**12 - 1)).scaleb(-3)
        raise AssertionError(t)
    kind = t["type"]
    null_rate = 0.15
    if kind == "struct":
        return {f["name"]: (None if r.random() < null_rate else _nested_value(r, f["type"], depth + 1))
                for f in t["fields"]}
    if kind == "array":
        return [None if r.random() < null_rate else _nested_value(r, t["elementType"], depth + 1)
                for _ in range(r.choice([0, 0, 1, 2, 3, 7]))]
    if kind == "map":
        keys = {_nested_value(r, t["keyType"], depth + 1) for _ in range(r.choice([0, 1, 2, 4]))}
        return [(k, None if r.random() < null_rate else _nested_value(r, t["valueType"], depth + 1))
                for k in keys]
    raise AssertionError(kind)


def _arrow_of(t: Any) -> pa.DataType:
    if isinstance(t, str):
        if t.startswith("decimal"):
            p, s = t[8:-1].split(",")
            return pa.decimal128(int(p), int(s))
        return {"long": pa.int64(), "integer": pa.int32(), "double": pa.float64(), "string": pa.string(),
                "boolean": pa.bool_(), "date": pa.date32(), "timestamp": pa.timestamp("us", tz="UTC")}[t]
    if t["type"] == "struct":
        return pa.struct([pa.field(f["name"], _arrow_of(f["type"])) for f in t["fields"]])
    if t["type"] == "array":
        return pa.list_(_arrow_of(t["elementType"]))
    return pa.map_(_arrow_of(t["keyType"]), _arrow_of(t["valueType"]))


def _arr(e: Any) -> dict:
    return {"type": "array", "elementType": e, "containsNull": True}


def _struct(**fields: Any) -> dict:
    return {"type": "struct", "fields": [{"name": k, "type": v, "nullable": True, "metadata": {}}
                                         for k, v in fields.items()]}


def _map(k: Any, v: Any) -> dict:
    return {"type": "map", "keyType": k, "valueType": v, "valueContainsNull": True}


NESTED_TYPES = {
    "st": _struct(a="integer", b="string", c=_arr("long")),
    "li_long": _arr("long"),
    "li_str": _arr("string"),
    "li_st": _arr(_struct(x="double", y="string", d="date")),
    "mp": _map("string", "integer"),
    "mp_li": _map("long", _arr("string")),
    "st_mp": _struct(m=_map("string", "decimal(12,3)"), t="timestamp", b="boolean"),
    "li_li": _arr(_arr("integer")),
}


def random_nested_file(seed: str, rows: int) -> FileSpec:
    """Struct, list and map columns (nested in each other) with the same null layouts at the
    top level, plus a few primitives for the projection and the filter."""
    g = Gen(seed)
    r = g.r
    opts: dict[str, Any] = {
        "row_group_size": r.choice([rows, -(-rows // 3)]),
        "data_page_version": r.choice(["1.0", "2.0"]),
        "data_page_size": r.choice([512, 8192, None]),
        "use_dictionary": r.random() < 0.6,
        "compression": r.choice(["snappy", "zstd", "none"]),
        "use_compliant_nested_type": r.random() < 0.7,
    }
    opts = {k: v for k, v in opts.items() if v is not None}
    cols = [Column("id", "long", False, pa.int64(), pa.array(range(rows), pa.int64()), "row number")]
    for name, t in NESTED_TYPES.items():
        lay_kind = r.choice(LAYOUTS)
        present, lay = null_layout(g, lay_kind, rows, 1024, opts["row_group_size"])
        vals = [(_nested_value(r, t, 0) if present is None or present[i] else None) for i in range(rows)]
        cols.append(Column(name, t, True, _arrow_of(t), pa.array(vals, _arrow_of(t)), lay))
    for kind in ("string", "integer", "double"):
        delta, t = FLAT_KINDS[kind]
        values, how = column_values(g, kind, t, rows)
        present, lay = null_layout(g, r.choice(LAYOUTS), rows, 1024, opts["row_group_size"])
        cols.append(Column(f"p_{kind}", delta, True, t, with_nulls(values, present), f"{how}, {lay}"))
    r.shuffle(cols)
    return FileSpec(f"nested-{seed}", seed, rows, cols, opts)


# ---------------------------------------------------------------------------------------------
# conversion to the dump's form


def _decimal_type(t: str) -> pa.DataType:
    p, s = t[len("decimal("):-1].split(",")
    return pa.decimal128(int(p), int(s))


def floor_div(x: pa.Array, k: int) -> pa.Array:
    kk = pa.scalar(k, pa.int64())
    return pc.divide(pc.subtract(x, pc.modulo(x, kk)), kk)


def leaf_form(arr: pa.Array, delta: str, floats_as_bits: bool = True) -> pa.Array:
    """A leaf column as pyarrow read it, in pqread's dump form (see the module comment)."""
    t = arr.type
    if delta in ("timestamp", "timestamp_ntz"):
        if not pa.types.is_timestamp(t):
            raise AssertionError(f"pyarrow read {t} for a {delta} column")
        x = arr.cast(pa.int64())
        if t.unit == "s":
            return pc.multiply_checked(x, pa.scalar(10**6, pa.int64()))
        if t.unit == "ms":
            return pc.multiply_checked(x, pa.scalar(1000, pa.int64()))
        if t.unit == "ns":
            return floor_div(x, 1000)
        return x
    if delta == "date":
        return arr.cast(pa.int32())
    if delta == "long":
        return arr.cast(pa.int64())
    if delta in ("integer", "short", "byte"):
        return arr.cast(pa.int32())
    if delta in ("double", "float"):
        ft, it = (pa.float64(), pa.int64()) if delta == "double" else (pa.float32(), pa.int32())
        x = arr.cast(ft)  # float to double is exact
        if not floats_as_bits:
            return x
        return pa.Array.from_buffers(it, len(x), [x.buffers()[0], x.buffers()[1]], offset=x.offset)
    if delta == "boolean":
        return arr.cast(pa.bool_())
    if delta == "string":
        return arr.cast(pa.string())
    if delta == "binary":
        return arr.cast(pa.binary())
    if delta.startswith("decimal"):
        return arr.cast(_decimal_type(delta))
    raise AssertionError(f"unknown Delta type {delta}")


def entries_type(t: dict) -> dict:
    return _struct(key=t["keyType"], value=t["valueType"])


def map_as_list(arr: pa.Array) -> pa.Array:
    """A map array as list<struct<key, value>>, which list kernels take."""
    if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
        return arr
    entries = pa.StructArray.from_arrays([arr.keys, arr.items], names=["key", "value"])
    return pa.ListArray.from_arrays(arr.offsets, entries, mask=arr.is_null())


# ---------------------------------------------------------------------------------------------
# dumps


def _file_buffer(path: Path) -> pa.Buffer:
    if path.stat().st_size == 0:
        return pa.py_buffer(b"")
    return pa.memory_map(str(path)).read_buffer()


def load_column(d: Path, cm: dict) -> pa.Array:
    n, kind, t, p = cm["rows"], cm["kind"], cm["type"], cm["prefix"]
    valid = bool_array(_file_buffer(d / f"{p}.valid").to_pybytes()) if n else pa.array([], pa.bool_())
    bitmap = valid.buffers()[1] if n else None
    if kind == "null":
        return pa.nulls(n)
    fixed = {"int64": pa.int64(), "int32": pa.int32(), "float64": pa.int64(), "float32": pa.int32()}
    if kind in fixed:
        return pa.Array.from_buffers(fixed[kind], n, [bitmap, _file_buffer(d / f"{p}.values")])
    if kind == "decimal":
        return pa.Array.from_buffers(_decimal_type(t), n, [bitmap, _file_buffer(d / f"{p}.values")])
    if kind == "bool":
        vals = bool_array(_file_buffer(d / f"{p}.values").to_pybytes())
        return pa.Array.from_buffers(pa.bool_(), n, [bitmap, vals.buffers()[1] if n else None])
    if kind == "bytes":
        at = pa.string() if t == "string" else pa.binary()
        return pa.Array.from_buffers(at, n, [bitmap, _file_buffer(d / f"{p}.offsets"),
                                             _file_buffer(d / f"{p}.data")])
    children = [load_column(d, ch) for ch in cm["children"]]
    if kind == "struct":
        st = pa.struct([pa.field(ch["name"], c.type) for ch, c in zip(cm["children"], children)])
        return pa.Array.from_buffers(st, n, [bitmap], children=children)
    if kind == "map":
        children = [pa.StructArray.from_arrays(children, names=["key", "value"])]
    if kind in ("list", "map"):
        return pa.Array.from_buffers(pa.list_(children[0].type), n,
                                     [bitmap, _file_buffer(d / f"{p}.offsets")], children=children)
    raise AssertionError(f"unknown dump kind {kind}")


@dataclass
class Dump:
    path: str
    rows: int
    batches: list[int]
    names: list[str]
    columns: dict[str, pa.Array]


def load_dump(d: Path) -> Dump:
    m = json.loads((d / "manifest.json").read_text())
    cols = {cm["name"]: load_column(d, cm) for cm in m["columns"]}
    return Dump(m["path"], m["rows"], m["batches"], [cm["name"] for cm in m["columns"]], cols)


# ---------------------------------------------------------------------------------------------
# comparison


def _first(mask: pa.Array) -> int:
    """The first row where mask is true (null counts as false)."""
    return pc.index(pc.fill_null(mask, False), True).as_py()


def read_table(path: Path) -> pa.Table:
    """pyarrow's read, the oracle. INT96 timestamps come back in microseconds: in pyarrow's
    default nanoseconds, years outside 1677-2262 wrap around."""
    return pq.read_table(path, coerce_int96_timestamp_unit="us")


def _show(arr: pa.Array, i: int) -> str:
    try:
        return repr(arr[i].as_py())
    except Exception:  # noqa: BLE001 - a value pyarrow cannot turn into Python (ns timestamps)
        return f"{arr.type}:{arr[i].value}"


def diff(exp: pa.Array, got: pa.Array, t: Any, where: str) -> str | None:
    """The first difference between a column as pyarrow read it (exp) and as medallion
    returned it (got, in dump form), or None. Nulls first, then values, recursively."""
    if isinstance(exp, pa.ChunkedArray):
        exp = exp.combine_chunks()
    if len(exp) != len(got):
        return f"{where}: {len(got)} rows, pyarrow has {len(exp)}"
    ev, gv = exp.is_valid(), got.is_valid()
    if not ev.equals(gv):
        i = _first(pc.not_equal(ev, gv))
        return f"{where}: row {i}: medallion {_show(got, i)}, pyarrow {_show(exp, i)} (null mismatch)"
    if isinstance(t, dict):
        kind = t["type"]
        if kind == "struct":
            for f, ec, gc in zip(t["fields"], exp.flatten(), got.flatten()):
                if (d := diff(ec, gc, f["type"], f"{where}.{f['name']}")) is not None:
                    return d
            return None
        el = map_as_list(exp) if kind == "map" else exp
        elem = entries_type(t) if kind == "map" else t["elementType"]
        le, lg = pc.list_value_length(el), pc.list_value_length(got)
        if not le.equals(lg):
            i = _first(pc.not_equal(le, lg))
            return f"{where}: row {i}: medallion has {lg[i]} entries, pyarrow {le[i]}"
        return diff(pc.list_flatten(el), pc.list_flatten(got), elem, f"{where}[]")
    e = leaf_form(exp, t)
    if e.type != got.type:
        return f"{where}: dump type {got.type}, expected {e.type}"
    if not e.equals(got):
        i = _first(pc.not_equal(e, got))
        return (f"{where}: row {i}: medallion {_show(got, i)}, pyarrow {_show(e, i)} "
                f"(as read: {_show(exp, i)})")
    return None


# ---------------------------------------------------------------------------------------------
# filters


@dataclass
class Expr:
    op: str  # = < <= > >= != in is_null is_not_null and or not
    col: str = ""
    lits: list = field(default_factory=list)
    args: list["Expr"] = field(default_factory=list)

    def cols(self) -> set[str]:
        return {self.col} if self.col else set().union(*(a.cols() for a in self.args))


def _literal(v: Any, t: str) -> str | None:
    """A value (in filter form) as pqread's --where literal, or None when it has none."""
    if t in ("long", "integer", "short", "byte"):
        return str(v)
    if t in ("double", "float"):
        return repr(float(v)) if v == v and abs(v) != float("inf") else None
    if t == "boolean":
        return "true" if v else "false"
    if t == "string":
        return "'" + v.replace("'", "''") + "'"
    if t == "date":
        d = dt.date(1970, 1, 1) + dt.timedelta(days=v) if DAY_MIN <= v <= DAY_MAX else None
        return d.isoformat() if d else None
    if t in ("timestamp", "timestamp_ntz"):
        if not US_MIN <= v <= US_MAX:
            return None
        ts = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=v)
        return f"{ts.year:04d}-{ts.strftime('%m-%dT%H:%M:%S')}.{ts.microsecond:06d}Z"
    if t.startswith("decimal"):
        return format(v, "f")
    return None


def render(e: Expr, types: dict[str, str]) -> str:
    if e.op in ("and", "or"):
        return "(" + f" {e.op.upper()} ".join(render(a, types) for a in e.args) + ")"
    if e.op == "not":
        return f"NOT {render(e.args[0], types)}"
    if e.op == "is_null":
        return f"{e.col} IS NULL"
    if e.op == "is_not_null":
        return f"{e.col} IS NOT NULL"
    lits = [_literal(v, types[e.col]) for v in e.lits]
    if e.op == "in":
        return f"{e.col} IN ({', '.join(lits)})"
    return f"{e.col} {e.op} {lits[0]}"


def evaluate(e: Expr, values: Callable[[str], pa.Array]) -> pa.Array:
    """The expression over pyarrow's columns (filter form), with SQL's three-valued logic."""
    if e.op == "and":
        out = evaluate(e.args[0], values)
        for a in e.args[1:]:
            out = pc.and_kleene(out, evaluate(a, values))
        return out
    if e.op == "or":
        out = evaluate(e.args[0], values)
        for a in e.args[1:]:
            out = pc.or_kleene(out, evaluate(a, values))
        return out
    if e.op == "not":
        return pc.invert(evaluate(e.args[0], values))
    x = values(e.col)
    if e.op == "is_null":
        return x.is_null()
    if e.op == "is_not_null":
        return x.is_valid()
    lits = [pa.scalar(v, x.type) for v in e.lits]
    if e.op == "in":
        hit = pc.is_in(x, value_set=pa.array(e.lits, x.type))
        return pc.if_else(x.is_null(), pa.scalar(None, pa.bool_()), hit)
    fn = {"=": pc.equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal}
    if e.op == "!=":
        return pc.invert(pc.equal(x, lits[0]))
    return fn[e.op](x, lits[0])


FILTERABLE = ("long", "integer", "short", "byte", "double", "float", "boolean", "string", "date",
              "timestamp", "timestamp_ntz")


def random_where(r: random.Random, types: dict[str, Any], values: Callable[[str], pa.Array],
                 prefer: list[str]) -> Expr | None:
    """A random boolean expression of 1 to 4 atoms over the primitive columns, literals drawn
    from the column's own values, so that it selects some rows but rarely all."""
    names = [c for c, t in types.items()
             if isinstance(t, str) and (t in FILTERABLE or t.startswith("decimal"))]
    if not names:
        return None

    def atom() -> Expr:
        c = r.choice(prefer) if prefer and r.random() < 0.4 else r.choice(names)
        t = types[c]
        x = values(c)
        if r.random() < 0.25 or x.null_count == len(x):
            return Expr(r.choice(["is_null", "is_not_null"]), c)
        vals = []
        for _ in range(30):
            v = x[r.randrange(len(x))].as_py()
            if v is not None and _literal(v, t) is not None:
                vals.append(v)
                if len(vals) == 3:
                    break
        if not vals:
            return Expr("is_not_null", c)
        if t == "boolean":
            return Expr(r.choice(["=", "!="]), c, [vals[0]])
        if r.random() < 0.2:
            return Expr("in", c, vals)
        return Expr(r.choice(["=", "!=", "<", "<=", ">", ">="]), c, [vals[0]])

    def build(depth: int) -> Expr:
        if depth == 0 or r.random() < 0.4:
            return atom()
        op = r.choice(["and", "or", "not", "and"])
        if op == "not":
            return Expr("not", args=[build(depth - 1)])
        return Expr(op, args=[build(depth - 1) for _ in range(r.randint(2, 3))])

    return build(2)


# ---------------------------------------------------------------------------------------------
# running pqread and checking its paths


def run_pqread(pqread: Path, path: Path, schema: str, out: Path, columns: list[str] | None,
               where: str | None, passes: int = 1) -> tuple[dict, str]:
    """Runs pqread; returns its per-path report and its stderr (a failing path is reported,
    the others still run)."""
    cmd = [str(pqread), str(path), "--schema", schema, "--out", str(out),
           "--readwith-passes", str(passes)]
    if columns:
        cmd += ["--columns", ",".join(columns)]
    if where:
        cmd += ["--where", where]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PQREAD_TIMEOUT_S, check=False)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"pqread exited {proc.returncode} without a report:\n"
                             f"{proc.stdout}\n{proc.stderr}") from None
    return report, proc.stderr


@dataclass
class Plan:
    """What one file is read with: the projection and the filter, and pyarrow's answers."""
    columns: list[str]
    where: Expr | None
    where_text: str | None


def plan_reads(r: random.Random, types: dict[str, Any], table: pa.Table,
               prefer: list[str]) -> Plan:
    cache: dict[str, pa.Array] = {}

    def values(c: str) -> pa.Array:
        if c not in cache:
            cache[c] = leaf_form(table.column(c).combine_chunks(), types[c], floats_as_bits=False)
        return cache[c]

    names = list(types)
    # Of a few random filters, the first that keeps some rows but not all (AND of a few
    # comparisons often keeps none).
    where = None
    for _ in range(5):
        where = random_where(r, types, values, prefer)
        if where is None:
            break
        kept = pc.sum(pc.fill_null(evaluate(where, values), False).cast(pa.int64())).as_py() or 0
        if 0 < kept < table.num_rows:
            break
    # The projection leaves out a filter column when it can, so that project_filter reads it
    # only for the filter.
    keep_out = sorted(where.cols()) if where else []
    candidates = [c for c in names if c not in keep_out] or names
    k = r.randint(1, min(len(candidates), 6))
    columns = r.sample(candidates, k)
    if len(columns) > 1 and columns == [c for c in names if c in columns]:
        columns.reverse()
    return Plan(columns, where, render(where, types) if where else None)


def check_paths(pqread: Path, path: Path, schema_json: str, out: Path, plan: Plan,
                context: str, table: pa.Table | None = None, passes: int = 1) -> dict:
    """Runs every read path over the file and compares each with pyarrow's read of it (table,
    when the caller has it already). Returns pqread's report (rows and seconds per path);
    raises AssertionError listing every difference."""
    schema = json.loads(schema_json)
    types = {f["name"]: f["type"] for f in schema["fields"]}
    table = read_table(path) if table is None else table
    meta = pq.ParquetFile(path).metadata
    groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    report, stderr = run_pqread(pqread, path, schema_json, out, plan.columns, plan.where_text, passes)
    problems = [f"{p}: pqread failed: {v['error']}" for p, v in report.items() if "error" in v]

    keep = None
    if plan.where is not None:
        cache: dict[str, pa.Array] = {}

        def values(c: str) -> pa.Array:
            if c not in cache:
                cache[c] = leaf_form(table.column(c).combine_chunks(), types[c], floats_as_bits=False)
            return cache[c]

        keep = pc.fill_null(evaluate(plan.where, values), False)
    expected_paths = ["decode", "read", "readwith"]
    if plan.columns:
        expected_paths.append("project")
    if keep is not None:
        expected_paths += ["filter", "project_filter"] if plan.columns else ["filter"]
    for p in expected_paths:
        if p not in report:
            problems.append(f"{p}: not run by pqread")
            continue
        if "error" in report[p]:
            continue
        dump = load_dump(out / p)
        names = plan.columns if p in ("project", "project_filter") else list(types)
        if dump.names != names:
            problems.append(f"{p}: columns {dump.names}, want {names}")
            continue
        want_groups = groups
        if p in ("filter", "project_filter"):
            # One batch per row group with a row left.
            want_groups, start = [], 0
            for n in groups:
                k = pc.sum(keep.slice(start, n).cast(pa.int64())).as_py() or 0
                start += n
                if k:
                    want_groups.append(k)
        if dump.batches != want_groups:
            problems.append(f"{p}: batches of {dump.batches[:20]} rows, pyarrow's row groups "
                            f"{want_groups[:20]}")
        # pyarrow's answer: the table, Table.select for a projection, the pyarrow.compute
        # mask for a filter.
        answer = table.select(names) if p in ("project", "project_filter") else table
        for c in names:
            exp = answer.column(c).combine_chunks()
            if p in ("filter", "project_filter"):
                exp = exp.filter(keep)
            where = f"{p}: column {c} ({json.dumps(types[c])})"
            if (d := diff(exp, dump.columns[c], types[c], where)) is not None:
                problems.append(d)
    if problems:
        raise AssertionError(
            f"{context}\nprojection {plan.columns}, filter {plan.where_text!r}\n"
            + "\n".join(f"  {x}" for x in problems)
            + (f"\npqread stderr: {stderr.strip()}" if stderr.strip() else ""))
    return report
