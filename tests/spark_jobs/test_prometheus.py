"""`poolplan ingest --prometheus` against a real Prometheus server (Debian's package), backfilled with promtool.

The server holds exactly the counter samples of a `poolplan sample` (written as OpenMetrics and backfilled
with ``promtool tsdb create-blocks-from openmetrics``); the profile pulled from it must equal the one made
from the sample's files. Every process started here is stopped here.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.spark_jobs.test_ingest import RATE_COLUMNS

pytestmark = [
    pytest.mark.spark,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("prometheus") is None or shutil.which("promtool") is None, reason="needs Debian's prometheus package (.ci/run installs it)"),
]

SPEC = {"brokers": 6, "topics": 6, "days": 2}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from planner.cli import main

    out = tmp_path_factory.mktemp("sample") / "s"
    assert main(["sample", "--out", str(out), *[f"--{k}={v}" for k, v in SPEC.items()]]) == 0
    return out


@pytest.fixture(scope="module")
def server(sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from planner.sample.bundle import counters_openmetrics
    from planner.sample.cluster import SampleSpec

    root = tmp_path_factory.mktemp("prometheus")
    metrics = root / "counters.om"
    with metrics.open("w") as fh:
        fh.writelines(counters_openmetrics(SampleSpec(**SPEC)))
    data = root / "data"
    subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=72h", str(metrics), str(data)],
        check=True, capture_output=True, timeout=600,
    )
    config = root / "prometheus.yml"
    config.write_text("global: {}\nscrape_configs: []\n")
    port = _free_port()
    log = (root / "prometheus.log").open("w")
    proc = subprocess.Popen(
        [
            "prometheus", f"--config.file={config}", f"--storage.tsdb.path={data}", "--storage.tsdb.retention.time=10y",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"prometheus did not start: {(root / 'prometheus.log').read_text()[-2000:]}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _window() -> tuple[str, str]:
    from planner.sample.cluster import SampleSpec

    spec = SampleSpec(**SPEC)
    start = datetime.fromtimestamp(spec.end - spec.days * 86_400, tz=timezone.utc)
    end = datetime.fromtimestamp(spec.end + 60, tz=timezone.utc)  # the last scrape ends the last minute
    return start.isoformat(), end.isoformat()


def _profile(path: Path) -> dict[str, dict]:
    return {r["topic"]: r for r in json.loads((path / "topic_profile.json").read_text())}


def test_pulled_profile_equals_the_profile_from_files(run_cli, spark, sample: Path, server: str, tmp_path: Path) -> None:
    start, end = _window()
    common = ["--broker-map", sample / "broker-map.toml", "--cluster", "sample"]
    code, _, err = run_cli("ingest", "--prometheus", server, "--start", start, "--end", end, *common, "--out", tmp_path / "pulled")
    assert code == 0, err
    code, _, err = run_cli(
        "ingest", "--prom", f"{sample}/metrics/prom/*/*.prom", "--query-range", f"{sample}/metrics/query_range/*.json",
        *common, "--out", tmp_path / "files",
    )
    assert code == 0, err
    pulled, files = _profile(tmp_path / "pulled"), _profile(tmp_path / "files")
    assert sorted(pulled) == sorted(files)
    for topic, row in files.items():
        assert {c: pulled[topic][c] for c in RATE_COLUMNS} == {c: row[c] for c in RATE_COLUMNS}, topic
    quality = json.loads((tmp_path / "pulled" / "quality.json").read_text())
    assert quality["sources"]["prometheus"]["quarantined_total"] == 0
    # a re-run fetches only the day that was not whole (the range ends a minute into it), one request per counter
    code, _, err = run_cli("ingest", "--prometheus", server, "--start", start, "--end", end, *common, "--out", tmp_path / "pulled")
    assert code == 0, err
    again = json.loads((tmp_path / "pulled" / "quality.json").read_text())
    assert again["prometheus"]["days"] == [end[:10]] and again["prometheus"]["requests"] == 3
    assert {c: _profile(tmp_path / "pulled")[t][c] for t in files for c in RATE_COLUMNS} == {c: pulled[t][c] for t in files for c in RATE_COLUMNS}


def test_server_side_increase_is_read_as_windows(run_cli, spark, sample: Path, server: str, tmp_path: Path) -> None:
    start, end = _window()
    code, _, err = run_cli(
        "ingest", "--prometheus", server, "--prometheus-query", "increase", "--start", start, "--end", end,
        "--broker-map", sample / "broker-map.toml", "--cluster", "sample", "--out", tmp_path / "inc",
    )
    assert code == 0, err
    files = json.loads((sample / "truth.json").read_text())["topics"]
    pulled = _profile(tmp_path / "inc")
    assert sorted(pulled) == sorted(files)
    quality = json.loads((tmp_path / "inc" / "quality.json").read_text())
    assert quality["counter_resets"] == 0  # windows, never counters that reset
    for row in pulled.values():
        assert row["bytes_in_p50"] > 0


def test_a_query_that_matches_nothing_is_exit_2(run_cli, server: str, tmp_path: Path) -> None:
    code, _, err = run_cli("ingest", "--prometheus", server, "--start", "2020-01-01", "--end", "2020-01-02", "--out", tmp_path / "p")
    assert code == 2
    assert "has no series of Kafka's BytesInPerSec meter" in err and "Traceback" not in err
    # the closest names the server has, from any time when the range has none
    assert "kafka_server_brokertopicmetrics_bytesin_total" in err.split("closest names it has:")[1]
    assert len(err.strip().splitlines()) == 1


def test_an_unreachable_server_is_exit_3(run_cli, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    code, _, err = run_cli("ingest", "--prometheus", url, "--days", "1", "--retries", "1", "--out", tmp_path / "p")
    assert code == 3
    assert "did not answer" in err and "Traceback" not in err
    assert not (tmp_path / "p" / "topic_profile.json").exists()
