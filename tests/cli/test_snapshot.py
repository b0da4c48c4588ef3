"""`poolplan snapshot`: from the example files and from a sample directory; errors exit 2 naming the file."""

from __future__ import annotations

import json

import pytest

from pools.snapshot import load_snapshot

INVENTORY = """[defaults]
disk_bytes = 4_000_000_000_000
nw_in_Bps = 125_000_000
nw_out_Bps = 125_000_000

[[broker]]
id = 100
rack = "r1"

[[broker]]
id = 101
rack = "r2"
"""


@pytest.fixture()
def inventory(tmp_path):
    path = tmp_path / "brokers.toml"
    path.write_text(INVENTORY)
    return path


def test_from_example_files(run_cli, data_dir, inventory, tmp_path):
    d = data_dir / "kafka-formats"
    out = tmp_path / "run" / "snapshot.json"
    code, stdout, _ = run_cli("snapshot", "--describe", d / "kafka-topics-describe-3.8.txt",
                              "--log-dirs", d / "kafka-log-dirs-describe.txt", "--inventory", inventory,
                              "--cluster", "prod", "--taken-at", "2026-11-01T12:00:00Z", "--out", out)
    assert code == 0
    assert "2 brokers, 2 topics, 5 partitions, 1 log dir error;" in stdout
    snap = load_snapshot(out)
    assert snap.cluster == "prod" and snap.taken_at == "2026-11-01T12:00:00Z"


def test_cruise_control_capacity_as_inventory(run_cli, data_dir, tmp_path):
    d = data_dir / "kafka-formats"
    out = tmp_path / "snapshot.json"
    code, _, _ = run_cli("snapshot", "--describe", d / "kafka-topics-describe-3.8.txt",
                         "--inventory", d / "cruise-control-capacity.json", "--out", out)
    assert code == 0
    assert load_snapshot(out).broker_ids == (7, 100, 101, 102, 103)


def test_log_dirs_directory_uses_the_latest_and_its_time(run_cli, tmp_path):
    sample = tmp_path / "sample"
    assert run_cli("sample", "--out", sample, "--brokers", 6, "--topics", 6, "--days", 2, "--step", 60)[0] == 0
    out = tmp_path / "snapshot.json"
    code, _, _ = run_cli("snapshot", "--describe", sample / "kafka" / "topics-describe.txt",
                         "--log-dirs", sample / "kafka" / "log-dirs", "--inventory", sample / "brokers.toml",
                         "--cluster", "sample", "--out", out)
    assert code == 0
    snap = load_snapshot(out)
    assert snap.taken_at == "2026-11-02T00:00:00Z"
    truth = json.loads((sample / "truth.json").read_text())
    errors = [(p["broker"], p["log_dir"]) for p in truth["planted"] if p["kind"] == "log_dir_error"]
    assert [(e.broker, e.log_dir) for e in snap.log_dir_errors] == errors  # only the final capture has it


def test_missing_and_malformed_files_exit_2(run_cli, data_dir, inventory, tmp_path):
    code, _, err = run_cli("snapshot", "--describe", tmp_path / "nope.txt", "--inventory", inventory,
                           "--out", tmp_path / "s.json")
    assert code == 2 and "nope.txt: no such file" in err
    bad = tmp_path / "describe.txt"
    bad.write_text("\tTopic: t\tPartition: 0\tLeader: one\tReplicas: 1\tIsr: 1\n")
    code, _, err = run_cli("snapshot", "--describe", bad, "--inventory", inventory, "--out", tmp_path / "s.json")
    assert code == 2 and "describe.txt:1: Leader: expected a broker id or 'none', got 'one'" in err
    empty = tmp_path / "dirs"
    empty.mkdir()
    code, _, err = run_cli("snapshot", "--describe", data_dir / "kafka-formats" / "kafka-topics-describe-3.8.txt",
                           "--log-dirs", empty, "--inventory", inventory, "--out", tmp_path / "s.json")
    assert code == 2 and "directory has no files" in err
    assert not (tmp_path / "s.json").exists()


