"""The captures `poolplan progress` reads while a bundle runs, checked against the bundle and put in time order.

``kafka-log-dirs.sh --describe`` and ``kafka-topics.sh --describe`` captures are read with Kafka-exact parsers
(`pools.kafka_formats`) and carry their time as `pools.capture_time` reads it (the capture's stamp line, else the
file name's stamp). Captures are ordered by those times, whatever order they are given in; when none carries a
time they keep the order given, ``interval`` seconds apart, and log-dirs captures whose copied bytes shrink from
one to the next are refused as out of order. Captures of one kind carry a time all or none, and no two the same.

A capture of another cluster is refused: one that names none of the bundle's brokers, none of its partitions, or
whose bundle partitions all sit on brokers that neither their replicas before the bundle nor any of their targets
name. A partition that alone sits elsewhere (someone else moved it) is reported as diverged by `misplaced`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pools.capture_time import captured_at, iso_time
from pools.errors import InputError
from pools.files import read_text
from pools.kafka_formats.log_dirs import parse_log_dirs
from pools.kafka_formats.topics_describe import PartitionDescription, parse_topics_describe
from pools.snapshot import TopicState

__all__ = ["LOG_DIRS_OPTION", "LogDirsCapture", "DescribeCapture", "read_log_dirs", "read_describes",
           "misplaced"]

#: The option of ``poolplan progress`` that gives the log-dirs captures (its messages name it).
LOG_DIRS_OPTION = "--log-dirs-capture"

Key = tuple[str, int]


@dataclass(frozen=True)
class LogDirsCapture:
    """One log-dirs capture: its file, its time (seconds; None until ordered when it carries none) and each
    (partition, broker)'s current replica size."""

    path: str
    time: float | None
    sizes: Mapping[tuple[Key, int], int]

    def holders(self) -> dict[Key, set[int]]:
        """The brokers holding each partition."""
        out: dict[Key, set[int]] = {}
        for key, broker in self.sizes:
            out.setdefault(key, set()).add(broker)
        return out


@dataclass(frozen=True)
class DescribeCapture:
    """One ``kafka-topics.sh --describe`` capture: its file, its time (as `LogDirsCapture`'s), its partitions and
    its topics' configs."""

    path: str
    time: float | None
    partitions: Mapping[Key, PartitionDescription]
    topics: Mapping[str, TopicState]

    def holders(self) -> dict[Key, set[int]]:
        """The brokers each partition's ``Replicas:`` names (a running reassignment's adding ones included)."""
        return {k: set(p.replicas) for k, p in self.partitions.items()}


def read_log_dirs(paths: Sequence[str | Path], allowed: Mapping[Key, set[int]], *,
                  interval: float, copied: Callable[[LogDirsCapture], int]) -> list[LogDirsCapture]:
    """The log-dirs captures oldest first (see the module docstring); ``allowed`` gives each bundle partition the
    brokers it may sit on, ``copied`` the bytes of the bundle's new replicas in a capture (the order check).

    Raises
    ------
    InputError
        A malformed capture, one of another cluster, captures with and without times or with the same time, or
        unstamped captures whose copied bytes shrink.
    """
    out = []
    for path in paths:
        time, text = captured_at(read_text(path), Path(path).name, source=str(path))
        report = parse_log_dirs(text, source=str(path))
        sizes: dict[tuple[Key, int], int] = {}
        for b in report.brokers:
            for d in b.log_dirs:
                for r in d.replicas:
                    if not r.is_future:
                        key = ((r.topic, r.partition), b.broker)
                        sizes[key] = max(sizes.get(key, 0), r.size)
        capture = LogDirsCapture(str(path), time, sizes)
        _check_cluster(LOG_DIRS_OPTION, capture.path, {b.broker for b in report.brokers}, capture.holders(), allowed)
        out.append(capture)
    ordered, stamped = _ordered(LOG_DIRS_OPTION, out, interval)
    if not stamped:
        for was, now in zip(ordered, ordered[1:]):
            if copied(now) < copied(was):
                raise InputError(f"{LOG_DIRS_OPTION}: {now.path}: the bundle's new replicas hold fewer bytes than in "
                                 f"the capture given before it, {was.path} ({copied(now)} < {copied(was)}): captures "
                                 "out of order; give them oldest first or stamp them (a first line "
                                 "`date -u +%Y-%m-%dT%H:%M:%SZ`, or YYYYMMDDTHHMMSSZ in the file name)")
    return ordered


