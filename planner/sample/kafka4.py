"""The Kafka 4.x variant of the sample (``poolplan sample --kafka-4``): cordons, JBOD, tiered storage, durability.

On top of the default sample (same seed, same metrics: nothing here draws random numbers), chosen from the
generated cluster so that each lands where it shows:

- a **cordoned broker** (``cordoned.log.dirs=*``): of the largest pool, a broker sharing its rack with another
  (so the pool keeps its racks), the least loaded on disk: where a plan would put replicas;
- a **4-dir JBOD broker**: the busiest on disk, its replicas spread over `JBOD_DIRS` with the first dir filled,
  largest replicas first, to about `FULL_DIR` of its share of the disk (the broker is near a third) and the last
  dir cordoned (``cordoned.log.dirs=<dir>``);
- a **tiered topic** (``remote.storage.enable=true``): ``local.retention.ms`` is the time its bytes-in takes to
  write what it holds now, ``retention.ms`` ten times that, so the local size is a tenth of its retention;
- ``min.insync.replicas=3`` on an RF-3 topic (the others keep 1 or 2), so one broker loss blocks it.

The cordons are written as ``kafka-configs.sh --describe --entity-type brokers`` prints them
(``kafka/broker-configs.txt``), and what the audit should find joins the truth's ``planted`` list
(``replicas_on_cordoned``, ``log_dir_over_headroom``, ``min_isr_after_broker_loss``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from planner.sample.cluster import Problem, SampleCluster, SampleTopic

__all__ = ["JBOD_DIRS", "FULL_DIR", "Kafka4", "kafka4_variant", "format_broker_configs"]

#: The JBOD broker's log dirs (the others keep ``DATA_DIR``).
JBOD_DIRS: tuple[str, ...] = tuple(f"/var/lib/kafka/disk{i}" for i in range(1, 5))
#: The first JBOD dir is filled to about this fraction of its share of the broker's disk.
FULL_DIR = 0.9

Sizes = Mapping[tuple[str, int], Mapping[int, tuple[str, int, bool]]]


@dataclass(frozen=True)
class Kafka4:
    """The variant: the changed cluster, the JBOD broker's dir per partition, the cordons by broker."""

    cluster: SampleCluster
    jbod_broker: int
    dir_of: Mapping[tuple[str, int], str]
    cordons: Mapping[int, str]

    def place(self, sizes: Sizes) -> dict:
        """``sizes`` (`planner.sample.bundle._replica_sizes`) with the JBOD broker's replicas in their dirs."""
        out = {}
        for key, by_broker in sizes.items():
            entry = dict(by_broker)
            if self.jbod_broker in entry:
                _, size, in_sync = entry[self.jbod_broker]
                entry[self.jbod_broker] = (self.dir_of.get(key, JBOD_DIRS[1]), size, in_sync)
            out[key] = entry
        return out


def kafka4_variant(cluster: SampleCluster, final: Sizes, disk_bytes: int) -> Kafka4:
    """The Kafka 4.x variant of ``cluster`` (see the module docstring); ``final`` are the window end's replica
    sizes, ``disk_bytes`` each broker's disk."""
    load = {b.id: 0 for b in cluster.brokers}
    for by_broker in final.values():
        for b, (_, size, _) in by_broker.items():
            load[b] += size
    failed = cluster.failed_log_dir[0] if cluster.failed_log_dir else None
    pooled = [b for b in cluster.brokers if b.pool is not None and b.id != failed]
    jbod = max(pooled, key=lambda b: (load[b.id], -b.id))
    largest = max(cluster.pools, key=lambda p: (len(p.brokers), p.name))
    racks = [cluster.broker_by_id[b].rack for b in largest.brokers]
    others = [b for b in largest.brokers if b not in (jbod.id, failed) and b not in largest.pinned]
    shared = [b for b in others if racks.count(cluster.broker_by_id[b].rack) > 1]
    cordoned = min(shared or others, key=lambda b: (load[b], b))
    dir_of = _spread(final, jbod.id, disk_bytes / len(JBOD_DIRS))
    troubled = {p.topic for p in cluster.planted if p.topic is not None} | {e[1] for e in cluster.events}
    calm = [t for t in cluster.topics if t.tenant is not None and t.topic not in troubled]
    durable = next(t for t in calm if t.replication_factor == 3)
    tiered = next(t for t in calm if t is not durable and t.retention_ms is not None and t.retention_bytes is None
                  and t.compact_bytes is None)
    stored = sum(max(s for _, s, _ in final[(p.topic, p.partition)].values())
                 for p in cluster.partitions if p.topic == tiered.topic)
    local_ms = 60_000 * max(1, math.ceil(stored / tiered.rate_end / 60))
    topics = tuple(
        _with(t, {"min.insync.replicas": "3"}) if t is durable else
        _with(t, {"remote.storage.enable": "true", "local.retention.ms": str(local_ms),
                  "retention.ms": str(10 * local_ms)}) if t is tiered else t
        for t in cluster.topics
    )
    cordons = {cordoned: "*", jbod.id: JBOD_DIRS[-1]}
    holds_last = any(d == JBOD_DIRS[-1] for d in dir_of.values())
    planted = [
        Problem("replicas_on_cordoned", broker=cordoned),
        Problem("log_dir_over_headroom", broker=jbod.id, log_dir=JBOD_DIRS[0]),
        Problem("min_isr_after_broker_loss", topic=durable.topic, pool=durable.pool),
        *([Problem("replicas_on_cordoned", broker=jbod.id, log_dir=JBOD_DIRS[-1])] if holds_last else []),
    ]
    changed = replace(
        cluster,
        brokers=tuple(replace(b, log_dirs=JBOD_DIRS) if b.id == jbod.id else b for b in cluster.brokers),
        topics=topics,
        planted=tuple(sorted(set(cluster.planted) | set(planted))),
    )
    return Kafka4(changed, jbod.id, dir_of, cordons)


def format_broker_configs(cluster: SampleCluster, cordons: Mapping[int, str]) -> str:
    """``kafka-configs.sh --describe --entity-type brokers`` output: each broker's dynamic configs, then the
    (empty) cluster defaults."""
    lines = []
    for b in cluster.brokers:
        lines.append(f"Dynamic configs for broker {b.id} are:")
        if b.id in cordons:
            value = cordons[b.id]
            lines.append(f"  cordoned.log.dirs={value} sensitive=false "
                         f"synonyms={{DYNAMIC_BROKER_CONFIG:cordoned.log.dirs={value}}}")
    lines.append("Default configs for brokers in the cluster are:")
    return "\n".join(lines) + "\n"


def _spread(final: Sizes, broker: int, share: float) -> dict[tuple[str, int], str]:
    """The JBOD broker's dir per partition: the largest replicas into the first dir up to `FULL_DIR` of its
    ``share``, each other replica into the least filled of the other dirs (ties: the first)."""
    held = sorted(((key, by_broker[broker][1]) for key, by_broker in final.items() if broker in by_broker),
                  key=lambda r: (-r[1], r[0]))
    fill = dict.fromkeys(JBOD_DIRS, 0)
    out = {}
    for key, size in held:
        if fill[JBOD_DIRS[0]] + size <= FULL_DIR * share:
            target = JBOD_DIRS[0]
        else:
            target = min(JBOD_DIRS[1:], key=lambda d: (fill[d], d))
        fill[target] += size
        out[key] = target
    return out


def _with(topic: SampleTopic, configs: Mapping[str, str]) -> SampleTopic:
    merged = dict(topic.configs) | dict(configs)
    return replace(topic, configs=tuple(merged.items()))

