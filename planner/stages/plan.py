"""The plan stage: pools, brokers to add and every partition's target replicas, written to plan.json."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from planner.solvers import Solver
from planner.stages.plan_inputs import PlanInputOptions
from pools.progress import ProgressReporter, no_progress

if TYPE_CHECKING:
    from pools.plan_file import Plan

__all__ = ["PlanOptions", "PlanResult", "plan"]


@dataclass(frozen=True, kw_only=True)
class PlanOptions(PlanInputOptions):
    """The options of ``poolplan plan``: the plan inputs (a profile is required), the solver, the ids of the brokers
    still to buy (None: the next free ids) and the output."""

    out_dir: str = "plan"
    solver: Solver = Solver.HIGHS
    time_limit: float = 60.0
    gap: float = 0.01
    threads: int = 1
    new_broker_ids: tuple[int, ...] | None = None


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


def plan(options: PlanOptions, *, progress: ProgressReporter = no_progress) -> PlanResult:
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
    from planner.stages.plan_inputs import load_plan_inputs
    from pools.atomic import check_output
    from pools.errors import InputError
    from pools.plan_file import save_plan

    check_output(options.out_dir)
    if options.profile_dir is None:
        raise InputError("plan: expected a profile directory (--profile)")
    inputs = load_plan_inputs(options, progress=progress)
    assert inputs.profile is not None  # a required profile is read or an InputError
    outcome = plan_pools(inputs.snapshot, inputs.policy, inputs.profile, fanout=inputs.fanout,
                         partition_profile=inputs.partitions, solver=options.solver, time_limit=options.time_limit,
                         gap=options.gap, threads=options.threads, horizon_days=inputs.horizon_days,
                         new_broker_ids=options.new_broker_ids, progress=progress)
    path = save_plan(outcome.plan, Path(options.out_dir) / "plan.json")
    return PlanResult(path, outcome.plan, outcome.shortfall, outcome.solver_seconds)
