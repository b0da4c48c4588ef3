"""The KIP-848 broker-side `uniform` assignor (Kafka's default for the consumer protocol)."""

from __future__ import annotations

__all__ = ["assign_uniform", "MAX_ITERATION_COUNT"]

from collections.abc import Sequence
from typing import TYPE_CHECKING

from planner.assignors.errors import AssignorError
from planner.assignors.server_spec import SubscriptionType
from pools.java_semantics import hash_order, hashset_copy_capacity

if TYPE_CHECKING:
    from planner.assignors.server_spec import GroupSpec, MemberSpec, TopicSpec

MAX_ITERATION_COUNT = 16
"""Rounds of the heterogeneous builder's final balancing loop (`MAX_ITERATION_COUNT`)."""

Assignment = dict[str, dict[str, Sequence[int]]]


def assign_uniform(spec: GroupSpec) -> Assignment:
    """Run `UniformAssignor` on a group spec: ``{member_id: {topic_id: partitions}}``.

    Parameters
    ----------
    spec : GroupSpec
        Built by `planner.assignors.server_spec.build_group_spec`.

    Returns
    -------
    dict
        The target assignment by topic id; members the assignor leaves out are absent.

    Raises
    ------
    AssignorError
        With `PartitionAssignorException`'s message when a subscribed topic id is not in the metadata.

    Notes
    -----
    Mirrors `UniformAssignor.assign`: `UniformHomogeneousAssignmentBuilder` when every member
    subscribes to the same topics (O(P + M), the result depends on the member `HashMap` order, the
    `HashSet<Uuid>` order of the topics and the `HashSet<Integer>` order of owned partitions), else
    `UniformHeterogeneousAssignmentBuilder` (O(P log P + 16 * T * (P_t + M_t log M_t))).
    """
    if not spec.members:
        return {}
    if spec.subscription_type is SubscriptionType.HOMOGENEOUS:
        return _homogeneous(spec)
    return _Heterogeneous(spec).build()


def _missing(topic: TopicSpec) -> AssignorError:
    return AssignorError(f"Members are subscribed to topic {topic.topic_id} which doesn't exist in the topic metadata.")


# --- homogeneous -------------------------------------------------------------------------------


def _homogeneous(spec: GroupSpec) -> Assignment:
    """`UniformHomogeneousAssignmentBuilder.build`: keep up to the quota, hand out the rest in order."""
    first = spec.members[0]
    # `new HashSet<>(topicIds)` sizes its table from `TopicIds.size()`: every subscribed name
    capacity = hashset_copy_capacity(first.subscription_size)
    subscribed = hash_order(first.topic_ids, lambda tid: spec.topics[tid].hash, initial_capacity=capacity)
    if not subscribed:
        return {}
    subscribed_set = set(subscribed)
    owned: dict[str, set[int]] = {}
    for member in spec.members:
        for tid, parts in member.assignment:
            if tid in subscribed_set:
                owned.setdefault(tid, set()).update(parts)

    unassigned: list[tuple[str, Sequence[int]]] = []
    total = 0
    for tid in subscribed:
        n = spec.topics[tid].partitions
        if n == -1:
            raise _missing(spec.topics[tid])
        taken = owned.get(tid)
        unassigned.append((tid, [p for p in range(n) if p not in taken] if taken else range(n)))
        total += n

    min_quota, extra = divmod(total, len(spec.members))
    target: Assignment = {}
    unfilled: list[tuple[str, int]] = []
    for member in spec.members:
        quota = min_quota + (1 if extra > 0 else 0)
        extra -= 1 if extra > 0 else 0
        kept: dict[str, Sequence[int]] = {}
        for tid, parts in member.assignment:
            if tid not in subscribed_set:
                continue
            if len(parts) <= quota:
                quota -= len(parts)
                kept[tid] = parts
            else:
                if quota:
                    kept[tid] = parts[:quota]
                unassigned.append((tid, parts[quota:]))
                quota = 0
        if quota > 0:
            unfilled.append((member.member_id, quota))
        target[member.member_id] = kept

    _hand_out(unassigned, unfilled, target)
    return target


def _hand_out(
    unassigned: list[tuple[str, Sequence[int]]],
    unfilled: list[tuple[str, int]],
    target: Assignment,
) -> None:
    """`assignRemainingPartitions`: walk the unassigned list once, filling members in order."""
    runs = iter(unassigned)
    tid, run, pos = "", (), 0
    for member_id, quota in unfilled:
        current = target[member_id]
        while quota > 0:
            if pos >= len(run):
                nxt = next(runs, None)
                if nxt is None:
                    break
                (tid, run), pos = nxt, 0
                continue
            take = run[pos : pos + quota]
            pos += len(take)
            quota -= len(take)
            have = current.get(tid)
            current[tid] = take if have is None else [*have, *take]
    leftover = len(run) - pos + sum(len(r) for _, r in runs)
    if leftover > 0:
        raise AssignorError("Partitions were left unassigned")


