"""A reason for every move of a plan: what undoing the move alone would break (`pools.plan_file.Reason`).

The first rule that applies names a move:

1. ``replication_factor``: the replica list changes length;
2. ``evacuate``: a replica leaves a broker the operation drains or that is unhealthy (`pools.health`);
   ``demote``: the replicas stay and leadership leaves a broker the operation demotes;
3. ``isolate``: a replica leaves a broker outside the topic's pool;
4. what the placement engine found (`planner.placement.engine.prune_moves`): ``rack_spread``, or a broker that
   undoing the move would put over its limit (``relieve``), above (``balance``) or below (``fill``) its band;
5. ``rack_spread`` when the current replicas span fewer than min(RF, racks of the pool) racks
   (`pools.pool_rules.spans_racks`, over the racks the pool has open: `pools.pool_rules.pool_racks`).

A move none of these explains keeps no reason (`unexplained` lists them): the planner's own plans have none.
`explain` says, from plan.json alone, why one partition moves and what it beat (``poolplan explain``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from pools.errors import InputError
from pools.health import ClusterHealth
from pools.plan_file import LOAD_RULES, PartitionMove, PartitionTable, Plan, Reason, ReasonRule
from pools.pool_rules import pool_racks, spans_racks
from pools.snapshot import DIMENSIONS, ClusterSnapshot
from pools.units import format_bytes

__all__ = ["with_reasons", "unexplained", "explain"]


def with_reasons(plan: Plan, snapshot: ClusterSnapshot, placed: Mapping[tuple[str, int], Reason],
                 health: ClusterHealth | None = None) -> Plan:
    """``plan`` with the `Reason` of every move (see the module docstring).

    Parameters
    ----------
    plan : Plan
    snapshot : ClusterSnapshot
        The cluster the plan is for (broker racks).
    placed : mapping of (topic, partition) to Reason
        What the engine found per partition it placed (`planner.placement.minimal_move.Placement.reasons`).
    health : ClusterHealth, optional
        The cluster's health (`pools.health`): replicas on its unhealthy brokers are evacuated, and a pool's
        racks count only with open capacity (`pools.pool_rules.pool_racks`).
    """
    gone = set(plan.drained) | set(health.brokers if health is not None else ())
    rack = {b.id: b.rack for b in snapshot.brokers}
    width = {pool: len(r) for pool, r in pool_racks(plan.brokers, rack, health).items() if pool is not None}
    table = PartitionTable.from_moves(plan.partitions)
    rows = np.flatnonzero(table.changed)  # only the partitions that move: one vector pass over them
    old, new = table.old[rows], table.new[rows]
    left = (old >= 0) & ~(old[:, :, None] == new[:, None, :]).any(axis=2)  # replicas the move drops, in order
    added = (new >= 0) & ~(new[:, :, None] == old[:, None, :]).any(axis=2)
    leader_only = ~left.any(axis=1) & ~added.any(axis=1)  # the same set of replicas
    resized = table.old_count[rows] != table.new_count[rows]
    evacuated = left & np.isin(old, np.fromiter(gone, np.int64, len(gone)))
    first = old[:, 0] if old.shape[1] else np.full(len(rows), -1, dtype=np.int64)
    demote = leader_only & np.isin(first, np.fromiter(plan.demoted, np.int64, len(plan.demoted))) & (
        new[:, 0] != first if new.shape[1] else False)
    old_pool = _broker_pools(plan, old)
    code = _pool_codes(plan)
    topic_pool = np.array([code.get(plan.topics.get(t), -1) for t in table.topics], dtype=np.int64)
    outside = left & (old_pool != topic_pool[table.topic[rows]][:, None])
    reasons = {}
    columns = zip(rows.tolist(), table.topic[rows].tolist(), table.partition[rows].tolist(), old.tolist(),
                  new.tolist(), resized.tolist(), evacuated.any(axis=1).tolist(), demote.tolist(),
                  outside.any(axis=1).tolist(), leader_only.tolist())
    for i, t, p, held, target, rf, evacuate, demote_, isolate, reorder in columns:
        topic = table.topics[t]
        if rf:
            reason = Reason(ReasonRule.REPLICATION_FACTOR)
        elif evacuate:
            reason = Reason(ReasonRule.EVACUATE, brokers=tuple(b for b in held if b >= 0 and b in gone
                                                               and b not in target))
        elif demote_:
            reason = Reason(ReasonRule.DEMOTE, brokers=(held[0],), leader_only=True)
        elif isolate:
            pool = plan.topics.get(topic)
            reason = Reason(ReasonRule.ISOLATE, brokers=tuple(b for b in held if b >= 0 and b not in target
                                                              and plan.brokers.get(b) != pool))
        else:
            reason = _placed_or_rack(placed.get((topic, p)), [b for b in held if b >= 0], [b for b in target if b >= 0],
                                     width.get(plan.topics.get(topic), 0), rack, reorder)
        if reason is not None:
            reasons[i] = reason
    return replace(plan, partitions=table.with_reasons(reasons))


def _pool_codes(plan: Plan) -> dict[str | None, int]:
    """A number per pool of ``plan`` (None, no pool: -1)."""
    names = sorted({*plan.topics.values(), *(p for p in plan.brokers.values() if p is not None)})
    return {p: k for k, p in enumerate(names)} | {None: -1}


def _broker_pools(plan: Plan, brokers: np.ndarray) -> np.ndarray:
    """The pool number (`_pool_codes`) of each broker id in ``brokers`` after ``plan``; -1: in no pool, not a broker
    of the plan, or padding."""
    code = _pool_codes(plan)
    ids = np.fromiter(plan.brokers, np.int64, len(plan.brokers))
    pools = np.fromiter((code.get(p, -1) for p in plan.brokers.values()), np.int64, len(plan.brokers))
    out = np.full(brokers.shape, -1, dtype=np.int64)
    if len(ids):
        order = np.argsort(ids)
        ids, pools = ids[order], pools[order]
        at = np.minimum(np.searchsorted(ids, brokers), len(ids) - 1)
        hit = ids[at] == brokers
        out[hit] = pools[at][hit]
    return out


def _placed_or_rack(found: Reason | None, old: list[int], new: list[int], racks: int, rack: Mapping[int, str | None],
                    leader_only: bool) -> Reason | None:
    """The load rule the engine found for a move, else ``rack_spread`` when the move repairs the spread."""
    if found is not None and found.rule in LOAD_RULES:
        return Reason(found.rule, found.broker, found.dimension, found.bound, found.without, (), leader_only)
    if not spans_racks([rack.get(b) for b in old], racks) and spans_racks([rack.get(b) for b in new], racks):
        return Reason(ReasonRule.RACK_SPREAD, leader_only=leader_only)
    return None


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
    lines.append(f"  keep {list(m.old_replicas)}: breaks {r.rule} ({r.describe(kept=True)})")
    pool = plan.topics.get(topic)
    others = sorted(b for b, p in plan.brokers.items() if p == pool and b not in m.replicas and b not in m.old_replicas)
    own = plan.utilisation.broker(r.broker, r.dimension) if r.broker is not None and r.dimension in DIMENSIONS else None
    if r.rule is ReasonRule.FILL:
        same = [o for o in plan.moves if o.reason is not None and o.reason.rule is ReasonRule.FILL
                and o.reason.broker == r.broker]
        lines.append(f"  another partition onto broker {r.broker}: {len(same)} move(s) of this plan fill it "
                     f"({format_bytes(sum(o.moved_bytes for o in same))} in all); the placement took those copying "
                     "the fewest bytes for the load they bring")
    elif own is not None and own.after is not None and r.without is not None:
        d = r.dimension
        shifted = abs(r.without - own.after)
        headroom = plan.pool_headroom(pool, d)
        for b in others:
            cell = plan.utilisation.broker(b, d)
            if cell is None or not cell.capacity or cell.after is None:
                continue
            cap, after = cell.capacity, cell.after
            verdict = ""
            if headroom is not None:
                over = plan.broker_over_limit(b, d, after + shifted)
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

