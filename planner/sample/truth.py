"""``truth.json``: what the generator planted, so tests can check every later stage against it.

Per topic: tenant, pool, partitions, RF, retention, the rate model's parameters (``bytes_in_rate_end``:
weekday mean B/s at the end of the window; ``growth_per_day``: relative; ``pattern``: diurnal amplitude,
peak hour (UTC), weekend factor, noise sigma), the realised last-day figures (mean and p99 of the per-minute
bytes-in rate summed over partitions, mean bytes-out and messages-in rates) and ``storage_bytes`` (largest
replica per partition in the final ``kafka-log-dirs`` snapshot, summed). Then the sorted ``planted``
problems, the rolling restarts and the counter resets (broker, topic, time of the re-created meter).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from planner.sample.cluster import SampleCluster
from planner.sample.metrics import Traffic

__all__ = ["TRUTH_VERSION", "build_truth", "iso"]

TRUTH_VERSION = 1


def iso(epoch_s: int) -> str:
    """``YYYY-MM-DDTHH:MM:SSZ`` for whole epoch seconds."""
    return str(np.datetime64(int(epoch_s), "s")) + "Z"


def build_truth(
    cluster: SampleCluster,
    traffic: Traffic,
    storage: dict[str, int],
    capacity: dict[str, int],
    *,
    prom_from: int,
) -> dict[str, Any]:
    """The truth document (JSON-ready, deterministic)."""
    spec = cluster.spec
    step = spec.step_s
    last_day = traffic.times > spec.end - 86_400
    topics = {}
    for t in cluster.topics:
        per_minute = sum(traffic.partition_bytes[(t.topic, p)] for p in range(t.partitions))[last_day] / step
        topics[t.topic] = {
            "tenant": t.tenant,
            "pool": t.pool,
            "topic_id": t.topic_id,
            "partitions": t.partitions,
            "replication_factor": t.replication_factor,
            "min_insync_replicas": t.min_insync_replicas,
            "retention_ms": t.retention_ms,
            "retention_bytes": t.retention_bytes,
            "compacted": t.compact_bytes is not None,
            "bytes_in_rate_end": t.rate_end,
            "growth_per_day": t.growth_per_day,
            "pattern": {
                "amplitude": t.amplitude,
                "peak_hour_utc": t.peak_hour,
                "weekend_factor": t.weekend_factor,
                "noise_sigma": t.noise_sigma,
            },
            "bytes_in_mean_last_day": _r(per_minute.mean()),
            "bytes_in_p99_last_day": _r(np.percentile(per_minute, 99)),
            "bytes_out_mean_last_day": _r(per_minute.mean() * t.fanout),
            "messages_in_mean_last_day": _r(per_minute.mean() / t.message_bytes),
            "message_bytes": t.message_bytes,
            "fanout": t.fanout,
            "storage_bytes": storage[t.topic],
        }
    return {
        "version": TRUTH_VERSION,
        "spec": {
            "seed": spec.seed, "brokers": spec.brokers, "topics": spec.topics, "days": spec.days,
            "step_s": step, "cluster": spec.cluster,
        },
        "window": {"start": iso(spec.start), "end": iso(spec.end), "prom_text_from": iso(prom_from)},
        "capacity": capacity,
        "brokers": [
            {"id": b.id, "rack": b.rack, "pool": b.pool, "instance": b.instance, "log_dirs": list(b.log_dirs)}
            for b in cluster.brokers
        ],
        "pools": [
            {"name": p.name, "brokers": list(p.brokers), "pinned": list(p.pinned), "tenants": list(p.tenants),
             "racks": list(p.racks)}
            for p in cluster.pools
        ],
        "topics": topics,
        "planted": [p.to_dict() for p in cluster.planted],
        "restarts": [{"broker": b, "down": iso(d), "up": iso(u)} for b, d, u in cluster.restarts],
        "events": [
            {"kind": kind, "topic": topic, "partition": partition, "at": iso(spec.end - age)}
            for kind, topic, partition, age in sorted(cluster.events)
        ],
        "counter_resets": [{"broker": b, "topic": t, "at": iso(at)} for b, t, at in traffic.resets],
    }


def _r(x: float) -> float:
    return round(float(x), 3)
