"""The delta-rs anchor of the benchmark (deltalake for Python, pyarrow and polars).

  ingest: each landing NDJSON file (a directory, or s3://bucket/prefix on MinIO), in key order, read with pyarrow's JSON reader (declared
          schema) and appended to a Delta table with deltalake.write_deltalake: one commit per
          file, as medallion's ingest with landing.max_files_per_trigger 1.
  replay: the replay-style batch recomputation: read the silver Delta table (medallion's) with
          polars, keep the last --since hours, aggregate the tumbling 5m and sliding 10m/5m windows
          per group and overwrite a Delta gold table per window with write_deltalake.

Prints a one-line JSON summary on stdout.
"""
import argparse
import datetime as dt
import json
import os
import sys

import pyarrow.fs as pafs


def filesystem(url):
    """A pyarrow filesystem and the path in it: local, or MinIO for s3:// URLs."""
    if not url.startswith("s3://"):
        return pafs.LocalFileSystem(), url
    endpoint = os.environ["MEDALLION_TEST_S3_ENDPOINT"]
    scheme, _, host = endpoint.partition("://")
    fs = pafs.S3FileSystem(endpoint_override=host, scheme=scheme,
                           access_key=os.environ["AWS_ACCESS_KEY_ID"],
                           secret_key=os.environ["AWS_SECRET_ACCESS_KEY"],
                           region=os.environ.get("AWS_REGION", "us-east-1"))
    return fs, url[len("s3://"):]


def ingest(a):
    import pyarrow as pa
    import pyarrow.json as pj
    from deltalake import write_deltalake

    schema = pa.schema([
        ("event_id", pa.string()),
        ("event_type", pa.string()),
        ("device_id", pa.string()),
        ("amount", pa.float64()),
        ("event_time", pa.timestamp("us", tz="UTC")),
    ])
    opts = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    fs, root = filesystem(a.landing)
    files = sorted(i.path for i in fs.get_file_info(pafs.FileSelector(root)) if i.path.endswith(".json"))
    if not files:
        sys.exit(f"deltars.py: no .json files in {a.landing}")
    rows = 0
    for f in files:
        with fs.open_input_stream(f) as stream:
            t = pj.read_json(stream, parse_options=opts)
        rows += t.num_rows
        write_deltalake(a.out, t, mode="append", storage_options=storage_options(a.out))
    print(json.dumps({"files": len(files), "rows": rows}))


def replay(a):
    import polars as pl

    silver = pl.read_delta(a.silver, storage_options=storage_options(a.silver))
    end = dt.datetime.now(dt.timezone.utc)
    since = end - dt.timedelta(hours=a.since_hours)
    ev = silver.lazy().select("event_time", a.group, "amount").filter(pl.col("event_time") >= since)
    start5 = pl.col("event_time").dt.truncate("5m")
    tumbling = ev.with_columns(start=start5)
    # A 10-minute window sliding by 5 minutes holds each event twice: in the window starting
    # at its 5-minute boundary and in the one starting 5 minutes earlier.
    sliding = pl.concat([
        ev.with_columns(start=start5),
        ev.with_columns(start=start5 - pl.duration(minutes=5)),
    ])
    # As medallion's replay: whole windows from the first boundary after --since, up to the
    # last window closed by the watermark (newest event time minus --watermark-minutes).
    watermark = silver["event_time"].max() - dt.timedelta(minutes=a.watermark_minutes)
    out = {}
    for name, frame, size in (("tumbling_5m", tumbling, 5), ("sliding_10m_5m", sliding, 10)):
        gold = (
            frame.filter((pl.col("start") >= since) & (pl.col("start") + pl.duration(minutes=size) <= watermark))
            .group_by("start", a.group)
            .agg(pl.len().alias("count"), pl.col("amount").sum().alias("total_amount"))
            .select(pl.struct(start=pl.col("start"), end=pl.col("start") + pl.duration(minutes=size)).alias("window"),
                    a.group, "count", "total_amount")
            .collect()
        )
        gold.write_delta(a.out.rstrip("/") + "/" + name, mode="overwrite", storage_options=storage_options(a.out))
        out[name] = {"rows": gold.height, "events": int(gold["count"].sum())}
    print(json.dumps({"silver_rows": silver.height, "gold": out}))


def storage_options(url):
    if not url.startswith("s3://"):
        return None
    return {
        "AWS_ENDPOINT_URL": os.environ["MEDALLION_TEST_S3_ENDPOINT"],
        "AWS_ACCESS_KEY_ID": os.environ["AWS_ACCESS_KEY_ID"],
        "AWS_SECRET_ACCESS_KEY": os.environ["AWS_SECRET_ACCESS_KEY"],
        "AWS_REGION": os.environ.get("AWS_REGION", "us-east-1"),
        "AWS_ALLOW_HTTP": "true",
        "AWS_S3_ALLOW_UNSAFE_RENAME": "true",
    }


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("ingest")
    i.add_argument("--landing", required=True)
    i.add_argument("--out", required=True)
    r = sub.add_parser("replay")
    r.add_argument("--silver", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--since-hours", type=float, default=24)
    r.add_argument("--group", default="device_id")
    r.add_argument("--watermark-minutes", type=float, default=10)
    a = ap.parse_args()
    {"ingest": ingest, "replay": replay}[a.cmd](a)


if __name__ == "__main__":
    main()
