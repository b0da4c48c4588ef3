"""A day-2 operation's result as a `pools.plan_file.Plan`: the same contract as ``poolplan plan`` writes.

The plan lists every partition (``old_replicas`` now, ``replicas`` after), the brokers' pools before and after
the operation, per-broker and per-pool utilisation at the forecast, the engine's cost per pool (``placement``)
and an ``operation`` table: what was asked, each touched pool's balance before and after
(`planner.operations.balance`), the bytes moved and a lower bound: no placement that drains the same brokers
and gives every broker the same disk load copies less (the larger of the bytes the operation must copy
anyway and the disk that arrives on brokers whose disk grows, in copied bytes). The independent
validator (`planner.validator`) checks the plan; what it finds becomes warnings, as for a quarterly plan, but a
plan crossing a cordon is refused (`planner.validator.refuse_cordon_crossings`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from planner.operations.balance import broker_loads, pool_balance, rack_pinned
from planner.operations.scope import OperationInputs, bytes_per_storage
from planner.placement.minimal_move import PoolPlacement
from planner.reasons import with_reasons
from planner.validator import refuse_cordon_crossings, validate_plan
from pools.demand import broker_load
from pools.plan_file import PartitionMove, Plan, Reason, SolverReport
from pools.pool_rules import usable_capacity
from pools.snapshot import DIMENSIONS

__all__ = ["Operation", "operation_plan"]


@dataclass(frozen=True)
class Operation:
    """The plan of an operation and the figures its command prints: per touched pool the balance before and
    after (`planner.operations.balance.pool_balance`), the moved bytes and their lower bound."""

    plan: Plan
    balance: Mapping[str, Mapping[str, Any]]
    moved_bytes: int
    lower_bound: int


def operation_plan(
    inputs: OperationInputs,
    name: str,
    *,
    arguments: Mapping[str, Any],
    brokers_after: Mapping[int, str | None],
    assignment: Mapping[tuple[str, int], tuple[int, ...]],
    pools: Sequence[str],
    band: float,
    forced_bytes: int,
    placement: Mapping[str, PoolPlacement] | None = None,
    warnings: Sequence[str] = (),
    extra: Mapping[str, Any] | None = None,
    dimension_bands: Mapping[str, float] | None = None,
    reasons: Mapping[tuple[str, int], Reason] | None = None,
) -> Operation:
    """Assemble and validate the plan of operation ``name`` (see the module docstring).

    Parameters
    ----------
    inputs : OperationInputs
    name : str
        ``rebalance``, ``add``, ``decommission`` or ``replace``.
    arguments : mapping
        What was asked, as the command line gave it (written under ``operation``).
    brokers_after : mapping of int to str or None
        Every broker's pool after the operation.
    assignment : mapping of (topic, partition) to replicas
        Targets of the partitions the operation placed; the others keep their replicas.
    pools : sequence of str
        The pools the operation touched (their balance is reported).
    band : float
        The balance band reported against.
    forced_bytes : int
        Bytes the operation must copy whatever the placement (replicas leaving drained or replaced brokers,
        replicas brought back into their pool).
    placement : mapping of str to PoolPlacement, optional
        The engine's cost per pool.
    warnings : sequence of str
    extra : mapping, optional
        More keys for the ``operation`` table (``replication_factors`` of an RF change).
    dimension_bands : mapping of str to float, optional
        Dimensions reported against their own band instead of ``band``.
    reasons : mapping, optional
        What the engine found per partition it placed (`planner.placement.minimal_move.Placement.reasons`); every
        move gets its reason (`planner.reasons.with_reasons`).
    """
    snap = inputs.snapshot
    moves = tuple(PartitionMove(p.topic, p.partition, p.replicas, assignment.get((p.topic, p.partition), p.replicas),
                                p.size_bytes) for p in snap.partitions)
    before, after = broker_loads(snap, inputs.forecast), broker_loads(snap, inputs.forecast, assignment)
    balance = {}
    for pool in sorted(set(pools)):
        members = [b for b, p in brokers_after.items() if p == pool]
        was = pool_balance(snap, before, inputs.members(pool), band,
                           rack_pinned(snap, inputs.forecast, inputs.members(pool)), dimension_bands)
        now = pool_balance(snap, after, members, band, rack_pinned(snap, inputs.forecast, members, assignment),
                           dimension_bands)
        balance[pool] = {d: {"before": was.get(d), "after": now.get(d)} for d in (*was, *(k for k in now if k not in was))}
    moved = sum(m.moved_bytes for m in moves)
    arriving = sum(max(0.0, float(after[b][2] - before[b][2])) for b in after)
    ratio = min((bytes_per_storage(inputs, p) for p in pools), default=0.0)
    lower_bound = max(int(forced_bytes), int(arriving * ratio))
    pool_names = sorted({p for p in (*inputs.brokers.values(), *brokers_after.values()) if p is not None}
                        | set(inputs.topics.values()))
    statuses = [p.status for p in (placement or {}).values()]
    plan = Plan(
        cluster=snap.cluster,
        brokers_before=dict(inputs.brokers),
        brokers=dict(brokers_after),
        topics=dict(inputs.topics),
        partitions=moves,
        brokers_to_add=dict.fromkeys(pool_names, 0),
        solver=SolverReport(
            name="HiGHS" if statuses else "none",
            status="Optimal" if all(s in ("seed", "optimal") for s in statuses) else "Feasible",
            solution=", ".join(f"{p}: {r.status}" for p, r in sorted((placement or {}).items())) or "swap",
            objective=float(moved), bound=float(lower_bound),
            gap=round(max((r.gap for r in (placement or {}).values()), default=0.0), 6),
        ),
        utilisation=_utilisation(inputs, brokers_after, assignment),
        warnings=tuple(inputs.warnings) + tuple(warnings),
        placement={p: r.to_dict() for p, r in sorted((placement or {}).items())},
        horizon_days=inputs.rules.horizon_days,
        operation={"name": name, "arguments": dict(arguments), "band": band, "moved_bytes": moved,
                   "lower_bound_bytes": lower_bound, "balance": balance} | dict(extra or {}),
    )
    plan = with_reasons(plan, snap, reasons or {}, inputs.health)
    found = validate_plan(snap, inputs.policy, plan, inputs.forecast)
    refuse_cordon_crossings(found)
    if found:
        notes = [f"validator: {v.message}" for v in found[:10]]
        if len(found) > 10:
            notes.append(f"validator: {len(found) - 10} more violation(s)")
        plan = replace(plan, warnings=plan.warnings + tuple(notes))
    return Operation(plan, balance, moved, lower_bound)


def _r(x: float) -> float:
    return round(float(x), 6)


def _utilisation(inputs: OperationInputs, brokers_after: Mapping[int, str | None],
                 assignment: Mapping[tuple[str, int], tuple[int, ...]]) -> dict[str, Any]:
    """The plan's ``utilisation`` table (the fields ``poolplan plan`` writes; no brokers are bought here)."""
    snap = inputs.snapshot
    load_now = broker_load(snap, inputs.now)
    before = broker_load(snap, inputs.forecast)
    after = broker_load(snap, inputs.forecast, assignment)
    brokers = {str(b.id): {d: {"capacity": _r(b.capacity.get(d)), "now": _r(load_now[b.id][d]),
                               "before": _r(before[b.id][d]), "after": _r(after[b.id][d])} for d in DIMENSIONS}
               for b in snap.brokers}
    pools = {}
    for pool in sorted({p for p in brokers_after.values() if p is not None} | set(inputs.topics.values())):
        limits = inputs.rules.limits(pool)
        members = [b for b in snap.brokers if brokers_after.get(b.id) == pool]
        old = [b for b in snap.brokers if inputs.brokers.get(b.id) == pool]
        topics = [t for t, p in inputs.topics.items() if p == pool]
        pools[pool] = {
            d: {
                "capacity": _r(sum(b.capacity.get(d) for b in members)),
                "capacity_with_added": _r(sum(b.capacity.get(d) for b in members)),
                "capacity_usable": _r(usable_capacity([b.capacity.get(d) for b in members],
                                                      limits.tolerated_failures)),
                "demand_now": _r(sum(inputs.now[t].get(d) for t in topics if t in inputs.now)),
                "demand_forecast": _r(sum(inputs.forecast[t].get(d) for t in topics if t in inputs.forecast)),
                "headroom": limits.headroom[i],
                "load_before": _r(sum(before[b.id][d] for b in old)),
                "load_after": _r(sum(after[b.id][d] for b in members)),
            }
            for i, d in enumerate(DIMENSIONS)
        }
    return {"brokers": brokers, "pools": pools}
