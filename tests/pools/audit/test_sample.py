"""On the sample cluster (with deliberately misplaced tenants) the audit lists exactly the planted problems."""

from __future__ import annotations

import json

import pytest


def _key(kind, topic=None, partition=None, broker=None, pool=None, log_dir=None):
    return (kind, topic, partition, broker, pool, log_dir)


def planted(truth):
    return sorted(_key(p["kind"], p.get("topic"), p.get("partition"), p.get("broker"), p.get("pool"), p.get("log_dir"))
                  for p in truth["planted"])


def found(doc, truth):
    """Findings keyed like the truth: ``pool`` only where the truth names one for that kind."""
    with_pool = {p["kind"] for p in truth["planted"] if "pool" in p}
    return sorted(_key(f["kind"], f["topic"], f["partition"], f["broker"], f["pool"] if f["kind"] in with_pool else None,
                       f["evidence"].get("log_dir") if f["kind"] == "log_dir_error" else None)
                  for f in doc["findings"])


@pytest.mark.parametrize("args", [("--seed", "0"), ("--seed", "3"), ("--seed", "11", "--brokers", "14", "--topics", "45")])
def test_audit_lists_exactly_the_planted_problems(tmp_path, run_cli, args):
    sample = tmp_path / "sample"
    assert run_cli("sample", "--out", sample, "--days", "2", "--step", "900", *args)[0] == 0
    code, _, err = run_cli("snapshot", "--describe", sample / "kafka" / "topics-describe.txt",
                           "--log-dirs", sample / "kafka" / "log-dirs", "--inventory", sample / "brokers.toml",
                           "--cluster", "sample", "--out", tmp_path / "snapshot.json")
    assert code == 0, err
    argv = ["audit", "--snapshot", tmp_path / "snapshot.json", "--policy", sample / "pools.toml"]
    code, _, err = run_cli(*argv, "--out", tmp_path / "a1")
    assert code == 1, err
    truth = json.loads((sample / "truth.json").read_text())
    doc = json.loads((tmp_path / "a1" / "findings.json").read_text())
    assert found(doc, truth) == planted(truth)
    assert run_cli(*argv, "--out", tmp_path / "a2")[0] == 1
    assert (tmp_path / "a1" / "findings.json").read_bytes() == (tmp_path / "a2" / "findings.json").read_bytes()
    assert (tmp_path / "a1" / "findings.md").read_bytes() == (tmp_path / "a2" / "findings.md").read_bytes()
