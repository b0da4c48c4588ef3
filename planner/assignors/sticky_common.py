"""Shared pieces of `AbstractStickyAssignor`: `MemberData`, the builders' result, `RackInfo`, unassigned partitions."""

from __future__ import annotations

__all__ = ["DEFAULT_GENERATION", "MemberData", "RackInfo", "StickyResult", "two_pointer_difference"]

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from planner.assignors.common import Member, TopicPartition, replica_racks

DEFAULT_GENERATION = -1


@dataclass(frozen=True, slots=True)
class MemberData:
    """What `memberData(Subscription)` decodes: the claimed partitions and `Optional` generation."""

    partitions: tuple[TopicPartition, ...]
    generation: int | None


@dataclass(frozen=True, slots=True)
class StickyResult:
    """The builders' assignment and, for the constrained builder, `partitionsTransferringOwnership`."""

    assignment: dict[str, list[TopicPartition]]
    transferring: dict[TopicPartition, str] | None


class RackInfo:
    """`AbstractStickyAssignor.RackInfo`: consumer racks, replica racks and per-partition rack population."""

    __slots__ = ("consumer_racks", "partition_racks", "num_consumers")

    def __init__(
        self,
        per_topic: Mapping[str, int],
        ordered: Sequence[Member],
        partition_racks: Mapping[str, Sequence[Sequence[str | None]]],
    ) -> None:
        by_rack: dict[str, list[str]] = {}
        for m in ordered:
            if m.rack_id is not None:
                by_rack.setdefault(m.rack_id, []).append(m.member_id)
        racks_of: dict[TopicPartition, frozenset[str]] = {}
        if by_rack:
            for t, n in per_topic.items():
                for p in range(n):
                    racks_of[(t, p)] = replica_racks(partition_racks, t, p)
        all_partition_racks = frozenset().union(*racks_of.values()) if racks_of else frozenset()
        use = (
            bool(by_rack)
            and not all_partition_racks.isdisjoint(by_rack)
            and any(rs != all_partition_racks for rs in racks_of.values())
        )
        self.consumer_racks = {m: r for r, ms in by_rack.items() for m in ms} if use else {}
        self.partition_racks = racks_of if use else {}
        self.num_consumers = {tp: sum(len(by_rack.get(r, ())) for r in rs) for tp, rs in racks_of.items()}

    def racks_mismatch(self, consumer: str, tp: TopicPartition) -> bool:
        """The consumer has a rack and no replica of ``tp`` is on it."""
        rack = self.consumer_racks.get(consumer)
        return rack is not None and rack not in self.partition_racks.get(tp, ())

    def sort_by_rack_consumers(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """`sortPartitionsByRackConsumers`: stable sort by how many consumers share a replica rack."""
        if not self.num_consumers:
            return partitions
        return sorted(partitions, key=lambda tp: self.num_consumers.get(tp, 0))

    def next_rack_consumer(self, tp: TopicPartition, consumers: Sequence[str], first: int) -> int:
        """Index of the first consumer from ``first`` (cyclically) on one of ``tp``'s racks, or -1."""
        racks = self.partition_racks.get(tp)
        if not racks:
            return -1
        n = len(consumers)
        for i in range(n):
            index = (first + i) % n
            rack = self.consumer_racks.get(consumers[index])
            if rack is not None and rack in racks:
                return index
        return -1


def two_pointer_difference(everything: Iterable[TopicPartition], assigned: list[TopicPartition], key) -> list:
    """`getUnassignedPartitions`: walk all partitions against the sorted kept ones, as Kafka does."""
    if not assigned:
        return list(everything)
    kept = sorted(assigned, key=key)
    out = []
    i, n = 0, len(kept)
    nxt = kept[0]
    done = False
    for tp in everything:
        if done or tp != nxt:
            out.append(tp)
        elif i + 1 < n:
            i += 1
            nxt = kept[i]
        else:
            done = True
    return out
