"""`AbstractStickyAssignor`'s top level (claims, generations, builder choice) and the eager `StickyAssignor`."""

from __future__ import annotations

__all__ = ["MemberData", "StickyResult", "abstract_sticky_assign", "sticky_assign"]

from collections.abc import Mapping, Sequence
from itertools import chain
from operator import itemgetter

from planner.assignors.common import Member, TopicPartition, java_member_order, partitions_per_topic
from planner.assignors.sticky_common import DEFAULT_GENERATION, MemberData, RackInfo, StickyResult
from planner.assignors.sticky_constrained import ConstrainedAssignmentBuilder
from planner.assignors.sticky_general import GeneralAssignmentBuilder


def sticky_assign(
    topics: Mapping[str, int],
    members: Sequence[Member],
    partition_racks: Mapping[str, Sequence[Sequence[str | None]]],
) -> dict[str, list[TopicPartition]]:
    """Eager `StickyAssignor`: owned partitions and generation travel in the V1 user data.

    A member with ``generation`` None sends no user data (no claim, no generation); every other
    member's claim is its ``owned_partitions`` at that generation. See `abstract_sticky_assign`.

    Examples
    --------
    >>> from planner.assignors.common import parse_members
    >>> ms = parse_members([{"member_id": m, "topics": ["t"], "owned_partitions": {}, "generation": None}
    ...                     for m in ("a", "b")])
    >>> {m: sorted(ps) for m, ps in sticky_assign({"t": 3}, ms, {}).items()}
    {'a': [('t', 0), ('t', 2)], 'b': [('t', 1)]}
    """
    data = {
        m.member_id: MemberData(m.owned_partitions, m.generation) if m.generation is not None else MemberData((), None)
        for m in members
    }
    return abstract_sticky_assign(topics, members, partition_racks, data).assignment


def abstract_sticky_assign(
    topics: Mapping[str, int],
    members: Sequence[Member],
    partition_racks: Mapping[str, Sequence[Sequence[str | None]]],
    member_data: Mapping[str, MemberData],
) -> StickyResult:
    """`AbstractStickyAssignor.assignPartitions` with a fresh assignor instance.

    Parameters
    ----------
    topics : mapping
        ``{topic: partition_count}`` from cluster metadata.
    members : sequence of Member
        In the order the leader received them; ``generation`` (or -1) is `Subscription.generationId`.
    partition_racks : mapping
        Replica racks per partition; may be empty.
    member_data : mapping
        ``{member_id: MemberData}`` as the concrete assignor decodes it.

    Returns
    -------
    StickyResult

    Notes
    -----
    Claims are validated in the leader's `HashMap` member order: a partition claimed twice in the
    same generation is revoked from both, an older claim loses. With identical subscriptions the
    constrained builder keeps owned partitions up to the quotas (members met first in map order win
    the ``maxQuota`` slots) and deals the rest round-robin, rack-aligned first; otherwise the general
    builder keeps valid claims, assigns to the least-loaded eligible member and moves partitions until
    balanced, choosing moves through `PartitionMovements` (whose `HashSet` order is emulated).
    """
    per_topic = partitions_per_topic(topics, members)
    ordered = java_member_order(members)
    racks = RackInfo(per_topic, ordered, partition_racks)
    equal, owned, multi, max_generation = _all_subscriptions_equal(per_topic, ordered, member_data)
    if equal:
        return ConstrainedAssignmentBuilder(per_topic, racks, owned, multi).build()
    builder = GeneralAssignmentBuilder(per_topic, racks, owned, ordered, member_data, max_generation)
    return StickyResult(builder.build(), None)


def _all_subscriptions_equal(
    per_topic: Mapping[str, int], ordered: Sequence[Member], member_data: Mapping[str, MemberData]
) -> tuple[bool, dict[str, list[TopicPartition]], set[TopicPartition], int]:
    """`allSubscriptionsEqual`: compare subscriptions, keep claims on existing topics, note the max generation."""
    equal = True
    subscribed: set[str] = set()
    owned: dict[str, list[TopicPartition]] = {}
    max_generation = DEFAULT_GENERATION
    for m in ordered:
        if not subscribed:
            subscribed.update(m.topics)
        elif equal and not (len(m.topics) == len(subscribed) and subscribed.issuperset(m.topics)):
            equal = False
        data = member_data[m.member_id]
        max_generation = max(max_generation, _generation(data))
        if per_topic.keys() >= set(map(itemgetter(0), data.partitions)):
            owned[m.member_id] = list(data.partitions)
        else:
            owned[m.member_id] = [tp for tp in data.partitions if tp[0] in per_topic]
    claims = list(chain.from_iterable(owned.values()))
    if len(claims) == len(set(claims)):
        return equal, owned, set(), max_generation  # no partition claimed twice: nothing to resolve
    owned, multi = _resolve_claims(per_topic, ordered, member_data)
    return equal, owned, multi, max_generation


def _resolve_claims(
    per_topic: Mapping[str, int], ordered: Sequence[Member], member_data: Mapping[str, MemberData]
) -> tuple[dict[str, list[TopicPartition]], set[TopicPartition]]:
    """Settle partitions claimed by several members, in map order, against earlier claimants.

    The claimant's generation comes from its member data, the earlier owner's from its
    `Subscription.generationId`: equal generations revoke the partition from both (it is returned in
    the second set), a newer claim takes it over, an older one is ignored.
    """
    subscription_generation = {
        m.member_id: m.generation if m.generation is not None else DEFAULT_GENERATION for m in ordered
    }
    owner: dict[TopicPartition, str] = {}
    owned: dict[str, list[TopicPartition]] = {}
    multi: set[TopicPartition] = set()
    for m in ordered:
        generation = _generation(member_data[m.member_id])
        mine: list[TopicPartition] = []
        owned[m.member_id] = mine
        for tp in member_data[m.member_id].partitions:
            if tp[0] not in per_topic:
                continue
            other = owner.get(tp)
            if other is not None and generation < subscription_generation[other]:
                continue
            if other is not None:
                _remove(owned[other], tp)
                if generation == subscription_generation[other]:
                    multi.add(tp)
                    owner[tp] = m.member_id
                    continue
            mine.append(tp)
            owner[tp] = m.member_id
    return owned, multi


def _generation(data: MemberData) -> int:
    return data.generation if data.generation is not None else DEFAULT_GENERATION


def _remove(partitions: list[TopicPartition], tp: TopicPartition) -> None:
    """`List.remove(Object)`: drop the first occurrence if any."""
    try:
        partitions.remove(tp)
    except ValueError:
        pass
