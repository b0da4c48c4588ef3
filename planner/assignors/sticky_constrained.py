"""`AbstractStickyAssignor.ConstrainedAssignmentBuilder`: the sticky assignment when all subscriptions are equal."""

from __future__ import annotations

__all__ = ["ConstrainedAssignmentBuilder"]

from collections.abc import Mapping
from operator import itemgetter

import numpy as np

from planner.assignors.common import TopicPartition
from planner.assignors.errors import AssignorError
from planner.assignors.sticky_common import RackInfo, StickyResult, two_pointer_difference
from pools.java_semantics import utf16_key


class ConstrainedAssignmentBuilder:
    """`ConstrainedAssignmentBuilder`: every member subscribes to the same topics."""

    def __init__(
        self,
        per_topic: Mapping[str, int],
        racks: RackInfo,
        owned: dict[str, list[TopicPartition]],
        multi: set[TopicPartition],
    ) -> None:
        self.per_topic = per_topic
        self.racks = racks
        self.owned = owned
        self.multi = multi
        self.sorted_topics = sorted(per_topic, key=utf16_key)
        self.rank = {t: i for i, t in enumerate(self.sorted_topics)}
        total = sum(per_topic.values())
        n = len(owned)
        if n == 0:
            raise AssignorError("/ by zero")
        self.min_quota = total // n
        self.max_quota = -(-total // n)
        self.expected_over = total % n
        self.current_over = 0
        self.assignment: dict[str, list[TopicPartition]] = {c: [] for c in owned}
        self.assigned: list[TopicPartition] = []
        self.maybe_revoked: dict[TopicPartition, str] = {}
        self.under: list[str] = []
        self.exact: list[str] = []
        self.transferring: dict[TopicPartition, str] = {}

    def build(self) -> StickyResult:
        """Keep owned partitions up to quota, then deal the rest (rack-aligned first)."""
        self._assign_owned()
        unassigned = self._unassigned()
        self.under.sort(key=utf16_key)
        self.exact.sort(key=utf16_key)
        unassigned = self.racks.sort_by_rack_consumers(unassigned)
        unassigned = self._assign_rack_aware_round_robin(unassigned)
        self._assign_round_robin(unassigned)
        self._verify_unfilled()
        return StickyResult(self.assignment, self.transferring)

    def _assign_owned(self) -> None:
        rank = self.rank
        # (partition, topic) order; Python's string order is String.compareTo's on ASCII names.
        by_partition = itemgetter(1, 0) if all(t.isascii() for t in rank) else (lambda tp: (tp[1], rank[tp[0]]))
        for consumer, claimed in self.owned.items():
            mine = claimed
            if consumer in self.racks.consumer_racks:
                mine = []
                for tp in claimed:
                    if self.racks.racks_mismatch(consumer, tp):
                        self.maybe_revoked[tp] = consumer
                    else:
                        mine.append(tp)
            mine = sorted(mine, key=by_partition)
            if self.multi:
                mine = [tp for tp in mine if tp not in self.multi]
            if len(mine) < self.min_quota:
                self._keep(consumer, mine, len(mine))
                self.under.append(consumer)
            elif len(mine) >= self.max_quota and self.current_over < self.expected_over:
                self.current_over += 1
                if self.current_over == self.expected_over:
                    self.exact.clear()
                self._keep(consumer, mine, self.max_quota)
            else:
                self._keep(consumer, mine, self.min_quota)
                if self.current_over < self.expected_over:
                    self.exact.append(consumer)

    def _keep(self, consumer: str, mine: list[TopicPartition], quota: int) -> None:
        self.assignment[consumer].extend(mine[:quota])
        self.assigned.extend(mine[:quota])
        self.maybe_revoked.update(dict.fromkeys(mine[quota:], consumer))

    def _unassigned(self) -> list[TopicPartition]:
        """`getUnassignedPartitions`: all partitions in (topic, partition) order minus the kept ones."""
        topics = self.sorted_topics
        counts = np.fromiter((self.per_topic[t] for t in topics), dtype=np.int64, count=len(topics))
        offsets = np.concatenate(([0], np.cumsum(counts)[:-1])) if len(topics) else counts
        n = len(self.assigned)
        topic_index = np.fromiter(map(self.rank.__getitem__, map(itemgetter(0), self.assigned)), np.int64, n)
        partition = np.fromiter(map(itemgetter(1), self.assigned), np.int64, n)
        if np.any(partition >= counts[topic_index]):
            # A claim beyond the partition count derails Kafka's two-pointer walk; replay it as is.
            everything = ((t, p) for t in topics for p in range(self.per_topic[t]))
            return two_pointer_difference(everything, self.assigned, lambda tp: (self.rank[tp[0]], tp[1]))
        free = np.ones(int(counts.sum()), dtype=bool)
        free[offsets[topic_index] + partition] = False
        ids = np.flatnonzero(free)
        free_topic = np.searchsorted(offsets, ids, side="right") - 1
        return list(zip(map(topics.__getitem__, free_topic.tolist()), (ids - offsets[free_topic]).tolist()))

    def _assign_rack_aware_round_robin(self, unassigned: list[TopicPartition]) -> list[TopicPartition]:
        if not self.racks.consumer_racks:
            return unassigned
        under, exact, racks = self.under, self.exact, self.racks
        remaining: list[TopicPartition] = []
        next_index = 0
        for tp in unassigned:
            consumer = None
            index = racks.next_rack_consumer(tp, under, next_index)
            if index >= 0:
                consumer = under[index]
                count = len(self.assignment[consumer]) + 1
                if count >= self.min_quota:
                    under.remove(consumer)
                    if count < self.max_quota and self.current_over < self.expected_over:
                        exact.append(consumer)
                else:
                    index += 1
                next_index = index % len(under) if under else 0
            elif exact:
                first = racks.next_rack_consumer(tp, exact, 0)
                if first >= 0:
                    consumer = exact[first]
                    if len(self.assignment[consumer]) + 1 == self.max_quota:
                        del exact[first]
                        self.current_over += 1
                        if self.current_over == self.expected_over:
                            exact.clear()
            if consumer is None:
                remaining.append(tp)
            else:
                self._assign_new(tp, consumer)
        return remaining

    def _assign_round_robin(self, unassigned: list[TopicPartition]) -> None:
        under, exact = self.under, self.exact
        cursor = 0  # position of a Java iterator over `under`; the last returned element is under[cursor - 1]
        for tp in unassigned:
            if cursor < len(under):
                consumer = under[cursor]
                cursor += 1
            elif not under and not exact:
                raise AssignorError("No more unfilled consumers to be assigned.")
            elif not under:
                consumer = exact.pop(0)
            else:
                consumer = under[0]
                cursor = 1
            count = self._assign_new(tp, consumer)
            if count == self.min_quota:
                del under[cursor - 1]
                cursor -= 1
                exact.append(consumer)
            elif count == self.max_quota:
                self.current_over += 1

    def _assign_new(self, tp: TopicPartition, consumer: str) -> int:
        target = self.assignment[consumer]
        target.append(tp)
        if self.maybe_revoked.get(tp, consumer) != consumer or tp in self.multi:
            self.transferring[tp] = consumer
        return len(target)

    def _verify_unfilled(self) -> None:
        if not self.under:
            return
        if self.current_over != self.expected_over:
            raise AssignorError(
                "We haven't reached the expected number of members with more than the minQuota partitions, "
                "but no more partitions to be assigned"
            )
        for member in self.under:
            if len(self.assignment[member]) != self.min_quota:
                raise AssignorError(
                    f"Consumer: [{member}] doesn't reach minQuota partitions, and no more partitions to be assigned"
                )
