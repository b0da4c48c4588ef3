"""The group spec a KIP-848 broker-side assignor receives, rebuilt from the contract's plain data.

`build_group_spec` rebuilds the Java state that the group coordinator's `TargetAssignmentBuilder` hands an
assignor: the member `HashMap` order, the `TopicIds` sets, the unmodifiable `HashMap<Uuid, HashSet<Integer>>`
current assignments and the subscription type. `planner.assignors.server` dispatches it to
`planner.assignors.server_uniform` or `planner.assignors.server_range`, which read it.
"""

from __future__ import annotations

__all__ = [
    "SubscriptionType",
    "TopicSpec",
    "MemberSpec",
    "GroupSpec",
    "build_group_spec",
    "parse_uuid",
    "hashset_order",
]

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from planner.assignors.errors import AssignorError
from pools.java_semantics import hash_order, hashset_copy_capacity, string_hash, table_size_for, utf16_key, uuid_hash


class SubscriptionType(StrEnum):
    """`SubscriptionType`: every member subscribes to the same topic names, or not."""

    HOMOGENEOUS = "HOMOGENEOUS"
    HETEROGENEOUS = "HETEROGENEOUS"


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """One topic of the metadata image: ``partitions == -1`` means the id is missing from it."""

    name: str
    topic_id: str
    msb: int
    lsb: int
    partitions: int

    def __post_init__(self) -> None:
        if self.partitions < -1:
            raise AssignorError(f"topic {self.name!r}: partitions must be >= -1, got {self.partitions!r}")

    @property
    def hash(self) -> int:
        """`Uuid.hashCode()` of the topic id."""
        return uuid_hash(self.msb, self.lsb)

    @property
    def sort_key(self) -> tuple[int, int]:
        """`Uuid.compareTo` order: msb then lsb as signed longs.

        That is Kafka's comparison at the commit the conformance vectors come from (2024-10); later
        trunk compares the halves unsigned. No vector tells the two apart (it needs two topics with
        equal partitions per subscriber and subscriber counts whose ids differ in a sign bit).
        """
        return self.msb, self.lsb


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """A member as the assignor sees it.

    ``topic_ids`` is the `TopicIds` set in iteration order (subscribed names that resolve to a topic
    id) and ``subscription_size`` its `size()`, which counts every distinct subscribed name, resolved
    or not; ``assignment`` is the current target assignment as ``(topic_id, partitions)`` pairs in
    `HashMap` order, each partition tuple in `HashSet<Integer>` order.
    """

    member_id: str
    instance_id: str | None
    rack: str | None
    topic_ids: tuple[str, ...]
    subscription_size: int
    assignment: tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """`GroupSpecImpl`: members in the iteration order of the coordinator's member `HashMap`."""

    members: tuple[MemberSpec, ...]
    topics: Mapping[str, TopicSpec]
    subscription_type: SubscriptionType


def build_group_spec(topics: Sequence[Mapping[str, Any]], members: Sequence[Mapping[str, Any]]) -> GroupSpec:
    """Rebuild the `GroupSpec` the coordinator passes to an assignor from the contract's plain data.

    Raises
    ------
    AssignorError
        If a field is missing or malformed, a topic name or id repeats, or a member id repeats.
    """
    specs = _topic_specs(topics)
    by_name = {t.name: t for t in specs}
    by_id = {t.topic_id: t for t in specs}
    seen: set[str] = set()
    built: list[MemberSpec] = []
    subscriptions: dict[tuple[str, ...], tuple[tuple[str, ...], int]] = {}  # members mostly share one
    for i, member in enumerate(members):
        member_id = _field(member, "member_id", str, f"members[{i}]")
        if member_id in seen:
            raise AssignorError(f"members[{i}]: duplicate member_id {member_id!r}")
        seen.add(member_id)
        built.append(_member_spec(member, i, by_name, subscriptions))
    order = hash_order(built, lambda m: string_hash(m.member_id))
    return GroupSpec(tuple(order), by_id, _subscription_type(members))


def parse_uuid(text: str) -> tuple[int, int]:
    """`Uuid.fromString`: URL-safe base64 without padding, 16 bytes, as signed (msb, lsb).

    >>> parse_uuid("AAAAAAAAAAAAAAAAAAAAAQ")
    (0, 1)
    """
    if not isinstance(text, str) or len(text) > 24:
        raise AssignorError(f"topic_id {text!r} is not a base64 Uuid string (at most 24 characters)")
    if "+" in text or "/" in text:
        raise AssignorError(f"topic_id {text!r} is not valid URL-safe base64")
    try:
        raw = base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise AssignorError(f"topic_id {text!r} is not valid URL-safe base64") from None
    if len(raw) != 16:
        raise AssignorError(
            f"Input string `{text}` decoded as {len(raw)} bytes, which is not equal to the expected "
            "16 bytes of a base64-encoded UUID"
        )
    return int.from_bytes(raw[:8], "big", signed=True), int.from_bytes(raw[8:], "big", signed=True)


