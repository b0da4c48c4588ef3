"""The plan stage: pools, brokers to add and every partition's target replicas, written to plan.json."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from planner.solvers import Solver
from pools.progress import Progress, no_progress

if TYPE_CHECKING:
    from pools.plan import Plan

__all__ = ["PlanOptions", "PlanResult", "plan"]


@dataclass(frozen=True)
class PlanOptions:
    """The options of ``poolplan plan``."""

    snapshot_path: str
    policy_path: str
    profile_dir: str
    out_dir: str
    solver: Solver
    time_limit: float
    gap: float
    threads: int
    groups_path: str | None = None
    horizon_days: int | None = None


@dataclass(frozen=True)
class PlanResult:
    """The plan, where it was written, what the pools lack (one reason each; empty when the plan fits) and the
    solver's wall time (it varies with the machine, so it is not in the plan)."""

    path: Path
    plan: Plan
    shortfall: tuple[str, ...]
    solver_seconds: float

    @property
    def feasible(self) -> bool:
        """Whether the plan fits the cluster as it is (no brokers to add)."""
        return not self.shortfall


def plan(options: PlanOptions, *, progress: Progress = no_progress) -> PlanResult:
    """Plan the pools and write ``OUT/plan.json`` (also when the pools need brokers the cluster lacks).

    Raises
    ------
    InputError
        For an unreadable input or a contradictory policy.
    InfeasibleError
        When no assignment of topics to pools separates the tenants the policy keeps apart.
    SolverError
        When the solver's result breaks its post-conditions.
    """
    from planner.pool_planner import plan_pools
    from planner.stages.inputs import read_topic_fanout
    from pools.atomic import check_output
    from pools.plan import save_plan
    from pools.policy import load_policy
    from pools.profile import load_profile_dir
    from pools.snapshot import load_snapshot

    check_output(options.out_dir)
    progress("reading the snapshot, the policy and the profile")
    snapshot = load_snapshot(options.snapshot_path)
    policy = load_policy(options.policy_path)
    profile, partitions = load_profile_dir(options.profile_dir)
    assert profile is not None  # a required profile is read or an InputError
    fanout = read_topic_fanout(options.groups_path)
    outcome = plan_pools(snapshot, policy, profile, fanout=fanout, partition_profile=partitions,
                         solver=options.solver, time_limit=options.time_limit, gap=options.gap,
                         threads=options.threads, horizon_days=options.horizon_days, progress=progress)
    path = save_plan(outcome.plan, Path(options.out_dir) / "plan.json")
    return PlanResult(path, outcome.plan, outcome.shortfall, outcome.solver_seconds)
