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

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from planner.operations.outcome import Operation, operation_plan
from planner.operations.scope import OperationInputs
from planner.operations.distribution import pool_optimiser
from planner.placement.engine import ENGINE_DIMENSIONS, Goal
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

    Raises
    ------
    InputError
        An unknown pool or dimension, a negative band or budget.
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
    if max_moved_bytes is not None and max_moved_bytes < 0:
        raise InputError(f"--max-moved-bytes: expected bytes >= 0, got {max_moved_bytes}")
    chosen = sorted(set(pools) or set(known))
    dims = tuple(d for d in ENGINE_DIMENSIONS if d in dimensions)
    budget = None if max_moved_bytes is None else float(max_moved_bytes)
    # a closed broker (unhealthy or cordoned) takes no replica: it is not held to the band (its load cannot rise)
    goals = {p: Goal(band=band, band_dimensions=dims, budget=budget,
                     band_brokers=np.array([b not in inputs.health.closed for b in inputs.members(p)]))
             for p in chosen}
    placement = place_in_pools(
        inputs.snapshot, inputs.forecast, inputs.pool_topics(set(chosen)), {p: inputs.members(p) for p in chosen},
        headroom={p: inputs.rules.limits(p).headroom for p in chosen}, health=inputs.health,
        goals=goals, optimiser=pool_optimiser,
    )
    forced = sum(placement.pools[p].seed_bytes for p in chosen if p in placement.pools)
    op = operation_plan(
        inputs, "rebalance",
        arguments={"pools": list(pools), "band": band, "dimensions": list(dims),
                   "max_moved_bytes": max_moved_bytes},
        brokers_after=inputs.brokers, assignment=placement.assignment, pools=chosen, band=band, forced_bytes=forced,
        placement=placement.pools, warnings=placement.warnings,
    )
    return _with_band_warnings(op, dims, band, max_moved_bytes)


def _with_band_warnings(op: Operation, dims: Sequence[str], band: float, budget: int | None) -> Operation:
    notes = []
    for pool, table in sorted(op.balance.items()):
        left = [f"{d} ({table[d]['after']['outside_band']})" for d in dims
                if d in table and table[d]["after"] and table[d]["after"]["outside_band"]]
        if left:
            why = f"within the budget of {budget} bytes" if budget is not None else "with the moves the engine found"
            notes.append(f"pool {pool!r}: brokers stay outside ±{band:.0%} of their fair share {why}: {', '.join(left)}")
    if not notes:
        return op
    return replace(op, plan=replace(op.plan, warnings=op.plan.warnings + tuple(notes)))

