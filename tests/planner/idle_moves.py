"""An independent judge of a plan's moves: which move relieves, fills, repairs, isolates or evacuates nothing.

A move (a partition whose replica list changes) does something when undoing it alone (its current replicas back,
every other move kept) would

- change the replication factor back, put a replica back outside its topic's pool or on a drained or unhealthy
  broker, or leave the partition on fewer racks than min(RF, racks of its pool) (it isolates, evacuates, repairs);
- or leave some broker it touches further over capacity × headroom, or further outside ±``band`` of its fair share
  (`planner.placement.engine.fair_share`, per pool) in some dimension of `ENGINE_DIMENSIONS` (it relieves or
  fills).

A move that isolates, evacuates or changes the replication factor does something, but it may also drop a replica
it could keep: a current replica on a broker of the topic's pool (not drained, not unhealthy) that leaves although
putting it back in place of one of the new replicas (rack spread kept) would leave every broker it touches no
further over its limit or outside its band. Such a move is larger than its reason, and the judge lists it too.

The judge is deliberately lenient (every broker is banded in every dimension, whatever the operation's goal), so
a move it calls idle has no reason under any goal. It recomputes loads from the snapshot and demands
(`planner.operations.balance.broker_loads`), never from the planner's numbers.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from planner.operations.balance import broker_loads, rack_pinned
from planner.placement.engine import ENGINE_DIMENSIONS, band_weights, fair_share
from pools.demand import Demand
from pools.health import cluster_health
from pools.new_brokers import with_planned_brokers
from pools.plan_file import PartitionMove, Plan
from pools.policy import PoolPolicy
from pools.pool_rules import PoolRules
from pools.snapshot import DIMENSIONS, ClusterSnapshot

_EPS = 1e-6  # relative: a change smaller than this share of the bound is no change


def idle_moves(snapshot: ClusterSnapshot, policy: PoolPolicy, plan: Plan, demands: Mapping[str, Demand],
               band: float = 0.1) -> list[PartitionMove]:
    """The moves of ``plan`` that do nothing (see the module docstring), on the cluster the plan applies to (its
    brokers still to buy joined)."""
    snapshot = with_planned_brokers(snapshot, plan.planned_brokers)
    rules = PoolRules.from_policy(policy, horizon_days=plan.horizon_days)
    assignment = {(m.topic, m.partition): m.replicas for m in plan.partitions}
    with_load = broker_loads(snapshot, demands, assignment)
    rack = {b.id: b.rack for b in snapshot.brokers}
    gone = set(plan.drained) | set(cluster_health(snapshot).brokers)
    members: dict[str, list[int]] = {}
    for b, p in plan.brokers.items():
        if p is not None:
            members.setdefault(p, []).append(b)
    share = {p: _shares(snapshot, demands, sorted(ids), with_load, assignment) for p, ids in members.items()}
    idle = []
    for m in plan.moves:
        pool = plan.topics.get(m.topic)
        if len(m.old_replicas) != len(m.replicas) or any(plan.brokers.get(b) != pool or b in gone
                                                         for b in m.old_replicas):
            if _drops_a_keepable_replica(snapshot, demands, m, pool, plan, gone, assignment, with_load, rules,
                                         share.get(pool, {}), members.get(pool, ()), band):
                idle.append(m)
            continue
        racks = {rack[b] for b in members.get(pool, ()) if rack[b] is not None}
        if racks and not _spread(m.old_replicas, rack, len(racks)):
            continue
        without = broker_loads(snapshot, demands, assignment | {(m.topic, m.partition): m.old_replicas})
        if not any(_worse(with_load[b], without[b], _limit(snapshot, rules, b, plan), share[pool].get(b), band)
                   for b in {*m.old_replicas, *m.replicas} if plan.brokers.get(b) == pool):
            idle.append(m)
    return idle


def _spread(replicas: tuple[int, ...], rack: Mapping[int, str | None], racks: int) -> bool:
    on = [rack[b] for b in replicas]
    if len(replicas) <= racks:
        return None not in on and len(set(on)) == len(on)
    return len({r for r in on if r is not None}) == racks


def _limit(snapshot: ClusterSnapshot, rules: PoolRules, b: int, plan: Plan) -> np.ndarray:
    cap = np.array([snapshot.broker_by_id[b].capacity.get(d) for d in DIMENSIONS])
    out = np.full(len(ENGINE_DIMENSIONS), np.inf)
    out[: len(DIMENSIONS)] = cap * np.asarray(rules.limits(plan.brokers[b]).headroom)
    return out


def _shares(snapshot: ClusterSnapshot, demands, ids: list[int], load, assignment) -> dict[int, np.ndarray]:
    cap = np.array([[snapshot.broker_by_id[b].capacity.get(d) for d in DIMENSIONS] for b in ids], dtype=float)
    racks = sorted({str(snapshot.broker_by_id[b].rack) for b in ids})
    rack = np.array([racks.index(str(snapshot.broker_by_id[b].rack)) if snapshot.broker_by_id[b].rack is not None
                     else -1 for b in ids])
    pinned = rack_pinned(snapshot, demands, ids, assignment)
    total = np.array([load[b] for b in ids]).sum(axis=0)
    fair = fair_share(total, band_weights(cap), rack, np.array([pinned[b] for b in ids]))
    return {b: fair[k] for k, b in enumerate(ids)}


def _worse(with_load: np.ndarray, without: np.ndarray, limit: np.ndarray, share: np.ndarray | None,
           band: float) -> bool:
    """Whether ``without`` is further over the limit or outside the band than ``with_load`` in some dimension."""
    def outside(load: np.ndarray) -> np.ndarray:
        over = np.where(np.isfinite(limit), np.maximum(load - limit, 0.0), 0.0)
        if share is None:
            return over
        return over + np.maximum(load - (1 + band) * share, 0.0) + np.maximum((1 - band) * share - load, 0.0)

    scale = np.where(np.isfinite(limit), limit, 0.0) + (np.abs(share) if share is not None else 0.0) + 1e-9
    return bool(((outside(without) - outside(with_load)) > _EPS * scale).any())


def _drops_a_keepable_replica(snapshot, demands, m: PartitionMove, pool, plan: Plan, gone: set[int], assignment,
                              with_load, rules: PoolRules, share, members, band: float) -> bool:
    """Whether ``m`` drops a current replica on a broker of ``pool`` that could come back in place of one of its
    new replicas (rack spread kept) with no broker it touches worse off (see the module docstring)."""
    rack = {b.id: b.rack for b in snapshot.brokers}
    racks = {rack[b] for b in members if rack[b] is not None}
    dropped = [b for b in m.old_replicas if b not in m.replicas and plan.brokers.get(b) == pool and b not in gone]
    for old in dropped:
        for new in m.adding:
            row = tuple(old if b == new else b for b in m.replicas)
            if racks and not _spread(row, rack, len(racks)):
                continue
            without = broker_loads(snapshot, demands, assignment | {(m.topic, m.partition): row})
            if not any(_worse(with_load[b], without[b], _limit(snapshot, rules, b, plan), share.get(b), band)
                       for b in (old, new)):
                return True
    return False