def read_describes(paths: Sequence[str | Path], allowed: Mapping[Key, set[int]], *,
                   interval: float) -> list[DescribeCapture]:
    """The ``kafka-topics.sh --describe`` captures oldest first (see the module docstring).

    Raises
    ------
    InputError
        A malformed capture, one of another cluster, a topic without its header line (a filtered capture), a
        topic whose ``TopicId`` differs between two captures, captures with and without times or with the same
        time.
    """
    out = []
    ids: dict[str, tuple[str, str]] = {}
    for path in paths:
        time, text = captured_at(read_text(path), Path(path).name, source=str(path))
        topics = parse_topics_describe(text, source=str(path))
        for t in topics:
            if not t.line:
                raise InputError(f"--describe: {path}: topic {t.topic} has partition lines but no 'Topic:' header "
                                 "(a filtered --under-replicated-partitions or --under-min-isr-partitions capture?): "
                                 "expected plain kafka-topics.sh --describe output, whose header carries the "
                                 "topic's min.insync.replicas")
            if t.topic_id is not None and ids.setdefault(t.topic, (t.topic_id, str(path)))[0] != t.topic_id:
                first, where = ids[t.topic]
                raise InputError(f"--describe: {path}: topic {t.topic} has TopicId {t.topic_id}, but {first} in "
                                 f"{where}: the topic was deleted and re-created, or the captures are of two clusters")
        parts = {(p.topic, p.partition): p for t in topics for p in t.partitions}
        capture = DescribeCapture(str(path), time, parts,
                                  {t.topic: TopicState(t.topic, t.topic_id, t.configs) for t in topics})
        brokers = {b for p in parts.values() for b in p.replicas}
        _check_cluster("--describe", capture.path, brokers, capture.holders(), allowed)
        out.append(capture)
    return _ordered("--describe", out, interval)[0]


def misplaced(holders: Mapping[Key, set[int]], allowed: Mapping[Key, set[int]]) -> dict[Key, tuple[int, ...]]:
    """Per bundle partition a capture lists, the brokers holding it that ``allowed`` does not name."""
    out = {}
    for key, brokers in holders.items():
        if key in allowed and brokers - allowed[key]:
            out[key] = tuple(sorted(brokers - allowed[key]))
    return out


def _check_cluster(option: str, path: str, brokers: set[int], holders: Mapping[Key, set[int]],
                   allowed: Mapping[Key, set[int]]) -> None:
    known = set().union(*allowed.values()) if allowed else set()
    if not brokers & known:
        raise InputError(f"{option}: {path}: names none of the bundle's brokers ({_ids(known)}): a capture of "
                         "another cluster?")
    mine = [k for k in sorted(holders) if k in allowed]
    if not mine:
        raise InputError(f"{option}: {path}: names none of the bundle's {len(allowed)} partitions (such as "
                         f"{_name(min(allowed))}): a capture of another cluster?")
    wrong = misplaced({k: holders[k] for k in mine}, allowed)
    if len(wrong) == len(mine):
        k = mine[0]
        raise InputError(f"{option}: {path}: none of the bundle's partitions it lists sits where the bundle has them "
                         f"({_name(k)} on broker(s) {_ids(holders[k])}, the bundle names {_ids(allowed[k])}): a "
                         "capture of another cluster?")


def _ordered(option: str, captures: list, interval: float) -> tuple[list, bool]:
    """``captures`` by their times (given order, ``interval`` apart, when none has one) and whether stamped."""
    untimed = [c for c in captures if c.time is None]
    if not untimed:
        out = sorted(captures, key=lambda c: c.time)
        for a, b in zip(out, out[1:]):
            if a.time == b.time:
                raise InputError(f"{option}: {b.path}: carries the same time as {a.path} ({iso_time(a.time)}); "
                                 "expected one capture per time")
        return out, True
    if len(untimed) < len(captures):
        timed = next(c for c in captures if c.time is not None)
        raise InputError(f"{option}: {untimed[0].path}: carries no time (no stamp line, no YYYYMMDDTHHMMSSZ in its "
                         f"name) while {timed.path} does; stamp every capture or none")
    return [replace(c, time=k * interval) for k, c in enumerate(captures)], False


def _ids(brokers) -> str:
    return ", ".join(map(str, sorted(brokers)))


def _name(key: Key) -> str:
    return f"{key[0]}-{key[1]}"
