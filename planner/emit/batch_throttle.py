"""Replication throttles and duration estimates for each batch of a reassignment.

The rate is `pools.throttle.throttle_rate` (the rule the audit's fixes share): the spare network capacity
(capacity minus forecast peak load, the smaller of in and out) of the busiest broker a batch involves, times a
configurable fraction, never below 1 KiB/s. The throttled-replica lists are Kafka's own
(`pools.kafka_formats.calculate_throttles`). A batch lasts as long as its busiest broker needs to copy in
(follower throttle) or serve out (leader throttle) its bytes at that rate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from planner.emit.batches import Batch
from pools.kafka_formats import calculate_throttles
from pools.plan_file import copy_source
from pools.throttle import MIN_THROTTLE_BPS, throttle_rate

__all__ = ["MIN_THROTTLE_BPS", "BatchThrottle", "throttle_rate", "batch_throttle"]


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
