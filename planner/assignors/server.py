"""KIP-848 broker-side assignors: the entry point that builds Kafka's group spec and dispatches.

`assign_server` takes the plain data of the contract, rebuilds the group spec the coordinator hands an
assignor (`planner.assignors.server_spec`) and runs `server_uniform` or `server_range` on it.
"""

from __future__ import annotations

__all__ = [
    "SubscriptionType",
    "TopicSpec",
    "MemberSpec",
    "GroupSpec",
    "assign_server",
    "build_group_spec",
    "parse_uuid",
]

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from planner.assignors.server_range import assign_range
from planner.assignors.server_spec import (
    GroupSpec, MemberSpec, SubscriptionType, TopicSpec, build_group_spec, parse_uuid,
)
from planner.assignors.server_uniform import assign_uniform
from planner.assignors.strategies import Assignor
from pools.java_semantics import utf16_key
from pools.memory import gc_paused


def assign_server(
    strategy: str | Assignor,
    topics: Sequence[Mapping[str, Any]],
    members: Sequence[Mapping[str, Any]],
) -> dict[str, dict[str, list[int]]]:
    """Compute the target assignment a Kafka 4.x group coordinator computes for a consumer group.

    Parameters
    ----------
    strategy : {"uniform", "range"} or Assignor
        The broker-side assignor by its `group.consumer.assignors` name (or a server-side `Assignor`).
    topics : list of dict
        ``{name, topic_id, partitions}``; ``topic_id`` is Kafka's base64 `Uuid` string and
        ``partitions`` is -1 for an id the metadata image no longer describes.
    members : list of dict
        ``{member_id, instance_id, rack, topics, current_assignment}``, listed in the order the
        coordinator inserted them into its member map; ``topics`` are subscribed names (names without
        a topic id are dropped, as `TopicIds` does) and ``current_assignment`` is the previous target
        assignment ``{topic name: [partitions]}``.

    Returns
    -------
    dict
        ``{member_id: {topic name: [partitions ascending]}}`` with every member, in input order,
        topics ordered as `String.compareTo`.

    Raises
    ------
    AssignorError
        On malformed input, or with Kafka's `PartitionAssignorException` message.

    See Also
    --------
    planner.assignors.server_uniform.assign_uniform, planner.assignors.server_range.assign_range

    Notes
    -----
    Mirrors `UniformAssignor.assign` and `RangeAssignor.assign` as `TargetAssignmentBuilder.build`
    drives them: racks are carried but unused, as in Kafka 4.0.

    Examples
    --------
    >>> topics = [{"name": "t0", "topic_id": "YktLOJt6pftV1GyvTUrl_g", "partitions": 3}]
    >>> members = [{"member_id": m, "instance_id": None, "rack": None, "topics": ["t0"],
    ...             "current_assignment": {}} for m in ("A", "B")]
    >>> assign_server("range", topics, members)
    {'A': {'t0': [0, 1]}, 'B': {'t0': [2]}}
    """
    chosen = Assignor.parse(strategy, side="server")
    with gc_paused():
        spec = build_group_spec(topics, members)
        by_id = assign_uniform(spec) if chosen is Assignor.UNIFORM else assign_range(spec)
        return _by_name(spec, members, by_id)


def _by_name(
    spec: GroupSpec, members: Sequence[Mapping[str, Any]], by_id: Mapping[str, Mapping[str, Iterable[int]]]
) -> dict[str, dict[str, list[int]]]:
    """Topic ids back to names: members in input order, topics in name order, partitions ascending."""
    ordered = [(t.topic_id, t.name) for t in sorted(spec.topics.values(), key=lambda t: utf16_key(t.name))]
    rank = {tid: i for i, (tid, _) in enumerate(ordered)}
    result: dict[str, dict[str, list[int]]] = {}
    for member in members:
        per_topic = by_id.get(member["member_id"], {})
        if len(per_topic) * 8 > len(ordered):  # most topics present: walk them in name order
            pairs = [(name, per_topic.get(tid)) for tid, name in ordered]
        else:
            present = sorted(per_topic.items(), key=lambda kv: rank[kv[0]])
            pairs = [(spec.topics[tid].name, parts) for tid, parts in present]
        # a range or a single partition is already in order; sets and hash-ordered tuples are sorted
        result[member["member_id"]] = {
            name: [*parts] if len(parts) == 1 or type(parts) is range else sorted(parts)
            for name, parts in pairs if parts
        }
    return result
