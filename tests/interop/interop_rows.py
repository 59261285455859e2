"""Rows from every reader in one canonical form, compared as multisets.

The canonical form is the JSON form of `medallion table scan --format jsonl` (DESIGN.md section 8),
so rows printed by medallion are checked against the contract as they are, and rows from Spark and
delta-rs (Python objects) are converted into it:

  timestamp      "YYYY-MM-DDTHH:MM:SS[.ffffff]Z"  (UTC; the fraction, 6 digits, only when non-zero)
  timestamp_ntz  "YYYY-MM-DDTHH:MM:SS[.ffffff]"   (no zone)
  date           "YYYY-MM-DD"
  decimal(p,s)   a JSON number or string; compared as the decimal with exactly s fraction digits
  binary         base64 (standard alphabet, padded), as encoding/json writes []byte
  float          rounded to float32, so 1.1 printed by Go equals Spark's 1.100000023841858
  struct         object; array: list; map: object (string keys) or list of [key, value] pairs
  null           null

Types are written as compact strings ("long", "decimal(10,2)", "struct<a:integer,b:array<string>>");
`parse_type` turns them into trees and `type_string` turns a Delta/Spark JSON schema into the same
strings, so the expected schema of a scenario is one readable line per column.
"""

from __future__ import annotations

import base64
import binascii
import collections
import datetime as dt
import json
import re
import struct
from decimal import Decimal, InvalidOperation, localcontext
from typing import Any, Iterable, Mapping

PRIMITIVES = {
    "string", "long", "integer", "short", "byte", "float", "double", "boolean", "binary", "date",
    "timestamp", "timestamp_ntz",
}
INT_RANGES = {
    "byte": (-(2**7), 2**7 - 1),
    "short": (-(2**15), 2**15 - 1),
    "integer": (-(2**31), 2**31 - 1),
    "long": (-(2**63), 2**63 - 1),
}
_TS = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{6}))?(Z?)$")
_DATE = re.compile(r"^(\d{4})-(\d\d)-(\d\d)$")
_DECIMAL = re.compile(r"^decimal\((\d+),\s*(\d+)\)$")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


class RowFormatError(ValueError):
    """A value does not have the form the contract (or its declared type) requires."""


# ---------------------------------------------------------------------------------------------
# types


def parse_type(text: str) -> Any:
    """Parses a compact type string into a tree: a primitive name, ("decimal", p, s),
    ("array", elem), ("map", key, value) or ("struct", [(name, type), ...])."""
    tree, rest = _parse_type(text.replace(" ", ""))
    if rest:
        raise ValueError(f"interop_rows: trailing {rest!r} in type {text!r}")
    return tree


def _parse_type(s: str) -> tuple[Any, str]:
    m = re.match(r"decimal\((\d+),(\d+)\)", s)
    if m:
        return ("decimal", int(m.group(1)), int(m.group(2))), s[m.end():]
    for kind in ("array", "map", "struct"):
        if s.startswith(kind + "<"):
            s = s[len(kind) + 1:]
            if kind == "array":
                elem, s = _parse_type(s)
                return ("array", elem), _expect(s, ">")
            if kind == "map":
                key, s = _parse_type(s)
                value, s = _parse_type(_expect(s, ","))
                return ("map", key, value), _expect(s, ">")
            fields = []
            while True:
                m = re.match(r"([A-Za-z_][A-Za-z0-9_]*):", s)
                if not m:
                    raise ValueError(f"interop_rows: expected field name at {s!r}")
                ftype, s = _parse_type(s[m.end():])
                fields.append((m.group(1), ftype))
                if s.startswith(","):
                    s = s[1:]
                    continue
                return ("struct", fields), _expect(s, ">")
    m = re.match(r"[a-z_]+", s)
    if not m or m.group(0) not in PRIMITIVES:
        raise ValueError(f"interop_rows: unknown type at {s!r}")
    return m.group(0), s[m.end():]


def _expect(s: str, token: str) -> str:
    if not s.startswith(token):
        raise ValueError(f"interop_rows: expected {token!r} at {s!r}")
    return s[len(token):]


def type_string(t: Any) -> str:
    """Renders a Delta/Spark schema JSON type (a string or a dict) as a compact type string."""
    if isinstance(t, str):
        m = _DECIMAL.match(t)
        return f"decimal({m.group(1)},{m.group(2)})" if m else t
    kind = t["type"]
    if kind == "struct":
        return "struct<" + ",".join(f"{f['name']}:{type_string(f['type'])}" for f in t["fields"]) + ">"
    if kind == "array":
        return f"array<{type_string(t['elementType'])}>"
    if kind == "map":
        return f"map<{type_string(t['keyType'])},{type_string(t['valueType'])}>"
    raise ValueError(f"interop_rows: unknown schema type {t!r}")


