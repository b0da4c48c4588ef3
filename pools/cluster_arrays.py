"""Flat numpy views of a snapshot and of its pool membership, built once per snapshot (and policy) and shared by
the audit rules, the health and load models, the placement seed, the planner, the validator and the report."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain, compress, repeat
from operator import attrgetter, is_not
from typing import TypeVar

import numpy as np

from pools.policy import PoolPolicy
from pools.snapshot import ClusterSnapshot

__all__ = ["ClusterArrays", "PoolArrays", "cluster_arrays", "pool_arrays", "per_snapshot"]

T = TypeVar("T")


@dataclass(frozen=True, eq=False)
class ClusterArrays:
    """A snapshot as arrays: brokers by position, partitions in snapshot order, replicas flattened.

    Broker positions index ``broker_ids``; a replica on a broker the snapshot does not list gets the
    position ``n_brokers``. Leaders use ``-1`` for "no leader".
    """

    broker_ids: np.ndarray  # (B,) sorted ids
    broker_rack: np.ndarray  # (B,) rack position in `racks`, -1 when the broker has no rack
    racks: tuple[str, ...]
    topics: tuple[str, ...]  # sorted names
    part_topic: np.ndarray  # (P,) topic position
    part_id: np.ndarray  # (P,) partition number
    part_rf: np.ndarray  # (P,) replica count
    part_start: np.ndarray  # (P,) offset of the partition's first replica in the flat arrays
    part_leader: np.ndarray  # (P,) broker position of the leader, -1 = none or not a listed broker
    part_leader_id: np.ndarray  # (P,) broker id of the leader, -1 = none
    part_offline: np.ndarray  # (P,) bool: no leader (``Leader: none``)
    part_isr: np.ndarray  # (P,) ISR size
    part_adding: np.ndarray  # (P,) adding-replica count
    part_removing: np.ndarray  # (P,) removing-replica count
    part_size: np.ndarray  # (P,) largest replica size, bytes
    rep_part: np.ndarray  # (R,) partition position of each replica
    rep_id: np.ndarray  # (R,) broker id, as listed
    rep_broker: np.ndarray  # (R,) broker position, n_brokers = unknown broker
    rep_pos: np.ndarray  # (R,) position in the replica list (0 = preferred leader)
    rep_in_isr: np.ndarray  # (R,) bool
    rep_size: np.ndarray  # (R,) this replica's size, the partition's size where unknown

    @property
    def n_brokers(self) -> int:
        return len(self.broker_ids)

    @property
    def rep_topic(self) -> np.ndarray:
        return self.part_topic[self.rep_part]

    def positions(self, ids: np.ndarray) -> np.ndarray:
        """The position of each broker id in ``broker_ids``, ``n_brokers`` for an id the snapshot does not list."""
        return _positions(self.broker_ids, ids)

    def replica_ids(self) -> np.ndarray:
        """Every partition's replicas as broker ids, shape (P, max RF), -1 padding."""
        out = np.full((len(self.part_rf), int(self.part_rf.max(initial=0))), -1, dtype=np.int64)
        out[self.rep_part, self.rep_pos] = self.rep_id
        return out

    def current_leader_id(self) -> np.ndarray:
        """Per partition, the broker id that leads it now: its leader when that is one of its replicas, else its
        preferred leader (-1 = no replicas)."""
        first = np.full(len(self.part_rf), -1, dtype=np.int64)
        listed = self.part_rf > 0
        first[listed] = self.rep_id[self.part_start[listed]]
        leads = np.zeros(len(self.part_rf), dtype=bool)
        leads[self.rep_part[self.rep_id == self.part_leader_id[self.rep_part]]] = True
        return np.where(leads, self.part_leader_id, first)


@dataclass(frozen=True, eq=False)
class PoolArrays:
    """Pool membership: pool positions index ``pools`` (the policy's order); -1 = no pool."""

    pools: tuple[str, ...]
    broker_pool: np.ndarray  # (B + 1,) pool of each broker position; the unknown-broker slot is -1
    topic_pool: np.ndarray  # (T,) the pool each topic belongs to now, -1 = matched by no pool


_CACHE: dict[tuple[str, int, int], tuple[weakref.ref, weakref.ref | None, object]] = {}


def cluster_arrays(snapshot: ClusterSnapshot) -> ClusterArrays:
    """The arrays of ``snapshot``, memoised per snapshot object.

    Notes
    -----
    One pass over the partitions (a few generator passes at C speed); O(P + R).
    """
    return _memo("cluster", snapshot, None, lambda: _build_cluster(snapshot))


