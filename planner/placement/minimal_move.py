"""Movement-minimising placement inside pools: keep what is already in place, fill the rest by load.

For each pool, every replica already on a broker of its topic's pool stays. Missing replicas go, largest
partition first, to the least-loaded broker of the pool (load = the demand model's bytes and storage over the
broker's capacity × headroom, the largest dimension counting), preferring racks the partition does not use yet.
The current leader stays first when it stays; otherwise the replica on the broker with the least leader traffic
leads. Kept replicas keep their order, new ones follow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pools.demand import Demand, PartitionShare, replica_load
from pools.snapshot import DIMENSIONS, ClusterSnapshot, PartitionState

__all__ = ["Placement", "place_in_pools"]

_NW_OUT = DIMENSIONS.index("nw_out")


@dataclass(frozen=True)
class Placement:
    """Target replicas per partition (first = preferred leader) and what could not be honoured."""

    assignment: Mapping[tuple[str, int], tuple[int, ...]]
    warnings: tuple[str, ...] = ()


def place_in_pools(
    snapshot: ClusterSnapshot,
    demands: Mapping[str, Demand],
    topic_pool: Mapping[str, str],
    pool_brokers: Mapping[str, Sequence[int]],
    *,
    headroom: Mapping[str, Sequence[float]],
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

    Returns
    -------
    Placement
        Every partition of the placed topics. A pool with fewer brokers than a partition's replication factor
        keeps that partition's outside replicas to fill up (with a warning), so the RF never changes.

    Notes
    -----
    Runs in O(R · B) for R replicas to place and B brokers in their pool, after an O(total replicas) pass.
    """
    assignment: dict[tuple[str, int], tuple[int, ...]] = {}
    warnings: list[str] = []
    by_pool: dict[str, list[str]] = {}
    for topic, pool in sorted(topic_pool.items()):
        by_pool.setdefault(pool, []).append(topic)
    for pool, topics in sorted(by_pool.items()):
        brokers = tuple(sorted(pool_brokers.get(pool, ())))
        _place_pool(snapshot, demands, topics, brokers, tuple(headroom[pool]), assignment, warnings, pool)
    return Placement(dict(sorted(assignment.items())), tuple(warnings))


@dataclass
class _Part:
    state: PartitionState
    share: PartitionShare
    kept: list[int]
    leader: int | None


def _place_pool(
    snapshot: ClusterSnapshot,
    demands: Mapping[str, Demand],
    topics: list[str],
    brokers: tuple[int, ...],
    headroom: tuple[float, ...],
    out: dict[tuple[str, int], tuple[int, ...]],
    warnings: list[str],
    pool: str,
) -> None:
    index = {b: n for n, b in enumerate(brokers)}
    racks = [snapshot.broker_by_id[b].rack for b in brokers]
    cap = np.array([[snapshot.broker_by_id[b].capacity.get(d) * h for d, h in zip(DIMENSIONS, headroom)]
                    for b in brokers], dtype=float).reshape(len(brokers), len(DIMENSIONS))
    cap = np.where(cap > 0, cap, 1e-9)
    load = np.zeros_like(cap)
    parts = _kept_parts(snapshot, demands, topics, index, racks, load)
    short = 0
    placed: dict[tuple[str, int], list[int]] = {}
    for part in sorted(parts, key=lambda p: (-p.state.size_bytes, p.state.topic, p.state.partition)):
        rf = len(part.state.replicas)
        chosen = list(part.kept)
        follower = np.array(replica_load(part.share, rf, leader=False))
        while len(chosen) < rf:
            pick = _least_loaded(load, cap, follower, chosen, racks, index)
            if pick is None:
                break
            chosen.append(brokers[pick])
            load[pick] += follower
        if len(chosen) < rf:
            short += 1
            chosen += [b for b in part.state.replicas if b not in chosen][: rf - len(chosen)]
        leader = part.leader if part.leader in chosen else _least_leading(load, cap, chosen, index)
        if leader in index:
            lead = np.array(replica_load(part.share, rf, leader=True)) - follower
            load[index[leader]] += lead
        placed[part.state.topic, part.state.partition] = [leader] + [b for b in chosen if b != leader]
    stuck = _relieve(placed, {(p.state.topic, p.state.partition): p for p in parts}, load, cap, brokers, racks)
    out.update((key, tuple(replicas)) for key, replicas in placed.items())
    if stuck:
        warnings.append(f"pool {pool!r}: broker(s) {', '.join(map(str, stuck))} stay over capacity × headroom; "
                        "no replica could move to a broker with room")
    if short:
        warnings.append(
            f"pool {pool!r} has {len(brokers)} broker(s), fewer than the replication factor of {short} partition(s);"
            " their replicas outside the pool were kept"
        )


