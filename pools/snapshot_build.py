"""Build a `ClusterSnapshot` from what operators have: ``kafka-topics --describe``, ``kafka-log-dirs`` and an inventory.

The describe text gives topics, configs and every partition's replicas, leader, ISR, reassignment and ELR;
the log-dirs output gives each replica's log dir and size, and the log dirs in error; the inventory
(``brokers.toml`` or Cruise Control ``capacity.json``, both parsed to `BrokerCapacity`) gives the brokers,
their racks, pool tags and capacities.

Rules:

- Brokers are the inventory's. A Cruise Control default entry (``brokerId -1``) also covers every broker the
  tool outputs mention. A broker missing from the inventory keeps its replicas (the audit reports them).
- A replica's size and log dir come from the broker's current (``isFuture: false``) copy; a future copy of an
  intra-broker move is not counted twice. A replica the log-dirs output does not list has ``None`` for both
  (for example one on an offline log dir). Without log-dirs text the snapshot has no sizes.
- Log dirs reported with an error become `LogDirError` entries with the error as printed.
- The two captures must describe one cluster: a describe without a single topic (an empty or whitespace-only
  file) while the log-dirs output lists replicas is an error. Replicas the log-dirs output lists for a
  partition the describe does not have, or on a broker that is not among its replicas, are a warning naming the
  line (Kafka prints that for a topic created or deleted between the two captures, or a reassignment finishing).
- An inventory entry without ``max_replicas`` gets `DEFAULT_MAX_REPLICAS`.
- A broker's log dirs are those ``kafka-log-dirs.sh`` lists for it. Its cordons (KIP-1066) are the union of the
  inventory's ``cordoned``/``cordoned_log_dirs``, the ``cordoned.log.dirs`` config in ``kafka-configs.sh --describe
  --entity-type brokers`` output (``*`` cordons the broker) and log dirs a capture marks ``"isCordoned": true``.
  A cordoned dir the broker does not list is an error, from the inventory as from the configs (Kafka refuses such
  a config); each cordon keeps its source (`pools.snapshot.Broker.cordon_sources`: the file and the field). So
  are the inventory's per-dir capacities (``log_dir_capacities``; Cruise Control's JBOD ``DISK`` map).
- Impossible cluster state is an error naming the line: repeated or empty replicas, a leader that is not a replica,
  an ISR, ELR or adding/removing replica outside the replicas, a partition described twice, partition lines that
  are not ``0..PartitionCount-1``, a ``ReplicationFactor`` that is not the first partition's (during a reassignment
  Kafka prints the replicas less the adding ones), ``min.insync.replicas``/``retention.*`` Kafka would not accept.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from pools.errors import InputError
from pools.kafka_formats.broker_configs import (ALL_LOG_DIRS, CORDONED_LOG_DIRS, BrokerCordon, cordons_from_configs,
                                                parse_broker_configs)
from pools.kafka_formats.cruise_control import DEFAULT_BROKER_ID, capacity_for
from pools.kafka_formats.inventory import BrokerCapacity
from pools.kafka_formats.log_dirs import LogDirsReport, parse_log_dirs
from pools.kafka_formats.topics_describe import PartitionDescription, TopicDescription, parse_topics_describe
from pools.snapshot import (
    Broker,
    Capacity,
    ClusterSnapshot,
    LogDirError,
    PartitionState,
    TopicState,
    config_cordon_source,
    marked_cordon_source,
    partition_problem,
    topic_config_problem,
    topic_name_problem,
)

__all__ = ["DEFAULT_MAX_REPLICAS", "build_snapshot"]

_log = logging.getLogger(__name__)

#: Replica ceiling for brokers whose inventory gives none (a common operational limit per broker).
DEFAULT_MAX_REPLICAS = 4000


def build_snapshot(
    describe_text: str,
    log_dirs_text: str | None,
    inventory: Mapping[int, BrokerCapacity],
    *,
    cluster: str,
    taken_at: str | None = None,
    sources: Mapping[str, str] | None = None,
    broker_configs_text: str | None = None,
) -> ClusterSnapshot:
    """Join the parsed Kafka tool outputs and the inventory into one snapshot.

    Parameters
    ----------
    describe_text : str
        ``kafka-topics.sh --describe`` output.
    log_dirs_text : str or None
        ``kafka-log-dirs.sh --describe`` output; None for a snapshot without sizes.
    inventory : mapping of int to BrokerCapacity
        ``parse_inventory_toml`` or ``parse_capacity_json`` output.
    cluster : str
        Cluster name.
    taken_at : str, optional
        ISO-8601 time the outputs were captured.
    sources : mapping, optional
        File names for error messages and cordon sources, keys ``describe``, ``log_dirs``, ``broker_configs`` and
        ``inventory``.
    broker_configs_text : str, optional
        ``kafka-configs.sh --describe --entity-type brokers [--all]`` output, for ``cordoned.log.dirs``.

    Returns
    -------
    ClusterSnapshot

    Raises
    ------
    InputError
        Malformed tool output (naming the file and line), a topic whose partition lines disagree with its
        ``PartitionCount``, or an empty inventory.

    Examples
    --------
    >>> from pools.kafka_formats.inventory import BrokerCapacity
    >>> text = "Topic: t\\tTopicId: x\\tPartitionCount: 1\\tReplicationFactor: 1\\tConfigs: \\n" \\
    ...        "\\tTopic: t\\tPartition: 0\\tLeader: 1\\tReplicas: 1\\tIsr: 1\\n"
    >>> snap = build_snapshot(text, None, {1: BrokerCapacity(1, 10, 10, 10)}, cluster="c")
    >>> snap.partitions[0].replicas, snap.brokers[0].capacity.replicas
    ((1,), 4000)
    """
    names = dict(sources or {})
    describe_source = names.get("describe", "<kafka-topics --describe>")
    topics = parse_topics_describe(describe_text, source=describe_source)
    report = None
    if log_dirs_text is not None:
        log_dirs_source = names.get("log_dirs", "<kafka-log-dirs --describe>")
        report = parse_log_dirs(log_dirs_text, source=log_dirs_source)
    placement = _placement(report)
    if report is not None:
        _check_same_cluster(topics, placement, describe_source, f"{log_dirs_source}:{report.line}")
    partitions = []
    for t in topics:
        states = _partitions(t, placement if report is not None else None, describe_source)
        _check_topic(t, describe_source)
        partitions += states
    seen = {b for p in partitions for b in (*p.replicas, *p.isr)}
    if report is not None:
        seen |= {b.broker for b in report.brokers}
    errors = () if report is None else tuple(LogDirError(b, d, e) for b, d, e in report.log_dir_errors)
    configs_source = names.get("broker_configs", "<kafka-configs --describe>")
    cordons = {} if broker_configs_text is None else cordons_from_configs(
        parse_broker_configs(broker_configs_text, source=configs_source))
    return ClusterSnapshot(
        cluster=cluster,
        brokers=_cordoned(_brokers(inventory, seen), report, cordons, names),
        topics=tuple(
            TopicState(t.topic, t.topic_id, dict(t.configs), t.marked_for_deletion) for t in topics
        ),
        partitions=tuple(partitions),
        log_dir_errors=errors,
        taken_at=taken_at,
    )


def _check_topic(t: TopicDescription, source: str) -> None:
    """Kafka's invariants between a topic's header and its partition lines (see the module docstring)."""
    where = f"{source}:{t.line}"
    problem = topic_name_problem(t.topic)
    if problem is not None:
        raise InputError(f"{source}:{t.line or t.partitions[0].line}: Topic: {problem}")
    config = topic_config_problem(t.configs)
    if config is not None:
        raise InputError(f"{where}: Configs: {config[0]}: {config[1]}")
    seen: set[int] = set()
    for p in t.partitions:
        if p.partition in seen:
            raise InputError(f"{source}:{p.line}: Partition: {t.topic}-{p.partition} is described twice")
        seen.add(p.partition)
    if not t.line or not t.partitions:
        return
    if t.partition_count != len(t.partitions) or seen != set(range(t.partition_count)):
        raise InputError(
            f"{where}: PartitionCount: topic {t.topic!r} has PartitionCount {t.partition_count} but its partition "
            f"lines are {_ranges(sorted(seen))}; expected partitions 0..{t.partition_count - 1}"
        )
    first = min(t.partitions, key=lambda p: p.partition)
    rf = _printed_replication_factor(first)
    if t.replication_factor not in (rf, len(first.replicas)):
        raise InputError(
            f"{where}: ReplicationFactor: topic {t.topic!r} has ReplicationFactor {t.replication_factor} but "
            f"partition {first.partition} has {rf} replica(s) ({','.join(map(str, first.replicas))}"
            f"{' minus adding ' + ','.join(map(str, first.adding_replicas)) if rf != len(first.replicas) else ''})"
        )


def _check_same_cluster(topics: list[TopicDescription], placement: Mapping[tuple[str, int, int], tuple[str, int]],
                        describe_source: str, log_dirs_where: str) -> None:
    """The describe and log-dirs captures describe one cluster (see the module docstring)."""
    if not placement:
        return
    example = "{}-{} on broker {}".format(*next(iter(placement)))
    if not topics:
        raise InputError(
            f"{describe_source}: expected kafka-topics --describe output of the cluster whose log dirs "
            f"{log_dirs_where} lists ({len(placement)} replica(s), e.g. {example}), got no topic at all"
        )
    holders = {(p.topic, p.partition): {*p.replicas, *p.adding_replicas, *p.removing_replicas}
               for t in topics for p in t.partitions}
    unknown = [k for k in placement if (k[0], k[1]) not in holders]
    elsewhere = [k for k in placement if (k[0], k[1]) in holders and k[2] not in holders[k[0], k[1]]]
    for found, what in ((unknown, f"of partitions {describe_source} does not describe"),
                        (elsewhere, f"on brokers that {describe_source} does not list among the partition's replicas")):
        if found:
            _log.warning("%s: %d replica(s) %s, e.g. %s-%s on broker %s: left out of the snapshot (a topic created "
                         "or deleted, or a reassignment finishing, between the two captures?)",
                         log_dirs_where, len(found), what, *found[0])


def _printed_replication_factor(p: PartitionDescription) -> int:
    """The ReplicationFactor ``kafka-topics.sh`` prints for a topic whose first partition is ``p``.

    ``TopicCommand.getReplicationFactor``: while a reassignment is in progress (an adding or removing replica is
    among the replicas) it is the replicas less the adding ones, else the replica count. The tool reads the
    replicas (DescribeTopics) and the reassignment (ListPartitionReassignments) in two calls, so a capture taken
    while a reassignment finishes may print either count; the caller accepts both.
    """
    changing = set(p.adding_replicas) | set(p.removing_replicas)
    return len(p.replicas) - len(p.adding_replicas) if changing & set(p.replicas) else len(p.replicas)


def _ranges(ids: list[int]) -> str:
    if not ids:
        return "none"
    shown = ",".join(map(str, ids[:10]))
    return shown + (f",... ({len(ids)} lines)" if len(ids) > 10 else "")


def _placement(report: LogDirsReport | None) -> dict[tuple[str, int, int], tuple[str, int]]:
    """``(topic, partition, broker) -> (log_dir, size)`` of current replicas (future copies skipped)."""
    out: dict[tuple[str, int, int], tuple[str, int]] = {}
    if report is None:
        return out
    for b in report.brokers:
        for d in b.log_dirs:
            for r in d.replicas:
                if not r.is_future:
                    out[(r.topic, r.partition, b.broker)] = (d.log_dir, r.size)
    return out


def _partitions(
    t: TopicDescription, placement: dict[tuple[str, int, int], tuple[str, int]] | None, source: str
) -> list[PartitionState]:
    out = []
    for p in t.partitions:
        log_dirs: tuple[str | None, ...] = ()
        sizes: tuple[int | None, ...] = ()
        if placement is not None:
            found = [placement.get((p.topic, p.partition, b)) for b in p.replicas]
            log_dirs = tuple(f[0] if f else None for f in found)
            sizes = tuple(f[1] if f else None for f in found)
        state = PartitionState(
            topic=p.topic,
            partition=p.partition,
            replicas=p.replicas,
            leader=p.leader,
            isr=p.isr,
            adding_replicas=p.adding_replicas,
            removing_replicas=p.removing_replicas,
            elr=p.elr,
            last_known_elr=p.last_known_elr,
            log_dirs=log_dirs,
            sizes=sizes,
        )
        problem = partition_problem(state)
        if problem is not None:
            column = _COLUMNS.get(problem[0].split("[")[0], problem[0])
            raise InputError(f"{source}:{p.line}: {column}: {t.topic}-{p.partition}: {problem[1]}")
        out.append(state)
    return out


#: snapshot field → the describe column it comes from, for messages.
_COLUMNS = {"replicas": "Replicas", "partition": "Partition", "leader": "Leader", "isr": "Isr",
            "adding_replicas": "Adding Replicas", "removing_replicas": "Removing Replicas", "elr": "Elr",
            "last_known_elr": "LastKnownElr", "sizes": "size (kafka-log-dirs)"}


def _brokers(inventory: Mapping[int, BrokerCapacity], seen: set[int]) -> tuple[Broker, ...]:
    if not inventory:
        raise InputError("inventory: expected at least one broker")
    ids = {b for b in inventory if b != DEFAULT_BROKER_ID}
    if DEFAULT_BROKER_ID in inventory:
        ids |= seen
    out = []
    for broker_id in sorted(ids):
        c = capacity_for(dict(inventory), broker_id)
        replicas = c.max_replicas if c.max_replicas is not None else DEFAULT_MAX_REPLICAS
        out.append(Broker(broker_id, c.rack, Capacity(c.nw_in, c.nw_out, c.disk, replicas), c.pool,
                          cordoned=c.cordoned, cordoned_log_dirs=c.cordoned_log_dirs,
                          log_dir_capacities=c.log_dir_capacities))
    return tuple(out)


def _cordoned(brokers: tuple[Broker, ...], report: LogDirsReport | None, cordons: Mapping[int, BrokerCordon],
              names: Mapping[str, str]) -> tuple[Broker, ...]:
    """``brokers`` with their log dirs (from ``report``) and every cordon joined, each with its source (see the
    module docstring)."""
    listed = {} if report is None else {b.broker: b.log_dirs for b in report.brokers}
    inventory = names.get("inventory", "inventory")
    configs = names.get("broker_configs", "<kafka-configs --describe>")
    log_dirs = names.get("log_dirs", "<kafka-log-dirs --describe>")
    out = []
    for b in brokers:
        dirs = tuple(d.log_dir for d in listed.get(b.id, ()))
        cordon = cordons.get(b.id, BrokerCordon(b.id))
        marked = tuple(d.log_dir for d in listed.get(b.id, ()) if d.cordoned)
        for given, source, field in ((b.cordoned_log_dirs, inventory, "cordoned_log_dirs"),
                                     (cordon.log_dirs, configs, CORDONED_LOG_DIRS),
                                     ([d for d, _ in b.log_dir_capacities], inventory, "log_dir_capacities")):
            unknown = sorted(set(given) - set(dirs)) if dirs else []
            if unknown:
                raise InputError(f"{source}: broker {b.id}: {field}: {unknown[0]!r} is not one of its log dirs "
                                 f"{list(dirs)} (kafka-log-dirs.sh)")
        sized = dict(b.log_dir_capacities)
        unsized = [d for d in dirs if d not in sized]
        if sized and (sum(sized.values()) > b.capacity.disk or (unsized and sum(sized.values()) >= b.capacity.disk)):
            raise InputError(f"{inventory}: broker {b.id}: log_dir_capacities: the dirs given sum to "
                             f"{sum(sized.values())} bytes, leaving nothing of its {int(b.capacity.disk)}-byte disk "
                             f"for {', '.join(unsized) or 'the rest'}")
        value = ALL_LOG_DIRS if cordon.all_log_dirs else ",".join(cordon.log_dirs)
        sources = [*((("*", f"{inventory} (cordoned = true)"),) if b.cordoned else ()),
                   *((d, f"{inventory} (cordoned_log_dirs)") for d in b.cordoned_log_dirs),
                   *((("*", config_cordon_source(configs, value)),) if cordon.all_log_dirs else ()),
                   *((d, config_cordon_source(configs, value)) for d in cordon.log_dirs),
                   *((d, marked_cordon_source(log_dirs)) for d in marked)]
        out.append(Broker(b.id, b.rack, b.capacity, b.pool, cordoned=b.cordoned or cordon.all_log_dirs,
                          cordoned_log_dirs=(*b.cordoned_log_dirs, *cordon.log_dirs, *marked), log_dirs=dirs,
                          cordon_sources=tuple(sources), log_dir_capacities=b.log_dir_capacities))
    return tuple(out)
