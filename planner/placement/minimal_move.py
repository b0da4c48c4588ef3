"""Movement-minimising placement inside pools: the seed of `pools.fill`, optimised by `planner.placement.engine`.

For each pool:

1. Held partitions (`pools.health`: offline, under-replicated, mid-reassignment, or with a replica on an
   unhealthy broker) keep their replicas; their load stays where it is.
2. `pools.fill` keeps every replica already on a broker of the pool and places the missing ones on the
   least-loaded brokers (the seed, the same placement the audit's fixes use).
3. `planner.placement.engine` brings every broker under headroom × capacity in every dimension and gives each
   broker that joins the pool a fair share: within `FAIR_SHARE_BAND` of the pool's mean utilisation in every
   dimension (Cruise Control's distribution goals, at its default 1.10 threshold), moving replicas and
   preferred leaders (zero-copy) at the fewest copied bytes. What it cannot reach is a warning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from planner.placement.engine import ENGINE_DIMENSIONS, Goal, PoolResult, PoolState, optimise
from pools.audit.index import ClusterArrays, cluster_arrays
from pools.demand import Demand, PartitionLoads, partition_loads
from pools.fill import fill_pool, replica_loads
from pools.health import ClusterHealth, cluster_health
from pools.snapshot import DIMENSIONS, ClusterSnapshot

__all__ = ["FAIR_SHARE_BAND", "PoolPlacement", "Placement", "place_in_pools"]

#: A joining broker's fair share: within ±10 % of the pool's mean utilisation, per dimension.
FAIR_SHARE_BAND = 0.10


@dataclass(frozen=True)
class PoolPlacement:
    """What placing one pool cost: bytes the seed had to copy (replicas entering the pool), bytes the engine
    copied on top (relief and fair share), preferred-leader changes, and how the engine ended."""

    seed_bytes: int
    moved_bytes: int
    leader_changes: int
    status: str
    gap: float
    candidates: int

    def to_dict(self) -> dict[str, int | float | str]:
        return {"seed_bytes": self.seed_bytes, "moved_bytes": self.moved_bytes,
                "extra_bytes": self.moved_bytes - self.seed_bytes, "leader_changes": self.leader_changes,
                "status": self.status, "gap": round(self.gap, 6), "candidates": self.candidates}


@dataclass(frozen=True)
class Placement:
    """Target replicas per partition (first = preferred leader), what could not be honoured, and per-pool costs."""

    assignment: Mapping[tuple[str, int], tuple[int, ...]]
    warnings: tuple[str, ...] = ()
    pools: Mapping[str, PoolPlacement] = field(default_factory=dict)


def place_in_pools(
    snapshot: ClusterSnapshot,
    demands: Mapping[str, Demand],
    topic_pool: Mapping[str, str],
    pool_brokers: Mapping[str, Sequence[int]],
    *,
    headroom: Mapping[str, Sequence[float]],
    joining: Mapping[str, Sequence[int]] | None = None,
    health: ClusterHealth | None = None,
) -> Placement:
    """Place every partition of every topic in ``topic_pool`` inside its pool, moving as little as possible.

    Parameters
    ----------
    snapshot : ClusterSnapshot
        Current replicas, leaders, sizes, broker racks and capacities.
    demands : mapping of str to Demand
        Per-topic load from `pools.demand.topic_demand` (usually at the forecast).
    topic_pool : mapping of str to str
        The pool of each topic to place.
    pool_brokers : mapping of str to sequence of int
        The real brokers of each pool.
    headroom : mapping of str to sequence of float
        Usable fraction of capacity per pool, in `DIMENSIONS` order.
    joining : mapping of str to sequence of int, optional
        Brokers that join each pool: each gets a fair share (see `FAIR_SHARE_BAND`).
    health : ClusterHealth, optional
        `pools.health.cluster_health` of the snapshot (computed when omitted).

    Returns
    -------
    Placement
        Every partition of the placed topics. A pool with fewer brokers than a partition's replication factor
        keeps that partition's outside replicas to fill up (with a warning), so the RF never changes.
    """
    a = cluster_arrays(snapshot)
    loads = partition_loads(snapshot, demands)
    health = cluster_health(snapshot) if health is None else health
    held = _held_mask(a, snapshot, health)
    topic_pos = {t: i for i, t in enumerate(a.topics)}
    pools = sorted(set(topic_pool.values()))
    topic_pool_idx = np.full(len(a.topics), -1, dtype=np.int64)
    for topic, pool in topic_pool.items():
        if topic in topic_pos:
            topic_pool_idx[topic_pos[topic]] = pools.index(pool)
    part_pool = topic_pool_idx[a.part_topic] if len(a.part_topic) else np.zeros(0, dtype=np.int64)
    unhealthy = np.isin(a.broker_ids, np.fromiter(health.brokers, np.int64, len(health.brokers)))
    target = _current_targets(a)
    capacity = np.array([[b.capacity.get(d) for d in DIMENSIONS] for b in snapshot.brokers],
                        dtype=float).reshape(len(snapshot.brokers), len(DIMENSIONS))
    assignment: dict[tuple[str, int], tuple[int, ...]] = {}
    warnings: list[str] = []
    outcome: dict[str, PoolPlacement] = {}
    for j, pool in enumerate(pools):
        ids = np.array(sorted(pool_brokers.get(pool, ())), dtype=np.int64)
        brokers = np.searchsorted(a.broker_ids, ids)
        parts = np.flatnonzero((part_pool == j) & ~held)
        fixed = np.flatnonzero(part_pool != j) if len(parts) else np.zeros(0, dtype=np.int64)
        placed, result, seed_bytes = _place_pool(a, loads, parts, brokers, fixed, target, capacity[brokers],
                                                 unhealthy[brokers],
                                                 np.asarray(headroom[pool], dtype=float),
                                                 set(joining.get(pool, ())) if joining else set())
        target[parts] = placed
        if result is not None:
            outcome[pool] = PoolPlacement(seed_bytes, result.moved_bytes, result.leader_changes, result.status,
                                          result.gap, result.candidates)
            warnings += _warnings(pool, ids, result, set(joining.get(pool, ())) if joining else set())
        short = int(((placed >= 0) & ~np.isin(placed, brokers)).any(axis=1).sum()) if len(parts) else 0
        if short:
            warnings.append(
                f"pool {pool!r} has {len(ids)} broker(s), fewer than the replication factor of {short} "
                "partition(s); their replicas outside the pool were kept"
            )
    warnings += [f"cluster health: {line}" for line in health.summary()] if health.partitions or health.brokers else []
    ids = np.append(a.broker_ids, -1)
    placed_parts = np.flatnonzero(part_pool >= 0)
    for i in placed_parts.tolist():
        p = snapshot.partitions[i]
        row = ids[target[i][target[i] >= 0]]
        new = tuple(int(b) for b in row)
        assignment[p.topic, p.partition] = p.replicas if new == p.replicas else new
    return Placement(assignment, tuple(warnings), outcome)


def _held_mask(a: ClusterArrays, snapshot: ClusterSnapshot, health: ClusterHealth) -> np.ndarray:
    held = np.zeros(len(a.part_rf), dtype=bool)
    if health.partitions:
        index = {(p.topic, p.partition): i for i, p in enumerate(snapshot.partitions)
                 if (p.topic, p.partition) in health.partitions}
        held[list(index.values())] = True
    return held


def _current_targets(a: ClusterArrays) -> np.ndarray:
    """Every partition's current replicas as broker positions (-1 padding); unknown brokers are -1 too."""
    width = int(a.part_rf.max()) if len(a.part_rf) else 0
    out = np.full((len(a.part_rf), width), -1, dtype=np.int64)
    out[a.rep_part, a.rep_pos] = np.where(a.rep_broker < a.n_brokers, a.rep_broker, -1)
    return out


