"""The reassignment bundle ``poolplan emit`` writes: Kafka files, batches, throttles, runbook and summary.

`build_bundle` is pure (plan + snapshot -> ``{relative path: text}``); `write_bundle` is the only I/O and
writes the whole directory atomically. Every reassignment file is re-read with the Kafka-exact parser (and
checked against the snapshot as ``--execute`` would, cordons included: `pools.health.cordon_crossings`) before
it is accepted; rollback.json restores the replicas as they were.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner.emit.batches import Batch, BatchLimits, apply_batches, plan_batches
from planner.emit.expected_brokers import CHECK_BROKERS, check_brokers_script
from planner.emit.log_dirs import LogDirPlan, balance_log_dirs
from planner.emit.runbook import BOOTSTRAP_PLACEHOLDER, CordonChanges, bytes_by_reason, render_runbook
from planner.emit.batch_throttle import MIN_THROTTLE_BPS, BatchThrottle, batch_throttle, throttle_rate
from pools.atomic import atomic_dir, dump_json, write_text
from pools.errors import InputError
from pools.health import cluster_health, cordon_crossings, evacuation_keeps, kafka_cordoned
from pools.new_brokers import with_planned_brokers
from pools.kafka_formats import (
    ReassignmentEntry,
    ReassignmentError,
    format_leader_election_json,
    format_reassignment_json,
    parse_leader_election_json,
    parse_reassignment_json,
)
from pools.plan_file import Plan
from pools.progress import ProgressReporter, no_progress
from pools.pool_rules import log_dir_capacity
from pools.snapshot import ClusterSnapshot
from pools.throttle import INTRA_BROKER_THROTTLE_BPS

__all__ = ["EmitOptions", "build_bundle", "write_bundle", "over_limit_before", "preflight_cordons", "rollback_replicas"]


@dataclass(frozen=True, slots=True)
class EmitOptions:
    """How to cut and throttle the reassignment."""

    limits: BatchLimits = field(default_factory=BatchLimits)
    leader_preserving: bool = False
    one_replica_at_a_time: bool = False
    throttle_fraction: float = 0.5
    bootstrap: str = BOOTSTRAP_PLACEHOLDER
    kafka_version: str | None = None
    log_dir_placement: str = "any"


def build_bundle(
    plan: Plan, snapshot: ClusterSnapshot, options: EmitOptions = EmitOptions(), *, plan_source: str = "plan",
    progress: ProgressReporter = no_progress, held_cordons: Mapping[int, str] | None = None,
) -> dict[str, str]:
    """Every file of the bundle, keyed by path relative to the bundle directory (``plan_source`` names the plan's
    file in errors; ``progress`` hears the batching and the checks; ``held_cordons``: broker → the
    ``cordoned.log.dirs`` Kafka will hold when the bundle starts, where that differs from the snapshot's captures,
    as after an earlier wave's pre-flight: the pre-flight and the rollback start from it).

    Raises
    ------
    InputError
        When the plan does not match the snapshot (stale plan: a partition's ``old_replicas`` differ from
        its current replicas, or a partition is unknown), or when Kafka's tool would reject a file.

    A plan's brokers still to buy (``planned_brokers``) count as registered, as they will be when the bundle
    runs: ``check-brokers.sh`` and the runbook's pre-flight refuse to start while one of them is missing.
    """
    snapshot = with_planned_brokers(snapshot, plan.planned_brokers)
    parts = {(p.topic, p.partition): p for p in snapshot.partitions}
    moves = []
    for m in plan.moves:
        state = parts.get((m.topic, m.partition))
        if state is None:
            raise InputError(f"{plan_source}: partition {m.topic}-{m.partition} is not in the snapshot")
        if tuple(state.replicas) != tuple(m.old_replicas):
            raise InputError(
                f"{plan_source}: partition {m.topic}-{m.partition}: old_replicas {list(m.old_replicas)} differ "
                "from the "
                f"snapshot's replicas {list(state.replicas)} (the plan is stale; re-plan from a fresh snapshot)"
            )
        moves.append(m if m.size_bytes else _with_size(m, state.size_bytes))
    leaders = {tp: parts[tp].leader for tp in ((m.topic, m.partition) for m in moves)}
    batches = plan_batches(moves, limits=options.limits, leader_preserving=options.leader_preserving, leaders=leaders,
                           one_replica_at_a_time=options.one_replica_at_a_time,
                           relieve_first=over_limit_before(plan, snapshot), progress=progress)
    current = {(m.topic, m.partition): tuple(m.old_replicas) for m in moves}
    target = {(m.topic, m.partition): tuple(m.replicas) for m in moves}
    if apply_batches(current, batches) != target:
        raise AssertionError("batches do not compose to the plan's target")  # an internal invariant
    capacity = {b.id: (float(b.capacity.nw_in), float(b.capacity.nw_out)) for b in snapshot.brokers}
    load = _peak_load(plan)
    throttles = []
    for b in batches:
        involved = frozenset().union(*(m.brokers for m in b.moves))
        rate = throttle_rate(involved, capacity=capacity, load=load, fraction=options.throttle_fraction)
        throttles.append(batch_throttle(b, rate=rate, leaders=leaders))
    cluster = _kafka_cluster(snapshot)
    health = cluster_health(snapshot)
    old = {(m.topic, m.partition): m for m in moves}
    health = health.evacuating([k for k in health.evacuable(snapshot, plan.drained) if k in old and evacuation_keeps(
        old[k].old_replicas, old[k].replicas, plan.drained,
        [b for b in old[k].old_replicas if plan.brokers.get(b) != plan.topics.get(k[0])])], plan.drained)
    balance = options.log_dir_placement == "balance"
    dirs = balance_log_dirs(snapshot, target, health) if balance else LogDirPlan({}, {}, {})
    files: dict[str, str] = {}
    expected = plan.planned_brokers  # the plan's figures count on every one of them
    if expected:
        files[CHECK_BROKERS] = check_brokers_script(expected)
    def checked(entries: list[ReassignmentEntry], name: str) -> str:
        crossed = cordon_crossings(snapshot, ((e.topic, e.partition, e.replicas, e.log_dirs) for e in entries))
        if crossed:
            more = f" (and {len(crossed) - 1} more)" if len(crossed) > 1 else ""
            raise InputError(f"{plan_source}: {crossed[0]}{more}: Kafka 4.3 would reject {name} "
                             "(INVALID_REPLICA_ASSIGNMENT); re-plan from this snapshot")
        return _checked(entries, cluster, name)

    known = {b.id for b in snapshot.brokers}
    restorable = {k: rollback_replicas(old, target[k], known) for k, old in current.items()}
    if moves:
        files["reassignment.json"] = checked(_entries(target, dirs.targets), "reassignment.json")
        files["rollback.json"] = _checked(_entries(restorable), cluster, "rollback.json")
        election = format_leader_election_json(target)
        parse_leader_election_json(election, source="leader-election.json")
        files["leader-election.json"] = election + "\n"
    for i, (b, t) in enumerate(zip(batches, throttles, strict=True)):
        progress("checking every batch file with Kafka's parser", done=i, total=len(batches), unit="batches")
        batch_target = {(m.topic, m.partition): m.replicas for m in b.moves}
        files[f"batches/{b.index:03d}.json"] = checked(_entries(batch_target, dirs.targets),
                                                       f"batches/{b.index:03d}.json")
    for broker, dir_moves in dirs.moves.items():
        inside = {(m.topic, m.partition): target.get((m.topic, m.partition), parts[m.topic, m.partition].replicas)
                  for m in dir_moves}
        name = f"log-dirs/broker-{broker}.json"
        files[name] = checked(_entries(inside, {(m.topic, m.partition, broker): m.to_dir for m in dir_moves}), name)
    files["batches/index.json"] = dump_json([_batch_row(b, t) for b, t in zip(batches, throttles, strict=True)])
    rollback_rate = min((t.rate for t in throttles), default=MIN_THROTTLE_BPS)
    moved_held = [f"{m.topic}-{m.partition}" for m in moves if (m.topic, m.partition) in health.partitions]
    files["runbook.md"] = render_runbook(
        cluster=plan.cluster,
        batches=batches,
        throttles=throttles,
        limits=options.limits,
        leader_preserving=options.leader_preserving,
        rollback_rate=rollback_rate,
        bootstrap=options.bootstrap,
        health=health.summary(shown=20),
        moved_held=moved_held,
        evacuated=[f"{t}-{p}" for t, p in sorted(health.evacuated)],
        reasons=bytes_by_reason(moves),
        cordon=_cordons(snapshot, plan.drained, restorable, target, held_cordons or {}),
        kafka_version=options.kafka_version,
        log_dir_moves=[{"broker": b, "file": f"log-dirs/broker-{b}.json", "replicas": len(ms),
                        "moved_bytes": sum(m.size_bytes for m in ms),
                        "sized": bool(snapshot.broker_by_id[b].log_dir_capacities)} for b, ms in dirs.moves.items()],
        log_dir_throttle=INTRA_BROKER_THROTTLE_BPS,
        expected_brokers=[{"id": b.id, "rack": b.rack, "pool": b.pool} for b in expected],
    )
    summary = _summary(plan, moves, batches, throttles, options, rollback_rate)
    if expected:
        summary["expected_brokers"] = [{"id": b.id, "rack": b.rack, "pool": b.pool} for b in expected]
    summary["health"] = {
        "unhealthy_brokers": {str(b): why for b, why in health.brokers.items()},
        "held_partitions": {why: [f"{t}-{p}" for t, p in keys] for why, keys in health.held_by_reason.items()},
        "moved_held_partitions": moved_held,
        "evacuated_partitions": [f"{t}-{p}" for t, p in sorted(health.evacuated)],
    }
    if options.log_dir_placement == "balance":
        summary["log_dirs"] = _log_dir_summary(snapshot, dirs)
    files["summary.json"] = dump_json(summary)
    return dict(sorted(files.items()))


def over_limit_before(plan: Plan, snapshot: ClusterSnapshot) -> frozenset[int]:
    """Brokers over capacity × headroom in some dimension before the plan (`pools.plan_file.Plan.over_limit_before`):
    the batches relieve them first."""
    return plan.over_limit_before()


def write_bundle(out_dir: str | os.PathLike[str], files: Mapping[str, str], *, overwrite: bool = False) -> Path:
    """Write the bundle directory atomically (built under a temporary name, renamed into place)."""
    with atomic_dir(out_dir, overwrite=overwrite) as tmp:
        for rel, text in sorted(files.items()):
            write_text(Path(tmp) / rel, text)
    return Path(out_dir)


def _with_size(m: Any, size: int) -> Any:
    from pools.plan_file import PartitionMove

    return PartitionMove(m.topic, m.partition, tuple(m.old_replicas), tuple(m.replicas), size)


def preflight_cordons(snapshot: ClusterSnapshot, drained: Iterable[int],
                      held: Mapping[int, str]) -> dict[int, str]:
    """The drained brokers a bundle's pre-flight cordons (``*``): those Kafka does not hold cordoned at its start
    (the snapshot's captures, `pools.snapshot.Broker.kafka_cordon`, overridden by ``held``), each mapped to the
    value Kafka holds before it."""
    brokers = snapshot.broker_by_id
    before = {b: held.get(b, brokers[b].kafka_cordon()) for b in drained if b in brokers}
    return {b: before[b] for b in sorted(before) if not kafka_cordoned(brokers[b], before[b])}


def _cordons(snapshot: ClusterSnapshot, drained: Iterable[int], restorable: Mapping[tuple[str, int], tuple[int, ...]],
             target: Mapping[tuple[str, int], tuple[int, ...]], held: Mapping[int, str]) -> CordonChanges:
    """The runbook's cordon changes: the pre-flight cordons each drained broker Kafka does not hold cordoned yet
    (`preflight_cordons`), and the rollback lifts the cordon of every broker Kafka would then refuse a replica
    ``rollback.json`` returns to it, restoring each broker's value from the bundle's start once it has run."""
    brokers = snapshot.broker_by_id
    before = {b.id: held.get(b.id, b.kafka_cordon()) for b in snapshot.brokers}
    preflight = preflight_cordons(snapshot, drained, held)
    returned = {b for k, old in restorable.items() for b in old if b not in target[k]}
    lift = {b: before[b] for b in sorted(returned)
            if b in preflight or (b in brokers and kafka_cordoned(brokers[b], before[b]))}
    return CordonChanges(preflight, lift, tuple(sorted(held)))


def rollback_replicas(old: tuple[int, ...], new: tuple[int, ...], known: set[int]) -> tuple[int, ...]:
    """The replicas rollback.json restores: ``old``, except that a broker the cluster no longer has (Kafka
    rejects a reassignment that names one) keeps the replica the move put in its place.

    >>> rollback_replicas((1, 9, 2), (1, 4, 2), {1, 2, 4}), rollback_replicas((1, 2), (3, 1), {1, 2, 3})
    ((1, 4, 2), (1, 2))
    """
    fresh = iter([b for b in new if b not in old])
    kept = [b if b in known else next(fresh, None) for b in old]
    return tuple(b for b in kept if b is not None)


def _entries(assignment: Mapping[tuple[str, int], tuple[int, ...]],
             dirs: Mapping[tuple[str, int, int], str] | None = None) -> list[ReassignmentEntry]:
    """Reassignment entries; ``dirs`` names the log dir of a ``(topic, partition, broker)`` replica (else ``any``)."""
    dirs = dirs or {}
    return [ReassignmentEntry(t, p, r, tuple(dirs.get((t, p, b), "any") for b in r))
            for (t, p), r in assignment.items()]


def _log_dir_summary(snapshot: ClusterSnapshot, dirs: LogDirPlan) -> dict[str, Any]:
    """``summary.json``'s ``log_dirs``: targets named, and per JBOD broker its moves, each open dir's capacity (and
    whether the inventory gave it) and fill."""
    brokers = {}
    for b, fill in dirs.fill.items():
        broker = snapshot.broker_by_id[b]
        moves = dirs.moves.get(b, ())
        brokers[str(b)] = {
            "moves": len(moves),
            "moved_bytes": sum(m.size_bytes for m in moves),
            "log_dir_capacities": {d: log_dir_capacity(broker, d) for d in fill},
            "capacities_from": "inventory" if broker.log_dir_capacities else "equal shares of the broker's disk",
            "fill": {d: {"after_plan": a, "after_moves": z} for d, (a, z) in fill.items()},
            "replicas": [{"topic": m.topic, "partition": m.partition, "from": m.from_dir, "to": m.to_dir,
                          "size_bytes": m.size_bytes} for m in moves],
        }
    return {"mode": "balance", "targets": len(dirs.targets), "intra_broker_throttle_Bps": INTRA_BROKER_THROTTLE_BPS,
            "brokers": brokers}


def _kafka_cluster(snapshot: ClusterSnapshot) -> dict[str, Any]:
    topics: dict[str, list[list[int]]] = {}
    for t, ps in snapshot.partitions_by_topic.items():
        count = max(p.partition for p in ps) + 1
        replicas = [[] for _ in range(count)]
        for p in ps:
            replicas[p.partition] = list(p.replicas)
        topics[t] = replicas
    return {"brokers": list(snapshot.broker_ids), "topics": topics}


def _checked(entries: list[ReassignmentEntry], cluster: dict[str, Any], name: str) -> str:
    text = format_reassignment_json(entries)
    try:
        parsed = parse_reassignment_json(text, cluster)
    except ReassignmentError as exc:
        raise InputError(f"{name}: kafka-reassign-partitions.sh would reject it: {exc}") from None
    if sorted(parsed, key=lambda e: (e.topic, e.partition)) != sorted(entries, key=lambda e: (e.topic, e.partition)):
        raise AssertionError(f"{name}: does not read back as written")  # an internal invariant
    return text + "\n"


def _peak_load(plan: Plan) -> dict[int, tuple[float, float]]:
    """Forecast peak ``(nw_in, nw_out)`` per broker: the largest of its loads now, before and after the plan."""
    def peak(b: int, dimension: str) -> float:
        cell = plan.utilisation.broker(b, dimension)
        loads = () if cell is None else (cell.now, cell.before, cell.after)
        return max((v for v in loads if v is not None), default=0.0)

    return {b: (peak(b, "nw_in"), peak(b, "nw_out")) for b in plan.utilisation.broker_ids}


def _batch_row(b: Batch, t: BatchThrottle) -> dict[str, Any]:
    return {
        "batch": b.index,
        "file": f"{b.index:03d}.json",
        "phase": b.phase,
        "partitions": len(b.moves),
        "moved_bytes": b.moved_bytes,
        "throttle_Bps": t.rate,
        "estimated_seconds": t.seconds,
        "reassigning_brokers": list(t.reassigning_brokers),
        "hot_brokers": list(b.hot_brokers),
        "leader.replication.throttled.replicas": t.leader,
        "follower.replication.throttled.replicas": t.follower,
    }


def _summary(
    plan: Plan,
    moves: list[Any],
    batches: tuple[Batch, ...],
    throttles: list[BatchThrottle],
    options: EmitOptions,
    rollback_rate: int,
) -> dict[str, Any]:
    brokers: dict[int, dict[str, int]] = {}

    def row(b: int) -> dict[str, int]:
        return brokers.setdefault(b, {"bytes_in": 0, "bytes_out": 0, "partitions_in": 0, "partitions_out": 0})

    for m in moves:
        old, new = set(m.old_replicas), set(m.replicas)
        for b in new - old:
            row(b)["bytes_in"] += m.size_bytes
            row(b)["partitions_in"] += 1
        for b in old - new:
            row(b)["bytes_out"] += m.size_bytes
            row(b)["partitions_out"] += 1
    consecutive_hot = sum(
        1 for a, b in zip(batches, batches[1:]) if set(a.hot_brokers) & {x for m in b.moves for x in m.adding}
    )
    return {
        "cluster": plan.cluster,
        "partitions": len(moves),
        "moved_bytes": sum(m.moved_bytes for m in moves),
        "estimated_seconds": sum(t.seconds for t in throttles),
        "batches": [
            {"batch": b.index, "phase": b.phase, "partitions": len(b.moves), "moved_bytes": b.moved_bytes,
             "throttle_Bps": t.rate, "estimated_seconds": t.seconds,
             "bytes_in": {str(k): v for k, v in t.bytes_in.items()},
             "bytes_out": {str(k): v for k, v in t.bytes_out.items()}}
            for b, t in zip(batches, throttles, strict=True)
        ],
        "brokers": {str(b): v for b, v in sorted(brokers.items())},
        "throttle": {
            "fraction_of_spare": options.throttle_fraction,
            "min_Bps": min((t.rate for t in throttles), default=None),
            "max_Bps": max((t.rate for t in throttles), default=None),
            "rollback_Bps": rollback_rate,
            "floor_Bps": MIN_THROTTLE_BPS,
        },
        "limits": {
            "moves_per_broker": options.limits.moves_per_broker,
            "partitions_per_batch": options.limits.partitions_per_batch,
            "bytes_per_batch": options.limits.bytes_per_batch,
            "round_robin": options.limits.round_robin,
            "leader_preserving": options.leader_preserving,
            "one_replica_at_a_time": options.one_replica_at_a_time,
        },
        "consecutive_hot_batches": consecutive_hot,
    }
