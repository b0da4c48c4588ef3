"""Kafka 4.x inputs at the command line: bad broker configs and versions are one-line bad input (exit 2) and leave
nothing behind; the --kafka-4 sample is byte-identical run to run."""

from __future__ import annotations

import hashlib

KAFKA4 = "kafka-formats"


def _tree(root):
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_malformed_broker_configs_name_the_file_and_line(tmp_path, run_cli, data_dir):
    d = data_dir / KAFKA4
    bad = tmp_path / "configs.txt"
    bad.write_text("Dynamic configs for broker 1 are:\n  cordoned.log.dirs=/data/d2\n")
    code, _, err = run_cli("snapshot", "--describe", d / "kafka-topics-describe-4.3.txt",
                           "--log-dirs", d / "kafka-log-dirs-describe-4.3.txt", "--inventory", data_dir.parent.parent
                           / "conf" / "brokers.toml", "--broker-configs", bad, "--out", tmp_path / "s.json")
    assert code == 2 and not (tmp_path / "s.json").exists()
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and f"{bad}:2: expected 'Dynamic configs for broker <id> are:'" in lines[0]
    assert "Traceback" not in err


def test_a_malformed_kafka_version_is_bad_input(tmp_path, run_cli):
    code, _, err = run_cli("emit", "--plan", tmp_path / "none.json", "--snapshot", tmp_path / "none.json",
                           "--out", tmp_path / "bundle", "--kafka-version", "4.x")
    assert code == 2 and "--kafka-version: expected a Kafka version such as 4.3 or 4.3.1, got '4.x'" in err
    assert not (tmp_path / "bundle").exists()


def test_the_kafka_4_sample_is_deterministic(tmp_path, run_cli):
    for name in ("a", "b"):
        assert run_cli("sample", "--out", tmp_path / name, "--days", "2", "--step", "900", "--kafka-4")[0] == 0
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")