def pool_arrays(snapshot: ClusterSnapshot, policy: PoolPolicy) -> PoolArrays:
    """Each broker's pool (its inventory tag when the policy knows that pool, else the pool pinning it) and
    each topic's pool (`PoolPolicy.resolve`; where the policy leaves a choice, the candidate holding most of
    the replicas of the topic's group, ties to the first candidate). Memoised per (snapshot, policy)."""
    return _memo("pools", snapshot, policy, lambda: _build_pools(snapshot, policy))


def per_snapshot(kind: str, snapshot: ClusterSnapshot, build: Callable[[], T]) -> T:
    """``build()``, memoised per ``snapshot`` object under ``kind`` (for what other modules derive from these
    arrays once per snapshot, e.g. `pools.health.cluster_health`)."""
    return _memo(kind, snapshot, None, build)


def _memo(kind: str, snapshot: ClusterSnapshot, policy: PoolPolicy | None, build):
    key = (kind, id(snapshot), id(policy))
    hit = _CACHE.get(key)
    if hit is not None and hit[0]() is snapshot and (hit[1] is None or hit[1]() is policy):
        return hit[2]
    value = build()
    for stale in [k for k, v in _CACHE.items() if v[0]() is None or (v[1] is not None and v[1]() is None)]:
        del _CACHE[stale]
    _CACHE[key] = (weakref.ref(snapshot), None if policy is None else weakref.ref(policy), value)
    return value


def _build_cluster(snapshot: ClusterSnapshot) -> ClusterArrays:
    parts = snapshot.partitions
    n = len(parts)
    broker_ids = np.array(sorted(b.id for b in snapshot.brokers), dtype=np.int64)
    racks = snapshot.racks
    rack_pos = {r: i for i, r in enumerate(racks)}
    by_id = snapshot.broker_by_id
    broker_rack = np.array([rack_pos.get(by_id[int(b)].rack, -1) for b in broker_ids], dtype=np.int64)
    topics = tuple(sorted({t.topic for t in snapshot.topics} | set(snapshot.partitions_by_topic)))
    topic_pos = {t: i for i, t in enumerate(topics)}

    # attribute columns through map/attrgetter: C-level passes, no Python frame per partition
    replicas, isr = list(map(attrgetter("replicas"), parts)), list(map(attrgetter("isr"), parts))
    part_topic = np.fromiter(map(topic_pos.__getitem__, map(attrgetter("topic"), parts)), np.int64, n)
    part_id = np.fromiter(map(attrgetter("partition"), parts), np.int64, n)
    part_rf = np.fromiter(map(len, replicas), np.int64, n)
    part_isr = np.fromiter(map(len, isr), np.int64, n)
    part_adding = np.fromiter(map(len, map(attrgetter("adding_replicas"), parts)), np.int64, n)
    part_removing = np.fromiter(map(len, map(attrgetter("removing_replicas"), parts)), np.int64, n)
    leader_id = np.array([-1 if b is None else b for b in map(attrgetter("leader"), parts)], dtype=np.int64)
    part_start = np.zeros(n, dtype=np.int64)
    np.cumsum(part_rf[:-1], out=part_start[1:])
    r = int(part_rf.sum())

    rep_ids = np.fromiter(chain.from_iterable(replicas), np.int64, r)
    rep_part = np.repeat(np.arange(n, dtype=np.int64), part_rf)
    rep_pos = np.arange(r, dtype=np.int64) - part_start[rep_part]
    rep_broker = _positions(broker_ids, rep_ids)
    part_leader = np.where(leader_id < 0, -1, _positions(broker_ids, leader_id))
    part_leader = np.where(part_leader == len(broker_ids), -1, part_leader)

    isr_len = part_isr
    isr_ids = np.fromiter(chain.from_iterable(isr), np.int64, int(isr_len.sum()))
    isr_part = np.repeat(np.arange(n, dtype=np.int64), isr_len)
    rep_in_isr = _members(rep_part, rep_ids, isr_part, isr_ids)

    raw_sizes = _replica_sizes(list(map(attrgetter("sizes"), parts)), part_rf)
    part_size = np.zeros(n, dtype=np.int64)
    if r:
        np.maximum.at(part_size, rep_part, np.maximum(raw_sizes, 0))
    rep_size = np.where(raw_sizes >= 0, raw_sizes, part_size[rep_part])
    return ClusterArrays(
        broker_ids=broker_ids,
        broker_rack=broker_rack,
        racks=racks,
        topics=topics,
        part_topic=part_topic,
        part_id=part_id,
        part_rf=part_rf,
        part_start=part_start,
        part_leader=part_leader,
        part_leader_id=leader_id,
        part_offline=leader_id < 0,
        part_isr=part_isr,
        part_adding=part_adding,
        part_removing=part_removing,
        part_size=part_size,
        rep_part=rep_part,
        rep_id=rep_ids,
        rep_broker=rep_broker,
        rep_pos=rep_pos,
        rep_in_isr=rep_in_isr,
        rep_size=rep_size,
    )


