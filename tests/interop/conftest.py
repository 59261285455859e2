"""Fixtures of the interop suite: the engines, the medallion binary, and the scenario tables.

Run it with `scripts/interop.sh run`, which installs the pinned engines and sets the environment
(MEDALLION_INTEROP_JARS and MEDALLION_INTEROP_S3_JARS, PYSPARK_PYTHON). A missing engine skips its tests locally and FAILS them
under CI=true. Tests marked `needs_medallion` (they need medallion's Delta reader/writer) are
deselected unless `--with-medallion` is given or MEDALLION_INTEROP_WITH_MEDALLION=1.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from interop_spark_cluster import JVM_FLAGS, local_fs

# PySpark turns timestamps into naive datetimes in the process time zone; pin it to UTC before
# any engine is imported so every reader sees the same instants.
os.environ["TZ"] = "UTC"
time.tzset()

REPO_ROOT = Path(__file__).resolve().parents[2]
IN_CI = os.environ.get("CI", "").lower() == "true"


def pytest_addoption(parser):
    parser.addoption("--with-medallion", action="store_true", default=False,
                     help="also run tests marked needs_medallion (medallion's own Delta reader "
                          "and writer); env MEDALLION_INTEROP_WITH_MEDALLION=1 does the same")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "needs_medallion: needs medallion's Delta reader/writer; deselected by "
                   "default, enabled with --with-medallion")


# The longest modules first (wall time under `make test`, slowest first). With two xdist workers
# (`--dist loadfile --no-loadscope-reorder`, Makefile) each worker's first modules are the first
# in collection order, so the two longest start at once instead of one of them running alone at
# the end; the rest follow by length and fill in behind. Order inside a module is unchanged.
SLOW_MODULES_FIRST = [
    "test_export_sources.py", "test_export_promise.py", "test_engines.py", "test_we_write.py",
    "test_join_differential.py", "test_export_random.py", "test_change_feed.py", "test_medallion_writes.py",
    "test_stream_parity.py", "test_reader_differential.py", "test_medallion_reads.py",
    "test_minio.py", "test_writer_features.py", "test_join_invariant.py",
]


def slow_first(items) -> None:
    """Sorts items (stably) so that the modules of SLOW_MODULES_FIRST come first, in that order."""
    rank = {name: i for i, name in enumerate(SLOW_MODULES_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def pytest_collection_modifyitems(config, items):
    slow_first(items)
    if config.getoption("--with-medallion") or os.environ.get("MEDALLION_INTEROP_WITH_MEDALLION") == "1":
        return
    keep, drop = [], []
    for item in items:
        (drop if item.get_closest_marker("needs_medallion") else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def unavailable(what: str, why: str):
    """Fails under CI (a missing dependency is a broken CI, not a pass) and skips elsewhere."""
    msg = f"{what} unavailable: {why} (run scripts/interop.sh setup, then scripts/interop.sh run)"
    if IN_CI:
        pytest.fail(msg, pytrace=False)
    pytest.skip(msg)


def require_module(name: str):
    try:
        return importlib.import_module(name)
    except ImportError as err:
        unavailable(f"python module {name}", str(err))


@pytest.fixture(scope="session")
def deltalake():
    require_module("pyarrow")
    return require_module("deltalake")


@pytest.fixture(scope="session")
def polars():
    require_module("deltalake")
    return require_module("polars")


@pytest.fixture(scope="session")
def duckdb():
    """One DuckDB connection for the session, with the pinned delta and httpfs extensions loaded
    from their packages' files (interop_engines.duckdb_connect): reads tables on files, and on
    MinIO once `duckdb_s3` made its secret."""
    require_module("pyarrow")
    require_module("duckdb")
    from interop_engines import duckdb_connect

    try:
        con = duckdb_connect()
    except (ImportError, FileNotFoundError) as err:  # an extension package missing or broken
        unavailable("DuckDB's delta and httpfs extensions", str(err))
    yield con
    con.close()


@pytest.fixture(scope="session")
def duckdb_s3(duckdb, s3):
    """The session's DuckDB with an S3 secret for the MinIO of `s3` (httpfs): delta_scan reads
    s3://<bucket>/... tables."""
    from interop_engines import duckdb_s3_secret_sql

    duckdb.execute(duckdb_s3_secret_sql(s3["env"]))
    return duckdb


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """One local Spark with Delta for the whole session, tuned to start fast on 2 cores."""
    require_module("delta")
    pyspark_sql = require_module("pyspark.sql")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        unavailable("java", "not on PATH and JAVA_HOME unset")
    jars = os.environ.get("MEDALLION_INTEROP_JARS", "")
    if not jars or not all(Path(j).is_file() for j in jars.split(",")):
        unavailable("Delta jars for Spark", f"MEDALLION_INTEROP_JARS={jars!r}")
    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    # S3A (for spark_s3) only costs a class-path entry until a test touches s3a://: no S3 setting
    # is made here, so the tests on files start exactly as before.
    fs_jar, fs_conf = local_fs()  # java.nio, not a process, for chmod and readlink
    class_path = ":".join(s3a_jars() + ([fs_jar] if fs_jar else []))
    builder = (
        pyspark_sql.SparkSession.builder.master("local[2]").appName("medallion-interop")
        .config("spark.jars", jars)
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog",
                "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.sql.catalogImplementation", "in-memory")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.memory", "2g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        # Delta rebuilds a snapshot (a Spark job over the log) with 50 partitions by default:
        # most of a small test's time. One partition: a test's log is a few files. 2 -> 1 took
        # test_export_promise's file tests from 46.1 to 42.4 CPU s (same run).
        .config("spark.databricks.delta.snapshotPartitions", "1")
        # Interpreted, not generated, code for each plan: the tests' data is tiny, so compiling
        # each query's generated Java (Janino, then the JIT) costs more than it saves. It changes
        # how Spark evaluates, not what: join differential 154 -> 134 CPU s, engines + we_write
        # + stream_parity 144 -> 133, export_promise's file tests 52.8 -> 46.7 (same runs).
        .config("spark.sql.codegen.wholeStage", "false")
        .config("spark.sql.session.timeZone", "UTC")
        # A running streaming query that found nothing to do looks at its sources again after
        # this delay (default 10 ms). test_join_differential keeps 25 queries open at once,
        # each idle one listing its directory up to 100 times a second: 222 -> 182 and
        # 180 -> 158 CPU s for that module (two runs). Only when an idle query looks again
        # changes, not what a batch holds (a query that ran a batch, or owes a no-data batch,
        # goes on without the delay).
        .config("spark.sql.streaming.pollingDelay", "250ms")
        # C1 only: on 2 shared cores the C2 compiler threads cost more than they save in a short
        # run (3 Spark scenarios: 253 s with C2, 70 s without, measured on this machine); the
        # serial collector, and a code cache C1 does not fill (interop_spark_cluster.JVM_FLAGS).
        .config("spark.driver.extraJavaOptions", JVM_FLAGS)
    )
    if class_path:
        builder = builder.config("spark.driver.extraClassPath", class_path)
    for key, value in fs_conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def s3(deltalake) -> dict[str, str]:
    """The MinIO started by scripts/interop.sh run (scripts/minio.sh), with a fresh bucket.
    Returns the environment for medallion (AWS_* variables) plus "bucket" and delta-rs'
    storage options under "options"."""
    endpoint = os.environ.get("MEDALLION_TEST_S3_ENDPOINT")
    if not endpoint:
        unavailable("MinIO", "MEDALLION_TEST_S3_ENDPOINT unset (scripts/interop.sh run starts it)")
    from pyarrow import fs

    region = os.environ.get("AWS_REGION", "us-east-1")
    key, secret = os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]
    scheme, _, host = endpoint.partition("://")
    bucket = f"interop-{os.getpid()}"
    fs.S3FileSystem(access_key=key, secret_key=secret, region=region, scheme=scheme,
                    endpoint_override=host, allow_bucket_creation=True).create_dir(bucket)
    return {
        "bucket": bucket,
        "env": {"AWS_ENDPOINT_URL": endpoint, "AWS_REGION": region, "AWS_ACCESS_KEY_ID": key,
                "AWS_SECRET_ACCESS_KEY": secret},
        "options": {"AWS_ENDPOINT_URL": endpoint, "AWS_REGION": region,
                    "AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret,
                    "AWS_ALLOW_HTTP": "true", "AWS_S3_ADDRESSING_STYLE": "path",
                    # Commits with If-None-Match, as medallion does: no lock table needed.
                    "conditional_put": "etag"},
    }


