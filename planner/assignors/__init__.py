"""Kafka's consumer assignors, reproducing Kafka's output: client-side and KIP-848 server-side."""

from __future__ import annotations

__all__ = ["Assignor", "AssignorError", "Strategy", "assign", "assign_server"]

from collections.abc import Mapping, Sequence
from typing import Any

from planner.assignors.common import parse_members, parse_partition_racks, parse_topics, to_output
from planner.assignors.errors import AssignorError
from planner.assignors.server import assign_server
from planner.assignors.strategies import Assignor

Strategy = Assignor
"""The earlier name of `Assignor` (the same enum)."""


def assign(
    strategy: str | Assignor,
    topics: Mapping[str, int],
    members: Sequence[Mapping[str, Any]],
    partition_racks: Mapping[str, Sequence[Sequence[str | None]]] | None = None,
) -> dict[str, dict[str, list[int]]]:
    """Run a client-side assignor as the group leader would and return its assignment.

    Parameters
    ----------
    strategy : {"range", "roundrobin", "sticky", "cooperative-sticky"} or Assignor
        The `partition.assignment.strategy` name (a client-side `Assignor`).
    topics : mapping
        ``{topic: partition_count}``; a subscribed topic missing here does not exist.
    members : sequence of mapping
        In the order the leader received them: ``member_id``, ``group_instance_id``, ``rack``,
        ``topics``, ``owned_partitions`` (``{topic: [p]}``) and ``generation`` (int or None).
    partition_racks : mapping, optional
        ``{topic: [[rack or None per replica] per partition]}``.

    Returns
    -------
    dict
        ``{member_id: {topic: [partitions]}}`` with every member (``{}`` when it got nothing),
        topics in `String.compareTo` order, partitions ascending. For ``cooperative-sticky``
        partitions still being transferred are already removed from their new owner.

    Raises
    ------
    AssignorError
        For an unknown strategy, malformed input, or a state Kafka's assignor rejects (Kafka's message).

    Examples
    --------
    >>> members = [{"member_id": m, "group_instance_id": None, "rack": None, "topics": ["t0", "t1"],
    ...             "owned_partitions": {}, "generation": None} for m in ("C0", "C1")]
    >>> assign("range", {"t0": 3, "t1": 3}, members)
    {'C0': {'t0': [0, 1], 't1': [0, 1]}, 'C1': {'t0': [2], 't1': [2]}}
    """
    chosen = Assignor.parse(strategy, side="client")
    parsed_topics = parse_topics(topics)
    parsed_members = parse_members(members)
    racks = parse_partition_racks(partition_racks)
    if chosen is Assignor.RANGE:
        from planner.assignors.range import range_assign

        return range_assign(parsed_topics, parsed_members, racks)
    if chosen is Assignor.ROUNDROBIN:
        from planner.assignors.roundrobin import roundrobin_assign

        return roundrobin_assign(parsed_topics, parsed_members)
    if chosen is Assignor.STICKY:
        from planner.assignors.sticky import sticky_assign

        return to_output(parsed_members, sticky_assign(parsed_topics, parsed_members, racks))
    from planner.assignors.cooperative_sticky import cooperative_sticky_assign

    return to_output(parsed_members, cooperative_sticky_assign(parsed_topics, parsed_members, racks))

