"""`RangeAssignor`: per-topic contiguous ranges, rack-aware as in KIP-881."""

from __future__ import annotations

__all__ = ["range_assign"]

from collections.abc import Mapping, Sequence

import numpy as np

from planner.assignors.common import Member, java_member_order, partitions_per_topic, replica_racks, sort_members
from pools.java_semantics import utf16_key


def range_assign(
    topics: Mapping[str, int],
    members: Sequence[Member],
    partition_racks: Mapping[str, Sequence[Sequence[str | None]]],
) -> dict[str, dict[str, list[int]]]:
    """Assign each topic's partitions in ranges over its sorted subscribers.

    Parameters
    ----------
    topics : mapping
        ``{topic: partition_count}`` from cluster metadata.
    members : sequence of Member
        Members in the order the leader received them.
    partition_racks : mapping
        ``{topic: [[rack or None per replica] per partition]}``; may be empty.

    Returns
    -------
    dict
        ``{member_id: {topic: [partitions]}}`` with every member, topics in `compareTo` order,
        partitions ascending.

    Notes
    -----
    Mirrors `RangeAssignor.assignPartitions`: members sort by `MemberInfo` (static first by group
    instance id, then member id); the first ``count % n`` get one extra partition. When consumer and
    replica racks exist and some partition is not on every rack, partitions that can be aligned on
    racks are placed first (co-partitioned topics with the same subscribers together), keeping the
    per-topic quotas, and the rest fill the remaining quotas in range order. O(P·C) worst case with
    racks, O(P) without.
    """
    per_topic = partitions_per_topic(topics, members)
    racks = {m.member_id: m.rack_id for m in members if m.rack_id is not None}
    # A stable sort of the whole member map restricted to a topic's subscribers is the per-topic sort.
    subscribers: dict[str, list[str]] = {t: [] for t in per_topic}
    for m in sort_members(java_member_order(members)):
        for t in dict.fromkeys(m.topics):
            if t in subscribers:
                subscribers[t].append(m.member_id)
    ordered_topics = sorted(per_topic, key=utf16_key)
    assignment: dict[str, dict[str, list[int]]] = {m.member_id: {} for m in members}
    states = []
    if racks:
        states = [_TopicState(t, per_topic[t], subscribers[t], racks, partition_racks) for t in ordered_topics]
    if not any(s.needs_rack_aware for s in states):
        if ordered_topics and all(subscribers[t] == subscribers[ordered_topics[0]] for t in ordered_topics):
            counts = [per_topic[t] for t in ordered_topics]
            _assign_uniform_ranges(ordered_topics, counts, subscribers[ordered_topics[0]], assignment)
            return assignment
        for t in ordered_topics:
            _assign_plain_ranges(t, per_topic[t], [assignment[c] for c in subscribers[t]])
        return assignment
    _assign_with_rack_matching(states, assignment)
    for s in states:
        s.assign_ranges(lambda c, p: True, assignment)
    rank = {s.topic: i for i, s in enumerate(states)}
    return {
        m: {t: sorted(by_topic[t]) for t in sorted(by_topic, key=rank.__getitem__)}
        for m, by_topic in assignment.items()
    }