def s3a_jars() -> list[str]:
    """hadoop-aws and the AWS SDK bundle (MEDALLION_INTEROP_S3_JARS), or [] when any is missing."""
    jars = [j for j in os.environ.get("MEDALLION_INTEROP_S3_JARS", "").split(":") if j]
    return jars if jars and all(Path(j).is_file() for j in jars) else []


def s3a_settings(s3) -> dict[str, str]:
    """Hadoop settings that point S3A at the MinIO of the `s3` fixture."""
    env = s3["env"]
    endpoint = env["AWS_ENDPOINT_URL"]
    return {
        # Hadoop's service discovery finds it too while hadoop-aws is on the JVM's class path;
        # named so that s3a:// does not depend on how the jar was handed to Spark.
        "fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "fs.s3a.endpoint": endpoint,
        "fs.s3a.endpoint.region": env["AWS_REGION"],
        # MinIO serves buckets by path, not as virtual hosts.
        "fs.s3a.path.style.access": "true",
        "fs.s3a.connection.ssl.enabled": str(endpoint.startswith("https://")).lower(),
        "fs.s3a.access.key": env["AWS_ACCESS_KEY_ID"],
        "fs.s3a.secret.key": env["AWS_SECRET_ACCESS_KEY"],
        # The keys above and nothing else: the default provider chain would end by asking the
        # EC2 instance metadata address, which is no host of this test.
        "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        # A local server answers at once or is broken: fail in seconds, not after S3A's default
        # of 20 attempts with back-off.
        "fs.s3a.attempts.maximum": "2",
        "fs.s3a.retry.limit": "2",
        "fs.s3a.connection.establish.timeout": "5000",
    }


