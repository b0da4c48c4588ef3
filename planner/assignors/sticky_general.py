"""`AbstractStickyAssignor.GeneralAssignmentBuilder`: the sticky assignment when subscriptions differ."""

from __future__ import annotations

__all__ = ["GeneralAssignmentBuilder"]

import bisect
import heapq
from collections.abc import Mapping, Sequence
from operator import itemgetter

from planner.assignors.common import Member, TopicPartition
from planner.assignors.errors import AssignorError
from planner.assignors.sticky_common import DEFAULT_GENERATION, MemberData, RackInfo, two_pointer_difference
from planner.assignors.sticky_movements import PartitionMovements
from pools.java_semantics import utf16_key


class GeneralAssignmentBuilder:
    """`GeneralAssignmentBuilder`: subscriptions differ; balance by moving partitions one at a time."""

    def __init__(
        self,
        per_topic: Mapping[str, int],
        racks: RackInfo,
        current: dict[str, list[TopicPartition]],
        ordered: Sequence[Member],
        member_data: Mapping[str, MemberData],
        max_generation: int,
    ) -> None:
        self.per_topic = per_topic
        self.racks = racks
        self.current = current
        self.ordered = ordered
        self.member_data = member_data
        self.max_generation = max_generation
        self.topic_consumers: dict[str, list[str]] = {t: [] for t in per_topic}
        self.consumer_topics: dict[str, list[str]] = {}
        for m in ordered:
            mine = [t for t in m.topics if t in per_topic]
            self.consumer_topics[m.member_id] = mine
            for t in mine:
                self.topic_consumers[t].append(m.member_id)
        self.consumer_topic_set = {c: frozenset(ts) for c, ts in self.consumer_topics.items()}
        # `getMaxAssignmentSize`: all partitions, or the sum over the consumer's existing topics.
        total = sum(per_topic.values())
        self.max_size = {
            c: total if len(ts) == len(per_topic) else sum(per_topic[t] for t in ts)
            for c, ts in self.consumer_topics.items()
        }
        self.subscriptions = {m.member_id: frozenset(m.topics) for m in ordered}
        self.partition_consumer = {tp: c for c, tps in current.items() for tp in tps}
        self.sorted_topics = sorted(per_topic, key=lambda t: (len(self.topic_consumers[t]), utf16_key(t)))
        self.topic_pos = {t: i for i, t in enumerate(self.sorted_topics)}
        self.sorted_all = [(t, p) for t in self.sorted_topics for p in range(per_topic[t])]
        self.sorted_subs = _SortedConsumers(current)
        self.movements = PartitionMovements()
        self.revocation_required = False
        self._version = 0  # bumped on every change to `current`
        self._balance_check = (-1, False)  # `_is_balanced` verdict and the version it was computed at

    def build(self) -> dict[str, list[TopicPartition]]:
        """Keep valid claims, assign the rest, then rebalance."""
        prev = self._prepopulate()
        unassigned = self._unassigned(self._assign_owned())
        for c in self.current:
            self.sorted_subs.add(c)
        self._balance(prev, unassigned)
        return self.current

    def _prepopulate(self) -> dict[TopicPartition, tuple[str, int]]:
        """`prepopulateCurrentAssignments`: the latest claim of an older generation per partition."""
        prev: dict[TopicPartition, tuple[str, int]] = {}
        for m in self.ordered:
            data = self.member_data[m.member_id]
            if data.generation is not None and data.generation < self.max_generation:
                generation = data.generation
            elif data.generation is None and self.max_generation > DEFAULT_GENERATION:
                generation = DEFAULT_GENERATION
            else:
                continue
            for tp in data.partitions:
                if tp not in prev or generation > prev[tp][1]:
                    prev[tp] = (m.member_id, generation)
        return prev

    def _assign_owned(self) -> list[TopicPartition]:
        assigned: list[TopicPartition] = []
        for consumer, tps in self.current.items():
            topics = self.subscriptions[consumer]
            kept = []
            for tp in tps:
                if tp[0] not in topics or self.racks.racks_mismatch(consumer, tp):
                    self.revocation_required = True
                else:
                    kept.append(tp)
            tps[:] = kept
            assigned.extend(kept)
        return assigned

    def _unassigned(self, assigned: list[TopicPartition]) -> list[TopicPartition]:
        if not assigned:
            return self.sorted_all
        pos = self.topic_pos
        return two_pointer_difference(self.sorted_all, assigned, lambda tp: (pos[tp[0]], tp[1]))

    def _assign_partition(self, tp: TopicPartition, rack_aware: bool) -> bool:
        """`maybeAssignPartition`: give ``tp`` to the least-loaded eligible consumer."""
        for consumer in self.sorted_subs:
            if tp[0] in self.consumer_topic_set[consumer] and not (
                rack_aware and self.racks.racks_mismatch(consumer, tp)
            ):
                self.sorted_subs.remove(consumer)
                self.current[consumer].append(tp)
                self.partition_consumer[tp] = consumer
                self._version += 1
                self.sorted_subs.add(consumer)
                return True
        return False

    def _assign_all(self, partitions: list[TopicPartition], rack_aware: bool) -> list[TopicPartition]:
        """`maybeAssign`; returns the partitions not placed (all of them when not rack-aware)."""
        if not rack_aware:
            self._assign_all_least_loaded(partitions)
            return partitions
        left = []
        for tp in partitions:
            if not (self.topic_consumers[tp[0]] and self._assign_partition(tp, rack_aware)):
                left.append(tp)
        return left

    def _assign_all_least_loaded(self, partitions: list[TopicPartition]) -> None:
        """`maybeAssign` without racks: each partition to the first subscriber in (size, id) order.

        The first subscriber in the consumer `TreeSet` is the minimum of the topic's subscribers, and
        while one topic's partitions are placed only those subscribers change size, so a heap per
        run of a topic replaces Kafka's scan of every consumer.
        """
        heap: list[tuple[int, bytes, str]] = []
        heap_topic = None
        for tp in partitions:
            if not self.topic_consumers[tp[0]]:
                continue
            if tp[0] != heap_topic:
                heap_topic = tp[0]
                heap = [(len(self.current[c]), utf16_key(c), c) for c in dict.fromkeys(self.topic_consumers[tp[0]])]
                heapq.heapify(heap)
            size, key, consumer = heapq.heappop(heap)
            self.sorted_subs.remove(consumer)
            self.current[consumer].append(tp)
            self.partition_consumer[tp] = consumer
            self.sorted_subs.add(consumer)
            self._version += 1
            heapq.heappush(heap, (size + 1, key, consumer))

    def _balance(self, prev: dict[TopicPartition, tuple[str, int]], unassigned: list[TopicPartition]) -> None:
        initializing = not self.current[self.sorted_subs.last()]
        to_assign = unassigned
        if self.racks.consumer_racks:
            to_assign = self._assign_all(unassigned, True)
        self._assign_all(to_assign, False)

        fixed = {(t, p) for t, cs in self.topic_consumers.items() if len(cs) < 2 for p in range(self.per_topic[t])}
        if fixed:
            self.sorted_all[:] = [tp for tp in self.sorted_all if tp not in fixed]
            unassigned[:] = [tp for tp in unassigned if tp not in fixed]
        fixed_assignments = {}
        for consumer in self.consumer_topics:
            if not self._can_participate(consumer):
                self.sorted_subs.remove(consumer)
                fixed_assignments[consumer] = self.current.pop(consumer)
                self._version += 1

        before = {c: list(tps) for c, tps in self.current.items()}
        before_owner = dict(self.partition_consumer)
        if not self.revocation_required:
            self._perform_reassignments(unassigned, prev)
        performed = self._perform_reassignments(self.sorted_all, prev)
        if not initializing and performed and _balance_score(self.current) >= _balance_score(before):
            self.current.clear()
            self.current.update(before)
            self.partition_consumer = before_owner
        self.current.update(fixed_assignments)

    def _can_participate(self, consumer: str) -> bool:
        tps = self.current[consumer]
        if len(tps) < self.max_size[consumer]:
            return True
        return any(len(self.topic_consumers[tp[0]]) >= 2 for tp in tps)

    def _is_balanced(self) -> bool:
        """`isBalanced`: sizes within one, or no partition could move to a smaller eligible consumer.

        Kafka scans, per consumer, every partition of its topics for an owner holding more than one
        partition more. The consumer's own partitions never qualify (their owner is the consumer
        itself), so it is enough to know the largest owner of each topic's partitions. The verdict is
        reused until the assignment changes.
        """
        version, verdict = self._balance_check
        if version != self._version:
            verdict = self._compute_balanced()
            self._balance_check = (self._version, verdict)
        return verdict

    def _compute_balanced(self) -> bool:
        current = self.current
        if len(current[self.sorted_subs.first()]) >= len(current[self.sorted_subs.last()]) - 1:
            return True
        # Only a consumer below its maximum can take a partition, and only from an owner holding at
        # least two more than the smallest such consumer.
        sizes = ((len(current[c]), self.max_size[c]) for c in self.sorted_subs)
        smallest = next((size for size, most in sizes if size != most), None)
        if smallest is None:
            return True
        largest: dict[str, int] = {}
        for owner in self.sorted_subs.descending():
            size = len(current[owner])
            if size < smallest + 2:
                break
            for t, p in current[owner]:
                if largest.get(t, -1) < size and p < self.per_topic[t]:
                    largest[t] = size
        top = max(largest.values(), default=0)
        for consumer in self.sorted_subs:
            count = len(current[consumer])
            if count + 1 >= top:
                break  # ascending sizes: no later consumer can take a partition either
            if count == self.max_size[consumer]:
                continue
            topics = self.consumer_topic_set[consumer]
            if len(largest) < len(topics):
                if any(size > count + 1 and t in topics for t, size in largest.items()):
                    return False
            elif any(largest.get(t, 0) > count + 1 for t in topics):
                return False
        return True

    def _perform_reassignments(
        self, partitions: list[TopicPartition], prev: dict[TopicPartition, tuple[str, int]]
    ) -> bool:
        performed = False
        modified = True
        while modified:
            modified = False
            for tp in partitions:
                if self._is_balanced():
                    break
                if self._move_one(tp, prev):
                    performed = modified = True
        return performed

    def _move_one(self, tp: TopicPartition, prev: dict[TopicPartition, tuple[str, int]]) -> bool:
        """One step of `performReassignments` for ``tp``; True when something moved."""
        current = self.current
        consumer = self.partition_consumer[tp]
        size = len(current[consumer])
        if tp in prev:
            previous = current.get(prev[tp][0])
            if previous is None:
                raise AssignorError(
                    'Cannot invoke "java.util.List.size()" because the return value of '
                    '"java.util.Map.get(Object)" is null'
                )
            if size > len(previous) + 1:
                self._reassign(tp, prev[tp][0])
                return True
        racks = self.racks
        rack = racks.consumer_racks.get(consumer)
        replica = racks.partition_racks.get(tp, frozenset())
        if rack is not None and replica and rack in replica:
            for other in self.topic_consumers[tp[0]]:
                other_rack = racks.consumer_racks.get(other)
                if other_rack is not None and other_rack in replica and size > len(current[other]) + 1:
                    self._reassign_to_least_loaded(tp)
                    return True
        for other in self.topic_consumers[tp[0]]:
            if size > len(current[other]) + 1:
                self._reassign_to_least_loaded(tp)
                return True
        return False

    def _reassign_to_least_loaded(self, tp: TopicPartition) -> None:
        target = next(c for c in self.sorted_subs if tp[0] in self.consumer_topic_set[c])
        self._reassign(tp, target)

    def _reassign(self, tp: TopicPartition, new_consumer: str) -> None:
        consumer = self.partition_consumer[tp]
        moved = self.movements.actual_partition_to_move(tp, consumer, new_consumer)
        old = self.partition_consumer[moved]
        self.sorted_subs.remove(old)
        self.sorted_subs.remove(new_consumer)
        self.movements.move(moved, old, new_consumer)
        self._version += 1
        self.current[old].remove(moved)
        self.current[new_consumer].append(moved)
        self.partition_consumer[moved] = new_consumer
        self.sorted_subs.add(new_consumer)
        self.sorted_subs.add(old)


