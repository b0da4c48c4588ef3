"""A reason for every move of a plan: what undoing the move alone would break (`pools.plan.Reason`).

The first rule that applies names a move:

1. ``replication_factor``: the replica list changes length;
2. ``evacuate``: a replica leaves a broker the operation drains or that is unhealthy (`pools.health`);
3. ``isolate``: a replica leaves a broker outside the topic's pool;
4. what the placement engine found (`planner.placement.engine.prune_moves`): ``rack_spread``, or a broker that
   undoing the move would put over its limit (``relieve``), above (``balance``) or below (``fill``) its band;
5. ``rack_spread`` when the current replicas span fewer than min(RF, racks of the pool) racks.

A move none of these explains keeps no reason (`unexplained` lists them): the planner's own plans have none.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace

from planner.placement.engine import MoveReason
from pools.plan import PartitionMove, Plan, Reason
from pools.snapshot import ClusterSnapshot

__all__ = ["with_reasons", "unexplained", "spans_racks"]


def with_reasons(plan: Plan, snapshot: ClusterSnapshot, placed: Mapping[tuple[str, int], MoveReason],
                 unhealthy: Collection[int] = ()) -> Plan:
    """``plan`` with the `Reason` of every move (see the module docstring).

    Parameters
    ----------
    plan : Plan
    snapshot : ClusterSnapshot
        The cluster the plan is for (broker racks).
    placed : mapping of (topic, partition) to MoveReason
        What the engine found per partition it placed (`planner.placement.minimal_move.Placement.reasons`).
    unhealthy : collection of int
        Brokers whose replicas are evacuated (`pools.health.ClusterHealth.brokers`).
    """
    gone = set(plan.drained) | set(unhealthy)
    rack = {b.id: b.rack for b in snapshot.brokers}
    racks: dict[str | None, int] = {}
    for b, pool in plan.brokers.items():
        if pool is not None and rack.get(b) is not None:
            racks.setdefault(pool, set()).add(rack[b])  # type: ignore[attr-defined]
    width = {pool: len(r) for pool, r in racks.items()}  # type: ignore[arg-type]
    moves = []
    for m in plan.partitions:
        reason = _reason(m, plan, placed.get((m.topic, m.partition)), gone, rack, width) if m.changed else None
        moves.append(replace(m, reason=reason))
    return replace(plan, partitions=tuple(moves))


def _reason(m: PartitionMove, plan: Plan, found: MoveReason | None, gone: set[int],
            rack: Mapping[int, str | None], width: Mapping[str | None, int]) -> Reason | None:
    leader_only = set(m.old_replicas) == set(m.replicas)
    if len(m.old_replicas) != len(m.replicas):
        return Reason("replication_factor")
    left = m.removing
    evacuated = tuple(b for b in left if b in gone)
    if evacuated:
        return Reason("evacuate", brokers=evacuated)
    pool = plan.topics.get(m.topic)
    outside = tuple(b for b in left if plan.brokers.get(b) != pool)
    if outside:
        return Reason("isolate", brokers=outside)
    if found is not None and found.rule in ("relieve", "balance", "fill"):
        return Reason(found.rule, found.broker, found.dimension, found.bound, found.without, leader_only=leader_only)
    if not spans_racks(m.old_replicas, rack, width.get(pool, 0)) and spans_racks(m.replicas, rack, width.get(pool, 0)):
        return Reason("rack_spread", leader_only=leader_only)
    return None


def spans_racks(replicas: tuple[int, ...], rack: Mapping[int, str | None], racks: int) -> bool:
    """Whether ``replicas`` span min(RF, ``racks``) racks, as the placement requires: RF ≤ racks → distinct racks
    and none unracked; RF > racks → every rack (no racks: always).

    >>> rack = {1: "a", 2: "a", 3: "b"}
    >>> spans_racks((1, 2), rack, 2), spans_racks((1, 3), rack, 2), spans_racks((1, 2, 3), rack, 2)
    (False, True, True)
    """
    if racks == 0:
        return True
    on = [rack.get(b) for b in replicas]
    if len(replicas) <= racks:
        return None not in on and len(set(on)) == len(on)
    return len({r for r in on if r is not None}) >= racks


def unexplained(plan: Plan) -> tuple[PartitionMove, ...]:
    """The moves of ``plan`` that carry no reason."""
    return tuple(m for m in plan.moves if m.reason is None)
