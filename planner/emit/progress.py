"""Where a running reassignment stands, and whether to stop it: bytes per batch and broker, rate, ETA, stuck, slow
and diverged copies, the ISR, min ISR and leaders, throttles left, and the commands that stop cleanly.

`reassignment_progress` reads what an operator can capture while a bundle (`planner.emit.bundle`) runs, in any
order (`planner.emit.captures` orders them by their own times and refuses captures of another cluster):

- ``kafka-log-dirs.sh --describe`` captures: a new replica's size on its destination broker is the bytes copied so
  far (capped at the partition's size: its largest replica on a broker that already held it); an intra-broker
  ``isFuture`` copy is not an inter-broker move and is ignored;
- optionally ``kafka-topics.sh --describe`` captures: the newest says which new replicas joined the ISR, which
  partitions are under their min ISR (as ``--under-min-isr-partitions`` lists them: no leader, or fewer in-sync
  replicas than ``min.insync.replicas``) and, of the finished partitions, which are not led by their preferred
  (first) replica; an earlier capture's under-min-ISR partitions that recovered are listed apart;
- optionally the output of ``kafka-reassign-partitions.sh --verify`` (Kafka's ``ReassignPartitionsCommand``:
  ``Reassignment of partition T-P is complete[d].``, ``... is still in progress.``, ``There is no active
  reassignment of partition T-P, but replica set is A rather than B.``, and, once everything is complete and
  throttles are not preserved, ``Clearing broker-level throttles ...``).

A partition is done when ``--verify`` says complete (without it: when the newest describe capture shows its
target replicas and no reassignment; without either: when every new replica holds the partition's size); stuck
when it copies bytes, is not done (``--verify``: still in progress; without it: started) and its copied bytes
did not grow between the last two captures; slow when a copy under way grew less over the last `SLOW_WINDOW`
captures than ``slow_share`` of its part of the batch's throttle (the throttle over that batch's copies still
running onto the same broker); diverged when ``--verify`` reports another replica set, or a capture shows a
replica on a broker that neither the partition's replicas before the bundle nor its targets name. The rate is
the growth between the last two captures over the time between them; the ETA is what is left at that rate.
Throttles are still set after completion when ``--verify`` reports every partition complete without clearing
them (``--preserve-throttles``).

Stop states (stuck, diverged, under min ISR) come with their evidence and the commands that stop the running
batch (the first with a partition not done) cleanly: its ``--cancel`` and the throttle configs to delete, as
Kafka's ``clearAllThrottles`` deletes them (`BROKER_THROTTLES`, `TOPIC_THROTTLES`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from planner.emit.captures import (
    LOG_DIRS_OPTION, DescribeCapture, LogDirsCapture, misplaced, read_describes, read_log_dirs,
)
from planner.emit.runbook import BOOTSTRAP_PLACEHOLDER
from pools.errors import InputError
from pools.files import parse_json, read_text
from pools.kafka_formats.reassignment import parse_reassignment_json
from pools.units import format_bytes

__all__ = ["VerifyStatus", "Progress", "parse_verify", "reassignment_progress", "progress_from_dict", "DONE",
           "IN_PROGRESS", "STOP", "SLOW_SHARE", "SLOW_WINDOW", "BROKER_THROTTLES", "TOPIC_THROTTLES"]

#: Exit codes of ``poolplan progress``: done, in progress, stop (stuck, diverged or under min ISR: the operator
#: acts). 2 (bad input) and 3 (a failure that is not the input's) mean what they mean for every command.
DONE, IN_PROGRESS, STOP = 0, 1, 4
#: A copy is slow below this share of its part of the batch's throttle (``--slow-share``) ...
SLOW_SHARE = 0.1
#: ... over this many of the last log-dirs captures (all when fewer).
SLOW_WINDOW = 3
#: The configs Kafka's ``--execute --throttle`` sets and ``clearAllThrottles`` deletes, on brokers and on topics.
BROKER_THROTTLES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate",
                    "replica.alter.log.dirs.io.max.bytes.per.second")
TOPIC_THROTTLES = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")

_COMPLETE = re.compile(r"^Reassignment of partition (?P<tp>.+)-(?P<p>\d+) is completed?\.$")
_RUNNING = re.compile(r"^Reassignment of partition (?P<tp>.+)-(?P<p>\d+) is still in progress\.$")
_DIVERGED = re.compile(r"^There is no active reassignment of partition (?P<tp>.+)-(?P<p>\d+), but replica set is "
                       r"(?P<now>[\d,]*) rather than (?P<want>[\d,]*)\.$")


@dataclass(frozen=True)
class VerifyStatus:
    """What ``--verify`` printed: per partition ``complete``, ``in_progress`` or ``diverged``, whether it cleared the
    throttles, and for a diverged partition the line that says so."""

    states: Mapping[tuple[str, int], str]
    throttles_cleared: bool
    lines: Mapping[tuple[str, int], str] = field(default_factory=dict)


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
    said: dict[tuple[str, int], str] = {}
    for lineno, line in enumerate(lines, start=1):
        for pattern, state in ((_COMPLETE, "complete"), (_RUNNING, "in_progress"), (_DIVERGED, "diverged")):
            m = pattern.match(line)
            if m:
                key = (m["tp"], int(m["p"]))
                if key in states:
                    raise InputError(f"{source}:{lineno}: partition {key[0]}-{key[1]} is listed twice")
                states[key] = state
                if state == "diverged":
                    said[key] = line
    cleared = any(line.startswith("Clearing broker-level throttles") for line in lines)
    return VerifyStatus(states, cleared, said)


@dataclass(frozen=True)
class Progress:
    """Where a reassignment stands (see the module docstring); bytes are copied bytes, rates bytes/s.

    ``captures`` names the captures read, oldest first, with their times (seconds since the epoch, or ``k`` ×
    interval when they carry none); ``slow`` rows name a copy's partition, destination broker, batch, rate and
    part of the throttle; ``isr`` lists the new replicas ``joined`` and ``pending`` (empty without a describe
    capture); ``under_min_isr`` rows give the partition, leader, ISR, min ISR and capture; ``stop`` the
    ``reasons`` and ``commands`` when it says stop.
    """

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
    captures: dict = field(default_factory=dict)
    slow: tuple[dict, ...] = ()
    slow_share: float = SLOW_SHARE
    isr: dict = field(default_factory=dict)
    under_min_isr: tuple[dict, ...] = ()
    was_under_min_isr: tuple[dict, ...] = ()
    leaders_not_preferred: tuple[dict, ...] = ()
    stop: dict = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        """`STOP` when a partition is stuck, diverged or under its min ISR; else `DONE` when complete and every
        finished partition is led by its preferred replica; else `IN_PROGRESS`."""
        if self.stuck or self.diverged or self.under_min_isr:
            return STOP
        return DONE if self.complete and not self.leaders_not_preferred else IN_PROGRESS

    def to_dict(self) -> dict:
        return {"done_bytes": self.done_bytes, "total_bytes": self.total_bytes, "rate_Bps": _r(self.rate),
                "eta_seconds": _r(self.eta_seconds), "complete": self.complete, "stuck": list(self.stuck),
                "diverged": list(self.diverged), "throttles_left": self.throttles_left,
                "batches": list(self.batches), "brokers": list(self.brokers), "captures": self.captures,
                "slow": list(self.slow), "slow_share": self.slow_share, "isr": self.isr,
                "under_min_isr": list(self.under_min_isr), "was_under_min_isr": list(self.was_under_min_isr),
                "leaders_not_preferred": list(self.leaders_not_preferred), "stop": self.stop,
                "exit_code": self.exit_code}


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
    doc = dict(doc)

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

    def objects(key: str) -> tuple[dict, ...]:  # absent in a file written before the field existed
        value = doc.get(key, [])
        if not isinstance(value, list) or not all(isinstance(r, dict) for r in value):
            raise InputError(f"{source}: {key}: expected a list of objects")
        return tuple(value)

    def mapping(key: str) -> dict:
        value = doc.get(key, {})
        if not isinstance(value, dict):
            raise InputError(f"{source}: {key}: expected an object")
        return value

    share = doc.get("slow_share", SLOW_SHARE)
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share < 1:
        raise InputError(f"{source}: slow_share: expected a number in (0, 1), got {share!r}")
    return Progress(number(doc, "done_bytes", "", whole=True), number(doc, "total_bytes", "", whole=True),
                    number(doc, "rate_Bps", "", optional=True), number(doc, "eta_seconds", "", optional=True),
                    rows("batches", "batch"), rows("brokers", "broker"), names("stuck"), names("diverged"),
                    flag("throttles_left"), flag("complete"), mapping("captures"), objects("slow"), share,
                    mapping("isr"), objects("under_min_isr"), objects("was_under_min_isr"),
                    objects("leaders_not_preferred"), mapping("stop"))


def reassignment_progress(bundle: str | Path, captures: Sequence[str | Path], *, interval: float,
                          verify: str | Path | None = None, describes: Sequence[str | Path] = (),
                          slow_share: float = SLOW_SHARE, bootstrap: str = BOOTSTRAP_PLACEHOLDER) -> Progress:
    """The `Progress` of ``bundle`` from log-dirs ``captures`` and topic ``describes`` in any order (ordered by their
    times; without times, as given and ``interval`` seconds apart), and the ``--verify`` output.

    Raises
    ------
    InputError
        An unreadable or malformed bundle file or capture, no capture, a non-positive interval, a share outside
        (0, 1), a capture of another cluster or out of order (`planner.emit.captures`).
    """
    if not captures:
        raise InputError(f"{LOG_DIRS_OPTION}: expected at least one kafka-log-dirs.sh --describe capture")
    if not interval > 0:
        raise InputError(f"--interval: expected seconds > 0, got {interval}")
    if not 0 < slow_share < 1:
        raise InputError(f"--slow-share: expected a share of the throttle in (0, 1), got {slow_share}")
    root = Path(bundle)
    origin = _replicas(root / "rollback.json")
    steps = _steps(root, origin)
    final = _replicas(root / "reassignment.json")
    allowed = {k: set(r) for k, r in origin.items()}
    for _, _, moves in steps:
        for key, before, after in moves:
            allowed.setdefault(key, set()).update(before, after)
    new = {(key, b) for _, _, moves in steps for key, before, after in moves for b in after if b not in before}
    logs = read_log_dirs(captures, allowed, interval=interval,
                         copied=lambda c: sum(v for k, v in c.sizes.items() if k in new))
    topics = read_describes(describes, allowed, interval=interval)
    status = parse_verify(read_text(verify), source=str(verify)) if verify is not None else None
    states = status.states if status is not None else {}
    described = topics[-1].partitions if topics else {}
    size = {}  # the partition's size: its largest current replica in any capture
    for capture in logs:
        for (key, _), value in capture.sizes.items():
            size[key] = max(size.get(key, 0), value)
    window = logs[-min(SLOW_WINDOW, len(logs)):]
    copies = []
    for batch, _, moves in steps:
        for key, before, after in moves:
            for b in (x for x in after if x not in before):
                total = size.get(key, 0)
                done = [min(c.sizes.get((key, b), 0), total) for c in (logs[-2:] if len(logs) > 1 else logs[-1:])]
                now = total if states.get(key) == "complete" else done[-1]
                first = min(window[0].sizes.get((key, b), 0), total)
                copies.append({"batch": batch, "partition": key, "broker": b, "total": total, "done": now,
                               "growth": now - done[0], "window": now - first})
    moving = len(logs) > 1
    seconds = logs[-1].time - logs[-2].time if moving else None
    open_ = {c["partition"] for c in copies if c["done"] < c["total"]}

    def finished(k: tuple[str, int]) -> bool:
        if k in states:
            return states[k] == "complete"
        if k in described:
            d = described[k]
            return d.replicas == final[k] and not d.adding_replicas and not d.removing_replicas
        return k not in open_

    done_keys = {k for k in final if finished(k)}
    grew = {c["partition"] for c in copies if c["growth"] > 0}
    started = {c["partition"] for c in copies if c["done"] > 0}
    copying = {c["partition"] for c in copies if c["total"] > 0}  # a reorder copies nothing: no bytes to watch
    stuck = tuple(k for k in sorted(final) if moving and k in copying and k not in done_keys and k not in grew
                  and (states.get(k) == "in_progress" or (k not in states and k in started)))
    wrong = misplaced(logs[-1].holders(), allowed) | (misplaced(topics[-1].holders(), allowed) if topics else {})
    diverged = {k: f"--verify: {line}" for k, line in (status.lines if status is not None else {}).items()}
    diverged |= {k: f"a replica on broker(s) {', '.join(map(str, b))}, which neither its replicas before the bundle "
                    "nor its targets name" for k, b in sorted(wrong.items()) if k not in diverged}
    complete = len(done_keys) == len(final)
    throttles = bool(status is not None and complete and final and all(states.get(k) == "complete" for k in final)
                     and not status.throttles_cleared)
    done, total = sum(c["done"] for c in copies), sum(c["total"] for c in copies)
    rate, eta = _rate(copies, seconds)
    index = {batch: row for batch, row, _ in steps}
    slow = _slow(copies, index, done_keys | set(stuck), window, slow_share) if moving else ()
    isr = _isr(copies, described)
    under = _under_min_isr(topics[-1]) if topics else ()
    was = tuple({"partition": r["partition"], "capture": c.path} for c in topics[:-1] for r in _under_min_isr(c)
                if r["partition"] not in {u["partition"] for u in under})
    leaders = tuple({"partition": _name(k), "leader": described[k].leader, "preferred": final[k][0]}
                    for k in sorted(done_keys) if k in described and final[k] and described[k].leader != final[k][0])
    stop = _stop(stuck, diverged, under, logs, copies, steps, done_keys, bootstrap)
    return Progress(done, total, rate, eta, _table(copies, "batch", seconds), _table(copies, "broker", seconds),
                    tuple(_name(k) for k in stuck), tuple(_name(k) for k in sorted(diverged)), throttles, complete,
                    captures={"log_dirs": [_when(c) for c in logs], "describe": [_when(c) for c in topics]},
                    slow=slow, slow_share=slow_share, isr=isr, under_min_isr=under, was_under_min_isr=was,
                    leaders_not_preferred=leaders, stop=stop)


def _name(key: tuple[str, int]) -> str:
    return f"{key[0]}-{key[1]}"


def _when(capture: LogDirsCapture | DescribeCapture) -> dict:
    return {"file": capture.path, "time": capture.time}


def _rate(copies: list[dict], seconds: float | None) -> tuple[float | None, float | None]:
    """Bytes/s copied between the last two captures (``seconds`` apart), and the seconds left at that rate."""
    if seconds is None:
        return None, None
    rate = sum(max(c["growth"], 0) for c in copies) / seconds
    left = sum(c["total"] - c["done"] for c in copies)
    return rate, (left / rate if rate > 0 else (0.0 if left == 0 else None))


def _slow(copies: list[dict], index: Mapping[int, dict], settled: set, window: Sequence[LogDirsCapture],
          share: float) -> tuple[dict, ...]:
    """Copies under way (started, growing, not done) whose rate over ``window`` is below ``share`` of their part of
    the batch's throttle: the throttle over the copies of that batch still running onto the same broker."""
    seconds = window[-1].time - window[0].time
    running = [c for c in copies if c["partition"] not in settled and 0 < c["done"] < c["total"]]
    out = []
    for c in running:
        if c["growth"] <= 0:
            continue
        throttle = float(index[c["batch"]]["throttle_Bps"])
        peers = sum(1 for o in running if o["batch"] == c["batch"] and o["broker"] == c["broker"])
        rate, part = c["window"] / seconds, throttle / peers
        if rate < share * part:
            out.append({"partition": _name(c["partition"]), "broker": c["broker"], "batch": c["batch"],
                        "rate_Bps": _r(rate), "throttle_share_Bps": _r(part)})
    return tuple(out)


