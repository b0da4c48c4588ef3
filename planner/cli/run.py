"""`poolplan run`: the quarterly run, every configured stage in order inside one run directory.

Each stage is its library function (`planner.cli.runconfig.RUN_STAGES`), called with the typed options its
command would build from the config table; the console tells the run as a short story: one line per stage with
its time and what it wrote (under the run directory's final name), progress while a long stage works, and a
closing summary. ``RUN/run.log`` keeps the whole log (every step, poolplan's debug log, the solver's log).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from planner.cli.console import CONSOLE, file_handler, stage_progress
from planner.cli.stage import Outcome, outcome_label
from pools.errors import InfeasibleError
from pools.units import format_elapsed

if TYPE_CHECKING:
    from planner.cli.runconfig import StageCall

__all__ = ["command", "RUN_LOG"]

#: The run's log file, in the run directory.
RUN_LOG = "run.log"

_log = logging.getLogger(__name__)


@click.command(name="run")
@click.option("--config", "config_path", required=True, type=click.Path(dir_okay=False), help="Run config (TOML).")
@click.option("--out", default=None, help="Run directory (overrides run.out of the config).")
@click.option("--force", is_flag=True, help="Replace an existing run directory.")
def command(config_path: str, out: str | None, force: bool) -> int:
    """Run the quarterly capacity run: sample, snapshot, ingest, plan, emit, audit, report (a day-2 run: an
    operation such as rebalance or brokers-decommission in place of plan).

    Each stage runs as the subcommand of the same name would, with the options of its config table; the whole
    config (every table's keys, value types and ranges, input files; tables of stages left out of run.stages
    too) is checked before the first stage runs.
    The run directory is built under a temporary name and renamed into place when every stage has run, so
    bad input in any stage leaves nothing half-written. run.json records each stage's options and exit code;
    run.log the whole log of the run. The console shows one line per stage (its time and what it wrote), the
    progress of long stages and a closing summary.

    Exit code: the most severe of the stages' — 0 when every stage is done or clean; 1 when the plan needs
    brokers still to buy (every stage runs with it; its bundle refuses to run until they join), is infeasible or a
    day-2 operation is refused (no plan: emit is skipped, the audit runs without one) or the audit has findings at
    its --fail-on severity; 2 on bad input in the config or any stage; 3 when a solver result fails its checks.
    """
    from planner.cli.runconfig import PLAN_STAGES, load_run_config, stage_call
    from pools.atomic import atomic_dir, write_json

    started = time.monotonic()
    config = load_run_config(config_path, out=out)
    results: dict[str, int] = {}
    record: list[dict[str, object]] = []
    headlines: list[str] = []
    logs: list[str] = []
    root = logging.getLogger()
    log: logging.Handler | None = None
    try:
        with atomic_dir(config.out, overwrite=force) as tmp:
            run_dir = Path(tmp)
            calls = {stage: stage_call(config, stage, run_dir)
                     for stage in config.options if stage in config.stages or config.options[stage]}
            shown = _Shown(run_dir, config.out)
            log = file_handler(str(run_dir / RUN_LOG))  # open across the rename, for the closing summary
            root.addHandler(log)
            _say(f"poolplan run of {config.source} into {shown(config.out)}: {', '.join(config.stages)}")
            writer = next((s for s in config.stages if s in PLAN_STAGES), None)
            for name in config.stages:
                call = calls[name]
                if writer is not None and results.get(writer) == 1:
                    kept = _without_plan(call)
                    if kept is None:
                        _say(f"{name:<8} {'skipped':>10}  the {writer} stage is infeasible: no plan to apply")
                        continue
                    call = kept
                said = _run_stage(call, shown)
                results[name] = said.code
                headlines += [shown.text(said.headline)] if said.headline else []
                logs += [f"{name}: {shown(path)}" for path in said.logs]
                options = {k: shown.value(v) for k, v in call.shown.items()}
                record.append({"stage": name, "options": options, "exit_code": said.code})
            write_json(run_dir / "run.json", {"config": str(Path(config_path)), "stages": record})
        code = max(results.values(), default=0)
        failed = ", ".join(s for s, c in results.items() if c)
        _say(f"done in {format_elapsed(time.monotonic() - started)}: {shown(config.out)}"
             + (f" (exit {code}: {failed})" if code else ""))
        for line in [*headlines, f"log: {shown(config.out / RUN_LOG)}" + (f" ({', '.join(logs)})" if logs else "")]:
            _say(f"  {line}")
    finally:
        if log is not None:
            root.removeHandler(log)
            log.close()
    return code


def _without_plan(call: StageCall) -> StageCall | None:
    """A stage after the run's plan stage exited 1: when a plan was written (one onto brokers still to buy) every
    stage runs with it, and the bundle refuses to run until those brokers join; when none was written (no pools
    separate the tenants, a refused operation), emit has nothing to apply (None: skipped) and a stage that reads
    the plan does without it."""
    plan_path = getattr(call.options, "plan_path", None)
    if plan_path is None or Path(plan_path).exists():
        return call
    if call.stage.run_name == "emit":
        return None
    return replace(call, options=replace(call.options, plan_path=None))


def _run_stage(call: StageCall, shown: _Shown) -> Outcome:
    """Run one stage's library function with progress; print its line (time, final path, summary) and notes."""
    name = call.stage.run_name
    began = time.monotonic()
    try:
        with stage_progress(name, shown=shown.text) as progress:
            result = call.stage.call(call.options, progress=progress)
    except InfeasibleError as exc:  # no pools separate the tenants, an operation refused: a result (exit 1)
        _say(f"{name:<8} {format_elapsed(time.monotonic() - began):>10}  infeasible: {shown.text(str(exc))}")
        return Outcome(subject=name, summary=str(exc), written=Path(shown.out), code=1)
    except BaseException:
        _say(f"{name:<8} {format_elapsed(time.monotonic() - began):>10}  stopped: nothing of the run is written")
        raise
    said = call.stage.outcome(result)
    _say(f"{name:<8} {format_elapsed(time.monotonic() - began):>10}  "
         f"{shown(said.written)}: {shown.text(said.summary)}")
    for warning in said.warnings:
        _say(f"  warning: {shown.text(warning)}")
    if said.infeasible is not None:
        _say(f"  {outcome_label(said.infeasible)}: {shown.text(str(said.infeasible))}")
    return said


def _say(line: str) -> None:
    """A line of the run's story: on the console and in run.log."""
    CONSOLE.print(line, markup=False)
    _log.info("%s", line, extra={"console": False})


class _Shown:
    """Paths as the user will find them: the temporary run directory replaced by the final one, relative to the
    working directory when below it."""

    def __init__(self, tmp: Path, out: Path) -> None:
        self.tmp, self.out = str(tmp), str(out)
        cwd = Path.cwd()
        self.base = f"{os.path.relpath(out, cwd)}" if out.is_relative_to(cwd) else self.out

    def __call__(self, path: Path | str) -> str:
        return self.text(str(path))

    def text(self, text: str) -> str:
        return text.replace(self.tmp, self.base).replace(self.out, self.base)

    def value(self, value: object) -> object:
        """An option's value for run.json: the final run directory, absolute (as the config's placeholders)."""
        if isinstance(value, list):
            return [self.value(v) for v in value]
        return value.replace(self.tmp, self.out) if isinstance(value, str) else value
