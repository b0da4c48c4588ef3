"""`poolplan plan`: decide pools, brokers to add and every partition's target replicas; write plan.json."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console

from planner.cli.inputs import read_topic_fanout
from planner.cli.options import FiniteRange

__all__ = ["command"]

_console = Console(highlight=False, soft_wrap=True)


@click.command(name="plan")
@click.option("--snapshot", "snapshot_path", required=True, type=click.Path(dir_okay=False),
              help="Cluster snapshot (snapshot.json).")
@click.option("--policy", "policy_path", default="conf/pools.toml", show_default=True,
              type=click.Path(dir_okay=False), help="Pool policy (TOML).")
@click.option("--profile", "profile_dir", required=True, type=click.Path(), help="Topic profile directory.")
@click.option("--consumer-groups", "groups_path", type=click.Path(dir_okay=False),
              help="`kafka-consumer-groups.sh --describe --all-groups` output; its fan-out replaces missing bytes-out.")
@click.option("--solver", default="highs", show_default=True, type=click.Choice(["highs", "cbc"]),
              help="MILP solver for the pool model.")
@click.option("--time-limit", default=60.0, show_default=True, type=FiniteRange(min=1),
              help="Solver seconds (both stages).")
@click.option("--gap", default=0.01, show_default=True, type=FiniteRange(min=0, max=1),
              help="Relative MIP gap at which the solver stops.")
@click.option("--threads", default=1, show_default=True, type=click.IntRange(min=1),
              help="Solver threads (the plan is reproducible for a given count).")
@click.option("--horizon-days", type=click.IntRange(min=0),
              help="Forecast horizon in days [default: the policy's forecast_horizon_days].")
@click.option("--out", "out_dir", default="plan", show_default=True, type=click.Path(file_okay=False),
              help="Directory for plan.json (created if missing; plan.json is replaced).")
def command(snapshot_path: str, policy_path: str, profile_dir: str, groups_path: str | None, solver: str,
            time_limit: float, gap: float, threads: int, horizon_days: int | None, out_dir: str) -> int:
    """Plan the pools: which brokers and topics go where, what each pool lacks, and every replica's target.

    Writes OUT/plan.json. Exit 0 with a plan that fits the cluster; 1 when the pools need brokers the cluster
    lacks (plan.json is still written, with brokers_to_add and the reasons); 2 on a contradictory policy.
    """
    from planner.pool_planner import plan_pools
    from pools.atomic import check_output
    from pools.errors import InfeasibleError
    from pools.plan import save_plan
    from pools.policy import load_policy
    from pools.profile import load_profile_dir
    from pools.snapshot import load_snapshot
    from pools.units import format_bytes

    check_output(out_dir)
    snapshot = load_snapshot(snapshot_path)
    policy = load_policy(policy_path)
    profile, partitions = load_profile_dir(profile_dir)
    assert profile is not None  # a required profile is read or an InputError
    outcome = plan_pools(snapshot, policy, profile, fanout=read_topic_fanout(groups_path), partition_profile=partitions,
                         solver=solver, time_limit=time_limit, gap=gap, threads=threads, horizon_days=horizon_days)
    plan = outcome.plan
    path = save_plan(plan, Path(out_dir) / "plan.json")
    s = plan.solver
    _console.print(
        f"plan for {plan.cluster}: {len(plan.moves)} partition(s) move, {format_bytes(plan.moved_bytes)} to copy; "
        f"solver {s.name} {s.status} ({s.solution}) objective {s.objective} gap {s.gap} in "
        f"{outcome.solver_seconds:.1f} s; wrote {path}"
    )
    for warning in plan.warnings:
        _console.print(f"[yellow]warning:[/] {warning}")
    if outcome.shortfall:
        raise InfeasibleError("; ".join(outcome.shortfall), dict(plan.brokers_to_add))
    return 0
