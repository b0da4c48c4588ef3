"""The cluster snapshot (*contract*): brokers with racks, capacities and pool tags, and every partition.

File format (``snapshot.json``, documented in ``docs/formats.md``)::

    {"version": 1, "cluster": "prod-eu", "taken_at": "2026-11-01T00:00:00Z",
     "brokers": [{"id": 1, "rack": "r1", "pool": "payments",
                  "capacity": {"nw_in": 1.25e8, "nw_out": 1.25e8, "disk": 4e12, "replicas": 4000},
                  "log_dirs": ["/data", "/data2"], "cordoned_log_dirs": ["/data2"]}],
     "topics": [{"topic": "orders", "topic_id": "a3vf0OqaSN6sqjtAVfrOhw",
                 "configs": {"retention.ms": "604800000"}, "marked_for_deletion": false}],
     "partitions": [
      {"topic": "orders", "partition": 0, "replicas": [1, 2, 3], "leader": 1, "isr": [1, 2, 3],
       "log_dirs": ["/data", "/data", "/data"], "sizes": [4096, 4096, 4000]}
     ],
     "log_dir_errors": [{"broker": 2, "log_dir": "/data2", "error": "KafkaStorageException"}]}

Broker fields ``cordoned`` (false), ``cordoned_log_dirs``, ``log_dirs``, ``cordon_sources`` and ``log_dir_capacities``
(empty) and partition fields with
their default value (empty lists, ``null`` ELR) are omitted when written (so older readers' files are unchanged); every
partition is written on its own line so large snapshots stay diffable. Loading then saving gives the
same bytes.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from pools.atomic import write_text
from pools.errors import InputError
from pools.files import parse_json, read_text
from pools.input_limits import INT32_MAX, INT64_MAX, MAX_BROKER_ID, MAX_PARTITIONS_PER_TOPIC
from pools.memory import gc_paused

__all__ = [
    "DIMENSIONS",
    "Capacity",
    "Broker",
    "TopicState",
    "PartitionState",
    "LogDirError",
    "ClusterSnapshot",
    "load_snapshot",
    "save_snapshot",
    "snapshot_from_dict",
    "snapshot_to_json",
    "partition_problem",
    "topic_name_problem",
    "topic_config_problem",
    "is_iso_time",
    "config_cordon_source",
    "marked_cordon_source",
]

#: Capacity dimensions, in the order reports list them: network in and out (bytes/s), disk (bytes),
#: replica count.
DIMENSIONS: tuple[str, ...] = ("nw_in", "nw_out", "disk", "replicas")

SNAPSHOT_VERSION = 1


@dataclass(frozen=True, slots=True)
class Capacity:
    """A broker's capacity per dimension: ``nw_in``/``nw_out`` in bytes/s, ``disk`` in bytes, ``replicas``."""

    nw_in: float
    nw_out: float
    disk: float
    replicas: float

    def __post_init__(self) -> None:
        for dim in DIMENSIONS:
            value = getattr(self, dim)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value < math.inf:
                raise InputError(f"capacity.{dim}: expected a finite number >= 0, got {value!r}")

    def get(self, dimension: str) -> float:
        """The capacity in ``dimension`` (one of `DIMENSIONS`)."""
        return float(getattr(self, dimension))

    def to_dict(self) -> dict[str, float]:
        return {dim: getattr(self, dim) for dim in DIMENSIONS}


_MARKED_CORDON = " (isCordoned)"
_CONFIG_CORDON = re.compile(r" \(cordoned\.log\.dirs=([^()]*)\)$")


def config_cordon_source(capture: str, value: str) -> str:
    """A cordon's source when ``kafka-configs.sh --describe`` output (``capture``) sets ``cordoned.log.dirs=value``."""
    return f"{capture} (cordoned.log.dirs={value})"


def marked_cordon_source(capture: str) -> str:
    """A cordon's source when the ``kafka-log-dirs.sh --describe`` output (``capture``) marks the dir isCordoned."""
    return f"{capture}{_MARKED_CORDON}"


