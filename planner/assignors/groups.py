"""Consumer groups of a cluster, sized or simulated: the ``consumers.toml`` schema and the two jobs of
``poolplan consumers``.

`size_groups` reads ``kafka-consumer-groups.sh --describe`` (and ``--members``) output and the profile's rates and
sizes every group under each assignor; `simulate_script` drives a rebalance script. Both return the JSON-ready
report the command prints and writes.

``consumers.toml``::

    [capacity]                   # one member of any group
    bytes_per_s = 50_000_000
    messages_per_s = 100_000
    headroom = 0.8
    [groups.billing]             # a group whose members differ
    bytes_per_s = 20_000_000
    [strategies]
    compare = ["range", "cooperative-sticky", "uniform"]
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field

from planner.assignors.sizing import MemberCapacity, consumer_bytes_out, size_group, spread_topic_rates, topic_fanout
from planner.assignors.strategies import Assignor
from pools.errors import InputError
from pools.files import load_json, load_toml, read_text
from pools.kafka_formats.consumer_groups import parse_consumer_group_members, parse_consumer_groups_describe
from pools.input_limits import MAX_PARTITIONS_PER_TOPIC
from pools.profile import PartitionProfile, TopicProfile
from pools.schema import PositiveFinite, Strict, validate

__all__ = ["ConsumersConfig", "ProfileRates", "load_consumers_config", "profile_rates", "size_groups",
           "simulate_script"]

_log = logging.getLogger(__name__)


class _Capacity(Strict):
    bytes_per_s: PositiveFinite | None = None
    messages_per_s: PositiveFinite | None = None
    headroom: PositiveFinite | None = None


class _Strategies(Strict):
    compare: list[str] = []


class _ConsumersToml(Strict):
    capacity: _Capacity = _Capacity()
    groups: dict[str, _Capacity] = {}
    strategies: _Strategies = _Strategies()


@dataclass(frozen=True, slots=True)
class ConsumersConfig:
    """``consumers.toml``: the default member capacity, per-group overrides, strategies to compare."""

    capacity: Mapping[str, float]
    groups: Mapping[str, Mapping[str, float]]
    strategies: tuple[Assignor, ...]

    def member_capacity(self, group: str, overrides: Mapping[str, float | None]) -> MemberCapacity:
        """A member's capacity for ``group``: the config's, then the group's table, then ``overrides``."""
        merged = {**self.capacity, **self.groups.get(group, {})}
        merged |= {k: v for k, v in overrides.items() if v is not None}
        try:
            return MemberCapacity(**merged)
        except InputError as exc:
            raise InputError(f"group {group!r}: {exc} (set it in --config or with --capacity-bytes/"
                             "--capacity-messages)") from None


def load_consumers_config(path: str | os.PathLike[str] | None) -> ConsumersConfig:
    """Read and validate ``consumers.toml`` (an empty config without a path); errors name the file and key."""
    if path is None:
        return ConsumersConfig({}, {}, ())
    doc = validate(_ConsumersToml, load_toml(path), str(path))
    if doc.capacity.headroom is not None and doc.capacity.headroom > 1:
        raise InputError(f"{path}: capacity.headroom: expected a fraction in (0, 1], got {doc.capacity.headroom}")

    def table(c: _Capacity) -> dict[str, float]:
        return c.model_dump(exclude_none=True)

    strategies = tuple(Assignor.parse(s, where=f"{path}: strategies.compare[{i}]")
                       for i, s in enumerate(doc.strategies.compare))
    return ConsumersConfig(table(doc.capacity), {g: table(c) for g, c in doc.groups.items()}, strategies)


@dataclass(frozen=True, slots=True)
class ProfileRates:
    """What sizing needs from a profile: partition counts, (bytes, messages)/s per topic, per-partition data."""

    counts: Mapping[str, int]
    topic_rates: Mapping[str, tuple[float, float]]
    sizes: Mapping[tuple[str, int], float]
    bytes: Mapping[tuple[str, int], float | None]

    def partition_rates(self, counts: Mapping[str, int]) -> dict[tuple[str, int], Any]:
        """Per-partition rates for ``{topic: partition count}`` (see `spread_topic_rates`)."""
        return spread_topic_rates(counts, self.topic_rates, partition_sizes=self.sizes, partition_bytes=self.bytes)