def _log_dirs(doc_edit, data_dir, tmp_path):
    """The example log-dirs capture with its JSON line edited by ``doc_edit``."""
    lines = (data_dir / "kafka-formats" / "kafka-log-dirs-describe.txt").read_text().splitlines()
    doc = json.loads(lines[2])
    doc_edit(doc)
    path = tmp_path / "log-dirs.txt"
    path.write_text("\n".join(lines[:2] + [json.dumps(doc)]) + "\n")
    return path


def _twice(doc):
    partitions = doc["brokers"][0]["logDirs"][0]["partitions"]
    partitions.append({**partitions[0], "size": 1})  # orders-0 again on broker 100: one byte instead of 41 GB


def _broker_twice(doc):
    doc["brokers"].append(doc["brokers"][0])


@pytest.mark.parametrize(("edit", "message"), [
    (_twice, "log-dirs.txt:3: $.brokers[0].logDirs[0].partitions[3].partition: orders-0 is listed twice for broker 100"
             " (first at $.brokers[0].logDirs[0].partitions[0])"),
    (_broker_twice, "log-dirs.txt:3: $.brokers[3].broker: broker 100 is listed twice (first at $.brokers[0])"),
    (lambda d: d["brokers"][0]["logDirs"][0]["partitions"][0].update(partition="bad topic!-0"),
     "log-dirs.txt:3: $.brokers[0].logDirs[0].partitions[0].partition: expected a legal topic name: Topic name is "
     "invalid: 'bad topic!' contains one or more characters"),
])
def test_a_log_dirs_capture_that_contradicts_itself_exits_2(run_cli, data_dir, inventory, tmp_path, edit, message):
    log_dirs = _log_dirs(edit, data_dir, tmp_path)
    code, out, err = run_cli("snapshot", "--describe", data_dir / "kafka-formats" / "kafka-topics-describe-3.8.txt",
                             "--log-dirs", log_dirs, "--inventory", inventory, "--out", tmp_path / "s.json")
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(lines) == 1 and f"{tmp_path}/{message}" in lines[0], err
    assert not (tmp_path / "s.json").exists()


@pytest.mark.parametrize("describe", ["", "  \n\t\n"])
def test_an_empty_describe_beside_a_log_dirs_capture_with_replicas_exits_2(run_cli, data_dir, inventory, tmp_path,
                                                                           describe):
    path = tmp_path / "describe.txt"
    path.write_text(describe)
    code, _, err = run_cli("snapshot", "--describe", path, "--log-dirs",
                           data_dir / "kafka-formats" / "kafka-log-dirs-describe.txt", "--inventory", inventory,
                           "--out", tmp_path / "s.json")
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(lines) == 1 and lines[0].startswith(f"error: {path}: expected kafka-topics --describe "
                                                                 "output of the cluster whose log dirs"), err
    assert "kafka-log-dirs-describe.txt:3 lists" in lines[0] and "got no topic at all" in lines[0]
    assert not (tmp_path / "s.json").exists()
    # an empty cluster (no log-dirs replicas either) is a snapshot of no topics
    code, _, err = run_cli("snapshot", "--describe", path, "--inventory", inventory, "--out", tmp_path / "s.json")
    assert code == 0, err


def test_log_dirs_replicas_the_describe_does_not_have_are_a_warning_naming_the_line(run_cli, data_dir, inventory,
                                                                                   tmp_path):
    def extra(doc):
        doc["brokers"][0]["logDirs"][0]["partitions"].append(
            {"partition": "created.later-0", "size": 5, "offsetLag": 0, "isFuture": False})

    code, _, err = run_cli("snapshot", "--describe", data_dir / "kafka-formats" / "kafka-topics-describe-3.8.txt",
                           "--log-dirs", _log_dirs(extra, data_dir, tmp_path), "--inventory", inventory,
                           "--out", tmp_path / "s.json")
    assert code == 0, err
    # the example capture also lists my-topic-with-dashes-12, which its describe does not have
    assert "warning: " in err and "log-dirs.txt:3: 2 replica(s) of partitions" in err
    assert "e.g. created.later-0 on broker 100" in err
