"""Several-source pipelines on Spark (issue 34): the job `medallion export spark` prints for the
demo's own config and for examples/joins.yaml runs every source as its own query, on a Spark
standalone cluster (a master and two workers from pyspark's own spark-class, on loopback:
interop_spark_cluster) and on the session's local[2], and writes what medallion writes.

Two configs, each on one bronze that both engines read:

* demo: `medallion demo`'s pipeline.yaml (sources events and clicks, join events_clicks, gold
  events_5m), on the bronze `medallion demo` ingested, with max_files_per_trigger 6 instead of 1
  (3 micro-batches per source instead of 13: Spark's per-batch cost is the suite's time);
* joins: examples/joins.yaml (sources impressions and clicks with a drop expectation, join
  impressions_clicks, gold impressions_1h over impressions and clicks_per_ad_1h over the join),
  one landing object per micro-batch, written here: resends, a row without a required column, a
  click the expectation drops, one without its event time, and impressions delivered hours late
  (quarantined by impressions_1h).

medallion runs ingest, stream and merge-late; the exported job runs over the same bronze (its
tables under <lake>/spark or --root) and medallion's merge-late runs on Spark's tables (a config
whose lake is the job's root). Compared as row multisets, per source: silver; the rejects of the
validate stage; each exported gold's quarantine (but batch and query ids) and gold after
merge-late (doubles within a relative 1e-9, medallion's internal exact-sum columns left out);
per join (Spark's own stream-stream join in the job): the joined table after merge-late, the
join quarantine (late inputs with side and judging watermark) and the gold over the join.
Invariants A (bronze = silver + validation rejects + duplicates; each quarantine within silver),
E (gold = silver counted over the closed windows) and J (joined table after merge-late = the
batch join of Spark's silvers, plus the unmatched rows whose match window Spark's last
watermark closed) are checked on Spark's tables, with oracles computed here. Each join is named
when the job starts (what Spark does otherwise: its per-source watermarks restart with it).

The late-data jobs run on the cluster too (issue 34 items 2-3): the demo's merge-late job; for
the joins config, with a derived table impressions_2h (a 2-hour rollup of impressions_1h) added,
the derive job after the stream, then, once a range of impressions_1h is spoiled in both
engines' gold, the replay job (its merge-late with medallion's txn, the range with replaceWhere,
the derived table again), against medallion's run replay of the same range: the same windows
rewritten, the derived table equal to medallion's and holding invariant E, and medallion's
merge-late on Spark's tables afterwards finding everything up to date.

By default both configs run once, in one spark-submit on the cluster (one application: one
driver and executor start-up for the module, every job above in it), and no local Spark starts
here: the single-source job, its replay and derived pass run on local[2] in test_export_promise,
which is what the issue asks of local[2]. With
MEDALLION_LONG=1 both configs also run on the session's local[2], and both workloads are larger
(the joins one drawn from a fresh seed, printed; MEDALLION_SEED=N replays it).
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from conftest import REPO_ROOT, require_module, unavailable
from interop_engines import read_deltars, run_medallion
from interop_spark_cluster import Cluster
from test_export_promise import assert_multiset, internal_columns, load_job, parse_ts, window_ends

pytestmark = pytest.mark.needs_medallion

LONG = os.environ.get("MEDALLION_LONG") == "1"


class Scenario:
    """A config and what the tests know of it: each source's silver and dedup key, each
    exported gold's source, window and group keys."""

    def __init__(self, name, sources, golds, floats=(), not_exported=(), joins=None, join_golds=(),
                 derived=None, count_col="count"):
        self.name, self.sources, self.golds = name, sources, golds
        self.count_col = count_col  # each gold's count(*) column
        # derived: name -> (upstream gold, window size, group keys), kept on Spark by the derive,
        # merge-late and replay jobs.
        self.derived = derived or {}
        self.floats, self.not_exported = floats, not_exported
        # joins: name -> (left source, right source, lower, upper), left_outer; join_golds: the
        # aggregations over a join.
        self.joins, self.join_golds = joins or {}, join_golds
        self.lake = self.cfg = self.job = None
        self.replay_job = self.derive_job = None
        self.replay_range: tuple[str, str] | None = None
        self.watermarks: dict[str, int] = {}


