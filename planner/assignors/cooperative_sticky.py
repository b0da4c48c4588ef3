"""`CooperativeStickyAssignor`: the sticky assignment minus partitions another member must revoke first."""

from __future__ import annotations

__all__ = ["cooperative_sticky_assign"]

from collections.abc import Mapping, Sequence

from planner.assignors.common import Member, TopicPartition
from planner.assignors.sticky import DEFAULT_GENERATION, MemberData, abstract_sticky_assign


def cooperative_sticky_assign(
    topics: Mapping[str, int],
    members: Sequence[Member],
    partition_racks: Mapping[str, Sequence[Sequence[str | None]]],
) -> dict[str, list[TopicPartition]]:
    """Run `AbstractStickyAssignor` on the members' owned partitions, then withhold transfers.

    Parameters
    ----------
    topics, members, partition_racks
        As for `planner.assignors.sticky.abstract_sticky_assign`. A member's claim is
        `Subscription.ownedPartitions`; its generation is the one encoded in the user data a
        `CooperativeStickyAssignor` sends, so a new member counts as generation -1.

    Returns
    -------
    dict
        ``{member_id: [(topic, partition), ...]}``: what the assignor returns, i.e. a partition
        moving from one member to another is left out until its owner has revoked it.

    Notes
    -----
    Mirrors `CooperativeStickyAssignor.assign` and `adjustAssignment`. The constrained builder
    reports the partitions changing owner itself; after the general builder they are computed as the
    partitions newly assigned to one member that another member owned and loses.
    """
    data = {
        m.member_id: MemberData(
            m.owned_partitions, m.generation if m.generation is not None else DEFAULT_GENERATION
        )
        for m in members
    }
    result = abstract_sticky_assign(topics, members, partition_racks, data)
    assignment = result.assignment
    transferring = result.transferring
    if transferring is None:
        transferring = _partitions_transferring_ownership(members, assignment)
    withheld: dict[str, set[TopicPartition]] = {}
    for tp, consumer in transferring.items():
        withheld.setdefault(consumer, set()).add(tp)
    for consumer, tps in withheld.items():
        assignment[consumer] = [tp for tp in assignment[consumer] if tp not in tps]
    return assignment


def _partitions_transferring_ownership(
    members: Sequence[Member], assignment: Mapping[str, list[TopicPartition]]
) -> dict[TopicPartition, str]:
    """`computePartitionsTransferringOwnership`: added to one member and revoked from another."""
    added: dict[TopicPartition, str] = {}
    revoked: set[TopicPartition] = set()
    for m in members:
        owned = set(m.owned_partitions)
        assigned = assignment[m.member_id]
        added.update((tp, m.member_id) for tp in assigned if tp not in owned)
        revoked.update(owned.difference(assigned))
    return {tp: c for tp, c in added.items() if tp in revoked}
