"""Shared plain-data model of the client-side assignors: members, subscriptions, racks, ordering.

The group leader hands every client assignor a `HashMap<String, Subscription>`; this module turns
the contract's plain dicts into frozen `Member` values, reproduces that map's iteration order and
the `MemberInfo` sort rule, and builds the `partitionsPerTopic` view `AbstractPartitionAssignor`
derives from cluster metadata.
"""

from __future__ import annotations

__all__ = [
    "Member",
    "TopicPartition",
    "parse_members",
    "parse_topics",
    "parse_partition_racks",
    "java_member_order",
    "member_info_key",
    "sort_members",
    "partitions_per_topic",
    "replica_racks",
    "to_output",
]

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from operator import itemgetter
from typing import Any

from planner.assignors.errors import AssignorError
from pools.java_semantics import hash_order, string_hash, utf16_key

TopicPartition = tuple[str, int]
"""A `TopicPartition` as ``(topic, partition)``."""


@dataclass(frozen=True, slots=True)
class Member:
    """One group member's `Subscription` as the leader receives it.

    ``topics`` keeps the subscription list as sent (it may name topics that do not exist);
    ``owned_partitions`` is the member's claim in the order given; ``generation`` is the
    generation it reports, ``None`` for a member that was never assigned.
    """

    member_id: str
    group_instance_id: str | None
    rack: str | None
    topics: tuple[str, ...]
    owned_partitions: tuple[TopicPartition, ...]
    generation: int | None

    @property
    def rack_id(self) -> str | None:
        """`Subscription.rackId()` filtered as the assignors do: ``""`` counts as no rack."""
        return self.rack or None


def parse_topics(topics: Mapping[str, Any]) -> dict[str, int]:
    """Validate ``{topic: partition_count}`` (counts are non-negative Java ints)."""
    if not isinstance(topics, Mapping):
        raise AssignorError(f"topics: expected a mapping of topic to partition count, got {topics!r}")
    out: dict[str, int] = {}
    for topic, count in topics.items():
        if not isinstance(topic, str):
            raise AssignorError(f"topics: topic names must be strings, got {topic!r}")
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count < 2**31:
            raise AssignorError(f"topics[{topic!r}]: expected a partition count in [0, 2^31), got {count!r}")
        out[topic] = count
    return out


def parse_members(members: Sequence[Mapping[str, Any]]) -> tuple[Member, ...]:
    """Validate the contract's member dicts and return them as `Member` values, order kept."""
    if isinstance(members, (str, bytes, Mapping)) or not isinstance(members, Sequence):
        raise AssignorError(f"members: expected a list of member objects, got {type(members).__name__}")
    out: list[Member] = []
    seen: set[str] = set()
    for i, raw in enumerate(members):
        member = _parse_member(raw, f"members[{i}]")
        if member.member_id in seen:
            raise AssignorError(f"members[{i}].member_id: duplicate member id {member.member_id!r}")
        seen.add(member.member_id)
        out.append(member)
    return tuple(out)


def parse_partition_racks(
    partition_racks: Mapping[str, Any] | None,
) -> dict[str, tuple[tuple[str | None, ...], ...]]:
    """Validate ``{topic: [[rack or None per replica] per partition]}``."""
    if partition_racks is None:
        return {}
    if not isinstance(partition_racks, Mapping):
        raise AssignorError(f"partition_racks: expected a mapping of topic to replica racks, got {partition_racks!r}")
    out: dict[str, tuple[tuple[str | None, ...], ...]] = {}
    for topic, per_partition in partition_racks.items():
        where = f"partition_racks[{topic!r}]"
        if not isinstance(per_partition, Sequence) or isinstance(per_partition, str):
            raise AssignorError(f"{where}: expected a list of replica rack lists, got {per_partition!r}")
        rows = []
        for p, replicas in enumerate(per_partition):
            if not isinstance(replicas, Sequence) or isinstance(replicas, str):
                raise AssignorError(f"{where}[{p}]: expected a list of racks, got {replicas!r}")
            if any(r is not None and not isinstance(r, str) for r in replicas):
                raise AssignorError(f"{where}[{p}]: racks must be strings or null, got {replicas!r}")
            rows.append(tuple(replicas))
        out[topic] = tuple(rows)
    return out


def java_member_order(members: Sequence[Member]) -> list[Member]:
    """Iteration order of the leader's `HashMap<String, Subscription>` filled in list order."""
    by_id = {m.member_id: m for m in members}
    return [by_id[member_id] for member_id in hash_order(by_id, string_hash)]


def member_info_key(member: Member) -> tuple[int, bytes]:
    """`MemberInfo.compareTo`: static members first by group instance id, then dynamic by member id.

    Two static members with equal instance ids compare equal (the stable sort keeps their order).
    """
    if member.group_instance_id is not None:
        return (0, utf16_key(member.group_instance_id))
    return (1, utf16_key(member.member_id))


