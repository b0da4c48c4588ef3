"""`poolplan set-replication-factor`: raise or lower topics' replication factor inside their pools; plan.json."""

from __future__ import annotations

import click

from planner.cli.brokers import finish, load_inputs, operation_options

__all__ = ["command"]


@click.command(name="set-replication-factor")
@operation_options
@click.option("--topic", "topics", required=True, multiple=True,
              help="A topic name or full-match regular expression (repeatable).")
@click.option("--replication-factor", required=True, type=click.IntRange(min=1, max=32767),
              help="The new replication factor of every selected topic.")
def command(snapshot_path: str, policy_path: str, profile_dir: str | None, groups_path: str | None,
            horizon_days: int | None, out_dir: str, topics: tuple[str, ...], replication_factor: int) -> int:
    """Set topics' replication factor: new replicas on the least-loaded brokers of the topic's pool on racks the
    partition does not use yet; removals keep the current (in-sync) leader first and drop out-of-sync replicas,
    then those on the most loaded brokers, keeping the rack spread.

    Writes OUT/plan.json for `poolplan emit`. Exit 0 with a plan; 1 when a pool has too few brokers or a topic has
    partitions to repair first; 2 on bad input (a factor below min.insync.replicas, a topic in no pool).
    """
    from planner.operations.replication import set_replication_factor

    inputs = load_inputs(snapshot_path, policy_path, profile_dir, groups_path, horizon_days, out_dir)
    return finish(set_replication_factor(inputs, topics, replication_factor), out_dir)