def _topic_specs(topics: Sequence[Mapping[str, Any]]) -> list[TopicSpec]:
    specs: list[TopicSpec] = []
    names: set[str] = set()
    ids: set[str] = set()
    for i, topic in enumerate(topics):
        where = f"topics[{i}]"
        name = _field(topic, "name", str, where)
        topic_id = _field(topic, "topic_id", str, where)
        partitions = _field(topic, "partitions", int, where)
        if name in names or topic_id in ids:
            raise AssignorError(f"{where}: duplicate topic name {name!r} or id {topic_id!r}")
        names.add(name)
        ids.add(topic_id)
        msb, lsb = parse_uuid(topic_id)
        specs.append(TopicSpec(name, topic_id, msb, lsb, partitions))
    return specs


def _member_spec(
    member: Mapping[str, Any],
    index: int,
    by_name: Mapping[str, TopicSpec],
    subscriptions: dict[tuple[str, ...], tuple[tuple[str, ...], int]],
) -> MemberSpec:
    where = f"members[{index}]"
    instance_id = member.get("instance_id")
    rack = member.get("rack")
    if instance_id is not None and not isinstance(instance_id, str):
        raise AssignorError(f"{where}.instance_id: expected a string or null, got {instance_id!r}")
    subscribed = _field(member, "topics", (list, tuple), where)
    current = member.get("current_assignment") or {}
    if not isinstance(current, Mapping):
        raise AssignorError(f"{where}.current_assignment: expected {{topic: [partitions]}}, got {current!r}")
    known = subscriptions.get(tuple(subscribed))
    if known is None:
        if not all(isinstance(n, str) for n in subscribed):
            raise AssignorError(f"{where}.topics: expected topic names, got {subscribed!r}")
        size = len(set(subscribed))
        name_order = hash_order(subscribed, string_hash, initial_capacity=hashset_copy_capacity(size))
        ids = tuple(by_name[n].topic_id for n in name_order if n in by_name)
        known = subscriptions[tuple(subscribed)] = (ids, size)
    topic_ids, size = known
    owned = []
    for name in sorted(current, key=utf16_key):
        topic = by_name.get(name)
        if topic is None:
            continue  # a deleted topic: its partitions left the assignment with it
        partitions = current[name]
        limit = topic.partitions
        if partitions and (
            not set(map(type, partitions)) <= {int} or min(partitions) < 0 or (limit != -1 and max(partitions) >= limit)
        ):
            raise AssignorError(
                f"{where}.current_assignment[{name!r}]: expected partition ids in [0, {limit}), got {partitions!r}"
            )
        if partitions:
            owned.append((topic, hashset_order(partitions)))
    entries = hash_order(owned, lambda e: e[0].hash)
    assignment = tuple((topic.topic_id, parts) for topic, parts in entries)
    return MemberSpec(member["member_id"], instance_id, rack, topic_ids, size, assignment)


def _subscription_type(members: Sequence[Mapping[str, Any]]) -> SubscriptionType:
    """`ModernGroup.subscriptionType`: homogeneous when every subscribed name has every member."""
    distinct: dict[tuple[str, ...], int] = {}
    for member in members:
        key = tuple(member["topics"])
        distinct[key] = distinct.get(key, 0) + 1
    counts: dict[str, int] = {}
    for names, n in distinct.items():
        for name in set(names):
            counts[name] = counts.get(name, 0) + n
    if all(c == len(members) for c in counts.values()):
        return SubscriptionType.HOMOGENEOUS
    return SubscriptionType.HETEROGENEOUS


def hashset_order(partitions: Sequence[int]) -> tuple[int, ...]:
    """Iteration order of ``new HashSet<>(partitions)`` (`Integer.hashCode()` is the value).

    `pools.java_semantics.hash_order` specialised to non-negative integers, where most buckets hold the id
    itself (the server assignors call it for every owned topic of every member).

    Examples
    --------
    >>> hashset_order([40, 7, 23]), hashset_order([70_000, 3])  # 70000 spreads to bucket 1 of 16
    ((7, 23, 40), (70000, 3))
    """
    distinct = list(dict.fromkeys(partitions))
    mask = table_size_for(hashset_copy_capacity(len(distinct))) - 1
    highest = max(distinct)
    if highest <= min(mask, 0xFFFF):
        return tuple(sorted(distinct))  # every id below the capacity has its own bucket: the id
    if highest <= 0xFFFF:  # the spread (p ^ p >>> 16) is p itself: bucket p & mask, ties in insertion order
        return tuple(sorted(distinct, key=mask.__and__))
    return tuple(sorted(distinct, key=lambda p: (p ^ (p >> 16)) & mask))


def _field(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(obj, Mapping) or key not in obj:
        raise AssignorError(f"{where}: missing field {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise AssignorError(f"{where}.{key}: expected {getattr(kind, '__name__', kind)}, got {value!r}")
    return value