def schema_columns(schema_json: Mapping[str, Any] | str) -> dict[str, str]:
    """Maps a struct schema (Delta schemaString / Spark StructType.jsonValue()) to
    {column: compact type}, in column order."""
    if isinstance(schema_json, str):
        schema_json = json.loads(schema_json)
    return {f["name"]: type_string(f["type"]) for f in schema_json["fields"]}


# ---------------------------------------------------------------------------------------------
# values


def format_timestamp(value: dt.datetime, *, utc: bool = True) -> str:
    if utc:
        if value.tzinfo is None:
            # PySpark hands out naive datetimes in the process zone; conftest pins TZ=UTC.
            value = value.replace(tzinfo=dt.timezone.utc)
        value = value.astimezone(dt.timezone.utc)
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.year < 1000:
        text = f"{value.year:04d}" + text[text.index("-"):]
    if value.microsecond:
        text += f".{value.microsecond:06d}"
    return text + ("Z" if utc else "")


def timestamp_from_micros(micros: int) -> str:
    return format_timestamp(_EPOCH + dt.timedelta(microseconds=micros))


def canonical_value(value: Any, t: Any, where: str = "value") -> Any:
    """Converts one value of type tree t into the canonical JSON form, or raises RowFormatError
    naming `where` (the column path) when the value cannot be of that type."""
    if value is None:
        return None
    if isinstance(t, tuple):
        kind = t[0]
        if kind == "decimal":
            return _canonical_decimal(value, t[2], where)
        if kind == "array":
            if not isinstance(value, (list, tuple)):
                raise RowFormatError(f"{where}: array expected, got {value!r}")
            return [canonical_value(v, t[1], f"{where}[{i}]") for i, v in enumerate(value)]
        if kind == "map":
            pairs = value.items() if isinstance(value, Mapping) else value
            try:
                out = [[canonical_value(k, t[1], f"{where}.key"),
                        canonical_value(v, t[2], f"{where}[{k!r}]")] for k, v in pairs]
            except (TypeError, ValueError) as err:
                raise RowFormatError(f"{where}: map expected, got {value!r}") from err
            return sorted(out, key=lambda kv: json.dumps(kv[0], sort_keys=True))
        if kind == "struct":
            if hasattr(value, "asDict"):
                value = value.asDict(recursive=False)
            if not isinstance(value, Mapping):
                raise RowFormatError(f"{where}: struct expected, got {value!r}")
            return canonical_row(value, t[1], where)
        raise AssertionError(kind)
    if t in INT_RANGES:
        if isinstance(value, bool) or not isinstance(value, int):
            raise RowFormatError(f"{where}: {t} expected, got {value!r}")
        lo, hi = INT_RANGES[t]
        if not lo <= value <= hi:
            raise RowFormatError(f"{where}: {value} out of range for {t}")
        return value
    if t in ("float", "double"):
        if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
            raise RowFormatError(f"{where}: {t} expected, got {value!r}")
        f = float(value)
        return struct.unpack("<f", struct.pack("<f", f))[0] if t == "float" else f
    if t == "boolean":
        if not isinstance(value, bool):
            raise RowFormatError(f"{where}: boolean expected, got {value!r}")
        return value
    if t == "string":
        if not isinstance(value, str):
            raise RowFormatError(f"{where}: string expected, got {value!r}")
        return value
    if t == "binary":
        if isinstance(value, (bytes, bytearray, memoryview)):
            return base64.b64encode(bytes(value)).decode("ascii")
        if isinstance(value, str):
            try:
                base64.b64decode(value, validate=True)
            except binascii.Error as err:
                raise RowFormatError(f"{where}: binary must be base64, got {value!r}") from err
            return value
        raise RowFormatError(f"{where}: binary expected, got {value!r}")
    if t == "date":
        if isinstance(value, dt.datetime):
            raise RowFormatError(f"{where}: date expected, got datetime {value!r}")
        if isinstance(value, dt.date):
            return value.isoformat()
        if isinstance(value, str) and _DATE.match(value):
            return value
        raise RowFormatError(f"{where}: date must be YYYY-MM-DD, got {value!r}")
    if t in ("timestamp", "timestamp_ntz"):
        utc = t == "timestamp"
        if isinstance(value, dt.datetime):
            if not utc and value.tzinfo is not None:
                raise RowFormatError(f"{where}: timestamp_ntz must not carry a zone: {value!r}")
            return format_timestamp(value, utc=utc)
        if isinstance(value, str):
            m = _TS.match(value)
            if not m or (m.group(8) == "Z") != utc:
                form = "YYYY-MM-DDTHH:MM:SS[.ffffff]" + ("Z" if utc else "")
                raise RowFormatError(f"{where}: {t} must be {form}, got {value!r}")
            if m.group(7) == "000000":
                raise RowFormatError(f"{where}: zero fraction must be omitted: {value!r}")
            return value
        raise RowFormatError(f"{where}: {t} expected, got {value!r}")
    raise AssertionError(f"unhandled type {t!r}")


