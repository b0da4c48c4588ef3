"""`AbstractStickyAssignor.PartitionMovements`: the general builder's record of partition moves."""

from __future__ import annotations

__all__ = ["PartitionMovements"]

from planner.assignors.common import TopicPartition
from pools.java_semantics import topic_partition_hash


class PartitionMovements:
    """`PartitionMovements`: net moves per topic and (source, destination) pair during one rebalance."""

    __slots__ = ("_by_topic", "_moves")

    def __init__(self) -> None:
        self._by_topic: dict[str, dict[tuple[str, str], _JavaHashSet]] = {}
        self._moves: dict[TopicPartition, tuple[str, str]] = {}

    def _remove_record(self, tp: TopicPartition) -> tuple[str, str]:
        pair = self._moves.pop(tp)
        pairs = self._by_topic[tp[0]]
        pairs[pair].remove(tp)
        if not pairs[pair]:
            del pairs[pair]
        if not pairs:
            del self._by_topic[tp[0]]
        return pair

    def _add_record(self, tp: TopicPartition, pair: tuple[str, str]) -> None:
        self._moves[tp] = pair
        self._by_topic.setdefault(tp[0], {}).setdefault(pair, _JavaHashSet()).add(tp)

    def move(self, tp: TopicPartition, old: str, new: str) -> None:
        """Record ``tp`` moving; a move back to its original owner cancels out."""
        if tp in self._moves:
            source = self._remove_record(tp)[0]
            if source != new:
                self._add_record(tp, (source, new))
        else:
            self._add_record(tp, (old, new))

    def actual_partition_to_move(self, tp: TopicPartition, old: str, new: str) -> TopicPartition:
        """`getTheActualPartitionToBeMoved`: undo an earlier opposite move of the same topic instead."""
        pairs = self._by_topic.get(tp[0])
        if pairs is None:
            return tp
        if tp in self._moves:
            old = self._moves[tp][0]
        reverse = pairs.get((new, old))
        return tp if reverse is None else reverse.first()


class _JavaHashSet:
    """A `HashSet<TopicPartition>` reduced to what `PartitionMovements` needs: its first element."""

    __slots__ = ("_seq", "_next", "_capacity")

    def __init__(self) -> None:
        self._seq: dict[TopicPartition, int] = {}
        self._next = 0
        self._capacity = 16

    def add(self, tp: TopicPartition) -> None:
        if tp in self._seq:
            return
        self._seq[tp] = self._next
        self._next += 1
        if len(self._seq) > 0.75 * self._capacity:
            self._capacity *= 2

    def remove(self, tp: TopicPartition) -> None:
        self._seq.pop(tp, None)

    def __bool__(self) -> bool:
        return bool(self._seq)

    def first(self) -> TopicPartition:
        """`iterator().next()`: lowest bucket, earliest insertion within the bucket."""
        mask = self._capacity - 1

        def position(tp: TopicPartition) -> tuple[int, int]:
            h = topic_partition_hash(tp[0], tp[1]) & 0xFFFFFFFF
            return ((h ^ (h >> 16)) & mask, self._seq[tp])

        return min(self._seq, key=position)
