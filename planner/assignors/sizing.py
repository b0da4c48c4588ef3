"""Consumer-group sizing: per-member load under each assignor, lag catch-up time, members needed.

Plain functions over plain data: partition counts, per-partition rates (`PartitionRate`), lag per
partition and a `MemberCapacity`. The CLI builds those from `kafka-consumer-groups.sh` output and the
topic profile; `topic_fanout` feeds the pool planner's broker network-out estimate.
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_STRATEGIES",
    "STRATEGY_NAMES",
    "PartitionRate",
    "MemberCapacity",
    "StrategyLoad",
    "GroupSizing",
    "spread_topic_rates",
    "strategy_load",
    "assignment_load",
    "required_members",
    "size_group",
    "topic_fanout",
    "consumer_bytes_out",
]

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from planner.assignors.server import assign_server
from planner.assignors.simulate import derive_topic_id
from planner.assignors.strategies import DEFAULT_ASSIGNORS, Assignor
from pools.java_semantics import utf16_key
from pools.errors import InputError
from pools.pool_rules import over_limit

TopicPartition = tuple[str, int]

STRATEGY_NAMES: tuple[str, ...] = tuple(a.value for a in Assignor)
"""Every assignor sizing and simulation run (see `Assignor`)."""

DEFAULT_STRATEGIES: tuple[Assignor, ...] = DEFAULT_ASSIGNORS
"""The assignors compared when none are named."""


@dataclass(frozen=True, slots=True)
class PartitionRate:
    """What one consumer of a partition must fetch: bytes/s and messages/s."""

    bytes_per_s: float
    messages_per_s: float

    def __post_init__(self) -> None:
        if not (self.bytes_per_s >= 0 and self.messages_per_s >= 0):
            raise InputError(
                f"partition rates must be >= 0, got {self.bytes_per_s!r} B/s, {self.messages_per_s!r} msg/s")


@dataclass(frozen=True, slots=True)
class MemberCapacity:
    """What one consumer instance can process; ``headroom`` is the usable fraction (0 < h <= 1)."""

    bytes_per_s: float | None = None
    messages_per_s: float | None = None
    headroom: float = 0.8

    def __post_init__(self) -> None:
        if self.bytes_per_s is None and self.messages_per_s is None:
            raise InputError("member capacity: give bytes_per_s and/or messages_per_s")
        for name in ("bytes_per_s", "messages_per_s"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise InputError(f"member capacity: {name} must be > 0, got {value!r}")
        if not 0 < self.headroom <= 1:
            raise InputError(f"member capacity: headroom must be in (0, 1], got {self.headroom!r}")

    def utilization(self, bytes_per_s: float, messages_per_s: float) -> float:
        """The larger of the two load/capacity ratios (only the dimensions that have a capacity)."""
        ratios = [0.0]
        if self.bytes_per_s is not None:
            ratios.append(bytes_per_s / self.bytes_per_s)
        if self.messages_per_s is not None:
            ratios.append(messages_per_s / self.messages_per_s)
        return max(ratios)


@dataclass(frozen=True, slots=True)
class StrategyLoad:
    """One strategy's assignment for a member count, with per-member load and lag catch-up.

    ``catch_up_seconds`` is the slowest member's time to drain its lag while new messages keep
    arriving (0 without lag, ``math.inf`` when a member cannot keep up at all).
    """

    strategy: str
    members: int
    member_bytes: Mapping[str, float]
    member_messages: Mapping[str, float]
    member_partitions: Mapping[str, int]
    max_utilization: float
    catch_up_seconds: float

    @property
    def bytes_spread(self) -> float:
        """Busiest member's bytes over the mean (1.0 = perfectly even)."""
        values = list(self.member_bytes.values())
        mean = sum(values) / len(values) if values else 0.0
        return max(values) / mean if mean > 0 else 1.0


