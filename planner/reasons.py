"""A reason for every move of a plan: what undoing the move alone would break (`pools.plan_file.Reason`).

The first rule that applies names a move:

1. ``replication_factor``: the replica list changes length;
2. ``evacuate``: a replica leaves a broker the operation drains or that is unhealthy (`pools.health`);
   ``demote``: the replicas stay and leadership leaves a broker the operation demotes;
3. ``isolate``: a replica leaves a broker outside the topic's pool;
4. what the placement engine found (`planner.placement.engine.prune_moves`): ``rack_spread``, or a broker that
   undoing the move would put over its limit (``relieve``), above (``balance``) or below (``fill``) its band;
5. ``rack_spread`` when the current replicas span fewer than min(RF, racks of the pool) racks.

A move none of these explains keeps no reason (`unexplained` lists them): the planner's own plans have none.
`explain` says, from plan.json alone, why one partition moves and what it beat (``poolplan explain``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace

from planner.placement.engine import MoveReason
from pools.errors import InputError
from pools.plan_file import PartitionMove, Plan, Reason
from pools.snapshot import DIMENSIONS, ClusterSnapshot
from pools.units import format_bytes

__all__ = ["with_reasons", "unexplained", "spans_racks", "explain"]


def with_reasons(plan: Plan, snapshot: ClusterSnapshot, placed: Mapping[tuple[str, int], MoveReason],
                 unhealthy: Collection[int] = ()) -> Plan:
    """``plan`` with the `Reason` of every move (see the module docstring).

    Parameters
    ----------
    plan : Plan
    snapshot : ClusterSnapshot
        The cluster the plan is for (broker racks).
    placed : mapping of (topic, partition) to MoveReason
        What the engine found per partition it placed (`planner.placement.minimal_move.Placement.reasons`).
    unhealthy : collection of int
        Brokers whose replicas are evacuated (`pools.health.ClusterHealth.brokers`).
    """
    gone = set(plan.drained) | set(unhealthy)
    rack = {b.id: b.rack for b in snapshot.brokers}
    racks: dict[str, set[str]] = {}
    for b, pool in plan.brokers.items():
        if pool is not None and rack.get(b) is not None:
            racks.setdefault(pool, set()).add(str(rack[b]))
    width: dict[str | None, int] = {pool: len(r) for pool, r in racks.items()}
    moves = []
    for m in plan.partitions:
        reason = _reason(m, plan, placed.get((m.topic, m.partition)), gone, rack, width) if m.changed else None
        moves.append(m if reason is None and m.reason is None else replace(m, reason=reason))  # most stay: no copy
    return replace(plan, partitions=tuple(moves))


def _reason(m: PartitionMove, plan: Plan, found: MoveReason | None, gone: set[int],
            rack: Mapping[int, str | None], width: Mapping[str | None, int]) -> Reason | None:
    leader_only = set(m.old_replicas) == set(m.replicas)
    if len(m.old_replicas) != len(m.replicas):
        return Reason("replication_factor")
    left = m.removing
    evacuated = tuple(b for b in left if b in gone)
    if evacuated:
        return Reason("evacuate", brokers=evacuated)
    if leader_only and m.old_replicas[0] in plan.demoted and m.replicas[0] != m.old_replicas[0]:
        return Reason("demote", brokers=(m.old_replicas[0],), leader_only=True)
    pool = plan.topics.get(m.topic)
    outside = tuple(b for b in left if plan.brokers.get(b) != pool)
    if outside:
        return Reason("isolate", brokers=outside)
    if found is not None and found.rule in ("relieve", "balance", "fill"):
        return Reason(found.rule, found.broker, found.dimension, found.bound, found.without, leader_only=leader_only)
    if not spans_racks(m.old_replicas, rack, width.get(pool, 0)) and spans_racks(m.replicas, rack, width.get(pool, 0)):
        return Reason("rack_spread", leader_only=leader_only)
    return None


def spans_racks(replicas: tuple[int, ...], rack: Mapping[int, str | None], racks: int) -> bool:
    """Whether ``replicas`` span min(RF, ``racks``) racks, as the placement requires: RF ≤ racks → distinct racks
    and none unracked; RF > racks → every rack (no racks: always).

    >>> rack = {1: "a", 2: "a", 3: "b"}
    >>> spans_racks((1, 2), rack, 2), spans_racks((1, 3), rack, 2), spans_racks((1, 2, 3), rack, 2)
    (False, True, True)
    """
    if racks == 0:
        return True
    on = [rack.get(b) for b in replicas]
    if len(replicas) <= racks:
        return None not in on and len(set(on)) == len(on)
    return len({r for r in on if r is not None}) >= racks


def unexplained(plan: Plan) -> tuple[PartitionMove, ...]:
    """The moves of ``plan`` that carry no reason."""
    return tuple(m for m in plan.moves if m.reason is None)


def explain(plan: Plan, topic: str, partition: int) -> list[str]:
    """Why ``topic``-``partition`` moves in ``plan`` and the alternatives the move beat, as lines to print.

    The alternatives, from the plan alone: keeping the current replicas (which breaks the reason's rule); for a
    fill, the other moves onto the same broker; for another load reason each other broker of the pool that could
    have taken the load the move shifts (the reason's ``without`` less the broker's load after the plan), with
    where that would leave it against its limit (capacity × headroom, from the plan's ``utilisation``).

    Raises
    ------
    InputError
        The plan has no such partition.
    """
    m = next((m for m in plan.partitions if (m.topic, m.partition) == (topic, partition)), None)
    if m is None:
        raise InputError(f"TOPIC-PARTITION: the plan has no partition {topic}-{partition}")
    head = f"{topic}-{partition}: {list(m.old_replicas)} -> {list(m.replicas)}"
    if not m.changed:
        return [f"{topic}-{partition}: does not move ({list(m.replicas)})"]
    lines = [f"{head}, copies {format_bytes(m.moved_bytes)}"]
    buying = [b.id for b in plan.planned_brokers if b.id in m.adding]
    if buying:
        lines.append(f"onto broker(s) {', '.join(map(str, buying))} still to buy (planned_brokers): the move runs once "
                     "they have joined")
    r = m.reason
    if r is None:
        return lines + ["reason: none recorded (a plan written without reasons, or edited by hand)"]
    lines.append(f"reason: {r.rule}: {r.describe()}")
    lines.append("alternatives it beat:")
    lines.append(f"  keep {list(m.old_replicas)}: breaks {r.rule} ({_broken(r)})")
    pool = plan.topics.get(topic)
    others = sorted(b for b, p in plan.brokers.items() if p == pool and b not in m.replicas and b not in m.old_replicas)
    table = plan.utilisation.get("brokers", {})
    if r.rule == "fill":
        same = [o for o in plan.moves if o.reason is not None and o.reason.rule == "fill" and o.reason.broker == r.broker]
        lines.append(f"  another partition onto broker {r.broker}: {len(same)} move(s) of this plan fill it "
                     f"({format_bytes(sum(o.moved_bytes for o in same))} in all); the placement took those copying "
                     "the fewest bytes for the load they bring")
    elif r.broker is not None and r.dimension in DIMENSIONS and str(r.broker) in table:
        d = r.dimension
        shifted = abs(float(r.without) - float(table[str(r.broker)][d]["after"]))
        headroom = plan.utilisation.get("pools", {}).get(pool, {}).get(d, {}).get("headroom")
        for b in others:
            cell = table.get(str(b), {}).get(d)
            if not cell or not cell.get("capacity"):
                continue
            cap, after = float(cell["capacity"]), float(cell["after"])
            verdict = ""
            if headroom is not None:
                over = after + shifted > headroom * cap
                verdict = f", {'over' if over else 'within'} its {headroom:.0%} limit"
            lines.append(f"  broker {b} instead: {d} {after / cap:.0%} -> {(after + shifted) / cap:.0%} of capacity"
                         f"{verdict}")
        if others:
            lines.append("  (among brokers within their limit the placement chose by copied bytes, the other "
                         "dimensions and rack spread)")
    elif r.leader_only:
        rest = [b for b in m.replicas if b != m.replicas[0] and b not in r.brokers]
        if rest:
            lines.append(f"  broker {', '.join(map(str, rest))} to lead instead: the placement chose broker "
                         f"{m.replicas[0]} (leadership spread over the pool)")
    elif others:
        lines.append(f"  other brokers of pool {pool!r} ({', '.join(map(str, others))}): the placement chose "
                     f"{', '.join(map(str, m.adding)) or 'no new broker'} (least loaded, rack spread kept)")
    return lines


def _broken(r: Reason) -> str:
    if r.rule in ("relieve", "balance", "fill"):
        side = "below" if r.rule == "fill" else "above"
        return f"broker {r.broker} {r.dimension} {r.without:.6g}, {side} {r.bound:.6g}"
    ids = ", ".join(map(str, r.brokers))
    return {"replication_factor": "the replication factor the operation sets",
            "evacuate": f"replicas stay on broker(s) {ids}",
            "demote": f"broker {ids}, which the operation demotes, stays the preferred leader",
            "isolate": f"replicas stay outside the pool on broker(s) {ids}",
            "rack_spread": "the replicas share racks"}[r.rule]