@dataclass(frozen=True, slots=True)
class Broker:
    """A broker: id, rack (``None`` when the cluster has no rack for it), capacity and current pool tag.

    ``log_dirs`` are the broker's log dirs as ``kafka-log-dirs.sh`` lists them (empty when unknown; several on a
    JBOD broker). ``cordoned_log_dirs`` take no new replica (KIP-1066, Kafka 4.3+); ``cordoned`` means the whole
    broker takes none: cordoned as such (``cordoned.log.dirs=*``) or every log dir it has is cordoned. Both lists
    are kept sorted and distinct. ``cordon_sources`` say where each cordon came from: ``(dir, source)`` pairs,
    ``*`` for the whole broker (`pools.snapshot_build` names the file and the field); `cordon_source` reads them.
    ``log_dir_capacities`` are the bytes of the dirs the inventory sizes (``(dir, bytes)`` pairs; empty: JBOD dirs
    taken as equal, `pools.pool_rules.log_dir_capacity`).

    >>> Broker(1, "r1", Capacity(1, 1, 1, 1), log_dirs=("/d2", "/d1"), cordoned_log_dirs=("/d1", "/d2")).cordoned
    True
    """

    id: int
    rack: str | None
    capacity: Capacity
    pool: str | None = None
    cordoned: bool = False
    cordoned_log_dirs: tuple[str, ...] = ()
    log_dirs: tuple[str, ...] = ()
    cordon_sources: tuple[tuple[str, str], ...] = ()
    log_dir_capacities: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "log_dirs", tuple(sorted(set(self.log_dirs))))
        object.__setattr__(self, "cordoned_log_dirs", tuple(sorted(set(self.cordoned_log_dirs))))
        object.__setattr__(self, "cordon_sources", tuple(sorted(set(self.cordon_sources))))
        object.__setattr__(self, "log_dir_capacities", tuple(sorted(self.log_dir_capacities)))
        if self.log_dirs and set(self.log_dirs) <= set(self.cordoned_log_dirs):
            object.__setattr__(self, "cordoned", True)

    def cordon_source(self, log_dir: str | None = None) -> str:
        """Where the cordon of ``log_dir`` (None: of the whole broker) came from: its sources joined by ``; ``,
        every dir's for a broker cordoned dir by dir; empty when the snapshot does not say.

        >>> b = Broker(1, None, Capacity(1, 1, 1, 1), log_dirs=("/a", "/b"), cordoned_log_dirs=("/a", "/b"),
        ...            cordon_sources=(("/a", "inventory x.toml"), ("/b", "isCordoned in y.json")))
        >>> b.cordon_source(), b.cordon_source("/b")
        ('inventory x.toml; isCordoned in y.json', 'isCordoned in y.json')
        """
        if log_dir is not None:
            keys = {"*", log_dir}
        elif any(d == "*" for d, _ in self.cordon_sources):
            keys = {"*"}
        else:
            keys = set(self.cordoned_log_dirs)
        found = sorted({s for d, s in self.cordon_sources if d in keys})
        return "; ".join(found)

    def kafka_cordon(self) -> str:
        """The ``cordoned.log.dirs`` value Kafka holds for this broker as the snapshot's captures show it (``*``, dirs
        joined by commas, empty: none): the ``kafka-configs.sh --describe`` capture's value, else the dirs
        ``kafka-log-dirs.sh`` marks ``isCordoned``. An inventory cordon is the planner's own, never a Kafka config.

        >>> sources = (("/a", "x.toml (cordoned_log_dirs)"), ("/b", config_cordon_source("c.txt", "/b")))
        >>> b = Broker(1, None, Capacity(1, 1, 1, 1), log_dirs=("/a", "/b"), cordoned_log_dirs=("/a", "/b"),
        ...            cordon_sources=sources)
        >>> b.kafka_cordon(), Broker(2, None, Capacity(1, 1, 1, 1), cordon_sources=(("/a", "x.toml"),)).kafka_cordon()
        ('/b', '')
        """
        for _, source in self.cordon_sources:
            if (configured := _CONFIG_CORDON.search(source)) is not None:
                return configured.group(1)
        return ",".join(d for d, s in self.cordon_sources if s.endswith(_MARKED_CORDON))

    def log_dir_cordoned(self, log_dir: str | None) -> bool:
        """True when a replica may not be placed in ``log_dir`` (``None``: any dir) of this broker."""
        return self.cordoned or (log_dir is not None and log_dir in self.cordoned_log_dirs)