def profile_rates(topics: Mapping[str, TopicProfile],
                  partitions: Mapping[tuple[str, int], PartitionProfile] | None) -> ProfileRates:
    """`ProfileRates` from a loaded profile (`pools.profile.load_profile_dir`)."""
    parts = partitions or {}
    return ProfileRates(
        counts={t: p.partitions for t, p in topics.items()},
        topic_rates={t: (p.bytes_in_p99, p.messages_in_p99 or 0.0) for t, p in topics.items()},
        sizes={k: float(v.size_bytes) for k, v in parts.items()},
        bytes={k: v.bytes_in_rate for k, v in parts.items()},
    )


def size_groups(
    describe: str | os.PathLike[str],
    rates: ProfileRates,
    config: ConsumersConfig,
    strategies: Sequence[Assignor],
    *,
    members: str | os.PathLike[str] | None = None,
    groups: Sequence[str] = (),
    overrides: Mapping[str, float | None] | None = None,
) -> dict[str, Any]:
    """Size every group of ``describe`` (``kafka-consumer-groups.sh --describe --all-groups`` output).

    Returns ``{"groups": [...], "topic_fanout": {...}, "consumer_bytes_out": {...}}``; a group's ``over_capacity``
    says a member is past the headroom today.
    """
    source = str(describe)
    described = parse_consumer_groups_describe(read_text(describe), source=source)
    consumer_ids: dict[str, list[str]] = {}
    if members is not None:
        for m in parse_consumer_group_members(read_text(members), source=str(members)):
            consumer_ids.setdefault(m.group, []).append(m.consumer_id)
    unprofiled = sorted({t for g in described for t in g.topics} - rates.counts.keys())
    if unprofiled:
        _log.warning("no profile rates for %d topic(s), counted as idle: %s", len(unprofiled), ", ".join(unprofiled))
    wanted = set(groups)
    missing = wanted - {g.group for g in described}
    if missing:
        raise InputError(f"--group: {sorted(missing)[0]!r} is not in {source}")
    reports = []
    for g in described:
        if wanted and g.group not in wanted:
            continue
        counts = {}
        for t in g.topics:
            seen = 1 + max(p.partition for p in g.partitions if p.topic == t)
            counts[t] = max(rates.counts.get(t, 0), seen)
        lag = {(p.topic, p.partition): p.lag or 0 for p in g.partitions}
        live: dict[str, dict[str, list[int]]] = {}
        for p in g.partitions:
            if p.consumer_id is not None:
                live.setdefault(p.consumer_id, {}).setdefault(p.topic, []).append(p.partition)
        for consumer in consumer_ids.get(g.group, ()):
            live.setdefault(consumer, {})
        sizing = size_group(
            g.group, counts, rates.partition_rates(counts), config.member_capacity(g.group, overrides or {}),
            current_members=consumer_ids.get(g.group) or list(g.consumers), current_assignment=live, lag=lag,
            strategies=strategies,
        )
        reports.append({**sizing.as_dict(), "active": g.active})
    fanout = topic_fanout(described)
    bytes_in = {t: rates.topic_rates.get(t, (0.0, 0.0))[0] for t in fanout}
    return {"groups": reports, "topic_fanout": fanout, "consumer_bytes_out": consumer_bytes_out(bytes_in, fanout)}


class _Script(Strict):
    topics: dict[str, Annotated[int, Field(ge=0, le=MAX_PARTITIONS_PER_TOPIC)]]
    members: list[Any]
    events: list[Any]
    topic_ids: dict[str, str] | None = None


def simulate_script(path: str | os.PathLike[str], strategies: Sequence[Assignor],
                    rates: ProfileRates | None) -> dict[str, Any]:
    """Run the rebalance script in ``path`` (JSON: topics, members, events) under each strategy.

    Returns ``{"simulation": {strategy: [step, ...]}}``; errors name the file and the field.
    """
    from planner.assignors.simulate import simulate

    source = str(path)
    script = validate(_Script, load_json(path), source)
    partition_bytes = rates.partition_rates(script.topics) if rates else {}
    byte_rates = {k: r.bytes_per_s for k, r in partition_bytes.items()}
    runs = {}
    for strategy in strategies:
        try:
            steps = simulate(strategy, script.topics, script.members, script.events, partition_bytes=byte_rates,
                             topic_ids=script.topic_ids)
        except InputError as exc:
            raise InputError(f"{source}: {exc}") from None
        runs[strategy.value] = [s.as_dict() for s in steps]
    return {"simulation": runs}
