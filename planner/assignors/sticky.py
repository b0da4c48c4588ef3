"""`AbstractStickyAssignor` (constrained and general builders) and the eager `StickyAssignor`."""

from __future__ import annotations

__all__ = ["MemberData", "StickyResult", "abstract_sticky_assign", "sticky_assign"]

import bisect
import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter

import numpy as np

from planner.assignors.common import Member, TopicPartition, java_member_order, partitions_per_topic, replica_racks
from planner.assignors.errors import AssignorError
from planner.java_compat import topic_partition_hash, utf16_key

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
    racks = _RackInfo(per_topic, ordered, partition_racks)
    equal, owned, multi, max_generation = _all_subscriptions_equal(per_topic, ordered, member_data)
    if equal:
        return _ConstrainedBuilder(per_topic, racks, owned, multi).build()
    builder = _GeneralBuilder(per_topic, racks, owned, ordered, member_data, max_generation)
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


class _RackInfo:
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


class _ConstrainedBuilder:
    """`ConstrainedAssignmentBuilder`: every member subscribes to the same topics."""

    def __init__(
        self,
        per_topic: Mapping[str, int],
        racks: _RackInfo,
        owned: dict[str, list[TopicPartition]],
        multi: set[TopicPartition],
    ) -> None:
        self.per_topic = per_topic
        self.racks = racks
        self.owned = owned
        self.multi = multi
        self.sorted_topics = sorted(per_topic, key=utf16_key)
        self.rank = {t: i for i, t in enumerate(self.sorted_topics)}
        total = sum(per_topic.values())
        n = len(owned)
        if n == 0:
            raise AssignorError("/ by zero")
        self.min_quota = total // n
        self.max_quota = -(-total // n)
        self.expected_over = total % n
        self.current_over = 0
        self.assignment: dict[str, list[TopicPartition]] = {c: [] for c in owned}
        self.assigned: list[TopicPartition] = []
        self.maybe_revoked: dict[TopicPartition, str] = {}
        self.under: list[str] = []
        self.exact: list[str] = []
        self.transferring: dict[TopicPartition, str] = {}

    def build(self) -> StickyResult:
        """Keep owned partitions up to quota, then deal the rest (rack-aligned first)."""
        self._assign_owned()
        unassigned = self._unassigned()
        self.under.sort(key=utf16_key)
        self.exact.sort(key=utf16_key)
        unassigned = self.racks.sort_by_rack_consumers(unassigned)
        unassigned = self._assign_rack_aware_round_robin(unassigned)
        self._assign_round_robin(unassigned)
        self._verify_unfilled()
        return StickyResult(self.assignment, self.transferring)

    def _assign_owned(self) -> None:
        rank = self.rank
        # (partition, topic) order; Python's string order is String.compareTo's on ASCII names.
        by_partition = itemgetter(1, 0) if all(t.isascii() for t in rank) else (lambda tp: (tp[1], rank[tp[0]]))
        for consumer, claimed in self.owned.items():
            mine = claimed
            if consumer in self.racks.consumer_racks:
                mine = []
                for tp in claimed:
                    if self.racks.racks_mismatch(consumer, tp):
                        self.maybe_revoked[tp] = consumer
                    else:
                        mine.append(tp)
            mine = sorted(mine, key=by_partition)
            if self.multi:
                mine = [tp for tp in mine if tp not in self.multi]
            if len(mine) < self.min_quota:
                self._keep(consumer, mine, len(mine))
                self.under.append(consumer)
            elif len(mine) >= self.max_quota and self.current_over < self.expected_over:
                self.current_over += 1
                if self.current_over == self.expected_over:
                    self.exact.clear()
                self._keep(consumer, mine, self.max_quota)
            else:
                self._keep(consumer, mine, self.min_quota)
                if self.current_over < self.expected_over:
                    self.exact.append(consumer)

    def _keep(self, consumer: str, mine: list[TopicPartition], quota: int) -> None:
        self.assignment[consumer].extend(mine[:quota])
        self.assigned.extend(mine[:quota])
        self.maybe_revoked.update(dict.fromkeys(mine[quota:], consumer))

    def _unassigned(self) -> list[TopicPartition]:
        """`getUnassignedPartitions`: all partitions in (topic, partition) order minus the kept ones."""
        topics = self.sorted_topics
        counts = np.fromiter((self.per_topic[t] for t in topics), dtype=np.int64, count=len(topics))
        offsets = np.concatenate(([0], np.cumsum(counts)[:-1])) if len(topics) else counts
        n = len(self.assigned)
        topic_index = np.fromiter(map(self.rank.__getitem__, map(itemgetter(0), self.assigned)), np.int64, n)
        partition = np.fromiter(map(itemgetter(1), self.assigned), np.int64, n)
        if np.any(partition >= counts[topic_index]):
            # A claim beyond the partition count derails Kafka's two-pointer walk; replay it as is.
            everything = ((t, p) for t in topics for p in range(self.per_topic[t]))
            return _two_pointer_difference(everything, self.assigned, lambda tp: (self.rank[tp[0]], tp[1]))
        free = np.ones(int(counts.sum()), dtype=bool)
        free[offsets[topic_index] + partition] = False
        ids = np.flatnonzero(free)
        free_topic = np.searchsorted(offsets, ids, side="right") - 1
        return list(zip(map(topics.__getitem__, free_topic.tolist()), (ids - offsets[free_topic]).tolist()))

    def _assign_rack_aware_round_robin(self, unassigned: list[TopicPartition]) -> list[TopicPartition]:
        if not self.racks.consumer_racks:
            return unassigned
        under, exact, racks = self.under, self.exact, self.racks
        remaining: list[TopicPartition] = []
        next_index = 0
        for tp in unassigned:
            consumer = None
            index = racks.next_rack_consumer(tp, under, next_index)
            if index >= 0:
                consumer = under[index]
                count = len(self.assignment[consumer]) + 1
                if count >= self.min_quota:
                    under.remove(consumer)
                    if count < self.max_quota and self.current_over < self.expected_over:
                        exact.append(consumer)
                else:
                    index += 1
                next_index = index % len(under) if under else 0
            elif exact:
                first = racks.next_rack_consumer(tp, exact, 0)
                if first >= 0:
                    consumer = exact[first]
                    if len(self.assignment[consumer]) + 1 == self.max_quota:
                        del exact[first]
                        self.current_over += 1
                        if self.current_over == self.expected_over:
                            exact.clear()
            if consumer is None:
                remaining.append(tp)
            else:
                self._assign_new(tp, consumer)
        return remaining

    def _assign_round_robin(self, unassigned: list[TopicPartition]) -> None:
        under, exact = self.under, self.exact
        cursor = 0  # position of a Java iterator over `under`; the last returned element is under[cursor - 1]
        for tp in unassigned:
            if cursor < len(under):
                consumer = under[cursor]
                cursor += 1
            elif not under and not exact:
                raise AssignorError("No more unfilled consumers to be assigned.")
            elif not under:
                consumer = exact.pop(0)
            else:
                consumer = under[0]
                cursor = 1
            count = self._assign_new(tp, consumer)
            if count == self.min_quota:
                del under[cursor - 1]
                cursor -= 1
                exact.append(consumer)
            elif count == self.max_quota:
                self.current_over += 1

    def _assign_new(self, tp: TopicPartition, consumer: str) -> int:
        target = self.assignment[consumer]
        target.append(tp)
        if self.maybe_revoked.get(tp, consumer) != consumer or tp in self.multi:
            self.transferring[tp] = consumer
        return len(target)

    def _verify_unfilled(self) -> None:
        if not self.under:
            return
        if self.current_over != self.expected_over:
            raise AssignorError(
                "We haven't reached the expected number of members with more than the minQuota partitions, "
                "but no more partitions to be assigned"
            )
        for member in self.under:
            if len(self.assignment[member]) != self.min_quota:
                raise AssignorError(
                    f"Consumer: [{member}] doesn't reach minQuota partitions, and no more partitions to be assigned"
                )


class _GeneralBuilder:
    """`GeneralAssignmentBuilder`: subscriptions differ; balance by moving partitions one at a time."""

    def __init__(
        self,
        per_topic: Mapping[str, int],
        racks: _RackInfo,
        current: dict[str, list[TopicPartition]],
        ordered: Sequence[Member],
        member_data: Mapping[str, MemberData],
        max_generation: int,
    ) -> None:
        self.per_topic = per_topic
        self.racks = racks
        self.current = current
        self.ordered = ordered
        self.member_data = member_data
        self.max_generation = max_generation
        self.topic_consumers: dict[str, list[str]] = {t: [] for t in per_topic}
        self.consumer_topics: dict[str, list[str]] = {}
        for m in ordered:
            mine = [t for t in m.topics if t in per_topic]
            self.consumer_topics[m.member_id] = mine
            for t in mine:
                self.topic_consumers[t].append(m.member_id)
        self.consumer_topic_set = {c: frozenset(ts) for c, ts in self.consumer_topics.items()}
        # `getMaxAssignmentSize`: all partitions, or the sum over the consumer's existing topics.
        total = sum(per_topic.values())
        self.max_size = {
            c: total if len(ts) == len(per_topic) else sum(per_topic[t] for t in ts)
            for c, ts in self.consumer_topics.items()
        }
        self.subscriptions = {m.member_id: frozenset(m.topics) for m in ordered}
        self.partition_consumer = {tp: c for c, tps in current.items() for tp in tps}
        self.sorted_topics = sorted(per_topic, key=lambda t: (len(self.topic_consumers[t]), utf16_key(t)))
        self.topic_pos = {t: i for i, t in enumerate(self.sorted_topics)}
        self.sorted_all = [(t, p) for t in self.sorted_topics for p in range(per_topic[t])]
        self.sorted_subs = _SortedConsumers(current)
        self.movements = _PartitionMovements()
        self.revocation_required = False
        self._version = 0  # bumped on every change to `current`
        self._balance_check = (-1, False)  # `_is_balanced` verdict and the version it was computed at

    def build(self) -> dict[str, list[TopicPartition]]:
        """Keep valid claims, assign the rest, then rebalance."""
        prev = self._prepopulate()
        unassigned = self._unassigned(self._assign_owned())
        for c in self.current:
            self.sorted_subs.add(c)
        self._balance(prev, unassigned)
        return self.current

    def _prepopulate(self) -> dict[TopicPartition, tuple[str, int]]:
        """`prepopulateCurrentAssignments`: the latest claim of an older generation per partition."""
        prev: dict[TopicPartition, tuple[str, int]] = {}
        for m in self.ordered:
            data = self.member_data[m.member_id]
            if data.generation is not None and data.generation < self.max_generation:
                generation = data.generation
            elif data.generation is None and self.max_generation > DEFAULT_GENERATION:
                generation = DEFAULT_GENERATION
            else:
                continue
            for tp in data.partitions:
                if tp not in prev or generation > prev[tp][1]:
                    prev[tp] = (m.member_id, generation)
        return prev

    def _assign_owned(self) -> list[TopicPartition]:
        assigned: list[TopicPartition] = []
        for consumer, tps in self.current.items():
            topics = self.subscriptions[consumer]
            kept = []
            for tp in tps:
                if tp[0] not in topics or self.racks.racks_mismatch(consumer, tp):
                    self.revocation_required = True
                else:
                    kept.append(tp)
            tps[:] = kept
            assigned.extend(kept)
        return assigned

    def _unassigned(self, assigned: list[TopicPartition]) -> list[TopicPartition]:
        if not assigned:
            return self.sorted_all
        pos = self.topic_pos
        return _two_pointer_difference(self.sorted_all, assigned, lambda tp: (pos[tp[0]], tp[1]))

    def _assign_partition(self, tp: TopicPartition, rack_aware: bool) -> bool:
        """`maybeAssignPartition`: give ``tp`` to the least-loaded eligible consumer."""
        for consumer in self.sorted_subs:
            if tp[0] in self.consumer_topic_set[consumer] and not (
                rack_aware and self.racks.racks_mismatch(consumer, tp)
            ):
                self.sorted_subs.remove(consumer)
                self.current[consumer].append(tp)
                self.partition_consumer[tp] = consumer
                self._version += 1
                self.sorted_subs.add(consumer)
                return True
        return False

    def _assign_all(self, partitions: list[TopicPartition], rack_aware: bool) -> list[TopicPartition]:
        """`maybeAssign`; returns the partitions not placed (all of them when not rack-aware)."""
        if not rack_aware:
            self._assign_all_least_loaded(partitions)
            return partitions
        left = []
        for tp in partitions:
            if not (self.topic_consumers[tp[0]] and self._assign_partition(tp, rack_aware)):
                left.append(tp)
        return left

    def _assign_all_least_loaded(self, partitions: list[TopicPartition]) -> None:
        """`maybeAssign` without racks: each partition to the first subscriber in (size, id) order.

        The first subscriber in the consumer `TreeSet` is the minimum of the topic's subscribers, and
        while one topic's partitions are placed only those subscribers change size, so a heap per
        run of a topic replaces Kafka's scan of every consumer.
        """
        heap: list[tuple[int, bytes, str]] = []
        heap_topic = None
        for tp in partitions:
            if not self.topic_consumers[tp[0]]:
                continue
            if tp[0] != heap_topic:
                heap_topic = tp[0]
                heap = [(len(self.current[c]), utf16_key(c), c) for c in dict.fromkeys(self.topic_consumers[tp[0]])]
                heapq.heapify(heap)
            size, key, consumer = heapq.heappop(heap)
            self.sorted_subs.remove(consumer)
            self.current[consumer].append(tp)
            self.partition_consumer[tp] = consumer
            self.sorted_subs.add(consumer)
            self._version += 1
            heapq.heappush(heap, (size + 1, key, consumer))

    def _balance(self, prev: dict[TopicPartition, tuple[str, int]], unassigned: list[TopicPartition]) -> None:
        initializing = not self.current[self.sorted_subs.last()]
        to_assign = unassigned
        if self.racks.consumer_racks:
            to_assign = self._assign_all(unassigned, True)
        self._assign_all(to_assign, False)

        fixed = {(t, p) for t, cs in self.topic_consumers.items() if len(cs) < 2 for p in range(self.per_topic[t])}
        if fixed:
            self.sorted_all[:] = [tp for tp in self.sorted_all if tp not in fixed]
            unassigned[:] = [tp for tp in unassigned if tp not in fixed]
        fixed_assignments = {}
        for consumer in self.consumer_topics:
            if not self._can_participate(consumer):
                self.sorted_subs.remove(consumer)
                fixed_assignments[consumer] = self.current.pop(consumer)
                self._version += 1

        before = {c: list(tps) for c, tps in self.current.items()}
        before_owner = dict(self.partition_consumer)
        if not self.revocation_required:
            self._perform_reassignments(unassigned, prev)
        performed = self._perform_reassignments(self.sorted_all, prev)
        if not initializing and performed and _balance_score(self.current) >= _balance_score(before):
            self.current.clear()
            self.current.update(before)
            self.partition_consumer = before_owner
        self.current.update(fixed_assignments)

    def _can_participate(self, consumer: str) -> bool:
        tps = self.current[consumer]
        if len(tps) < self.max_size[consumer]:
            return True
        return any(len(self.topic_consumers[tp[0]]) >= 2 for tp in tps)

    def _is_balanced(self) -> bool:
        """`isBalanced`: sizes within one, or no partition could move to a smaller eligible consumer.

        Kafka scans, per consumer, every partition of its topics for an owner holding more than one
        partition more. The consumer's own partitions never qualify (their owner is the consumer
        itself), so it is enough to know the largest owner of each topic's partitions. The verdict is
        reused until the assignment changes.
        """
        version, verdict = self._balance_check
        if version != self._version:
            verdict = self._compute_balanced()
            self._balance_check = (self._version, verdict)
        return verdict

    def _compute_balanced(self) -> bool:
        current = self.current
        if len(current[self.sorted_subs.first()]) >= len(current[self.sorted_subs.last()]) - 1:
            return True
        # Only a consumer below its maximum can take a partition, and only from an owner holding at
        # least two more than the smallest such consumer.
        sizes = ((len(current[c]), self.max_size[c]) for c in self.sorted_subs)
        smallest = next((size for size, most in sizes if size != most), None)
        if smallest is None:
            return True
        largest: dict[str, int] = {}
        for owner in self.sorted_subs.descending():
            size = len(current[owner])
            if size < smallest + 2:
                break
            for t, p in current[owner]:
                if largest.get(t, -1) < size and p < self.per_topic[t]:
                    largest[t] = size
        top = max(largest.values(), default=0)
        for consumer in self.sorted_subs:
            count = len(current[consumer])
            if count + 1 >= top:
                break  # ascending sizes: no later consumer can take a partition either
            if count == self.max_size[consumer]:
                continue
            topics = self.consumer_topic_set[consumer]
            if len(largest) < len(topics):
                if any(size > count + 1 and t in topics for t, size in largest.items()):
                    return False
            elif any(largest.get(t, 0) > count + 1 for t in topics):
                return False
        return True

    def _perform_reassignments(
        self, partitions: list[TopicPartition], prev: dict[TopicPartition, tuple[str, int]]
    ) -> bool:
        performed = False
        modified = True
        while modified:
            modified = False
            for tp in partitions:
                if self._is_balanced():
                    break
                if self._move_one(tp, prev):
                    performed = modified = True
        return performed

    def _move_one(self, tp: TopicPartition, prev: dict[TopicPartition, tuple[str, int]]) -> bool:
        """One step of `performReassignments` for ``tp``; True when something moved."""
        current = self.current
        consumer = self.partition_consumer[tp]
        size = len(current[consumer])
        if tp in prev:
            previous = current.get(prev[tp][0])
            if previous is None:
                raise AssignorError(
                    'Cannot invoke "java.util.List.size()" because the return value of '
                    '"java.util.Map.get(Object)" is null'
                )
            if size > len(previous) + 1:
                self._reassign(tp, prev[tp][0])
                return True
        racks = self.racks
        rack = racks.consumer_racks.get(consumer)
        replica = racks.partition_racks.get(tp, frozenset())
        if rack is not None and replica and rack in replica:
            for other in self.topic_consumers[tp[0]]:
                other_rack = racks.consumer_racks.get(other)
                if other_rack is not None and other_rack in replica and size > len(current[other]) + 1:
                    self._reassign_to_least_loaded(tp)
                    return True
        for other in self.topic_consumers[tp[0]]:
            if size > len(current[other]) + 1:
                self._reassign_to_least_loaded(tp)
                return True
        return False

    def _reassign_to_least_loaded(self, tp: TopicPartition) -> None:
        target = next(c for c in self.sorted_subs if tp[0] in self.consumer_topic_set[c])
        self._reassign(tp, target)

    def _reassign(self, tp: TopicPartition, new_consumer: str) -> None:
        consumer = self.partition_consumer[tp]
        moved = self.movements.actual_partition_to_move(tp, consumer, new_consumer)
        old = self.partition_consumer[moved]
        self.sorted_subs.remove(old)
        self.sorted_subs.remove(new_consumer)
        self.movements.move(moved, old, new_consumer)
        self._version += 1
        self.current[old].remove(moved)
        self.current[new_consumer].append(moved)
        self.partition_consumer[moved] = new_consumer
        self.sorted_subs.add(new_consumer)
        self.sorted_subs.add(old)


class _SortedConsumers:
    """The general builder's `TreeSet` of consumers ordered by (assignment size, member id)."""

    __slots__ = ("_current", "_keys", "_order")

    def __init__(self, current: Mapping[str, list[TopicPartition]]) -> None:
        self._current = current
        self._keys: dict[str, tuple[int, bytes]] = {}
        self._order: list[tuple[int, bytes, str]] = []

    def add(self, consumer: str) -> None:
        if consumer in self._keys:
            return
        key = (len(self._current[consumer]), utf16_key(consumer))
        self._keys[consumer] = key
        bisect.insort(self._order, (*key, consumer))

    def remove(self, consumer: str) -> None:
        key = self._keys.pop(consumer)
        del self._order[bisect.bisect_left(self._order, (*key, consumer))]

    def descending(self):
        """Largest first."""
        return map(itemgetter(2), reversed(self._order))

    def first(self) -> str:
        return self._order[0][2]

    def last(self) -> str:
        return self._order[-1][2]

    def __iter__(self):
        """Ascending order; callers stop iterating before they change the set."""
        return map(itemgetter(2), self._order)


class _JavaHashSet:
    """A `HashSet<TopicPartition>` reduced to what `PartitionMovements` needs: its first element."""

    __slots__ = ("_seq", "_next", "_capacity")

    def __init__(self) -> None:
        self._seq: dict[TopicPartition, int] = {}
        self._next = 0
        self._capacity = 16

    def add(self, tp: TopicPartition) -> None:
        if tp in self._seq:
            return
        self._seq[tp] = self._next
        self._next += 1
        if len(self._seq) > 0.75 * self._capacity:
            self._capacity *= 2

    def remove(self, tp: TopicPartition) -> None:
        self._seq.pop(tp, None)

    def __bool__(self) -> bool:
        return bool(self._seq)

    def first(self) -> TopicPartition:
        """`iterator().next()`: lowest bucket, earliest insertion within the bucket."""
        mask = self._capacity - 1

        def position(tp: TopicPartition) -> tuple[int, int]:
            h = topic_partition_hash(tp[0], tp[1]) & 0xFFFFFFFF
            return ((h ^ (h >> 16)) & mask, self._seq[tp])

        return min(self._seq, key=position)


class _PartitionMovements:
    """`PartitionMovements`: net moves per topic and (source, destination) pair during one rebalance."""

    __slots__ = ("_by_topic", "_moves")

    def __init__(self) -> None:
        self._by_topic: dict[str, dict[tuple[str, str], _JavaHashSet]] = {}
        self._moves: dict[TopicPartition, tuple[str, str]] = {}

    def _remove_record(self, tp: TopicPartition) -> tuple[str, str]:
        pair = self._moves.pop(tp)
        pairs = self._by_topic[tp[0]]
        pairs[pair].remove(tp)
        if not pairs[pair]:
            del pairs[pair]
        if not pairs:
            del self._by_topic[tp[0]]
        return pair

    def _add_record(self, tp: TopicPartition, pair: tuple[str, str]) -> None:
        self._moves[tp] = pair
        self._by_topic.setdefault(tp[0], {}).setdefault(pair, _JavaHashSet()).add(tp)

    def move(self, tp: TopicPartition, old: str, new: str) -> None:
        """Record ``tp`` moving; a move back to its original owner cancels out."""
        if tp in self._moves:
            source = self._remove_record(tp)[0]
            if source != new:
                self._add_record(tp, (source, new))
        else:
            self._add_record(tp, (old, new))

    def actual_partition_to_move(self, tp: TopicPartition, old: str, new: str) -> TopicPartition:
        """`getTheActualPartitionToBeMoved`: undo an earlier opposite move of the same topic instead."""
        pairs = self._by_topic.get(tp[0])
        if pairs is None:
            return tp
        if tp in self._moves:
            old = self._moves[tp][0]
        reverse = pairs.get((new, old))
        return tp if reverse is None else reverse.first()


def _two_pointer_difference(everything: Iterable[TopicPartition], assigned: list[TopicPartition], key) -> list:
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


def _remove(partitions: list[TopicPartition], tp: TopicPartition) -> None:
    """`List.remove(Object)`: drop the first occurrence if any."""
    try:
        partitions.remove(tp)
    except ValueError:
        pass


def _balance_score(assignment: Mapping[str, list[TopicPartition]]) -> int:
    """Sum of |size difference| over all member pairs."""
    sizes = sorted(len(tps) for tps in assignment.values())
    score = 0
    prefix = 0
    for i, s in enumerate(sizes):
        score += s * i - prefix
        prefix += s
    return score
