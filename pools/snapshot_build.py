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
- An inventory entry without ``max_replicas`` gets `DEFAULT_MAX_REPLICAS`.
"""

from __future__ import annotations

from collections.abc import Mapping

from pools.errors import InputError
from pools.kafka_formats.cruise_control import DEFAULT_BROKER_ID, capacity_for
from pools.kafka_formats.inventory import BrokerCapacity
from pools.kafka_formats.log_dirs import LogDirsReport, parse_log_dirs
from pools.kafka_formats.topics_describe import TopicDescription, parse_topics_describe
from pools.snapshot import Broker, Capacity, ClusterSnapshot, LogDirError, PartitionState, TopicState

__all__ = ["DEFAULT_MAX_REPLICAS", "build_snapshot"]

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
        File names for error messages, keys ``describe`` and ``log_dirs``.

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
        report = parse_log_dirs(log_dirs_text, source=names.get("log_dirs", "<kafka-log-dirs --describe>"))
    placement = _placement(report)
    partitions = []
    for t in topics:
        if t.partitions and t.partition_count != len(t.partitions):
            raise InputError(
                f"{describe_source}: topic {t.topic!r}: PartitionCount is {t.partition_count} but "
                f"{len(t.partitions)} partition line(s) follow"
            )
        partitions += _partitions(t, placement if report is not None else None)
    seen = {b for p in partitions for b in (*p.replicas, *p.isr)}
    if report is not None:
        seen |= {b.broker for b in report.brokers}
    errors = () if report is None else tuple(LogDirError(b, d, e) for b, d, e in report.log_dir_errors)
    return ClusterSnapshot(
        cluster=cluster,
        brokers=_brokers(inventory, seen),
        topics=tuple(
            TopicState(t.topic, t.topic_id, dict(t.configs), t.marked_for_deletion) for t in topics
        ),
        partitions=tuple(partitions),
        log_dir_errors=errors,
        taken_at=taken_at,
    )


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
    t: TopicDescription, placement: dict[tuple[str, int, int], tuple[str, int]] | None
) -> list[PartitionState]:
    out = []
    for p in t.partitions:
        log_dirs: tuple[str | None, ...] = ()
        sizes: tuple[int | None, ...] = ()
        if placement is not None:
            found = [placement.get((p.topic, p.partition, b)) for b in p.replicas]
            log_dirs = tuple(f[0] if f else None for f in found)
            sizes = tuple(f[1] if f else None for f in found)
        out.append(
            PartitionState(
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
        )
    return out


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
        out.append(Broker(broker_id, c.rack, Capacity(c.nw_in, c.nw_out, c.disk, replicas), c.pool))
    return tuple(out)
