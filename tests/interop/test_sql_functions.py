"""Spark SQL scalar functions (issue 36): every function medallion's sqlexpr engine supports,
evaluated by medallion (tests/interop/cmd/sqleval, values mode) and by Spark SQL on the same
randomized rows (nulls, integer and decimal overflow, NaN and infinities, unicode, negative
positions, dates and timestamps in the UTC session), compared exactly: the type Spark's typeof
names, and each value as CAST(... AS STRING) writes it (doubles within 1e-12 relative).

All expressions go through one DataFrame select, so Spark runs one small job. The rows come from
a fixed seed (MEDALLION_SQLFN_SEED picks another, to explore).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import random
import subprocess
from decimal import Decimal
from pathlib import Path

from test_expectations_sql import sqleval_bin  # noqa: F401 (the fixture)

NOW = "2024-03-02T06:00:00Z"
SEED = int(os.environ.get("MEDALLION_SQLFN_SEED", "36"))
ROWS_N = 48

COLS = [("s", "string"), ("t", "string"), ("i", "integer"), ("n", "integer"), ("l", "long"),
        ("x", "double"), ("dec", "decimal(10,3)"), ("d", "date"), ("ts", "timestamp"),
        ("ds", "string"), ("j", "string")]
SCHEMA = {"type": "struct", "fields": [
    {"name": c, "type": t, "nullable": True, "metadata": {}} for c, t in COLS]}
SPARK_DDL = ("s STRING, t STRING, i INT, n INT, l BIGINT, x DOUBLE, dec DECIMAL(10,3), d DATE, "
             "ts TIMESTAMP, ds STRING, j STRING, _i INT")

STRINGS = ["", " ", "Alice", "  padded  ", "héllo wörld", "ÄÖÜ straße", "日本語のテキスト", "a,b,,c",
           "x_y%z", "hello world foo", "123", "-7.5", "2024-03-05", "abcabcabc", "😀emoji😀 b",
           "ab  cd", "o", "lol lol", "MiXeD cAsE wOrDs", "ΟΔΟΣ ΣΑ", "İstanbul ﬁx"]
TOKENS = ["", "a", "b", ",", " ", "é", "ab", "lo", "o w", "l", "😀"]
DATE_STRINGS = ["2024-03-05", "05/03/2024", "2024-02-30", "2024-03-05 10:11:12", " 2024-03-05",
                "2024-3-5", "x", "2024-03-05T10:11:12Z", "2024-03-05T10:11:12+02:00",
                "2024-02-29 23:59:59", "31/12/1999", "2024-03-05T10:11:12.345678"]
JSONS = ['{"a":1,"b":{"c":[1,2,{"d":"x"}]}}', '{"a":"str\\n","b":null}', '[1,2,3]', "not json",
         '{"a":1.50e1,"b":{"c":"q"}}', '{"a":{"x":true,"y":[null,1.0]}}', '{"a b": 5, "a": -0}',
         "{}", '{"a":"\\u00e9\\"q\\""}', '{"a":[]}', '{"a":12345678901234567890}', '{"a":1} tail',
         '{"a": 2, "a": 3}', '{"b":{"c":[0, 1, {"d": [1, {"e": "é"}]}]}}', '{"a":"x" ',
         # from_json's cases: nested fields, single quotes, type mismatches (null, and only that
         # field), a key twice, NaN, malformed records, unicode escapes, timestamps and dates
         '{"a": 7, "b": {"c": "x", "d": 2.5}, "ts": "2024-03-05 10:11:12"}', "{'a': 3, 'b': {'c': 'sq'}}",
         '{"a": "7", "b": 5, "ts": "1"}', '{"a": 1, "a": "z", "b": {"c": 1, "c": [1]}}',
         '{"a": 2147483648, "ts": 1700000000}', '{"a": NaN, "b": null}', '{"a": 1, "b": ',
         '{"a": "\\u65e5\\u672c", "b": {"c": "😀", "d": "12.345"}}', '{"a": -0, "b": {"d": "1,5"}}',
         '{"a": 1e2, "ts": "2024-03-05T10:11:12+02:00", "b": {"d": 1e40}}', '{"A": 1, "b": {"C": 2}}',
         '{"a": "\x01"}', '{"a": 12.345, "b": [1, {"c": 2.50}], "ts": "x"}', " {'a': true} trailing",
         # lone surrogates: NULL as a string value, escaped again inside an object or array
         '{"a":"\\uD800\\u0041"}', '{"a":"x\\uDC00y", "b": {"c": "\\uD800z"}}', '{"a":["\\uDBFF"]}']
DOUBLES = [0.0, -0.0, 0.5, 1.5, 2.5, -2.5, 2.675, 1e-7, 1e20, -123.456, float("nan"),
           float("inf"), float("-inf"), 1.0000000000000002, 0.125, -0.5, 1e-300]
INTS = [0, 1, -1, 2, 3, 5, -3, 7, 100, 2147483647, -2147483648, 15, 25, -15]
LONGS = [0, 1, -1, 9223372036854775807, -9223372036854775808, 123456789012, -987654321, 35]
DECIMALS = ["-1234.567", "0.005", "99.995", "9999999.999", "-9999999.999", "0.000", "12.345",
            "-0.500", "2.500", "1.005"]


def json_double(x: float):
    """A double as sqleval reads it: NaN and the infinities by name (JSON has no such numbers)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def random_rows(rng: random.Random) -> list[dict]:
    def maybe(v, p=0.1):
        return None if rng.random() < p else v

    def rand_string():
        if rng.random() < 0.6:
            return rng.choice(STRINGS)
        return "".join(rng.choice("ab ,.-_xéO日l") for _ in range(rng.randint(0, 9)))

    rows = []
    for _ in range(ROWS_N):
        x = rng.choice(DOUBLES) if rng.random() < 0.6 else rng.uniform(-1000, 1000)
        day = dt.date(1950, 1, 1) + dt.timedelta(days=rng.randint(0, 47000))
        ts = dt.datetime(1950, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(
            microseconds=rng.randint(0, 47000 * 86400 * 10**6))
        if rng.random() < 0.3:
            ts = ts.replace(microsecond=0)
        rows.append({
            "s": maybe(rand_string()), "t": maybe(rng.choice(TOKENS)),
            "i": maybe(rng.choice(INTS) if rng.random() < 0.6 else rng.randint(-50, 50)),
            "n": maybe(rng.randint(-3, 12)),
            "l": maybe(rng.choice(LONGS) if rng.random() < 0.6 else rng.randint(-10**12, 10**12)),
            "x": maybe(json_double(x)), "dec": maybe(rng.choice(DECIMALS)),
            "d": maybe(day.isoformat()), "ts": maybe(ts.isoformat().replace("+00:00", "Z")),
            "ds": maybe(rng.choice(DATE_STRINGS)), "j": maybe(rng.choice(JSONS)),
        })
    return rows


VALUES = [
    # strings
    "length(s)", "lower(s)", "upper(s)", "trim(s)", "ltrim(s)", "rtrim(s)", "initcap(s)",
    "reverse(s)", "substr(s, i)", "substr(s, n, 3)", "substring(s, -3)", "substr(s, 2, i)",
    "substr(s, 0, 2)", "substr(s, -n, n)", "left(s, n)", "right(s, 3)", "right(s, n)",
    "lpad(s, n, t)", "rpad(s, n, 'xy')", "lpad(s, 5)", "rpad(s, 3, t)", "lpad(t, 4, '日本')",
    "repeat(t, n)", "split_part(s, ',', 2)", "split_part(s, t, -1)",
    "split_part(s, ' ', if(n = 0, 1, n))", "concat(s, t)", "concat(s, '-', i)", "concat()",
    "concat_ws('|', s, t, i)", "concat_ws(t, s, 'x')", "replace(s, t)", "replace(s, t, '#')",
    "replace(s, 'l', 'L')", "instr(s, t)", "locate(t, s)", "locate(t, s, n)",
    "position('o', s, 3)", "translate(s, 'abé ', 'xy')", "translate(s, t, 'Q')",
    "startswith(s, t)", "endswith(s, t)", "contains(s, t)", "rlike(s, '^[a-z]+$')",
    "regexp_extract(s, '([a-z]+) ([a-z]+)', 2)", "regexp_extract(s, '(\\\\d+)', 1)",
    "regexp_extract(s, 'l(x)?', 1)", "regexp_replace(s, '[aeiou]', '*')",
    "regexp_replace(s, '(l+)', '<$1>')", "regexp_replace(s, 'o', '0', 5)",
    "regexp_replace(translate(t, '😀', 'e'), 'b*', '-')", "regexp_like(s, 'l{2}')", "regexp_replace(s, '^a|c$', '\\\\$')",
    # choice and nulls
    "coalesce(t, s)", "nvl(i, l)", "ifnull(t, 'none')", "nullif(s, t)", "nullif(i, 0)",
    "nvl2(t, s, 'no')", "if(i > 0, s, t)", "if(x > 1, dec, i)", "greatest(i, l, n)",
    "least(x, dec, i)", "greatest(s, t)", "least(d, ts)", "greatest(x, 1.5)", "least(dec, 0.5)",
    # numbers
    "abs(x)", "abs(dec)", "abs(i)", "round(x)", "round(x, 2)", "round(x, -1)", "bround(x, 1)",
    "bround(x)", "round(dec, 1)", "round(dec, -2)", "bround(dec, 2)", "round(i, -2)",
    "round(l, -3)", "round(dec)", "bround(i, -1)", "round(n / 2)", "floor(x)", "ceil(x)",
    "floor(dec)", "ceil(dec)", "floor(i)", "ceiling(l)", "pow(x, 2)", "power(n, x)", "sqrt(x)",
    "exp(x)", "ln(x)", "log(x)", "log(2, x)", "log(n, i)", "log10(x)", "log2(x)", "mod(i, n)",
    "pmod(i, n)", "pmod(x, 2.5)", "pmod(dec, 3)", "pmod(l, n)", "pmod(dec, -0.7)", "sign(x)",
    "signum(dec)", "round('2.5')", "round(s)",
    # dates and timestamps (UTC session)
    "to_date(ds)", "to_date(ds, 'dd/MM/yyyy')", "to_date(ts)", "to_timestamp(ds)",
    "to_timestamp(ds, 'yyyy-MM-dd HH:mm:ss')", "to_timestamp(ds, \"yyyy-MM-dd'T'HH:mm:ssXXX\")",
    "to_timestamp(ds, \"yyyy-MM-dd'T'HH:mm:ss.SSSSSS\")",
    "date_trunc('year', ts)", "date_trunc('QUARTER', ts)", "date_trunc('month', ts)",
    "date_trunc('week', ts)", "date_trunc('day', ts)", "date_trunc('hour', ts)",
    "date_trunc('minute', ts)", "date_trunc('second', ts)", "date_trunc('millisecond', ts)",
    "date_trunc('bogus', ts)", "date_trunc('mm', d)", "trunc(d, 'year')", "trunc(d, 'MM')",
    "trunc(d, 'quarter')", "trunc(d, 'week')", "trunc(d, 'dd')", "trunc(ts, 'mon')", "year(d)",
    "quarter(d)", "month(ts)", "day(d)", "dayofmonth(ts)", "hour(ts)", "minute(ts)", "second(ts)",
    "dayofweek(d)", "dayofyear(ts)", "weekofyear(d)", "year(ds)", "hour(ds)", "date_add(d, n)",
    "date_sub(d, n)", "date_add(ds, 3)", "datediff(d, ts)", "datediff(ds, d)", "unix_timestamp(ts)",
    "unix_timestamp(ds)", "unix_timestamp(ds, 'yyyy-MM-dd')", "unix_timestamp(d)",
    "from_unixtime(i)", "from_unixtime(i, 'yyyy/MM/dd HH')", "timestamp_seconds(i)",
    "timestamp_millis(i)", "timestamp_micros(i)", "timestamp_seconds(x % 1e9)",
    "timestamp_seconds(dec)", "unix_seconds(ts)", "unix_millis(ts)", "unix_micros(ts)",
    "unix_date(d)", "date_from_unix_date(i % 100000)",
    # JSON
    "get_json_object(j, '$.a')", "get_json_object(j, '$.b.c[2].d')", "get_json_object(j, '$.b')",
    "get_json_object(j, '$[1]')", "get_json_object(j, '$')", "get_json_object(j, \"$['a b']\")",
    "get_json_object(j, '$.b.c')", "get_json_object(j, 'a')", "get_json_object(j, '$.a.y[1]')",
    "get_json_object(j, '$.b.c[2].d[1].e')",
    # from_json: a field of the result (the engine has no struct values)
    "from_json(j, 'a INT, b STRING').a", "from_json(j, 'a INT, b STRING').b", "from_json(j, 'a BIGINT').a",
    "from_json(j, 'a DOUBLE').a", "from_json(j, 'a DECIMAL(6,2)').a", "from_json(j, 'a STRING')['a']",
    "from_json(j, 'a BOOLEAN').a", "from_json(j, 'ts TIMESTAMP').ts", "from_json(j, 'ts DATE').ts",
    "from_json(j, 'STRUCT<b: STRUCT<c: STRING, d: DECIMAL(5,1)>>').b.c",
    "from_json(j, 'STRUCT<b: STRUCT<c: STRING, d: DECIMAL(5,1)>>')['b']['d']", "from_json(j, 'b STRUCT<c: INT>').B.c",
    "coalesce(from_json(s, 'a INT').a, -1)", "from_json(j, '`a` STRING, x ARRAY<INT>').a",
    # CASE and CAST
    "CASE WHEN i > 0 THEN 'pos' WHEN i < 0 THEN 'neg' ELSE 'zero' END",
    "CASE n WHEN 1 THEN 'one' WHEN 2 THEN 'two' END", "CASE WHEN x > 1 THEN dec ELSE i END",
    "CASE t WHEN 'a' THEN 1 WHEN NULL THEN 2 ELSE n END", "CAST(x AS int)", "CAST(x AS bigint)",
    "CAST(dec AS int)", "CAST(l AS int)", "CAST(s AS int)", "CAST(s AS decimal(10,2))",
    "CAST(ds AS date)", "CAST(ts AS date)", "CAST(x AS decimal(12,4))", "CAST(i AS boolean)",
    "CAST(ts AS bigint)", "CAST(dec AS double)", "CAST(d AS timestamp)", "CAST(x AS string)",
    "CAST(i AS decimal(5,1))", "CAST(ds AS timestamp)", "CAST(s AS double)", "CAST(s AS boolean)",
    # functions nested, as computed columns write them
    "upper(substr(s, 1, 2))", "round(x * 0.92, 2)", "concat(upper(left(s, 1)), lower(substr(s, 2)))",
    "coalesce(get_json_object(j, '$.a'), 'none')", "date_add(to_date(ds), 1)",
]


def ours(sqleval: Path, rows: list[dict]) -> dict:
    spec = {"schema": SCHEMA, "rows": rows, "exprs": [], "values": VALUES, "now": NOW}
    proc = subprocess.run([str(sqleval)], input=json.dumps(spec), capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    res = {}
    for e, vals, typ, err in zip(VALUES, out["values"], out["value_types"], out["value_errors"]):
        assert err is None, f"medallion rejects {e!r}: {err}"
        res[e] = (typ, vals)
    return res


def spark_value(col: str, v):
    if v is None:
        return None
    if col == "x":
        return float(v.replace("Infinity", "inf")) if isinstance(v, str) else float(v)
    if col == "dec":
        return Decimal(v)
    if col == "ts":
        return dt.datetime.fromisoformat(v.replace("Z", "+00:00")).replace(tzinfo=None)
    if col == "d":
        return dt.date.fromisoformat(v)
    return v


def theirs(spark, rows: list[dict]) -> dict:
    cols = [c for c, _ in COLS]
    data = [tuple(spark_value(c, r.get(c)) for c in cols) + (k,) for k, r in enumerate(rows)]
    df = spark.createDataFrame(data, SPARK_DDL)
    sel = []
    for k, e in enumerate(VALUES):
        sel += [f"CAST(({e}) AS STRING) AS v{k}", f"typeof(({e})) AS t{k}"]
    # Text a pattern does not match is NULL in medallion. Spark's default policy (EXCEPTION)
    # fails the query instead when Spark 2's parser would have read a prefix of it
    # ('2024-03-05T10:11:12Z' by 'yyyy-MM-dd'); CORRECTED is its NULL.
    old = spark.conf.get("spark.sql.legacy.timeParserPolicy", "EXCEPTION")
    spark.conf.set("spark.sql.legacy.timeParserPolicy", "CORRECTED")
    try:
        got = df.selectExpr("_i", *sel).orderBy("_i").collect()
    finally:
        spark.conf.set("spark.sql.legacy.timeParserPolicy", old)
    return {e: (got[0][f"t{k}"], [r[f"v{k}"] for r in got]) for k, e in enumerate(VALUES)}


def same_double(a: str, b: str) -> bool:
    fa, fb = float(a), float(b)
    if math.isnan(fa) or math.isnan(fb):
        return math.isnan(fa) and math.isnan(fb)
    if math.isinf(fa) or math.isinf(fb) or fa == fb:
        return fa == fb
    return abs(fa - fb) <= 1e-12 * max(abs(fa), abs(fb))


def test_functions_match_spark_sql(spark, sqleval_bin):  # noqa: F811
    rows = random_rows(random.Random(SEED))
    mine, spark_res = ours(sqleval_bin, rows), theirs(spark, rows)
    diffs = []
    for e in VALUES:
        (mt, mv), (st, sv) = mine[e], spark_res[e]
        if st != "void" and mt != st:
            diffs.append(f"{e!r}: type medallion {mt}, Spark {st}")
            continue
        for k, (a, b) in enumerate(zip(mv, sv)):
            if a == b or a is not None and b is not None and st == "double" and same_double(a, b):
                continue
            diffs.append(f"{e!r} row {k}: medallion {a!r}, Spark {b!r} "
                         f"(row {json.dumps(rows[k], ensure_ascii=False)})")
            break
    assert not diffs, f"seed {SEED}: values differ from Spark SQL:\n" + "\n".join(diffs)