def _isr(copies: list[dict], described: Mapping) -> dict:
    """The new replicas in the newest describe capture's ISR (``joined``) and those not yet (``pending``)."""
    rows: dict[str, list] = {"joined": [], "pending": []}
    for c in copies:
        d = described.get(c["partition"])
        if d is not None:
            rows["joined" if c["broker"] in d.isr else "pending"].append(
                {"partition": _name(c["partition"]), "broker": c["broker"]})
    return rows if described else {}


def _under_min_isr(capture: DescribeCapture) -> tuple[dict, ...]:
    """Partitions Kafka's ``--under-min-isr-partitions`` lists (``TopicCommand``: no leader, or fewer in-sync
    replicas than the topic's ``min.insync.replicas``), with the evidence."""
    out = []
    for key, d in sorted(capture.partitions.items()):
        topic = capture.topics.get(key[0])
        need = topic.min_insync_replicas if topic is not None else 1
        if d.leader is None or len(d.isr) < need:
            out.append({"partition": _name(key), "leader": d.leader, "isr": list(d.isr), "min_isr": need,
                        "capture": capture.path})
    return tuple(out)


def _stop(stuck: Sequence[tuple[str, int]], diverged: Mapping[tuple[str, int], str], under: Sequence[dict],
          logs: Sequence[LogDirsCapture], copies: list[dict], steps: list[tuple[int, dict, list]],
          done_keys: set[tuple[str, int]], bootstrap: str) -> dict:
    """Why progress says stop, with the evidence, and the commands that stop the running batch (the first with a
    partition not done; none when every batch is done) cleanly."""
    reasons = [f"under min ISR: {r['partition']} (leader {r['leader'] if r['leader'] is not None else 'none'}, Isr "
               f"{','.join(map(str, r['isr'])) or 'empty'} against min.insync.replicas {r['min_isr']}, in "
               f"{r['capture']})" for r in under]
    for k in stuck:
        held = ", ".join(f"{format_bytes(c['done'])} of {format_bytes(c['total'])} on broker {c['broker']}"
                         for c in copies if c["partition"] == k)
        reasons.append(f"stuck: {_name(k)} (no growth between {logs[-2].path} and {logs[-1].path}: {held})")
    reasons += [f"diverged: {_name(k)} ({why})" for k, why in sorted(diverged.items())]
    if not reasons:
        return {}
    running = next(((batch, row, moves) for batch, row, moves in steps
                    if any(key not in done_keys for key, _, _ in moves)), None)
    commands = []
    if running is not None:
        _, row, moves = running
        commands.append(f"kafka-reassign-partitions.sh --bootstrap-server {bootstrap} --reassignment-json-file "
                        f"batches/{row['file']} --cancel")
        brokers = sorted({b for _, before, after in moves for b in (*before, *after)} |
                         set(row.get("reassigning_brokers", ())))
        topics = sorted({key[0] for key, _, _ in moves})
        commands += [f"kafka-configs.sh --bootstrap-server {bootstrap} --alter --entity-type brokers --entity-name "
                     f"{b} --delete-config {','.join(BROKER_THROTTLES)}" for b in brokers]
        commands += [f"kafka-configs.sh --bootstrap-server {bootstrap} --alter --entity-type topics --entity-name "
                     f"{t} --delete-config {','.join(TOPIC_THROTTLES)}" for t in topics]
    return {"reasons": reasons, "commands": commands}


