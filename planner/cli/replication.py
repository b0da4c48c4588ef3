"""`poolplan set-replication-factor`: raise or lower topics' replication factor inside their pools; plan.json."""

from __future__ import annotations

from typing import Any

import click

from planner.cli.brokers import operation_options, operation_outcome
from planner.cli.stage import Stage, run_command
from planner.stages.operations import ReplicationOptions, set_replication_factor

__all__ = ["command", "STAGE"]


@click.command(name="set-replication-factor")
@operation_options
@click.option("--topic", "topics", required=True, multiple=True,
              help="A topic name or full-match regular expression (repeatable).")
@click.option("--replication-factor", required=True, type=click.IntRange(min=1, max=32767),
              help="The new replication factor of every selected topic.")
def command(**params: Any) -> int:
    """Set topics' replication factor: new replicas on the least-loaded brokers of the topic's pool on racks the
    partition does not use yet; removals keep the current (in-sync) leader first and drop out-of-sync replicas,
    then those on the most loaded brokers, keeping the rack spread.

    Writes OUT/plan.json for `poolplan emit`. Exit 0 with a plan; 1 when a pool has too few brokers or a topic has
    partitions to repair first; 2 on bad input (a factor below min.insync.replicas, a topic in no pool).
    """
    return run_command(STAGE, params)


STAGE = Stage("set-replication-factor", command, lambda params: ReplicationOptions(**params), set_replication_factor,
              operation_outcome)
