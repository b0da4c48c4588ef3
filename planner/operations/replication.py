"""``poolplan set-replication-factor``: raise or lower the replication factor of selected topics, inside their pools.

Yelp's ``set_replication_factor``, kafka-kit's ``rebuild --replication``, Cruise Control's ``topic_configuration``:

- **Raise**: each partition keeps its replicas, in their order (the preferred leader stays first), and gains
  the missing ones on the least-loaded receiving brokers of its topic's pool (utilisation: the busiest
  dimension over headroom × capacity, loads updated as replicas are added, largest partitions first), on a rack
  the partition does not use yet while one has a broker. Each new replica copies the partition once.
- **Lower**: the replica leading now stays first (the ISR-safe leader: it is in the ISR), then the other
  in-sync replicas in their order; the dropped ones are out-of-sync replicas first, then those outside the
  topic's pool (or on a broker of it that takes no replica), then those on the most loaded brokers, never
  leaving fewer racks than min(new RF, racks of the pool). Nothing is copied.

Refused as bad input (exit 2): a replication factor below a topic's ``min.insync.replicas`` (producers with
``acks=all`` would fail) or a topic in no pool; as infeasible (exit 1): more replicas than the pool has
receiving brokers. Held partitions (`pools.health`) keep their replicas, and a topic with one is refused. The
plan's ``operation.replication_factors`` names the new factor per topic, which the validator accepts instead
of an unchanged one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from planner.operations.balance import broker_loads
from planner.operations.outcome import Operation, operation_plan
from planner.operations.scope import OperationInputs, select_topics
from planner.placement.minimal_move import FAIR_SHARE_BAND
from pools.errors import InfeasibleError, InputError
from pools.snapshot import PartitionState

__all__ = ["set_replication_factor"]


def set_replication_factor(inputs: OperationInputs, topics: Sequence[str], replication_factor: int) -> Operation:
    """Give every topic matching one of ``topics`` (full-match regular expressions) ``replication_factor``.

    Raises
    ------
    InputError
        No topic matches, a bad pattern, a factor below 1 or below ``min.insync.replicas``, a topic in no pool.
    InfeasibleError
        A pool with fewer receiving brokers than the factor, or a selected topic with held partitions.
    """
    snap = inputs.snapshot
    if replication_factor < 1:
        raise InputError(f"--replication-factor: expected at least 1, got {replication_factor}")
    chosen = select_topics(snap.partitions_by_topic, topics, "--topic")
    for t in chosen:
        state = snap.topic_by_name.get(t)
        isr = state.min_insync_replicas if state is not None else 1
        if replication_factor < isr:
            raise InputError(f"--replication-factor: topic {t!r} has min.insync.replicas={isr}; a replication factor "
                             f"of {replication_factor} would make acks=all producers fail")
        if t not in inputs.topics:
            raise InputError(f"--topic: topic {t!r} is in no pool; give it one in the policy first")
    held = sorted((t, p) for (t, p) in inputs.health.partitions if t in chosen)
    if held:
        raise InfeasibleError(f"{len(held)} partition(s) of the selected topics must keep their replicas until "
                              f"repaired: {', '.join(f'{t}-{p}' for t, p in held[:5])}")
    rack = {b.id: b.rack for b in snap.brokers}
    loads = broker_loads(snap, inputs.forecast)
    assignment: dict[tuple[str, int], tuple[int, ...]] = {}
    for pool in sorted({inputs.topics[t] for t in chosen}):
        members = [b for b in inputs.members(pool) if b not in inputs.health.closed]
        if len(members) < replication_factor:
            raise InfeasibleError(f"pool {pool!r} has {len(members)} broker(s) that can take replicas, fewer than "
                                  f"the replication factor {replication_factor}")
        limit = {b: np.array(inputs.rules.limits(pool).broker_limit(snap.broker_by_id[b].capacity)) for b in members}
        racks = len({rack[b] for b in inputs.members(pool) if rack[b] is not None})
        parts = [p for t in chosen if inputs.topics[t] == pool for p in snap.partitions_by_topic[t]]
        for p in sorted(parts, key=lambda p: (-p.size_bytes, p.topic, p.partition)):
            if len(p.replicas) < replication_factor:
                new = _raise(p, replication_factor, members, rack, loads, limit)
            else:
                new = _lower(p, replication_factor, rack, loads, limit, racks)
            if new != p.replicas:
                assignment[p.topic, p.partition] = new
    factors = dict.fromkeys(chosen, replication_factor)
    return operation_plan(inputs, "replication-factor",
                          arguments={"topics": list(topics), "replication_factor": replication_factor},
                          brokers_after=inputs.brokers, assignment=assignment,
                          pools=sorted({inputs.topics[t] for t in chosen}), band=FAIR_SHARE_BAND,
                          forced_bytes=sum(_copied(snap, k, v) for k, v in assignment.items()),
                          extra={"replication_factors": factors})


def _copied(snap, key: tuple[str, int], replicas: tuple[int, ...]) -> int:
    """Bytes a new replica list copies (one partition size per broker that does not hold it yet)."""
    p = next(q for q in snap.partitions_by_topic[key[0]] if q.partition == key[1])
    return p.size_bytes * sum(b not in p.replicas for b in replicas)


def _utilisation(b: int, loads: Mapping[int, np.ndarray], limit: Mapping[int, np.ndarray]) -> float:
    return float(np.max(loads[b][:4] / np.where(limit[b] > 0, limit[b], 1e-9)))


def _raise(p: PartitionState, rf: int, members: Sequence[int], rack: Mapping[int, str | None],
           loads: dict[int, np.ndarray], limit: Mapping[int, np.ndarray]) -> tuple[int, ...]:
    """``p``'s replicas and the least-loaded brokers on unused racks first, up to ``rf``."""
    row = list(p.replicas)
    follower = _follower(p)
    while len(row) < rf:
        used = {rack[b] for b in row if rack.get(b) is not None}
        free = [b for b in members if b not in row]
        fresh = [b for b in free if rack[b] is not None and rack[b] not in used]
        pick = min(fresh or free, key=lambda b: (_utilisation(b, loads, limit), b))
        loads[pick] = loads[pick] + follower
        row.append(pick)
    return tuple(row)