@dataclass(frozen=True, slots=True)
class TopicState:
    """A topic's metadata: id, non-default configs as `kafka-topics.sh` prints them, deletion mark."""

    topic: str
    topic_id: str | None = None
    configs: Mapping[str, str] = field(default_factory=dict)
    marked_for_deletion: bool = False

    @property
    def retention_ms(self) -> int | None:
        """``retention.ms``; ``None`` when unset (broker default) or ``-1`` (unlimited)."""
        return _positive_int_config(self.configs, "retention.ms")

    @property
    def retention_bytes(self) -> int | None:
        """``retention.bytes`` per partition; ``None`` when unset or ``-1`` (unlimited)."""
        return _positive_int_config(self.configs, "retention.bytes")

    @property
    def min_insync_replicas(self) -> int:
        """``min.insync.replicas`` (1 when unset)."""
        return _positive_int_config(self.configs, "min.insync.replicas") or 1

    @property
    def remote_storage_enabled(self) -> bool:
        """True for a tiered topic (KIP-405): ``remote.storage.enable=true``."""
        return self.configs.get("remote.storage.enable", "false").strip().lower() == "true"

    @property
    def local_retention_ms(self) -> int | None:
        """How long a tiered topic keeps segments on the broker's disk: ``local.retention.ms``, or ``retention.ms``
        when it is ``-2`` or unset (Kafka's default); ``None`` when unlimited or not tiered.

        >>> TopicState("t", configs={"remote.storage.enable": "true", "retention.ms": "864000000",
        ...                          "local.retention.ms": "-2"}).local_retention_ms
        864000000
        """
        if not self.remote_storage_enabled:
            return None
        local = _int_config(self.configs, "local.retention.ms")
        return self.retention_ms if local is None or local == -2 else (local if local >= 0 else None)

    @property
    def local_retention_bytes(self) -> int | None:
        """Bytes a tiered topic keeps on the broker's disk per partition: ``local.retention.bytes``, or
        ``retention.bytes`` when it is ``-2`` or unset; ``None`` when unlimited or not tiered."""
        if not self.remote_storage_enabled:
            return None
        local = _int_config(self.configs, "local.retention.bytes")
        return self.retention_bytes if local is None or local == -2 else (local if local >= 0 else None)

    @property
    def compacted(self) -> bool:
        """True when ``cleanup.policy`` includes ``compact``."""
        return "compact" in self.configs.get("cleanup.policy", "")


@dataclass(frozen=True, slots=True)
class PartitionState:
    """One partition: ordered replicas (first = preferred leader), leader, ISR and per-replica placement.

    ``log_dirs`` and ``sizes`` are aligned with ``replicas`` (``None`` where unknown) or empty when the
    snapshot has no log-dir data.
    """

    topic: str
    partition: int
    replicas: tuple[int, ...]
    leader: int | None = None
    isr: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    elr: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None
    log_dirs: tuple[str | None, ...] = ()
    sizes: tuple[int | None, ...] = ()

    @property
    def size_bytes(self) -> int:
        """The largest known replica size (the partition's logical size on disk), 0 when unknown."""
        sizes = self.sizes
        if None in sizes:  # a replica the log-dirs output did not list
            return max((s for s in sizes if s is not None), default=0)
        return max(sizes) if sizes else 0

    @property
    def preferred_leader(self) -> int | None:
        return self.replicas[0] if self.replicas else None

    @property
    def reassigning(self) -> bool:
        """True while a reassignment is in progress (adding or removing replicas reported)."""
        return bool(self.adding_replicas or self.removing_replicas)


@dataclass(frozen=True, slots=True)
class LogDirError:
    """A log directory that `kafka-log-dirs.sh` reported with an error."""

    broker: int
    log_dir: str
    error: str


