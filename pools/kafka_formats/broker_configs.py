"""``kafka-configs.sh --describe --entity-type brokers`` output read into plain values, and the cordons in it.

Mirrors ``ConfigCommand.describeResourceConfig`` (Kafka 2.x to 4.x): a header per broker, ``Dynamic configs for
broker <id> are:`` (``All configs ...`` with ``--all``; ``Default configs for brokers in the cluster are:`` for the
cluster-wide defaults that a describe without ``--entity-name`` prints last), then one line per config, sorted
by name::

      cordoned.log.dirs=/data/d2 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:cordoned.log.dirs=/data/d2}

The value runs to `` sensitive=`` (a list value such as ``/data/d1,/data/d2`` keeps its commas); sensitive values
print as ``null``. Kafka 4.3 (KIP-1066) adds ``cordoned.log.dirs``: a comma-separated list of the broker's log
dirs that take no new replica, or ``*`` for all of them (the broker is cordoned).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pools.errors import InputError
from pools.input_limits import MAX_BROKER_ID

__all__ = ["CORDONED_LOG_DIRS", "ALL_LOG_DIRS", "BrokerCordon", "parse_broker_configs", "cordons_from_configs"]

#: The broker config of KIP-1066 (``ServerLogConfigs.CORDONED_LOG_DIRS_CONFIG``).
CORDONED_LOG_DIRS = "cordoned.log.dirs"
#: The ``cordoned.log.dirs`` value that cordons every log dir of the broker.
ALL_LOG_DIRS = "*"

_HEADER = re.compile(r"^(Dynamic|All) configs for broker (\S+) are:$")
_DEFAULT_HEADER = "Default configs for brokers in the cluster are:"
_ENTRY = re.compile(r"^  ([^=\s]+)=(.*?) sensitive=(?:true|false) synonyms=\{.*\}$")
_LOG_LINE = re.compile(r"^(\[[^\]]*\]\s*)?(TRACE|DEBUG|INFO|WARN|WARNING|ERROR)\b")


@dataclass(frozen=True, slots=True)
class BrokerCordon:
    """What ``cordoned.log.dirs`` says of one broker: all its dirs (``*``) or the listed ones."""

    broker: int
    all_log_dirs: bool = False
    log_dirs: tuple[str, ...] = ()


def parse_broker_configs(text: str, *, source: str = "<kafka-configs --describe>") -> dict[int | None, dict[str, str]]:
    """Read ``kafka-configs.sh --describe --entity-type brokers [--all]`` output: ``{broker: {name: value}}``.

    The cluster-wide defaults are under the key ``None``. Blank lines and log lines are skipped.

    Raises
    ------
    InputError
        ``source:line: ...`` for a config line before any header, a broker id that is not one, a broker
        described twice or a line that is neither.

    Examples
    --------
    >>> parse_broker_configs("Dynamic configs for broker 1 are:\\n"
    ...     "  cordoned.log.dirs=/d1,/d2 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:cordoned.log.dirs=/d1,/d2}\\n")
    {1: {'cordoned.log.dirs': '/d1,/d2'}}
    """
    out: dict[int | None, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip("\r\n")
        where = f"{source}:{lineno}"
        if not line.strip() or _LOG_LINE.match(line.strip()):
            continue
        header = _HEADER.match(line)
        if header is not None or line == _DEFAULT_HEADER:
            key = None if header is None else _broker_id(header.group(2), where)
            if key in out:
                raise InputError(f"{where}: broker {'defaults' if key is None else key} is described twice")
            current = out[key] = {}
            continue
        entry = _ENTRY.match(line)
        if entry is None:
            raise InputError(f"{where}: expected 'Dynamic configs for broker <id> are:' or "
                             f"'  <name>=<value> sensitive=<bool> synonyms={{...}}', got {line[:80]!r}")
        if current is None:
            raise InputError(f"{where}: a config line before any 'configs for broker <id> are:' header")
        current[entry.group(1)] = entry.group(2)
    if not out:
        raise InputError(f"{source}: expected 'Dynamic configs for broker <id> are:' lines from "
                         "kafka-configs.sh --describe --entity-type brokers")
    return out


def cordons_from_configs(configs: dict[int | None, dict[str, str]]) -> dict[int, BrokerCordon]:
    """The brokers whose ``cordoned.log.dirs`` is not empty, by id (defaults do not apply: it is per broker).

    >>> cordons_from_configs({1: {"cordoned.log.dirs": "*"}, 2: {"cordoned.log.dirs": "/d2, /d1"}, 3: {}})
    ... # doctest: +NORMALIZE_WHITESPACE
    {1: BrokerCordon(broker=1, all_log_dirs=True, log_dirs=()),
     2: BrokerCordon(broker=2, all_log_dirs=False, log_dirs=('/d1', '/d2'))}
    """
    out: dict[int, BrokerCordon] = {}
    for broker, values in sorted(((b, v) for b, v in configs.items() if b is not None)):
        dirs = sorted({d.strip() for d in values.get(CORDONED_LOG_DIRS, "").split(",") if d.strip()})
        if ALL_LOG_DIRS in dirs:
            out[broker] = BrokerCordon(broker, all_log_dirs=True)
        elif dirs:
            out[broker] = BrokerCordon(broker, log_dirs=tuple(dirs))
    return out


def _broker_id(text: str, where: str) -> int:
    if not text.isdigit() or int(text) > MAX_BROKER_ID:
        raise InputError(f"{where}: expected a broker id in 0..{MAX_BROKER_ID}, got {text!r}")
    return int(text)