class _SortedConsumers:
    """The general builder's `TreeSet` of consumers ordered by (assignment size, member id)."""

    __slots__ = ("_current", "_keys", "_order")

    def __init__(self, current: Mapping[str, list[TopicPartition]]) -> None:
        self._current = current
        self._keys: dict[str, tuple[int, bytes]] = {}
        self._order: list[tuple[int, bytes, str]] = []

    def add(self, consumer: str) -> None:
        if consumer in self._keys:
            return
        key = (len(self._current[consumer]), utf16_key(consumer))
        self._keys[consumer] = key
        bisect.insort(self._order, (*key, consumer))

    def remove(self, consumer: str) -> None:
        key = self._keys.pop(consumer)
        del self._order[bisect.bisect_left(self._order, (*key, consumer))]

    def descending(self):
        """Largest first."""
        return map(itemgetter(2), reversed(self._order))

    def first(self) -> str:
        return self._order[0][2]

    def last(self) -> str:
        return self._order[-1][2]

    def __iter__(self):
        """Ascending order; callers stop iterating before they change the set."""
        return map(itemgetter(2), self._order)


def _balance_score(assignment: Mapping[str, list[TopicPartition]]) -> int:
    """Sum of |size difference| over all member pairs."""
    sizes = sorted(len(tps) for tps in assignment.values())
    score = 0
    prefix = 0
    for i, s in enumerate(sizes):
        score += s * i - prefix
        prefix += s
    return score