@dataclass(frozen=True)
class ClusterSnapshot:
    """Brokers, topics and partitions of one cluster at one time, in canonical order."""

    cluster: str
    brokers: tuple[Broker, ...]
    topics: tuple[TopicState, ...]
    partitions: tuple[PartitionState, ...]
    log_dir_errors: tuple[LogDirError, ...] = ()
    taken_at: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "brokers", tuple(sorted(self.brokers, key=lambda b: b.id)))
        object.__setattr__(self, "topics", tuple(sorted(self.topics, key=lambda t: t.topic)))
        if not _in_order(self.partitions):
            object.__setattr__(self, "partitions", tuple(sorted(self.partitions, key=lambda p: (p.topic, p.partition))))
        else:
            object.__setattr__(self, "partitions", tuple(self.partitions))
        object.__setattr__(
            self, "log_dir_errors", tuple(sorted(self.log_dir_errors, key=lambda e: (e.broker, e.log_dir)))
        )
        seen: set[int] = set()
        for b in self.brokers:
            if b.id in seen:
                raise InputError(f"snapshot {self.cluster!r}: broker {b.id} is listed twice")
            seen.add(b.id)
        parts = self.partitions
        for i in range(1, len(parts)):
            if parts[i].partition == parts[i - 1].partition and parts[i].topic == parts[i - 1].topic:
                cur = parts[i]
                raise InputError(f"snapshot {self.cluster!r}: partition {cur.topic}-{cur.partition} is listed twice")

    @cached_property
    def broker_by_id(self) -> dict[int, Broker]:
        return {b.id: b for b in self.brokers}

    @cached_property
    def topic_by_name(self) -> dict[str, TopicState]:
        return {t.topic: t for t in self.topics}

    @cached_property
    def partitions_by_topic(self) -> dict[str, tuple[PartitionState, ...]]:
        """Partitions grouped by topic, in partition order."""
        groups: dict[str, list[PartitionState]] = {}
        for p in self.partitions:
            groups.setdefault(p.topic, []).append(p)
        return {t: tuple(ps) for t, ps in groups.items()}

    @property
    def broker_ids(self) -> tuple[int, ...]:
        return tuple(b.id for b in self.brokers)

    @property
    def racks(self) -> tuple[str, ...]:
        """Distinct racks of the brokers, sorted."""
        return tuple(sorted({b.rack for b in self.brokers if b.rack is not None}))

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form (see the module docstring)."""
        return {
            "version": SNAPSHOT_VERSION,
            "cluster": self.cluster,
            "taken_at": self.taken_at,
            "brokers": [_broker_to_dict(b) for b in self.brokers],
            "topics": [
                {
                    "topic": t.topic,
                    "topic_id": t.topic_id,
                    "configs": dict(sorted(t.configs.items())),
                    "marked_for_deletion": t.marked_for_deletion,
                }
                for t in self.topics
            ],
            "partitions": [_partition_to_dict(p) for p in self.partitions],
            "log_dir_errors": [
                {"broker": e.broker, "log_dir": e.log_dir, "error": e.error} for e in self.log_dir_errors
            ],
        }


def snapshot_to_json(snapshot: ClusterSnapshot) -> str:
    """Deterministic text: sorted keys, one partition per line, trailing newline."""
    doc = snapshot.to_dict()
    partitions = doc.pop("partitions")

    def dumps(obj: Any) -> str:
        return json.dumps(obj, sort_keys=True, ensure_ascii=False, allow_nan=False)

    head = [f"  {json.dumps(k)}: {dumps(v)}" for k, v in sorted(doc.items())]
    body = ",\n".join(f"    {dumps(p)}" for p in partitions)
    head.append(f'  "partitions": [\n{body}\n  ]' if partitions else '  "partitions": []')
    head.sort(key=lambda line: line.split(":", 1)[0])
    return "{\n" + ",\n".join(head) + "\n}\n"


def save_snapshot(snapshot: ClusterSnapshot, path: str | os.PathLike[str]) -> Path:
    """Write ``snapshot`` to ``path`` atomically."""
    return write_text(path, snapshot_to_json(snapshot))


def load_snapshot(path: str | os.PathLike[str]) -> ClusterSnapshot:
    """Read and validate a ``snapshot.json``; errors name the file and the field."""
    source = str(path)
    text = read_text(path)
    with gc_paused():
        return snapshot_from_dict(parse_json(text, source), source=source)


def snapshot_from_dict(doc: Any, *, source: str = "snapshot") -> ClusterSnapshot:
    """Build a `ClusterSnapshot` from its JSON-ready form, validating every field and Kafka's invariants."""
    v = _Validator(source)
    v.require(isinstance(doc, dict), "", "expected a JSON object")
    unknown = sorted(set(doc) - _SNAPSHOT_KEYS)
    v.require(not unknown, unknown[0] if unknown else "", "unknown key")
    version = doc.get("version", SNAPSHOT_VERSION)
    v.require(version == SNAPSHOT_VERSION, "version", f"expected {SNAPSHOT_VERSION}, got {version!r}")
    cluster = v.string(doc.get("cluster"), "cluster")
    taken_at = doc.get("taken_at")
    v.require(taken_at is None or is_iso_time(taken_at), "taken_at",
        f"expected an ISO-8601 time or null, got {taken_at!r}")
    brokers = tuple(_broker(v, b, f"brokers[{i}]") for i, b in enumerate(v.array(doc.get("brokers"), "brokers")))
    v.unique((b.id for b in brokers), "brokers[{}].id", "broker {} is listed twice")
    topics = tuple(_topic(v, t, f"topics[{i}]") for i, t in enumerate(v.array(doc.get("topics", []), "topics")))
    v.unique((t.topic for t in topics), "topics[{}].topic", "topic {!r} is listed twice")
    partitions = []
    for i, p in enumerate(v.array(doc.get("partitions"), "partitions")):
        state = _partition_fast(p) or _partition(v, p, f"partitions[{i}]")
        problem = partition_problem(state)
        if problem is not None:
            v.fail(f"partitions[{i}].{problem[0]}", problem[1])
        partitions.append(state)
    v.unique(((p.topic, p.partition) for p in partitions), "partitions[{}]", "partition {0[0]}-{0[1]} is listed twice")
    names = {p.topic for p in partitions} - {t.topic for t in topics}
    for i, p in enumerate(partitions):
        if p.topic in names:
            problem = topic_name_problem(p.topic)
            if problem is not None:
                v.fail(f"partitions[{i}].topic", problem)
    errors = tuple(
        _log_dir_error(v, e, f"log_dir_errors[{i}]")
        for i, e in enumerate(v.array(doc.get("log_dir_errors", []), "log_dir_errors"))
    )
    topics += tuple(TopicState(topic=t) for t in sorted(names))
    return ClusterSnapshot(
        cluster=cluster, brokers=brokers, topics=topics, partitions=tuple(partitions), log_dir_errors=errors,
        taken_at=taken_at,
    )


