"""The SparkSession factory: the only place that configures Spark.

Embedded ``local[*]`` by default; ``master`` may be ``local[N]``, ``spark://host:port``, ``yarn`` or
``k8s://...``; ``remote`` (``sc://host:port``) connects through Spark Connect instead. Spark's own log noise
is kept at WARN.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping

from pools.errors import InputError

__all__ = ["build_session", "check_java", "parse_conf", "DEFAULT_CONF", "MIN_JAVA"]

#: Spark 4 runs on Java 17 or 21.
MIN_JAVA = 17

#: Settings every poolplan session gets unless the caller overrides them.
DEFAULT_CONF: Mapping[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    "spark.sql.parquet.compression.codec": "zstd",
    "spark.ui.showConsoleProgress": "true",
    # a window over one series buffers the series: spilling it to disk past Spark's 4,096 rows made the
    # per-series sort of counters crawl; 1 M rows (about 100 MB) keeps a quarter of 15 s samples in memory
    "spark.sql.windowExec.buffer.in.memory.threshold": "1048576",
    "spark.sql.windowExec.buffer.spill.threshold": "1048576",
}

#: Shuffle partitions for an embedded session (Spark's 200 is sized for clusters).
LOCAL_SHUFFLE_PARTITIONS = "8"

_VERSION = re.compile(r'version "(\d+)(?:\.(\d+))?')


def check_java() -> int:
    """Return the major version of the ``java`` Spark will start; raise if it is missing or older than 17.

    Raises
    ------
    InputError
        When no ``java`` is found (``JAVA_HOME/bin/java`` or ``java`` on ``PATH``) or it is older than Java 17.
    """
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.path.exists(java):
        where = f"JAVA_HOME={home!r}" if home else "PATH"
        raise InputError(
            f"Spark needs Java {MIN_JAVA}+ but no 'java' was found on {where} "
            "(install e.g. openjdk-17-jre-headless, or point JAVA_HOME at a JDK 17+)"
        )
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"Spark needs Java {MIN_JAVA}+ but {java} -version failed: {exc}") from None
    match = _VERSION.search(proc.stderr + proc.stdout)
    if not match:
        raise InputError(f"could not read the Java version from '{java} -version' (got {proc.stderr.strip()!r})")
    major = int(match.group(2) or 0) if match.group(1) == "1" else int(match.group(1))
    if major < MIN_JAVA:
        raise InputError(f"Spark needs Java {MIN_JAVA}+ but {java} is Java {major}")
    return major


def local_driver_memory() -> str:
    """Heap for an embedded session (driver = executor): half the machine's memory, 1-4 GiB.

    Every reader streams, so the heap does not grow with the input; sorts and shuffles spill to disk. A
    larger heap only lets the JVM grow (its garbage collector expands the heap before it collects), which
    on a shared machine invites the kernel's out-of-memory killer.
    """
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return "2g"
    return f"{max(1, min(4, total // 2**31))}g"


def active_session_exists() -> bool:
    """True when this process already has an active SparkSession (e.g. the test suite's shared one)."""
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession() is not None


def parse_conf(pairs: list[str] | tuple[str, ...]) -> dict[str, str]:
    """Parse ``--conf key=value`` strings into a dict (later keys win).

    Raises
    ------
    InputError
        For a pair without ``=`` or with an empty key.
    """
    conf: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--conf {pair!r}: expected key=value")
        conf[key.strip()] = value
    return conf


def build_session(
    master: str = "local[*]",
    remote: str | None = None,
    conf: Mapping[str, str] | None = None,
    app_name: str = "poolplan",
):
    """Build (or reuse) the SparkSession for a poolplan job.

    Parameters
    ----------
    master
        ``local[*]``, ``local[N]``, ``spark://host:port``, ``yarn`` or ``k8s://https://...``.
    remote
        A Spark Connect URL (``sc://host:port``); when given, ``master`` is ignored and no local JVM is
        needed.
    conf
        Extra Spark settings (``--conf`` passthrough); they override `DEFAULT_CONF` and
        ``conf/spark-defaults.conf`` (which Spark reads itself through ``SPARK_CONF_DIR``).
    app_name
        The application name shown by the cluster manager.

    Returns
    -------
    pyspark.sql.SparkSession

    Raises
    ------
    InputError
        When a JVM session is needed and Java 17+ is missing, or the master URL is not one Spark accepts.
    """
    from pyspark.sql import SparkSession

    settings = {**DEFAULT_CONF, **(conf or {})}
    if remote:
        if not remote.startswith("sc://"):
            raise InputError(f"--remote {remote!r}: expected a Spark Connect URL sc://host:port")
        builder = SparkSession.builder.remote(remote).appName(app_name)
        for key, value in settings.items():
            if not key.startswith(("spark.ui.", "spark.master", "spark.driver.")):
                builder = builder.config(key, value)
        return builder.getOrCreate()
    if not re.match(r"^(local(\[(\*|\d+)(,\d+)?\])?|spark://.+|yarn|k8s://.+|local-cluster\[.+\])$", master):
        raise InputError(f"--master {master!r}: expected local[*], local[N], spark://host:port, yarn or k8s://...")
    check_java()
    if master.startswith("local") and "spark.sql.shuffle.partitions" not in settings:
        settings["spark.sql.shuffle.partitions"] = LOCAL_SHUFFLE_PARTITIONS
    if master.startswith("local") and "spark.pyspark.python" not in settings:
        # the Python workers (query_range parsing runs in them) need this environment's pyarrow and orjson
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if master.startswith("local") and "spark.driver.memory" not in settings and "SPARK_CONF_DIR" not in os.environ:
        settings["spark.driver.memory"] = local_driver_memory()
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session