def demo_scenario() -> Scenario:
    return Scenario("demo",
                    sources={"events": ("silver/events", "event_id", "event_time"),
                             "clicks": ("silver/clicks", "click_id", "click_time")},
                    golds={"events_5m": ("events", timedelta(minutes=5), ["event_type"])},
                    floats=("total_amount", "avg_amount", "avg_amount_sum"),
                    not_exported=("join events_clicks",),
                    joins={"events_clicks": ("events", "clicks", timedelta(0), timedelta(hours=1))})


def joins_scenario() -> Scenario:
    return Scenario("joins",
                    sources={"impressions": ("silver/impressions", "impression_id", "impression_time"),
                             "clicks": ("silver/clicks", "click_id", "click_time")},
                    golds={"impressions_1h": ("impressions", timedelta(hours=1), ["campaign"])},
                    not_exported=("join impressions_clicks",),
                    joins={"impressions_clicks": ("impressions", "clicks", timedelta(0), timedelta(hours=1))},
                    join_golds=("clicks_per_ad_1h",), count_col="impressions",
                    derived={"impressions_2h": ("impressions_1h", timedelta(hours=2), ["campaign"])})


# A derived table added to examples/joins.yaml (docs/derived-tables.md): a 2-hour rollup of
# impressions_1h, which the exported derive, merge-late and replay jobs keep on Spark.
JOINS_DERIVED = """  - name: impressions_2h
    source: impressions_1h
    table: gold/impressions_2h
    window: {type: tumbling, size: 2h}
    group_by: [campaign]
    aggregates: [{fn: sum, column: impressions, as: impressions}]
"""


def set_lake(text: str, lake: Path) -> str:
    text, n = re.subn(r"(?m)^lake: .*$", f"lake: {lake}", text)
    assert n == 1, "the config has no top-level lake: line"
    return text


def prepare_demo(tmp: Path, med, events: int) -> Scenario:
    sc = demo_scenario()
    seed = tmp / "demo-seed"
    med("demo", "--lake", str(seed), "--events", str(events))
    sc.lake = tmp / "demo"
    text, n = re.subn(r"max_files_per_trigger: 1\b", "max_files_per_trigger: 6",
                      set_lake((seed / "pipeline.yaml").read_text(), sc.lake))
    assert n == 4, "the demo config no longer sets max_files_per_trigger: 1 on both landings and streams"
    for bronze in ("bronze/events", "bronze/clicks"):
        shutil.copytree(seed / bronze, sc.lake / bronze)
    sc.cfg = tmp / "demo.yaml"
    sc.cfg.write_text(text)
    return sc


def joins_landing(lake: Path, objects: int, per_object: int, seed: int) -> None:
    """objects landing objects per source, one micro-batch each; per_object impressions over 2
    hours per object, a click up to an hour after about every third impression; from the third
    object on, resends, a row without its required ad_id, a click the expectation drops and one
    without its event time; from the fourth, impressions delivered hours late. The seed draws ads, campaigns and which rows are late."""
    import random

    rng = random.Random(seed)
    base = datetime(2024, 5, 1, tzinfo=timezone.utc)
    step = timedelta(hours=2) / per_object
    ts = lambda t: t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # noqa: E731
    for i in range(objects):
        imps, clicks = [], []
        for k in range(per_object):
            t = base + timedelta(hours=2 * i) + k * step
            ad = f"ad{rng.randrange(5)}"
            imps.append({"impression_id": f"imp-{i}-{k}", "ad_id": ad, "campaign": f"c{rng.randrange(3)}",
                         "impression_time": ts(t)})
            if rng.random() < 0.34:
                clicks.append({"click_id": f"clk-{i}-{k}", "ad_id": ad,
                               "click_time": ts(t + timedelta(minutes=rng.randrange(1, 59)))})
        if i >= 3:
            # Delivered late: in the first hour of the object three before, a window that ended
            # an hour before the judging watermark (the previous batch's, which Spark computed
            # from the batches before it: the latest time two objects before, minus 2h).
            for k in range(3):
                late = base + timedelta(hours=2 * (i - 3), minutes=rng.randrange(0, 55))
                imps.append({"impression_id": f"late-{i}-{k}", "ad_id": f"ad{k}", "campaign": "c0",
                             "impression_time": ts(late)})
        if i >= 2:
            imps.append(dict(imps[1]))  # a resend
            imps.append({"impression_id": f"noad-{i}", "campaign": "c1", "impression_time": ts(base)})
            if clicks:
                clicks.append(dict(clicks[0]))  # a resend
            clicks.append({"click_id": f"empty-ad-{i}", "ad_id": "", "click_time": ts(base + timedelta(hours=2 * i))})
            clicks.append({"click_id": f"no-time-{i}", "ad_id": "ad1"})
            # present but not a timestamp: bad_event_time, worded alike by both
            clicks.append({"click_id": f"bad-time-{i}", "ad_id": "ad1", "click_time": ["31/12/2024 10:00", "", "x" * 150][i % 3]})
        rng.shuffle(imps)
        for prefix, rows in (("impressions", imps), ("clicks", clicks)):
            d = lake / "landing" / prefix
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{i:03d}.json").write_text("".join(json.dumps(r) + "\n" for r in rows))


