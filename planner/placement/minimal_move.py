"""Movement-minimising placement inside pools: the seed of `pools.fill`, optimised by `planner.placement.engine`.

For each pool:

1. Held partitions (`pools.health`: offline, under-replicated, mid-reassignment, or with a replica on an
   unhealthy broker) keep their replicas; their load stays where it is. Partitions an operation evacuates
   from drained brokers (`pools.health.ClusterHealth.evacuating`) are placed by the seed alone: their
   replicas on the drained brokers are replaced and no other replica of theirs moves.
2. `pools.fill` keeps every replica already on a broker of the pool and places the missing ones on the
   least-loaded brokers (the seed, the same placement the audit's fixes use).
3. `planner.placement.engine` brings every broker under headroom × capacity in every dimension and gives each
   broker that joins the pool its fair share (`planner.placement.engine.fair_share`), within `FAIR_SHARE_BAND`
   in every dimension (Cruise Control's distribution goals, at its default 1.10 threshold), moving replicas and
   preferred leaders (zero-copy) at the fewest copied bytes. What it cannot reach is a warning.
4. `planner.placement.engine.prune_moves` undoes every move that relieves, fills or repairs nothing (the MIP gap
   hides moves of empty partitions) and says why each kept move stays.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from operator import attrgetter

import numpy as np

from planner.placement.engine import (ENGINE_DIMENSIONS, TIME_LIMITED, Goal, PoolResult, PoolState,
                                      evaluate, optimise, prune_moves)
from pools.cluster_arrays import ClusterArrays, cluster_arrays
from pools.demand import Demand, PartitionLoads, partition_loads
from pools.fill import current_targets, held_mask, load_on, replica_loads, seed_pools
from pools.health import ClusterHealth, cluster_health
from pools.plan_file import Reason
from pools.snapshot import DIMENSIONS, ClusterSnapshot

__all__ = ["FAIR_SHARE_BAND", "PoolPlacement", "Placement", "place_in_pools", "engine_loads"]

#: A joining broker's fair share: within ±10 % of its fair share, per dimension.
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
    """Target replicas per partition (first = preferred leader), what could not be honoured, and per-pool costs.

    ``target`` holds the same as an array aligned with the snapshot's partitions (broker ids, -1 padding at the
    end of each row): the assignment's replicas, the current ones for partitions it does not name. ``reasons``
    says, per partition the engine moves, what undoing the move would break (`planner.placement.engine.prune_moves`,
    its ``broker`` a Kafka broker id).
    """

    assignment: Mapping[tuple[str, int], tuple[int, ...]]
    warnings: tuple[str, ...] = ()
    pools: Mapping[str, PoolPlacement] = field(default_factory=dict)
    target: np.ndarray | None = field(default=None, compare=False, repr=False)
    reasons: Mapping[tuple[str, int], Reason] = field(default_factory=dict, compare=False, repr=False)


def place_in_pools(
    snapshot: ClusterSnapshot,
    demands: Mapping[str, Demand],
    topic_pool: Mapping[str, str],
    pool_brokers: Mapping[str, Sequence[int]],
    *,
    headroom: Mapping[str, Sequence[float]],
    joining: Mapping[str, Sequence[int]] | None = None,
    health: ClusterHealth | None = None,
    goals: Mapping[str, Goal] | None = None,
    optimiser: Callable[..., PoolResult] = optimise,
    time_limit: float | None = None,
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
    goals : mapping of str to Goal, optional
        A pool's goal in place of the default (relief, and the fair share of ``joining`` brokers): the day-2
        operations of `planner.operations` (a rebalance bands every broker, within a moved-bytes budget).
    optimiser : callable, optional
        What takes a pool's seed to its goal: the engine's `optimise` (default), or another search over the same
        `PoolState` (a rebalance of a large pool uses `planner.operations.distribution`). Called as
        ``optimiser(state, goal)``, with ``time_limit=seconds`` when ``time_limit`` is given.
    time_limit : float, optional
        Wall-clock seconds for the whole placement, a safety net only: the optimiser's work limits (rounds and
        branch-and-bound nodes) end each pool's search, so the placement is the same on any machine under any load
        unless this net fires; each pool may use what is left of it, and a pool it cuts short is named in the
        warnings. Default: the optimiser's own net.

    Returns
    -------
    Placement
        Every partition of the placed topics. A pool with fewer brokers than a partition's replication factor
        keeps that partition's outside replicas to fill up (with a warning), so the RF never changes.
    """
    a = cluster_arrays(snapshot)
    loads = partition_loads(snapshot, demands)
    health = cluster_health(snapshot) if health is None else health
    topic_pos = {t: i for i, t in enumerate(a.topics)}
    pools = sorted(set(topic_pool.values()))
    topic_pool_idx = np.full(len(a.topics), -1, dtype=np.int64)
    for topic, pool in topic_pool.items():
        if topic in topic_pos:
            topic_pool_idx[topic_pos[topic]] = pools.index(pool)
    part_pool = topic_pool_idx[a.part_topic] if len(a.part_topic) else np.zeros(0, dtype=np.int64)
    brokers = [np.searchsorted(a.broker_ids, np.array(sorted(pool_brokers.get(p, ())), dtype=np.int64))
               for p in pools]
    seed = seed_pools(snapshot, loads, part_pool, brokers, [np.asarray(headroom[p], dtype=float) for p in pools],
                      health)
    target = seed.target.copy()
    capacity = np.array([[b.capacity.get(d) for d in DIMENSIONS] for b in snapshot.brokers],
                        dtype=float).reshape(len(snapshot.brokers), len(DIMENSIONS))
    closed = health.closed_mask(a.broker_ids)
    fixed = seed.held | held_mask(snapshot, health.evacuated)
    everything = np.arange(len(a.part_rf))
    follower, extra = engine_loads(loads, everything, a.part_rf)
    total = load_on(a, np.arange(a.n_brokers), seed.target, follower, extra)
    current = current_targets(a)
    warnings: list[str] = []
    outcome: dict[str, PoolPlacement] = {}
    deadline = None if time_limit is None else time.monotonic() + time_limit
    reasons: dict[tuple[str, int], Reason] = {}
    for j, pool in enumerate(pools):
        ids = a.broker_ids[brokers[j]]
        parts = np.flatnonzero((part_pool == j) & ~fixed)
        rows = seed.target[parts]
        inside = ~((rows >= 0) & ~np.isin(rows, brokers[j])).any(axis=1)  # short partitions stay as seeded
        parts = parts[inside]
        if len(parts) and len(ids):
            mine = load_on(a, brokers[j], seed.target[parts], follower[parts], extra[parts])
            state = _state(a, parts, current[parts], brokers[j], capacity[brokers[j]],
                           np.asarray(headroom[pool], dtype=float), total[brokers[j]] - mine,
                           closed[brokers[j]], seed.target[parts], follower[parts], extra[parts])
            band = np.isin(ids, list(joining.get(pool, ()))) if joining else np.zeros(len(ids), dtype=bool)
            goal = goals.get(pool) if goals else None
            if goal is None:
                goal = Goal(band=FAIR_SHARE_BAND, band_brokers=band) if band.any() else Goal()
            if deadline is None:
                found = optimiser(state, goal)
            else:  # the safety net: what is left of it, never a share that a slower machine would shrink
                found = optimiser(state, goal, time_limit=max(0.0, deadline - time.monotonic()))
            pruned, why = prune_moves(state, goal, found.target)  # no move that relieves, fills or repairs nothing
            result = replace(evaluate(state, goal, pruned, found.status), gap=found.gap,
                             candidates=found.candidates, rounds=found.rounds)
            for k, reason in why.items():
                p = snapshot.partitions[int(parts[k])]
                reasons[p.topic, p.partition] = reason if reason.broker is None else \
                    replace(reason, broker=int(ids[reason.broker]))
            target[parts] = np.where(result.target >= 0, brokers[j][np.maximum(result.target, 0)], -1)
            outcome[pool] = PoolPlacement(_copied_bytes(state, state.seed), result.moved_bytes,
                                          result.leader_changes, result.status, result.gap, result.candidates)
            warnings += _warnings(pool, ids, result, set(joining.get(pool, ())) if joining else set())
        if seed.short.get(j):
            warnings.append(
                f"pool {pool!r} has {len(ids)} broker(s), fewer than the replication factor of {seed.short[j]} "
                "partition(s); their replicas outside the pool were kept"
            )
        if j in seed.stranded:
            warnings.append(_stranded_warning(pool, snapshot, seed.stranded[j], int((~closed[brokers[j]]).sum())))
    if health.partitions or health.brokers or health.evacuated:
        warnings += [f"cluster health: {line}" for line in health.summary()]
    warnings += [f"broker {b} is {health.why_closed(b)}: it takes no new replica" for b in sorted(health.cordoned)
                 if any(b in pool_brokers.get(p, ()) for p in pools)]
    rows = np.append(a.broker_ids, -1)[target]
    rows = np.take_along_axis(rows, np.argsort(rows < 0, axis=1, kind="stable"), axis=1)  # -1 padding last
    current = a.replica_ids()
    placed = part_pool >= 0
    rows = np.where(placed[:, None] & ~seed.held[:, None], rows, current)  # held: replicas on unknown brokers too
    return Placement(_assignment(snapshot, a, np.flatnonzero(placed), rows, current), tuple(warnings), outcome, rows,
                     reasons)


