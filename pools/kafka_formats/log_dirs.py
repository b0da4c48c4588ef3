"""``kafka-log-dirs.sh --describe`` output read into plain values.

Mirrors ``LogDirsCommand``: two status lines (``Querying brokers for log directories information`` and
``Received log directory information from brokers 0,1,2``) then one compact JSON line
``{"version":1,"brokers":[{"broker":0,"logDirs":[{"logDir":..,"error":..,"partitions":[{"partition":
"<topic>-<n>","size":..,"offsetLag":..,"isFuture":..}]}]}]}`` with keys in any order. Sizes are local bytes:
for a tiered topic (KIP-405) only the segments still on the broker's disk.

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
from pools.limits import INT32_MAX, INT64_MAX, MAX_BROKER_ID

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
    """A whole ``--describe`` run, brokers sorted by id."""

    version: int
    brokers: tuple[BrokerLogDirs, ...]

    @property
    def log_dir_errors(self) -> tuple[tuple[int, str, str], ...]:
        """``(broker, log_dir, error)`` for every log dir reported with an error."""
        return tuple((b.broker, d.log_dir, d.error) for b in self.brokers for d in b.log_dirs if d.error)


def parse_log_dirs(text: str, *, source: str = "<kafka-log-dirs --describe>") -> LogDirsReport:
    """Parse ``kafka-log-dirs.sh --describe`` output (the status lines are optional).

    Raises
    ------
    InputError
        ``source:line: <json path>: expected ...`` for a missing JSON line or a malformed field.
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
    for i, b in enumerate(_get(doc, "brokers", list, where, "$")):
        path = f"$.brokers[{i}]"
        b = _obj(b, where, path)
        dirs = []
        for j, d in enumerate(_get(b, "logDirs", list, where, path)):
            dpath = f"{path}.logDirs[{j}]"
            d = _obj(d, where, dpath)
            error = d.get("error")
            if error is not None and not isinstance(error, str):
                raise InputError(f"{where}: {dpath}.error: expected a string or null, got {error!r}")
            replicas = tuple(
                _replica(_obj(r, where, f"{dpath}.partitions[{k}]"), where, f"{dpath}.partitions[{k}]")
                for k, r in enumerate(_get(d, "partitions", list, where, dpath))
            )
            cordoned = d.get("isCordoned", False)
            if not isinstance(cordoned, bool):
                raise InputError(f"{where}: {dpath}.isCordoned: expected true or false, got {cordoned!r}")
            dirs.append(LogDirInfo(_get(d, "logDir", str, where, dpath), error, replicas, cordoned))
        brokers.append(BrokerLogDirs(_get(b, "broker", int, where, path, MAX_BROKER_ID), tuple(dirs)))
    return LogDirsReport(version, tuple(sorted(brokers, key=lambda b: b.broker)))


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
    return ReplicaInfo(
        topic,
        int(number),
        _get(r, "size", int, where, path),
        _get(r, "offsetLag", int, where, path),
        _get(r, "isFuture", bool, where, path),
    )
