"""A stage as the command line and ``poolplan run`` see it: its command, its library call and what it says.

A stage's command module (``planner/cli/<stage>.py``) defines its click ``command`` (the one definition of its
options, which ``poolplan run`` checks config tables against), and a `Stage` naming the library function
(`planner.stages`, `spark_jobs.ingest_stage`), how the command's parameters become that function's typed options,
and what the console says about its result (`Outcome`). The command's body is ``return run_command(STAGE,
params)``; ``poolplan run`` calls the same library function with the same options, never the command.

Adding a stage: a library function in `planner.stages`, a command module with its `Stage`, one line in
`planner.cli.runconfig` (its place in the run and the paths the run supplies), one in `planner.cli.commands`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from planner.cli.console import CONSOLE, stage_progress
from pools.errors import BrokersToBuy, InfeasibleError
from pools.units import format_elapsed

__all__ = ["Stage", "Outcome", "run_command"]

_STDOUT = Console(highlight=False, soft_wrap=True)


def outcome_label(exc: InfeasibleError) -> str:
    """How the console names a stage's exit-1 result: a plan onto brokers still to buy is not a refusal.

    >>> from pools.errors import BrokersToBuy
    >>> outcome_label(BrokersToBuy("pool a needs 1 more broker(s)")), outcome_label(InfeasibleError("tenants a and b"))
    ('brokers to buy', 'infeasible')
    """
    return "brokers to buy" if isinstance(exc, BrokersToBuy) else "infeasible"


@dataclass(frozen=True)
class Outcome:
    """What the console says about a stage's result, and its exit code.

    Attributes
    ----------
    subject : str
        What the stage made, as the command's line starts (``"plan for sample"``).
    summary : str
        Its figures in one line, without the path (``"7 partitions move, 41.7 GB to copy"``).
    written : Path
        The main file or directory the stage wrote.
    code : int
        0, or 1 for findings at ``--fail-on`` or an infeasible plan.
    details : tuple of str
        Lines to show under the summary before the warnings (a day-2 operation's balance per pool).
    warnings : tuple of str
        Lines to show under the summary.
    headline : str, optional
        The stage's line in ``poolplan run``'s closing summary (plan moved bytes, findings by severity, ...).
    infeasible : InfeasibleError, optional
        Raised by the command after its summary (``main`` turns it into exit 1 and its line); the run shows it.
    logs : tuple of Path
        Log files the stage wrote (Spark's), which ``poolplan run``'s closing summary points to.
    """

    subject: str
    summary: str
    written: Path
    code: int = 0
    details: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    headline: str | None = None
    infeasible: InfeasibleError | None = None
    logs: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Stage:
    """A stage: its command, the library call the command and the run share, and what the console says.

    Attributes
    ----------
    name : str
        The command's name for it (``brokers decommission``).
    command : click.Command
        The command; its options are the stage's options (names, types, defaults, ranges).
    options : callable
        The command's parsed parameters (by parameter name) → the library function's typed options.
    call : callable
        The library function: ``call(options, progress=...)`` → result.
    outcome : callable
        Result → `Outcome`.
    stdout : bool
        Whether the command prints its summary on standard output (else standard error).
    """

    name: str
    command: click.Command
    options: Callable[[Mapping[str, Any]], Any]
    call: Callable[..., Any]
    outcome: Callable[[Any], Outcome]
    stdout: bool = True

    @property
    def run_name(self) -> str:
        """Its name in ``poolplan run``: its config table and its entry in ``run.stages`` (the command's words
        joined by hyphens: ``brokers-decommission``)."""
        return self.name.replace(" ", "-")


def run_command(stage: Stage, params: Mapping[str, Any]) -> int:
    """The body of a stage's command: typed options, the library call with progress, the summary, the exit code."""
    options = stage.options(params)
    began = time.monotonic()
    with stage_progress(stage.name) as progress:
        result = stage.call(options, progress=progress)
    said = stage.outcome(result)
    out = _STDOUT if stage.stdout else CONSOLE
    out.print(f"{said.subject} ({format_elapsed(time.monotonic() - began)}): {said.summary}; wrote {said.written}",
              markup=False)
    for line in said.details:
        out.print(line, markup=False)
    for warning in said.warnings:
        out.print(f"[yellow]warning:[/] {_escape(warning)}")
    if said.infeasible is not None:
        raise said.infeasible
    return said.code


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)
