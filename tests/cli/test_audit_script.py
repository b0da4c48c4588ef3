"""conf/poolplan-audit.sh, the scheduled audit of docs/scheduled-audits.md, run as cron runs it: with stand-in Kafka
tools replaying real captures and this checkout's poolplan on PATH."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_snapshot_capture import _tools
from tests.pools.test_snapshot_build import KAFKA4_INVENTORY

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "conf" / "poolplan-audit.sh"

pytestmark = pytest.mark.slow  # five poolplan processes: about 20 s idle, minutes on a busy machine


def _run(tmp_path: Path, bin_dir: Path, **env: str) -> subprocess.CompletedProcess:
    path = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), os.environ["PATH"]])
    base = {**os.environ, "PATH": path, "PYTHONPATH": str(ROOT), "CLUSTER": "k4", "CONF": str(tmp_path / "conf"),
            "STATE": str(tmp_path / "state"), "TEXTFILE_DIR": str(tmp_path / "textfile"), "BOOTSTRAP": "b1:9092"}
    return subprocess.run(["sh", str(SCRIPT)], env={**base, **env}, capture_output=True, text=True, timeout=300,
                          check=False)


def test_two_scheduled_audits_and_a_failed_capture(tmp_path, data_dir) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "brokers.toml").write_text(KAFKA4_INVENTORY)
    (conf / "pools.toml").write_text('[[pool]]\nname = "all"\ntopics = [".*"]\nbrokers = [1, 2, 3, 4, 5, 6]\n')
    bin_dir = _tools(tmp_path, data_dir)
    first = _run(tmp_path, bin_dir)
    assert first.returncode == 0, first.stderr
    latest = tmp_path / "state" / "latest"
    run1 = latest.resolve()
    assert (run1 / "kafka" / "topics-describe.txt").exists() and not (run1 / "audit" / "drift.json").exists()
    findings = json.loads((run1 / "audit" / "findings.json").read_text())["counts"]["total"]
    assert findings > 0  # the captures hold cordoned brokers: findings, yet the job succeeded
    metrics = (tmp_path / "textfile" / "poolplan-k4.prom").read_text()
    assert 'poolplan_audit_failing{cluster="k4",fail_on="error"}' in metrics

    time.sleep(1.1)  # the next run's directory is named by the second
    second = _run(tmp_path, bin_dir)
    assert second.returncode == 0, second.stderr
    run2 = latest.resolve()
    assert run2 != run1 and run2.parent == run1.parent
    drift = json.loads((run2 / "audit" / "drift.json").read_text())
    assert drift["counts"] == {"appeared": 0, "cleared": 0, "persisted": findings}
    assert 'poolplan_audit_new_findings{cluster="k4"} 0' in (tmp_path / "textfile" / "poolplan-k4.prom").read_text()

    time.sleep(1.1)
    failed = _run(tmp_path, _tools(tmp_path, data_dir, fail="kafka-topics"))
    assert failed.returncode == 3 and "Timed out waiting for a node assignment" in failed.stderr
    assert latest.resolve() == run2  # the baseline stays the last audit that ran

    unset = _run(tmp_path, bin_dir, BOOTSTRAP="")
    assert unset.returncode != 0 and "BOOTSTRAP: expected the cluster's bootstrap servers" in unset.stderr
