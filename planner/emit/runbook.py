"""The operator runbook (``runbook.md``) of a reassignment bundle, rendered from a jinja2 template."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jinja2

from planner.emit.batches import Batch, BatchLimits
from planner.emit.batch_throttle import BatchThrottle
from pools.errors import InputError
from pools.plan_file import REASON_RULES, PartitionMove
from pools.units import format_bytes, format_duration, format_rate

__all__ = ["BOOTSTRAP_PLACEHOLDER", "CORDON_VERSION", "CordonChanges", "parse_kafka_version", "render_runbook",
           "bytes_by_reason"]

BOOTSTRAP_PLACEHOLDER = "<BOOTSTRAP_SERVERS>"

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("planner.emit", "templates"),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
    autoescape=False,
)


def render_runbook(
    *,
    cluster: str,
    batches: Sequence[Batch],
    throttles: Sequence[BatchThrottle],
    limits: BatchLimits,
    leader_preserving: bool,
    rollback_rate: int,
    bootstrap: str = BOOTSTRAP_PLACEHOLDER,
    health: Sequence[str] = (),
    moved_held: Sequence[str] = (),
    evacuated: Sequence[str] = (),
    reasons: Sequence[dict[str, Any]] = (),
    cordon: CordonChanges | None = None,
    kafka_version: str | None = None,
    log_dir_moves: Sequence[Mapping[str, Any]] = (),
    log_dir_throttle: int = 0,
    expected_brokers: Sequence[Mapping[str, Any]] = (),
) -> str:
    """Render ``runbook.md``: pre-flight checks, per-batch execute/verify/cancel, rollback, leader election.

    ``health`` lists what `pools.health` found unhealthy at snapshot time (`ClusterHealth.summary`): the
    pre-flight names it, since its checks fail until it recovers; ``moved_held`` names partitions the plan
    moves although they were held (a plan made without the health rule), which the pre-flight warns about;
    ``evacuated`` names the partitions it re-replicates off drained brokers (`pools.health`), the only ones
    pre-flight check 1 may list; ``reasons`` are the rows of the "Why these moves" table (`bytes_by_reason`).
    ``cordon`` says which brokers the pre-flight cordons and the rollback lifts the cordon of (`CordonChanges`):
    on Kafka 4.3+ (``kafka_version``; unknown: the steps say they need 4.3, KIP-1066).
    ``log_dir_moves`` are the moves between one broker's log dirs (``emit --log-dir-placement balance``), one file
    per broker (``broker``, ``file``, ``replicas``, ``moved_bytes``), run after the batches at ``log_dir_throttle`` B/s.
    ``expected_brokers`` (``id``, ``rack``, ``pool``) are the plan's brokers still to buy: the
    pre-flight and every batch's ``--execute`` first run ``check-brokers.sh``, which refuses while one is missing.
    """
    rows: list[dict[str, Any]] = []
    for b, t in zip(batches, throttles, strict=True):
        rows.append({
            "index": b.index,
            "phase": b.phase,
            "file": f"{b.index:03d}.json",
            "partitions": len(b.moves),
            "moved_bytes_h": format_bytes(b.moved_bytes),
            "rate": t.rate,
            "rate_h": format_rate(t.rate),
            "seconds_h": format_duration(t.seconds),
            "brokers": ",".join(map(str, t.reassigning_brokers)),
        })
    phase1 = [b.index for b in batches if b.phase == 1]
    phase2 = [b.index for b in batches if b.phase == 2]
    return _ENV.get_template("runbook.md.j2").render(
        cluster=cluster,
        bootstrap=bootstrap,
        partitions=len({(m.topic, m.partition) for b in batches for m in b.moves}),
        moved_bytes_h=format_bytes(sum(b.moved_bytes for b in batches)),
        total_h=format_duration(sum(t.seconds for t in throttles)),
        batches=rows,
        limits={
            "moves_per_broker": limits.moves_per_broker,
            "partitions_per_batch": limits.partitions_per_batch,
            "bytes_per_batch": limits.bytes_per_batch,
            "bytes_per_batch_h": format_bytes(limits.bytes_per_batch or 0),
        },
        leader_preserving=leader_preserving and bool(phase2),
        phase1_range=_span(phase1),
        phase2_range=_span(phase2),
        rollback_rate=rollback_rate,
        health=list(health),
        moved_held=list(moved_held),
        evacuated=list(evacuated),
        reasons=list(reasons),
        cordon=_cordon_step(cordon or CordonChanges(), kafka_version),
        log_dir_moves=[{**m, "moved_bytes_h": format_bytes(m["moved_bytes"])} for m in log_dir_moves],
        log_dir_throttle=log_dir_throttle,
        log_dir_throttle_h=format_rate(log_dir_throttle),
        expected_brokers=list(expected_brokers),
    )


def bytes_by_reason(moves: Iterable[PartitionMove]) -> list[dict[str, Any]]:
    """The runbook's "Why these moves" rows: per reason rule (`pools.plan_file.REASON_RULES` order; ``none`` for moves
    of a plan written without reasons), the partitions, the leader-only ones among them and the bytes copied.

    >>> from pools.plan_file import Reason
    >>> rows = bytes_by_reason([PartitionMove("t", 0, (1, 2), (3, 2), 10, Reason("isolate", brokers=(1,))),
    ...                         PartitionMove("t", 1, (1, 2), (2, 1), 10, Reason("relieve", 1, "leaders", 5, 6,
    ...                                                                          leader_only=True))])
    >>> [(r["rule"], r["partitions"], r["leader_only"], r["copied_bytes"]) for r in rows]
    [('isolate', 1, 0, 10), ('relieve', 1, 1, 0)]
    """
    rows: dict[str, dict[str, Any]] = {}
    for m in moves:
        rule = m.reason.rule.value if m.reason is not None else "none"
        row = rows.setdefault(rule, {"rule": rule, "partitions": 0, "leader_only": 0, "copied_bytes": 0})
        row["partitions"] += 1
        row["leader_only"] += int(m.reason is not None and m.reason.leader_only)
        row["copied_bytes"] += m.moved_bytes
    order = {rule: k for k, rule in enumerate((*REASON_RULES, "none"))}
    out = sorted(rows.values(), key=lambda r: order[r["rule"]])
    for r in out:
        r["copied_h"] = format_bytes(r["copied_bytes"])
    return out


#: The first Kafka version with ``cordoned.log.dirs`` (KIP-1066).
CORDON_VERSION = (4, 3)


@dataclass(frozen=True, slots=True)
class CordonChanges:
    """The ``cordoned.log.dirs`` a bundle changes, each broker mapped to the value Kafka held before (empty: none).

    ``preflight``: the drained brokers the pre-flight cordons (``*``) so the controller places nothing new there.
    ``lift``: the brokers whose cordon the rollback deletes before ``rollback.json``, which returns replicas to
    them and which Kafka 4.3 rejects on a cordoned broker (``INVALID_REPLICA_ASSIGNMENT``). After the rollback, every
    broker of either gets its value back. ``earlier``: the brokers whose value before is the ``*`` an earlier wave's
    pre-flight set, not a captured one.
    """

    preflight: Mapping[int, str] = field(default_factory=dict)
    lift: Mapping[int, str] = field(default_factory=dict)
    earlier: tuple[int, ...] = ()


def _cordon_step(changes: CordonChanges, kafka_version: str | None) -> dict[str, Any] | None:
    """The runbook's cordon steps, or None when there are none or the cluster predates cordons. The rollback puts
    each value back: a list as ``kafka-configs.sh --add-config`` takes one (``[/d1,/d2]``); none as
    ``--delete-config``, unless the lift already deleted it (``kafka-configs.sh`` refuses to delete a config that is
    not set).

    >>> [_cordon_step(CordonChanges({4: ""}), v)["conditional"] for v in ("4.3.1", None)]
    [False, True]
    >>> _cordon_step(CordonChanges({4: ""}), "4.2")
    >>> step = _cordon_step(CordonChanges({3: "/d1,/d2", 4: ""}, {3: "/d1,/d2", 5: "*"}), "4.3")
    >>> step["brokers"], step["lift"], step["restore"], step["delete"]
    ([3, 4], [3, 5], [(3, '[/d1,/d2]'), (5, '*')], [4])
    """
    if not changes.preflight and not changes.lift:
        return None
    version = parse_kafka_version(kafka_version) if kafka_version is not None else None
    if version is not None and version < CORDON_VERSION:
        return None
    before = {**changes.preflight, **changes.lift}
    restore = [(b, f"[{v}]" if "," in v else v) for b, v in sorted(before.items()) if v]
    earlier = [b for b in sorted(changes.earlier) if b in before]
    return {"brokers": sorted(changes.preflight), "conditional": version is None, "lift": sorted(changes.lift),
            "restore": restore, "earlier": earlier, "delete": [b for b, v in sorted(changes.preflight.items())
                                           if not v and b not in changes.lift]}


def parse_kafka_version(text: str) -> tuple[int, int]:
    """``(major, minor)`` of a Kafka version such as ``4.3`` or ``4.3.1``.

    >>> parse_kafka_version("4.3.1")
    (4, 3)
    >>> parse_kafka_version("four")
    Traceback (most recent call last):
    ...
    pools.errors.InputError: --kafka-version: expected a Kafka version such as 4.3 or 4.3.1, got 'four'
    """
    parts = text.strip().split(".")
    if not 2 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise InputError(f"--kafka-version: expected a Kafka version such as 4.3 or 4.3.1, got {text!r}")
    return int(parts[0]), int(parts[1])


def _span(indexes: list[int]) -> str:
    if not indexes:
        return "no batches"
    return f"batches {indexes[0]}-{indexes[-1]}" if len(indexes) > 1 else f"batch {indexes[0]}"
