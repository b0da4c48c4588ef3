"""`RoundRobinAssignor`: all partitions in topic order dealt to the sorted members in turn."""

from __future__ import annotations

__all__ = ["roundrobin_assign"]

from collections.abc import Mapping, Sequence
from itertools import repeat

import numpy as np

from planner.assignors.common import Member, java_member_order, sort_members
from pools.java_semantics import utf16_key


def roundrobin_assign(topics: Mapping[str, int], members: Sequence[Member]) -> dict[str, dict[str, list[int]]]:
    """Deal every subscribed partition round-robin over the members, skipping non-subscribers.

    Parameters
    ----------
    topics : mapping
        ``{topic: partition_count}`` from cluster metadata.
    members : sequence of Member
        Members in the order the leader received them.

    Returns
    -------
    dict
        ``{member_id: {topic: [partitions]}}`` with every member, topics in `compareTo` order,
        partitions ascending.

    Notes
    -----
    Mirrors `RoundRobinAssignor.assign`: members sorted by `MemberInfo` (a stable sort of the
    leader's `HashMap` order), topics in `String.compareTo` order, partitions ascending; a circular
    iterator skips members not subscribed to the partition's topic. Racks are ignored. Topics every
    member takes are dealt in closed form (for all topics at once when subscriptions are uniform).
    O(P·C) worst case, O(P) with uniform subscriptions.
    """
    ring = [m.member_id for m in sort_members(java_member_order(members))]
    subscribed = {m.member_id: frozenset(m.topics) for m in members}
    all_topics = sorted({t for m in members for t in m.topics if topics.get(t)}, key=utf16_key)
    assignment: dict[str, dict[str, list[int]]] = {m.member_id: {} for m in members}
    if not ring:
        return assignment
    size = len(ring)
    results = [assignment[c] for c in ring]
    if all(subscribed[c].issuperset(all_topics) for c in ring):
        _deal_uniform(all_topics, [topics[t] for t in all_topics], results)
        return assignment
    cursor = 0
    for topic in all_topics:
        count = topics[topic]
        if all(topic in subscribed[c] for c in ring):
            # Every member takes this topic: member (cursor + k) % size gets partitions k, k + size, ...
            for k in range(min(size, count)):
                results[(cursor + k) % size][topic] = [k] if k + size >= count else list(range(k, count, size))
            cursor = (cursor + count) % size
            continue
        for p in range(count):
            while topic not in subscribed[ring[cursor]]:
                cursor = (cursor + 1) % size
            assignment[ring[cursor]].setdefault(topic, []).append(p)
            cursor = (cursor + 1) % size
    return assignment


def _deal_uniform(names: list[str], counts: list[int], results: list[dict[str, list[int]]]) -> None:
    """The deal when every member takes every topic, one member at a time.

    Topic ``j`` starts at ring position ``cursor_j`` (all earlier partitions, modulo the ring size),
    so the member at position ``i`` gets ``k0, k0 + n, ...`` with ``k0 = (i - cursor_j) mod n``.
    """
    size = len(results)
    count = np.asarray(counts, dtype=np.int64)
    cursor = (np.cumsum(count) - count) % size
    every = count.tolist()
    for i, result in enumerate(results):
        first = (i - cursor) % size
        dealt = first < count
        if dealt.all():
            keys, firsts, stops = names, first.tolist(), every
        else:
            keys = [t for t, keep in zip(names, dealt.tolist()) if keep]
            firsts, stops = first[dealt].tolist(), count[dealt].tolist()
        result.update(zip(keys, map(list, map(range, firsts, stops, repeat(size)))))
