"""Semantics of the expectation language (DESIGN.md §4, issue 24): for each construct, the answer
of medallion's evaluator (table.ParseSQL + table.Program, through tests/interop/cmd/sqleval) on
a set of rows equals Spark SQL's answer on the same rows, nulls included.

Spark runs with its defaults (ANSI mode off, as in Spark 3.5): implicit casts, NULL on division
by zero, wrapping integer arithmetic. current_timestamp() is the batch timestamp in medallion; the
Spark side gets the same instant as a TIMESTAMP literal.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest


NOW = "2024-03-02T06:00:00Z"
NOW_SQL = "TIMESTAMP '2024-03-02 06:00:00'"

SCHEMA = {"type": "struct", "fields": [
    {"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in [
        ("id", "long"), ("name", "string"), ("amount", "double"), ("qty", "integer"),
        ("price", "decimal(10,2)"), ("ok", "boolean"), ("ts", "timestamp"), ("d", "date"),
        ("st", {"type": "struct", "fields": [
            {"name": "code", "type": "string", "nullable": True, "metadata": {}}]}),
    ]]}
SPARK_DDL = ("id BIGINT, name STRING, amount DOUBLE, qty INT, price DECIMAL(10,2), ok BOOLEAN, "
             "ts TIMESTAMP, d DATE, st STRUCT<code: STRING>, _i INT")

ROWS = [
    {"id": 1, "name": "Alice", "amount": 10.5, "qty": 3, "price": "12.50", "ok": True,
     "ts": "2024-03-01T10:00:00Z", "d": "2024-03-01", "st": {"code": "DE"}},
    {"id": 2, "name": "bob ", "amount": -1.0, "qty": 0, "price": "0.00", "ok": False,
     "ts": "2024-03-01T11:30:00Z", "d": "2024-02-29", "st": {"code": "FR"}},
    {"id": 3},
    {"id": 4, "name": "  x_y%z ", "amount": "NaN", "qty": 2147483647, "price": "99999999.99",
     "ok": True, "ts": "2024-03-02T00:00:00Z", "d": "2024-03-02", "st": {"code": None}},
    {"id": -5, "name": "Ünïcode", "amount": 0.0, "qty": -2147483648, "price": "-0.01", "ok": False,
     "ts": "1970-01-01T00:00:00Z", "d": "1970-01-01", "st": {"code": "de"}},
    {"id": 6, "name": "", "amount": "Infinity", "qty": -7, "price": "5.55", "ok": None,
     "ts": "2024-03-01T23:59:59.999999Z", "d": "2024-12-31", "st": None},
    {"id": 7, "name": "\tTab ", "amount": 1e-7, "qty": 12, "price": "1.00", "ok": True,
     "ts": "2024-03-01T06:00:00Z", "d": "2024-03-01", "st": {"code": "1.9"}},
]

EXPRS = [
    # comparisons and literals
    "id > 2", "amount >= 0", "amount = amount", "amount <> 0", "amount != 0", "amount == 10.5",
    "amount < 'Infinity'", "qty <= 3", "id = 2147483648", "1e2 = 100", "10L * 3 = 30",
    "price > 12.49", "price = 5.55", "price >= 0.005", "price < 1e8",
    "name = 'Alice'", "name < 'a'", "name >= ''", "'a' 'b' = 'ab'", "'it\\'s' = \"it's\"",
    "ok", "ok = TRUE", "ok <> FALSE",
    # null rules
    "name IS NULL", "name IS NOT NULL", "NULL = NULL", "NULL IS NULL", "amount = NULL",
    "TRUE AND NULL", "FALSE AND NULL", "TRUE OR NULL", "FALSE OR NULL", "NOT ok",
    "ok AND amount > 0", "ok OR amount > 0", "name IS NULL OR amount > 0",
    "name IS NOT NULL AND amount > 0", "NOT (amount > 0 AND ok)",
    # IN, BETWEEN, LIKE
    "name IN ('Alice', 'bob')", "name NOT IN ('Alice', 'bob')", "name IN ('Alice', NULL)",
    "name NOT IN ('Alice', NULL)", "qty IN (0, 3, 12)", "qty IN ('3', 0)", "id IN (1, 2, id + 10)",
    "amount IN (0, 10.5)", "st.code IN ('DE', 'FR')",
    # lists long enough for the hash set (issue 30), with NULL, NaN, -0.0 and non-literal items
    "qty IN (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12)", "qty NOT IN (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, NULL)",
    "name IN ('Alice', 'bob ', '', 'x', '\tTab ')", "name NOT IN ('Alice', 'x', 'y', NULL)",
    "amount IN (-0.0, 1, 2, 3, 4, 5, 6, 7, 8, 10.5, 'NaN')", "amount IN (1D, 2D, 3D, 4D, 5D, 6D, 7D, 8D, -0.0D, amount)",
    "price IN (12.5, 0, 1, 2, 3, 4, 5.55, 6, 7, 8, 9)", "id IN (1, 2, 3, 4, 5, 6, 7, 8, 9, id + 10, NULL)",
    "st.code IN ('DE', 'FR', 'de', '1.9', 'x')", "ok IN (TRUE, TRUE, TRUE, TRUE, TRUE, TRUE, TRUE, TRUE, TRUE)",
    "lower(name) BETWEEN 'a' AND 'c'", "qty + 1 NOT BETWEEN 1 AND 4", "(qty BETWEEN 0 AND 3) BETWEEN TRUE AND TRUE",
    "qty BETWEEN 0 AND 3", "qty NOT BETWEEN 0 AND 3", "amount BETWEEN -1 AND 10.5",
    "ts BETWEEN TIMESTAMP '2024-03-01 00:00:00' AND TIMESTAMP '2024-03-01 23:59:59'",
    "name LIKE 'A%'", "name LIKE '%e'", "name LIKE '%c%e'", "name LIKE '_ob_'", "name NOT LIKE '%o%'",
    "name LIKE '%x\\_y\\%z%'", "name LIKE ''", "name LIKE '%'", "name LIKE NULL", "name LIKE '_'",
    "name LIKE lower(name)",
    # arithmetic
    "id + 1 = 2", "id - 1 < 0", "qty + 1 < 0", "qty * 2 < 0", "-qty < 0", "id / 2 = 0.5",
    "id % 2 = 1", "qty % 5 = -2", "id / 0 IS NULL", "id % 0 IS NULL", "amount / 0 IS NULL",
    "amount * 2 > 20", "amount - amount = 0", "2147483647 + 1 < 0", "-2147483648 < 0",
    "price * 2 = 25", "price + 0.01 = 12.51", "price - 0.01 < 0", "price % 5 = 2.5",
    "price / 2 = 6.25", "price / 3 > 4.16", "price / qty > 1", "price * price > 100",
    "price * price * price * price > 1e30", "price * price * price * price * price > 0",
    "-price < 0", "abs(price) = 0.01", "coalesce(price, 0) = 0", "price IN (12.5, 0)",
    "12345678901234567890123 + 1 > 12345678901234567890123", "id < 12345678901234567890",
    "0.1 + 0.2 = 0.3", "0.1D + 0.2D = 0.3D", "1 / 3 > 0.33", "'5' + 1 = 6", "qty + '1' = 4",
    # functions
    "lower(name) = 'alice'", "upper(name) = 'BOB '", "trim(name) = 'bob'", "trim(name) = 'x_y%z'",
    "trim(name) = 'Tab'", "length(trim(name)) = 4", "length(name) = 7", "length(qty) = 1",
    "length(amount) > 3", "abs(id) = 5", "abs(qty) < 0", "abs(amount) >= 1", "abs(price) = 0.01",
    "coalesce(name, 'none') = 'none'", "coalesce(qty, 'x') = 'x'", "coalesce(NULL, NULL, id) = id",
    "coalesce(st.code, name) = 'Alice'", "upper(st.code) = 'DE'", "lower('ÄB') = 'äb'",
    # casts
    "id = '1'", "id = ' 1 '", "id = 'x'", "id = '1.9'", "amount = '10.5'", "amount > '1e-8'",
    "qty = st.code", "ok = 'true'", "ok = 'yes'", "d = '2024-02-29'", "d = DATE '2024-02-29'",
    "ts > '2024-03-01 10:30'", "ts = '2024-03-02'", "d < ts", "d = ts",
    # time
    "ts >= TIMESTAMP '2024-03-01 11:00:00'", "ts > current_timestamp() - INTERVAL '1' DAY",
    "current_timestamp() - ts < INTERVAL 12 HOURS", "ts + INTERVAL '30' MINUTE = TIMESTAMP '2024-03-01 10:30:00'",
    "ts - INTERVAL '1.5' SECOND < TIMESTAMP '1970-01-01 00:00:00'",
]


@pytest.fixture(scope="session")
def sqleval_bin(go_programs) -> Path:
    return go_programs("sqleval")


def medallion_answers(sqleval_bin: Path) -> dict[str, list]:
    spec = {"schema": SCHEMA, "rows": ROWS, "exprs": EXPRS, "now": NOW}
    proc = subprocess.run([str(sqleval_bin)], input=json.dumps(spec), capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    answers = {}
    for expr, res, err in zip(EXPRS, out["results"], out["errors"]):
        assert err is None, f"medallion rejects {expr!r}: {err}"
        answers[expr] = res
    return answers


def spark_value(col: str, v):
    if v is None:
        return None
    if col == "amount" and isinstance(v, str):
        return float(v.replace("Infinity", "inf"))
    if col == "amount":
        return float(v)
    if col == "price":
        return Decimal(v)
    if col == "ts":
        return dt.datetime.fromisoformat(v.replace("Z", "+00:00")).replace(tzinfo=None)
    if col == "d":
        return dt.date.fromisoformat(v)
    if col == "st":
        return (v.get("code"),)
    return v


def spark_answers(spark) -> dict[str, list]:
    cols = [f["name"] for f in SCHEMA["fields"]]
    data = [tuple(spark_value(c, r.get(c)) for c in cols) + (i,) for i, r in enumerate(ROWS)]
    df = spark.createDataFrame(data, SPARK_DDL)
    exprs = [e.replace("current_timestamp()", NOW_SQL) for e in EXPRS]
    rows = df.selectExpr("_i", *[f"({e}) AS r{k}" for k, e in enumerate(exprs)]).orderBy("_i").collect()
    return {e: [row[f"r{k}"] for row in rows] for k, e in enumerate(EXPRS)}


def test_expectations_match_spark_sql(spark, sqleval_bin):
    ours = medallion_answers(sqleval_bin)
    theirs = spark_answers(spark)
    assert len(theirs[EXPRS[0]]) == len(ROWS)
    diffs = [f"{e!r}: medallion {ours[e]}, Spark {theirs[e]}" for e in EXPRS if ours[e] != theirs[e]]
    assert not diffs, "answers differ from Spark SQL:\n" + "\n".join(diffs)


def test_sqleval_rejects_what_does_not_parse(sqleval_bin):
    spec = {"schema": SCHEMA, "rows": ROWS[:1], "exprs": ["amount >", "nosuch = 1"], "now": NOW}
    out = json.loads(subprocess.run([str(sqleval_bin)], input=json.dumps(spec), capture_output=True,
                                    text=True, check=True).stdout)
    assert out["results"] == [None, None]
    assert "position 9" in out["errors"][0] and "nosuch does not exist" in out["errors"][1]
