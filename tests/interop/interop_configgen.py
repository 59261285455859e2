"""A seeded generator of pipeline configs within what `medallion export spark` carries, and of
bronze data for them (issue 34, deliverable 4: the randomized parity test,
test_export_random.py).

generate(seed) draws, from random.Random(seed) only (so a seed replays exactly):

* 1-3 sources, each with its own landing and bronze: an id (string, required, the dedup key),
  a join key k (string, skewed: about half the rows on k0, some null), the event time
  (timestamp, required), a long and a double (nullable, some null), sometimes an integer and a
  boolean; a watermark of 5, 10 or 30 minutes; sometimes a drop or warn expectation and a
  transform (a computed column, sometimes a filter that rejects or drops);
* per source 0-2 aggregations (at least one in all): tumbling or sliding windows (sometimes with
  a start_time), group_by a subset of k and the boolean, count plus sum/min/max/avg/count(col)
  over the numeric columns;
* with two sources or more, usually a join of the first two on k (inner or left_outer, a time
  range), sometimes with an aggregation over the joined rows;
* sometimes a session-window aggregation: the export refuses those per item (a notice naming
  the gold, and the job will not run one), so it is kept apart (Case.session_yaml): the test
  checks the notice on that config, and both engines run the config without it.

The landing data, 3 JSON objects per source (one micro-batch each, or two objects in the first
batch), per object 12-30 rows moving forward in event time, with rows delivered late (event
times from two objects before: behind the watermark the previous batch computed), resends of
earlier ids (with other values: first arrival wins), nulls, a row without its id, one without
its event time, one whose event time does not parse, and a long that does not parse.

python interop_configgen.py SEED prints the config for a seed (to replay a failure by hand).
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

BASE = datetime(2024, 3, 1, tzinfo=timezone.utc)
SPAN = timedelta(minutes=30)  # event time one landing object covers
OBJECTS = 3


@dataclass
class Source:
    name: str
    key: str  # the dedup key (the id)
    time: str
    watermark: timedelta
    columns: list[tuple[str, str]]  # (name, type) in schema order
    max_files: int
    expectation: dict | None = None
    transform: dict | None = None


@dataclass
class Gold:
    name: str
    source: str  # a source or a join
    time: str
    kind: str  # tumbling | sliding | session
    size: timedelta
    slide: timedelta
    start: timedelta
    keys: list[str]
    aggregates: list[dict]


@dataclass
class Join:
    name: str
    left: Source
    right: Source
    type: str
    lower: timedelta
    upper: timedelta


@dataclass
class Case:
    seed: int
    sources: list[Source]
    golds: list[Gold]
    joins: list[Join] = field(default_factory=list)
    session: Gold | None = None

    def yaml(self, lake: str, with_session: bool = False) -> str:
        return render(self, lake, with_session)

    def describe(self) -> str:
        return f"seed {self.seed}:\n" + self.yaml("LAKE")


def dur(d: timedelta) -> str:
    s = int(d.total_seconds())
    if s == 0:
        return "0s"
    sign = "-" if s < 0 else ""
    s = abs(s)
    return f"{sign}{s // 3600}h" if s % 3600 == 0 else f"{sign}{s // 60}m" if s % 60 == 0 else f"{sign}{s}s"


def generate(seed: int) -> Case:
    rng = random.Random(seed)
    names = ["orders", "views", "pings"]
    sources = []
    for name in names[:rng.choice([1, 2, 2, 3])]:
        p = name[0]
        cols = [(f"{p}_id", "string"), ("k", "string"), (f"{p}_time", "timestamp"), (f"{p}_n", "long"),
                (f"{p}_x", "double")]
        if rng.random() < 0.5:
            cols.append((f"{p}_i", "integer"))
        if rng.random() < 0.5:
            cols.append((f"{p}_b", "boolean"))
        s = Source(name, f"{p}_id", f"{p}_time", timedelta(minutes=rng.choice([5, 10, 30])), cols,
                   rng.choice([1, 1, 2]))
        if rng.random() < 0.5:
            s.expectation = {"name": f"{p}_small", "expect": f"{p}_n IS NULL OR {p}_n < 80",
                             "on_violation": rng.choice(["drop", "warn"])}
        if rng.random() < 0.4:
            t = {"columns": [{"name": f"{p}_n2", "expr": f"{p}_n * 2"}]}
            if rng.random() < 0.6:
                t["filter"] = {"name": f"{p}_not_k5", "expr": "k <> 'k5'", "on_filter": rng.choice(["reject", "drop"])}
            s.transform = t
        sources.append(s)
    golds = []
    for s in sources:
        for j in range(rng.choice([0, 1, 1, 2]) if golds or s is not sources[-1] else rng.choice([1, 2])):
            golds.append(random_gold(rng, f"{s.name}_g{j}", s.name, s.time, numeric_columns(s),
                                     [c for c, t in s.columns if t == "boolean"]))
    case = Case(seed, sources, golds)
    if len(sources) >= 2 and rng.random() < 0.75:
        left, right = sources[0], sources[1]
        j = Join(f"{left.name}_{right.name}", left, right, rng.choice(["inner", "left_outer"]),
                 rng.choice([timedelta(0), timedelta(minutes=-10)]),
                 rng.choice([timedelta(minutes=10), timedelta(minutes=30), timedelta(hours=1)]))
        case.joins.append(j)
        if rng.random() < 0.6:
            g = random_gold(rng, f"{j.name}_g", j.name, left.time, [f"{right.name[0]}_n"], [])
            g.aggregates.append({"fn": "count", "column": right.key, "as": "matched"})
            case.golds.append(g)
    if rng.random() < 0.3:
        s = rng.choice(sources)
        case.session = Gold(f"{s.name}_sessions", s.name, s.time, "session", timedelta(minutes=10), timedelta(0),
                            timedelta(0), ["k"], [{"fn": "count", "as": "n"}])
    return case


def numeric_columns(s: Source) -> list[str]:
    return [c for c, t in s.columns if t in ("long", "double", "integer")]


def random_gold(rng: random.Random, name: str, source: str, time: str, numeric: list[str], bools: list[str]) -> Gold:
    if rng.random() < 0.5:
        size = rng.choice([5, 10, 15, 30])
        kind, size, slide = "tumbling", timedelta(minutes=size), timedelta(minutes=size)
    else:
        slide = rng.choice([5, 10])
        kind, size, slide = "sliding", timedelta(minutes=slide * rng.choice([2, 3])), timedelta(minutes=slide)
    start = timedelta(minutes=1) if rng.random() < 0.3 else timedelta(0)
    keys = [k for k in ["k", *bools] if rng.random() < 0.6]
    aggs = [{"fn": "count", "as": "n"}]
    for i, fn in enumerate(rng.sample(["sum", "min", "max", "avg", "count"], rng.randint(1, 3))):
        aggs.append({"fn": fn, "column": rng.choice(numeric), "as": f"{fn}_{i}"})
    return Gold(name, source, time, kind, size, slide, start, keys, aggs)


def gold_yaml(g: Gold, top: str) -> str:
    out = f"  - name: {g.name}\n"
    if g.source != top:
        out += f"    source: {g.source}\n"
        out += f"    time_column: {g.time}\n"
    if g.kind == "session":
        out += f"    window: {{type: session, gap: {dur(g.size)}}}\n"
    elif g.kind == "tumbling":
        out += f"    window: {{type: tumbling, size: {dur(g.size)}, start_time: {dur(g.start)}}}\n"
    else:
        out += (f"    window: {{type: sliding, size: {dur(g.size)}, slide: {dur(g.slide)}, "
                f"start_time: {dur(g.start)}}}\n")
    out += f"    group_by: [{', '.join(g.keys)}]\n"
    out += "    aggregates:\n"
    for a in g.aggregates:
        out += "      - " + json.dumps(a) + "\n"
    return out


def source_body(s: Source, indent: str) -> str:
    out = f"{indent}landing: {{path: landing/{s.name}/, format: json, max_files_per_trigger: 1}}\n"
    out += f"{indent}schema:\n"
    for c, t in s.columns:
        req = ", required: true" if c in (s.key, s.time) else ""
        out += f"{indent}  - {{name: {c}, type: {t}{req}}}\n"
    if s.expectation:
        out += f"{indent}expectations:\n{indent}  - {json.dumps(s.expectation)}\n"
    if s.transform:
        out += f"{indent}transform: {json.dumps(s.transform)}\n"
    return out


def render(case: Case, lake: str, with_session: bool) -> str:
    top, rest = case.sources[0], case.sources[1:]
    out = f"# generated by interop_configgen.py, seed {case.seed}\nlake: {lake}\n"
    out += source_body(top, "")
    out += f"tables: {{bronze: bronze/{top.name}, rejects: bronze/rejects, silver: silver/{top.name}}}\n"
    out += (f"stream:\n  name: {top.name}\n  event_time: {top.time}\n  watermark: {dur(top.watermark)}\n"
            f"  dedup: [{top.key}]\n  max_files_per_trigger: {top.max_files}\n  trigger: available-now\n")
    if rest:
        out += "sources:\n"
        for s in rest:
            out += f"  - name: {s.name}\n" + source_body(s, "    ")
            out += f"    tables: {{bronze: bronze/{s.name}, silver: silver/{s.name}}}\n"
            out += (f"    stream: {{event_time: {s.time}, watermark: {dur(s.watermark)}, dedup: [{s.key}], "
                    f"max_files_per_trigger: {s.max_files}}}\n")
    if case.joins:
        out += "joins:\n"
        for j in case.joins:
            out += (f"  - name: {j.name}\n    left: {j.left.name}\n    right: {j.right.name}\n    type: {j.type}\n"
                    "    on: [{left: k, right: k}]\n"
                    f"    time: {{left: {j.left.time}, right: {j.right.time}, lower: {dur(j.lower)}, "
                    f"upper: {dur(j.upper)}}}\n")
    golds = case.golds + ([case.session] if with_session and case.session else [])
    out += "gold:\n" + "".join(gold_yaml(g, top.name) for g in golds)
    return out


def ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def landing(case: Case, lake: Path, rows_per_object: tuple[int, int] = (12, 30)) -> None:
    """Writes each source's landing objects (lake/landing/<source>/000.json, ...), drawn from the
    case's seed (a generator of its own, so the config and the data replay independently)."""
    rng = random.Random(case.seed * 7919 + 1)
    for s in case.sources:
        p = s.name[0]
        sent: list[dict] = []
        d = lake / "landing" / s.name
        d.mkdir(parents=True, exist_ok=True)
        for i in range(OBJECTS):
            rows = []
            for k in range(rng.randint(*rows_per_object)):
                t = BASE + i * SPAN + timedelta(seconds=rng.randrange(int(SPAN.total_seconds())))
                rows.append(value_row(rng, s, f"{p}-{i}-{k}", t))
            if i >= 2:
                # Late: event times of two objects before, behind the previous batch's watermark
                # (for a 30m watermark, some are and some are not).
                for k in range(rng.randint(2, 4)):
                    t = BASE + (i - 2) * SPAN + timedelta(seconds=rng.randrange(int(SPAN.total_seconds())))
                    rows.append(value_row(rng, s, f"{p}-late-{i}-{k}", t))
            if i >= 1:
                # Resends of earlier ids, other values: the first arrival is silver's.
                for old in rng.sample(sent, min(3, len(sent))):
                    again = dict(old)
                    again[f"{p}_n"] = rng.randrange(100)
                    rows.append(again)
                rows.append({"k": "k1", s.time: ts(BASE + i * SPAN)})  # no id: missing_required
                rows.append({s.key: f"{p}-notime-{i}", "k": "k2"})  # missing_event_time
                rows.append({s.key: f"{p}-badtime-{i}", "k": "k2", s.time: "yesterday"})  # bad_event_time
                rows.append({s.key: f"{p}-badlong-{i}", "k": "k3", s.time: ts(BASE + i * SPAN + timedelta(minutes=1)),
                             f"{p}_n": "many"})  # a long that does not parse: null, in _rescued_data
            if rows:
                rows.append(dict(rows[0]))  # a resend in the same object
            rng.shuffle(rows)
            sent.extend(r for r in rows if s.key in r and s.time in r)
            (d / f"{i:03d}.json").write_text("".join(json.dumps(r) + "\n" for r in rows))


def value_row(rng: random.Random, s: Source, rid: str, t: datetime) -> dict:
    p = s.name[0]
    r = rng.random()
    k = None if r < 0.06 else "k0" if r < 0.5 else f"k{rng.randint(1, 5)}"
    row = {s.key: rid, s.time: ts(t)}
    if k is not None:
        row["k"] = k
    for c, typ in s.columns:
        if c in row or c == "k" or rng.random() < 0.1:
            continue  # nulls: the column left out
        if typ == "long":
            row[c] = rng.randrange(100)
        elif typ == "integer":
            row[c] = rng.randrange(-50, 50)
        elif typ == "double":
            row[c] = round(rng.uniform(-10, 100), rng.choice([0, 2, 6]))
        elif typ == "boolean":
            row[c] = rng.random() < 0.5
    return row


if __name__ == "__main__":
    print(generate(int(sys.argv[1])).yaml("lake", with_session=True), end="")
