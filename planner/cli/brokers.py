"""`poolplan brokers add|decommission|replace`: change a pool's brokers; write plan.json for `poolplan emit`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from planner.cli.options import horizon_days_option, plan_input_options
from planner.cli.stage import Outcome, Stage, run_command
from planner.stages.operations import (
    AddBrokersOptions,
    DecommissionOptions,
    DemoteOptions,
    OperationResult,
    ReplaceOptions,
    add_brokers,
    decommission_brokers,
    demote_brokers,
    replace_broker,
)
from pools.units import format_bytes, format_plural

__all__ = ["command", "operation_options", "operation_outcome", "ADD", "DECOMMISSION", "DEMOTE", "REPLACE"]

_BROKER_ID = click.IntRange(min=0, max=2**31 - 1)


def operation_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The plan inputs every day-2 operation reads (`planner.cli.options.plan_input_options`) and the directory it
    writes, as options."""
    inputs = plan_input_options(
        policy_help="Pool policy (TOML): which pool each broker and topic is in.",
        profile_help="Topic profile directory; without it partitions carry their size as disk and no traffic.")
    out = click.option("--out", "out_dir", default="plan", show_default=True, type=click.Path(file_okay=False),
                       help="Directory for plan.json (created if missing; plan.json is replaced).")
    return inputs(horizon_days_option(out(func)))


def operation_outcome(result: OperationResult) -> Outcome:
    """The moved bytes against the lower bound, the balance per pool and the plan's warnings."""
    from planner.operations.balance import spread

    operation, plan = result.operation, result.operation.plan
    moved = (f"{format_plural(len(plan.moves), 'partition')} change, {format_bytes(operation.moved_bytes)} to copy "
             f"(lower bound {format_bytes(operation.lower_bound)})")
    details = []
    for pool, table in sorted(operation.balance.items()):
        before = spread({d: v["before"] for d, v in table.items() if v["before"]})
        after = spread({d: v["after"] for d, v in table.items() if v["after"]})
        cells = ", ".join(f"{d} {before.get(d, 0):.2f}→{after.get(d, 0):.2f}" for d in table)
        details.append(f"pool {pool}: spread (busiest − idlest broker, over its fair share) {cells}")
    return Outcome(
        subject=f"{plan.operation_name} on {plan.cluster}",
        summary=moved,
        written=result.path,
        details=tuple(details),
        warnings=plan.warnings,
        headline=f"{plan.operation_name}: {moved}",
    )


@click.group(name="brokers")
def command() -> None:
    """Add, decommission, demote or replace brokers of a pool; each writes OUT/plan.json for `poolplan emit`.

    Exit 0 with a plan; 1 when the operation is refused (decommission: what the rest of the pool lacks, or
    partitions that must be repaired first); 2 on bad input.
    """


@command.command(name="add")
@operation_options
@click.option("--pool", required=True, help="The pool the brokers join.")
@click.option("--broker", "brokers", required=True, multiple=True, type=_BROKER_ID,
              help="A broker to add (repeatable): in the snapshot and in no pool yet.")
def add(**params: Any) -> int:
    """Brokers join a pool and take a fair share (±10 % of the pool's mean utilisation in every dimension) at the
    fewest moved bytes: Cruise Control's add_broker."""
    return run_command(ADD, params)


@command.command(name="decommission")
@operation_options
@click.option("--broker", "brokers", required=True, multiple=True, type=_BROKER_ID,
              help="A broker to drain (repeatable).")
@click.option("--to", "to", multiple=True, type=_BROKER_ID,
              help="A broker of the pool that takes the drained replicas (repeatable) [default: any broker of the "
                   "pool].")
def decommission(**params: Any) -> int:
    """Drain brokers: every replica leaves them for the rest of their pool, after checking that it has the
    brokers, racks and capacity (refused with exit 1 and what is missing otherwise): Cruise Control's
    remove_broker. A dead broker (offline, or a failed log dir) can be drained: each partition that lost only
    its replica there gets a new one copied from its in-sync leader."""
    return run_command(DECOMMISSION, params)


@command.command(name="demote")
@operation_options
@click.option("--broker", "brokers", required=True, multiple=True, type=_BROKER_ID,
              help="A broker to move leadership off (repeatable).")
def demote(**params: Any) -> int:
    """Move leadership off brokers, copying nothing: each partition they lead preferably gets its first other
    in-sync replica as preferred leader, the demoted brokers last in its replica list (Cruise Control's
    demote_broker); `poolplan emit` then elects the new preferred leaders."""
    return run_command(DEMOTE, params)


@command.command(name="replace")
@operation_options
@click.option("--old", "old", required=True, type=_BROKER_ID, help="The broker to replace.")
@click.option("--new", "new", required=True, type=_BROKER_ID,
              help="The broker taking its place: in no pool or in the same pool.")
@click.option("--allow-rack-change", is_flag=True,
              help="Accept a --new broker on another rack than --old: replicas whose partition already uses the new "
                   "rack go to other brokers (a warning says how many) [default: refused].")
def replace(**params: Any) -> int:
    """Replace a broker by another: a straight swap in every replica list (leadership included), each replica
    copied once; where the swap would break rack spread the replica goes to the least-loaded broker that keeps it
    (across racks only with --allow-rack-change).
    The old broker may be dead: each partition that lost only its replica there is re-replicated from its
    in-sync leader."""
    return run_command(REPLACE, params)


ADD = Stage("brokers add", add, lambda params: AddBrokersOptions(**params), add_brokers, operation_outcome)
DECOMMISSION = Stage("brokers decommission", decommission, lambda params: DecommissionOptions(**params),
                     decommission_brokers, operation_outcome)
DEMOTE = Stage("brokers demote", demote, lambda params: DemoteOptions(**params), demote_brokers, operation_outcome)
REPLACE = Stage("brokers replace", replace, lambda params: ReplaceOptions(**params), replace_broker,
                operation_outcome)
