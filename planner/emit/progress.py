"""Where a running reassignment stands: bytes copied per batch and broker, rate, ETA, stuck partitions, throttles.

`reassignment_progress` reads what an operator can capture while a bundle (`planner.emit.bundle`) runs:

- successive ``kafka-log-dirs.sh --describe`` captures, ``interval`` seconds apart: a new replica's size on its
  destination broker is the bytes copied so far (capped at the partition's size: its largest replica on a broker
  that already held it); an intra-broker ``isFuture`` copy is not an inter-broker move and is ignored;
- optionally the output of ``kafka-reassign-partitions.sh --verify`` (Kafka's ``ReassignPartitionsCommand``:
  ``Reassignment of partition T-P is complete[d].``, ``... is still in progress.``, ``There is no active
  reassignment of partition T-P, but replica set is A rather than B.``, and, once everything is complete and
  throttles are not preserved, ``Clearing broker-level throttles ...``).

A partition is done when ``--verify`` says complete (without it: when every new replica holds the partition's
size); stuck when it copies bytes, is not done (``--verify``: still in progress; without it: started) and its
copied bytes did not grow between the last two captures; diverged when
``--verify`` reports another replica set than the bundle's. The rate is the growth between the last two
captures over ``interval``; the ETA is what is left at that rate. Throttles are still set after completion when
``--verify`` reports every partition complete without clearing them (``--preserve-throttles``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pools.errors import InputError
from pools.files import parse_json, read_text
from pools.kafka_formats.log_dirs import LogDirsReport, parse_log_dirs
from pools.kafka_formats.reassignment import parse_reassignment_json

__all__ = ["VerifyStatus", "Progress", "parse_verify", "reassignment_progress", "progress_from_dict", "DONE",
           "IN_PROGRESS", "STUCK"]

#: Exit codes of ``poolplan progress``: done, in progress, stuck (2 is bad input).
DONE, IN_PROGRESS, STUCK = 0, 1, 3

_COMPLETE = re.compile(r"^Reassignment of partition (?P<tp>.+)-(?P<p>\d+) is completed?\.$")
_RUNNING = re.compile(r"^Reassignment of partition (?P<tp>.+)-(?P<p>\d+) is still in progress\.$")
_DIVERGED = re.compile(r"^There is no active reassignment of partition (?P<tp>.+)-(?P<p>\d+), but replica set is "
                       r"(?P<now>[\d,]*) rather than (?P<want>[\d,]*)\.$")


@dataclass(frozen=True)
class VerifyStatus:
    """What ``--verify`` printed: per partition ``complete``, ``in_progress`` or ``diverged``, and whether it
    cleared the throttles."""

    states: Mapping[tuple[str, int], str]
    throttles_cleared: bool


def parse_verify(text: str, *, source: str = "<kafka-reassign-partitions --verify>") -> VerifyStatus:
    """Read ``kafka-reassign-partitions.sh --verify`` output (lines it does not know are skipped).

    >>> v = parse_verify("Status of partition reassignment:\\nReassignment of partition a-b-0 is completed.\\n"
    ...                  "Reassignment of partition t-1 is still in progress.\\n")
    >>> sorted(v.states.items()), v.throttles_cleared
    ([(('a-b', 0), 'complete'), (('t', 1), 'in_progress')], False)

    Raises
    ------
    InputError
        No ``Status of partition reassignment:`` line, or the same partition twice.
    """
    lines = [line.strip() for line in text.splitlines()]
    if "Status of partition reassignment:" not in lines:
        raise InputError(f"{source}: expected the output of kafka-reassign-partitions.sh --verify (a 'Status of "
                         "partition reassignment:' line)")
    states: dict[tuple[str, int], str] = {}
    for lineno, line in enumerate(lines, start=1):
        for pattern, state in ((_COMPLETE, "complete"), (_RUNNING, "in_progress"), (_DIVERGED, "diverged")):
            m = pattern.match(line)
            if m:
                key = (m["tp"], int(m["p"]))
                if key in states:
                    raise InputError(f"{source}:{lineno}: partition {key[0]}-{key[1]} is listed twice")
                states[key] = state
    cleared = any(line.startswith("Clearing broker-level throttles") for line in lines)
    return VerifyStatus(states, cleared)


@dataclass(frozen=True)
class Progress:
    """Where a reassignment stands (see the module docstring); bytes are copied bytes, rates bytes/s."""

    done_bytes: int
    total_bytes: int
    rate: float | None
    eta_seconds: float | None
    batches: tuple[dict, ...]
    brokers: tuple[dict, ...]
    stuck: tuple[str, ...]
    diverged: tuple[str, ...]
    throttles_left: bool
    complete: bool
    notes: tuple[str, ...] = field(default=())

    @property
    def exit_code(self) -> int:
        """`STUCK` when a partition is stuck or diverged, else `DONE` when complete, else `IN_PROGRESS`."""
        if self.stuck or self.diverged:
            return STUCK
        return DONE if self.complete else IN_PROGRESS

    def to_dict(self) -> dict:
        return {"done_bytes": self.done_bytes, "total_bytes": self.total_bytes, "rate_Bps": _r(self.rate),
                "eta_seconds": _r(self.eta_seconds), "complete": self.complete, "stuck": list(self.stuck),
                "diverged": list(self.diverged), "throttles_left": self.throttles_left,
                "batches": list(self.batches), "brokers": list(self.brokers), "exit_code": self.exit_code}


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def progress_from_dict(doc: object, *, source: str = "progress") -> Progress:
    """A `Progress` back from its JSON form (``Progress.to_dict``, ``poolplan progress --out``).

    >>> p = Progress(5, 10, 1.0, 5.0, ({"batch": 1, "done_bytes": 5, "total_bytes": 10, "replicas": 1,
    ...              "rate_Bps": 1.0, "eta_seconds": 5.0},), (), (), (), False, False)
    >>> progress_from_dict(p.to_dict()) == p
    True

    Raises
    ------
    InputError
        When a field is missing or of the wrong type (naming ``source`` and the field).
    """
    if not isinstance(doc, dict):
        raise InputError(f"{source}: expected a JSON object (poolplan progress --format json)")

    def number(d: dict, key: str, where: str, *, optional: bool = False, whole: bool = False):
        value = d.get(key)
        if value is None and optional and key in d:
            return None
        if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)) or value < 0:
            raise InputError(f"{source}: {where}{key}: expected a {'whole ' if whole else ''}number >= 0"
                             f"{' or null' if optional else ''}, got {value!r}")
        return value

    def flag(key: str) -> bool:
        if not isinstance(doc.get(key), bool):
            raise InputError(f"{source}: {key}: expected true or false, got {doc.get(key)!r}")
        return doc[key]

    def names(key: str) -> tuple[str, ...]:
        value = doc.get(key)
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise InputError(f"{source}: {key}: expected a list of topic-partition names")
        return tuple(value)

    def rows(key: str, name: str) -> tuple[dict, ...]:
        value = doc.get(key)
        if not isinstance(value, list) or not all(isinstance(r, dict) for r in value):
            raise InputError(f"{source}: {key}: expected a list of objects")
        return tuple({name: number(r, name, f"{key}[{k}].", whole=True),
                      **{f: number(r, f, f"{key}[{k}].", whole=True) for f in ("done_bytes", "total_bytes",
                                                                                "replicas")},
                      **{f: number(r, f, f"{key}[{k}].", optional=True) for f in ("rate_Bps", "eta_seconds")}}
                     for k, r in enumerate(value))

    return Progress(number(doc, "done_bytes", "", whole=True), number(doc, "total_bytes", "", whole=True),
                    number(doc, "rate_Bps", "", optional=True), number(doc, "eta_seconds", "", optional=True),
                    rows("batches", "batch"), rows("brokers", "broker"), names("stuck"), names("diverged"),
                    flag("throttles_left"), flag("complete"))


def reassignment_progress(bundle: str | Path, captures: Sequence[str | Path], *, interval: float,
                          verify: str | Path | None = None) -> Progress:
    """The `Progress` of ``bundle`` from log-dirs ``captures`` (oldest first, ``interval`` seconds apart).

    Raises
    ------
    InputError
        An unreadable or malformed bundle file or capture, no capture, or a non-positive interval.
    """
    if not captures:
        raise InputError("--log-dirs: expected at least one kafka-log-dirs.sh --describe capture")
    if not interval > 0:
        raise InputError(f"--interval: expected seconds > 0, got {interval}")
    root = Path(bundle)
    origin = _replicas(root / "rollback.json")
    steps = _steps(root, origin)
    sizes = [_sizes(parse_log_dirs(read_text(c), source=str(c))) for c in captures]
    status = parse_verify(read_text(verify), source=str(verify)) if verify is not None else None
    states = status.states if status is not None else {}
    final = _replicas(root / "reassignment.json")
    size = {}  # the partition's size: its largest current replica in any capture
    for capture in sizes:
        for (key, _), value in capture.items():
            size[key] = max(size.get(key, 0), value)
    copies = []
    for batch, moves in steps:
        for key, before, after in moves:
            for b in (x for x in after if x not in before):
                total = size.get(key, 0)
                now = total if states.get(key) == "complete" else min(sizes[-1].get((key, b), 0), total)
                was = min(sizes[-2].get((key, b), 0), total) if len(sizes) > 1 else now
                copies.append({"batch": batch, "partition": key, "broker": b, "total": total, "done": now,
                               "growth": now - was})
    moving = len(sizes) > 1
    open_ = {c["partition"] for c in copies if c["done"] < c["total"]}
    finished = {k for k in final if states.get(k) == "complete" or (k not in states and k not in open_)}
    grew = {c["partition"] for c in copies if c["growth"] > 0}
    started = {c["partition"] for c in copies if c["done"] > 0}
    copying = {c["partition"] for c in copies if c["total"] > 0}  # a reorder copies nothing: no bytes to watch
    stuck = tuple(f"{t}-{p}" for (t, p) in sorted(final) if moving and (t, p) in copying and (t, p) not in finished
                  and (t, p) not in grew
                  and (states.get((t, p)) == "in_progress" or ((t, p) not in states and (t, p) in started)))
    diverged = tuple(f"{t}-{p}" for (t, p), s in sorted(states.items()) if s == "diverged")
    complete = len(finished) == len(final)
    throttles = bool(status is not None and complete and final and all(states.get(k) == "complete" for k in final)
                     and not status.throttles_cleared)
    done, total = sum(c["done"] for c in copies), sum(c["total"] for c in copies)
    rate, eta = _rate(copies, interval, moving)
    return Progress(done, total, rate, eta, _table(copies, "batch", interval, moving),
                    _table(copies, "broker", interval, moving), stuck, diverged, throttles, complete)


def _rate(copies: list[dict], interval: float, moving: bool) -> tuple[float | None, float | None]:
    """Bytes/s copied between the last two captures, and the seconds left at that rate."""
    if not moving:
        return None, None
    rate = sum(max(c["growth"], 0) for c in copies) / interval
    left = sum(c["total"] - c["done"] for c in copies)
    return rate, (left / rate if rate > 0 else (0.0 if left == 0 else None))


def _replicas(path: Path) -> dict[tuple[str, int], tuple[int, ...]]:
    """Target replicas per partition of a reassignment file, read as ``--execute`` reads it."""
    text = read_text(path)
    try:
        entries = parse_reassignment_json(text)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None
    return {(e.topic, e.partition): e.replicas for e in entries}


def _steps(root: Path, origin: Mapping[tuple[str, int], tuple[int, ...]]) -> list[tuple[int, list]]:
    """Per batch (index, [(partition, replicas before the batch, after it)]), the batches run in order."""
    index = parse_json(read_text(root / "batches" / "index.json"), str(root / "batches" / "index.json"))
    if not isinstance(index, list):
        raise InputError(f"{root / 'batches' / 'index.json'}: expected a list of batches")
    state = dict(origin)
    out = []
    for k, row in enumerate(index):
        try:
            batch, name = int(row["batch"]), str(row["file"])
        except (KeyError, TypeError, ValueError):
            raise InputError(f"{root / 'batches' / 'index.json'}: [{k}]: expected 'batch' and 'file'") from None
        moves = []
        for key, after in _replicas(root / "batches" / name).items():
            moves.append((key, state.get(key, ()), after))
            state[key] = after
        out.append((batch, moves))
    return out


def _sizes(report: LogDirsReport) -> dict[tuple[tuple[str, int], int], int]:
    """Size of each (partition, broker)'s current (not future) replica."""
    out: dict[tuple[tuple[str, int], int], int] = {}
    for b in report.brokers:
        for d in b.log_dirs:
            for r in d.replicas:
                if not r.is_future:
                    key = ((r.topic, r.partition), b.broker)
                    out[key] = max(out.get(key, 0), r.size)
    return out


def _table(copies: list[dict], name: str, interval: float, moving: bool) -> tuple[dict, ...]:
    """Per batch or destination broker: bytes done and total, new replicas, rate and ETA."""
    groups: dict[int, list[dict]] = {}
    for c in copies:
        groups.setdefault(c[name], []).append(c)
    out = []
    for key in sorted(groups):
        rate, eta = _rate(groups[key], interval, moving)
        out.append({name: key, "done_bytes": sum(c["done"] for c in groups[key]),
                    "total_bytes": sum(c["total"] for c in groups[key]), "replicas": len(groups[key]),
                    "rate_Bps": _r(rate), "eta_seconds": _r(eta)})
    return tuple(out)