def _canonical_decimal(value: Any, scale: int, where: str) -> str:
    if isinstance(value, (bool, float)):
        # A float has already lost the exact decimal; JSON is parsed with parse_float=Decimal.
        raise RowFormatError(f"{where}: decimal must be exact, got {value!r}")
    try:
        with localcontext() as ctx:
            ctx.prec = 80  # decimal(38, s) needs more than the default 28 digits
            d = Decimal(value) if isinstance(value, (int, str)) else value
            q = d.quantize(Decimal(1).scaleb(-scale))
    except (InvalidOperation, TypeError, AttributeError) as err:
        raise RowFormatError(f"{where}: decimal expected, got {value!r}") from err
    if q != d:
        raise RowFormatError(f"{where}: {value!r} has more than {scale} fraction digits")
    return str(q)


def canonical_row(row: Mapping[str, Any], fields: Iterable[tuple[str, Any]],
                  where: str = "row") -> dict[str, Any]:
    fields = list(fields)
    names = [n for n, _ in fields]
    extra = sorted(set(row) - set(names))
    missing = [n for n in names if n not in row]
    if extra or missing:
        raise RowFormatError(f"{where}: columns {sorted(row)} != expected {names} "
                             f"(missing {missing}, unexpected {extra})")
    return {n: canonical_value(row[n], t, f"{where}.{n}") for n, t in fields}


def canonical_rows(rows: Iterable[Mapping[str, Any]], columns: Mapping[str, str]) -> list[dict]:
    """Canonicalises rows against {column: compact type}; the error names the row index."""
    fields = [(name, parse_type(t)) for name, t in columns.items()]
    return [canonical_row(r, fields, f"row {i}") for i, r in enumerate(rows)]


def row_key(row: Mapping[str, Any]) -> str:
    return json.dumps(row, sort_keys=True, default=str)


def multiset_diff(actual: Iterable[Mapping], expected: Iterable[Mapping]) -> tuple[list, list]:
    """Returns (missing, unexpected): rows (with multiplicity) in expected but not actual, and
    the other way round."""
    a = collections.Counter(row_key(r) for r in actual)
    e = collections.Counter(row_key(r) for r in expected)
    return sorted((e - a).elements()), sorted((a - e).elements())


def assert_same_rows(actual: list[Mapping], expected: list[Mapping], label: str,
                     limit: int = 10) -> None:
    """Asserts two canonical row lists are equal as multisets, listing at most `limit` rows of
    each difference."""
    missing, unexpected = multiset_diff(actual, expected)
    if missing or unexpected:
        lines = [f"{label}: {len(actual)} rows read, {len(expected)} expected; "
                 f"{len(missing)} missing, {len(unexpected)} unexpected"]
        lines += [f"  missing    {r}" for r in missing[:limit]]
        lines += [f"  unexpected {r}" for r in unexpected[:limit]]
        raise AssertionError("\n".join(lines))


def parse_jsonl(text: str, source: str) -> list[dict]:
    """Parses `scan --format jsonl` output: one JSON object per line, floats kept exact (so
    decimals survive). The error names the source and the line."""
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            raise RowFormatError(f"{source}:{n}: empty line")
        try:
            obj = json.loads(line, parse_float=Decimal)
        except json.JSONDecodeError as err:
            raise RowFormatError(f"{source}:{n}:{err.colno}: {err.msg}: {line[:200]!r}") from err
        if not isinstance(obj, dict):
            raise RowFormatError(f"{source}:{n}: JSON object expected, got {line[:200]!r}")
        rows.append(obj)
    return rows
