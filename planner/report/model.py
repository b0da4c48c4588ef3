"""The numbers the quarterly report shows, computed from a run's inputs (no I/O, no drawing)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from planner.report.inputs import RunInputs
from pools.audit.findings import Finding, Severity
from pools.audit.index import cluster_arrays
from pools.audit.loads import audit_loads
from pools.demand import at_horizon
from pools.pool_rules import PoolRules, usable_capacity
from pools.snapshot import DIMENSIONS

__all__ = [
    "PoolUtilisation",
    "BrokerHeat",
    "TopicRow",
    "TenantRow",
    "PoolRow",
    "BatchRow",
    "ReportModel",
    "build_model",
    "TOP_TOPICS",
]

#: How many topics the "top topics" charts and tables show.
TOP_TOPICS = 15


@dataclass(frozen=True, slots=True)
class PoolUtilisation:
    """One pool and dimension: capacity and utilisation (fractions of capacity, ``None`` = unknown).

    ``failures`` is the forecast load over the usable capacity with the tolerated broker failures down
    (`pools.pool_rules.usable_capacity`): after the plan when there is one, else with today's brokers.
    """

    pool: str
    dimension: str
    capacity: float
    now: float | None
    forecast: float | None
    after: float | None
    headroom: float | None
    failures: float | None = None


@dataclass(frozen=True, slots=True)
class BrokerHeat:
    """Utilisation per broker (columns, ordered by pool then id) and dimension (rows), now and after the plan."""

    brokers: tuple[int, ...]
    pools: tuple[str | None, ...]
    now: tuple[tuple[float | None, ...], ...]
    after: tuple[tuple[float | None, ...], ...] | None


@dataclass(frozen=True, slots=True)
class TopicRow:
    """A topic's bytes-in (B/s) now and at the forecast with its band, growth per day and storage (bytes)."""

    topic: str
    pool: str | None
    tenant: str | None
    bytes_in_p99: float
    forecast: float
    low: float
    high: float
    growth_per_day: float
    storage_bytes: float
    forecast_storage_bytes: float


@dataclass(frozen=True, slots=True)
class TenantRow:
    """A tenant (``None``: topics of no tenant) in one pool: topic count, bytes-in (B/s) and storage (bytes)."""

    tenant: str | None
    pool: str | None
    topics: int
    bytes_in_p99: float
    storage_bytes: float


@dataclass(frozen=True, slots=True)
class PoolRow:
    """A pool's brokers now and after the plan (``None`` without a plan), brokers the plan adds, its tenants."""

    pool: str
    brokers_now: int
    brokers_after: int | None
    brokers_to_add: int | None
    tenants: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class BatchRow:
    """A reassignment batch: partitions, bytes moved and the estimated duration at its throttle."""

    batch: int
    phase: str
    partitions: int
    moved_bytes: float
    estimated_seconds: float
    throttle_bps: float | None


@dataclass(frozen=True)
class ReportModel:
    """Everything the report shows; empty tuples and ``None`` where a stage's output was missing."""

    cluster: str
    taken_at: str | None
    notes: Mapping[str, str]
    headline: Mapping[str, Any]
    pools: tuple[PoolUtilisation, ...] = ()
    heat: BrokerHeat | None = None
    top_throughput: tuple[TopicRow, ...] = ()
    top_growth: tuple[TopicRow, ...] = ()
    tenants: tuple[TenantRow, ...] = ()
    pool_rows: tuple[PoolRow, ...] = ()
    batches: tuple[BatchRow, ...] = ()
    findings: tuple[Finding, ...] | None = None
    warnings: tuple[str, ...] = field(default_factory=tuple)


def build_model(run: RunInputs) -> ReportModel:
    """The report's numbers from whatever stages of the run are present.

    Forecasts are at the plan's horizon, else at the policy's (`pools.pool_rules`), else at the profile's own.
    """
    horizon = _horizon(run)
    if horizon is not None and run.profile:
        run = replace(run, profile=at_horizon(run.profile, horizon))
    snapshot, plan = run.snapshot, run.plan
    cluster = snapshot.cluster if snapshot else plan.cluster if plan else "unknown"
    before, after = _membership(run)
    broker_now, broker_fc, broker_after, capacity = _broker_utilisation(run)
    topic_pool = _topic_pools(run)
    topics = _topic_rows(run, topic_pool)
    tenants = _tenants(run, topics, topic_pool)
    return ReportModel(
        cluster=cluster,
        taken_at=snapshot.taken_at if snapshot else None,
        notes=dict(run.notes),
        headline=_headline(run) | ({"horizon_days": horizon} if horizon is not None else {}),
        pools=_pool_utilisation(run, before, broker_now, broker_fc, broker_after, capacity, after),
        heat=_heat(before, broker_now, broker_after, capacity),
        top_throughput=tuple(sorted(topics, key=lambda r: (-r.bytes_in_p99, r.topic))[:TOP_TOPICS]),
        top_growth=tuple(sorted(topics, key=lambda r: (-r.growth_per_day, r.topic))[:TOP_TOPICS]),
        tenants=tenants,
        pool_rows=_pool_rows(run, before, after, tenants),
        batches=_batches(run.bundle),
        findings=run.findings,
        warnings=tuple(plan.warnings) if plan else (),
    )


