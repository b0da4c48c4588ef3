"""`poolplan run`: the quarterly run, every configured stage in order inside one run directory."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console

from pools.atomic import atomic_dir, write_json
from pools.errors import InputError

__all__ = ["command"]

_console = Console(stderr=True, highlight=False)


@click.command(name="run")
@click.option("--config", "config_path", required=True, type=click.Path(dir_okay=False), help="Run config (TOML).")
@click.option("--out", default=None, help="Run directory (overrides run.out of the config).")
@click.option("--force", is_flag=True, help="Replace an existing run directory.")
def command(config_path: str, out: str | None, force: bool) -> int:
    """Run the quarterly capacity run: sample, snapshot, ingest, plan, emit, audit, report.

    Each stage is the subcommand of the same name, called with the options of its config table. The run
    directory is built under a temporary name and renamed into place only when every stage has run, so a
    failed run leaves nothing half-written. Exit 0 when done, 1 when the plan is infeasible (the report
    says what each pool lacks), 2 on bad input in any stage.
    """
    from planner.cli import main
    from planner.runconfig import load_run_config, stage_argv

    config = load_run_config(config_path, out=out)
    results: list[dict[str, object]] = []
    with atomic_dir(config.out, overwrite=force) as tmp:
        for stage in config.stages:
            if stage == "emit" and _exit_code(results, "plan") == 1:
                _console.print("[yellow]skipping emit: the plan is infeasible[/]")
                continue
            argv = stage_argv(config, stage, tmp)
            _console.rule(f"[bold]{stage}[/]")
            code = main(argv)
            results.append({"stage": stage, "argv": [a.replace(str(tmp), str(config.out)) for a in argv], "exit_code": code})
            if code == 2:
                raise InputError(f"stage {stage!r} stopped on bad input (see above); no run directory was written")
        write_json(Path(tmp) / "run.json", {"config": str(Path(config_path)), "stages": results})
    code = 1 if _exit_code(results, "plan") == 1 else 0
    _console.print(f"run directory: {config.out}" + (" (plan infeasible)" if code else ""))
    return code


def _exit_code(results: list[dict[str, object]], stage: str) -> int | None:
    return next((int(r["exit_code"]) for r in results if r["stage"] == stage), None)  # type: ignore[call-overload]