def _lower(p: PartitionState, rf: int, rack: Mapping[int, str | None], loads: dict[int, np.ndarray],
           limit: Mapping[int, np.ndarray], racks: int) -> tuple[int, ...]:
    """The current leader first, then in-sync replicas in order; drop out-of-sync, then outside the pool, then
    the most loaded, while min(rf, racks) racks remain."""
    leader = p.leader if p.leader in p.replicas else p.replicas[0]
    keep = [leader] + [b for b in p.replicas if b != leader]
    need = min(rf, racks)
    follower = _follower(p)

    def cost(b: int) -> tuple[bool, bool, float, int]:  # out-of-sync first, then outside the pool, then the most loaded
        return (b in p.isr, b in limit, -_utilisation(b, loads, limit) if b in limit else 0.0, -b)

    while len(keep) > rf:
        for b in sorted(keep[1:], key=cost):
            rest = [x for x in keep if x != b]
            if len({rack[x] for x in rest if rack.get(x) is not None}) >= need or not racks:
                keep = rest
                if b in loads:
                    loads[b] = loads[b] - follower
                break
        else:  # no drop keeps the racks (replicas share racks already): drop the cheapest anyway
            b = sorted(keep[1:], key=cost)[0]
            keep.remove(b)
    return tuple(keep)


def _follower(p: PartitionState) -> np.ndarray:
    """A follower's load of ``p`` in the engine's dimensions: one replica, its disk (its size)."""
    out = np.zeros(6)
    out[2], out[3] = float(p.size_bytes), 1.0
    return out
