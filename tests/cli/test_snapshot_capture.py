"""`poolplan snapshot --bootstrap-server`: capture a running cluster with Kafka's tools, here stand-in scripts that
replay real captures (tests/data/kafka-formats, Kafka 4.3) and record how they were called."""

from __future__ import annotations

import json
import os
import stat
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.pools.test_snapshot_build import KAFKA4_INVENTORY

#: tool → the capture it replays (None: the stand-in prints what a version without the option prints)
CAPTURES = {
    "kafka-topics": "kafka-topics-describe-4.3.txt",
    "kafka-log-dirs": "kafka-log-dirs-describe-4.3.txt",
    "kafka-configs": "kafka-configs-describe-brokers-4.3.txt",
    "kafka-reassign-partitions": "kafka-reassign-partitions-list-4.3.txt",
}
#: What Kafka 2.4's kafka-reassign-partitions.sh prints for --list (joptsimple), on standard error, exit 1.
NO_LIST = "Exception in thread \"main\" joptsimple.UnrecognizedOptionException: list is not a recognized option"


def _tools(tmp_path: Path, data_dir: Path, *, suffix: str = ".sh", fail: str | None = None,
           old_reassign: bool = False, slow: str | None = None) -> Path:
    """Stand-in tools in ``tmp_path/bin``: each appends its arguments to ``calls.txt`` and prints its capture."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool, capture in CAPTURES.items():
        body = f"cat '{data_dir / 'kafka-formats' / capture}'"
        if tool == fail:
            body = ("echo '[2026-12-07 10:00:00,000] WARN Connection to node -1 (b1/10.0.0.1:9092) could not be "
                    "established.' >&2\necho 'Error while executing topic command : Timed out waiting for a node "
                    "assignment. Call: listTopics' >&2\nexit 1")
        if tool == "kafka-reassign-partitions" and old_reassign:
            body = f"echo '{NO_LIST}' >&2\nexit 1"
        if tool == slow:
            body = "sleep 30"
        script = bin_dir / f"{tool}{suffix}"
        script.write_text(f"#!/bin/sh\necho \"{tool} $*\" >> '{tmp_path / 'calls.txt'}'\n{body}\n")
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return bin_dir


def _argv(tmp_path: Path, *extra: str) -> list:
    (tmp_path / "brokers.toml").write_text(KAFKA4_INVENTORY)
    return ["snapshot", "--bootstrap-server", "b1:9092,b2:9092", "--inventory", tmp_path / "brokers.toml",
            "--cluster", "k4", "--out", tmp_path / "run" / "snapshot.json", *extra]


def test_a_capture_keeps_each_tools_output_and_builds_the_snapshot_as_from_files(tmp_path, run_cli, data_dir):
    bin_dir = _tools(tmp_path, data_dir)
    (tmp_path / "client.properties").write_text("security.protocol=SSL\n")
    before = datetime.now(timezone.utc).replace(microsecond=0)
    code, out, err = run_cli(*_argv(tmp_path, "--kafka-bin", bin_dir, "--command-config",
                                    tmp_path / "client.properties"))
    assert code == 0, err
    kafka = tmp_path / "run" / "kafka"
    calls = (tmp_path / "calls.txt").read_text().splitlines()
    common = f"--bootstrap-server b1:9092,b2:9092 --command-config {tmp_path / 'client.properties'}"
    assert calls == [f"kafka-topics {common} --describe", f"kafka-log-dirs {common} --describe",
                     f"kafka-configs {common} --describe --entity-type brokers --all",
                     f"kafka-reassign-partitions {common} --list"]
    [log_dirs] = (kafka / "log-dirs").iterdir()
    for kept, capture in [(kafka / "topics-describe.txt", "kafka-topics"), (log_dirs, "kafka-log-dirs"),
                          (kafka / "broker-configs.txt", "kafka-configs"),
                          (kafka / "reassignments.txt", "kafka-reassign-partitions")]:
        assert kept.read_bytes() == (data_dir / "kafka-formats" / CAPTURES[capture]).read_bytes()
    snap = json.loads((tmp_path / "run" / "snapshot.json").read_text())
    taken = datetime.fromisoformat(snap["taken_at"].replace("Z", "+00:00"))
    assert before <= taken <= datetime.now(timezone.utc) and log_dirs.name == f"log-dirs-{taken:%Y%m%dT%H%M%SZ}.txt"
    assert f"raw output: {kafka}" in out
    # the capture replays: the same snapshot, byte for byte, from the kept files
    replay = tmp_path / "replay.json"
    assert run_cli("snapshot", "--describe", kafka / "topics-describe.txt", "--log-dirs", kafka / "log-dirs",
                   "--broker-configs", kafka / "broker-configs.txt", "--inventory", tmp_path / "brokers.toml",
                   "--cluster", "k4", "--out", replay)[0] == 0
    assert replay.read_bytes() == (tmp_path / "run" / "snapshot.json").read_bytes()
    cordoned = {b["id"]: (b.get("cordoned"), b.get("cordoned_log_dirs")) for b in snap["brokers"]}
    assert cordoned[3][0] is True and cordoned[1][1] == ["/data/d2"]  # kafka-configs' cordons were read


def test_tools_on_path_without_the_sh_suffix_and_a_version_without_list(tmp_path, run_cli, data_dir, monkeypatch):
    bin_dir = _tools(tmp_path, data_dir, suffix="", old_reassign=True)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    code, _, err = run_cli(*_argv(tmp_path))
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "run" / "kafka").iterdir()) == [
        "broker-configs.txt", "log-dirs", "topics-describe.txt"]  # no --list in this version: nothing to keep


def test_a_failing_tool_is_exit_3_with_its_own_last_line_and_writes_nothing(tmp_path, run_cli, data_dir):
    bin_dir = _tools(tmp_path, data_dir, fail="kafka-log-dirs")
    code, _, err = run_cli(*_argv(tmp_path, "--kafka-bin", bin_dir))
    assert code == 3
    assert err.strip().splitlines() == ["job failed: kafka-log-dirs.sh --describe failed (exit 1): Error while "
                                        "executing topic command : Timed out waiting for a node assignment. Call: "
                                        "listTopics"]
    assert not (tmp_path / "run").exists() or sorted((tmp_path / "run").iterdir()) == []


def test_an_earlier_capture_survives_a_failed_one(tmp_path, run_cli, data_dir):
    assert run_cli(*_argv(tmp_path, "--kafka-bin", _tools(tmp_path, data_dir)))[0] == 0
    kept = {p: p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file()}
    bin_dir = _tools(tmp_path, data_dir, fail="kafka-configs")
    assert run_cli(*_argv(tmp_path, "--kafka-bin", bin_dir))[0] == 3
    assert {p: p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file()} == kept


def test_a_tool_that_hangs_is_stopped_at_the_timeout(tmp_path, run_cli, data_dir):
    bin_dir = _tools(tmp_path, data_dir, slow="kafka-topics")
    started = time.monotonic()
    code, _, err = run_cli(*_argv(tmp_path, "--kafka-bin", bin_dir, "--tool-timeout", "1"))
    assert code == 3 and "kafka-topics.sh --describe did not finish within 1 s" in err
    assert time.monotonic() - started < 20


def test_a_kafka_directory_of_the_users_is_never_replaced(tmp_path, run_cli, data_dir):
    """``--out ~/snapshot.json`` beside ``~/kafka`` (a Kafka installation, say): refused, nothing touched."""
    theirs = tmp_path / "run" / "kafka"
    (theirs / "bin").mkdir(parents=True)
    (theirs / "bin" / "kafka-server-start.sh").write_text("#!/bin/sh\n")
    code, _, err = run_cli(*_argv(tmp_path, "--kafka-bin", _tools(tmp_path, data_dir)))
    assert code == 2 and "kafka: exists and is not an earlier capture" in err
    assert [p.name for p in (tmp_path / "run").rglob("*")] == ["kafka", "bin", "kafka-server-start.sh"]
    assert not (tmp_path / "calls.txt").exists()


@pytest.mark.parametrize("case", ["no-tool", "command-config", "bootstrap", "both-ways", "kafka-bin-alone",
                                  "neither"])
def test_bad_capture_input_is_exit_2_in_one_line_before_any_tool_runs(tmp_path, run_cli, data_dir, case):
    bin_dir = _tools(tmp_path, data_dir)
    argv = _argv(tmp_path, "--kafka-bin", bin_dir)
    if case == "no-tool":
        (bin_dir / "kafka-configs.sh").unlink()
    elif case == "command-config":
        argv += ["--command-config", tmp_path / "missing.properties"]
    elif case == "bootstrap":
        argv[2] = "b1"
    elif case == "both-ways":
        argv += ["--describe", data_dir / "kafka-formats" / CAPTURES["kafka-topics"]]
    elif case in ("kafka-bin-alone", "neither"):
        argv = [a for a in argv if a not in ("--bootstrap-server", "b1:9092,b2:9092")]
        if case == "neither":
            argv = argv[:-2]
    code, _, err = run_cli(*argv)
    expected = {"no-tool": f"--kafka-bin: {bin_dir}: no executable kafka-configs.sh or kafka-configs",
                "command-config": "--command-config: ", "bootstrap": "--bootstrap-server: expected HOST:PORT",
                "both-ways": "--describe: not with --bootstrap-server", "kafka-bin-alone": "--kafka-bin: only with",
                "neither": "--describe: expected kafka-topics.sh --describe output"}[case]
    assert code == 2 and len(err.strip().splitlines()) == 1 and expected in err, err
    assert not (tmp_path / "calls.txt").exists() and not (tmp_path / "run").exists()


def test_one_run_captures_audits_and_writes_the_metrics(tmp_path, run_cli, data_dir, monkeypatch):
    """conf/audit.toml's shape: `poolplan run` with [snapshot] bootstrap-server and [audit] metrics, tools on PATH."""
    monkeypatch.setenv("PATH", f"{_tools(tmp_path, data_dir)}{os.pathsep}{os.environ['PATH']}")
    (tmp_path / "brokers.toml").write_text(KAFKA4_INVENTORY)
    (tmp_path / "pools.toml").write_text('[defaults]\nheadroom = 0.8\n\n[[pool]]\nname = "all"\ntopics = [".*"]\n'
                                         'brokers = [1, 2, 3, 4, 5, 6]\n')
    shipped = (Path(__file__).resolve().parents[2] / "conf" / "audit.toml").read_text()
    config = tmp_path / "audit.toml"
    config.write_text(shipped.replace('"localhost:9092"', '"b1:9092"').replace('"prod"', '"k4"').replace(
        "/var/lib/prometheus/node-exporter/poolplan.prom", str(tmp_path / "textfile" / "poolplan.prom")))
    code, _, err = run_cli("run", "--config", config, "--out", tmp_path / "run")
    assert code in (0, 1), err
    run = tmp_path / "run"
    assert (run / "kafka" / "topics-describe.txt").read_bytes() == \
        (data_dir / "kafka-formats" / CAPTURES["kafka-topics"]).read_bytes()
    findings = json.loads((run / "audit" / "findings.json").read_text())
    assert findings["cluster"] == "k4" and findings["taken_at"] == json.loads((run / "snapshot.json").read_text())[
        "taken_at"]
    text = (tmp_path / "textfile" / "poolplan.prom").read_text()
    assert f'poolplan_audit_failing{{cluster="k4",fail_on="error"}} {code}' in text
    stages = json.loads((run / "run.json").read_text())["stages"]
    assert [s["stage"] for s in stages] == ["snapshot", "audit"]
