"""Timestamp column formats (issue 36): medallion's parser of a timestamp column's values
(bronze.TimeParser, through tests/interop/cmd/tsparse) against Spark on the same randomized
values, valid and invalid: `format:` against to_timestamp(v, pattern), `unit:` against
timestamp_seconds/timestamp_millis/timestamp_micros of the JSON number as Spark's JSON reader
types it. Accept/reject and the microseconds must match; Spark is the oracle.

Spark runs with the session time zone UTC and spark.sql.legacy.timeParserPolicy=CORRECTED (the
Spark 3 parser alone: the default, EXCEPTION, raises an upgrade error instead of answering for
values the Spark 2 parser would have read differently). Known differences are kept out of the
generated values and listed in docs/config.md: years outside 0001-9999, and epoch seconds with
more than 6 fractional digits (Spark rounds them half-up into a decimal, medallion truncates).
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest


MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
PATTERNS = [
    "yyyy-MM-dd HH:mm:ss",
    "dd/MM/yyyy HH:mm:ss.SSS",
    "yyyy-MM-dd'T'HH:mm:ssXXX",
    "yyyy-MM-dd'T'HH:mm:ss.SSSSSSZ",
    "yyyy-MM-dd HH:mm:ss.SSSSSSSSSX",
    "yyyyMMddHHmmss",
    "M/d/yy h:mm a",
    "d MMM yyyy HH:mm:ss xx",
    "yyyy-MM-dd HH:mm:ss xxx",
]


def offset_text(rng: random.Random, letter: str, n: int) -> str:
    """An offset: mostly in the form of the pattern's letters, else in one of the other forms
    data has (Z, z, +HH:MM, +HHMM, +HH) or odd ones."""
    h, m = rng.randint(0, 14), rng.choice([0, 0, 30, 45])
    sign = rng.choice("+-")
    if rng.random() < 0.7:
        if letter in "Xx" and n == 1:
            return f"{sign}{h:02d}" + (f"{m:02d}" if m else "") if h or letter == "x" else "Z"
        if letter in "Xx" and n == 3:
            return f"{sign}{h:02d}:{m:02d}" if h or letter == "x" else "Z"
        return f"{sign}{h:02d}{m:02d}"
    return rng.choice([
        "Z", "z", f"{sign}{h:02d}:{m:02d}", f"{sign}{h:02d}{m:02d}", f"{sign}{h:02d}",
        "+00:00", "+0000", "+00", f"{sign}{h}:{m:02d}", f"{sign}19:00", f"{sign}{h:02d}:{m:02d}:00",
    ])


def render(pattern: str, rng: random.Random) -> str:
    """A value for pattern: mostly well formed, with random field widths and ranges at the edges."""
    y = rng.choice([rng.randint(1971, 2037), rng.randint(1, 9999), 2024, 2000, 1900])
    edge = rng.random() < 0.15  # values at and beyond the fields' ends
    mo, d = rng.randint(1, 12), rng.choice([29, 30, 31]) if edge else rng.randint(1, 28)
    hh, mi, ss = rng.choice([23, 24]) if edge else rng.randint(0, 23), rng.randint(0, 59), rng.choice([59, 60]) if edge else rng.randint(0, 59)
    wide = rng.random() < 0.9  # zero-padded, as the pattern asks, or not

    def two(v: int) -> str:
        return f"{v:02d}" if wide or rng.random() < 0.5 else str(v)

    nfrac = max(1, pattern.count("S"))
    frac = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, nfrac + 1 if edge else nfrac)))
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        n = 1
        while i + n < len(pattern) and pattern[i + n] == c:
            n += 1
        if c == "'":
            end = pattern.index("'", i + 1)
            out.append(pattern[i + 1:end])
            i = end + 1
            continue
        tok = {
            "y": lambda: f"{y % 100:02d}" if n == 2 else f"{y:04d}" if wide else str(y),
            "M": lambda: MONTHS[mo - 1] if n == 3 else (two(mo) if n == 2 else str(mo)),
            "d": lambda: two(d) if n == 2 else str(d),
            "H": lambda: two(hh),
            "h": lambda: str(rng.choice([0, 13]) if edge else (hh % 12) or 12),
            "m": lambda: two(mi),
            "s": lambda: two(ss),
            "S": lambda: frac,
            "a": lambda: rng.choice(["AM", "PM", "am", "pm", "XM" if edge else "PM"]),
            "X": lambda: offset_text(rng, c, n),
            "x": lambda: offset_text(rng, c, n),
            "Z": lambda: offset_text(rng, c, n),
        }.get(c)
        out.append(tok() if tok else c * n)
        i += n
    s = "".join(out)
    r = rng.random()
    if r < 0.05 and s:
        k = rng.randrange(len(s))
        s = s[:k] + s[k + 1:]  # a character lost
    elif r < 0.08:
        s = s + rng.choice([" ", "0", "Z"])  # trailing text
    elif r < 0.1:
        s = " " + s
    return s


def epoch_values(unit: str, rng: random.Random) -> list[str]:
    """JSON numbers: integers across the range and beyond it; for seconds, fractions (at most 6
    digits) and exponents."""
    out = ["0", "-1", "1", "1714565220", "-62135596800", "253402300799", "253402300800",
           "9223372036854775807", "-9223372036854775808"]
    scale = {"s": 1, "ms": 10**3, "us": 10**6}[unit]
    for _ in range(60):
        v = rng.randint(-62135596800 * scale, 253402300799 * scale)
        out.append(str(v))
        if unit == "s":
            out.append(f"{rng.uniform(-2e10, 2e10):.{rng.randint(1, 6)}f}")
            out.append(f"{rng.randint(1, 9)}.{rng.randint(0, 999)}e{rng.randint(0, 10)}")
    return out


@pytest.fixture(scope="session")
def tsparse_bin(go_programs) -> Path:
    return go_programs("tsparse")


def medallion(tsparse_bin: Path, cases: list[dict]) -> list[dict]:
    proc = subprocess.run([str(tsparse_bin)], input=json.dumps(cases), capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_patterns_match_spark_to_timestamp(spark, tsparse_bin):
    from pyspark.sql import functions as F

    rng = random.Random(36)
    cases = [{"format": p, "values": [render(p, rng) for _ in range(150)]} for p in PATTERNS]
    ours = medallion(tsparse_bin, cases)
    spark.conf.set("spark.sql.legacy.timeParserPolicy", "CORRECTED")
    try:
        rows = [(k, i, v) for k, c in enumerate(cases) for i, v in enumerate(c["values"])]
        df = spark.createDataFrame(rows, "k INT, i INT, v STRING")
        parsed = None
        for k, c in enumerate(cases):
            part = df.where(F.col("k") == k).select(
                "k", "i", F.unix_micros(F.to_timestamp("v", c["format"])).alias("us"))
            parsed = part if parsed is None else parsed.unionByName(part)
        theirs = {(r.k, r.i): r.us for r in parsed.collect()}
    finally:
        spark.conf.unset("spark.sql.legacy.timeParserPolicy")
    diffs, accepted = [], 0
    for k, c in enumerate(cases):
        assert "error" not in ours[k], (c["format"], ours[k])
        for i, v in enumerate(c["values"]):
            want, got = theirs[(k, i)], ours[k]["micros"][i]
            accepted += want is not None
            if want != got:
                diffs.append(f"{c['format']!r} on {v!r}: spark {want}, medallion {got}")
    assert not diffs, f"{len(diffs)} differences:\n" + "\n".join(diffs[:40])
    # The generator must exercise both sides: most values valid, a good share not.
    total = sum(len(c["values"]) for c in cases)
    assert total // 3 < accepted < total * 9 // 10, (accepted, total)


@pytest.mark.parametrize("unit", ["s", "ms", "us"])
def test_units_match_spark_timestamp_functions(spark, tsparse_bin, unit):
    from pyspark.sql import functions as F

    values = epoch_values(unit, random.Random(f"36-{unit}"))
    ours = medallion(tsparse_bin, [{"unit": unit, "values": values}])[0]["micros"]
    # As a Spark job reads them: the JSON number typed by from_json (long for ms and us, a
    # decimal for seconds, exact to the microsecond), then Spark's conversion. Spark raises an
    # ArithmeticException where the microseconds overflow a long: such a value would fail the
    # job, so it is left out of Spark's query and counts as rejected (medallion rejects it).
    typ = "DECIMAL(38,6)" if unit == "s" else "BIGINT"
    fn = {"s": "timestamp_seconds", "ms": "timestamp_millis", "us": "timestamp_micros"}[unit]
    scale = {"s": 10**6, "ms": 10**3, "us": 1}[unit]
    df = spark.createDataFrame([(i, '{"v": %s}' % v) for i, v in enumerate(values)], "i INT, j STRING")
    typed = df.select("i", F.from_json("j", f"v {typ}").getField("v").alias("v"))
    fits = [i for i, r in enumerate(sorted(typed.collect(), key=lambda r: r.i))
            if r.v is not None and -2**63 <= int(r.v * scale) < 2**63]
    theirs = {r.i: r.us for r in typed.where(F.col("i").isin(fits))
              .select("i", F.expr(f"unix_micros({fn}(v))").alias("us")).collect()}
    diffs = []
    for i, v in enumerate(values):
        want = theirs.get(i)
        # The timestamp range of medallion: years 0001-9999.
        if want is not None and not (-62135596800 * 10**6 <= want <= 253402300799999999):
            want = None
        if want != ours[i]:
            diffs.append(f"{unit} {v!r}: spark {want}, medallion {ours[i]}")
    assert not diffs, "\n".join(diffs[:40])
