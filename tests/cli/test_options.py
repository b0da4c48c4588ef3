"""Shared options: each declared once in `planner.cli.options`, one name one meaning, a renamed one warned about."""

from __future__ import annotations

import ast
import logging
import re
from pathlib import Path

import click
import pytest

from planner.cli.runconfig import load_run_config, stage_call

ROOT = Path(__file__).resolve().parents[2]
#: Options several commands take, declared once in planner/cli/options.py.
_SHARED = ("--time-limit", "--policy", "--consumer-groups", "--horizon-days")


def test_shared_options_are_declared_only_in_options_py() -> None:
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "planner" / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            # (`renamed_option` names an old spelling, hidden: not a declaration of the option)
            if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("option") and \
                    ast.unparse(node.func) != "renamed_option":
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and arg.value in _SHARED:
                        found.setdefault(arg.value, set()).add(path.name)
    assert found == {name: {"options.py"} for name in _SHARED}


def _ingest_options(tmp_path: Path, table: str):
    path = tmp_path / "q.toml"
    path.write_text(f'[run]\nout = "out/q"\nstages = ["ingest"]\n[ingest]\nprom = ["a/*.prom"]\n{table}')
    return stage_call(load_run_config(path), "ingest", tmp_path / "run").options


def test_ingest_horizon_is_the_profile_horizon_and_the_old_spelling_warns(tmp_path: Path, caplog) -> None:
    from planner.cli.ingest import command

    caplog.set_level(logging.WARNING)
    assert _ingest_options(tmp_path, "").horizon_days == 90
    assert _ingest_options(tmp_path, "profile-horizon-days = 30\n").horizon_days == 30
    assert not caplog.records
    assert _ingest_options(tmp_path, "horizon-days = 7\n").horizon_days == 7
    assert [r.getMessage() for r in caplog.records] == [
        "--horizon-days is renamed --profile-horizon-days (in a run config: profile-horizon-days); the old spelling is "
        "accepted until the next release"]
    ctx = command.make_context("ingest", ["--out", str(tmp_path / "p"), "--horizon-days", "5"])
    from planner.cli.ingest import _options

    assert _options(ctx.params).horizon_days == 5
    shown = command.get_help(command.make_context("ingest", ["--out", "x"]))
    assert re.search(r"^ +--profile-horizon-days ", shown, re.M) and not re.search(r"^ +--horizon-days ", shown, re.M)


def _emit_options(tmp_path: Path, table: str):
    path = tmp_path / "q.toml"
    path.write_text(f'[run]\nout = "out/q"\nstages = ["emit"]\n[emit]\n{table}')
    return stage_call(load_run_config(path), "emit", tmp_path / "run").options


def test_emit_log_dir_placement_and_the_old_spelling_warns(tmp_path: Path, caplog) -> None:
    """``emit --log-dirs any|balance`` is ``--log-dir-placement`` now (``--log-dirs`` names captures elsewhere);
    the old spelling, on the command line or in a run config, still works for a release, with one warning."""
    from planner.cli.emit import _options, command

    caplog.set_level(logging.WARNING)
    assert _emit_options(tmp_path, "").log_dir_placement == "any"
    assert _emit_options(tmp_path, 'log-dir-placement = "balance"\n').log_dir_placement == "balance"
    assert not caplog.records
    assert _emit_options(tmp_path, 'log-dirs = "balance"\n').log_dir_placement == "balance"
    assert [r.getMessage() for r in caplog.records] == [
        "--log-dirs is renamed --log-dir-placement (in a run config: log-dir-placement); the old spelling is "
        "accepted until the next release"]
    required = ["--plan", "p.json", "--snapshot", "s.json", "--out", str(tmp_path / "b")]
    ctx = command.make_context("emit", [*required, "--log-dirs", "balance"])
    assert _options(ctx.params).log_dir_placement == "balance"
    with pytest.raises(click.BadParameter, match="'all' is not one of 'any', 'balance'"):
        command.make_context("emit", [*required, "--log-dirs", "all"])
    shown = command.get_help(command.make_context("emit", required))
    assert re.search(r"^ +--log-dir-placement ", shown, re.M) and not re.search(r"^ +--log-dirs ", shown, re.M)


@pytest.mark.parametrize("name", ["plan", "whatif"])
def test_time_limit_is_one_option(name: str) -> None:
    from planner.cli.commands import COMMANDS

    command = next(c for c in COMMANDS if c.name == name)
    option = next(p for p in command.params if p.name == "time_limit")
    assert (option.default, option.type.min) == (60.0, 1)
