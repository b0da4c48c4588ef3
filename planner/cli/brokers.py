"""`poolplan brokers add|decommission|replace`: change a pool's brokers; write plan.json for `poolplan emit`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from planner.cli.inputs import read_topic_fanout

__all__ = ["command", "operation_options", "finish"]

_console = Console(highlight=False, soft_wrap=True)

_BROKER_ID = click.IntRange(min=0, max=2**31 - 1)


def operation_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The inputs every day-2 operation reads and the directory it writes, as options."""
    for option in reversed((
        click.option("--snapshot", "snapshot_path", required=True, type=click.Path(dir_okay=False),
                     help="Cluster snapshot (snapshot.json)."),
        click.option("--policy", "policy_path", default="conf/pools.toml", show_default=True,
                     type=click.Path(dir_okay=False), help="Pool policy (TOML): which pool each broker and topic is in."),
        click.option("--profile", "profile_dir", type=click.Path(),
                     help="Topic profile directory; without it partitions carry their size as disk and no traffic."),
        click.option("--consumer-groups", "groups_path", type=click.Path(dir_okay=False),
                     help="`kafka-consumer-groups.sh --describe --all-groups` output; its fan-out replaces missing "
                          "bytes-out."),
        click.option("--horizon-days", type=click.IntRange(min=0),
                     help="Forecast horizon in days [default: the policy's forecast_horizon_days]."),
        click.option("--out", "out_dir", default="plan", show_default=True, type=click.Path(file_okay=False),
                     help="Directory for plan.json (created if missing; plan.json is replaced)."),
    )):
        func = option(func)
    return func


def load_inputs(snapshot_path: str, policy_path: str, profile_dir: str | None, groups_path: str | None,
                horizon_days: int | None, out_dir: str):
    """Check the output directory, then read the snapshot, policy and profile into `OperationInputs`."""
    from planner.operations import operation_inputs
    from pools.atomic import check_output
    from pools.policy import load_policy
    from pools.profile import load_profile_dir
    from pools.snapshot import load_snapshot

    check_output(out_dir)
    snapshot = load_snapshot(snapshot_path)
    policy = load_policy(policy_path)
    profile = partitions = None
    if profile_dir is not None:
        profile, partitions = load_profile_dir(profile_dir)
    return operation_inputs(snapshot, policy, profile, fanout=read_topic_fanout(groups_path),
                            partition_profile=partitions, horizon_days=horizon_days)


def finish(operation, out_dir: str) -> int:
    """Write plan.json, print the moved bytes against the lower bound, the balance per pool and the warnings."""
    from planner.operations.balance import spread
    from pools.plan import save_plan
    from pools.units import format_bytes

    plan = operation.plan
    path = save_plan(plan, Path(out_dir) / "plan.json")
    _console.print(
        f"{plan.operation['name']} on {plan.cluster}: {len(plan.moves)} partition(s) change, "
        f"{format_bytes(operation.moved_bytes)} to copy (lower bound {format_bytes(operation.lower_bound)}); "
        f"wrote {path}"
    )
    for pool, table in sorted(operation.balance.items()):
        before = spread({d: v["before"] for d, v in table.items() if v["before"]})
        after = spread({d: v["after"] for d, v in table.items() if v["after"]})
        cells = ", ".join(f"{d} {before.get(d, 0):.2f}→{after.get(d, 0):.2f}" for d in table)
        _console.print(f"pool {pool}: spread (busiest − idlest broker, over the mean) {cells}")
    for warning in plan.warnings:
        _console.print(f"[yellow]warning:[/] {warning}")
    return 0


@click.group(name="brokers")
def command() -> None:
    """Add, decommission or replace brokers of a pool; each writes OUT/plan.json for `poolplan emit`.

    Exit 0 with a plan; 1 when the operation is refused (decommission: what the rest of the pool lacks, or
    partitions that must be repaired first); 2 on bad input.
    """


@command.command(name="add")
@operation_options
@click.option("--pool", required=True, help="The pool the brokers join.")
@click.option("--broker", "brokers", required=True, multiple=True, type=_BROKER_ID,
              help="A broker to add (repeatable): in the snapshot and in no pool yet.")
def add(snapshot_path: str, policy_path: str, profile_dir: str | None, groups_path: str | None,
        horizon_days: int | None, out_dir: str, pool: str, brokers: tuple[int, ...]) -> int:
    """Brokers join a pool and take a fair share (±10 % of the pool's mean utilisation in every dimension) at the
    fewest moved bytes: Cruise Control's add_broker."""
    from planner.operations import add_brokers

    inputs = load_inputs(snapshot_path, policy_path, profile_dir, groups_path, horizon_days, out_dir)
    return finish(add_brokers(inputs, pool, brokers), out_dir)


@command.command(name="decommission")
@operation_options
@click.option("--broker", "brokers", required=True, multiple=True, type=_BROKER_ID,
              help="A broker to drain (repeatable).")
def decommission(snapshot_path: str, policy_path: str, profile_dir: str | None, groups_path: str | None,
                 horizon_days: int | None, out_dir: str, brokers: tuple[int, ...]) -> int:
    """Drain brokers: every replica leaves them for the rest of their pool, after checking that it has the
    brokers, racks and capacity (refused with exit 1 and what is missing otherwise): Cruise Control's
    remove_broker."""
    from planner.operations import decommission_brokers

    inputs = load_inputs(snapshot_path, policy_path, profile_dir, groups_path, horizon_days, out_dir)
    return finish(decommission_brokers(inputs, brokers), out_dir)


@command.command(name="replace")
@operation_options
@click.option("--old", "old", required=True, type=_BROKER_ID, help="The broker to replace.")
@click.option("--new", "new", required=True, type=_BROKER_ID,
              help="The broker taking its place: in no pool or in the same pool.")
def replace(snapshot_path: str, policy_path: str, profile_dir: str | None, groups_path: str | None,
            horizon_days: int | None, out_dir: str, old: int, new: int) -> int:
    """Replace a broker by another: a straight swap in every replica list (leadership included), each replica
    copied once; where the swap would break rack spread the replica goes to the least-loaded broker that keeps it."""
    from planner.operations import replace_broker

    inputs = load_inputs(snapshot_path, policy_path, profile_dir, groups_path, horizon_days, out_dir)
    return finish(replace_broker(inputs, old, new), out_dir)
