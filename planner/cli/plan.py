"""`poolplan plan`: decide pools, brokers to add and every partition's target replicas; write plan.json."""

from __future__ import annotations

from typing import Any

import click

from planner.cli.options import BrokerIds, FiniteRange, horizon_days_option, plan_input_options, time_limit_option
from planner.cli.stage import Outcome, Stage, run_command
from planner.solvers import Solver
from planner.stages.plan import PlanOptions, PlanResult, plan
from pools.errors import BrokersToBuy
from pools.units import format_bytes, format_elapsed, format_percent, format_plural

__all__ = ["command", "STAGE"]


@click.command(name="plan")
@plan_input_options(profile_required=True, profile_help="Topic profile directory.")
@click.option("--solver", default=Solver.HIGHS.value, show_default=True, type=click.Choice([s.value for s in Solver]),
              help="MILP solver for the pool model.")
@time_limit_option
@click.option("--gap", default=0.01, show_default=True, type=FiniteRange(min=0, max=1),
              help="Relative MIP gap at which the solver stops.")
@click.option("--threads", default=1, show_default=True, type=click.IntRange(min=1),
              help="Solver threads (the plan is reproducible for a given count).")
@horizon_days_option
@click.option("--new-broker-ids", "new_broker_ids", type=BrokerIds(), default=None,
              help="Ids of the brokers still to buy, as you will provision them (101,102 or 101-103; the first ones "
                   "in order, pools by name, each pool's racks alternated) [default: the next free ids].")
@click.option("--out", "out_dir", default="plan", show_default=True, type=click.Path(file_okay=False),
              help="Directory for plan.json (created if missing; plan.json is replaced).")
def command(**params: Any) -> int:
    """Plan the pools: which brokers and topics go where, what each pool lacks, and every replica's target.

    Writes OUT/plan.json. Exit 0 with a plan that fits the cluster; 1 when the pools need brokers the cluster
    lacks: plan.json is still written, with brokers_to_add, the reasons and replicas placed on the brokers still
    to buy (planned_brokers: ids, racks and capacity of the policy's [new_broker] type), so it applies once they
    join; 2 on a contradictory policy, or --new-broker-ids naming a known broker or too few ids.
    """
    return run_command(STAGE, params)


def _outcome(result: PlanResult) -> Outcome:
    p, s = result.plan, result.plan.solver
    moves = f"{format_plural(len(p.moves), 'partition')} move, {format_bytes(p.moved_bytes)} to copy"
    added = {pool: n for pool, n in p.brokers_to_add.items() if n}
    brokers = (
        f"{format_plural(sum(added.values()), 'broker')} to add "
        f"({', '.join(f'{pool} {n}' for pool, n in added.items())})"
               if added else "no brokers to add")
    gap = f", gap {format_percent(s.gap, digits=2)}" if s.gap else ""
    return Outcome(
        subject=f"plan for {p.cluster}",
        summary=f"{moves}, {brokers}; solver {s.name} {s.status}{gap} in {format_elapsed(result.solver_seconds)}",
        written=result.path,
        code=0 if result.feasible else 1,
        warnings=p.warnings,
        headline=f"plan: {moves}; {brokers}",
        infeasible=None if result.feasible else BrokersToBuy("; ".join(result.shortfall), dict(p.brokers_to_add)),
    )


STAGE = Stage("plan", command, lambda params: PlanOptions(**{**params, "solver": Solver(params["solver"])}), plan,
              _outcome)