def _horizon(run: RunInputs) -> int | None:
    if run.plan and run.plan.horizon_days is not None:
        return run.plan.horizon_days
    return PoolRules.from_policy(run.policy).horizon_days if run.policy else None


def _headline(run: RunInputs) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if run.snapshot:
        s = run.snapshot
        out |= {"brokers": len(s.brokers), "topics": len(s.topics), "partitions": len(s.partitions),
                "racks": len(s.racks)}
    if run.plan:
        out |= {"moved_bytes": run.plan.moved_bytes, "partitions_moved": len(run.plan.moves),
                "brokers_to_add": dict(sorted(run.plan.brokers_to_add.items())),
                "solver_status": run.plan.solver.status, "solver_gap": run.plan.solver.gap}
    if run.bundle:
        out |= {"batches": len(run.bundle.get("batches", [])),
                "estimated_seconds": _number(run.bundle.get("estimated_seconds"))}
    if run.findings is not None:
        out["findings"] = {s.value: sum(f.severity is s for f in run.findings) for s in Severity}
    return out


def _membership(run: RunInputs) -> tuple[dict[int, str | None], dict[int, str | None] | None]:
    """Broker → pool now and after the plan (``None`` without a plan)."""
    if run.plan:
        return dict(run.plan.brokers_before), dict(run.plan.brokers)
    if run.snapshot:
        pinned = run.policy.pinned_pool if run.policy else {}
        return {b.id: b.pool or pinned.get(b.id) for b in run.snapshot.brokers}, None
    return {}, None


def _broker_utilisation(run: RunInputs):
    """Per broker: load now, at the forecast (current placement), after the plan, and capacity, per dimension."""
    now: dict[int, dict[str, float]] = {}
    fc: dict[int, dict[str, float]] = {}
    after: dict[int, dict[str, float]] = {}
    cap: dict[int, dict[str, float]] = {}
    table = (run.plan.utilisation or {}).get("brokers", {}) if run.plan else {}
    if table:
        for key, dims in table.items():
            b = int(key)
            for dim, row in dims.items():
                if dim in DIMENSIONS and isinstance(row, Mapping):
                    cap.setdefault(b, {})[dim] = _number(row.get("capacity")) or 0.0
                    for target, name in ((now, "now"), (fc, "before"), (after, "after")):
                        value = _number(row.get(name))
                        if value is not None:
                            target.setdefault(b, {})[dim] = value
    elif run.snapshot:
        s = run.snapshot
        loads = audit_loads(s, run.profile)
        for i, b in enumerate(cluster_arrays(s).broker_ids.tolist()):
            cap[b] = s.broker_by_id[b].capacity.to_dict()
            now[b] = {d: float(v) for d, v in zip(DIMENSIONS, loads.now[i]) if not np.isnan(v)}
            fc[b] = {d: float(v) for d, v in zip(DIMENSIONS, loads.forecast[i]) if not np.isnan(v)}
    return now, fc, after, cap


def _pool_utilisation(run, before, now, fc, after, cap, after_members) -> tuple[PoolUtilisation, ...]:
    plan_pools = (run.plan.utilisation or {}).get("pools", {}) if run.plan else {}
    names = sorted({p for p in before.values() if p} | set(plan_pools) | {p for p in (after_members or {}).values() if p})
    rules = PoolRules.from_policy(run.policy) if run.policy else None
    out = []
    for pool in names:
        members = [b for b, p in before.items() if p == pool]
        limits = rules.pools.get(pool) if rules else None
        for dim in DIMENSIONS:
            capacity = sum(cap.get(b, {}).get(dim, 0.0) for b in members)
            row = plan_pools.get(pool, {}).get(dim, {}) if isinstance(plan_pools.get(pool), Mapping) else {}
            after_value = failures = None
            if row:
                after_value = _ratio(_number(row.get("demand_forecast")), _number(row.get("capacity_with_added")))
                failures = _ratio(_number(row.get("demand_forecast")), _number(row.get("capacity_usable")))
            elif after_members is not None:
                moved = [b for b, p in after_members.items() if p == pool]
                after_value = _ratio(_sum(after, moved, dim), sum(cap.get(b, {}).get(dim, 0.0) for b in moved))
            elif limits is not None:
                caps = [cap.get(b, {}).get(dim, 0.0) for b in members]
                failures = _ratio(_sum(fc, members, dim), usable_capacity(caps, limits.tolerated_failures))
            headroom = _number(row.get("headroom")) if row else None
            if headroom is None and limits is not None:
                headroom = limits.headroom_of(dim)
            out.append(PoolUtilisation(pool, dim, capacity, _ratio(_sum(now, members, dim), capacity),
                                       _ratio(_sum(fc, members, dim), capacity), after_value, headroom, failures))
    return tuple(out)


