"""The subcommand registry: one click command per module under ``planner/cli``.

Each subcommand module defines one ``click.Command`` named ``command`` (options parsed into typed
values, one library call, atomic writes, a summary); add its import here. A stage of ``poolplan run`` also
defines its `planner.cli.stage.Stage` (see there for adding one).
A command returns an int exit code (0 done/clean, 1 findings/infeasible) or raises
`pools.errors.InputError` / `InfeasibleError`.
"""

from __future__ import annotations

import click

from planner.cli import audit, consumers, emit, explain, ingest, place, plan, progress, report, run, sample, snapshot
from planner.cli import brokers, rebalance, replication, whatif

__all__ = ["COMMANDS"]

COMMANDS: list[click.Command] = [
    audit.command,
    report.command,
    run.command,
    consumers.command,
    emit.command,
    explain.command,
    ingest.command,
    place.command,
    plan.command,
    progress.command,
    sample.command,
    snapshot.command,
    rebalance.command,
    brokers.command,
    replication.command,
    whatif.command,
]
