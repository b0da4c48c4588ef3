"""The ingest job on real Spark deployments started from the pyspark package, on loopback only.

A standalone master and two workers (``bin/spark-class``; one executor each, so tasks and shuffles cross JVMs),
a Spark Connect server (``bin/spark-submit --class ...SparkConnectServer``, what ``sbin/start-connect-server.sh``
runs) and a fault test that kills the executors mid-job. Each must write the same bytes as the local-mode run:
every output file (profile, ``quality.json``, ``backtest.parquet``, ``quarantine/``, ``history/``), on the
inputs of ``poolplan sample`` (exposition text, query_range exports, log-dirs captures) in one run and as an
incremental run onto an existing history. Every process started here is stopped (its whole process group) in
the fixtures' teardown.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from tests.spark_jobs import synth

# one standalone cluster and one Spark Connect server per module: one xdist worker runs the module
pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.xdist_group("spark-clusters")]

#: Spark's own log: its lines (times, hosts, executor ids) differ between any two runs
NOT_COMPARED = {"spark.log"}
#: a data file Spark names by its task: ``part-<task>-<write uuid>[-.]c000[.codec].parquet``
PART_FILE = re.compile(r"^part-\d+-[0-9a-f-]{36}[-.]c\d+(\.\w+)?\.parquet$")
WORKERS = 2
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
    return root, [*args, "--broker-map", str(bm), "--cluster", "c", "--profile-horizon-days", "30"]


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


def _digest(path: Path, home: Path | None = None) -> str:
    """SHA-256 of a file's bytes; for Parquet, of its pages and its footer with each column chunk's encodings in
    one order.

    parquet-java (Spark's writer) lists a column chunk's encodings from a ``HashSet`` of enum constants, whose order
    follows the JVM's identity hashes: two JVMs write the same pages and the same footer but for that order.
    Every other byte of the footer (offsets, sizes, statistics, row groups, schema, key-value metadata) counts.
    In other files, ``home`` (the directory the run's paths start from, e.g. a history outside ``OUT`` named in
    ``quality.json``) reads as ``<home>``.
    """
    data = path.read_bytes()
    if not path.name.endswith(".parquet"):
        return hashlib.sha256(data.replace(os.fsencode(home), b"<home>") if home else data).hexdigest()
    import pyarrow.parquet as pq

    footer = int.from_bytes(data[-8:-4], "little")
    meta = pq.read_metadata(path)
    described = meta.to_dict()
    for group in described["row_groups"]:
        for column in group["columns"]:
            column["encodings"] = sorted(column["encodings"])
    described["schema"] = meta.schema.to_arrow_schema().to_string()
    described["metadata"] = {k.decode(): v.decode() for k, v in (meta.metadata or {}).items()}
    return hashlib.sha256(data[: len(data) - 8 - footer] + json.dumps(described, sort_keys=True, default=str).encode()).hexdigest()


def _contents(root: Path, home: Path | None = None) -> dict[str, list[str]]:
    """Every file under ``root`` (but `NOT_COMPARED`) by its directory: the names of named files with their
    `_digest`, and the sorted digests of Spark's data files (their names hold the task number and a random write
    id, which no two runs share)."""
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*")):
        if path.is_dir() or path.name in NOT_COMPARED or path.name.endswith(".crc"):
            continue
        digest = _digest(path, home)
        entry = digest if PART_FILE.match(path.name) else f"{path.name} {digest}"
        found.setdefault(os.fspath(path.parent.relative_to(root)), []).append(entry)
    return {k: sorted(v) for k, v in found.items()}


def _same_outputs(out: Path, reference: Path, *, homes: tuple[Path, Path] | None = None) -> None:
    """``out`` holds the files ``reference`` holds, byte for byte (where ``homes`` are the two runs' own
    directories, each as the other)."""
    got, want = _contents(out, homes and homes[0]), _contents(reference, homes and homes[1])
    assert sorted(got) == sorted(want), "directories differ"
    for directory, files in want.items():
        assert got[directory] == files, f"{directory or '.'}: files differ"


def test_same_outputs_sees_a_changed_row_and_a_moved_file(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    part = "part-00000-0b7d7c3e-1f0e-4d38-9a4d-2f5c0f0c8a11-c000.zstd.parquet"
    a, b = tmp_path / "a", tmp_path / "b"
    for root, rows in ((a, [1, 2]), (b, [2, 1])):
        (root / "quarantine").mkdir(parents=True)
        pq.write_table(pa.table({"n": rows}), root / "quarantine" / part)
        (root / "quality.json").write_text("{}")
        (root / "spark.log").write_text(str(root))
    _same_outputs(a, a)
    with pytest.raises(AssertionError, match="quarantine: files differ"):
        _same_outputs(b, a)
    pq.write_table(pa.table({"n": [1, 2]}), b / "quarantine" / part)
    _same_outputs(b, a)
    (b / "quality.json").write_text("{} ")
    with pytest.raises(AssertionError, match=r"\.: files differ"):
        _same_outputs(b, a)
    (b / "quality.json").write_text("{}")
    (b / "quarantine" / part).rename(b / "quarantine" / "x.parquet")
    with pytest.raises(AssertionError, match="quarantine: files differ"):
        _same_outputs(b, a)


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[subprocess.Popen], list[Path]]]:
    """A standalone master and `WORKERS` workers (1 core, 1 GiB each) on loopback: ``(master URL, worker
    processes, their work dirs)``."""
    home = _spark_home()
    tmp = tmp_path_factory.mktemp("standalone")
    port, ui = _free_port(), _free_port()
    master_cmd = [str(home / "bin" / "spark-class"), "org.apache.spark.deploy.master.Master"]
    master_cmd += ["--host", LOOPBACK, "--port", str(port), "--webui-port", str(ui)]
    url = f"spark://{LOOPBACK}:{port}"
    with _started(master_cmd, tmp / "master.log") as master, ExitStack() as stack:
        _wait_for(lambda: _port_open(port), "standalone master", master, tmp / "master.log")
        workers, works = [], []
        for n in range(WORKERS):
            log, work = tmp / f"worker-{n}.log", tmp / f"work-{n}"
            cmd = [str(home / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker", url, "--host", LOOPBACK]
            cmd += ["--cores", "1", "--memory", "1g", "--webui-port", str(_free_port()), "--work-dir", str(work)]
            worker = stack.enter_context(_started(cmd, log))
            registered = lambda log=log: "Successfully registered with master" in log.read_text(errors="replace")  # noqa: E731
            _wait_for(registered, f"standalone worker {n}", worker, log)
            workers.append(worker)
            works.append(work)
        yield url, workers, works


def _cluster_args(url: str) -> list[str]:
    confs = {
        "spark.driver.host": LOOPBACK,
        "spark.driver.bindAddress": LOOPBACK,
        "spark.executor.memory": "768m",
        "spark.executor.cores": "1",
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
    _same_outputs(out, reference)


def _executors(worker_pids: set[int]) -> list[int]:
    """PIDs of the executor JVMs the workers launched (their children running CoarseGrainedExecutorBackend)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid in worker_pids and b"CoarseGrainedExecutorBackend" in cmdline:
            found.append(int(entry.name))
    return found


