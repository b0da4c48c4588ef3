"""The ingest job on real Spark deployments started from the pyspark package, on loopback only.

A standalone master and worker (``bin/spark-class``), a Spark Connect server (``bin/spark-submit --class
...SparkConnectServer``, what ``sbin/start-connect-server.sh`` runs) and a fault test that kills the
executor mid-job. Each must write the same bytes as the local-mode run. Every process started here is
stopped (its whole process group) in the fixtures' teardown.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.spark_jobs import synth

# one standalone cluster and one Spark Connect server per module: one xdist worker runs the module
pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.xdist_group("spark-clusters")]

PROFILE_FILES = ("topic_profile.parquet", "topic_profile.json", "partition_profile.parquet")
LOOPBACK = "127.0.0.1"
START_TIMEOUT_S = 120
JOB_TIMEOUT_S = 420


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _env() -> dict[str, str]:
    env = dict(os.environ, SPARK_HOME=str(_spark_home()), SPARK_LOCAL_IP=LOOPBACK, PYSPARK_PYTHON=sys.executable)
    env.pop("SPARK_CONF_DIR", None)
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def _wait_for(predicate, what: str, proc: subprocess.Popen, log: Path, timeout: float = START_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
    raise AssertionError(f"{what} not ready after {timeout:.0f}s (exit {proc.poll()}):\n{tail}")


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((LOOPBACK, port)) == 0


@contextmanager
def _started(cmd: list[str], log: Path) -> Iterator[subprocess.Popen]:
    """Start ``cmd`` in its own process group; on exit terminate the group, then kill what is left."""
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=_env(), start_new_session=True)
    try:
        yield proc
    finally:
        for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("cluster-input")
    c = synth.build(minutes=120, seed=11)
    broker_map = synth.write_prom(c, root)
    synth.write_query_range(c, root)  # the same counters again: staged by the Python workers, duplicates of the text's
    synth.write_log_dirs(root, {"20250303T010000Z": {1: [("orders-0", 10, False)], 2: [("orders-0", 12, False)]}})
    bm = root / "broker-map.toml"
    bm.write_text("".join(f'"{k}" = {v}\n' for k, v in sorted(broker_map.items())))
    args = ["--prom", str(root / "prom" / "*" / "*.prom"), "--query-range", str(root / "query_range" / "*.json")]
    args += ["--log-dirs", str(root / "log-dirs" / "*.txt")]
    return root, [*args, "--broker-map", str(bm), "--cluster", "c", "--horizon-days", "30"]


@pytest.fixture(scope="module")
def reference(spark, inputs, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The profile of the shared local-mode session."""
    from spark_jobs.ingest import IngestInputs, IngestParams, run
    from spark_jobs.ingest_inputs import expand_globs, load_broker_map

    root, _ = inputs
    out = tmp_path_factory.mktemp("reference")
    prom = expand_globs([str(root / "prom" / "*" / "*.prom")], option="--prom")
    query_range = expand_globs([str(root / "query_range" / "*.json")], option="--query-range")
    log_dirs = expand_globs([str(root / "log-dirs" / "*.txt")], option="--log-dirs")
    params = IngestParams("c", load_broker_map(root / "broker-map.toml"), 30)
    run(spark, IngestInputs(prom_text=prom, query_range=query_range, log_dirs=log_dirs), out, params)
    return out


def _job(args: list[str], out: Path, log: Path) -> subprocess.Popen:
    """``poolplan ingest`` (the installed script beside this Python) in its own process group."""
    cmd = [str(Path(sys.executable).with_name("poolplan")), "ingest", *args, "--out", str(out)]
    with log.open("wb") as f:
        return subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=_env(), start_new_session=True)


