"""Every file of a sample directory, as ``(relative path, text)`` pairs; the CLI writes them atomically.

Layout::

    kafka/topics-describe.txt                         kafka-topics.sh --describe at the window end
    kafka/log-dirs/log-dirs-<YYYYMMDDTHHMMSSZ>.txt    kafka-log-dirs.sh --describe, daily at 00:00 UTC
    kafka/consumer-groups.txt                         kafka-consumer-groups.sh --describe --all-groups
    kafka/consumer-members.txt                        ... --describe --all-groups --members --verbose
    kafka/broker-configs.txt                          kafka-configs.sh --describe --entity-type brokers (--kafka-4)
    brokers.toml  pools.toml  broker-map.toml         inventory, pool policy, instance label -> broker id
    metrics/prom/<instance>/<YYYY-MM-DD>.prom         exposition text with ms timestamps, the last days
    metrics/query_range/<metric>-<YYYY>-W<ww>.json    query_range of the raw counters, the earlier days
    truth.json
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping

import numpy as np
import tomli_w

from pools.atomic import dump_json
from pools.policy import Defaults, NewBrokerType, PoolPolicy, PoolSpec, TenantSpec, dump_policy
from planner.sample.cluster import DATA_DIR, RACKS, SampleCluster, SampleSpec, build_cluster
from planner.sample.groups import build_groups
from planner.sample.kafka4 import format_broker_configs, kafka4_variant
from planner.sample.metrics import FAMILIES, Traffic, simulate
from planner.sample.plant import plant_problems
from planner.sample.truth import build_truth
from pools.snapshot import Capacity
from planner.sample.writers import (
    format_consumer_members,
    format_consumer_offsets,
    format_log_dirs,
    format_openmetrics,
    format_prom_text,
    format_query_range,
    format_topics_describe,
)

__all__ = ["PROM_NAMES", "RANGE_NAMES", "TARGET_UTILISATION", "PROM_TEXT_DAYS", "sample_files", "counters_openmetrics"]

#: Lowercase names (jmx_exporter ``lowercaseOutputName: true``), used in the exposition text.
PROM_NAMES = {f: f"kafka_server_brokertopicmetrics_{f}_total" for f in FAMILIES}
#: Mixed-case names (no ``lowercaseOutputName``), used in the query_range exports.
RANGE_NAMES = {
    "bytesin": "kafka_server_BrokerTopicMetrics_BytesIn_total",
    "bytesout": "kafka_server_BrokerTopicMetrics_BytesOut_total",
    "messagesin": "kafka_server_BrokerTopicMetrics_MessagesIn_total",
}
#: Brokers are sized so the busiest one uses at most this fraction of each capacity dimension.
TARGET_UTILISATION = 0.3
#: Monthly price of one broker of the sample's new-broker type (USD), so the report can price what it adds.
SAMPLE_BROKER_PRICE = 1200.0
#: Trailing days written as exposition text; the earlier days go to query_range (no overlap). One day
#: keeps the default sample (9 brokers, 30 topics, 14 days) near 250 MB.
PROM_TEXT_DAYS = 1
_DAY = 86_400


def sample_files(spec: SampleSpec) -> Iterator[tuple[str, str]]:
    """Generate the cluster and its metrics and yield every file of the sample directory.

    Same ``spec`` → same files, byte for byte (``numpy.random.Generator(PCG64(seed))``, sorted output).
    """
    rng = np.random.Generator(np.random.PCG64(spec.seed))
    cluster = plant_problems(build_cluster(spec, rng), rng)
    traffic = simulate(cluster, rng)
    final = _replica_sizes(cluster, traffic, spec.end, final=True, rng=rng)
    capacity = _capacity(cluster, traffic, final)
    prom_from = spec.end - PROM_TEXT_DAYS * _DAY
    variant = kafka4_variant(cluster, final, capacity["disk_bytes"]) if spec.kafka_4 else None
    if variant is not None:
        cluster = variant.cluster
        yield "kafka/broker-configs.txt", format_broker_configs(cluster, variant.cordons)

    yield "kafka/topics-describe.txt", _describe(cluster)
    for day in range(1, spec.days + 1):
        at = spec.start + day * _DAY
        sizes = final if at == spec.end else _replica_sizes(cluster, traffic, at, final=False, rng=rng)
        if variant is not None:
            sizes = variant.place(sizes)
        stamp = str(np.datetime64(at, "s")).replace("-", "").replace(":", "") + "Z"
        yield f"kafka/log-dirs/log-dirs-{stamp}.txt", _log_dirs(cluster, sizes, final=at == spec.end)
    leo = _log_end_offsets(cluster, traffic, rng)
    groups = build_groups(cluster, leo, rng)
    yield "kafka/consumer-groups.txt", format_consumer_offsets([
        (g.group, g.active, [(g.topic, p, cur, end, end - cur, *_owner(g, p)) for p, cur, end in g.offsets])
        for g in groups
    ])
    yield "kafka/consumer-members.txt", format_consumer_members([
        (g.group, [(m.consumer_id, m.host, m.client_id, m.assignment) for m in g.members]) for g in groups
    ])
    jbod_disks = {variant.jbod_broker: variant.jbod_disk_bytes} if variant else {}
    yield "brokers.toml", _inventory(cluster, capacity, jbod_disks)
    yield "pools.toml", _policy(cluster, capacity)
    yield "broker-map.toml", _broker_map(cluster)
    yield from _prom_files(cluster, traffic, prom_from)
    yield from _range_files(cluster, traffic, prom_from)
    storage = {t.topic: 0 for t in cluster.topics}
    for (topic, _), by_broker in final.items():
        reported = [s for b, (d, s, _) in by_broker.items() if (b, d) != cluster.failed_log_dir]
        storage[topic] += max(reported, default=0)
    truth = build_truth(cluster, traffic, storage, capacity, prom_from=prom_from)
    yield "truth.json", dump_json(truth)


def counters_openmetrics(spec: SampleSpec) -> Iterator[str]:
    """Every counter sample of the sample ``spec`` (both the exposition-text and the query_range days) as
    OpenMetrics text ending in ``# EOF``, to backfill a Prometheus server with ``promtool tsdb
    create-blocks-from openmetrics``: the server then holds exactly the samples the sample's files hold.
    """
    rng = np.random.Generator(np.random.PCG64(spec.seed))
    cluster = plant_problems(build_cluster(spec, rng), rng)
    traffic = simulate(cluster, rng)
    instance = {b.id: b.instance for b in cluster.brokers}
    for f in FAMILIES:
        series = [
            (_labels(instance[s.broker], s.topic).rstrip(","), s.values) for s in traffic.counters if s.family == f
        ]
        yield from format_openmetrics(PROM_NAMES[f].removesuffix("_total"), series, traffic.times)
    yield "# EOF\n"


def _describe(cluster: SampleCluster) -> str:
    topics = [
        {"topic": t.topic, "topic_id": t.topic_id, "replication_factor": t.replication_factor,
         "configs": [(k, v) for k, v in sorted(t.configs) if not _is_default(k, v)]}
        for t in cluster.topics
    ]
    parts: dict[str, list[dict]] = {}
    for p in cluster.partitions:
        parts.setdefault(p.topic, []).append({
            "partition": p.partition, "leader": p.leader, "replicas": p.replicas, "isr": p.isr,
            "adding": p.adding_replicas, "removing": p.removing_replicas,
        })
    return format_topics_describe(topics, parts)


def _is_default(key: str, value: str) -> bool:
    """Broker defaults `kafka-topics --describe` does not list: 7-day retention, delete policy."""
    return (key, value) in {("retention.ms", "604800000"), ("cleanup.policy", "delete")}


def _replica_sizes(cluster: SampleCluster, traffic: Traffic, at: int, *, final: bool, rng: np.random.Generator):
    """``{(topic, partition): {broker: (log_dir, size, in_sync)}}`` at time ``at``.

    Before the window end the planted ISR shrinks, the failed log dir and the reassignment have not
    happened yet; followers trail the leader by a fraction of a second of writes.
    """
    failed_broker, failed_dir = cluster.failed_log_dir
    out = {}
    for p in cluster.partitions:
        key = (p.topic, p.partition)
        size = traffic.partition_size(key, at)
        rate = float(traffic.partition_bytes[key][-1440:].mean()) / cluster.spec.step_s
        replicas = p.replicas if final else tuple(b for b in p.replicas if b not in p.adding_replicas)
        isr = p.isr if final else replicas
        first = p.leader if p.leader is not None else p.isr[0]
        sizes = {}
        for b in replicas:
            log_dir = failed_dir if (b == failed_broker and p.leader is None) else DATA_DIR
            if b == first:
                s = size
            elif final and b in p.adding_replicas:
                s = int(size * rng.uniform(0.3, 0.7))
            elif b in isr:
                s = size - int(rate * rng.uniform(0.0, 0.2))
            else:
                s = size - int(rate * rng.uniform(60, 900))
            sizes[b] = (log_dir, max(0, s), b in isr)
        out[key] = sizes
    return out


def _log_dirs(cluster: SampleCluster, sizes, *, final: bool) -> str:
    failed_broker, failed_dir = cluster.failed_log_dir
    brokers = []
    for b in cluster.brokers:
        dirs = []
        for log_dir in b.log_dirs:
            if final and (b.id, log_dir) == (failed_broker, failed_dir):
                dirs.append((log_dir, "org.apache.kafka.common.errors.KafkaStorageException", []))
                continue
            replicas = [
                (f"{topic}-{partition}", entry[b.id][1], 0, False)
                for (topic, partition), entry in sorted(sizes.items())
                if b.id in entry and entry[b.id][0] == log_dir
            ]
            dirs.append((log_dir, None, replicas))
        brokers.append((b.id, dirs))
    return format_log_dirs(brokers)


def _capacity(cluster: SampleCluster, traffic: Traffic, final) -> dict[str, int]:
    """Homogeneous broker capacity: the busiest broker at `TARGET_UTILISATION` in every dimension."""
    day = traffic.times > cluster.spec.end - _DAY
    topics = cluster.topic_by_name
    load = {b.id: np.zeros(4) for b in cluster.brokers}
    for p in cluster.partitions:
        peak = float(traffic.partition_bytes[(p.topic, p.partition)][day].max()) / cluster.spec.step_s
        t = topics[p.topic]
        for b in p.replicas:
            load[b] += (peak, 0.0, final[(p.topic, p.partition)].get(b, ("", 0, False))[1], 1.0)
        leader = p.leader if p.leader is not None else p.replicas[0]
        load[leader][1] += peak * (t.fanout + len(p.replicas) - 1)
    worst = np.max(np.array(list(load.values())), axis=0) / TARGET_UTILISATION
    return {
        "nw_in_Bps": _nice(worst[0], 1_250_000),
        "nw_out_Bps": _nice(worst[1], 1_250_000),
        "disk_bytes": _nice(worst[2], 10_000_000_000),
        "max_replicas": max(1000, _nice(worst[3], 100)),
    }


def _nice(value: float, unit: int) -> int:
    return max(unit, int(math.ceil(value / unit)) * unit)


def _inventory(cluster: SampleCluster, capacity: dict[str, int], disk_bytes: Mapping[int, int]) -> str:
    """``brokers.toml``: the common capacity in ``[defaults]``; ``disk_bytes`` overrides a broker's disk."""
    lines = ["# Broker inventory of the synthetic cluster (poolplan sample).", "", "[defaults]"]
    lines += [f"{key} = {value}" for key, value in capacity.items()]
    for b in cluster.brokers:
        lines += ["", "[[broker]]", f"id = {b.id}", f'rack = "{b.rack}"']
        if b.pool is not None:
            lines.append(f'pool = "{b.pool}"')
        if b.id in disk_bytes:
            lines.append(f"disk_bytes = {disk_bytes[b.id]}")
    return "\n".join(lines) + "\n"