def prepare_joins(tmp: Path, med) -> Scenario:
    sc = joins_scenario()
    sc.lake = tmp / "joins"
    text = set_lake((REPO_ROOT / "examples" / "joins.yaml").read_text(), sc.lake)
    # One landing object per bronze commit (ingest) and per micro-batch (stream), both sources.
    for old, new, n in (("  trigger: available-now\n", "  trigger: available-now\n  max_files_per_trigger: 1\n", 1),
                        ("dedup: [click_id]}", "dedup: [click_id], max_files_per_trigger: 1}", 1),
                        ("format: json}", "format: json, max_files_per_trigger: 1}", 2)):
        assert text.count(old) == n, f"examples/joins.yaml no longer has {old!r} {n} times"
        text = text.replace(old, new)
    assert text.count("\njobs:") == 1, "examples/joins.yaml no longer ends its gold list at jobs:"
    text = text.replace("\njobs:", "\n" + JOINS_DERIVED + "\njobs:")
    sc.cfg = tmp / "joins.yaml"
    sc.cfg.write_text(text)
    # Small by default; MEDALLION_LONG=1: more and larger objects, a seed of the run's own
    # (MEDALLION_SEED replays one).
    seed = int(os.environ.get("MEDALLION_SEED") or (time.time_ns() % 1_000_000 if LONG else 7))
    print(f"export-sources joins workload: seed {seed}")
    joins_landing(sc.lake, 8 if LONG else 4, 200 if LONG else 30, seed)
    med("run", "ingest", "--config", str(sc.cfg))
    return sc