@pytest.fixture(scope="session")
def spark_s3(spark, s3):
    """The session's Spark with S3A pointed at the MinIO of `s3`: it reads and writes Delta tables
    at s3a://<bucket>/... (s3a_url). Set on the running session's Hadoop configuration, which
    every later Delta log and Parquet access copies. Delta's default LogStore for s3a is
    S3SingleDriverLogStore: safe here, where this one driver is Spark's only writer to a table."""
    if not s3a_jars():
        unavailable("S3A jars for Spark",
                    f"MEDALLION_INTEROP_S3_JARS={os.environ.get('MEDALLION_INTEROP_S3_JARS', '')!r}")
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in s3a_settings(s3).items():
        hadoop.set(key, value)
    return spark


def s3a_url(s3, name: str) -> str:
    """The Spark (S3A) URL of a table; s3://<bucket>/<name> is the same table for the others."""
    return f"s3a://{s3['bucket']}/{name}"


def minio_fs(s3):
    """A pyarrow S3 client of the `s3` fixture's MinIO, for looking at objects without a Delta
    engine in between."""
    from pyarrow import fs

    env = s3["env"]
    scheme, _, host = env["AWS_ENDPOINT_URL"].partition("://")
    return fs.S3FileSystem(access_key=env["AWS_ACCESS_KEY_ID"],
                           secret_key=env["AWS_SECRET_ACCESS_KEY"], region=env["AWS_REGION"],
                           scheme=scheme, endpoint_override=host)


def download_table(s3, url: str, dest: Path) -> Path:
    """Copies every object of the table at s3://bucket/... into dest (made here) and returns it,
    so that the raw `_delta_log` checks of interop_scenarios run on tables on MinIO too."""
    from pyarrow import fs

    fs.copy_files(url.removeprefix("s3://"), str(dest), source_filesystem=minio_fs(s3),
                  destination_filesystem=fs.LocalFileSystem())
    return dest


