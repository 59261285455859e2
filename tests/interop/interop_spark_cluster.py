"""A Spark standalone cluster on loopback, from the pinned pyspark's own launcher (issue 34): one
master and two workers started with `spark-class org.apache.spark.deploy.master.Master` and
`...deploy.worker.Worker`, and `spark-submit --master spark://127.0.0.1:PORT` to run exported
jobs on it, several jobs in one application (one driver and executor start-up for all).

Every process is started here and stopped here, by its own handle: nothing is found by name.
The master and the workers bind port 0 (no port guessing, no race with other suites); the
master's URL is read from its log. Small memory: the daemons get 256 MB, each worker offers one
core and 768 MB, each executor takes one core and 512 MB.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

# Every Spark JVM of the suite (the session's driver, conftest.py; the cluster's daemons, driver
# and executors): C1 only and the serial collector, as on 2 shared cores the JIT's C2 threads and a
# parallel collector cost more than they save in a short run. C1 alone makes the JVM size its code
# cache as without tiered compilation, 48 MB, which a Spark driver fills (44 of 48 MB used midway
# through a worker's run): under 10% free the code cache sweeper flushes compiled methods
# aggressively, walks the cache on every change and the methods it flushed are compiled again
# (the sweeper thread alone had 12 CPU s of a worker's JVM at 227 s). 240 MB is tiered
# compilation's default: reserved address space, filled only as far as code is compiled.
JVM_FLAGS = ("-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m "
             "-Duser.timezone=UTC")


def local_fs() -> tuple[str, dict[str, str]]:
    """The jar of tests/interop/localfs (MEDALLION_INTEROP_LOCALFS_JAR, built by
    `scripts/interop.sh setup`) and the Spark settings that make it Hadoop's file: file system,
    or ("", {}) when there is none. Without Hadoop's native library (pyspark ships none), Hadoop's
    own local file system runs `chmod` for every file it creates and `readlink` for both sides of
    every FileContext rename, each a new process through the JVM's jspawnhelper: 17,000 of them
    in test_join_differential alone (checkpoints, state stores, Delta's log), 42 of its 135 CPU s.
    The replacement does both through java.nio, with the same results."""
    jar = os.environ.get("MEDALLION_INTEROP_LOCALFS_JAR", "")
    if not jar or not Path(jar).is_file():
        return "", {}
    return jar, {"spark.hadoop.fs.file.impl": "medallion.interop.NioLocalFileSystem",
                 "spark.hadoop.fs.AbstractFileSystem.file.impl": "medallion.interop.NioLocalFs"}


# Runs several exported jobs in one Spark application: argv is JOB.py [args] [-- JOB.py [args]]...
# It writes what the application ran on (master URL, executors) and each job's result to
# $MEDALLION_CLUSTER_REPORT.
RUNNER = '''
import importlib.util, json, os, sys

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

groups, cur = [], []
for arg in sys.argv[1:]:
    if arg == "--":
        groups.append(cur)
        cur = []
    else:
        cur.append(arg)
groups.append(cur)
jobs = [(load(g[0], "job%d" % i), g[1:]) for i, g in enumerate(groups)]
spark = jobs[0][0].session([])
try:
    sc = spark.sparkContext
    results = [job.run(spark, job.parse_args(args)) for job, args in jobs]
    executors = sc._jsc.sc().getExecutorMemoryStatus().size() - 1  # the driver's block manager too
    with open(os.environ["MEDALLION_CLUSTER_REPORT"], "w") as f:
        json.dump({"master": sc.master, "executors": executors, "applicationId": sc.applicationId,
                   "results": results}, f, default=str)
finally:
    spark.stop()
'''


class Cluster:
    """A running master and its workers; stop() ends them."""

    def __init__(self, spark_home: Path, work: Path):
        self.spark_home, self.work = spark_home, work
        self.procs: list[subprocess.Popen] = []
        self.logs: list[Path] = []
        self.url = ""
        conf = work / "conf"  # empty: no site settings leak in
        conf.mkdir(parents=True, exist_ok=True)
        self.env = {**os.environ, "SPARK_HOME": str(spark_home), "SPARK_CONF_DIR": str(conf),
                    "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_DAEMON_MEMORY": "256m",
                    "SPARK_DAEMON_JAVA_OPTS": JVM_FLAGS, "SPARK_LOG_DIR": str(work / "logs")}

    def _start(self, name: str, *args: str) -> Path:
        log = self.work / f"{name}.log"
        out = open(log, "wb")
        self.procs.append(subprocess.Popen([str(self.spark_home / "bin" / "spark-class"), *args],
                                           stdout=out, stderr=subprocess.STDOUT, env=self.env,
                                           cwd=self.work))
        out.close()
        self.logs.append(log)
        return log

    def _wait(self, what: str, found, deadline_s: float = 240):
        """Polls found() until it returns a value; a process that exits, or the deadline, fails
        with the logs."""
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            got = found()
            if got:
                return got
            dead = [p.args for p in self.procs if p.poll() is not None]
            if dead:
                break
            time.sleep(0.2)
        raise RuntimeError(f"Spark standalone cluster: {what} did not happen"
                           f"{' (exited: ' + repr(dead) + ')' if dead else ''}:\n" + self.tails())

    def tails(self) -> str:
        return "".join(f"--- {log.name}\n{log.read_text(errors='replace')[-3000:]}\n"
                       for log in self.logs if log.exists())

    def start(self, workers: int = 2) -> "Cluster":
        master_log = self._start("master", "org.apache.spark.deploy.master.Master",
                                 "--host", "127.0.0.1", "--port", "0", "--webui-port", "0")
        pattern = re.compile(r"Starting Spark master at (spark://127\.0\.0\.1:\d+)")
        self.url = self._wait("the master's start", lambda: (m := pattern.search(master_log.read_text(errors="replace"))) and m.group(1))
        for i in range(workers):
            work_dir = self.work / f"worker{i}"
            work_dir.mkdir(exist_ok=True)
            self._start(f"worker{i}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                        "--port", "0", "--webui-port", "0", "--cores", "1", "--memory", "768m",
                        "--work-dir", str(work_dir), self.url)
        self._wait(f"{workers} workers registering",
                   lambda: master_log.read_text(errors="replace").count("Registering worker") >= workers)
        return self

    def stop(self):
        for p in reversed(self.procs):  # workers first: they end their executors
            if p.poll() is None:
                p.terminate()
        for p in reversed(self.procs):
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def submit(self, jobs: list[list[str]], jars: str, timeout: float = 3600) -> dict:
        """Runs the jobs ([job.py, args...] each) in one application on the cluster; returns
        what it ran on ({"master", "executors", "applicationId"}) and what each job's run()
        returned, in order ("results"). The timeout only catches a hang: at load average 45 to
        50 test_export_sources' application ran past 20 minutes (twice, side by side)."""
        runner = self.work / "run_jobs.py"
        runner.write_text(RUNNER)
        report = self.work / f"report-{time.monotonic_ns()}.json"
        argv = [str(self.spark_home / "bin" / "spark-submit"), "--master", self.url, "--jars", jars,
                "--conf", "spark.ui.enabled=false", "--conf", "spark.ui.showConsoleProgress=false",
                "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.memory=1g",
                "--conf", "spark.executor.memory=512m", "--conf", "spark.executor.cores=1",
                "--conf", "spark.cores.max=2", "--conf", "spark.sql.shuffle.partitions=2",
                "--conf", "spark.default.parallelism=2",
                "--conf", "spark.databricks.delta.snapshotPartitions=1",
                "--conf", "spark.sql.codegen.wholeStage=false",
                "--conf", f"spark.driver.extraJavaOptions={JVM_FLAGS}",
                "--conf", f"spark.executor.extraJavaOptions={JVM_FLAGS}"]
        fs_jar, fs_conf = local_fs()
        if fs_jar:  # on every JVM's class path: the driver's and executors' file: file system
            fs_conf = {**fs_conf, "spark.driver.extraClassPath": fs_jar,
                       "spark.executor.extraClassPath": fs_jar}
        for key, value in fs_conf.items():
            argv += ["--conf", f"{key}={value}"]
        argv.append(str(runner))
        for i, job in enumerate(jobs):
            if i:
                argv.append("--")
            argv.extend(job)
        env = {**self.env, "MEDALLION_CLUSTER_REPORT": str(report)}
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=self.work,
                              timeout=timeout, check=False)
        if proc.returncode != 0:
            raise AssertionError(f"spark-submit --master {self.url} exited {proc.returncode}:\n"
                                 f"{proc.stderr[-6000:]}\n{self.tails()}")
        out = json.loads(report.read_text())
        out["stdout"] = proc.stdout
        return out