def run_medallion_side(sc: Scenario, med) -> None:
    out = json.loads(med("run", "stream", "--config", str(sc.cfg)))
    sc.watermarks = {s["source"]: s["watermarkMs"] for s in out["result"]["sources"]}
    med("run", "merge-late", "--config", str(sc.cfg))
    sc.job = sc.cfg.with_suffix(".py")
    sc.job.write_text(med("export", "spark", "--config", str(sc.cfg)))
    sc.late_job = sc.cfg.with_suffix(".merge_late.py")
    sc.late_job.write_text(med("export", "spark", "--config", str(sc.cfg), "--job", "merge-late"))
    if sc.derived:
        sc.replay_job = sc.cfg.with_suffix(".replay.py")
        sc.replay_job.write_text(med("export", "spark", "--config", str(sc.cfg), "--job", "replay"))
        sc.derive_job = sc.cfg.with_suffix(".derive.py")
        sc.derive_job.write_text(med("export", "spark", "--config", str(sc.cfg), "--job", "derive"))
        # The replay's range: the middle third of medallion's windows of the first gold.
        gold = next(iter(sc.golds))
        starts = sorted({parse_ts(r["window"]["start"]) for r in read_deltars(sc.lake / f"gold/{gold}")})
        frm, to = starts[len(starts) // 3], starts[2 * len(starts) // 3]
        sc.replay_range = tuple(t.strftime("%Y-%m-%dT%H:%M:%SZ") for t in (frm, to))


# A job of the cluster application (interop_spark_cluster's runner) that spoils the range
# [frm, to) of window starts in the gold tables given, as a bad deploy would (the count column
# + 1000), so that each replay must rewrite the range's windows: spoil.py COLUMN FROM TO URI...
SPOIL_JOB = '''
def parse_args(args):
    return args


def run(spark, args):
    col, frm, to, *tables = args
    for t in tables:
        spark.sql(f"UPDATE delta.`{t}` SET `{col}` = `{col}` + 1000 WHERE window.start >= "
                  f"timestamp'{frm}' AND window.start < timestamp'{to}'")
    return len(tables)
'''


class SparkRun:
    """One run of a scenario's exported job: its tables under root, read with delta-rs."""

    def __init__(self, sc: Scenario, where: str, root: Path, stdout: str = ""):
        self.sc, self.where, self.root, self.stdout = sc, where, root, stdout
        self.merge_late: dict = {}  # medallion's merge-late report on Spark's tables
        # Spark's merge-late report ({"gold", "toQuarantineVersion", "lateRows"} per gold): the
        # merge-late job's, or the one the replay job ran first.
        self.spark_merge_late: list[dict] = []
        # With a derived table (cluster runs): the derive job's report, the replay job's
        # ({"replay", "derived"}) and medallion's run replay on its own lake over the same range.
        self.derive: list[dict] = []
        self.replay: dict = {}
        self.medallion_replay: dict = {}

    def medallion(self, table: str) -> list[dict]:
        return read_deltars(self.sc.lake / table)

    def spark(self, table: str) -> list[dict]:
        return read_deltars(self.root / table)

    def bronze(self, source: str) -> list[dict]:
        table = "bronze/events" if source == "events" else f"bronze/{source}"
        return read_deltars(self.sc.lake / table)


def merge_late_on(sc: Scenario, root: Path, med) -> dict:
    """medallion's merge-late on the job's tables, after Spark's merge-late job ran there: the
    same config with the lake at the job's root (its tables and checkpoints are there under the
    same names): every join, and every gold Spark's merge-late left to medallion."""
    cfg = root.parent / f"{sc.name}-{root.name}.yaml"
    cfg.write_text(set_lake(sc.cfg.read_text(), root))
    return json.loads(med("run", "merge-late", "--config", str(cfg)))["result"]


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory):
    """One Spark standalone master and two workers for the session (pyspark's spark-class)."""
    pyspark = require_module("pyspark")
    require_module("delta")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        unavailable("java", "not on PATH and JAVA_HOME unset")
    jars = os.environ.get("MEDALLION_INTEROP_JARS", "")
    if not jars or not all(Path(j).is_file() for j in jars.split(",")):
        unavailable("Delta jars for Spark", f"MEDALLION_INTEROP_JARS={jars!r}")
    cluster = Cluster(Path(pyspark.__file__).parent, tmp_path_factory.mktemp("spark-cluster")).start()
    cluster.jars = jars
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory, medallion_bin) -> dict[str, Scenario]:
    tmp = tmp_path_factory.mktemp("export-sources")

    def med(*args):
        return run_medallion(medallion_bin, *args, timeout=600)

    out = {"demo": prepare_demo(tmp, med, 8000 if LONG else 2000), "joins": prepare_joins(tmp, med)}
    for sc in out.values():
        run_medallion_side(sc, med)
    out["med"] = med
    return out


@pytest.fixture(scope="module")
def cluster_runs(scenarios, spark_cluster, tmp_path_factory) -> dict:
    """Every job of both configs in one application on the standalone cluster: the stream jobs;
    the demo's merge-late job; for the joins config (it has a derived table and late rows) the
    derive job (its derived table from the stream's gold), then the replay job over
    sc.replay_range once the range is spoiled in both engines' gold (the replay's merge-late
    first, then the range, then the derived table again). Afterwards medallion replays the same
    range on its own lake, and runs merge-late on each Spark root."""
    runs, argv, index = {}, [], {}
    spoil = tmp_path_factory.mktemp("spoil") / "spoil.py"
    spoil.write_text(SPOIL_JOB)

    def add(key, job, root, *args):
        index[key] = len(argv)
        argv.append([str(job), "--root", root.as_uri(), *args])

    for name in ("demo", "joins"):
        sc = scenarios[name]
        runs[name] = SparkRun(sc, "cluster", sc.lake / "spark-cluster")
        add(f"{name} stream", sc.job, runs[name].root)
    for run in (runs["demo"], runs["joins"]):
        sc = run.sc
        if not sc.derived:
            add(f"{sc.name} merge-late", sc.late_job, run.root)
            continue
        add(f"{sc.name} derive", sc.derive_job, run.root)
        frm, to = (t.replace("T", " ").removesuffix("Z") for t in sc.replay_range)
        gold = (f"gold/{g}" for g in sc.golds)
        argv.append([str(spoil), sc.count_col, frm, to,
                     *[(root / table).as_uri() for table in gold for root in (sc.lake, run.root)]])
        add(f"{sc.name} replay", sc.replay_job, run.root, "--from", sc.replay_range[0], "--to", sc.replay_range[1])
    report = spark_cluster.submit(argv, spark_cluster.jars)
    results = report["results"]
    for run in (runs["demo"], runs["joins"]):
        sc = run.sc
        if not sc.derived:
            run.spark_merge_late = results[index[f"{sc.name} merge-late"]]
        else:
            run.derive = results[index[f"{sc.name} derive"]]
            run.replay = results[index[f"{sc.name} replay"]]
            run.spark_merge_late = [r["mergeLate"] for r in run.replay["replay"] if "mergeLate" in r]
            run.medallion_replay = json.loads(scenarios["med"](
                "run", "replay", "--config", str(sc.cfg), "--from", sc.replay_range[0], "--to", sc.replay_range[1]))["result"]
        run.stdout = report["stdout"]
        run.merge_late = merge_late_on(sc, run.root, scenarios["med"])
    runs["report"] = report
    return runs