@dataclass(frozen=True, slots=True)
class GroupSizing:
    """A group's sizing: load per strategy at its current size, and the members each strategy needs."""

    group: str
    topics: tuple[str, ...]
    partitions: int
    current_members: int
    bytes_per_s: float
    messages_per_s: float
    lag: int
    loads: tuple[StrategyLoad, ...]
    required: Mapping[str, int | None]
    best_strategy: str
    current: StrategyLoad | None = None
    over_capacity: bool = False

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form (``inf`` catch-up as ``None``)."""
        current = None if self.current is None else _load_dict(self.current, None)
        return {
            "group": self.group,
            "topics": list(self.topics),
            "partitions": self.partitions,
            "current_members": self.current_members,
            "bytes_per_s": self.bytes_per_s,
            "messages_per_s": self.messages_per_s,
            "lag": self.lag,
            "best_strategy": self.best_strategy,
            "over_capacity": self.over_capacity,
            "current": current,
            "strategies": {load.strategy: _load_dict(load, self.required[load.strategy]) for load in self.loads},
        }


def spread_topic_rates(
    partitions: Mapping[str, int],
    topic_rates: Mapping[str, tuple[float, float]],
    *,
    partition_sizes: Mapping[TopicPartition, float] | None = None,
    partition_bytes: Mapping[TopicPartition, float | None] | None = None,
) -> dict[TopicPartition, PartitionRate]:
    """Per-partition rates from topic rates.

    Parameters
    ----------
    partitions : mapping
        ``{topic: partition_count}``.
    topic_rates : mapping
        ``{topic: (bytes_per_s, messages_per_s)}`` (a topic missing here has no traffic).
    partition_sizes : mapping, optional
        ``{(topic, p): size_bytes}``; a topic's rate is spread in proportion to them.
    partition_bytes : mapping, optional
        ``{(topic, p): bytes_per_s}`` measured per partition; used for a topic when every partition
        has one (messages then follow the bytes at the topic's bytes-per-message).

    Returns
    -------
    dict
        ``{(topic, p): PartitionRate}``; evenly spread when a topic has neither per-partition rates
        nor any size.

    Examples
    --------
    >>> r = spread_topic_rates({"t": 2}, {"t": (300.0, 3.0)}, partition_sizes={("t", 0): 1, ("t", 1): 2})
    >>> r[("t", 1)]
    PartitionRate(bytes_per_s=200.0, messages_per_s=2.0)
    """
    sizes = partition_sizes or {}
    measured = partition_bytes or {}
    out: dict[TopicPartition, PartitionRate] = {}
    for topic, count in partitions.items():
        total_bytes, total_messages = topic_rates.get(topic, (0.0, 0.0))
        keys = [(topic, p) for p in range(count)]
        known = [measured.get(k) for k in keys]
        if count and all(v is not None for v in known):
            weights = [float(v) for v in known]  # type: ignore[arg-type]
            total_bytes = sum(weights)
        else:
            weights = [float(sizes.get(k, 0.0)) for k in keys]
        total_weight = sum(weights)
        for key, weight in zip(keys, weights):
            share = weight / total_weight if total_weight > 0 else 1.0 / count
            out[key] = PartitionRate(total_bytes * share, total_messages * share)
    return out


def strategy_load(
    strategy: Assignor,
    partitions: Mapping[str, int],
    rates: Mapping[TopicPartition, PartitionRate],
    capacity: MemberCapacity,
    member_ids: Sequence[str],
    *,
    lag: Mapping[TopicPartition, int] | None = None,
) -> StrategyLoad:
    """Assign the group's topics to ``member_ids`` (all subscribed to every topic) and measure the load.

    The members own nothing (a fresh assignment); server strategies use derived topic ids.
    """
    assignment = _assign(strategy, partitions, member_ids)
    return assignment_load(strategy, {m: assignment.get(m, {}) for m in member_ids}, rates, capacity, lag=lag)


def assignment_load(
    name: str,
    assignment: Mapping[str, Mapping[str, Sequence[int]]],
    rates: Mapping[TopicPartition, PartitionRate],
    capacity: MemberCapacity,
    *,
    lag: Mapping[TopicPartition, int] | None = None,
) -> StrategyLoad:
    """Measure a given assignment ``{member: {topic: [partitions]}}``, e.g. the group's live one.

    >>> cap = MemberCapacity(bytes_per_s=100.0, headroom=1.0)
    >>> load = assignment_load("current", {"a": {"t": [0, 1]}}, {("t", 0): PartitionRate(30, 1),
    ...                        ("t", 1): PartitionRate(20, 1)}, cap)
    >>> load.member_bytes, load.max_utilization
    ({'a': 50.0}, 0.5)
    """
    lag = lag or {}
    member_bytes: dict[str, float] = {}
    member_messages: dict[str, float] = {}
    member_partitions: dict[str, int] = {}
    utilization = 0.0
    catch_up = 0.0
    for member, per_topic in assignment.items():
        owned = [(t, p) for t, ps in per_topic.items() for p in ps]
        b = float(sum(rates[k].bytes_per_s for k in owned if k in rates))
        m = float(sum(rates[k].messages_per_s for k in owned if k in rates))
        member_bytes[member], member_messages[member], member_partitions[member] = b, m, len(owned)
        utilization = max(utilization, capacity.utilization(b, m))
        catch_up = max(catch_up, _catch_up(owned, rates, lag, capacity, b, m))
    return StrategyLoad(name, len(assignment), member_bytes, member_messages, member_partitions, utilization, catch_up)


def required_members(
    strategy: Assignor,
    partitions: Mapping[str, int],
    rates: Mapping[TopicPartition, PartitionRate],
    capacity: MemberCapacity,
    *,
    member_prefix: str = "member",
) -> int | None:
    """The smallest member count whose busiest member stays within ``headroom`` of capacity.

    Scans upward from the count total load / usable capacity forces, up to one member per partition;
    ``None`` when no count fits (a single partition exceeds the usable capacity, or the strategy piles
    partitions onto one member whatever the count).
    """
    total = sum(partitions.values())
    if total == 0:
        return 1
    usable = capacity.headroom
    if any(capacity.utilization(r.bytes_per_s, r.messages_per_s) > usable for r in rates.values()):
        return None
    load = capacity.utilization(sum(r.bytes_per_s for r in rates.values()),
        sum(r.messages_per_s for r in rates.values()))
    start = max(1, math.ceil(load / usable - 1e-9))
    # range strategies give member 0 partition 0 of every topic however many members join
    stop = max(partitions.values()) if strategy.range_like else total
    for n in range(start, max(start, stop) + 1):
        ids = _member_ids(member_prefix, n)
        if strategy_load(strategy, partitions, rates, capacity, ids).max_utilization <= usable:
            return n
    return None


def size_group(
    group: str,
    partitions: Mapping[str, int],
    rates: Mapping[TopicPartition, PartitionRate],
    capacity: MemberCapacity,
    *,
    current_members: Sequence[str] = (),
    current_assignment: Mapping[str, Mapping[str, Sequence[int]]] | None = None,
    lag: Mapping[TopicPartition, int] | None = None,
    strategies: Sequence[Assignor] = DEFAULT_STRATEGIES,
) -> GroupSizing:
    """Size one consumer group under each strategy.

    Parameters
    ----------
    group : str
        The group id (used to name synthetic members).
    partitions : mapping
        ``{topic: partition_count}`` of the topics the group reads.
    rates, capacity, lag
        As in `strategy_load`.
    current_members : sequence of str
        The group's consumer ids today; at least one member is assumed when empty.
    current_assignment : mapping, optional
        The live assignment ``{member: {topic: [partitions]}}``; measured as ``current``.
    strategies : sequence of Assignor
        Assignors to compare.

    Returns
    -------
    GroupSizing
        ``best_strategy`` needs the fewest members, ties going to the lowest busiest-member
        utilization at today's size, then the smaller byte spread, then the listed order.
        ``over_capacity`` when a member of a group with members is past the headroom today (the live
        assignment when given, else the first strategy's).
    """
    if not strategies:
        raise InputError("strategies: give at least one assignor to compare")
    members = list(current_members) or _member_ids(group, 1)
    loads = tuple(strategy_load(s, partitions, rates, capacity, members, lag=lag) for s in strategies)
    required = {s: required_members(s, partitions, rates, capacity, member_prefix=group) for s in strategies}

    def rank(index: int) -> tuple[float, float, float, int]:
        load = loads[index]
        need = required[load.strategy]
        return (math.inf if need is None else need, load.max_utilization, load.bytes_spread, index)

    best = loads[min(range(len(loads)), key=rank)].strategy
    current = assignment_load("current", current_assignment, rates, capacity, lag=lag) if current_assignment else None
    keys = [(t, p) for t, n in partitions.items() for p in range(n)]
    return GroupSizing(
        group=group,
        topics=tuple(sorted(partitions, key=utf16_key)),
        partitions=len(keys),
        current_members=len(current_members),
        bytes_per_s=sum(rates[k].bytes_per_s for k in keys if k in rates),
        messages_per_s=sum(rates[k].messages_per_s for k in keys if k in rates),
        lag=sum((lag or {}).get(k, 0) for k in keys),
        loads=loads,
        required=required,
        best_strategy=best,
        current=current,
        over_capacity=over_limit((current or loads[0]).max_utilization, capacity.headroom) and bool(current_members),
    )


def topic_fanout(groups: Iterable[Any], *, active_only: bool = False) -> dict[str, int]:
    """Number of consumer groups reading each topic.

    ``groups`` are `ConsumerGroupOffsets` (anything with ``topics`` and ``active``). Inactive groups
    count by default: they hold committed offsets and come back (batch jobs).

    >>> from types import SimpleNamespace as G
    >>> topic_fanout([G(topics=("a", "b"), active=True), G(topics=("a",), active=False)])
    {'a': 2, 'b': 1}
    """
    fanout: dict[str, int] = {}
    for g in groups:
        if active_only and not g.active:
            continue
        for topic in dict.fromkeys(g.topics):
            fanout[topic] = fanout.get(topic, 0) + 1
    return dict(sorted(fanout.items(), key=lambda kv: utf16_key(kv[0])))


def consumer_bytes_out(bytes_in: Mapping[str, float], fanout: Mapping[str, int]) -> dict[str, float]:
    """Broker network-out from consumers per topic: bytes-in × groups reading it.

    >>> consumer_bytes_out({"a": 10.0, "b": 5.0}, {"a": 3})
    {'a': 30.0, 'b': 0.0}
    """
    return {topic: rate * fanout.get(topic, 0) for topic, rate in bytes_in.items()}


def _assign(
    strategy: Assignor, partitions: Mapping[str, int], member_ids: Sequence[str]
) -> dict[str, dict[str, list[int]]]:
    topics = sorted(partitions, key=utf16_key)
    if strategy.server_side:
        spec = [{"name": t, "topic_id": derive_topic_id(t), "partitions": partitions[t]} for t in topics]
        members = [
            {"member_id": m, "instance_id": None, "rack": None, "topics": topics, "current_assignment": {}}
            for m in member_ids
        ]
        return assign_server(strategy, spec, members)
    from planner.assignors import assign

    members = [
        {"member_id": m, "group_instance_id": None, "rack": None, "topics": topics, "owned_partitions": {},
            "generation": None}
        for m in member_ids
    ]
    return assign(strategy, dict(partitions), members)


def _catch_up(
    owned: list[TopicPartition],
    rates: Mapping[TopicPartition, PartitionRate],
    lag: Mapping[TopicPartition, int],
    capacity: MemberCapacity,
    member_bytes: float,
    member_messages: float,
) -> float:
    """Seconds for one member to drain its lag at capacity while its partitions keep producing."""
    backlog = sum(lag.get(k, 0) for k in owned)
    if backlog <= 0:
        return 0.0
    seconds = 0.0
    if capacity.messages_per_s is not None:
        spare = capacity.messages_per_s - member_messages
        seconds = max(seconds, backlog / spare if spare > 0 else math.inf)
    if capacity.bytes_per_s is not None:
        backlog_bytes = sum(
            lag.get(k, 0) * rates[k].bytes_per_s / rates[k].messages_per_s
            for k in owned
            if k in rates and rates[k].messages_per_s > 0
        )
        spare = capacity.bytes_per_s - member_bytes
        seconds = max(seconds, backlog_bytes / spare if spare > 0 else math.inf)
    return seconds


def _member_ids(prefix: str, n: int) -> list[str]:
    width = max(4, len(str(n)))
    return [f"{prefix}-{i:0{width}d}" for i in range(n)]


def _load_dict(load: StrategyLoad, required: int | None) -> dict[str, Any]:
    return {
        "max_utilization": load.max_utilization,
        "bytes_spread": load.bytes_spread,
        "catch_up_seconds": None if math.isinf(load.catch_up_seconds) else load.catch_up_seconds,
        "required_members": required,
        "member_bytes": dict(load.member_bytes),
        "member_messages": dict(load.member_messages),
        "member_partitions": dict(load.member_partitions),
    }
