"""Stopping a benchmark's Spark session so that its CPU and memory are measured."""


def stop_and_wait(spark):
    """Stop the session and wait for its JVM to exit.

    The parent's wait4 rusage (CPU, peak RSS) counts a descendant only once it has been waited
    for, and the JVM does nearly all of the work. The JVM exits when its stdin closes
    (PythonGatewayServer), not on the gateway's shutdown.
    """
    gateway = spark.sparkContext._gateway
    spark.stop()
    proc = getattr(gateway, "proc", None)
    if proc is None:
        return
    gateway.shutdown()
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        proc.wait(timeout=60)
    except Exception:
        proc.kill()
        proc.wait()