def _kept_parts(
    snapshot: ClusterSnapshot,
    demands: Mapping[str, Demand],
    topics: list[str],
    index: Mapping[int, int],
    racks: list[str | None],
    load: np.ndarray,
) -> list[_Part]:
    """Partitions of ``topics`` with the replicas already in the pool that stay, whose load is added to ``load``.

    A replica in the pool stays unless it shares a rack with one that stays before it (leader first) and keeping
    it would leave too few slots to reach min(RF, the pool's racks) racks.
    """
    n_racks = len({r for r in racks if r is not None})
    parts = []
    for topic in topics:
        demand = demands.get(topic)
        shares = {s.partition: s for s in demand.partitions} if demand else {}
        for state in snapshot.partitions_by_topic.get(topic, ()):
            share = shares.get(state.partition) or PartitionShare(state.partition, 0.0, 0.0, float(state.size_bytes))
            rf = len(state.replicas)
            leader = state.leader if state.leader in state.replicas else state.preferred_leader
            kept = _rack_diverse(
                sorted((b for b in state.replicas if b in index), key=lambda b: b != leader), rf, racks, index, n_racks
            )
            kept.sort(key=state.replicas.index)
            for b in kept:
                load[index[b]] += replica_load(share, rf, leader=False)
            parts.append(_Part(state, share, kept, leader if leader in kept else None))
    return parts


def _relieve(
    placed: dict[tuple[str, int], list[int]],
    parts: Mapping[tuple[str, int], _Part],
    load: np.ndarray,
    cap: np.ndarray,
    brokers: tuple[int, ...],
    racks: list[str | None],
) -> list[int]:
    """Move replicas (or leadership) off brokers over capacity × headroom; return the brokers left over.

    Each step takes the most over-utilised broker and its worst dimension (the next one when nothing relieves
    that), and applies the cheapest relief: a
    leadership swap or moving a replica placed by this plan (no extra bytes) before moving one that was
    already there, preferring reliefs that clear the excess; targets keep the partition's rack spread and
    must stay within their own limits.
    """
    index = {b: n for n, b in enumerate(brokers)}
    hosted: dict[int, set[tuple[str, int]]] = {n: set() for n in range(len(brokers))}
    for key, replicas in placed.items():
        for b in replicas:
            if b in index:
                hosted[index[b]].add(key)
    stuck: set[int] = set()
    for _ in range(4 * sum(len(h) for h in hosted.values()) + 1):
        worst = (load / cap).max(axis=1) if len(brokers) else np.zeros(0)
        worst[list(stuck)] = -np.inf
        if not len(worst) or worst.max() <= 1 + 1e-9:
            break
        n = int(np.argmax(worst))
        ratio = load[n] / cap[n]
        move = None
        for d in np.argsort(-ratio, kind="stable"):
            if ratio[d] <= 1 + 1e-9 or move is not None:
                break
            move = _best_relief(n, int(d), placed, parts, hosted, load, cap, brokers, racks, index)
        if move is None:
            stuck.add(n)
            continue
        stuck.clear()  # a move can make room for a broker that was stuck before
        key, target, swap = move
        part, replicas = parts[key], placed[key]
        rf = len(replicas)
        old = [np.array(replica_load(part.share, rf, leader=i == 0)) for i in range(rf)]
        for i, b in enumerate(replicas):
            if b in index:
                load[index[b]] -= old[i]
        b = brokers[n]
        if swap:
            replicas.remove(target)
            replicas.insert(0, target)
        else:
            replicas[replicas.index(b)] = target
            hosted[n].discard(key)
            hosted[index[target]].add(key)
        for i, r in enumerate(replicas):
            if r in index:
                load[index[r]] += old[0] if i == 0 else old[min(1, rf - 1)]
    return sorted(brokers[n] for n in stuck)


