"""The Kafka 4.x variant of the sample (``poolplan sample --kafka-4``): cordons, JBOD, tiered storage, durability.

On top of the default sample (same seed, same metrics: nothing here draws random numbers), chosen from the
generated cluster so that each lands where it shows:

- a **cordoned broker** (``cordoned.log.dirs=*``): a broker sharing its rack with another of its pool (so the pool
  keeps its racks), in the largest pool, the least loaded on disk: where a plan would put replicas;
- a **4-dir JBOD broker**: the busiest on disk outside the failed log dir's pool, with its own (smaller) disk in
  the inventory so it is `JBOD_BROKER_FILL` full, its replicas spread over `JBOD_DIRS`: the first dir filled,
  largest replicas first, to about `FULL_DIR` of its share of the disk, and the last dir cordoned
  (``cordoned.log.dirs=<dir>``);
- a **tiered topic** (``remote.storage.enable=true``): ``local.retention.ms`` is the time its bytes-in takes to
  write what it holds now, ``retention.ms`` ten times that, so the local size is a tenth of its retention;
- ``min.insync.replicas`` equal to the replication factor on a topic with no planted problem (RF 3 where there is
  one: the others keep 1 or 2), so one broker loss blocks it.

The cordons are written as ``kafka-configs.sh --describe --entity-type brokers`` prints them
(``kafka/broker-configs.txt``), and what the audit should find joins the truth's ``planted`` list
(``replicas_on_cordoned``, ``log_dir_over_headroom``, ``min_isr_after_broker_loss``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from planner.sample.cluster import Problem, SampleCluster, SampleTopic
from planner.sample.plant import problem_key
from pools.errors import InputError

__all__ = ["JBOD_DIRS", "FULL_DIR", "JBOD_BROKER_FILL", "Kafka4", "kafka4_variant", "format_broker_configs",
    "lost_min_isr"]

#: The JBOD broker's log dirs (the others keep ``DATA_DIR``).
JBOD_DIRS: tuple[str, ...] = tuple(f"/var/lib/kafka/disk{i}" for i in range(1, 5))
#: The first JBOD dir is filled to about this fraction of its share of the broker's disk.
FULL_DIR = 0.9
#: The JBOD broker's disk is sized so its replicas fill this fraction of it (room for `FULL_DIR` in one of 4 dirs).
JBOD_BROKER_FILL = 0.32
_DISK_UNIT = 10_000_000_000

Sizes = Mapping[tuple[str, int], Mapping[int, tuple[str, int, bool]]]


@dataclass(frozen=True)
class Kafka4:
    """The variant: the changed cluster, the JBOD broker (its dir per partition, its disk) and the cordons."""

    cluster: SampleCluster
    jbod_broker: int
    dir_of: Mapping[tuple[str, int], str]
    cordons: Mapping[int, str]
    jbod_disk_bytes: int

    def place(self, sizes: Sizes) -> dict:
        """``sizes`` (`planner.sample.sample_dir._replica_sizes`) with the JBOD broker's replicas in their dirs."""
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
    failed_pool = cluster.broker_by_id[failed].pool if failed is not None else None
    pooled = [b for b in cluster.brokers if b.pool is not None and b.id != failed]
    # away from the failed broker's pool, whose partitions the health rule holds, so its dirs can be evened out
    jbod = max(pooled, key=lambda b: (b.pool != failed_pool, load[b.id], -b.id))
    rack = {b.id: b.rack for b in cluster.brokers}

    def cordon_order(pool, b: int) -> tuple:  # shares its rack in its pool, the largest pool, the least loaded
        shares = sum(rack[o] == rack[b] for o in pool.brokers) > 1
        return not shares, -len(pool.brokers), load[b], b

    candidates = [cordon_order(p, b) for p in cluster.pools for b in p.brokers
                  if b not in (jbod.id, failed) and b not in p.pinned]
    if not candidates:
        raise InputError("--kafka-4: no broker left to cordon besides the JBOD and the failed one; use more --brokers")
    cordoned = min(candidates)[-1]
    jbod_disk = min(disk_bytes, max(1, math.ceil(load[jbod.id] / JBOD_BROKER_FILL / _DISK_UNIT)) * _DISK_UNIT)
    dir_of = _spread(final, jbod.id, jbod_disk / len(JBOD_DIRS))
    troubled = {p.topic for p in cluster.planted if p.topic is not None} | {e[1] for e in cluster.events}
    calm = [t for t in cluster.topics if t.tenant is not None and t.topic not in troubled]
    durable = max(calm, key=lambda t: t.replication_factor, default=None)  # the first RF-3 one, where there is one
    tiered = next((t for t in calm if t is not durable and t.retention_ms is not None and t.retention_bytes is None
                   and t.compact_bytes is None), None)
    if durable is None or tiered is None:
        raise InputError(f"--kafka-4: the sample's {len(cluster.topics)} topics leave too few free of the planted "
                         "problems for the durable and the tiered topic; use more --topics (12 or more)")
    stored = sum(max(s for _, s, _ in final[(p.topic, p.partition)].values())
                 for p in cluster.partitions if p.topic == tiered.topic)
    local_ms = 60_000 * max(1, math.ceil(stored / tiered.rate_end / 60))
    topics = tuple(
        _with(t, {"min.insync.replicas": str(t.replication_factor)}) if t is durable else
        _with(t, {"remote.storage.enable": "true", "local.retention.ms": str(local_ms),
                  "retention.ms": str(10 * local_ms)}) if t is tiered else t
        for t in cluster.topics
    )
    cordons = {cordoned: "*", jbod.id: JBOD_DIRS[-1]}
    holds_last = any(d == JBOD_DIRS[-1] for d in dir_of.values())
    planted = [
        Problem("replicas_on_cordoned", broker=cordoned),
        Problem("log_dir_over_headroom", broker=jbod.id, log_dir=JBOD_DIRS[0]),
        *([Problem("replicas_on_cordoned", broker=jbod.id, log_dir=JBOD_DIRS[-1])] if holds_last else []),
    ]
    changed = replace(
        cluster,
        brokers=tuple(replace(b, log_dirs=JBOD_DIRS) if b.id == jbod.id else b for b in cluster.brokers),
        topics=topics,
    )
    changed = replace(changed, planted=tuple(sorted(set(cluster.planted) | set(planted) | set(lost_min_isr(changed)),
                                                    key=problem_key)))
    return Kafka4(changed, jbod.id, dir_of, cordons, jbod_disk)


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


def lost_min_isr(cluster: SampleCluster) -> list[Problem]:
    """``min_isr_after_broker_loss`` for each topic with a partition (leader, every replica in sync) whose replication
    factor minus one broker is below the topic's ``min.insync.replicas`` (the sample's pools tolerate one failure):
    the durable topic, and any the default sample made durable on RF 2 for its ``under_min_isr`` plant."""
    need = {t.topic: t.min_insync_replicas for t in cluster.topics}
    hit = {p.topic for p in cluster.partitions if p.leader is not None and set(p.isr) >= set(p.replicas)
           and need[p.topic] <= len(p.replicas) < need[p.topic] + 1}
    return [Problem("min_isr_after_broker_loss", topic=t.topic, pool=t.pool) for t in cluster.topics if t.topic in hit]


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