@pytest.fixture(scope="session")
def medallion_bin(tmp_path_factory) -> Path:
    """Builds ./cmd/medallion once per session from the repo root, or uses $MEDALLION_BIN (a
    binary the caller already built, e.g. by `make build`)."""
    prebuilt = os.environ.get("MEDALLION_BIN")
    if prebuilt:
        assert os.access(prebuilt, os.X_OK), f"MEDALLION_BIN={prebuilt} is not an executable"
        return Path(prebuilt)
    if shutil.which("go") is None:
        unavailable("go", "not on PATH")
    out = tmp_path_factory.mktemp("bin") / "medallion"
    proc = subprocess.run(["go", "build", "-o", str(out), "./cmd/medallion"], cwd=REPO_ROOT,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"go build ./cmd/medallion failed:\n{proc.stderr}"
    return out


@pytest.fixture(scope="session")
def demo_lake(tmp_path_factory, medallion_bin) -> Path:
    """`medallion demo --lake <tmp>/demo/lake`, once per session for every test that only reads
    its tables (the event log, the demo tables read by each engine, the README's examples, run
    in the directory holding lake/). 15,000 events: every step cmd/medallion's TestDemo checks at
    30,000 is still reached, with the same counts on every run (the demo's generator is
    seeded): 3 late rows quarantined and merged into 3 gold windows, 150 late join inputs, 33
    rejects, 135 update pre/post image pairs in the joined table's change feed (14, 258, 51 and
    233 at 30,000). Half the rows that each engine reads and Python canonicalises (the demo's
    default is 200,000); the CPU it saved is in docs/testing.md."""
    from interop_engines import run_medallion

    lake = tmp_path_factory.mktemp("demo") / "lake"
    run_medallion(medallion_bin, "demo", "--lake", str(lake), "--events", "15000", timeout=600)
    return lake


@pytest.fixture(scope="session")
def go_programs(tmp_path_factory):
    """go_programs(name) -> the test program tests/interop/cmd/<name>, built once per session
    (in tests/, a Go module of its own that replaces medallion with this checkout). With
    MEDALLION_INTEROP_BIN_DIR set (`make interop` builds every program there in one `go build`
    before the workers start, instead of one build per program and worker) the program is
    taken from there."""
    prebuilt = os.environ.get("MEDALLION_INTEROP_BIN_DIR")
    built: dict[str, Path] = {}

    def get(name: str) -> Path:
        if prebuilt:
            path = Path(prebuilt) / name
            assert os.access(path, os.X_OK), f"MEDALLION_INTEROP_BIN_DIR={prebuilt} has no program {name}"
            return path
        if name not in built:
            if shutil.which("go") is None:
                unavailable("go", "not on PATH")
            out = tmp_path_factory.mktemp("bin") / name
            proc = subprocess.run(["go", "build", "-o", str(out), f"./interop/cmd/{name}"],
                                  cwd=REPO_ROOT / "tests", capture_output=True, text=True, check=False)
            assert proc.returncode == 0, f"go build ./interop/cmd/{name} (in tests/) failed:\n{proc.stderr}"
            built[name] = out
        return built[name]

    return get


@pytest.fixture(scope="session")
def mkdelta_bin(go_programs) -> Path:
    """tests/interop/cmd/mkdelta, medallion's writer as a test program (see interop_mkdelta)."""
    return go_programs("mkdelta")


@pytest.fixture(scope="session")
def pqread_bin(go_programs) -> Path:
    """tests/interop/cmd/pqread, every read path of medallion's table package over one Parquet
    file (see interop_readerdiff); $MEDALLION_PQREAD_BIN uses a binary built beforehand instead
    (e.g. from an older checkout, to see the test fail there)."""
    prebuilt = os.environ.get("MEDALLION_PQREAD_BIN")
    if prebuilt:
        assert os.access(prebuilt, os.X_OK), f"MEDALLION_PQREAD_BIN={prebuilt} is not an executable"
        return Path(prebuilt)
    return go_programs("pqread")


@pytest.fixture(scope="session")
def written_on_minio(mkdelta_bin, s3):
    """written_on_minio(name) -> the s3:// URL of that interop_mkdelta.WRITTEN table, written by
    medallion on MinIO once per session and read by every engine's test of it."""
    from interop_mkdelta import WRITTEN, MkDelta

    built: dict[str, str | BaseException] = {}

    def get(name: str) -> str:
        if name not in built:
            url = f"s3://{s3['bucket']}/we-write/{name}"
            try:
                WRITTEN[name].build(MkDelta(mkdelta_bin, s3["env"]), url)
                built[name] = url
            except Exception as err:  # noqa: BLE001 - re-raised for every test of the table
                built[name] = err
        got = built[name]
        if isinstance(got, BaseException):
            raise AssertionError(f"mkdelta could not write {name} on MinIO: {got}") from got
        return got

    return get


class TableCache:
    """Builds each scenario table once per session, on first use, into its own directory. A
    failed build is remembered, so every test of that scenario reports the same error instead of
    building over a half-written table."""

    def __init__(self, root: Path):
        self.root = root
        self.built: dict[str, Path | BaseException] = {}

    def path(self, name: str, request) -> Path:
        from interop_scenarios import SCENARIOS

        scenario = SCENARIOS[name]
        if name not in self.built:
            engine = request.getfixturevalue("spark" if scenario.writer == "spark" else "deltalake")
            path = self.root / name
            try:
                scenario.build(engine if scenario.writer == "spark" else None, path)
                self.built[name] = path
            except Exception as err:  # noqa: BLE001 - re-raised for every user of the table
                self.built[name] = err
        got = self.built[name]
        if isinstance(got, BaseException):
            raise AssertionError(f"building scenario {name} with {scenario.writer} failed: "
                                 f"{type(got).__name__}: {got}") from got
        return got


@pytest.fixture(scope="session")
def table_cache(tmp_path_factory) -> TableCache:
    return TableCache(tmp_path_factory.mktemp("tables"))


@pytest.fixture
def scenario_table(table_cache, request):
    """scenario_table(name) -> the path of that scenario's table, built once per session."""
    return lambda name: table_cache.path(name, request)


@pytest.fixture
def table_dir(tmp_path) -> Path:
    """A fresh, not yet existing table directory for one test."""
    return tmp_path / "table"