def _replica_sizes(sizes: list[tuple[int | None, ...]], rf: np.ndarray) -> np.ndarray:
    """Every replica's size (``PartitionState.sizes``, aligned with the replicas or empty), -1 where unknown."""
    flat = list(chain.from_iterable(sizes))
    listed = np.fromiter(map(is_not, flat, repeat(None)), bool, len(flat))
    values = np.full(len(flat), -1, dtype=np.int64)
    values[listed] = np.fromiter(compress(flat, listed.tolist()), np.int64, int(listed.sum()))
    out = np.full(int(rf.sum()), -1, dtype=np.int64)
    out[np.repeat(np.fromiter(map(len, sizes), np.int64, len(sizes)) > 0, rf)] = values
    return out


def _members(part: np.ndarray, ids: np.ndarray, set_part: np.ndarray, set_ids: np.ndarray) -> np.ndarray:
    """For each (partition, broker id) pair, whether the partition's set (e.g. its ISR) holds that id.

    Sort and binary search on a combined key (``np.isin``/``np.unique`` hash such keys badly).
    """
    if len(set_ids) == 0 or len(ids) == 0:
        return np.zeros(len(ids), dtype=bool)
    low = min(int(ids.min()), int(set_ids.min()))
    span = max(int(ids.max()), int(set_ids.max())) - low + 1
    keys = np.sort(set_part * span + (set_ids - low))
    probe = part * span + (ids - low)
    found = np.minimum(np.searchsorted(keys, probe), len(keys) - 1)
    return keys[found] == probe


def _positions(sorted_ids: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Position of each id in ``sorted_ids``; ``len(sorted_ids)`` for ids not there."""
    if len(sorted_ids) == 0:
        return np.zeros(len(ids), dtype=np.int64)
    pos = np.searchsorted(sorted_ids, ids)
    clipped = np.minimum(pos, len(sorted_ids) - 1)
    return np.where(sorted_ids[clipped] == ids, clipped, len(sorted_ids)).astype(np.int64)


def _build_pools(snapshot: ClusterSnapshot, policy: PoolPolicy) -> PoolArrays:
    arrays = cluster_arrays(snapshot)
    pools = policy.pool_names
    pool_pos = {p: i for i, p in enumerate(pools)}
    pinned = policy.pinned_pool
    by_id = snapshot.broker_by_id
    broker_pool = np.full(arrays.n_brokers + 1, -1, dtype=np.int64)
    for i, b in enumerate(arrays.broker_ids.tolist()):
        tag = by_id[b].pool
        name = tag if tag in pool_pos else pinned.get(b)
        if name is not None:
            broker_pool[i] = pool_pos[name]

    n_topics, n_pools = len(arrays.topics), len(pools)
    rep_pool = broker_pool[arrays.rep_broker]
    placed = rep_pool >= 0
    counts = np.bincount(
        arrays.rep_topic[placed] * n_pools + rep_pool[placed], minlength=n_topics * n_pools
    ).reshape(n_topics, n_pools) if n_pools else np.zeros((n_topics, 0), dtype=np.int64)

    resolved = [policy.resolve(t) for t in arrays.topics]
    group_counts: dict[str, np.ndarray] = {}
    for i, tp in enumerate(resolved):
        if len(tp.candidates) > 1:
            group_counts.setdefault(tp.group, np.zeros(n_pools, dtype=np.int64))
            group_counts[tp.group] += counts[i]
    topic_pool = np.full(n_topics, -1, dtype=np.int64)
    for i, tp in enumerate(resolved):
        if len(tp.candidates) == 1:
            topic_pool[i] = pool_pos[tp.candidates[0]]
        elif tp.candidates:
            held = group_counts[tp.group]
            topic_pool[i] = max((pool_pos[c] for c in tp.candidates), key=lambda p: (held[p], -p))
    return PoolArrays(pools=pools, broker_pool=broker_pool, topic_pool=topic_pool)