def _place_pool(a, loads: PartitionLoads, parts, brokers, fixed, target, cap, excluded, headroom, joining):
    """The seed and the engine's result for one pool; (targets of ``parts``, result or None, seed bytes)."""
    limit = cap * headroom[None, :]
    base = _base_load(a, loads, fixed, target, brokers)
    fill = fill_pool(a, parts, brokers, loads, limit=limit, base=base[:, : len(DIMENSIONS)], excluded=excluded)
    placed = np.full((len(parts), target.shape[1]), -1, dtype=np.int64)
    placed[:, : fill.target.shape[1]] = fill.target
    if not len(parts) or not len(brokers):
        return placed, None, 0
    local = np.full(a.n_brokers + 1, -1, dtype=np.int64)
    local[brokers] = np.arange(len(brokers))
    seed_local = np.where(placed >= 0, local[np.maximum(placed, 0)], -1)
    inside = ~((placed >= 0) & (seed_local < 0)).any(axis=1)  # partitions short of brokers stay as seeded
    engine_parts = parts[inside]
    state = _state(a, loads, engine_parts, brokers, cap, limit, base, excluded, seed_local[inside], local,
                   extra_fixed=(parts[~inside], placed[~inside]))
    goal = Goal(band=FAIR_SHARE_BAND, band_brokers=np.isin(a.broker_ids[brokers], list(joining))) if joining \
        else Goal()
    result = optimise(state, goal)
    seed_bytes = _copied_bytes(state, state.seed)
    out = placed.copy()
    out[inside] = np.where(result.target >= 0, brokers[np.maximum(result.target, 0)], -1)
    return out, result, seed_bytes


