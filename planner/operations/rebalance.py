"""``poolplan rebalance``: every broker of a pool within a band of the pool's mean, at the fewest moved bytes.

Cruise Control's distribution goals (ReplicaDistributionGoal, DiskUsageDistributionGoal, NetworkInbound/
OutboundUsageDistributionGoal, LeaderReplicaDistributionGoal, LeaderBytesInDistributionGoal) inside each pool:
the engine (`planner.placement.engine`) bands every broker of the pool in every chosen dimension, moves
preferred leaders first (a leader change copies nothing) and copies replicas only where leadership cannot
close the gap, keeping min(RF, racks) racks per partition. A replica never leaves its topic's pool; partitions
with replicas outside their pool are first brought home (the seed, `pools.fill`), and held partitions
(`pools.health`) stay. Under a moved-bytes budget the result is the best balance reachable within it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from planner.operations.balance import broker_loads, pool_balance, rack_pinned
from planner.operations.distribution import pool_optimiser
from planner.operations.outcome import Operation, operation_plan
from planner.operations.scope import OperationInputs, select_topics
from planner.placement.engine import ENGINE_DIMENSIONS, Goal, PoolResult, PoolState
from planner.placement.minimal_move import place_in_pools
from pools.errors import InputError

__all__ = ["REBALANCE_BAND", "rebalance"]

#: Allowed deviation from the pool's mean utilisation: Cruise Control's default balance threshold, 1.10.
REBALANCE_BAND = 0.10



def rebalance(
    inputs: OperationInputs,
    *,
    pools: Sequence[str] = (),
    band: float = REBALANCE_BAND,
    dimensions: Sequence[str] = ENGINE_DIMENSIONS,
    max_moved_bytes: int | None = None,
    max_moved_bytes_total: int | None = None,
    leaders_only: bool = False,
    exclude_topics: Sequence[str] = (),
    exclude_brokers: Sequence[int] = (),
    dimension_bands: Mapping[str, float] | None = None,
) -> Operation:
    """Rebalance ``pools`` (all pools with brokers when empty); see the module docstring.

    Parameters
    ----------
    inputs : OperationInputs
    pools : sequence of str
        Pools to rebalance.
    band : float
        Allowed deviation from the pool's mean utilisation, as a fraction of it.
    dimensions : sequence of str
        Dimensions banded, from `ENGINE_DIMENSIONS`.
    max_moved_bytes : int, optional
        Bytes each pool may copy at most; then the best balance within it.
    max_moved_bytes_total : int, optional
        Bytes the whole rebalance may copy at most: the pools are rebalanced one after another, furthest from
        the band first (`planner.operations.balance.pool_balance`'s ``distance``), each within what is left.
    leaders_only : bool
        Move preferred leaders only, copying nothing (Cruise Control's leader-only goals; a budget of 0).
    exclude_topics : sequence of str
        Topic names or full-match regular expressions whose partitions stay as they are (their load still
        counts); Cruise Control's ``excluded_topics``.
    exclude_brokers : sequence of int
        Brokers that take no new replica (they may give some, and leadership among their replicas moves);
        Cruise Control's ``excluded_brokers_for_replica_move``.
    dimension_bands : mapping of str to float, optional
        A band of its own for some dimensions (Cruise Control's per-goal balance thresholds); ``band`` for the
        others.

    Raises
    ------
    InputError
        An unknown pool, dimension, topic or broker, a negative band or budget, ``leaders_only`` with a budget.
    """
    known = [p for p in inputs.policy.pool_names if inputs.members(p)]
    for pool in pools:
        if pool not in inputs.policy.pool_names:
            raise InputError(f"--pool: unknown pool {pool!r}; the policy has {', '.join(inputs.policy.pool_names)}")
        if pool not in known:
            raise InputError(f"--pool: pool {pool!r} has no brokers to rebalance")
    for d in dimensions:
        if d not in ENGINE_DIMENSIONS:
            raise InputError(f"--dimension: unknown {d!r}; expected one of {', '.join(ENGINE_DIMENSIONS)}")
    if not 0 <= band:
        raise InputError(f"--band: expected a fraction >= 0, got {band}")
    own = dict(dimension_bands or {})
    for d, b in own.items():
        if d not in ENGINE_DIMENSIONS or not 0 <= b:
            raise InputError(f"--dimension-band: expected DIMENSION=FRACTION with a dimension of "
                             f"{', '.join(ENGINE_DIMENSIONS)} and a fraction >= 0, got {d}={b}")
    for option, value in (("--max-moved-bytes", max_moved_bytes), ("--max-moved-bytes-total", max_moved_bytes_total)):
        if value is not None and value < 0:
            raise InputError(f"{option}: expected bytes >= 0, got {value}")
        if value is not None and leaders_only:
            raise InputError(f"{option}: a leaders-only rebalance copies nothing; give one or the other")
    for b in exclude_brokers:
        if b not in inputs.brokers:
            raise InputError(f"--exclude-broker: broker {b} is not in the snapshot")
    excluded = set(select_topics(inputs.snapshot.partitions_by_topic, exclude_topics, "--exclude-topic")) \
        if exclude_topics else set()
    chosen = sorted(set(pools) or set(known))
    dims = tuple(d for d in ENGINE_DIMENSIONS if d in dimensions)
    budget = 0.0 if leaders_only else None if max_moved_bytes is None else float(max_moved_bytes)
    # a closed broker (unhealthy or cordoned) takes no replica: it is not held to the band (its load cannot rise)
    goals = {p: Goal(band=band, band_dimensions=dims, budget=budget, dimension_bands=tuple(sorted(own.items())),
                     band_brokers=np.array([b not in inputs.health.closed for b in inputs.members(p)]))
             for p in chosen}
    topics = {t: p for t, p in inputs.pool_topics(set(chosen)).items() if t not in excluded}
    closed = np.array(sorted(set(exclude_brokers)), dtype=np.int64)

    def optimiser(state: PoolState, goal: Goal) -> PoolResult:
        return pool_optimiser(replace(state, receives=state.receives & ~np.isin(state.broker_ids, closed)), goal)

    assignment: dict[tuple[str, int], tuple[int, ...]] = {}
    outcome, reasons, warnings, left = {}, {}, [], max_moved_bytes_total
    for group in _rounds(inputs, chosen, band, max_moved_bytes_total):
        goal_of = {p: goals[p] for p in group}
        if left is not None:
            goal_of = {p: replace(g, budget=float(left) if g.budget is None else min(g.budget, float(left)))
                       for p, g in goal_of.items()}
        placement = place_in_pools(
            inputs.snapshot, inputs.forecast, {t: p for t, p in topics.items() if p in group},
            {p: inputs.members(p) for p in group}, headroom={p: inputs.rules.limits(p).headroom for p in group},
            health=inputs.health, goals=goal_of, optimiser=optimiser,
        )
        assignment.update(placement.assignment)
        outcome.update(placement.pools)
        reasons.update(placement.reasons)
        warnings += placement.warnings
        if left is not None:
            left -= sum(placement.pools[p].moved_bytes for p in group if p in placement.pools)
    forced = sum(outcome[p].seed_bytes for p in chosen if p in outcome)
    op = operation_plan(
        inputs, "rebalance",
        arguments={"pools": list(pools), "band": band, "dimensions": list(dims), "max_moved_bytes": max_moved_bytes,
                   "max_moved_bytes_total": max_moved_bytes_total, "leaders_only": leaders_only,
                   "exclude_topics": list(exclude_topics), "exclude_brokers": sorted(set(exclude_brokers)),
                   "dimension_bands": dict(sorted(own.items()))},
        brokers_after=inputs.brokers, assignment=assignment, pools=chosen, band=band, forced_bytes=forced,
        placement=outcome, reasons=reasons, warnings=list(dict.fromkeys(warnings)), dimension_bands=own,
    )
    limit = 0 if leaders_only else max_moved_bytes if max_moved_bytes is not None else max_moved_bytes_total
    return _with_band_warnings(op, dims, band, limit, own)


def _rounds(inputs: OperationInputs, pools: Sequence[str], band: float, total: int | None) -> list[list[str]]:
    """The pools in the groups they are placed in: all at once, or under a cluster-wide budget one by one, the
    furthest from the band first (ties by name)."""
    if total is None:
        return [list(pools)]
    snap = inputs.snapshot
    loads = broker_loads(snap, inputs.forecast)
    distance = {}
    for p in pools:
        members = inputs.members(p)
        table = pool_balance(snap, loads, members, band, rack_pinned(snap, inputs.forecast, members))
        distance[p] = sum(float(v["distance"]) for v in table.values())
    return [[p] for p in sorted(pools, key=lambda p: (-distance[p], p))]


def _with_band_warnings(op: Operation, dims: Sequence[str], band: float, budget: int | None,
                        own: Mapping[str, float]) -> Operation:
    notes = []
    for pool, table in sorted(op.balance.items()):
        left = [f"{d} ({table[d]['after']['outside_band']}{f', ±{own[d]:.0%}' if d in own else ''})" for d in dims
                if d in table and table[d]["after"] and table[d]["after"]["outside_band"]]
        if left:
            why = ("moving leaders only" if budget == 0 else f"within the budget of {budget} bytes"
                   if budget is not None else "with the moves the engine found")
            notes.append(f"pool {pool!r}: brokers stay outside ±{band:.0%} of their fair share {why}: "
                         f"{', '.join(left)}")
    if not notes:
        return op
    return replace(op, plan=replace(op.plan, warnings=op.plan.warnings + tuple(notes)))

