"""End to end: `poolplan audit --metrics` into a textfile directory, Debian's node exporter serving it, the real
Prometheus scraping it and evaluating the shipped rules (conf/prometheus/poolplan-rules.yml).

A planted drift (a replica of pool a's topic on pool b's broker 6) must fire PoolplanIsolationDrift, seen through
``/api/v1/alerts``, and the next, clean audit must clear it. Both servers listen on 127.0.0.1 only, run under
``timeout`` (they stop by themselves even if this test dies) and are stopped here.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pools.snapshot import save_snapshot
from tests.cli.test_audit import write_inputs
from tests.cli.test_audit_metrics import DRIFTED
from tests.pools.audit.helpers import snapshot

pytestmark = [
    pytest.mark.slow,
    pytest.mark.xdist_group("prometheus"),
    pytest.mark.skipif(any(shutil.which(t) is None for t in ("prometheus", "promtool", "prometheus-node-exporter")),
                       reason="needs Debian's prometheus and prometheus-node-exporter (.ci/run installs them)"),
]

RULES = Path(__file__).resolve().parents[2] / "conf" / "prometheus" / "poolplan-rules.yml"
#: The longest either server may live: `timeout` ends it even if the test never gets to.
LIFETIME_S = 300
WAIT_S = 90


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


def _start(argv: list[str], ready: str, log: Path) -> subprocess.Popen:
    proc = subprocess.Popen(["timeout", str(LIFETIME_S), *argv], stdout=log.open("a"), stderr=subprocess.STDOUT)
    _wait(lambda: _ok(ready), f"{argv[0]} to start", proc, log)
    return proc


def _ok(url: str) -> bool:
    try:
        _get(url)
        return True
    except OSError:
        return False


def _wait(condition: Callable[[], bool], what: str, proc: subprocess.Popen | None = None,
          log: Path | None = None) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if (proc is not None and proc.poll() is not None) or time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}: {log.read_text()[-2000:] if log else ''}")
        time.sleep(0.5)


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()  # timeout passes SIGTERM on to the server
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A textfile directory, a node exporter reading it and a Prometheus scraping that with the shipped rules."""
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    exporter_port, prometheus_port = _free_port(), _free_port()
    exporter = _start(["prometheus-node-exporter", "--collector.disable-defaults", "--collector.textfile",
                       f"--collector.textfile.directory={textfiles}",
                       f"--web.listen-address=127.0.0.1:{exporter_port}"],
                      f"http://127.0.0.1:{exporter_port}/metrics", tmp_path / "node-exporter.log")
    try:
        shutil.copy(RULES, tmp_path / RULES.name)
        (tmp_path / "prometheus.yml").write_text(json.dumps({  # JSON is YAML
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [RULES.name],
            "scrape_configs": [{"job_name": "node", "static_configs": [{"targets": [f"127.0.0.1:{exporter_port}"]}]}],
        }))
        prometheus = _start(["prometheus", f"--config.file={tmp_path / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp_path / 'data'}",
                             f"--web.listen-address=127.0.0.1:{prometheus_port}"],
                            f"http://127.0.0.1:{prometheus_port}/-/ready", tmp_path / "prometheus.log")
        try:
            yield textfiles, f"http://127.0.0.1:{prometheus_port}"
        finally:
            _stop(prometheus)
    finally:
        _stop(exporter)


def _alerts(base: str, name: str) -> list[dict]:
    doc = json.loads(_get(f"{base}/api/v1/alerts"))
    return [a for a in doc["data"]["alerts"] if a["labels"]["alertname"] == name]


def _query(base: str, expr: str) -> list[dict]:
    return json.loads(_get(f"{base}/api/v1/query?query={urllib.parse.quote(expr)}"))["data"]["result"]


def test_a_planted_drift_fires_the_isolation_alert_and_a_clean_audit_clears_it(tmp_path, run_cli, stack) -> None:
    textfiles, base = stack
    metrics = textfiles / "poolplan.prom"
    argv = write_inputs(tmp_path)
    assert run_cli("audit", *argv, "--metrics", metrics)[0] == 0  # the clean cluster first
    save_snapshot(snapshot(DRIFTED), tmp_path / "snapshot.json")  # a replica of a-x-0 drifts onto pool b's broker
    assert run_cli("audit", *argv, "--since", tmp_path / "audit", "--metrics", metrics)[0] == 1
    assert subprocess.run(["promtool", "check", "metrics"], input=metrics.read_text(), text=True,
                          capture_output=True, timeout=60).returncode == 0

    _wait(lambda: any(a["state"] == "firing" for a in _alerts(base, "PoolplanIsolationDrift")), "the drift alert")
    [alert] = _alerts(base, "PoolplanIsolationDrift")
    assert alert["labels"] == {"alertname": "PoolplanIsolationDrift", "cluster": "test", "pool": "a",
                               "severity": "warning", "instance": alert["labels"]["instance"], "job": "node"}
    assert alert["annotations"]["summary"] == "test: 1 partition(s) of pool a have replicas outside it"
    [new] = _query(base, "poolplan_audit_new_findings")
    assert new["value"][1] == "2"  # broker_mixed_pools and replica_outside_pool appeared
    [errors] = _query(base, "node_textfile_scrape_error")
    assert errors["value"][1] == "0"

    save_snapshot(snapshot(), tmp_path / "snapshot.json")  # repaired
    assert run_cli("audit", *argv, "--since", tmp_path / "audit", "--metrics", metrics)[0] == 0
    _wait(lambda: _alerts(base, "PoolplanIsolationDrift") == [], "the drift alert to clear")
    [cleared] = _query(base, "poolplan_audit_cleared_findings")
    assert cleared["value"][1] == "2"
    # the helpers' capture is from 2026-11-01: more than a day old, so the stale-audit alert fires meanwhile
    assert any(a["state"] == "firing" for a in _alerts(base, "PoolplanAuditStale"))
