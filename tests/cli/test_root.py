"""The root command: help on every subcommand, exit codes, and errors without tracebacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.cli import cli


def test_help_lists_subcommands(run_cli) -> None:
    code, out, _ = run_cli("--help")
    assert code == 0
    assert "run" in out


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_every_subcommand_has_help(run_cli, name: str) -> None:
    code, out, err = run_cli(name, "--help")
    assert code == 0, err
    assert "Usage: poolplan" in out and "--help" in out


def test_unknown_command_is_usage_error(run_cli) -> None:
    code, _, err = run_cli("no-such-command")
    assert code == 2
    assert "No such command" in err


@pytest.mark.parametrize("args", [("rebalance", "--band", "x"), ("no-such-command",), ("brokers", "add", "--pool"),
                                  ("brokers", "replace", "--old", "1"), ("plan", "--no-such-option")])
def test_a_usage_error_is_one_line_naming_the_command(run_cli, args) -> None:
    code, out, err = run_cli(*args)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: poolplan") and "--help" in lines[0], err
    assert "Usage:" not in err and "Try '" not in err


def test_bad_input_exits_2_without_traceback(run_cli, tmp_path: Path) -> None:
    config = tmp_path / "q.toml"
    config.write_text("[run]\nstages = ['plan', 'snapshot']\n")
    code, _, err = run_cli("run", "--config", config)
    assert code == 2
    assert "run.stages: stages must be in the order" in err
    assert "Traceback" not in err


def test_missing_config_is_named(run_cli, tmp_path: Path) -> None:
    code, _, err = run_cli("run", "--config", tmp_path / "absent.toml")
    assert code == 2 and "absent.toml: no such file" in err