def test_killing_the_executor_mid_job_gives_identical_output(standalone, inputs, reference, tmp_path: Path) -> None:
    url, workers, works = standalone
    _, args = inputs
    out = tmp_path / "profile"
    log = tmp_path / "job.log"
    job = _job([*args, *_cluster_args(url)], out, log)
    try:
        # the job's first staged table (the parsed inputs) is written; the rest of the job is ahead
        staged = lambda: any(out.glob(".ingest-*/*/_SUCCESS"))  # noqa: E731
        _wait_for(staged, "first stage of the job", job, log, JOB_TIMEOUT_S)
        executors = _executors({w.pid for w in workers})
        assert executors, "no executor process found under the workers"
        for pid in executors:
            os.kill(pid, signal.SIGKILL)
    except BaseException:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait(timeout=30)
        raise
    _finish(job, log)
    _same_outputs(out, reference)
    apps = [d for work in works for d in work.iterdir() if d.is_dir()]
    launched = max(len([e for e in app.iterdir() if e.is_dir()]) for app in apps)
    assert launched >= 2, "no worker launched a replacement executor"


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
    _same_outputs(out, reference)


#: lines no reader accepts, added to two exposition-text files so that the quarantine has rows from two tasks
BAD_LINES = (
    'kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",job="kafka",topic="t"} not-a-number 1793491260000\n',
    'kafka_server_brokertopicmetrics_bytesout_total{instance="kafka-2:7071",job="kafka",topic="t"} 12\n',
)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, list[str]]]:
    """A `poolplan sample` (6 brokers, 6 topics, 9 days) as ingest arguments per run: ``all`` (exposition text,
    query_range exports and log-dirs captures at once), ``earlier`` (the exports and the captures before the
    exposition text's first day) and ``later`` (the exposition text and the captures from its first day on)."""
    root = tmp_path_factory.mktemp("sample") / "s"
    cmd = [str(Path(sys.executable).with_name("poolplan")), "sample", "--seed", "7", "--brokers", "6", "--topics", "6"]
    subprocess.run([*cmd, "--days", "9", "--out", str(root)], check=True, capture_output=True, env=_env())
    prom = sorted((root / "metrics" / "prom").glob("*/*.prom"))
    for path, line in zip(prom[::len(prom) // 2], BAD_LINES):
        with path.open("a") as f:
            f.write(line)
    first = min(p.stem for p in prom).replace("-", "")  # YYYYMMDD
    captures = sorted((root / "kafka" / "log-dirs").glob("*.txt"))
    early = [str(c) for c in captures if c.stem.split("-")[-1][:8] < first]
    late = [str(c) for c in captures if c.stem.split("-")[-1][:8] >= first]
    assert early and late
    common = {"--broker-map": [str(root / "broker-map.toml")], "--cluster": ["c"], "--profile-horizon-days": ["30"]}
    query_range = [str(p) for p in sorted((root / "metrics" / "query_range").glob("*.json"))]
    return {
        "all": {"--prom": [str(p) for p in prom], "--query-range": query_range, "--log-dirs": early + late, **common},
        "earlier": {"--query-range": query_range, "--log-dirs": early, **common},
        "later": {"--prom": [str(p) for p in prom], "--log-dirs": late, **common},
    }


def _argv(options: dict[str, list[str]]) -> list[str]:
    return [x for k, values in options.items() for v in values for x in (k, v)]


def _local(spark, options: dict[str, list[str]], out: Path, history: Path | None = None) -> None:
    """What `poolplan ingest` with ``options`` writes, in the shared local-mode session."""
    from spark_jobs.ingest import IngestInputs, IngestParams, run
    from spark_jobs.ingest_inputs import load_broker_map

    inputs = IngestInputs(
        prom_text=tuple(options.get("--prom", ())), query_range=tuple(options.get("--query-range", ())),
        log_dirs=tuple(options.get("--log-dirs", ())), history=None if history is None else os.fspath(history),
    )
    params = IngestParams(options["--cluster"][0], load_broker_map(options["--broker-map"][0]),
                          int(options["--profile-horizon-days"][0]))
    run(spark, inputs, out, params)


def test_standalone_cluster_writes_the_local_outputs_of_a_sample(standalone, sample, spark, tmp_path: Path) -> None:
    url, _, _ = standalone
    _local(spark, sample["all"], tmp_path / "local")
    _finish(_job([*_argv(sample["all"]), *_cluster_args(url)], tmp_path / "cluster", tmp_path / "job.log"), tmp_path / "job.log")
    quality = json.loads((tmp_path / "local" / "quality.json").read_text())
    assert quality["sources"]["prom_text"]["quarantined_total"] == len(BAD_LINES)
    assert {"prom_text", "prom_range", "log_dirs"} <= set(quality["sources"])
    assert list((tmp_path / "local" / "history" / "cluster=c").iterdir())
    _same_outputs(tmp_path / "cluster", tmp_path / "local")


def test_standalone_cluster_adds_the_local_increment_to_a_history(standalone, sample, spark, tmp_path: Path) -> None:
    """The later days onto the history the earlier days left: each run's outputs and the history after it."""
    url, _, _ = standalone
    local, cluster = tmp_path / "local", tmp_path / "cluster"
    _local(spark, sample["earlier"], local / "earlier")
    _local(spark, sample["later"], local / "later", history=local / "earlier" / "history")
    for run, history in (("earlier", None), ("later", cluster / "earlier" / "history")):
        argv = [*_argv(sample[run]), *_cluster_args(url), *(["--history", str(history)] if history else [])]
        log = tmp_path / f"{run}.log"
        _finish(_job(argv, cluster / run, log), log)
    # the later runs' quality.json name their own history, outside OUT: by its absolute path
    _same_outputs(cluster, local, homes=(cluster, local))
    days = {d.name for d in (local / "earlier" / "history" / "cluster=c").iterdir()}
    first = min(Path(p).stem for p in sample["later"]["--prom"])
    assert f"dt={first}" in days, days  # the later run's first day went into the earlier run's history
