"""The run config: stage order, option tables turned into argv, placeholders, errors by key."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.runconfig import STAGES, load_run_config, stage_argv
from pools.errors import InputError


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "q.toml"
    path.write_text(text)
    return path


def test_stage_tables_become_options(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        """
[run]
out = "out/q"
stages = ["snapshot", "plan", "report"]
[snapshot]
describe = "{sample}/kafka/topics-describe.txt"
[plan]
policy = "{config_dir}/pools.toml"
time-limit = 60
exact = true
quiet = false
[ingest]
prom = ["a/*.prom", "b/*.prom"]
""",
    )
    cfg = load_run_config(path)
    assert cfg.stages == ("snapshot", "plan", "report")
    run = tmp_path / "run"
    assert stage_argv(cfg, "plan", run) == [
        "plan", "--policy", f"{tmp_path.resolve()}/pools.toml", "--time-limit", "60", "--exact",
        "--snapshot", f"{run}/snapshot.json", "--profile", f"{run}/profile", "--out", f"{run}/plan",
    ]
    assert stage_argv(cfg, "snapshot", run)[:3] == ["snapshot", "--describe", f"{run}/sample/kafka/topics-describe.txt"]
    assert stage_argv(cfg, "ingest", run).count("--prom") == 2
    assert stage_argv(cfg, "report", run) == ["report", str(run)]


def test_default_stages_skip_sample_unless_configured(tmp_path: Path) -> None:
    assert "sample" not in load_run_config(_config(tmp_path, "")).stages
    assert load_run_config(_config(tmp_path, "[sample]\nseed = 1\n")).stages == STAGES


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[run]\nstages = ['bogus']", r"run\.stages: unknown stage 'bogus'"),
        ("[run]\nstages = ['plan', 'snapshot']", r"run\.stages: stages must be in the order"),
        ("[run]\ncolour = 1", r"run\.colour: unknown key"),
        ("[planner]\nx = 1", r"planner: unknown table"),
        ("[plan]\nx = {a = 1}", r"plan\.x: expected a string"),
        ("[run\n", r"invalid TOML"),
    ],
)
def test_errors_name_the_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        load_run_config(_config(tmp_path, text))


def test_bad_placeholder_names_stage_and_key(tmp_path: Path) -> None:
    cfg = load_run_config(_config(tmp_path, "[plan]\npolicy = '{nowhere}/p.toml'\n"))
    with pytest.raises(InputError, match=r"plan\.policy: bad placeholder"):
        stage_argv(cfg, "plan", tmp_path)