@pytest.fixture(scope="module")
def local_runs(scenarios, spark) -> dict:
    """The jobs in the session's local[2] Spark, in this process (MEDALLION_LONG=1 only: by
    default each job runs once, on the cluster)."""
    import contextlib
    import io

    runs = {}
    for name in ("joins", "demo"):
        sc = scenarios[name]
        root = sc.lake / "spark-local"
        job = load_job(sc.job, f"exported_{name}_local")
        late = load_job(sc.late_job, f"exported_{name}_local_merge_late")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            job.run(spark, job.parse_args(["--root", root.as_uri()]))
            merged = late.run(spark, late.parse_args(["--root", root.as_uri()]))
        runs[name] = SparkRun(sc, "local", root, out.getvalue())
        runs[name].spark_merge_late = merged
        runs[name].merge_late = merge_late_on(sc, root, scenarios["med"])
    return runs


RUNS = [("demo", "cluster"), ("joins", "cluster")] + ([("joins", "local"), ("demo", "local")] if LONG else [])


@pytest.fixture(params=RUNS, ids="-".join)
def run(request) -> SparkRun:
    name, where = request.param
    return request.getfixturevalue(f"{where}_runs")[name]


def test_jobs_ran_on_the_standalone_cluster(cluster_runs, spark_cluster):
    """The application ran on the cluster's master with both workers' executors, not locally."""
    report = cluster_runs["report"]
    assert report["master"] == spark_cluster.url and report["master"].startswith("spark://127.0.0.1:")
    assert report["executors"] == 2, report


def test_not_exported_items_are_named(run):
    """What a join does otherwise on Spark is named when the job starts: never silently."""
    lines = [line for line in run.stdout.splitlines() if line.startswith("medallion job: not exported: ")]
    for item in run.sc.not_exported:
        assert any(item in line for line in lines), (item, lines)


def test_silver_equals_medallions(run):
    for source, (silver, key, _) in run.sc.sources.items():
        ours, theirs = run.medallion(silver), run.spark(silver)
        assert len(ours) >= 40, f"{source}: only {len(ours)} silver rows"
        assert len({r[key] for r in theirs}) == len(theirs), f"{source}: a duplicate in Spark's silver"
        assert_multiset(ours, theirs, f"{run.sc.name} silver {source}")


def test_rejects_equal_medallions(run):
    cols = ("stage", "reason", "error", "source_file", "source_offset")
    ours = [{c: r[c] for c in cols} for r in run.medallion("bronze/rejects") if r["stage"] == "validate"]
    theirs = [{c: r[c] for c in cols} for r in run.spark("bronze/rejects")]
    if run.sc.name == "joins":
        assert ours, "no validation rejects: the path is not exercised"
        reasons = {(r["source_file"].split("/")[1], r["reason"]) for r in ours}
        assert {("impressions", "missing_required"), ("clicks", "expectation:known_ad"),
                ("clicks", "missing_event_time"), ("clicks", "bad_event_time")} <= reasons, reasons
    assert_multiset(ours, theirs, f"{run.sc.name} rejects")


def test_quarantine_equals_medallions(run):
    for gold in run.sc.golds:
        ours, theirs = run.medallion(f"silver/late_{gold}"), run.spark(f"silver/late_{gold}")
        if run.sc.name == "joins":
            assert len(ours) >= 3, f"{gold}: the late path is not exercised"
        assert_multiset(ours, theirs, f"{run.sc.name} quarantine {gold}", drop=("batch_id", "query_id"))