def _policy(cluster: SampleCluster, capacity: dict[str, int]) -> str:
    firsts = [p.tenants[0] for p in cluster.pools]
    tenants = tuple(
        TenantSpec(t, (rf"{t}\..*",), tuple(f for f in firsts if f != t) if t in firsts else ())
        for p in cluster.pools for t in p.tenants
    )
    pools = tuple(
        PoolSpec(p.name, tenants=p.tenants, brokers=p.pinned, min_brokers=min(3, len(p.brokers)),
                 min_racks=len(p.racks))
        for p in cluster.pools
    )
    policy = PoolPolicy(
        defaults=Defaults(min_brokers=2),
        pools=pools,
        tenants=tenants,
        new_broker=NewBrokerType(
            Capacity(capacity["nw_in_Bps"], capacity["nw_out_Bps"], capacity["disk_bytes"], capacity["max_replicas"]),
            RACKS,
            price=SAMPLE_BROKER_PRICE,
            period="month",
        ),
    )
    return "# Pool policy of the synthetic cluster (poolplan sample).\n" + dump_policy(policy)


def _broker_map(cluster: SampleCluster) -> str:
    doc = {"brokers": {b.instance: b.id for b in cluster.brokers}}
    return "# Prometheus `instance` label value -> Kafka broker id.\n" + tomli_w.dumps(doc)