def sort_members(members: Iterable[Member]) -> list[Member]:
    """`Collections.sort(List<MemberInfo>)`: a stable sort by `member_info_key`."""
    return sorted(members, key=member_info_key)


def partitions_per_topic(topics: Mapping[str, int], members: Iterable[Member]) -> dict[str, int]:
    """Subscribed topics that exist with at least one partition, as `AbstractPartitionAssignor` keeps them."""
    subscribed = {t for m in members for t in m.topics}
    return {t: n for t, n in topics.items() if t in subscribed and n > 0}


def replica_racks(
    partition_racks: Mapping[str, Sequence[Sequence[str | None]]], topic: str, partition: int
) -> frozenset[str]:
    """Distinct non-null racks of a partition's replicas (none when the topic has no rack data)."""
    rows = partition_racks.get(topic)
    if rows is None or partition >= len(rows):
        return frozenset()
    return frozenset(r for r in rows[partition] if r is not None)


def to_output(
    members: Iterable[Member], assignment: Mapping[str, Iterable[TopicPartition]]
) -> dict[str, dict[str, list[int]]]:
    """Canonical result: every member, topics in `compareTo` order, partitions ascending."""
    out: dict[str, dict[str, list[int]]] = {}
    for m in members:
        tps = list(assignment.get(m.member_id, ()))
        names = set(map(itemgetter(0), tps))
        if all(map(str.isascii, names)):
            tps.sort()  # code-point order is UTF-16 order on ASCII names, and tuple sorting runs in C
        else:
            tps.sort(key=lambda tp: (utf16_key(tp[0]), tp[1]))
        if len(names) == len(tps):  # one partition per topic: build the map in C
            out[m.member_id] = dict(zip(map(itemgetter(0), tps), map(list, zip(map(itemgetter(1), tps)))))
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, partition in tps:
            ps = by_topic.get(topic)
            if ps is None:
                ps = by_topic[topic] = []
            ps.append(partition)
        out[m.member_id] = by_topic
    return out


def _parse_member(raw: Any, where: str) -> Member:
    if not isinstance(raw, Mapping):
        raise AssignorError(f"{where}: expected a member object, got {raw!r}")
    member_id = raw.get("member_id")
    if not isinstance(member_id, str):
        raise AssignorError(f"{where}.member_id: expected a string, got {member_id!r}")
    instance = raw.get("group_instance_id")
    if instance is not None and not isinstance(instance, str):
        raise AssignorError(f"{where}.group_instance_id: expected a string or null, got {instance!r}")
    rack = raw.get("rack")
    if rack is not None and not isinstance(rack, str):
        raise AssignorError(f"{where}.rack: expected a string or null, got {rack!r}")
    topics = raw.get("topics", ())
    if isinstance(topics, str) or not isinstance(topics, Sequence) or set(map(type, topics)) - {str}:
        raise AssignorError(f"{where}.topics: expected a list of topic names, got {topics!r}")
    generation = raw.get("generation")
    if generation is not None and (isinstance(generation, bool) or not isinstance(generation, int)):
        raise AssignorError(f"{where}.generation: expected an int or null, got {generation!r}")
    return Member(
        member_id=member_id,
        group_instance_id=instance,
        rack=rack,
        topics=tuple(topics),
        owned_partitions=_parse_owned(raw.get("owned_partitions") or {}, f"{where}.owned_partitions"),
        generation=generation,
    )


def _parse_owned(owned: Any, where: str) -> tuple[TopicPartition, ...]:
    if not isinstance(owned, Mapping):
        raise AssignorError(f"{where}: expected a mapping of topic to partition list, got {owned!r}")
    if not set(map(type, owned)) <= {str} or not set(map(type, owned.values())) <= {list, tuple}:
        for topic, partitions in owned.items():
            if not isinstance(topic, str):
                raise AssignorError(f"{where}: topic names must be strings, got {topic!r}")
            if isinstance(partitions, str) or not isinstance(partitions, Sequence):
                raise AssignorError(f"{where}[{topic!r}]: expected a list of partitions, got {partitions!r}")
    out = tuple(chain.from_iterable(map(zip, map(repeat, owned.keys()), owned.values())))
    ids = [p for _, p in out]
    if ids and not (set(map(type, ids)) == {int} and min(ids) >= 0 and max(ids) < 2**31):
        topic, p = next((t, p) for t, p in out if type(p) is not int or not 0 <= p < 2**31)
        raise AssignorError(f"{where}[{topic!r}]: expected partition ids in [0, 2^31), got {p!r}")
    return out
