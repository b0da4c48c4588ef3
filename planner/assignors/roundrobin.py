"""`RoundRobinAssignor`: all partitions in topic order dealt to the sorted members in turn."""

from __future__ import annotations

__all__ = ["roundrobin_assign"]

from collections.abc import Mapping, Sequence

from planner.assignors.common import Member, java_member_order, sort_members
from planner.java_compat import utf16_key


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
    iterator skips members not subscribed to the partition's topic. Racks are ignored. When every
    member subscribes to every topic the deal is computed per topic in closed form. O(P·C) worst
    case, O(P) with uniform subscriptions.
    """
    ring = [m.member_id for m in sort_members(java_member_order(members))]
    subscribed = {m.member_id: frozenset(m.topics) for m in members}
    all_topics = sorted({t for m in members for t in m.topics if topics.get(t)}, key=utf16_key)
    assignment: dict[str, dict[str, list[int]]] = {m.member_id: {} for m in members}
    if not ring:
        return assignment
    size = len(ring)
    cursor = 0
    for topic in all_topics:
        count = topics[topic]
        if all(topic in subscribed[c] for c in ring):
            # Every member takes this topic: member (cursor + k) % size gets partitions k, k + size, ...
            for k in range(min(size, count)):
                member = ring[(cursor + k) % size]
                assignment[member][topic] = list(range(k, count, size))
            cursor = (cursor + count) % size
            continue
        for p in range(count):
            while topic not in subscribed[ring[cursor]]:
                cursor = (cursor + 1) % size
            assignment[ring[cursor]].setdefault(topic, []).append(p)
            cursor = (cursor + 1) % size
    return assignment
