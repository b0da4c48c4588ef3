"""``kafka-log-dirs.sh --describe`` output read into plain values.

Mirrors ``LogDirsCommand``: two status lines (``Querying brokers for log directories information`` and
``Received log directory information from brokers 0,1,2``) then one compact JSON line
``{"version":1,"brokers":[{"broker":0,"logDirs":[{"logDir":..,"error":..,"partitions":[{"partition":
"<topic>-<n>","size":..,"offsetLag":..,"isFuture":..}]}]}]}`` with keys in any order. Sizes are local bytes:
for a tiered topic (KIP-405) only the segments still on the broker's disk.

A broker reports once, and holds one current copy of a replica (plus at most one future copy while an
intra-broker move runs: Kafka's LogManager refuses a second): a broker or a replica listed twice is an error
naming the second entry, as is a topic name Kafka would reject (`pools.snapshot.topic_name_problem`).

The tool prints no cordon state (KIP-1066 puts ``IsCordoned`` in DescribeLogDirs v5 and
``LogDirDescription.isCordoned()``, but ``LogDirsCommand`` does not print it); a capture from a tool that adds it
as ``"isCordoned": true`` on a log dir is read, and ``kafka-configs.sh`` (`pools.kafka_formats.broker_configs`)
is the source otherwise.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pools.errors import InputError
from pools.input_limits import INT32_MAX, INT64_MAX, MAX_BROKER_ID
from pools.snapshot import topic_name_problem

__all__ = ["ReplicaInfo", "LogDirInfo", "BrokerLogDirs", "LogDirsReport", "parse_log_dirs", "replica_sizes"]


@dataclass(frozen=True, slots=True)
class ReplicaInfo:
    """One replica in one log dir; ``is_future`` while an intra-broker move copies it."""

    topic: str
    partition: int
    size: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True, slots=True)
class LogDirInfo:
    """One log dir of a broker; ``error`` is the exception class name for an offline dir; ``cordoned`` when the
    capture says ``"isCordoned": true``."""

    log_dir: str
    error: str | None
    replicas: tuple[ReplicaInfo, ...]
    cordoned: bool = False


@dataclass(frozen=True, slots=True)
class BrokerLogDirs:
    """The log dirs one broker reported."""

    broker: int
    log_dirs: tuple[LogDirInfo, ...]


@dataclass(frozen=True, slots=True)
class LogDirsReport:
    """A whole ``--describe`` run, brokers sorted by id; ``line`` is the JSON line's number in its file."""

    version: int
    brokers: tuple[BrokerLogDirs, ...]
    line: int = 0

    @property
    def log_dir_errors(self) -> tuple[tuple[int, str, str], ...]:
        """``(broker, log_dir, error)`` for every log dir reported with an error."""
        return tuple((b.broker, d.log_dir, d.error) for b in self.brokers for d in b.log_dirs if d.error)