def _best_relief(n, d, placed, parts, hosted, load, cap, brokers, racks, index):
    """The cheapest (key, target broker, is_leader_swap) that lowers broker ``n`` in dimension ``d``."""
    b = brokers[n]
    excess = load[n, d] - cap[n, d]
    best = None
    for key in sorted(hosted[n]):
        part, replicas = parts[key], placed[key]
        rf = len(replicas)
        leading = replicas[0] == b
        mine = np.array(replica_load(part.share, rf, leader=leading))
        if mine[d] <= 0:
            continue
        options = []
        if leading and rf > 1:
            follower = np.array(replica_load(part.share, rf, leader=False))
            relief = mine - follower
            if relief[d] > 0:
                for other in replicas[1:]:
                    m = index.get(other)
                    if m is not None and np.all((load[m] + relief <= cap[m] * (1 + 1e-9)) | (relief <= 0)):
                        options.append((0, other, True, relief[d]))
        others = {racks[index[r]] for r in replicas if r != b and r in index}
        cost = part.state.size_bytes if b in part.state.replicas else 0
        fits = np.all((load + mine <= cap * (1 + 1e-9)) | (mine == 0), axis=1)
        for m in np.flatnonzero(fits):
            target = brokers[m]
            if target in replicas or (racks[m] is not None and racks[m] != racks[n] and racks[m] in others):
                continue
            options.append((cost, target, False, mine[d]))
            break
        for cost, target, swap, relief in options:
            rank = (cost > 0, relief < excess, cost, -relief, key)
            if best is None or rank < best[0]:
                best = (rank, (key, target, swap))
        if best is not None and best[0][:3] == (False, False, 0):
            break
    return None if best is None else best[1]


def _rack_diverse(
    candidates: list[int], rf: int, racks: list[str | None], index: Mapping[int, int], n_racks: int
) -> list[int]:
    need = min(rf, n_racks)
    kept: list[int] = []
    used: set[str] = set()
    for b in candidates:
        rack = racks[index[b]]
        if rack is not None and rack in used and rf - len(kept) - 1 < need - len(used):
            continue
        kept.append(b)
        if rack is not None:
            used.add(rack)
    return kept


def _least_loaded(
    load: np.ndarray,
    cap: np.ndarray,
    add: np.ndarray,
    chosen: list[int],
    racks: list[str | None],
    index: Mapping[int, int],
) -> int | None:
    """Index of the broker whose largest utilisation after adding ``add`` is lowest, on a new rack if any."""
    allowed = np.ones(len(racks), dtype=bool)
    for b in chosen:
        if b in index:
            allowed[index[b]] = False
    if not allowed.any():
        return None
    used = {racks[index[b]] for b in chosen if b in index}
    fresh = allowed & np.array([r is None or r not in used for r in racks]) if used else allowed
    mask = fresh if fresh.any() else allowed
    score = ((load + add) / cap).max(axis=1)
    score = np.where(mask, score, np.inf)
    return int(np.argmin(score))


def _least_leading(load: np.ndarray, cap: np.ndarray, chosen: list[int], index: Mapping[int, int]) -> int | None:
    """The chosen broker with the lowest network-out utilisation (leaders carry the consumer traffic)."""
    inside = [b for b in chosen if b in index]
    if not inside:
        return chosen[0] if chosen else None
    return min(inside, key=lambda b: (load[index[b], _NW_OUT] / cap[index[b], _NW_OUT], b))
