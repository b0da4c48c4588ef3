"""`poolplan explain`: why one partition moves in a plan, and the alternatives the move beat."""

from __future__ import annotations

import click

from planner.reasons import explain
from pools.errors import InputError
from pools.plan_file import load_plan

__all__ = ["command"]


@click.command(name="explain")
@click.argument("plan_path", metavar="PLAN", type=click.Path(dir_okay=False))
@click.argument("name", metavar="TOPIC-PARTITION")
def command(plan_path: str, name: str) -> int:
    """Print why TOPIC-PARTITION moves in PLAN (plan.json): its reason, the bytes it copies, and the alternatives
    it beat (keeping its replicas, the pool's other brokers).

    Example: poolplan explain plan/plan.json orders-3
    """
    topic, _, number = name.rpartition("-")
    if not topic or not number.isdigit():
        raise InputError(f"TOPIC-PARTITION: expected a topic name, '-' and a partition number, got {name!r}")
    plan = load_plan(plan_path)
    for line in explain(plan, topic, int(number)):
        click.echo(line)
    return 0
