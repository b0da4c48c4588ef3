"""`poolplan run`: the quarterly run, every configured stage in order inside one run directory."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console

__all__ = ["command"]

_console = Console(stderr=True, highlight=False, soft_wrap=True)


@click.command(name="run")
@click.option("--config", "config_path", required=True, type=click.Path(dir_okay=False), help="Run config (TOML).")
@click.option("--out", default=None, help="Run directory (overrides run.out of the config).")
@click.option("--force", is_flag=True, help="Replace an existing run directory.")
def command(config_path: str, out: str | None, force: bool) -> int:
    """Run the quarterly capacity run: sample, snapshot, ingest, plan, emit, audit, report.

    Each stage is the subcommand of the same name, called with the options of its config table; the whole
    config (every table's keys, value types and ranges, input files; tables of stages left out of run.stages
    too) is checked before the first stage runs.
    The run directory is built under a temporary name and renamed into place when every stage has run, so
    bad input in any stage leaves nothing half-written. run.json records each stage's options and exit code.

    Exit code: the most severe of the stages' — 0 when every stage is done or clean; 1 when the plan is
    infeasible (emit is skipped; the report says what each pool lacks) or the audit has findings at its
    --fail-on severity; 2 on bad input in the config or any stage; 3 when a solver result fails its checks.
    """
    from planner.cli import report_outcome
    from planner.cli.commands import COMMANDS
    from planner.cli.runconfig import STAGES, load_run_config, stage_call
    from pools.atomic import atomic_dir, write_json
    from pools.errors import InfeasibleError

    config = load_run_config(config_path, out=out)
    commands = {c.name: c for c in COMMANDS}
    results: dict[str, int] = {}
    record: list[dict[str, object]] = []
    with atomic_dir(config.out, overwrite=force) as tmp:
        calls = {stage: stage_call(config, stage, commands[stage], Path(tmp))
                 for stage in STAGES if stage in config.stages or config.options[stage]}
        for call in (calls[stage] for stage in config.stages):
            if call.stage == "emit" and results.get("plan") == 1:
                _console.print("[yellow]skipping emit: the plan is infeasible[/]")
                continue
            _console.rule(f"[bold]{call.stage}[/]")
            ctx = click.Context(call.command, info_name=call.stage, parent=click.get_current_context())
            try:
                with ctx:
                    code = ctx.invoke(call.command.callback, **call.params)  # type: ignore[arg-type]
            except InfeasibleError as exc:  # a plan short of brokers is a result of the run, not its end
                code = report_outcome(exc)
            results[call.stage] = int(code or 0)
            shown = {k: _relative(v, Path(tmp), config.out) for k, v in call.shown.items()}
            record.append({"stage": call.stage, "options": shown, "exit_code": results[call.stage]})
        write_json(Path(tmp) / "run.json", {"config": str(Path(config_path)), "stages": record})
    code = max(results.values(), default=0)
    failed = ", ".join(s for s, c in results.items() if c)
    _console.print(f"run directory: {config.out}" + (f" (exit {code}: {failed})" if code else ""))
    return code


def _relative(value: object, tmp: Path, out: Path) -> object:
    """``value`` with the temporary run directory replaced by the final one (as run.json shows options)."""
    if isinstance(value, list):
        return [_relative(v, tmp, out) for v in value]
    return value.replace(str(tmp), str(out)) if isinstance(value, str) else value
