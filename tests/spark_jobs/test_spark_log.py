"""Spark failures read as one line (exit 3), Spark's log goes to a file, and nothing is half-written."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


def test_failures_are_named_with_what_to_change(tmp_path: Path) -> None:
    from py4j.protocol import Py4JError, Py4JNetworkError

    from pools.errors import InputError, JobError
    from spark_jobs.spark_log import job_failure

    log = tmp_path / "spark.log"
    oom = job_failure(Py4JError("An error occurred while calling o42.parquet.\n: java.lang.OutOfMemoryError: Java heap space"), log)
    assert isinstance(oom, JobError) and "out of memory" in str(oom) and "spark.driver.memory" in str(oom) and str(log) in str(oom)
    dead = job_failure(Py4JNetworkError("Answer from Java side is empty"), log)
    assert isinstance(dead, JobError) and "JVM died" in str(dead)
    log.write_text("ERROR SparkUncaughtExceptionHandler: java.lang.OutOfMemoryError: Java heap space\n")
    assert "out of memory" in str(job_failure(ConnectionRefusedError(111, "Connection refused"), log))
    lost = job_failure(Py4JError("Job aborted due to stage failure: ExecutorLostFailure (executor 3 exited)"), log)
    assert isinstance(lost, JobError) and "executor" in str(lost)
    bad_file = job_failure(Py4JError("[FAILED_READ_FILE.NO_HINT] Encountered error while reading file file:///data/h/x.parquet. SQLSTATE"), log)
    assert isinstance(bad_file, InputError) and "file:///data/h/x.parquet" in str(bad_file)
    assert job_failure(ValueError("not Spark's"), log) is None
    assert "\n" not in str(oom) + str(dead) + str(lost)


@pytest.mark.slow
def test_a_dead_jvm_is_exit_3_with_one_line_and_nothing_written(tmp_path: Path) -> None:
    from planner.cli import main

    sample = tmp_path / "s"
    assert main(["sample", "--out", str(sample), "--brokers", "6", "--topics", "6", "--days", "2", "--step", "60"]) == 0
    out = tmp_path / "p"
    history = tmp_path / "history"
    argv = [
        Path(sys.executable).with_name("poolplan"), "ingest", "--query-range", f"{sample}/metrics/query_range/*.json",
        "--prom", f"{sample}/metrics/prom/*/*.prom", "--broker-map", sample / "broker-map.toml", "--history", history,
        "--out", out,
    ]
    proc = subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while not (out / "spark.log").exists() or "Starting job" not in (out / "spark.log").read_text(errors="replace"):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.2)
        java = [int(c) for c in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()]
        for pid in java:
            if b"java" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]:
                os.kill(pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 3, err
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith(("WARNING", "Using Spark", "Setting default", "To adjust", "[Stage"))]
    assert "Traceback" not in err
    assert any("JVM died" in line and "spark.log" in line for line in lines), err
    assert (out / "spark.log").exists()
    assert not (out / "topic_profile.parquet").exists() and not (out / "quality.json").exists()
    assert not history.exists() or not any(history.rglob("*.parquet"))


@pytest.mark.spark
def test_a_released_log_is_never_written_again(spark, tmp_path: Path) -> None:
    import logging

    from spark_jobs.spark_log import release_log, spark_log

    log = tmp_path / "out" / "spark.log"
    with pytest.raises(RuntimeError), spark_log(spark, log):
        raise RuntimeError("bad input found inside the block")
    logging.getLogger("py4j").warning("a failed block leaves py4j writing here")
    assert "a failed block leaves py4j writing here" in log.read_text()
    release_log(log)
    log.unlink()
    log.parent.rmdir()  # the run removes the directory it created
    handlers = logging.getLogger("py4j").handlers
    assert [h for h in handlers if getattr(h, "baseFilename", None) == str(log.resolve())] == []
    for h in handlers:  # what logging.shutdown does at exit, before py4j's last records
        h.close()
    logging.getLogger("py4j.clientserver").warning("Closing down clientserver connection")
    assert not log.parent.exists()
