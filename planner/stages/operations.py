"""The day-2 stages: rebalance, add, decommission or replace brokers, set topics' replication factor.

Each reads the snapshot, the policy and (optionally) the profile, runs one operation of `planner.operations`
and writes ``OUT/plan.json`` in the quarterly plan's contract, so ``poolplan emit``, ``audit`` and ``report``
take it unchanged. ``poolplan run`` calls each as the stage that writes the run's plan
(`planner.cli.runconfig.PLAN_STAGES`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from planner.stages.plan_inputs import PlanInputOptions
from pools.progress import ProgressReporter, no_progress

if TYPE_CHECKING:
    from planner.operations import Operation, OperationInputs

__all__ = [
    "OperationOptions",
    "RebalanceOptions",
    "AddBrokersOptions",
    "DecommissionOptions",
    "DemoteOptions",
    "ReplaceOptions",
    "ReplicationOptions",
    "OperationResult",
    "rebalance",
    "add_brokers",
    "decommission_brokers",
    "demote_brokers",
    "replace_broker",
    "set_replication_factor",
]


@dataclass(frozen=True, kw_only=True)
class OperationOptions(PlanInputOptions):
    """The plan inputs every day-2 operation reads (the profile optional) and the directory it writes."""

    out_dir: str = "plan"


@dataclass(frozen=True, kw_only=True)
class RebalanceOptions(OperationOptions):
    """``poolplan rebalance``: the pools (none = every pool), the band, the dimensions, the byte budgets (per pool,
    cluster-wide, or none at all: leaders only) and what stays out (topics, brokers that take no replica)."""

    pools: tuple[str, ...] = ()
    band: float = 0.10
    dimensions: tuple[str, ...] = ()
    max_moved_bytes: int | None = None
    max_moved_bytes_total: int | None = None
    leaders_only: bool = False
    exclude_topics: tuple[str, ...] = ()
    exclude_brokers: tuple[int, ...] = ()
    dimension_bands: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, kw_only=True)
class AddBrokersOptions(OperationOptions):
    """``poolplan brokers add``: the pool the brokers join."""

    pool: str
    brokers: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class DecommissionOptions(OperationOptions):
    """``poolplan brokers decommission``: the brokers to drain and, optionally, the only brokers that receive."""

    brokers: tuple[int, ...]
    to: tuple[int, ...] = ()


@dataclass(frozen=True, kw_only=True)
class DemoteOptions(OperationOptions):
    """``poolplan brokers demote``: the brokers to move leadership off."""

    brokers: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class ReplaceOptions(OperationOptions):
    """``poolplan brokers replace``: the broker leaving and the one taking its place."""

    old: int
    new: int
    allow_rack_change: bool = False


@dataclass(frozen=True, kw_only=True)
class ReplicationOptions(OperationOptions):
    """``poolplan set-replication-factor``: topic names or patterns and the new factor."""

    topics: tuple[str, ...]
    replication_factor: int


@dataclass(frozen=True)
class OperationResult:
    """The operation (its plan, balance, moved bytes and lower bound) and where plan.json was written."""

    operation: Operation
    path: Path


def rebalance(options: RebalanceOptions, *, progress: ProgressReporter = no_progress) -> OperationResult:
    """Bring every broker of the chosen pools within ``band`` of its pool's mean (`planner.operations.rebalance`)."""
    from planner.operations import rebalance as rebalance_pools
    from planner.placement.engine import ENGINE_DIMENSIONS

    return _run(options, progress, lambda inputs: rebalance_pools(
        inputs, pools=options.pools, band=options.band, dimensions=options.dimensions or ENGINE_DIMENSIONS,
        max_moved_bytes=options.max_moved_bytes, max_moved_bytes_total=options.max_moved_bytes_total,
        leaders_only=options.leaders_only, exclude_topics=options.exclude_topics,
        exclude_brokers=options.exclude_brokers, dimension_bands=dict(options.dimension_bands)))


def add_brokers(options: AddBrokersOptions, *, progress: ProgressReporter = no_progress) -> OperationResult:
    """Brokers join a pool and take a fair share (`planner.operations.add_brokers`)."""
    from planner.operations import add_brokers as add

    return _run(options, progress, lambda inputs: add(inputs, options.pool, options.brokers))


def decommission_brokers(options: DecommissionOptions, *, progress: ProgressReporter = no_progress) -> OperationResult:
    """Drain brokers into the rest of their pool (`planner.operations.decommission_brokers`)."""
    from planner.operations import decommission_brokers as decommission

    return _run(options, progress, lambda inputs: decommission(inputs, options.brokers, destinations=options.to))


def demote_brokers(options: DemoteOptions, *, progress: ProgressReporter = no_progress) -> OperationResult:
    """Move leadership off brokers (`planner.operations.demote_brokers`)."""
    from planner.operations import demote_brokers as demote

    return _run(options, progress, lambda inputs: demote(inputs, options.brokers))


def replace_broker(options: ReplaceOptions, *, progress: ProgressReporter = no_progress) -> OperationResult:
    """Swap one broker for another in every replica list (`planner.operations.replace_broker`)."""
    from planner.operations import replace_broker as replace

    return _run(options, progress, lambda inputs: replace(inputs, options.old, options.new,
                                                          allow_rack_change=options.allow_rack_change))


def set_replication_factor(options: ReplicationOptions, *, progress: ProgressReporter = no_progress) -> OperationResult:
    """Raise or lower the selected topics' replication factor (`planner.operations.set_replication_factor`)."""
    from planner.operations import set_replication_factor as set_rf

    return _run(options, progress, lambda inputs: set_rf(inputs, options.topics, options.replication_factor))


def _run(options: OperationOptions, progress: ProgressReporter,
         operate: Callable[[OperationInputs], Operation]) -> OperationResult:
    """Check the output directory, read the inputs, run ``operate`` and write its plan.json."""
    from planner.operations import operation_inputs
    from planner.stages.plan_inputs import load_plan_inputs
    from pools.atomic import check_output
    from pools.plan_file import save_plan

    check_output(options.out_dir)
    read = load_plan_inputs(options, progress=progress)
    inputs = operation_inputs(read.snapshot, read.policy, read.profile, fanout=read.fanout,
                              partition_profile=read.partitions, horizon_days=read.horizon_days)
    progress("placing replicas")
    operation = operate(inputs)
    return OperationResult(operation, save_plan(operation.plan, Path(options.out_dir) / "plan.json"))