class _TopicState:
    """`RangeAssignor.TopicAssignmentState`: one topic's subscribers, quotas and unassigned partitions."""

    __slots__ = (
        "topic", "consumers", "consumer_racks", "partition_racks", "unassigned",
        "num_assigned", "per_consumer", "remaining_extra", "needs_rack_aware",
    )

    def __init__(
        self,
        topic: str,
        count: int,
        consumers: list[str],
        racks: Mapping[str, str],
        partition_racks: Mapping[str, Sequence[Sequence[str | None]]],
    ) -> None:
        self.topic = topic
        self.consumers = consumers
        self.consumer_racks = {c: racks.get(c) for c in consumers}
        self.unassigned = dict.fromkeys(range(count))
        self.num_assigned = dict.fromkeys(consumers, 0)
        self.per_consumer = count // len(consumers)
        self.remaining_extra = count % len(consumers)
        consumer_rack_set = {r for r in self.consumer_racks.values() if r is not None}
        self.partition_racks: list[frozenset[str]] | None = None
        all_partition_racks: set[str] = set()
        if consumer_rack_set:
            self.partition_racks = [replica_racks(partition_racks, topic, p) for p in range(count)]
            for rs in self.partition_racks:
                all_partition_racks |= rs
        # `useRackAwareAssignment`: consumer racks meet replica racks, and some partition misses a rack.
        self.needs_rack_aware = (
            bool(consumer_rack_set)
            and not consumer_rack_set.isdisjoint(all_partition_racks)
            and any(rs != all_partition_racks for rs in self.partition_racks or ())
        )

    def racks_match(self, consumer: str, partition: int) -> bool:
        """A rack-less consumer matches anything; otherwise a replica must sit on its rack."""
        rack = self.consumer_racks[consumer]
        return rack is None or (self.partition_racks is not None and rack in self.partition_racks[partition])

    def max_assignable(self, consumer: str) -> int:
        """Room left under the consumer's quota (one extra while extra slots remain)."""
        room = self.per_consumer + (1 if self.remaining_extra > 0 else 0) - self.num_assigned[consumer]
        return max(0, room)

    def on_assigned(self, consumer: str, partitions: list[int], assignment: dict[str, dict[str, list[int]]]) -> None:
        """Record partitions given to ``consumer`` in the state and in the result."""
        assignment[consumer].setdefault(self.topic, []).extend(partitions)
        self.num_assigned[consumer] += len(partitions)
        if self.num_assigned[consumer] > self.per_consumer:
            self.remaining_extra -= 1
        for p in partitions:
            del self.unassigned[p]

    def assign_ranges(self, may_assign, assignment: dict[str, dict[str, list[int]]]) -> None:
        """`assignRanges`: each consumer in order takes the first assignable partitions up to its quota."""
        for c in self.consumers:
            if not self.unassigned:
                break
            limit = self.max_assignable(c)
            chosen: list[int] = []
            if limit > 0:
                for p in self.unassigned:
                    if may_assign(c, p):
                        chosen.append(p)
                        if len(chosen) == limit:
                            break
            if chosen:
                self.on_assigned(c, chosen, assignment)


def _assign_plain_ranges(topic: str, count: int, results: list[dict[str, list[int]]]) -> None:
    """`assignRanges` without rack filtering, in closed form: the first ``count % n`` get one extra.

    ``results`` are the sorted subscribers' result maps.
    """
    per_consumer, extra = divmod(count, len(results))
    start = 0
    for i, result in enumerate(results):
        length = per_consumer + 1 if i < extra else per_consumer
        if length == 0:
            break
        result[topic] = [start] if length == 1 else list(range(start, start + length))
        start += length


def _assign_uniform_ranges(
    names: list[str], counts: list[int], consumers: list[str], assignment: dict[str, dict[str, list[int]]]
) -> None:
    """`_assign_plain_ranges` for topics that all have the same subscribers, one consumer at a time."""
    count = np.asarray(counts, dtype=np.int64)
    per_consumer, extra = np.divmod(count, len(consumers))
    for i, c in enumerate(consumers):
        starts = i * per_consumer + np.minimum(i, extra)
        stops = starts + per_consumer + (i < extra)
        got = stops > starts
        keys = names
        if not got.all():
            keys = [t for t, keep in zip(names, got.tolist()) if keep]
            starts, stops = starts[got], stops[got]
        assignment[c].update(zip(keys, map(list, map(range, starts.tolist(), stops.tolist()))))


def _assign_with_rack_matching(states: list[_TopicState], assignment: dict[str, dict[str, list[int]]]) -> None:
    """`assignWithRackMatching`: group topics by subscribers and partition count, align racks."""
    groups: dict[tuple, dict[int, list[_TopicState]]] = {}
    for s in states:
        key = tuple(s.consumer_racks.items())
        size = len(s.partition_racks) if s.partition_racks is not None else 0
        groups.setdefault(key, {}).setdefault(size, []).append(s)
    for by_size in groups.values():
        for size, group in by_size.items():
            if len(group) > 1:
                _assign_co_partitioned(group[0].consumers, size, group, assignment)
            elif group[0].needs_rack_aware:
                group[0].assign_ranges(group[0].racks_match, assignment)


def _assign_co_partitioned(
    consumers: list[str], num_partitions: int, group: list[_TopicState], assignment: dict[str, dict[str, list[int]]]
) -> None:
    """`assignCoPartitionedWithRackMatching`: partition p of every topic to one rack-matching consumer."""
    remaining = list(consumers)
    for p in range(num_partitions):
        match = next(
            (c for c in remaining if all(s.racks_match(c, p) and s.max_assignable(c) > 0 for s in group)),
            None,
        )
        if match is None:
            continue
        for s in group:
            s.on_assigned(match, [p], assignment)
        if not any(s.max_assignable(match) > 0 for s in group):
            remaining.remove(match)
            if not remaining:
                break
