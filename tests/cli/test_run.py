"""`poolplan run` without Spark: exit code is the most severe stage's, config errors stop it before any stage."""

from __future__ import annotations

import json
from pathlib import Path

_CONFIG = """
[run]
stages = ["sample", "snapshot", "audit", "report"]
[sample]
seed = 3
brokers = 6
topics = 6
days = 2
[snapshot]
describe = "{sample}/kafka/topics-describe.txt"
log-dirs = "{sample}/kafka/log-dirs"
inventory = "{sample}/brokers.toml"
cluster = "sample"
[audit]
policy = "{sample}/pools.toml"
fail-on = "%s"
[report]
policy = "{sample}/pools.toml"
"""


def test_audit_findings_make_the_run_exit_1_and_run_json_records_each_stage(tmp_path: Path, run_cli) -> None:
    config = tmp_path / "q.toml"
    config.write_text(_CONFIG % "error")
    code, _, err = run_cli("run", "--config", config, "--out", tmp_path / "run")
    assert code == 1, err
    assert "exit 1: audit" in err
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert [(s["stage"], s["exit_code"]) for s in record["stages"]] == [
        ("sample", 0), ("snapshot", 0), ("audit", 1), ("report", 0)]
    assert record["stages"][2]["options"] == {"policy": f"{tmp_path / 'run'}/sample/pools.toml", "fail-on": "error"}
    config.write_text((_CONFIG % "error").replace('"audit", ', ""))
    code, _, err = run_cli("run", "--config", config, "--out", tmp_path / "run", "--force")
    assert code == 0, err
    assert not (tmp_path / "run" / "audit").exists()


def test_a_typo_in_a_later_stage_stops_the_run_before_its_first_stage(tmp_path: Path, run_cli) -> None:
    config = tmp_path / "q.toml"
    config.write_text(_CONFIG.replace('fail-on = "%s"', 'fail-onn = "error"'))
    code, _, err = run_cli("run", "--config", config, "--out", tmp_path / "run")
    assert code == 2 and "Traceback" not in err
    assert "audit.fail-onn: unknown option of poolplan audit" in err
    assert "sample" not in err.split("error:")[0]  # no stage started
    assert not (tmp_path / "run").exists() and [p.name for p in tmp_path.iterdir()] == ["q.toml"]