def _replicas(path: Path) -> dict[tuple[str, int], tuple[int, ...]]:
    """Target replicas per partition of a reassignment file, read as ``--execute`` reads it."""
    text = read_text(path)
    try:
        entries = parse_reassignment_json(text)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None
    return {(e.topic, e.partition): e.replicas for e in entries}


def _steps(root: Path, origin: Mapping[tuple[str, int], tuple[int, ...]]) -> list[tuple[int, dict, list]]:
    """Per batch (index, its row of index.json, [(partition, replicas before the batch, after it)]), in order."""
    where = root / "batches" / "index.json"
    index = parse_json(read_text(where), str(where))
    if not isinstance(index, list):
        raise InputError(f"{where}: expected a list of batches")
    state = dict(origin)
    out = []
    for k, row in enumerate(index):
        try:
            batch, name, throttle = int(row["batch"]), str(row["file"]), row["throttle_Bps"]
        except (KeyError, TypeError, ValueError):
            raise InputError(f"{where}: [{k}]: expected 'batch', 'file' and 'throttle_Bps'") from None
        if isinstance(throttle, bool) or not isinstance(throttle, (int, float)) or not throttle > 0:
            raise InputError(f"{where}: [{k}].throttle_Bps: expected bytes/s > 0, got {throttle!r}")
        moves = []
        for key, after in _replicas(root / "batches" / name).items():
            moves.append((key, state.get(key, ()), after))
            state[key] = after
        out.append((batch, row, moves))
    return out


def _table(copies: list[dict], name: str, seconds: float | None) -> tuple[dict, ...]:
    """Per batch or destination broker: bytes done and total, new replicas, rate and ETA."""
    groups: dict[int, list[dict]] = {}
    for c in copies:
        groups.setdefault(c[name], []).append(c)
    out = []
    for key in sorted(groups):
        rate, eta = _rate(groups[key], seconds)
        out.append({name: key, "done_bytes": sum(c["done"] for c in groups[key]),
                    "total_bytes": sum(c["total"] for c in groups[key]), "replicas": len(groups[key]),
                    "rate_Bps": _r(rate), "eta_seconds": _r(eta)})
    return tuple(out)
