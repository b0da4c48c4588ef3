"""Small hand-built clusters for the audit tests: two pools of three brokers over three racks, all healthy."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

from pools.policy import PoolPolicy, parse_policy
from pools.profile import TopicProfile
from pools.snapshot import Broker, Capacity, ClusterSnapshot, LogDirError, PartitionState, TopicState

CAP = Capacity(nw_in=1e8, nw_out=1e8, disk=1e12, replicas=100)

POLICY = """
[defaults]
headroom = 0.7
tolerated_broker_failures = 1
min_brokers = 3

[[pool]]
name = "a"
topics = ['a-.*']

[[pool]]
name = "b"
topics = ['b-.*']
"""


def policy(text: str = POLICY) -> PoolPolicy:
    return parse_policy(text, source="pools.toml")


def brokers(changes: dict | None = None) -> list[Broker]:
    changes = changes or {}
    out = [Broker(i, f"r{(i - 1) % 3 + 1}", CAP, "a" if i <= 3 else "b") for i in range(1, 7)]
    return [replace(b, **changes.get(b.id, {})) if isinstance(changes.get(b.id), dict) else b for b in out]


def healthy(topic: str, pool_brokers: tuple[int, int, int], partitions: int = 3, size: int = 1000):
    """Partitions rotated over three brokers: every broker leads one and holds all, ISR full."""
    out = []
    for p in range(partitions):
        k = p % 3
        reps = pool_brokers[k:] + pool_brokers[:k]
        out.append(PartitionState(topic, p, reps, leader=reps[0], isr=reps, log_dirs=("/d",) * 3,
                                  sizes=(size,) * 3))
    return out


def snapshot(partitions=None, *, broker_list=None, topics=None, errors=()) -> ClusterSnapshot:
    parts = partitions if partitions is not None else healthy("a-x", (1, 2, 3)) + healthy("b-y", (4, 5, 6))
    names = sorted({p.topic for p in parts})
    return ClusterSnapshot(
        cluster="test",
        brokers=tuple(broker_list or brokers()),
        topics=tuple(topics or [TopicState(t, configs={"min.insync.replicas": "2"}) for t in names]),
        partitions=tuple(parts),
        log_dir_errors=tuple(LogDirError(*e) for e in errors),
        taken_at="2026-11-01T00:00:00Z",
    )


def with_partition(snap_parts, topic, partition, **changes):
    return [replace(p, **changes) if (p.topic, p.partition) == (topic, partition) else p for p in snap_parts]


T0 = datetime(2026, 8, 1, tzinfo=timezone.utc)
T1 = datetime(2026, 10, 31, tzinfo=timezone.utc)


def profile_row(topic: str, rate: float, growth: float) -> TopicProfile:
    """A three-partition topic: ``rate`` B/s bytes-in p99, consumers read it twice, growth compounding over 90 days."""
    fc = rate * (1 + growth) ** 90
    return TopicProfile(
        topic=topic, partitions=3, bytes_in_p50=rate / 2, bytes_in_p95=rate * 0.9, bytes_in_p99=rate,
        bytes_in_max=rate * 1.2, bytes_out_p95=rate * 1.8, bytes_out_p99=rate * 2, bytes_out_max=rate * 2.5,
        messages_in_p99=rate / 1000, storage_bytes=3000, bytes_in_p99_growth_per_day=growth,
        storage_growth_per_day=growth, forecast_horizon_days=90, forecast_bytes_in_p99=fc,
        forecast_bytes_in_p99_low=fc * 0.8, forecast_bytes_in_p99_high=fc * 1.25, forecast_storage_bytes=3000 * 1.5,
        forecast_storage_low=3000 * 1.2, forecast_storage_high=3000 * 1.8, days_observed=90, samples=129600, gaps=0,
        counter_resets=0, rejected_rows=0, first_ts=T0, last_ts=T1,
    )
