"""The root command: help on every subcommand, exit codes, and errors without tracebacks."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from planner.cli import cli


def _listed(help_text: str) -> list[str]:
    """The command names of a help text's ``Commands:`` section, in the order shown."""
    section = help_text.split("\nCommands:\n", 1)[1]
    return [line.split()[0] for line in section.splitlines() if line.startswith("  ") and line.strip()
            and not line.startswith("   ")]


def test_help_lists_every_subcommand_with_its_summary(run_cli) -> None:
    code, out, err = run_cli("--help")
    assert code == 0 and err == ""
    assert out.startswith("Usage: poolplan [OPTIONS] COMMAND [ARGS]...")
    assert _listed(out) == sorted(cli.commands) and len(cli.commands) >= 13
    lines = {line.split()[0]: line for line in out.split("\nCommands:\n", 1)[1].splitlines() if line.strip()}
    for name, command in cli.commands.items():  # each with the start of its own summary
        assert " ".join(command.get_short_help_str(limit=200).split()[:3]) in lines[name], name


@pytest.mark.parametrize("name", sorted(n for n, c in cli.commands.items() if isinstance(c, click.Group)))
def test_a_group_lists_its_subcommands_and_without_one_is_a_usage_error(run_cli, name: str) -> None:
    group = cli.commands[name]
    code, out, err = run_cli(name, "--help")
    assert code == 0 and err == ""
    assert _listed(out) == sorted(group.commands) and group.commands
    code, out, err = run_cli(name)
    assert code == 2 and out == "" and f"Usage: poolplan {name} [OPTIONS] COMMAND [ARGS]..." in err


def test_no_command_shows_the_usage_and_exits_2(run_cli) -> None:
    code, out, err = run_cli()
    assert code == 2 and out == ""
    assert err.startswith("Usage: poolplan [OPTIONS] COMMAND [ARGS]...") and "Commands:" in err


def test_version_exits_0(run_cli) -> None:
    assert run_cli("--version") == (0, "poolplan, version 0.1.0\n", "")


def test_an_unknown_option_is_a_usage_error(run_cli) -> None:
    code, out, err = run_cli("--no-such-option")
    assert code == 2 and out == "" and "No such option '--no-such-option'" in err and "Traceback" not in err


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_every_subcommand_has_help(run_cli, name: str) -> None:
    code, out, err = run_cli(name, "--help")
    assert code == 0, err
    assert "Usage: poolplan" in out and "--help" in out


def _command_paths(group: click.Group = cli, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for name, command in sorted(group.commands.items()):
        out.append(path + (name,))
        if isinstance(command, click.Group):
            out += _command_paths(command, path + (name,))
    return out


@pytest.mark.parametrize("path", _command_paths(), ids=" ".join)
def test_no_help_text_shows_an_unbounded_range_or_a_none(run_cli, path: tuple[str, ...]) -> None:
    """An option's ``[default: ...; range]`` never reads ``x<=None`` or ``None`` (click's text for no bound)."""
    code, out, _ = run_cli(*path, "--help")
    assert code == 0
    brackets = " ".join(out.split())
    assert "None]" not in brackets
    assert "<=None" not in brackets


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


@pytest.mark.parametrize("command", ["emit", "ingest"])
def test_a_path_the_os_refuses_is_one_line_and_exit_2(run_cli, tmp_path, command) -> None:
    """A file name over the OS's limit (ENAMETOOLONG) fails at the first stat, in any command: one line, no traceback."""
    from pathlib import Path

    data = Path(__file__).resolve().parents[1] / "data" / "emit"
    out = tmp_path / ("x" * 300) / "out"
    prom = tmp_path / "a.prom"
    prom.write_text("")
    args = {"emit": ["--plan", data / "plan.json", "--snapshot", data / "snapshot.json"], "ingest": ["--prom", prom]}
    code, _, err = run_cli(command, *args[command], "--out", out)
    assert code == 2
    assert err.count("\n") == 1
    assert err.startswith("error: ") and err.endswith(": file name too long\n")
    assert "Traceback" not in err