# --- heterogeneous -----------------------------------------------------------------------------


class _Heterogeneous:
    """`UniformHeterogeneousAssignmentBuilder`: sticky fill of least-loaded subscribers, then balance."""

    def __init__(self, spec: GroupSpec) -> None:
        self.spec = spec
        self.members: list[MemberSpec] = list(spec.members)
        self.subscribers: dict[str, list[int]] = {}
        for index, member in enumerate(self.members):
            for tid in member.topic_ids:
                if spec.topics[tid].partitions == -1:
                    raise _missing(spec.topics[tid])
                self.subscribers.setdefault(tid, []).append(index)
        self.sizes = [0] * len(self.members)
        self.owners = {tid: [-1] * spec.topics[tid].partitions for tid in self.subscribers}
        self.target: list[dict[str, set[int]]] = [{} for _ in self.members]

    def build(self) -> Assignment:
        if not self.subscribers:
            return {}
        self._keep_subscribed()
        self._assign_remaining()
        self._balance()
        return {m.member_id: t for m, t in zip(self.members, self.target)}

    def _topic_order(self, topic_ids: list[str]) -> list[str]:
        """Partitions per subscriber descending, then subscriber count, then `Uuid.compareTo`."""
        topics = self.spec.topics

        def key(tid: str) -> tuple[float, int, tuple[int, int]]:
            subscribers = len(self.subscribers[tid])
            return -(topics[tid].partitions / subscribers), subscribers, topics[tid].sort_key

        return sorted(topic_ids, key=key)

    def _keep_subscribed(self) -> None:
        """`maybeRevokePartitions`: keep every owned partition of a still-subscribed topic."""
        for index, member in enumerate(self.members):
            subscribed = set(member.topic_ids)
            for tid, parts in member.assignment:
                if tid in subscribed:
                    self.sizes[index] += len(parts)
                    owners = self.owners[tid]
                    for p in parts:
                        owners[p] = index
                    self.target[index][tid] = set(parts)

    def _assign_remaining(self) -> None:
        """`assignRemainingPartitions`: each topic's free partitions go to its least-loaded subscribers."""
        free = {}
        for tid, owners in self.owners.items():
            if -1 in owners:  # skip fully owned topics at C speed
                free[tid] = [p for p, owner in enumerate(owners) if owner == -1]
        balancer = _Balancer(self.sizes)
        sizes, target = self.sizes, self.target
        for tid in self._topic_order(list(free)):
            balancer.initialize(self.subscribers[tid])
            partitions = free[tid]
            receivers = balancer.next_least_loaded_many(len(partitions))
            owners = self.owners[tid]
            first, last = partitions[0], partitions[-1]
            if last - first + 1 == len(partitions):  # ascending and contiguous: one slice
                owners[first : last + 1] = receivers
            else:
                for p, index in zip(partitions, receivers):
                    owners[p] = index
            if len(set(receivers)) == len(receivers):  # one partition each (`assignPartition`)
                for index, p in zip(receivers, partitions):
                    held = target[index]
                    parts = held.get(tid)
                    if parts is None:
                        held[tid] = {p}
                    else:
                        parts.add(p)
                    sizes[index] += 1
                continue
            given: dict[int, list[int]] = {}
            for index, p in zip(receivers, partitions):
                got = given.get(index)
                if got is None:
                    given[index] = [p]
                else:
                    got.append(p)
            for index, got in given.items():
                parts = target[index].get(tid)
                if parts is None:
                    target[index][tid] = set(got)
                else:
                    parts.update(got)
                sizes[index] += len(got)

    def _balance(self) -> None:
        """`balance` / `balanceTopics`: sweep shared topics until a full lap moves nothing."""
        shared = self._topic_order([tid for tid, subs in self.subscribers.items() if len(subs) >= 2])
        if not shared:
            return
        balancer = _Balancer(self.sizes)
        last = -1
        for _ in range(MAX_ITERATION_COUNT):
            for index, tid in enumerate(shared):
                if index == last:
                    return
                if self._balance_topic(tid, balancer) > 0 or last == -1:
                    last = index

    def _balance_topic(self, tid: str, balancer: _Balancer) -> int:
        """`balanceTopic`: move the last partitions of the most loaded to the least loaded subscribers."""
        if balancer.initialize(self.subscribers[tid]) <= 1:
            return 0
        owners = self.owners[tid]
        partitions = sorted(range(len(owners)), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for i, p in enumerate(partitions):
            start.setdefault(owners[p], i)
            end[owners[p]] = i + 1
        moved = 0
        while not balancer.is_balanced():
            donor = balancer.next_most_loaded()
            while donor != -1 and end.get(donor, 0) - start.get(donor, 0) <= 0:
                balancer.exclude_most_loaded()
                donor = balancer.next_most_loaded()
            if donor == -1:
                break
            end[donor] -= 1
            partition = partitions[end[donor]]
            receiver = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            self._move(tid, partition, receiver)
            moved += 1
        return moved

    def _move(self, tid: str, partition: int, index: int) -> None:
        """`assignPartition`: take the partition from its owner, if any, and give it to ``index``."""
        owners = self.owners[tid]
        old = owners[partition]
        if old != -1:
            parts = self.target[old].get(tid)
            if parts is not None:
                parts.discard(partition)
                if not parts:
                    del self.target[old][tid]
            self.sizes[old] -= 1
        self.target[index].setdefault(tid, set()).add(partition)
        owners[partition] = index
        self.sizes[index] += 1


class _Balancer:
    """`MemberAssignmentBalancer`: a least-loaded range growing right and a most-loaded range growing left.

    ``sizes`` is the builder's live partition count per member index.
    """

    __slots__ = ("sizes", "order", "low_end", "low_count", "next_low", "high_start", "high_end", "high_count",
        "next_high")

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.order: list[int] = []
        self.low_end = self.next_low = 0
        self.low_count = -1
        self.high_start = self.high_end = 0
        self.high_count = 1
        self.next_high = -1

    def initialize(self, members: list[int]) -> int:
        """Reset to ``members``; return the spread between the most and the least loaded."""
        sizes = self.sizes
        self.order = sorted(members, key=lambda i: (sizes[i], i))
        n = len(self.order)
        self.low_end = self.next_low = 0
        self.low_count = sizes[self.order[0]] - 1
        self.high_start = self.high_end = n
        self.high_count = sizes[self.order[-1]] + 1
        self.next_high = n - 1
        return sizes[self.order[-1]] - sizes[self.order[0]]

    def next_least_loaded(self) -> int:
        """The member to receive the next partition (its count is assumed to rise by one)."""
        order, sizes = self.order, self.sizes
        if self.next_low >= self.low_end:
            self.low_count += 1
            while self.low_end < len(order) and sizes[order[self.low_end]] == self.low_count:
                self.low_end += 1
            self.next_low = 0
        chosen = order[self.next_low]
        self.next_low += 1
        return chosen

    def next_least_loaded_many(self, count: int) -> list[int]:
        """``count`` calls of `next_least_loaded` at once, for partitions assigned right after.

        Equivalent because a pass only reads the counts of members outside the least-loaded range,
        which the partitions handed out in that pass do not change.
        """
        order, sizes = self.order, self.sizes
        chosen: list[int] = []
        while count > 0:
            if self.next_low >= self.low_end:
                self.low_count += 1
                while self.low_end < len(order) and sizes[order[self.low_end]] == self.low_count:
                    self.low_end += 1
                self.next_low = 0
            take = min(count, self.low_end - self.next_low)
            chosen.extend(order[self.next_low : self.next_low + take])
            self.next_low += take
            count -= take
        return chosen

    def next_most_loaded(self) -> int:
        """The member to give up the next partition, or -1 when none can."""
        order, sizes = self.order, self.sizes
        if self.next_high < self.high_start:
            if self.high_end <= self.high_start and self.high_start > 0:
                self.high_count = sizes[order[self.high_start - 1]]
            else:
                self.high_count -= 1
            while self.high_start > 0 and sizes[order[self.high_start - 1]] == self.high_count:
                self.high_start -= 1
            self.next_high = self.high_end - 1
        if self.next_high < 0:
            return -1
        chosen = order[self.next_high]
        self.next_high -= 1
        return chosen

    def exclude_most_loaded(self) -> None:
        """Drop the member last returned by `next_most_loaded` from the most-loaded range."""
        order = self.order
        i, last = self.next_high + 1, self.high_end - 1
        order[i], order[last] = order[last], order[i]
        self.high_end -= 1

    def is_balanced(self) -> bool:
        return self.high_count - self.low_count <= 1