_SNAPSHOT_KEYS = frozenset(("version", "cluster", "taken_at", "brokers", "topics", "partitions", "log_dir_errors"))


def _in_order(partitions: Any) -> bool:
    """True when partitions are already sorted by (topic, partition), as files written by poolplan are."""
    prev_topic, prev_partition = "", -(1 << 63)
    for p in partitions:
        if p.topic < prev_topic or (p.topic == prev_topic and p.partition < prev_partition):
            return False
        prev_topic, prev_partition = p.topic, p.partition
    return True


def _broker_to_dict(b: Broker) -> dict[str, Any]:
    out: dict[str, Any] = {"id": b.id, "rack": b.rack, "pool": b.pool, "capacity": b.capacity.to_dict()}
    if b.cordoned:
        out["cordoned"] = True
    for name in ("cordoned_log_dirs", "log_dirs"):
        if getattr(b, name):
            out[name] = list(getattr(b, name))
    if b.cordon_sources:
        out["cordon_sources"] = [[d, s] for d, s in b.cordon_sources]
    if b.log_dir_capacities:
        out["log_dir_capacities"] = dict(b.log_dir_capacities)
    return out


def _partition_to_dict(p: PartitionState) -> dict[str, Any]:
    out: dict[str, Any] = {"topic": p.topic, "partition": p.partition, "replicas": list(p.replicas), "leader": p.leader}
    out["isr"] = list(p.isr)
    for name in ("adding_replicas", "removing_replicas", "log_dirs", "sizes"):
        value = getattr(p, name)
        if value:
            out[name] = list(value)
    for name in ("elr", "last_known_elr"):
        value = getattr(p, name)
        if value is not None:
            out[name] = list(value)
    return out


def _int_config(configs: Mapping[str, str], key: str) -> int | None:
    raw = configs.get(key)
    if raw is None:
        return None
    problem = _config_value_problem(key, raw)
    if problem is not None:
        raise InputError(f"topic config {key}: {problem}")
    return int(raw)


def _positive_int_config(configs: Mapping[str, str], key: str) -> int | None:
    value = _int_config(configs, key)
    return value if value is not None and value >= 0 else None


#: Topic configs poolplan reads, with Kafka's type and smallest valid value (``-1`` = unlimited, ``-2`` = the
#: ``retention.*`` value, KIP-405).
_NUMERIC_CONFIGS = {"retention.ms": (-1, INT64_MAX), "retention.bytes": (-1, INT64_MAX),
                    "min.insync.replicas": (1, INT32_MAX), "local.retention.ms": (-2, INT64_MAX),
                    "local.retention.bytes": (-2, INT64_MAX)}
#: Kafka's ``Topic.MAX_NAME_LENGTH``.
MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,%d}" % MAX_TOPIC_NAME_LENGTH)


def _config_value_problem(key: str, raw: str) -> str | None:
    low, high = _NUMERIC_CONFIGS[key]
    try:
        value = int(raw.strip())
    except ValueError:
        return f"expected an integer in {low}..{high}, got {raw!r}"
    return None if low <= value <= high else f"expected an integer in {low}..{high}, got {raw!r}"


def is_iso_time(value: Any) -> bool:
    """True for an ISO-8601 date-time string (``2026-11-02T00:00:00Z``).

    >>> is_iso_time("2026-11-02T00:00:00Z"), is_iso_time("yesterday")
    (True, False)
    """
    if not isinstance(value, str):
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def topic_config_problem(configs: Mapping[str, str]) -> tuple[str, str] | None:
    """The first numeric topic config poolplan reads that Kafka would not accept: ``(key, expected)``, or None.

    Examples
    --------
    >>> topic_config_problem({"min.insync.replicas": "two"})
    ('min.insync.replicas', "expected an integer in 1..2147483647, got 'two'")
    >>> topic_config_problem({"retention.ms": "-1", "cleanup.policy": "compact"}) is None
    True
    """
    for key in _NUMERIC_CONFIGS:
        raw = configs.get(key)
        if raw is not None:
            problem = _config_value_problem(key, raw)
            if problem is not None:
                return key, problem
    raw = configs.get("remote.storage.enable")
    if raw is not None and raw.strip().lower() not in ("true", "false"):
        return "remote.storage.enable", f"expected true or false, got {raw!r}"
    return None


