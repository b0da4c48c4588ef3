"""The cluster snapshot (*contract*): brokers with racks, capacities and pool tags, and every partition.

File format (``snapshot.json``, documented in ``docs/formats.md``)::

    {"version": 1, "cluster": "prod-eu", "taken_at": "2026-11-01T00:00:00Z",
     "brokers": [{"id": 1, "rack": "r1", "pool": "payments",
                  "capacity": {"nw_in": 1.25e8, "nw_out": 1.25e8, "disk": 4e12, "replicas": 4000}}],
     "topics": [{"topic": "orders", "topic_id": "a3vf0OqaSN6sqjtAVfrOhw",
                 "configs": {"retention.ms": "604800000"}, "marked_for_deletion": false}],
     "partitions": [
      {"topic": "orders", "partition": 0, "replicas": [1, 2, 3], "leader": 1, "isr": [1, 2, 3],
       "log_dirs": ["/data", "/data", "/data"], "sizes": [4096, 4096, 4000]}
     ],
     "log_dir_errors": [{"broker": 2, "log_dir": "/data2", "error": "KafkaStorageException"}]}

Partition fields with their default value (empty lists, ``null`` ELR) are omitted when written; every
partition is written on its own line so large snapshots stay diffable. Loading then saving gives the
same bytes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson

from pools.atomic import write_text
from pools.errors import InputError
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
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0 or value != value:
                raise InputError(f"capacity.{dim}: expected a non-negative number, got {value!r}")

    def get(self, dimension: str) -> float:
        """The capacity in ``dimension`` (one of `DIMENSIONS`)."""
        return float(getattr(self, dimension))

    def to_dict(self) -> dict[str, float]:
        return {dim: getattr(self, dim) for dim in DIMENSIONS}


@dataclass(frozen=True, slots=True)
class Broker:
    """A broker: id, rack (``None`` when the cluster has no rack for it), capacity and current pool tag."""

    id: int
    rack: str | None
    capacity: Capacity
    pool: str | None = None


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
            "brokers": [
                {"id": b.id, "rack": b.rack, "pool": b.pool, "capacity": b.capacity.to_dict()} for b in self.brokers
            ],
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
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(f"{source}: no such file") from None
    try:
        with gc_paused():
            doc = orjson.loads(data)
            return snapshot_from_dict(doc, source=source)
    except orjson.JSONDecodeError:
        try:  # orjson is fast; the standard library names the line and column
            json.loads(data)
        except json.JSONDecodeError as exc:
            raise InputError(f"{source}: line {exc.lineno} column {exc.colno}: invalid JSON: {exc.msg}") from None
        raise InputError(f"{source}: invalid JSON") from None


def snapshot_from_dict(doc: Any, *, source: str = "snapshot") -> ClusterSnapshot:
    """Build a `ClusterSnapshot` from its JSON-ready form, validating every field."""
    v = _Validator(source)
    v.require(isinstance(doc, dict), "", "expected a JSON object")
    version = doc.get("version", SNAPSHOT_VERSION)
    v.require(version == SNAPSHOT_VERSION, "version", f"expected {SNAPSHOT_VERSION}, got {version!r}")
    cluster = v.string(doc.get("cluster"), "cluster")
    taken_at = doc.get("taken_at")
    v.require(taken_at is None or isinstance(taken_at, str), "taken_at", "expected an ISO-8601 string or null")
    brokers = tuple(_broker(v, b, f"brokers[{i}]") for i, b in enumerate(v.array(doc.get("brokers"), "brokers")))
    topics = tuple(_topic(v, t, f"topics[{i}]") for i, t in enumerate(v.array(doc.get("topics", []), "topics")))
    partitions = tuple(
        _partition_fast(p) or _partition(v, p, f"partitions[{i}]")
        for i, p in enumerate(v.array(doc.get("partitions"), "partitions"))
    )
    errors = tuple(
        LogDirError(
            broker=v.integer(e.get("broker"), f"log_dir_errors[{i}].broker"),
            log_dir=v.string(e.get("log_dir"), f"log_dir_errors[{i}].log_dir"),
            error=v.string(e.get("error"), f"log_dir_errors[{i}].error"),
        )
        for i, e in enumerate(v.array(doc.get("log_dir_errors", []), "log_dir_errors"))
    )
    known_topics = {t.topic for t in topics}
    topics += tuple(TopicState(topic=t) for t in sorted({p.topic for p in partitions} - known_topics))
    return ClusterSnapshot(
        cluster=cluster, brokers=brokers, topics=topics, partitions=partitions, log_dir_errors=errors, taken_at=taken_at
    )


def _in_order(partitions: Any) -> bool:
    """True when partitions are already sorted by (topic, partition), as files written by poolplan are."""
    prev_topic, prev_partition = "", -(1 << 63)
    for p in partitions:
        if p.topic < prev_topic or (p.topic == prev_topic and p.partition < prev_partition):
            return False
        prev_topic, prev_partition = p.topic, p.partition
    return True


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


def _positive_int_config(configs: Mapping[str, str], key: str) -> int | None:
    raw = configs.get(key)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise InputError(f"topic config {key}: expected an integer, got {raw!r}") from None
    return value if value >= 0 else None


class _Validator:
    """Field checks that raise `InputError` naming the source and the field path."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, expected: str) -> None:
        raise InputError(f"{self.source}: {where or 'document'}: {expected}")

    def require(self, ok: bool, where: str, expected: str) -> None:
        if not ok:
            self.fail(where, expected)

    def integer(self, value: Any, where: str) -> int:
        self.require(isinstance(value, int) and not isinstance(value, bool), where, f"expected an integer, got {value!r}")
        return value

    def number(self, value: Any, where: str) -> float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value == value and value >= 0
        self.require(ok, where, f"expected a non-negative number, got {value!r}")
        return value

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
            self.integer(x, f"{where}[{j}]")
        return tuple(items)