def _base_load(a, loads, fixed, target, brokers) -> np.ndarray:
    """Load that partitions placed elsewhere (other pools, held ones) leave on the pool's brokers, leader first."""
    base = np.zeros((len(brokers), len(ENGINE_DIMENSIONS)))
    if not len(fixed):
        return base
    local = np.full(a.n_brokers + 1, -1, dtype=np.int64)
    local[brokers] = np.arange(len(brokers))
    rows = target[fixed]
    here = np.where(rows >= 0, local[np.maximum(rows, 0)], -1)
    touched = np.flatnonzero((here >= 0).any(axis=1))
    if not len(touched):
        return base
    follower, extra = _engine_loads(loads, fixed[touched], a.part_rf[fixed[touched]])
    r, s = np.nonzero(here[touched] >= 0)
    np.add.at(base, here[touched][r, s], follower[r])
    lead = here[touched][:, 0]
    np.add.at(base, lead[lead >= 0], extra[lead >= 0])
    return base


def _engine_loads(loads: PartitionLoads, parts: np.ndarray, rf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Follower load and leader extra in `ENGINE_DIMENSIONS`: the capacity dimensions, leaders, leaders' bytes-in."""
    follower4, extra4 = replica_loads(loads, parts, rf)
    follower = np.zeros((len(parts), len(ENGINE_DIMENSIONS)))
    extra = np.zeros_like(follower)
    follower[:, :4], extra[:, :4] = follower4, extra4
    extra[:, 4] = 1.0
    extra[:, 5] = loads.bytes_in[parts]
    return follower, extra


def _state(a, loads, parts, brokers, cap, limit, base, excluded, seed, local, *, extra_fixed) -> PoolState:
    rf = a.part_rf[parts]
    width = seed.shape[1]
    holders = np.full((len(parts), width), -1, dtype=np.int64)
    cur = _current_targets(a)[parts] if len(parts) else np.zeros((0, width), dtype=np.int64)
    holders[:, : cur.shape[1]] = np.where(cur >= 0, local[np.maximum(cur, 0)], -1)[:, :width]
    preferred = holders[:, 0].copy() if width else np.zeros(0, dtype=np.int64)
    follower, extra = _engine_loads(loads, parts, rf)
    short_parts, short_rows = extra_fixed
    base = base.copy()
    if len(short_parts):
        f, x = _engine_loads(loads, short_parts, a.part_rf[short_parts])
        here = np.where(short_rows >= 0, local[np.maximum(short_rows, 0)], -1)
        r, s = np.nonzero(here >= 0)
        np.add.at(base, here[r, s], f[r])
        lead = here[:, 0]
        np.add.at(base, lead[lead >= 0], x[lead >= 0])
    return PoolState(
        broker_ids=a.broker_ids[brokers], rack=a.broker_rack[brokers], capacity=cap, limit=limit,
        receives=~excluded, base=base, size=a.part_size[parts].astype(float), holders=holders,
        preferred=preferred, seed=seed, follower=follower, extra=extra,
    )


def _copied_bytes(state: PoolState, target: np.ndarray) -> int:
    new = (target >= 0) & ~np.any(target[:, :, None] == state.holders[:, None, :], axis=2)
    return int((new.sum(axis=1) * state.size).sum())


def _warnings(pool: str, ids: np.ndarray, result: PoolResult, joining: set[int]) -> list[str]:
    out = []
    over = np.flatnonzero(result.overload.sum(axis=1) > 0)
    if len(over):
        names = ", ".join(str(int(ids[b])) for b in over)
        dims = "; ".join(f"{int(ids[b])}: {', '.join(DIMENSIONS[d] for d in np.flatnonzero(result.overload[b]))}"
                         for b in over)
        out.append(f"pool {pool!r}: broker(s) {names} stay over capacity × headroom ({dims}); no placement within "
                   "the pool relieves them")
    for b in np.flatnonzero(np.isin(ids, list(joining))).tolist():
        short = [ENGINE_DIMENSIONS[d] for d in np.flatnonzero(result.outside_band[b] > 0) if d < len(DIMENSIONS)]
        if short:
            out.append(f"pool {pool!r}: joining broker {int(ids[b])} ends outside ±{FAIR_SHARE_BAND:.0%} of the "
                       f"pool's mean utilisation in {', '.join(short)}")
    return out