def _finish(proc: subprocess.Popen, log: Path) -> None:
    try:
        code = proc.wait(timeout=JOB_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        raise AssertionError(f"job still running after {JOB_TIMEOUT_S}s:\n{log.read_text(errors='replace')[-3000:]}") from None
    assert code == 0, log.read_text(errors="replace")[-3000:]


def _same_profile(out: Path, reference: Path) -> None:
    for name in PROFILE_FILES:
        assert (out / name).read_bytes() == (reference / name).read_bytes(), name


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, subprocess.Popen, Path]]:
    """A standalone master and one worker (2 cores) on loopback: ``(master URL, worker process, work dir)``."""
    home = _spark_home()
    tmp = tmp_path_factory.mktemp("standalone")
    port, ui, wui = _free_port(), _free_port(), _free_port()
    master_cmd = [str(home / "bin" / "spark-class"), "org.apache.spark.deploy.master.Master"]
    master_cmd += ["--host", LOOPBACK, "--port", str(port), "--webui-port", str(ui)]
    url = f"spark://{LOOPBACK}:{port}"
    work = tmp / "work"
    worker_cmd = [str(home / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker", url]
    worker_cmd += ["--host", LOOPBACK, "--cores", "2", "--memory", "2g", "--webui-port", str(wui), "--work-dir", str(work)]
    with _started(master_cmd, tmp / "master.log") as master:
        _wait_for(lambda: _port_open(port), "standalone master", master, tmp / "master.log")
        with _started(worker_cmd, tmp / "worker.log") as worker:
            registered = lambda: "Successfully registered with master" in (tmp / "worker.log").read_text(errors="replace")  # noqa: E731
            _wait_for(registered, "standalone worker", worker, tmp / "worker.log")
            yield url, worker, work


def _cluster_args(url: str) -> list[str]:
    confs = {
        "spark.driver.host": LOOPBACK,
        "spark.driver.bindAddress": LOOPBACK,
        "spark.executor.memory": "1g",
        "spark.executor.cores": "2",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "4",
    }
    return ["--master", url, *[x for k, v in confs.items() for x in ("--conf", f"{k}={v}")]]


def test_standalone_cluster_writes_the_local_profile(standalone, inputs, reference, tmp_path: Path) -> None:
    url, _, _ = standalone
    _, args = inputs
    out = tmp_path / "profile"
    log = tmp_path / "job.log"
    _finish(_job([*args, *_cluster_args(url)], out, log), log)
    _same_profile(out, reference)


def _executors(worker_pid: int) -> list[int]:
    """PIDs of the executor JVMs the worker launched (its children running CoarseGrainedExecutorBackend)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == worker_pid and b"CoarseGrainedExecutorBackend" in cmdline:
            found.append(int(entry.name))
    return found


def test_killing_the_executor_mid_job_gives_identical_output(standalone, inputs, reference, tmp_path: Path) -> None:
    url, worker, work = standalone
    _, args = inputs
    out = tmp_path / "profile"
    log = tmp_path / "job.log"
    job = _job([*args, *_cluster_args(url)], out, log)
    try:
        # the job's first staged table (the parsed inputs) is written; the rest of the job is ahead
        staged = lambda: any(out.glob(".ingest-*/*/_SUCCESS"))  # noqa: E731
        _wait_for(staged, "first stage of the job", job, log, JOB_TIMEOUT_S)
        executors = _executors(worker.pid)
        assert executors, "no executor process found under the worker"
        for pid in executors:
            os.kill(pid, signal.SIGKILL)
    except BaseException:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait(timeout=30)
        raise
    _finish(job, log)
    _same_profile(out, reference)
    apps = [d for d in work.iterdir() if d.is_dir()]
    launched = max(len([e for e in app.iterdir() if e.is_dir()]) for app in apps)
    assert launched >= 2, "the worker did not launch a replacement executor"


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Spark Connect server (local[2]) on a free loopback port: its ``sc://`` URL."""
    home = _spark_home()
    tmp = tmp_path_factory.mktemp("connect")
    port = _free_port()
    cmd = [str(home / "bin" / "spark-submit"), "--class", "org.apache.spark.sql.connect.service.SparkConnectServer"]
    cmd += ["--master", "local[2]", "--name", "Spark Connect server"]
    for k, v in {
        "spark.connect.grpc.binding.address": LOOPBACK,
        "spark.connect.grpc.binding.port": str(port),
        "spark.driver.host": LOOPBACK,
        "spark.driver.bindAddress": LOOPBACK,
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.session.timeZone": "UTC",
    }.items():
        cmd += ["--conf", f"{k}={v}"]
    with _started(cmd, tmp / "connect.log") as server:
        _wait_for(lambda: _port_open(port), "Spark Connect server", server, tmp / "connect.log")
        yield f"sc://{LOOPBACK}:{port}"


def test_spark_connect_writes_the_local_profile(connect_server, inputs, reference, tmp_path: Path) -> None:
    _, args = inputs
    out = tmp_path / "profile"
    log = tmp_path / "job.log"
    _finish(_job([*args, "--remote", connect_server], out, log), log)
    _same_profile(out, reference)
