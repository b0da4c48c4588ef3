"""The KIP-848 broker-side `range` assignor: contiguous ranges, static members first, never sticky."""

from __future__ import annotations

__all__ = ["assign_range", "member_order"]

from typing import TYPE_CHECKING

from planner.assignors.errors import AssignorError
from planner.assignors.server_spec import SubscriptionType
from pools.java_semantics import utf16_key

if TYPE_CHECKING:
    from planner.assignors.server_spec import GroupSpec, MemberSpec

_MISSING = "Member is subscribed to a non-existent topic"


def assign_range(spec: GroupSpec) -> dict[str, dict[str, range]]:
    """Run the broker-side `RangeAssignor` on a group spec: ``{member_id: {topic_id: range}}``.

    Parameters
    ----------
    spec : GroupSpec
        Built by `planner.assignors.server_spec.build_group_spec`.

    Returns
    -------
    dict
        Each member's partitions per topic id as a `range` (Kafka's `RangeSet`).

    Raises
    ------
    AssignorError
        ``"Member is subscribed to a non-existent topic"`` when a subscribed id is not in the metadata.

    Notes
    -----
    Mirrors `RangeAssignor.assignHomogeneousGroup` / `assignHeterogeneousGroup`. Members are taken in
    `member_order`; each topic's subscribers receive ``partitions // subscribers`` partitions, the
    first ``partitions % subscribers`` of them one more, in consecutive ranges. The current assignment
    is ignored, so the result depends on no hash order. O(M log M + sum of subscriptions).

    Examples
    --------
    >>> from planner.assignors.server_spec import build_group_spec
    >>> topics = [{"name": "t", "topic_id": "AAAAAAAAAAAAAAAAAAAAAg", "partitions": 5}]
    >>> members = [{"member_id": m, "instance_id": None, "rack": None, "topics": ["t"]} for m in "BA"]
    >>> assign_range(build_group_spec(topics, members))
    {'A': {'AAAAAAAAAAAAAAAAAAAAAg': range(0, 3)}, 'B': {'AAAAAAAAAAAAAAAAAAAAAg': range(3, 5)}}
    """
    ordered = member_order(spec.members)
    if not ordered:
        return {}
    if spec.subscription_type is SubscriptionType.HOMOGENEOUS:
        return _homogeneous(spec, ordered)
    subscribers: dict[str, int] = {}
    for member in ordered:
        for tid in member.topic_ids:
            if tid not in subscribers and spec.topics[tid].partitions == -1:
                raise AssignorError(_MISSING)
            subscribers[tid] = subscribers.get(tid, 0) + 1
    cursor = {tid: 0 for tid in subscribers}
    extra = {tid: spec.topics[tid].partitions % n for tid, n in subscribers.items()}
    result: dict[str, dict[str, range]] = {}
    for member in ordered:
        assignment: dict[str, range] = {}
        for tid in member.topic_ids:
            count = spec.topics[tid].partitions
            quota = count // subscribers[tid]
            if extra[tid] > 0:
                quota += 1
                extra[tid] -= 1
            start = cursor[tid]
            stop = min(start + quota, count)
            cursor[tid] = stop
            if start < stop:
                assignment[tid] = range(start, stop)
        result[member.member_id] = assignment
    return result


def _homogeneous(spec: GroupSpec, ordered: list[MemberSpec]) -> dict[str, dict[str, range]]:
    """`assignHomogeneousGroup`: the i-th member gets the same range of every topic of a given size.

    Topics with equal partition counts are co-partitioned, so each member's ranges are computed once
    per distinct count rather than once per topic.
    """
    by_count: dict[int, list[str]] = {}
    for tid in ordered[0].topic_ids:
        count = spec.topics[tid].partitions
        if count == -1:
            raise AssignorError(_MISSING)
        by_count.setdefault(count, []).append(tid)
    n = len(ordered)
    result: dict[str, dict[str, range]] = {}
    for i, member in enumerate(ordered):
        assignment: dict[str, range] = {}
        for count, tids in by_count.items():
            quota, extra = divmod(count, n)
            start = min(i * quota + min(i, extra), count)
            stop = min(start + quota + (1 if i < extra else 0), count)
            if start < stop:
                assignment.update(dict.fromkeys(tids, range(start, stop)))
        result[member.member_id] = assignment
    return result


def member_order(members: tuple[MemberSpec, ...]) -> list[MemberSpec]:
    """`RangeAssignor.sortMemberIds`: static members by instance id, then dynamic ones by member id."""
    return sorted(
        members,
        key=lambda m: (0, utf16_key(m.instance_id)) if m.instance_id is not None else (1, utf16_key(m.member_id)),
    )