def _labels(instance: str, topic: str | None, partition: int | None = None) -> str:
    text = f'instance="{instance}",job="kafka",'
    if partition is not None:
        text += f'partition="{partition}",'
    if topic is not None:
        text += f'topic="{topic}",'
    return text


def _prom_files(cluster: SampleCluster, traffic: Traffic, prom_from: int) -> Iterator[tuple[str, str]]:
    times = traffic.times
    instance = {b.id: b.instance for b in cluster.brokers}
    days = sorted({int(t) // _DAY for t in times if t > prom_from})
    for broker in sorted(instance):
        counters = [s for s in traffic.counters if s.broker == broker]
        sizes = [s for s in traffic.log_sizes if s.broker == broker]
        for day in days:
            lo, hi = day * _DAY, (day + 1) * _DAY
            sel = (times >= max(lo, prom_from + 1)) & (times < hi)
            size_sel = (traffic.size_times >= max(lo, prom_from + 1)) & (traffic.size_times < hi)
            families = [
                (PROM_NAMES[f], "counter",
                 [(_labels(instance[broker], s.topic), s.values[sel]) for s in counters if s.family == f])
                for f in FAMILIES
            ]
            families.append(("kafka_log_log_size", "gauge", [
                (_labels(instance[broker], s.topic, s.partition), s.values[size_sel]) for s in sizes
            ]))
            # the gauges share the counters' scrape grid: NaN where not sampled
            text = format_prom_text(families[:3], times[sel] * 1000) + format_prom_text(
                families[3:], traffic.size_times[size_sel] * 1000
            )
            if text:
                yield f"metrics/prom/{instance[broker]}/{np.datetime64(lo, 's').astype('datetime64[D]')}.prom", text


def _range_files(cluster: SampleCluster, traffic: Traffic, prom_from: int) -> Iterator[tuple[str, str]]:
    times = traffic.times
    instance = {b.id: b.instance for b in cluster.brokers}
    in_range = times <= prom_from
    weeks = np.array([_iso_week(int(t)) for t in times])
    for f in FAMILIES:
        for week in sorted(set(weeks[in_range].tolist())):
            sel = in_range & (weeks == week)
            series = []
            for s in traffic.counters:
                if s.family != f:
                    continue
                labels = {"__name__": RANGE_NAMES[f], "instance": instance[s.broker], "job": "kafka"}
                if s.topic is not None:
                    labels["topic"] = s.topic
                series.append((labels, s.values[sel]))
            yield f"metrics/query_range/{RANGE_NAMES[f]}-{week}.json", format_query_range(series, times[sel])


def _iso_week(epoch_s: int) -> str:
    import datetime as dt

    year, week, _ = dt.datetime.fromtimestamp(epoch_s, dt.timezone.utc).isocalendar()
    return f"{year}-W{week:02d}"


def _log_end_offsets(cluster: SampleCluster, traffic: Traffic, rng: np.random.Generator) -> dict[tuple[str, int], int]:
    """Messages ever appended: the window's messages plus a history of 30-400 days at the starting rate."""
    topics = cluster.topic_by_name
    out = {}
    for key, b in sorted(traffic.partition_bytes.items()):
        t = topics[key[0]]
        history = float(b[:1440].mean()) / cluster.spec.step_s * float(rng.uniform(30, 400)) * _DAY
        out[key] = int((history + float(b.sum())) / t.message_bytes)
    return out


def _owner(group, partition: int) -> tuple[str | None, str | None, str | None]:
    for m in group.members:
        if any(p == partition for _, p in m.assignment):
            return m.consumer_id, m.host, m.client_id
    return None, None, None
