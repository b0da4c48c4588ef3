"""Rebalance simulation: drive a consumer group through membership and metadata events.

Each event triggers a rebalance under the chosen protocol and every result is fed back as the
members' owned partitions (with generations), so stickiness, eager revocation, the cooperative
protocol's follow-up rounds and stale claims of returning members all show up as they would in Kafka.
"""

from __future__ import annotations

__all__ = ["EventType", "PartitionMove", "RebalanceStep", "simulate", "derive_topic_id"]

import base64
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from planner.assignors.server import assign_server
from planner.assignors.strategies import Assignor
from pools.java_semantics import utf16_key
from pools.errors import InputError
from pools.input_limits import MAX_PARTITIONS_PER_TOPIC, check_count

Assignment = dict[str, dict[str, list[int]]]

MAX_FOLLOW_UP_ROUNDS = 10
"""Cooperative follow-up rebalances allowed per event before the simulation reports no convergence."""


class EventType(StrEnum):
    """What happens to the group between two rebalances."""

    JOIN = "join"
    LEAVE = "leave"
    CRASH = "crash"
    RETURN = "return"
    SUBSCRIBE = "subscribe"
    ADD_PARTITIONS = "add_partitions"
    CREATE_TOPIC = "create_topic"
    DELETE_TOPIC = "delete_topic"


@dataclass(frozen=True, slots=True)
class PartitionMove:
    """A partition whose owner changed in a round; ``None`` is "nobody" (new, withheld or freed)."""

    topic: str
    partition: int
    from_member: str | None
    to_member: str | None