def topic_name_problem(topic: str) -> str | None:
    """Why ``topic`` is not a legal Kafka topic name, in the words of Kafka's ``Topic.validate``, or None.

    Legal: 1 to 249 (Java) characters of ASCII letters, digits, ``.``, ``_`` and ``-``, other than ``.`` and ``..``.

    Examples
    --------
    >>> topic_name_problem("orders.v1") is None
    True
    >>> print(topic_name_problem("a b!"))  # doctest: +NORMALIZE_WHITESPACE
    expected a legal topic name: Topic name is invalid: 'a b!' contains one or more characters other than ASCII
    alphanumerics, '.', '_' and '-'
    >>> print(topic_name_problem(""))
    expected a legal topic name: Topic name is invalid: the empty string is not allowed
    >>> print(topic_name_problem(".."))
    expected a legal topic name: Topic name is invalid: '..' is not allowed
    """
    if _LEGAL_TOPIC.fullmatch(topic) and topic not in (".", ".."):
        return None
    if not topic:
        reason = "the empty string is not allowed"
    elif topic in (".", ".."):
        reason = f"'{topic}' is not allowed"
    elif len(topic.encode("utf-16-le", "surrogatepass")) // 2 > MAX_TOPIC_NAME_LENGTH:  # Java's length()
        reason = f"the length of '{topic}' is longer than the max allowed length {MAX_TOPIC_NAME_LENGTH}"
    else:
        reason = f"'{topic}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    return f"expected a legal topic name: Topic name is invalid: {reason}"


def partition_problem(p: PartitionState) -> tuple[str, str] | None:
    """The first Kafka invariant ``p`` breaks, as ``(field, expected)``, or None.

    Replicas are distinct broker ids (at least one); the leader is a replica or none; ISR and ELR are distinct
    replicas; the adding and removing replicas of a reassignment are distinct broker ids, none both (they come
    from a second admin call, ListPartitionReassignments, so a capture taken as a reassignment ends may name
    replicas the first call no longer lists); sizes are Java longs >= 0.

    Examples
    --------
    >>> partition_problem(PartitionState("t", 0, (5, 5)))
    ('replicas', 'expected a non-empty list of distinct broker ids, got [5, 5]')
    >>> partition_problem(PartitionState("t", 0, (1, 2), leader=3))
    ('leader', 'expected one of the replicas [1, 2] or null, got 3')
    """
    replicas = p.replicas
    members = set(replicas)
    if (  # the common case in one expression: 1 M partitions are checked in about a second
        replicas and len(members) == len(replicas) and 0 <= min(replicas) and max(replicas) <= MAX_BROKER_ID
        and 0 <= p.partition < MAX_PARTITIONS_PER_TOPIC and (p.leader is None or p.leader in members)
        and members.issuperset(p.isr) and len(set(p.isr)) == len(p.isr)
        and not p.adding_replicas and not p.removing_replicas and not p.elr and not p.last_known_elr
        and (not p.sizes or max((x for x in p.sizes if x is not None), default=0) <= INT64_MAX)
    ):
        return None
    if not replicas or len(members) != len(replicas) or min(replicas) < 0 or max(replicas) > MAX_BROKER_ID:
        return "replicas", f"expected a non-empty list of distinct broker ids, got {list(replicas)}"
    if not 0 <= p.partition < MAX_PARTITIONS_PER_TOPIC:
        return "partition", (f"expected a partition id in 0..{MAX_PARTITIONS_PER_TOPIC - 1} (the limit of "
                              f"{MAX_PARTITIONS_PER_TOPIC} partitions per topic), got {p.partition}")
    if p.leader is not None and p.leader not in members:
        return "leader", f"expected one of the replicas {list(replicas)} or null, got {p.leader}"
    for name in ("isr", "elr", "last_known_elr"):
        values = getattr(p, name)
        if values and (len(set(values)) != len(values) or not members.issuperset(values)):
            return name, f"expected distinct brokers among the replicas {list(replicas)}, got {list(values)}"
    for name in ("adding_replicas", "removing_replicas"):
        values = getattr(p, name)
        if values and (len(set(values)) != len(values) or min(values) < 0 or max(values) > MAX_BROKER_ID):
            return name, f"expected distinct broker ids, got {list(values)}"
    if p.adding_replicas and p.removing_replicas and not set(p.adding_replicas).isdisjoint(p.removing_replicas):
        return "adding_replicas", f"a replica cannot be both added and removed, got {list(p.adding_replicas)}"
    for j, size in enumerate(p.sizes):
        if size is not None and not 0 <= size <= INT64_MAX:
            return f"sizes[{j}]", f"expected a byte count in 0..{INT64_MAX} or null, got {size}"
    return None