def test_gold_after_merge_late_equals_medallions(run):
    for gold in run.sc.golds:
        ours, theirs = run.medallion(f"gold/{gold}"), run.spark(f"gold/{gold}")
        assert ours, f"{gold}: medallion's gold is empty"
        if run.sc.name == "joins":
            assert any(r["late_rows"] for r in theirs), f"{gold}: merge-late folded nothing into Spark's gold"
        floats = [c for c in run.sc.floats if c in ours[0]]
        assert_multiset(ours, theirs, f"{run.sc.name} gold {gold}", drop=internal_columns(ours, theirs), floats=floats)


def test_spark_merge_late_applied_once(run):
    """Spark's merge-late job (on the cluster, for the joins config, the one its replay job runs
    first) folded every exported gold's quarantine into gold with medallion's txn: its report names each gold with the quarantine version it merged (late rows in the
    joins scenario), and medallion's merge-late run on the same tables afterwards finds each of
    them up to date (the txn it reads is the one Spark wrote: nothing applied twice, and gold
    equals medallion's: test_gold_after_merge_late_equals_medallions)."""
    spark = {r["gold"]: r for r in run.spark_merge_late if r["gold"] in run.sc.golds}
    assert set(spark) == set(run.sc.golds), run.spark_merge_late
    if run.sc.name == "joins":
        assert spark["impressions_1h"]["lateRows"] >= 3, spark
    for gold in run.sc.join_golds:
        # said by the merge-late job, or by the replay job that ran in its place
        assert any(gold in line and ("not merged here: over a join" in line or "not replayed here: over a join" in line)
                   for line in run.stdout.splitlines()), gold
    ours = {g["name"]: g for q in run.merge_late["queries"] for g in q["gold"]}
    for gold in run.sc.golds:
        if not spark[gold]["lateRows"]:
            continue  # nothing to fold: neither commits
        assert ours[gold]["upToDate"] and ours[gold]["toQuarantineVersion"] == spark[gold]["toQuarantineVersion"], \
            (gold, ours[gold], spark[gold])


def test_invariant_a_on_sparks_tables(run):
    """Per source: bronze rows = Spark's silver + its validation rejects + duplicates dropped,
    where the duplicates are counted here from bronze (valid rows whose key came before); each
    quarantine holds silver rows only."""
    rejected = {(r["source_file"], r["source_offset"]) for r in run.spark("bronze/rejects")}
    for source, (silver, key, _) in run.sc.sources.items():
        bronze = run.bronze(source)
        valid = [r for r in bronze if (r["_source_file"], r["_source_offset"]) not in rejected]
        rows = run.spark(silver)
        dups = len(valid) - len({r[key] for r in valid})
        n_rejects = len(bronze) - len(valid)
        assert len(bronze) == len(rows) + n_rejects + dups, (source, len(bronze), len(rows), n_rejects, dups)
        assert {r[key] for r in rows} == {r[key] for r in valid}
        for gold, (gsource, _, _) in run.sc.golds.items():
            if gsource == source:
                keys = {r[key] for r in rows}
                assert all(r[key] in keys for r in run.spark(f"silver/late_{gold}"))


def assert_batch_counts(run, table: str, source: str, size: timedelta, keys) -> None:
    """Invariant E on a table Spark wrote: its counts per (window end, keys) = source's silver
    counted over every tumbling window of size that the source's watermark closed."""
    silver, _, time_col = run.sc.sources[source]
    wm = datetime.fromtimestamp(run.sc.watermarks[source] / 1000, tz=timezone.utc)
    want = collections.Counter()
    for r in run.spark(silver):
        for end in window_ends(parse_ts(r[time_col]), size, size, timedelta(0)):
            if end <= wm:
                want[(end, *[r[k] for k in keys])] += 1
    got = collections.Counter()
    for r in run.spark(f"gold/{table}"):
        got[(parse_ts(r["window"]["end"]), *[r[k] for k in keys])] += r[run.sc.count_col]
    assert want and got == want, f"{table}: differs from silver's batch count:\n" + \
        f"  missing/different: {sorted((k, v) for k, v in want.items() if got.get(k) != v)[:5]}\n" + \
        f"  unexpected: {sorted((k, v) for k, v in got.items() if want.get(k) != v)[:5]}"


