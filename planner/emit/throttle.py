"""Replication throttles and duration estimates for each batch of a reassignment.

The rate comes from a budget: the spare network capacity (capacity minus forecast peak load, the smaller of
in and out) of the busiest broker a batch involves, times a configurable fraction, never below 1 KiB/s
(``kafka-reassign-partitions.sh`` asks for at least 1 KB/s). The throttled-replica lists are Kafka's own
(`pools.kafka_formats.calculate_throttles`). A batch lasts as long as its busiest broker needs to copy in
(follower throttle) or serve out (leader throttle) its bytes at that rate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from planner.emit.batches import Batch
from pools.kafka_formats import calculate_throttles
from pools.plan import copy_source

__all__ = ["MIN_THROTTLE_BPS", "BatchThrottle", "throttle_rate", "batch_throttle"]

#: The smallest inter-broker throttle poolplan sets, bytes/s.
MIN_THROTTLE_BPS = 1024


@dataclass(frozen=True, slots=True)
class BatchThrottle:
    """What one batch needs: the rate, Kafka's throttle lists, bytes per broker and the estimated time."""

    index: int
    rate: int
    leader: dict[str, str]
    follower: dict[str, str]
    reassigning_brokers: tuple[int, ...]
    bytes_in: dict[int, int]
    bytes_out: dict[int, int]
    seconds: int


def throttle_rate(
    brokers: tuple[int, ...] | frozenset[int],
    *,
    capacity: Mapping[int, tuple[float, float]],
    load: Mapping[int, tuple[float, float]],
    fraction: float,
) -> int:
    """Inter-broker throttle for a set of brokers, bytes/s.

    Parameters
    ----------
    brokers : collection of int
        The brokers the batch involves.
    capacity, load : mapping
        ``broker -> (nw_in, nw_out)`` capacity and forecast peak load in bytes/s (missing load = 0).
    fraction : float
        Share of the spare capacity replication may use, in (0, 1].

    Returns
    -------
    int
        ``max(MIN_THROTTLE_BPS, floor(fraction * min spare))``.
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction: expected a number in (0, 1], got {fraction!r}")
    spare = math.inf
    for b in brokers:
        cap_in, cap_out = capacity.get(b, (math.inf, math.inf))
        load_in, load_out = load.get(b, (0.0, 0.0))
        spare = min(spare, cap_in - load_in, cap_out - load_out)
    if spare == math.inf:
        raise ValueError("throttle_rate: no capacity known for any involved broker")
    return max(MIN_THROTTLE_BPS, math.floor(fraction * spare))


def batch_throttle(batch: Batch, *, rate: int, leaders: Mapping[tuple[str, int], int | None]) -> BatchThrottle:
    """Kafka's throttle lists for ``batch`` and its duration at ``rate``.

    ``leaders`` gives each partition's current leader (it serves the copies; default the first old
    replica). Duration = ceil(max bytes any broker copies in or serves out / rate) seconds.
    """
    proposed = {(m.topic, m.partition): m.replicas for m in batch.moves}
    current = {(m.topic, m.partition): m.old_replicas for m in batch.moves}
    kafka = calculate_throttles(proposed, current)
    bytes_in: dict[int, int] = {}
    bytes_out: dict[int, int] = {}
    for m in batch.moves:
        if not m.adding:
            continue
        source = copy_source(m.old_replicas, leaders.get((m.topic, m.partition)))
        bytes_out[source] = bytes_out.get(source, 0) + m.moved_bytes
        for b in m.adding:
            bytes_in[b] = bytes_in.get(b, 0) + m.size_bytes
    busiest = max([*bytes_in.values(), *bytes_out.values(), 0])
    return BatchThrottle(
        index=batch.index,
        rate=rate,
        leader=kafka.leader,
        follower=kafka.follower,
        reassigning_brokers=kafka.reassigning_brokers,
        bytes_in=dict(sorted(bytes_in.items())),
        bytes_out=dict(sorted(bytes_out.items())),
        seconds=math.ceil(busiest / rate),
    )