def _heat(before, now, after, cap) -> BrokerHeat | None:
    brokers = sorted(cap, key=lambda b: (before.get(b) or "\uffff", b))
    if not brokers:
        return None

    def grid(source: dict[int, dict[str, float]]) -> tuple[tuple[float | None, ...], ...]:
        return tuple(tuple(_ratio(source.get(b, {}).get(d), cap[b].get(d, 0.0)) for b in brokers) for d in DIMENSIONS)

    return BrokerHeat(tuple(brokers), tuple(before.get(b) for b in brokers), grid(now), grid(after) if after else None)


def _topic_pools(run: RunInputs) -> dict[str, str | None]:
    if run.plan:
        return dict(run.plan.topics)
    if run.policy and run.snapshot:
        return {t.topic: (run.policy.resolve(t.topic).candidates or (None,))[0] for t in run.snapshot.topics}
    return {}


def _topic_rows(run: RunInputs, topic_pool: Mapping[str, str | None]) -> list[TopicRow]:
    if not run.profile:
        return []
    tenant = run.policy.tenant_of if run.policy else (lambda t: None)
    return [
        TopicRow(t, topic_pool.get(t), tenant(t), r.bytes_in_p99, r.forecast_bytes_in_p99, r.forecast_bytes_in_p99_low,
                 r.forecast_bytes_in_p99_high, r.bytes_in_p99_growth_per_day, float(r.storage_bytes),
                 r.forecast_storage_bytes)
        for t, r in sorted(run.profile.items())
    ]


def _tenants(run: RunInputs, topics: list[TopicRow], topic_pool: Mapping[str, str | None]) -> tuple[TenantRow, ...]:
    rows: dict[tuple[str, str], list[float]] = {}
    by_topic = {r.topic: r for r in topics}
    names = sorted(set(topic_pool) | set(by_topic) | ({t.topic for t in run.snapshot.topics} if run.snapshot else set()))
    for t in names:
        tenant = run.policy.tenant_of(t) if run.policy else None
        key = (tenant or "", topic_pool.get(t) or "")
        acc = rows.setdefault(key, [0, 0.0, 0.0])
        acc[0] += 1
        if t in by_topic:
            acc[1] += by_topic[t].bytes_in_p99
            acc[2] += by_topic[t].storage_bytes
    return tuple(TenantRow(k[0] or None, k[1] or None, int(v[0]), v[1], v[2]) for k, v in sorted(rows.items()))


def _pool_rows(run: RunInputs, before, after, tenants: tuple[TenantRow, ...]) -> tuple[PoolRow, ...]:
    names = sorted({p for p in before.values() if p} | {p for p in (after or {}).values() if p}
                   | {t.pool for t in tenants if t.pool} | (set(run.policy.pool_names) if run.policy else set()))
    added = dict(run.plan.brokers_to_add) if run.plan else None
    return tuple(
        PoolRow(
            pool,
            sum(p == pool for p in before.values()),
            None if after is None else sum(p == pool for p in after.values()),
            None if added is None else int(added.get(pool, 0)),
            tuple(sorted({t.tenant for t in tenants if t.pool == pool and t.tenant})),
        )
        for pool in names
    )


def _batches(bundle: Mapping[str, Any] | None) -> tuple[BatchRow, ...]:
    out = []
    for i, b in enumerate((bundle or {}).get("batches", [])):
        if not isinstance(b, Mapping):
            continue
        out.append(BatchRow(int(_number(b.get("batch")) or i + 1), str(b.get("phase", "")),
                            int(_number(b.get("partitions")) or 0), _number(b.get("moved_bytes")) or 0.0,
                            _number(b.get("estimated_seconds")) or 0.0, _number(b.get("throttle_Bps"))))
    return tuple(out)


def _sum(source: dict[int, dict[str, float]], brokers: list[int], dim: str) -> float | None:
    values = [source[b][dim] for b in brokers if dim in source.get(b, {})]
    return float(sum(values)) if values else None


def _ratio(load: float | None, capacity: float | None) -> float | None:
    if load is None or not capacity:
        return None
    return float(load) / float(capacity)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


