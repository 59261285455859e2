"""The canonical row form itself: it must accept the DESIGN.md section 8 JSON contract, turn engine
values into it, and reject anything else with an error that names the column. No engine needed."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from interop_rows import (RowFormatError, assert_same_rows, canonical_rows, parse_jsonl,
                          parse_type, schema_columns, timestamp_from_micros, type_string)

UTC = dt.timezone.utc


@pytest.mark.parametrize("text,tree", [
    ("long", "long"),
    ("decimal(38, 18)", ("decimal", 38, 18)),
    ("array<map<string,decimal(5,1)>>", ("array", ("map", "string", ("decimal", 5, 1)))),
    ("struct<a:integer,b:struct<c:timestamp_ntz>>",
     ("struct", [("a", "integer"), ("b", ("struct", [("c", "timestamp_ntz")]))])),
])
def test_parse_type(text, tree):
    assert parse_type(text) == tree


@pytest.mark.parametrize("text", ["int", "array<long", "struct<:long>", "map<string>", "long>"])
def test_parse_type_rejects(text):
    with pytest.raises(ValueError):
        parse_type(text)


def test_schema_columns_from_delta_json():
    schema = ('{"type":"struct","fields":['
              '{"name":"a","type":"decimal(10,2)","nullable":true,"metadata":{}},'
              '{"name":"s","type":{"type":"struct","fields":[{"name":"x","type":"long",'
              '"nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},'
              '{"name":"m","type":{"type":"map","keyType":"string","valueType":{"type":"array",'
              '"elementType":"date","containsNull":true},"valueContainsNull":true},'
              '"nullable":true,"metadata":{}}]}')
    assert schema_columns(schema) == {
        "a": "decimal(10,2)", "s": "struct<x:long>", "m": "map<string,array<date>>"}
    assert type_string("decimal(5, 0)") == "decimal(5,0)"


@pytest.mark.parametrize("micros,text", [
    (0, "1970-01-01T00:00:00Z"),
    (1, "1970-01-01T00:00:00.000001Z"),
    (-1, "1969-12-31T23:59:59.999999Z"),
    (1_000, "1970-01-01T00:00:00.001000Z"),
    (1633075760000000, "2021-10-01T08:09:20Z"),
    (-62135596800000000, "0001-01-01T00:00:00Z"),
])
def test_timestamp_form(micros, text):
    assert timestamp_from_micros(micros) == text


COLUMNS = {"ts": "timestamp", "ntz": "timestamp_ntz", "f": "float", "dec": "decimal(10,2)",
           "bin": "binary", "day": "date", "m": "map<string,long>", "st": "struct<a:integer>"}


def test_engine_values_and_contract_json_agree():
    engine = [{"ts": dt.datetime(2021, 9, 8, 13, 11, 11, 500, tzinfo=dt.timezone(dt.timedelta(hours=2))),
               "ntz": dt.datetime(2021, 9, 8, 11, 11, 11), "f": 1.100000023841858,
               "dec": Decimal("5.00"), "bin": b"\x00\xff", "day": dt.date(2024, 2, 29),
               "m": [("b", 2), ("a", None)], "st": {"a": 7}}]
    jsonl = ('{"ts":"2021-09-08T11:11:11.000500Z","ntz":"2021-09-08T11:11:11","f":1.1,'
             '"dec":5,"bin":"AP8=","day":"2024-02-29","m":{"a":null,"b":2},"st":{"a":7}}\n')
    got = canonical_rows(parse_jsonl(jsonl, "scan"), COLUMNS)
    assert_same_rows(got, canonical_rows(engine, COLUMNS), "contract vs engine")


@pytest.mark.parametrize("column,value,message", [
    ("ts", "2021-09-08T11:11:11+00:00", "ts"),          # offset instead of Z
    ("ts", "2021-09-08T11:11:11.000000Z", "zero fraction"),
    ("ts", "2021-09-08T11:11:11.5Z", "ts"),             # fraction must have 6 digits
    ("ts", "2021-09-08 11:11:11", "ts"),
    ("ntz", "2021-09-08T11:11:11Z", "ntz"),             # ntz carries no zone
    ("f", "1.1", "float expected"),
    ("dec", 1.05, "exact"),                             # a float has lost the decimal
    ("dec", Decimal("1.005"), "fraction digits"),
    ("bin", "not base64!", "base64"),
    ("day", "2024-2-29", "YYYY-MM-DD"),
    ("st", [7], "struct expected"),
])
def test_contract_violations_are_named(column, value, message):
    row = {c: None for c in COLUMNS}
    row[column] = value
    with pytest.raises(RowFormatError, match=message) as err:
        canonical_rows([row], COLUMNS)
    assert f"row 0.{column}" in str(err.value)


def test_int_types_are_checked():
    with pytest.raises(RowFormatError, match="out of range for byte"):
        canonical_rows([{"b": 128}], {"b": "byte"})
    with pytest.raises(RowFormatError, match="long expected"):
        canonical_rows([{"b": True}], {"b": "long"})


def test_missing_and_extra_columns():
    with pytest.raises(RowFormatError, match=r"missing \['b'\], unexpected \['c'\]"):
        canonical_rows([{"a": 1, "c": 2}], {"a": "long", "b": "long"})


def test_multiset_comparison_counts_duplicates():
    a = [{"x": 1}, {"x": 1}, {"x": 2}]
    assert_same_rows(a, [{"x": 2}, {"x": 1}, {"x": 1}], "order-insensitive")
    with pytest.raises(AssertionError, match="1 missing, 0 unexpected"):
        assert_same_rows(a[1:], a, "duplicate lost")


@pytest.mark.parametrize("text,where", [
    ('{"a":1}\n\n', "scan:2: empty line"),
    ('{"a":1}\n{"a":\n', "scan:2:6"),
    ('[1]\n', "scan:1: JSON object expected"),
])
def test_parse_jsonl_errors_name_the_line(text, where):
    with pytest.raises(RowFormatError, match=where):
        parse_jsonl(text, "scan")


def test_parse_jsonl_keeps_decimals_exact():
    rows = parse_jsonl('{"d":12345678901234567890.123456789012345678}\n', "scan")
    assert canonical_rows(rows, {"d": "decimal(38,18)"}) == [
        {"d": "12345678901234567890.123456789012345678"}]