def test_invariant_e_on_sparks_tables(run):
    """Spark's gold after merge-late = its silver counted over every window the watermark closed."""
    for gold, (source, size, keys) in run.sc.golds.items():
        assert_batch_counts(run, gold, source, size, keys)


def test_one_query_options_need_source(scenarios):
    """--checkpoint and --bronze name one query's: with several sources the job refuses them
    without --source, before it starts anything, and says which sources there are. No Spark
    session is given (None): the refusal must come before the job touches one, and the module
    starts no local Spark for it."""
    job = load_job(scenarios["joins"].job, "exported_joins_options")
    for flag in ("--checkpoint", "--bronze"):
        with pytest.raises(ValueError, match=r"add --source NAME \(one of impressions, clicks\)"):
            job.run(None, job.parse_args([flag, "/nowhere"]))
    assert job.parse_args(["--source", "clicks"]).source == "clicks"


def test_join_tables_equal_medallions(run):
    """Per join: the joined table after merge-late, the join quarantine (but batch and query
    ids) and each gold over the join after merge-late equal medallion's, row for row."""
    for join in run.sc.joins:
        ours, theirs = run.medallion(f"silver/{join}"), run.spark(f"silver/{join}")
        assert len(ours) >= 40 and any(r[c] is None for r in ours for c in ours[0] if c.endswith("_ingest_time")), \
            f"{join}: too few joined rows, or no null-extended one: the outer path is not exercised"
        assert_multiset(ours, theirs, f"{run.sc.name} join {join}")
        ours, theirs = run.medallion(f"silver/late_{join}"), run.spark(f"silver/late_{join}")
        if run.sc.name == "joins":
            assert ours, f"{join}: no late join input: the quarantine path is not exercised"
        assert_multiset(ours, theirs, f"{run.sc.name} join quarantine {join}", drop=("batch_id", "query_id"))
    for gold in run.sc.join_golds:
        ours, theirs = run.medallion(f"gold/{gold}"), run.spark(f"gold/{gold}")
        assert ours, f"{gold}: medallion's gold over the join is empty"
        assert_multiset(ours, theirs, f"{run.sc.name} gold {gold}", drop=internal_columns(ours, theirs))