@dataclass(frozen=True, slots=True)
class RebalanceStep:
    """One assignor run: the event that caused it, the result and what changed hands.

    ``revoked`` lists ``(member, topic, partition)`` each member had to give up before this round's
    assignment took effect: everything it owned under the eager protocol, the partitions missing
    from its new assignment otherwise.
    """

    step: int
    round: int
    event: str
    generation: int
    assignment: Mapping[str, Mapping[str, list[int]]]
    partition_counts: Mapping[str, int]
    member_bytes: Mapping[str, float]
    moved: tuple[PartitionMove, ...]
    revoked: tuple[tuple[str, str, int], ...]

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form."""
        return {
            "step": self.step,
            "round": self.round,
            "event": self.event,
            "generation": self.generation,
            "assignment": {m: dict(a) for m, a in self.assignment.items()},
            "partition_counts": dict(self.partition_counts),
            "member_bytes": dict(self.member_bytes),
            "moved": [[m.topic, m.partition, m.from_member, m.to_member] for m in self.moved],
            "revoked": [list(r) for r in self.revoked],
        }


@dataclass(slots=True)
class _Member:
    member_id: str
    topics: tuple[str, ...]
    instance_id: str | None = None
    rack: str | None = None
    owned: dict[str, list[int]] = field(default_factory=dict)
    generation: int | None = None


def simulate(
    strategy: Assignor,
    topics: Mapping[str, int],
    members: Sequence[Mapping[str, Any]],
    events: Sequence[Mapping[str, Any]],
    *,
    partition_bytes: Mapping[tuple[str, int], float] | None = None,
    topic_ids: Mapping[str, str] | None = None,
) -> tuple[RebalanceStep, ...]:
    """Run an initial rebalance and one rebalance (plus follow-up rounds) per event.

    Parameters
    ----------
    strategy : Assignor
        A client assignor (``range``, ``roundrobin``, ``sticky``, ``cooperative-sticky``, run through
        `planner.assignors.assign`) or a KIP-848 server assignor (``uniform``, ``server-range``; run
        through `assign_server`).
    topics : mapping
        ``{topic: partition_count}`` at the start.
    members : sequence of mapping
        ``{member_id, topics, instance_id?, rack?}`` at the start, in join order.
    events : sequence of mapping
        ``{"event": <EventType>, ...}``: ``join`` (``member``, ``topics``, ``instance_id?``,
        ``rack?``), ``leave``/``crash``/``return`` (``member``), ``subscribe`` (``member``,
        ``topics``), ``add_partitions``/``create_topic`` (``topic``, ``count``), ``delete_topic``
        (``topic``). A crashed member is dropped from the group but remembers its partitions and
        generation; on ``return`` a client member claims them again (a stale claim), while the KIP-848
        coordinator, which owns the assignment, treats it as a new member. Kafka's sticky assignors
        drop a claim from an older generation, but on the general path (unequal subscriptions)
        `CooperativeStickyAssignor.computePartitionsTransferringOwnership` reads the raw owned lists,
        so a partition the returning member gets back is handed over in the same round its current
        owner revokes it.
    partition_bytes : mapping, optional
        ``{(topic, partition): bytes/s}`` for the per-member byte balance (0 when absent).
    topic_ids : mapping, optional
        ``{topic: Uuid string}`` for the server assignors; otherwise derived with `derive_topic_id`.

    Returns
    -------
    tuple of RebalanceStep
        In order; ``step`` 0 is the initial assignment, ``round`` > 1 are cooperative follow-ups.

    Raises
    ------
    InputError
        For a malformed event (naming ``events[i]`` and the field), or a partition count past
        `pools.input_limits.MAX_PARTITIONS_PER_TOPIC`.
    """
    for topic, count in topics.items():
        if not isinstance(topic, str) or isinstance(count, bool) or not isinstance(count, int):
            raise InputError(f"topics.{topic}: expected a partition count, got {count!r}")
        check_count(count, MAX_PARTITIONS_PER_TOPIC, f"topics.{topic}")
    state = _State(
        strategy=strategy,
        topics=dict(topics),
        members={},
        bytes_of=dict(partition_bytes or {}),
        ids=dict(topic_ids or {}),
    )
    for i, raw in enumerate(members):
        member = _new_member(raw, f"members[{i}]")
        if member.member_id in state.members:
            raise InputError(f"members[{i}].member_id: duplicate member {member.member_id!r}")
        state.members[member.member_id] = member
    steps = state.rebalance(0, "initial", {})
    for i, event in enumerate(events):
        before = state.owners()
        label = state.apply(event, f"events[{i}]")
        steps.extend(state.rebalance(i + 1, label, before))
    return tuple(steps)


def derive_topic_id(topic: str) -> str:
    """A stable `Uuid` string for a topic name (SHA-256 prefix), for simulations without real ids.

    >>> derive_topic_id("orders") == derive_topic_id("orders")
    True
    """
    raw = hashlib.sha256(topic.encode()).digest()[:16]
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@dataclass(slots=True)
class _State:
    strategy: Assignor
    topics: dict[str, int]
    members: dict[str, _Member]
    bytes_of: dict[tuple[str, int], float]
    ids: dict[str, str]
    crashed: dict[str, _Member] = field(default_factory=dict)
    generation: int = 0

    def apply(self, event: Mapping[str, Any], where: str) -> str:
        """Change membership or metadata for one event; return its label."""
        kind = _event_type(event, where)
        if kind in (EventType.JOIN, EventType.LEAVE, EventType.CRASH, EventType.RETURN, EventType.SUBSCRIBE):
            member_id = _str(event, "member", where)
            return self._membership(kind, member_id, event, where)
        topic = _str(event, "topic", where)
        if kind is EventType.DELETE_TOPIC:
            if topic not in self.topics:
                raise InputError(f"{where}.topic: no topic {topic!r} to delete")
            del self.topics[topic]
            for member in [*self.members.values(), *self.crashed.values()]:
                member.owned.pop(topic, None)
            return f"delete_topic:{topic}"
        count = event.get("count")
        if isinstance(count, bool) or not isinstance(count, int):
            raise InputError(f"{where}.count: expected a partition count >= 0, got {count!r}")
        check_count(count, MAX_PARTITIONS_PER_TOPIC, f"{where}.count")
        if kind is EventType.CREATE_TOPIC:
            if topic in self.topics:
                raise InputError(f"{where}.topic: topic {topic!r} already exists")
        elif topic not in self.topics or count < self.topics[topic]:
            raise InputError(f"{where}: {topic!r} must exist and may only grow, got count {count!r}")
        self.topics[topic] = count
        return f"{kind.value}:{topic}={count}"

    def _membership(self, kind: EventType, member_id: str, event: Mapping[str, Any], where: str) -> str:
        present = member_id in self.members
        if kind is EventType.JOIN:
            if present or member_id in self.crashed:
                raise InputError(f"{where}.member: {member_id!r} is already known; use 'return' after a crash")
            self.members[member_id] = _new_member({**event, "member_id": member_id}, where)
        elif kind is EventType.RETURN:
            if member_id not in self.crashed:
                raise InputError(f"{where}.member: {member_id!r} has not crashed")
            member = self.crashed.pop(member_id)
            if self.strategy.server_side:  # the coordinator owns assignments: a new member epoch
                member.owned, member.generation = {}, None
            self.members[member_id] = member
        else:
            if not present:
                raise InputError(f"{where}.member: no member {member_id!r} in the group")
            if kind is EventType.SUBSCRIBE:
                self.members[member_id].topics = _topics(event, where)
            else:
                member = self.members.pop(member_id)
                if kind is EventType.CRASH:
                    self.crashed[member_id] = member
        return f"{kind.value}:{member_id}"

    def rebalance(self, step: int, label: str, before: dict[tuple[str, int], str]) -> list[RebalanceStep]:
        """One assignor run, then cooperative follow-up runs while members still revoke.

        ``before`` is who owned what before the event (a crashed or departed member included).
        """
        steps = [self._round(step, 1, label, before)]
        cooperative = self.strategy is Assignor.COOPERATIVE_STICKY
        while cooperative and steps[-1].revoked:
            if len(steps) > MAX_FOLLOW_UP_ROUNDS:
                raise InputError(f"{label}: cooperative rebalance did not settle in {MAX_FOLLOW_UP_ROUNDS} rounds")
            steps.append(self._round(step, len(steps) + 1, label, self.owners()))
        return steps

    def _round(self, step: int, round_: int, label: str, before: dict[tuple[str, int], str]) -> RebalanceStep:
        self.generation += 1
        result = self._assign()
        eager = not self.strategy.server_side and self.strategy is not Assignor.COOPERATIVE_STICKY
        revoked = []
        for member in self.members.values():
            new = result.get(member.member_id, {})
            for topic, parts in member.owned.items():
                keep = set(new.get(topic, ())) if not eager else set()
                revoked.extend((member.member_id, topic, p) for p in parts if p not in keep)
            member.owned = {t: list(ps) for t, ps in new.items()}
            member.generation = self.generation
        after = {(t, p): m for m, a in result.items() for t, ps in a.items() for p in ps}
        moved = [
            PartitionMove(t, p, before.get((t, p)), after.get((t, p)))
            for t, p in sorted(before.keys() | after.keys(), key=lambda tp: (utf16_key(tp[0]), tp[1]))
            if before.get((t, p)) != after.get((t, p)) and t in self.topics
        ]
        ids = list(self.members)
        return RebalanceStep(
            step=step,
            round=round_,
            event=label,
            generation=self.generation,
            assignment={m: result.get(m, {}) for m in ids},
            partition_counts={m: sum(len(ps) for ps in result.get(m, {}).values()) for m in ids},
            member_bytes={
                m: float(sum(self.bytes_of.get((t, p), 0.0) for t, ps in result.get(m, {}).items() for p in ps))
                for m in ids
            },
            moved=tuple(moved),
            revoked=tuple(sorted(revoked, key=lambda r: (utf16_key(r[0]), utf16_key(r[1]), r[2]))),
        )

    def owners(self) -> dict[tuple[str, int], str]:
        """``{(topic, partition): member}`` as the members currently own them."""
        return {(t, p): m.member_id for m in self.members.values() for t, ps in m.owned.items() for p in ps}

    def _assign(self) -> Assignment:
        if self.strategy.server_side:
            topics = [
                {"name": t, "topic_id": self.ids.get(t) or derive_topic_id(t), "partitions": n}
                for t, n in sorted(self.topics.items(), key=lambda kv: utf16_key(kv[0]))
            ]
            members = [
                {
                    "member_id": m.member_id,
                    "instance_id": m.instance_id,
                    "rack": m.rack,
                    "topics": list(m.topics),
                    "current_assignment": m.owned,
                }
                for m in self.members.values()
            ]
            return assign_server(self.strategy, topics, members)
        from planner.assignors import assign

        members = [
            {
                "member_id": m.member_id,
                "group_instance_id": m.instance_id,
                "rack": m.rack,
                "topics": list(m.topics),
                "owned_partitions": m.owned,
                "generation": m.generation,
            }
            for m in self.members.values()
        ]
        return assign(self.strategy, self.topics, members)


def _new_member(raw: Mapping[str, Any], where: str) -> _Member:
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: expected an object, got {raw!r}")
    member_id = _str(raw, "member_id", where)
    instance_id = raw.get("instance_id")
    rack = raw.get("rack")
    for key, value in (("instance_id", instance_id), ("rack", rack)):
        if value is not None and not isinstance(value, str):
            raise InputError(f"{where}.{key}: expected a string or null, got {value!r}")
    return _Member(member_id, _topics(raw, where), instance_id, rack)


def _event_type(event: Mapping[str, Any], where: str) -> EventType:
    if not isinstance(event, Mapping):
        raise InputError(f"{where}: expected an object, got {event!r}")
    try:
        return EventType(event.get("event"))
    except ValueError:
        names = ", ".join(e.value for e in EventType)
        raise InputError(f"{where}.event: expected one of {names}, got {event.get('event')!r}") from None


def _topics(raw: Mapping[str, Any], where: str) -> tuple[str, ...]:
    topics = raw.get("topics")
    if not isinstance(topics, (list, tuple)) or not all(isinstance(t, str) for t in topics):
        raise InputError(f"{where}.topics: expected a list of topic names, got {topics!r}")
    return tuple(topics)


def _str(raw: Mapping[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value:
        raise InputError(f"{where}.{key}: expected a non-empty string, got {value!r}")
    return value
