"""Runs the job `medallion export spark` printed (its path first, then the job's own options) as
its main() would, then waits for the JVM, so that the parent's wait4 rusage (CPU, peak RSS)
includes Spark's work, not only Python's. Prints a one-line JSON summary on stdout: the batches
and rows the job read."""
import importlib.util
import json
import sys
from sparkstop import stop_and_wait


def main():
    path, argv = sys.argv[1], sys.argv[2:]
    spec = importlib.util.spec_from_file_location("exported_job", path)
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    opts = job.parse_args(argv)
    spark = job.session(opts.conf)
    spark.sparkContext.setLogLevel("ERROR")
    progress = job.run(spark, opts)
    summary = {name: {"batches": len(reports), "numInputRows": sum(r["numInputRows"] for r in reports)}
               for name, reports in progress.items()}
    stop_and_wait(spark)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