def _broker(v: _Validator, b: Any, where: str) -> Broker:
    v.require(isinstance(b, dict), where, "expected an object")
    cap = b.get("capacity")
    v.require(isinstance(cap, dict), f"{where}.capacity", "expected an object with nw_in, nw_out, disk, replicas")
    capacity = Capacity(**{dim: v.number(cap.get(dim), f"{where}.capacity.{dim}") for dim in DIMENSIONS})
    return Broker(
        id=v.integer(b.get("id"), f"{where}.id"),
        rack=v.optional_string(b.get("rack"), f"{where}.rack"),
        capacity=capacity,
        pool=v.optional_string(b.get("pool"), f"{where}.pool"),
    )


def _topic(v: _Validator, t: Any, where: str) -> TopicState:
    v.require(isinstance(t, dict), where, "expected an object")
    configs = t.get("configs", {})
    v.require(
        isinstance(configs, dict) and all(isinstance(x, str) for x in configs.values()),
        f"{where}.configs",
        "expected an object of string values",
    )
    deleted = t.get("marked_for_deletion", False)
    v.require(isinstance(deleted, bool), f"{where}.marked_for_deletion", "expected true or false")
    return TopicState(
        topic=v.string(t.get("topic"), f"{where}.topic"),
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
        and (sizes == () or (len(sizes) == len(replicas) and all(x is None or (type(x) is int and x >= 0) for x in sizes)))
        and (log_dirs == () or (len(log_dirs) == len(replicas) and all(x is None or type(x) is str for x in log_dirs)))
    )
    if not ok:
        return None
    return PartitionState(
        p["topic"], p["partition"], tuple(replicas), leader, tuple(isr), tuple(adding), tuple(removing),
        None if elr is None else tuple(elr), None if lke is None else tuple(lke), tuple(log_dirs), tuple(sizes),
    )


def _partition(v: _Validator, p: Any, where: str) -> PartitionState:
    v.require(isinstance(p, dict), where, "expected an object")
    replicas = v.int_list(p.get("replicas"), f"{where}.replicas")
    leader = p.get("leader")
    if leader is not None:
        v.integer(leader, f"{where}.leader")
    log_dirs = tuple(v.array(p.get("log_dirs", []), f"{where}.log_dirs"))
    sizes = tuple(v.array(p.get("sizes", []), f"{where}.sizes"))
    for name, values in (("log_dirs", log_dirs), ("sizes", sizes)):
        v.require(
            not values or len(values) == len(replicas),
            f"{where}.{name}",
            f"expected {len(replicas)} entries (one per replica), got {len(values)}",
        )
    for j, s in enumerate(sizes):
        v.require(s is None or (isinstance(s, int) and not isinstance(s, bool) and s >= 0), f"{where}.sizes[{j}]",
                  f"expected a byte count or null, got {s!r}")
    for j, d in enumerate(log_dirs):
        v.optional_string(d, f"{where}.log_dirs[{j}]")
    elr = p.get("elr")
    lke = p.get("last_known_elr")
    return PartitionState(
        topic=v.string(p.get("topic"), f"{where}.topic"),
        partition=v.integer(p.get("partition"), f"{where}.partition"),
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
