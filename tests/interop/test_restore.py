"""A table restored by delta-rs (`DeltaTable.restore`, Delta's RESTORE) between runs: the jobs
refuse, naming the restore and the version that undoes it, instead of going on over a table
that silently lost what the checkpoint recorded (docs/recovery.md, "A table was restored").

A RESTORE is a new version that keeps every txn, so before the check a restore of silver left
every job reporting ok with the restored-away batches gone, and a restore of gold made
merge-late insert partial rows. Here the real delta-rs restores; the real CLI runs the jobs.
The oracle is a copy of the lake taken before the damage that runs the same jobs untouched:
after the documented way out (undo the restore with delta-rs; or `run refresh` for a gold),
every table holds the same rows as the copy's (delta-rs reads both), gold's late_rows aside
after a refresh, which counts only the rows merged after it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from interop_engines import read_deltars, run_medallion

pytestmark = pytest.mark.needs_medallion

TABLES = ["bronze/events", "bronze/rejects", "silver/events", "silver/late_t5m", "gold/t5m"]


def pipeline(lake: Path) -> str:
    return (f"lake: {lake}\n"
            "landing: {path: landing/events/, format: json, max_files_per_trigger: 1}\n"
            "schema:\n"
            "  - {name: event_id,   type: string, required: true}\n"
            "  - {name: event_type, type: string}\n"
            "  - {name: amount,     type: double}\n"
            "  - {name: event_time, type: timestamp, required: true}\n"
            "stream: {name: events, watermark: 2m, dedup: [event_id], trigger: available-now, max_files_per_trigger: 1}\n"
            "gold:\n"
            "  - name: t5m\n"
            "    window: {type: tumbling, size: 5m}\n"
            "    group_by: [event_type]\n"
            "    aggregates: [{fn: count, as: count}, {fn: sum, column: amount, as: total}]\n")


class Lake:
    def __init__(self, binary: Path, root: Path):
        self.binary, self.root = binary, root
        self.cfg = root / "pipeline.yaml"
        self.cfg.write_text(pipeline(root / "lake"))

    def med(self, *args: str) -> str:
        return run_medallion(self.binary, *args, "--config", str(self.cfg), timeout=300)

    def refused(self, *args: str) -> str:
        """Runs a job that must fail; returns its stderr."""
        proc = subprocess.run([str(self.binary), *args, "--config", str(self.cfg)],
                              capture_output=True, text=True, timeout=300, check=False)
        assert proc.returncode != 0, f"medallion {' '.join(args)} went on over a restored table:\n{proc.stdout}"
        return proc.stderr

    def loop(self):
        self.med("run", "ingest")
        self.med("run", "stream")
        self.med("run", "merge-late")

    def table(self, name: str) -> Path:
        return self.root / "lake" / name

    def copy(self, to: Path) -> "Lake":
        shutil.copytree(self.root / "lake", to / "lake")
        return Lake(self.binary, to)

    def land_more(self, other: "Lake"):
        """Lands one more round here and the same objects in other."""
        self.med("gen", "--events", "1500", "--seed", "5", "--files", "2", "--start", "now")
        shutil.copytree(self.table("landing/events"), other.table("landing/events"), dirs_exist_ok=True)


# Columns that differ between two runs of the same jobs: when they ran, and which query.
RUN_COLUMNS = {"_ingest_time", "_query_id", "_batch_id"}


def canon(rows: list[dict], drop=()) -> list[str]:
    return sorted(json.dumps({k: v for k, v in r.items() if k not in drop and k not in RUN_COLUMNS},
                             sort_keys=True, default=str) for r in rows)


def same_tables(got: Lake, want: Lake, drop_gold=()):
    for name in TABLES:
        drop = drop_gold if name.startswith("gold/") else ()
        g, w = read_deltars(got.table(name)), read_deltars(want.table(name))
        assert canon(g, drop) == canon(w, drop), f"{name}: {len(g)} rows after the way out, {len(w)} in the untouched lake (or other rows)"


@pytest.fixture(scope="module")
def base(tmp_path_factory, medallion_bin) -> Lake:
    """A lake after two rounds of landing and the loop, with late rows merged into gold."""
    lake = Lake(medallion_bin, tmp_path_factory.mktemp("restore-base"))
    lake.med("init")
    for seed in (3, 4):
        lake.med("gen", "--events", "3000", "--seed", str(seed), "--files", "4", "--start", "now",
                 "--lag-median", "90s", "--outage-rate", "0.002")
        lake.loop()
    assert read_deltars(lake.table("silver/late_t5m")), "the workload quarantined nothing: the test would prove little"
    return lake


def test_restored_silver_is_refused_until_undone(base, tmp_path, deltalake):
    lake, control = base.copy(tmp_path / "damaged"), base.copy(tmp_path / "control")
    silver = deltalake.DeltaTable(str(lake.table("silver/events")))
    silver.restore(silver.version() - 2)
    restore = deltalake.DeltaTable(str(lake.table("silver/events"))).version()
    for job in (("run", "stream"), ("run", "replay", "--since", "48h")):
        err = lake.refused(*job)
        assert "RESTORE" in err and f"restore({restore - 1})" in err, f"{job}: {err}"
    deltalake.DeltaTable(str(lake.table("silver/events"))).restore(restore - 1)
    lake.land_more(control)
    for l in (lake, control):
        l.loop()
    same_tables(lake, control)


def test_restored_gold_is_refused_until_refreshed(base, tmp_path, deltalake):
    lake, control = base.copy(tmp_path / "damaged"), base.copy(tmp_path / "control")
    gold = deltalake.DeltaTable(str(lake.table("gold/t5m")))
    ops = [h["operation"] for h in gold.history(1)]
    assert ops == ["MERGE"], f"gold's last commit is {ops}, not merge-late's: the test would not restore past it"
    gold.restore(gold.version() - 1)
    err = lake.refused("run", "merge-late")
    assert "RESTORE" in err and "refresh --table" in err, err
    lake.med("run", "refresh", "--table", "t5m")
    for l in (lake, control):
        l.loop()
    same_tables(lake, control, drop_gold=("late_rows",))
