"""`poolplan audit` as an operator runs it: files written, exit codes, messages."""

from __future__ import annotations

import json

from pools.snapshot import save_snapshot
from tests.pools.audit.helpers import POLICY, healthy, snapshot, with_partition


def write_inputs(tmp_path, parts=None):
    save_snapshot(snapshot(parts), tmp_path / "snapshot.json")
    (tmp_path / "pools.toml").write_text(POLICY)
    return ["--snapshot", tmp_path / "snapshot.json", "--policy", tmp_path / "pools.toml", "--out", tmp_path / "audit"]


def test_clean_cluster_exits_0(tmp_path, run_cli):
    code, out, _ = run_cli("audit", *write_inputs(tmp_path))
    assert code == 0 and "0 findings (clean)" in out
    doc = json.loads((tmp_path / "audit" / "findings.json").read_text())
    assert doc["findings"] == [] and doc["counts"]["total"] == 0 and doc["version"] == 1
    assert "Clean: no findings" in (tmp_path / "audit" / "findings.md").read_text()


def test_findings_exit_1_and_are_byte_stable(tmp_path, run_cli):
    parts = healthy("a-x", (1, 2, 3)) + healthy("b-y", (4, 5, 6))
    parts = with_partition(parts, "a-x", 0, replicas=(1, 2, 6), isr=(1, 2, 6))
    argv = write_inputs(tmp_path, parts)
    code, out, _ = run_cli("audit", *argv)
    assert code == 1 and "2 findings (2 error)" in out
    first = (tmp_path / "audit" / "findings.json").read_bytes()
    assert run_cli("audit", *argv)[0] == 1
    assert (tmp_path / "audit" / "findings.json").read_bytes() == first
    doc = json.loads(first)
    assert [f["kind"] for f in doc["findings"]] == ["broker_mixed_pools", "replica_outside_pool"]
    assert set(doc["findings"][0]) == {"kind", "severity", "pool", "broker", "topic", "partition", "evidence", "fix"}
    md = (tmp_path / "audit" / "findings.md").read_text()
    assert "| `replica_outside_pool` | a | 6 | a-x-0 |" in md


def test_fail_on_decides_the_exit_code(tmp_path, run_cli):
    parts = with_partition(healthy("a-x", (1, 2, 3)) + healthy("b-y", (4, 5, 6)), "b-y", 0, leader=5)
    argv = write_inputs(tmp_path, parts)
    assert run_cli("audit", *argv)[0] == 0
    assert run_cli("audit", *argv, "--fail-on", "info")[0] == 1


def test_bad_input_exits_2_naming_the_file(tmp_path, run_cli):
    argv = write_inputs(tmp_path)
    (tmp_path / "snapshot.json").write_text('{"cluster": "x", "brokers": 3}')
    code, _, err = run_cli("audit", *argv)
    assert code == 2 and "snapshot.json: brokers: expected a JSON array" in err
    code, _, err = run_cli("audit", *argv, "--fail-on", "loud")
    assert code == 2 and "loud" in err


def test_missing_profile_dir_is_reported_not_fatal(tmp_path, run_cli):
    code, out, _ = run_cli("audit", *write_inputs(tmp_path), "--profile", tmp_path / "nope")
    assert code == 0 and "traffic and forecast checks skipped" in out


def test_profile_and_consumer_groups_feed_the_traffic_checks(tmp_path, run_cli, data_dir):
    from pools.profile import save_profile
    from tests.pools.audit.helpers import profile_row

    argv = write_inputs(tmp_path)
    # a-x brings 80 MB/s into each of brokers 1-3 (capacity 100 MB/s, headroom 70 %): only traffic shows it
    save_profile(tmp_path / "profile", [profile_row("a-x", 80e6, 0.0), profile_row("b-y", 1e6, 0.0)])
    groups = data_dir / "kafka-formats" / "kafka-consumer-groups-describe.txt"
    assert run_cli("audit", *argv)[0] == 0
    code, out, err = run_cli("audit", *argv, "--profile", tmp_path / "profile", "--consumer-groups", groups)
    assert code == 1, err
    doc = json.loads((tmp_path / "audit" / "findings.json").read_text())
    assert {(f["broker"], f["evidence"]["dimension"], f["evidence"]["basis"]) for f in doc["findings"]} >= {
        (1, "nw_in", "now"), (2, "nw_in", "now"), (3, "nw_in", "now"), (None, "nw_in", "now")}
    code, _, err = run_cli("audit", *argv, "--consumer-groups", tmp_path / "none.txt")
    assert code == 2 and "none.txt: no such file" in err
