"""Consumer groups of the synthetic cluster: one group per unit of a topic's fan-out, range-assigned.

Group ``<topic>.<app>`` reads one topic with 1-4 members (never more than its partitions); partitions are
split into contiguous ranges as the Range assignor does. Offsets: the log-end offset is the partition's
message count, the committed offset trails it by a small lag. One group (the first by name whose topic has
fan-out) is empty: it keeps committed offsets but has no members, as after its consumers stopped.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import numpy as np

from planner.sample.cluster import SampleCluster

__all__ = ["GroupMember", "ConsumerGroup", "build_groups"]

_APPS = ("indexer", "archiver", "enricher", "alerts", "etl", "mirror")


@dataclass(frozen=True, slots=True)
class GroupMember:
    consumer_id: str
    host: str
    client_id: str
    assignment: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroup:
    """A group: members (empty = no active members) and ``offsets[(topic, partition)] = (current, log_end)``."""

    group: str
    topic: str
    members: tuple[GroupMember, ...]
    offsets: tuple[tuple[int, int, int], ...]

    @property
    def active(self) -> bool:
        return bool(self.members)


def build_groups(
    cluster: SampleCluster, log_end_offsets: dict[tuple[str, int], int], rng: np.random.Generator
) -> tuple[ConsumerGroup, ...]:
    """One group per fan-out unit of every topic, sorted by group id."""
    groups = []
    for t in cluster.topics:
        apps = rng.permutation(len(_APPS))[: t.fanout]
        for a in sorted(int(i) for i in apps):
            group = f"{t.topic}.{_APPS[a]}"
            n = int(min(t.partitions, rng.integers(1, 5)))
            members = []
            for m in range(n):
                lo, hi = m * t.partitions // n, (m + 1) * t.partitions // n
                client = f"consumer-{group}-{m + 1}"
                member_uuid = uuid.UUID(bytes=rng.integers(0, 256, 16, dtype=np.uint8).tobytes(), version=4)
                host = f"/10.{int(rng.integers(0, 256))}.{int(rng.integers(0, 256))}.{int(rng.integers(1, 255))}"
                members.append(GroupMember(f"{client}-{member_uuid}", host, client,
                                           tuple((t.topic, p) for p in range(lo, hi))))
            offsets = []
            for p in range(t.partitions):
                end = log_end_offsets[(t.topic, p)]
                lag = int(min(end, rng.geometric(0.02) - 1))
                offsets.append((p, end - lag, end))
            groups.append(ConsumerGroup(group, t.topic, tuple(members), tuple(offsets)))
    groups.sort(key=lambda g: g.group)
    if groups:
        groups[0] = ConsumerGroup(groups[0].group, groups[0].topic, (), groups[0].offsets)
    return tuple(groups)