class _Validator:
    """Field checks that raise `InputError` naming the source and the field path."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, expected: str) -> None:
        raise InputError(f"{self.source}: {where or 'document'}: {expected}")

    def require(self, ok: bool, where: str, expected: str) -> None:
        if not ok:
            self.fail(where, expected)

    def integer(self, value: Any, where: str, low: int = -INT64_MAX - 1, high: int = INT64_MAX) -> int:
        ok = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
        self.require(ok, where, f"expected an integer in {low}..{high}, got {value!r}")
        return value

    def broker_id(self, value: Any, where: str) -> int:
        return self.integer(value, where, 0, MAX_BROKER_ID)

    def number(self, value: Any, where: str) -> float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < math.inf
        self.require(ok, where, f"expected a finite number >= 0, got {value!r}")
        return value

    def unique(self, values: Any, where: str, message: str) -> None:
        """Fail on the first repeated value; ``where`` and ``message`` are formatted with its index and value."""
        seen: set[Any] = set()
        for i, value in enumerate(values):
            if value in seen:
                self.fail(where.format(i), message.format(value))
            seen.add(value)

    def string(self, value: Any, where: str) -> str:
        self.require(isinstance(value, str), where, f"expected a string, got {value!r}")
        return value

    def optional_string(self, value: Any, where: str) -> str | None:
        self.require(value is None or isinstance(value, str), where, f"expected a string or null, got {value!r}")
        return value

    def array(self, value: Any, where: str) -> list[Any]:
        self.require(isinstance(value, list), where, "expected a JSON array")
        return value

    def int_list(self, value: Any, where: str) -> tuple[int, ...]:
        items = self.array(value, where)
        for j, x in enumerate(items):
            self.broker_id(x, f"{where}[{j}]")
        return tuple(items)

    def table(self, value: Any, where: str) -> dict[str, Any]:
        self.require(isinstance(value, dict), where, "expected a JSON object")
        return value


def _log_dir_error(v: _Validator, e: Any, where: str) -> LogDirError:
    v.table(e, where)
    return LogDirError(
        broker=v.broker_id(e.get("broker"), f"{where}.broker"),
        log_dir=v.string(e.get("log_dir"), f"{where}.log_dir"),
        error=v.string(e.get("error"), f"{where}.error"),
    )


def _broker(v: _Validator, b: Any, where: str) -> Broker:
    v.require(isinstance(b, dict), where, "expected an object")
    cap = b.get("capacity")
    v.require(isinstance(cap, dict), f"{where}.capacity", "expected an object with nw_in, nw_out, disk, replicas")
    capacity = Capacity(**{dim: v.number(cap.get(dim), f"{where}.capacity.{dim}") for dim in DIMENSIONS})
    unknown = sorted(set(b) - _BROKER_KEYS)
    v.require(not unknown, f"{where}.{unknown[0]}" if unknown else where, "unknown key")
    cordoned = b.get("cordoned", False)
    v.require(isinstance(cordoned, bool), f"{where}.cordoned", f"expected true or false, got {cordoned!r}")
    dirs = {}
    for name in ("cordoned_log_dirs", "log_dirs"):
        values = v.array(b.get(name, []), f"{where}.{name}")
        for j, d in enumerate(values):
            v.require(isinstance(d, str) and d != "", f"{where}.{name}[{j}]", f"expected a log dir path, got {d!r}")
        dirs[name] = tuple(values)
    sources = v.array(b.get("cordon_sources", []), f"{where}.cordon_sources")
    for j, pair in enumerate(sources):
        v.require(isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) and x for x in pair),
                  f"{where}.cordon_sources[{j}]", f"expected [log dir or \"*\", source], got {pair!r}")
    sized = b.get("log_dir_capacities", {})
    v.require(isinstance(sized, dict), f"{where}.log_dir_capacities", "expected an object of log dir to bytes")
    for d, n in sized.items():
        v.require(d != "" and isinstance(n, int) and not isinstance(n, bool) and n > 0,
                  f"{where}.log_dir_capacities[{d!r}]", f"expected a positive number of bytes, got {n!r}")
    return Broker(
        id=v.broker_id(b.get("id"), f"{where}.id"),
        rack=v.optional_string(b.get("rack"), f"{where}.rack"),
        capacity=capacity,
        pool=v.optional_string(b.get("pool"), f"{where}.pool"),
        cordoned=cordoned,
        cordon_sources=tuple((d, s) for d, s in sources),
        log_dir_capacities=tuple(sized.items()),
        **dirs,
    )


_BROKER_KEYS = frozenset(("id", "rack", "pool", "capacity", "cordoned", "cordoned_log_dirs", "log_dirs",
                          "cordon_sources", "log_dir_capacities"))


def _topic(v: _Validator, t: Any, where: str) -> TopicState:
    v.require(isinstance(t, dict), where, "expected an object")
    configs = t.get("configs", {})
    v.require(
        isinstance(configs, dict) and all(isinstance(x, str) for x in configs.values()),
        f"{where}.configs",
        "expected an object of string values",
    )
    problem = topic_config_problem(configs)
    if problem is not None:
        v.fail(f"{where}.configs.{problem[0]}", problem[1])
    deleted = t.get("marked_for_deletion", False)
    v.require(isinstance(deleted, bool), f"{where}.marked_for_deletion", "expected true or false")
    name = v.string(t.get("topic"), f"{where}.topic")
    problem_name = topic_name_problem(name)
    if problem_name is not None:
        v.fail(f"{where}.topic", problem_name)
    return TopicState(
        topic=name,
        topic_id=v.optional_string(t.get("topic_id"), f"{where}.topic_id"),
        configs=dict(configs),
        marked_for_deletion=deleted,
    )


_PARTITION_KEYS = frozenset(
    ("topic", "partition", "replicas", "leader", "isr", "adding_replicas", "removing_replicas", "elr",
     "last_known_elr", "log_dirs", "sizes")
)


def _ints(values: Any) -> bool:
    return type(values) is list and all(type(x) is int for x in values)


def _partition_fast(p: Any) -> PartitionState | None:
    """The common, well-formed case in one pass; ``None`` sends the entry to `_partition` for a precise error."""
    if type(p) is not dict or not _PARTITION_KEYS.issuperset(p):
        return None
    replicas, isr = p.get("replicas"), p.get("isr", ())
    leader, sizes, log_dirs = p.get("leader"), p.get("sizes", ()), p.get("log_dirs", ())
    adding, removing = p.get("adding_replicas", ()), p.get("removing_replicas", ())
    elr, lke = p.get("elr"), p.get("last_known_elr")
    ok = (
        type(p.get("topic")) is str
        and type(p.get("partition")) is int
        and _ints(replicas)
        and (leader is None or type(leader) is int)
        and (isr == () or _ints(isr))
        and (adding == () or _ints(adding))
        and (removing == () or _ints(removing))
        and (elr is None or _ints(elr))
        and (lke is None or _ints(lke))
        and (sizes == ()
            or (type(sizes) is list and len(sizes) == len(replicas)
                and all(x is None or (type(x) is int and x >= 0) for x in sizes)))
        and (log_dirs == ()
            or (type(log_dirs) is list and len(log_dirs) == len(replicas)
                and all(x is None or type(x) is str for x in log_dirs)))
    )
    if not ok:
        return None
    return PartitionState(
        p["topic"], p["partition"], tuple(replicas), leader, tuple(isr), tuple(adding), tuple(removing),
        None if elr is None else tuple(elr), None if lke is None else tuple(lke), tuple(log_dirs), tuple(sizes),
    )


def _partition(v: _Validator, p: Any, where: str) -> PartitionState:
    v.require(isinstance(p, dict), where, "expected an object")
    unknown = sorted(set(p) - _PARTITION_KEYS)
    v.require(not unknown, f"{where}.{unknown[0]}" if unknown else where, "unknown key")
    replicas = v.int_list(p.get("replicas"), f"{where}.replicas")
    v.require(bool(replicas) and len(set(replicas)) == len(replicas), f"{where}.replicas",
              f"expected a non-empty list of distinct broker ids, got {list(replicas)}")
    leader = p.get("leader")
    if leader is not None:
        v.broker_id(leader, f"{where}.leader")
    log_dirs = tuple(v.array(p.get("log_dirs", []), f"{where}.log_dirs"))
    sizes = tuple(v.array(p.get("sizes", []), f"{where}.sizes"))
    for name, values in (("log_dirs", log_dirs), ("sizes", sizes)):
        v.require(
            not values or len(values) == len(replicas),
            f"{where}.{name}",
            f"expected {len(replicas)} entries (one per replica), got {len(values)}",
        )
    for j, s in enumerate(sizes):
        v.require(s is None or (isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= INT64_MAX),
                  f"{where}.sizes[{j}]", f"expected a byte count in 0..{INT64_MAX} or null, got {s!r}")
    for j, d in enumerate(log_dirs):
        v.optional_string(d, f"{where}.log_dirs[{j}]")
    elr = p.get("elr")
    lke = p.get("last_known_elr")
    return PartitionState(
        topic=v.string(p.get("topic"), f"{where}.topic"),
        partition=v.integer(p.get("partition"), f"{where}.partition", 0, INT32_MAX),
        replicas=replicas,
        leader=leader,
        isr=v.int_list(p.get("isr", []), f"{where}.isr"),
        adding_replicas=v.int_list(p.get("adding_replicas", []), f"{where}.adding_replicas"),
        removing_replicas=v.int_list(p.get("removing_replicas", []), f"{where}.removing_replicas"),
        elr=None if elr is None else v.int_list(elr, f"{where}.elr"),
        last_known_elr=None if lke is None else v.int_list(lke, f"{where}.last_known_elr"),
        log_dirs=log_dirs,
        sizes=sizes,
    )