def last_watermark_ms(checkpoint: Path) -> int:
    """The batch watermark of the checkpoint's last offsets file (Spark's own record)."""
    last = max((p for p in (checkpoint / "offsets").iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    return json.loads(last.read_text().splitlines()[1])["batchWatermarkMs"]


def test_invariant_j_on_sparks_tables(run):
    """Spark's joined table after merge-late = the batch join of Spark's two silver tables
    (equal non-null keys, right time within [left + lower, left + upper]) plus each unmatched
    left row whose match window Spark's last watermark W closed (t <= W - upper - 1 ms); an
    unmatched row whose window is open is not there yet. Rows are (left key, right key)."""
    for join, (left, right, lower, upper) in run.sc.joins.items():
        lsilver, lkey, ltime = run.sc.sources[left]
        rsilver, rkey, rtime = run.sc.sources[right]
        on = "event_id" if run.sc.name == "demo" else "ad_id"
        rows_l, rows_r = run.spark(lsilver), run.spark(rsilver)
        by_key = collections.defaultdict(list)
        for r in rows_r:
            if r[on] is not None:
                by_key[r[on]].append(r)
        w = datetime.fromtimestamp(last_watermark_ms(run.root / "_checkpoints" / join) / 1000, tz=timezone.utc)
        want = collections.Counter()
        for lrow in rows_l:
            lt = parse_ts(lrow[ltime])
            matches = [r for r in by_key.get(lrow[on], []) if lt + lower <= parse_ts(r[rtime]) <= lt + upper]
            for r in matches:
                want[(lrow[lkey], r[rkey])] += 1
            if not matches and lt <= w - upper - timedelta(milliseconds=1):
                want[(lrow[lkey], None)] += 1
        got = collections.Counter((r[lkey], r[rkey]) for r in run.spark(f"silver/{join}"))
        assert want and got == want, f"{join}: Spark's joined table is not the batch join:\n" + \
            f"  missing/different: {sorted((k, v) for k, v in want.items() if got.get(k) != v)[:5]}\n" + \
            f"  unexpected: {sorted((k, v) for k, v in got.items() if want.get(k) != v)[:5]}"


# The late-data loop on the cluster (issue 34 items 2-3): the joins config's derive and replay
# jobs ran in the cluster application (cluster_runs), over the tables its stream job wrote there.

@pytest.fixture
def loop_run(cluster_runs) -> SparkRun:
    return cluster_runs["joins"]


def test_derive_job_ran_on_the_cluster(loop_run):
    """The derive job, run after the stream job, derived every derived table from the stream's
    gold and committed (the stream job does not keep derived tables)."""
    run = loop_run
    assert [d["name"] for d in run.derive] == list(run.sc.derived), run.derive
    assert all(d.get("commit") is not None and not d.get("upToDate") for d in run.derive), run.derive


def test_derived_table_equals_medallions(loop_run):
    """Each derived table as Spark's jobs keep it (derive, then the replay's merge-late and
    derived pass) equals medallion's after its merge-late and replay, row for row."""
    run = loop_run
    for name in run.sc.derived:
        ours, theirs = run.medallion(f"gold/{name}"), run.spark(f"gold/{name}")
        assert ours and any(r["late_rows"] for r in ours), f"{name}: no corrected window: the test proves little"
        assert_multiset(ours, theirs, f"{run.sc.name} derived {name}", drop=internal_columns(ours, theirs),
                        floats=[c for c in run.sc.floats if c in ours[0]])


def test_invariant_e_on_sparks_derived_table(loop_run):
    """Spark's derived table = its silver counted over every window of the derived size that the
    watermark closed: invariant E one level down."""
    for name, (upstream, size, keys) in loop_run.sc.derived.items():
        assert_batch_counts(loop_run, name, loop_run.sc.golds[upstream][0], size, keys)


def test_spark_replay_equals_medallions_replay(loop_run):
    """The replay job on the cluster and medallion's run replay, over the same range of gold
    rows both spoiled alike (counts +1000): the same whole windows replaced, each engine rewrote
    them, no spoiled count is left, and the replay's merge-late (Spark's only one for this
    config) folded the quarantine in; gold then equals medallion's
    (test_gold_after_merge_late_equals_medallions). A gold over a join is left to medallion
    (said per gold)."""
    run = loop_run
    ours = {g["name"]: g for q in run.medallion_replay["queries"] for g in q["gold"] if g["name"] in run.sc.golds}
    theirs = {g["gold"]: g for g in run.replay["replay"] if g["gold"] in run.sc.golds}
    assert set(ours) == set(theirs) == set(run.sc.golds), (ours, theirs)
    for gold in run.sc.join_golds:
        assert any(gold in line and "not replayed here: over a join" in line for line in run.stdout.splitlines()), gold
    for gold in run.sc.golds:
        o, t = ours[gold], theirs[gold]
        assert (parse_ts(o["windowStartFrom"]), parse_ts(o["windowStartTo"])) == \
            (parse_ts(t["windowStartFrom"]), parse_ts(t["windowStartTo"])), (gold, o, t)
        assert o.get("commit") and not o.get("unchanged"), (gold, o)
        assert t["rowsWritten"] > 0 and not t.get("unchanged"), (gold, t)
        assert t["mergeLate"]["lateRows"] >= 3, (gold, t["mergeLate"])
        for rows in (run.medallion(f"gold/{gold}"), run.spark(f"gold/{gold}")):
            assert all(r[run.sc.count_col] < 1000 for r in rows), f"gold/{gold} still spoiled"


def test_spark_late_loop_applied_once(loop_run):
    """After the replay job (its merge-late with medallion's txn, the range, its derived pass
    with medallion's two positions), medallion's merge-late on the same tables finds each gold
    merged up to the quarantine version Spark merged and each derived table up to date."""
    run = loop_run
    spark_merged = {r["gold"]: r["toQuarantineVersion"] for r in run.spark_merge_late}
    for g in (g for q in run.merge_late["queries"] for g in q["gold"] if g["name"] in run.sc.golds):
        assert g["upToDate"] and g["toQuarantineVersion"] == spark_merged[g["name"]], (g, spark_merged)
    assert [d["name"] for d in run.replay["derived"]] == list(run.sc.derived), run.replay["derived"]
    assert [(d["name"], d.get("upToDate")) for d in run.merge_late["derived"]] == \
        [(name, True) for name in run.sc.derived], run.merge_late["derived"]