def parse_log_dirs(text: str, *, source: str = "<kafka-log-dirs --describe>") -> LogDirsReport:
    """Parse ``kafka-log-dirs.sh --describe`` output (the status lines are optional).

    Raises
    ------
    InputError
        ``source:line: <json path>: expected ...`` for a missing JSON line, a malformed field, or a broker or
        replica listed twice.

    Examples
    --------
    >>> doc = ('{"version":1,"brokers":[{"broker":1,"logDirs":[{"logDir":"/a","error":null,"partitions":['
    ...        '{"partition":"t-0","size":5,"offsetLag":0,"isFuture":false},'
    ...        '{"partition":"t-0","size":1,"offsetLag":0,"isFuture":false}]}]}]}')
    >>> parse_log_dirs(doc, source="dirs.txt")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    pools.errors.InputError: dirs.txt:1: $.brokers[0].logDirs[0].partitions[1].partition: t-0 is listed twice for
    broker 1 (first at $.brokers[0].logDirs[0].partitions[0]); expected one current copy per broker
    """
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("{"):
            break
    else:
        raise InputError(f"{source}: expected a JSON line starting with '{{' after the status lines")
    where = f"{source}:{lineno}"
    try:
        doc = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: column {exc.colno}: invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise InputError(f"{where}: invalid JSON: nested too deeply") from None
    doc = _obj(doc, where, "$")
    version = _get(doc, "version", int, where, "$")
    if version != 1:
        raise InputError(f"{where}: $.version: expected 1, got {version!r}")
    brokers = []
    seen_brokers: dict[int, str] = {}
    for i, b in enumerate(_get(doc, "brokers", list, where, "$")):
        path = f"$.brokers[{i}]"
        b = _obj(b, where, path)
        broker = _get(b, "broker", int, where, path, MAX_BROKER_ID)
        if broker in seen_brokers:
            raise InputError(f"{where}: {path}.broker: broker {broker} is listed twice (first at "
                             f"{seen_brokers[broker]}); expected one entry per broker")
        seen_brokers[broker] = path
        dirs = []
        copies: dict[tuple[str, int, bool], str] = {}
        for j, d in enumerate(_get(b, "logDirs", list, where, path)):
            dpath = f"{path}.logDirs[{j}]"
            d = _obj(d, where, dpath)
            error = d.get("error")
            if error is not None and not isinstance(error, str):
                raise InputError(f"{where}: {dpath}.error: expected a string or null, got {error!r}")
            replicas = []
            for k, r in enumerate(_get(d, "partitions", list, where, dpath)):
                rpath = f"{dpath}.partitions[{k}]"
                replica = _replica(_obj(r, where, rpath), where, rpath)
                key = (replica.topic, replica.partition, replica.is_future)
                if key in copies:
                    copy = "future" if replica.is_future else "current"
                    raise InputError(
                        f"{where}: {rpath}.partition: {'a future copy of ' if replica.is_future else ''}"
                        f"{replica.topic}-{replica.partition} is listed twice for broker {broker} (first at "
                        f"{copies[key]}); expected one {copy} copy per broker")
                copies[key] = rpath
                replicas.append(replica)
            cordoned = d.get("isCordoned", False)
            if not isinstance(cordoned, bool):
                raise InputError(f"{where}: {dpath}.isCordoned: expected true or false, got {cordoned!r}")
            dirs.append(LogDirInfo(_get(d, "logDir", str, where, dpath), error, tuple(replicas), cordoned))
        brokers.append(BrokerLogDirs(broker, tuple(dirs)))
    return LogDirsReport(version, tuple(sorted(brokers, key=lambda b: b.broker)), lineno)


def replica_sizes(report: LogDirsReport) -> dict[tuple[str, int], dict[int, int]]:
    """``(topic, partition) -> {broker: size}`` of the current replicas; future replicas are left out."""
    sizes: dict[tuple[str, int], dict[int, int]] = {}
    for b in report.brokers:
        for d in b.log_dirs:
            for r in d.replicas:
                if not r.is_future:
                    sizes.setdefault((r.topic, r.partition), {})[b.broker] = r.size
    return dict(sorted(sizes.items()))


def _obj(value: Any, where: str, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputError(f"{where}: {path}: expected a JSON object, got {value!r}")
    return value


def _get(obj: dict[str, Any], key: str, kind: type, where: str, path: str, high: int = INT64_MAX) -> Any:
    names = {int: f"an integer in 0..{high}", str: "a string", list: "a JSON array", bool: "true or false"}
    if key not in obj:
        raise InputError(f"{where}: {path}.{key}: missing (expected {names[kind]})")
    value = obj[key]
    if not isinstance(value, kind) or (kind is int and (isinstance(value, bool) or not 0 <= value <= high)):
        raise InputError(f"{where}: {path}.{key}: expected {names[kind]}, got {value!r}")
    return value


def _replica(r: dict[str, Any], where: str, path: str) -> ReplicaInfo:
    name = _get(r, "partition", str, where, path)
    topic, dash, number = name.rpartition("-")
    if not dash or not topic or not number.isdigit() or int(number) > INT32_MAX:
        raise InputError(f"{where}: {path}.partition: expected '<topic>-<partition>', got {name!r}")
    problem = topic_name_problem(topic)
    if problem is not None:
        raise InputError(f"{where}: {path}.partition: {problem}")
    return ReplicaInfo(
        topic,
        int(number),
        _get(r, "size", int, where, path),
        _get(r, "offsetLag", int, where, path),
        _get(r, "isFuture", bool, where, path),
    )