def _assignment(snapshot: ClusterSnapshot, a: ClusterArrays, placed: np.ndarray, rows: np.ndarray,
                current: np.ndarray) -> dict[tuple[str, int], tuple[int, ...]]:
    """The replicas of the ``placed`` partitions (positions): their row of ``rows`` (broker ids, -1 padding last)
    where it differs from ``current``, else the snapshot's own tuple. Built by C-level passes (map, zip): a new
    tuple only for a partition that moves."""
    moved = np.flatnonzero((rows[placed] != current[placed]).any(axis=1))
    replicas = list(map(attrgetter("replicas"), map(snapshot.partitions.__getitem__, placed.tolist())))
    counts = (rows[placed[moved]] >= 0).sum(axis=1)
    for k, row, n in zip(moved.tolist(), rows[placed[moved]].tolist(), counts.tolist(), strict=True):
        replicas[k] = tuple(row[:n])
    topics = np.array(a.topics, dtype=object)[a.part_topic[placed]].tolist()
    return dict(zip(zip(topics, a.part_id[placed].tolist()), replicas, strict=True))


def engine_loads(loads: PartitionLoads, parts: np.ndarray, rf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Follower load and leader extra in `ENGINE_DIMENSIONS`: the capacity dimensions, leaders, leaders' bytes-in."""
    follower4, extra4 = replica_loads(loads, parts, rf)
    follower = np.zeros((len(parts), len(ENGINE_DIMENSIONS)))
    extra = np.zeros_like(follower)
    follower[:, :4], extra[:, :4] = follower4, extra4
    extra[:, 4] = 1.0
    extra[:, 5] = loads.bytes_in[parts]
    return follower, extra


def _state(a: ClusterArrays, parts: np.ndarray, current: np.ndarray, brokers: np.ndarray, capacity: np.ndarray,
           headroom: np.ndarray, base: np.ndarray, excluded: np.ndarray, seed: np.ndarray, follower: np.ndarray,
           extra: np.ndarray) -> PoolState:
    """The engine's view of one pool: local broker positions, the seed, current holders (``current``: the
    partitions' `pools.fill.current_targets`) and preferred leaders."""
    local = np.full(a.n_brokers + 1, -1, dtype=np.int64)
    local[brokers] = np.arange(len(brokers))
    holders = np.where(current >= 0, local[np.maximum(current, 0)], -1)
    return PoolState(
        broker_ids=a.broker_ids[brokers], rack=a.broker_rack[brokers], capacity=capacity,
        limit=capacity * headroom[None, :], receives=~excluded, base=base, size=a.part_size[parts].astype(float),
        holders=holders, preferred=holders[:, 0].copy(), seed=np.where(seed >= 0, local[np.maximum(seed, 0)], -1),
        follower=follower, extra=extra,
    )


def _stranded_warning(pool: str, snapshot: ClusterSnapshot, parts: np.ndarray, n_open: int, shown: int = 5) -> str:
    """What a pool could not re-replicate: its partitions stranded on brokers the snapshot lacks (`pools.fill`)."""
    known = set(snapshot.broker_ids)
    picked = [snapshot.partitions[int(i)] for i in parts]
    gone = sorted({b for p in picked for b in p.replicas if b not in known})
    names = ", ".join(f"{p.topic}-{p.partition}" for p in picked[:shown])
    more = f" and {len(picked) - shown} more" if len(picked) > shown else ""
    return (f"pool {pool!r}: {len(picked)} partition(s) keep their replicas on broker(s) "
            f"{', '.join(map(str, gone))} that the snapshot lacks: the pool has {n_open} broker(s) open to a new "
            f"replica, too few for their replication factor (add brokers to the pool to re-replicate them): "
            f"{names}{more}")


def _copied_bytes(state: PoolState, target: np.ndarray) -> int:
    new = (target >= 0) & ~np.any(target[:, :, None] == state.holders[:, None, :], axis=2)
    return int((new.sum(axis=1) * state.size).sum())


def _warnings(pool: str, ids: np.ndarray, result: PoolResult, joining: set[int]) -> list[str]:
    out = []
    if result.status == TIME_LIMITED:
        out.append(f"pool {pool!r}: the placement stopped at its time limit (the wall-clock safety net, before its "
                   "work limits) with the best placement found by then; a placement cut short by time may differ "
                   "between runs and machines (poolplan plan: raise --time-limit)")
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
            out.append(f"pool {pool!r}: joining broker {int(ids[b])} ends outside ±{FAIR_SHARE_BAND:.0%} of its "
                       f"fair share in {', '.join(short)}")
    return out
