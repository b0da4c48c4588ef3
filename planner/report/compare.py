"""This run against an earlier one: what changed per pool and dimension, and per topic."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from planner.report.capacity import PoolCapacity
from planner.report.runway import Runway
from pools.snapshot import DIMENSIONS

__all__ = ["PoolChange", "TopicChange", "Comparison", "RunSide", "compare_runs", "TOP_CHANGES"]

#: How many topics the comparison lists (largest change in bytes in first).
TOP_CHANGES = 15


@dataclass(frozen=True, slots=True)
class PoolChange:
    """One pool and dimension in the previous run and in this one (``None`` where the pool did not exist)."""

    pool: str
    dimension: str
    previous: PoolCapacity | None
    current: PoolCapacity | None


@dataclass(frozen=True, slots=True)
class TopicChange:
    """A topic's pool, bytes-in p99 (B/s) and storage (bytes) in the previous run and in this one."""

    topic: str
    pool_before: str | None
    pool_now: str | None
    bytes_in_before: float | None
    bytes_in_now: float | None
    storage_before: float | None
    storage_now: float | None

    @property
    def bytes_in_delta(self) -> float | None:
        return _delta(self.bytes_in_before, self.bytes_in_now)

    @property
    def storage_delta(self) -> float | None:
        return _delta(self.storage_before, self.storage_now)


@dataclass(frozen=True)
class Comparison:
    """What changed since ``previous_run`` (taken at ``previous_taken_at``)."""

    previous_run: str
    previous_taken_at: str | None
    pools: tuple[PoolChange, ...]
    topics: tuple[TopicChange, ...]
    new_topics: tuple[str, ...]
    gone_topics: tuple[str, ...]
    repooled: tuple[TopicChange, ...]
    brokers: tuple[int | None, int | None]
    brokers_to_add: tuple[int | None, int | None]
    findings: tuple[Mapping[str, int] | None, Mapping[str, int] | None]
    runways: tuple[Runway | None, Runway | None] = (None, None)
    cost: tuple[float | None, float | None] = (None, None)


@dataclass(frozen=True, slots=True)
class RunSide:
    """What one run contributes to a comparison."""

    run: str
    taken_at: str | None
    pools: Sequence[PoolCapacity]
    topics: Mapping[str, tuple[str | None, float | None, float | None]]
    brokers: int | None
    brokers_to_add: int | None
    findings: Mapping[str, int] | None
    runway: Runway | None = None
    cost: float | None = None


def compare_runs(previous: RunSide, current: RunSide) -> Comparison:
    """Pair pools, dimensions and topics of two runs; the topics whose bytes in or storage changed, largest
    bytes-in change first.

    Examples
    --------
    >>> a = RunSide("q3", None, (), {"t": ("p", 1e6, 5e9), "old": ("p", 1.0, 1.0)}, 3, 0, None)
    >>> b = RunSide("q4", None, (), {"t": ("p", 3e6, 6e9), "new": ("p", 1.0, 1.0)}, 4, 1, None)
    >>> c = compare_runs(a, b)
    >>> c.new_topics, c.gone_topics, c.topics[0].bytes_in_delta
    (('new',), ('old',), 2000000.0)
    >>> compare_runs(a, a).topics  # nothing changed: nothing listed
    ()
    """
    prev = {(p.pool, p.dimension): p for p in previous.pools}
    cur = {(p.pool, p.dimension): p for p in current.pools}
    keys = sorted(set(prev) | set(cur), key=lambda k: (k[0], DIMENSIONS.index(k[1])))
    pools = tuple(PoolChange(k[0], k[1], prev.get(k), cur.get(k)) for k in keys)
    changes = []
    for topic in sorted(set(previous.topics) | set(current.topics)):
        b = previous.topics.get(topic, (None, None, None))
        n = current.topics.get(topic, (None, None, None))
        changes.append(TopicChange(topic, b[0], n[0], b[1], n[1], b[2], n[2]))
    both = [c for c in changes if c.topic in previous.topics and c.topic in current.topics]
    changed = [c for c in both if c.bytes_in_delta or c.storage_delta]
    top = sorted(changed, key=lambda c: (-abs(c.bytes_in_delta or 0.0), -abs(c.storage_delta or 0.0), c.topic))
    return Comparison(
        previous_run=previous.run,
        previous_taken_at=previous.taken_at,
        pools=pools,
        topics=tuple(top[:TOP_CHANGES]),
        new_topics=tuple(sorted(set(current.topics) - set(previous.topics))),
        gone_topics=tuple(sorted(set(previous.topics) - set(current.topics))),
        repooled=tuple(c for c in both if c.pool_before != c.pool_now),
        brokers=(previous.brokers, current.brokers),
        brokers_to_add=(previous.brokers_to_add, current.brokers_to_add),
        findings=(previous.findings, current.findings),
        runways=(previous.runway, current.runway),
        cost=(previous.cost, current.cost),
    )


def _delta(before: float | None, now: float | None) -> float | None:
    return None if before is None or now is None else now - before
