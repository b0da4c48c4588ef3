"""The numbers the quarterly report shows, computed from a run's inputs (no I/O, no drawing)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from planner.emit.progress import Progress
from planner.report.backtest import HorizonScore, Score, horizon_scores, pool_scores, topic_scores
from planner.report.capacity import Costing, PoolCapacity, costing, forecast_horizon, pool_capacity
from planner.report.compare import Comparison, RunSide, compare_runs
from planner.report.inputs import RunInputs
from planner.report.risks import Risks, plan_risks
from pools.audit.durability import topics_below_min_isr
from planner.report.runway import Runway, pool_runway
from pools.audit.findings import Finding, Severity
from pools.audit.loads import audit_loads
from pools.cluster_arrays import cluster_arrays
from pools.demand import at_horizon, topic_demand
from pools.forecast_band import NO_CALIBRATION, BandCalibration, GroupCalibration, calibrate, calibrate_groups, \
    group_rows
from pools.snapshot import DIMENSIONS

__all__ = [
    "BrokerHeat",
    "TopicRow",
    "TenantRow",
    "PoolRow",
    "BatchRow",
    "TieredRow",
    "ReportModel",
    "build_model",
    "TOP_TOPICS",
    "SEVERITIES",
    "DIMENSION_LABELS",
]

#: How many topics the "top topics" charts and tables show.
TOP_TOPICS = 15

#: How the report names each dimension.
DIMENSION_LABELS = {"nw_in": "Network in", "nw_out": "Network out", "disk": "Disk", "replicas": "Replicas"}

#: Severities as the report lists them: most severe first.
SEVERITIES: tuple[Severity, ...] = tuple(sorted(Severity, key=lambda s: -s.rank))

#: Per broker and dimension: ``capacity``, ``now``, ``before`` (forecast, today's placement), ``after``.
BrokerTable = Mapping[int, Mapping[str, Mapping[str, float]]]


@dataclass(frozen=True, slots=True)
class BrokerHeat:
    """Utilisation per broker (columns) and dimension (rows): now grouped by today's pools, after the plan
    grouped by the plan's pools (``None`` without a plan); ``to_buy``: the brokers after the plan still to buy."""

    brokers: tuple[int, ...]
    pools: tuple[str | None, ...]
    now: tuple[tuple[float | None, ...], ...]
    after_brokers: tuple[int, ...] | None = None
    after_pools: tuple[str | None, ...] | None = None
    after: tuple[tuple[float | None, ...], ...] | None = None
    to_buy: tuple[int, ...] = ()


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
    """A tenant (``None``: topics of no tenant) in one pool: topic count, bytes-in (B/s) and storage (bytes) of its
    profiled topics (``None`` when none is profiled)."""

    tenant: str | None
    pool: str | None
    topics: int
    bytes_in_p99: float | None
    storage_bytes: float | None


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


@dataclass(frozen=True, slots=True)
class TieredRow:
    """A tiered topic (``remote.storage.enable=true``, or with remote-storage metrics): its bytes on the brokers'
    disks per replica set (the profile's ``storage_bytes``, else the snapshot's sizes) and, where the history
    measured them (`pools.profile.REMOTE_COLUMNS`), its bytes in remote storage, remote copy and remote fetch
    (B/s, p99 minute) and the consumers' bytes-out (p99 minute), which includes what remote fetch serves."""

    topic: str
    local_bytes: int
    remote_bytes: int | None = None
    remote_copy: float | None = None
    remote_fetch: float | None = None
    bytes_out: float | None = None

    @property
    def measured(self) -> bool:
        return any(v is not None for v in (self.remote_bytes, self.remote_copy, self.remote_fetch))

    @property
    def remote_served(self) -> float | None:
        """The share of the consumers' bytes-out read from remote storage (None: unmeasured or no bytes-out)."""
        if self.remote_fetch is None or not self.bytes_out:
            return None
        return min(self.remote_fetch / self.bytes_out, 1.0)


@dataclass(frozen=True)
class ReportModel:
    """Everything the report shows; empty tuples and ``None`` where a stage's output was missing."""

    cluster: str
    taken_at: str | None
    notes: Mapping[str, str]
    headline: Mapping[str, Any]
    pools: tuple[PoolCapacity, ...] = ()
    heat: BrokerHeat | None = None
    topics: tuple[TopicRow, ...] = ()
    tenants: tuple[TenantRow, ...] = ()
    pool_rows: tuple[PoolRow, ...] = ()
    batches: tuple[BatchRow, ...] = ()
    findings: tuple[Finding, ...] | None = None
    warnings: tuple[str, ...] = field(default_factory=tuple)
    cost: Costing | None = None
    risks: Risks | None = None
    comparison: Comparison | None = None
    history_end: date | None = None
    read_only: tuple[Finding, ...] | None = None
    runway: Runway | None = None
    backtest_pools: tuple[Score, ...] | None = None
    backtest_topics: tuple[Score, ...] = ()
    backtest_horizons: tuple[HorizonScore, ...] = ()
    calibration: BandCalibration | None = None
    pool_calibration: GroupCalibration | None = None
    progress: Progress | None = None
    tiered: tuple[TieredRow, ...] = ()
    equal_dirs: tuple[int, ...] = ()

    @property
    def top_throughput(self) -> tuple[TopicRow, ...]:
        return tuple(sorted(self.topics, key=lambda r: (-r.bytes_in_p99, r.topic))[:TOP_TOPICS])

    @property
    def top_growth(self) -> tuple[TopicRow, ...]:
        return tuple(sorted(self.topics, key=lambda r: (-r.growth_per_day, r.topic))[:TOP_TOPICS])

    @property
    def as_of(self) -> date | None:
        """The day the runway counts from (the end of the metric history, else the snapshot's day)."""
        return next((p.as_of for p in self.pools if p.as_of is not None), None)

    @property
    def horizon_days(self) -> int | None:
        return next((p.horizon_days for p in self.pools if p.horizon_days is not None), None)

    @property
    def planned(self) -> bool:
        return "moved_bytes" in self.headline


def _tiered(run: RunInputs) -> tuple[TieredRow, ...]:
    """Every tiered topic of the snapshot, and any other topic the history has remote-storage metrics of."""
    if run.snapshot is None:
        return ()
    profile = run.profile or {}
    names = sorted({t.topic for t in run.snapshot.topics if t.remote_storage_enabled}
                   | {t for t, r in profile.items() if r.remote_measured and t in run.snapshot.partitions_by_topic})
    out = []
    for topic in names:
        row = profile.get(topic)
        if row is None:
            out.append(TieredRow(topic, sum(p.size_bytes for p in run.snapshot.partitions_by_topic.get(topic, ()))))
        else:
            out.append(TieredRow(topic, row.storage_bytes, row.remote_log_size_bytes, row.remote_copy_bytes_p99,
                                 row.remote_fetch_bytes_p99, row.bytes_out_p99))
    return tuple(out)


def build_model(run: RunInputs, previous: RunInputs | None = None) -> ReportModel:
    """The report's numbers from whatever stages of the run are present, compared with ``previous`` if given.

    Forecasts are at the plan's horizon, else at the policy's (`pools.pool_rules`), else at the profile's own.
    """
    horizon = forecast_horizon(run)
    if horizon is not None and run.profile:
        run = replace(run, profile=at_horizon(run.profile, horizon))
    snapshot, plan = run.snapshot, run.plan
    cluster = snapshot.cluster if snapshot else plan.cluster if plan else "unknown"
    before, after = _membership(run)
    brokers = _broker_table(run)
    topic_pool = _topic_pools(run)
    calibration = calibrate(run.backtest) if run.backtest else NO_CALIBRATION  # pools.forecast_band: per topic
    pool_band = calibrate_groups(group_rows(run.backtest, topic_pool)) if run.backtest else GroupCalibration()
    topics = tuple(_topic_rows(run, topic_pool, calibration))
    tenants = _tenants(run, topics, topic_pool)
    pools = pool_capacity(run, before, after, brokers)
    model = ReportModel(
        cluster=cluster,
        taken_at=snapshot.taken_at if snapshot else None,
        notes=dict(run.notes),
        headline=_headline(run),
        pools=pools,
        heat=_heat(before, after, brokers),
        topics=topics,
        tenants=tenants,
        pool_rows=_pool_rows(run, before, after, tenants),
        batches=_batches(run.bundle),
        findings=run.findings,
        warnings=tuple(plan.warnings) if plan else (),
        cost=costing(run),
        risks=plan_risks(plan, run.findings, snapshot) if plan and run.findings is not None else None,
        history_end=max(r.last_ts for r in run.profile.values()).date() if run.profile else None,
        read_only=tuple(topics_below_min_isr(snapshot, run.policy, at_least=1, current=True))
        if snapshot and run.policy else None,
        progress=run.progress,
        tiered=_tiered(run),
        equal_dirs=tuple(b.id for b in snapshot.brokers if len(b.log_dirs) > 1 and not b.log_dir_capacities)
        if snapshot else (),
    )
    model = replace(model, runway=_runway(run, model, topic_pool, pool_band))
    if run.backtest is not None:
        model = replace(model, backtest_pools=pool_scores(run.backtest, topic_pool),
                        backtest_topics=topic_scores(run.backtest, [t.topic for t in model.top_throughput]),
                        backtest_horizons=horizon_scores(run.backtest),
                        calibration=calibration, pool_calibration=pool_band)
    if previous is None:
        return model
    old = build_model(replace(previous, policy=previous.policy or run.policy))  # an earlier run: the same policy
    return replace(model, comparison=compare_runs(_side(old, previous), _side(model, run)))


def _runway(run: RunInputs, model: ReportModel, topic_pool: Mapping[str, str | None],
            calibration: GroupCalibration) -> Runway | None:
    """Per-topic runway (`planner.report.runway`), each pool's band its own (``calibration``); ``None`` without a
    snapshot, a profile or a horizon."""
    if not (run.snapshot and run.profile and model.pools and model.as_of and model.horizon_days is not None):
        return None
    broker = run.policy.new_broker if run.policy else None
    added = dict(run.plan.brokers_to_add) if run.plan else {}
    return pool_runway(run.snapshot, run.profile, topic_pool, model.pools, as_of=model.as_of,
                       horizon_days=model.horizon_days, lead_time_days=broker.lead_time_days if broker else None,
                       added=added, calibration=calibration)


def _side(model: ReportModel, run: RunInputs) -> RunSide:
    h = model.headline
    added = h.get("brokers_to_add")
    return RunSide(
        run=Path(run.run_dir).name,
        taken_at=model.taken_at,
        pools=model.pools,
        topics={t.topic: (t.pool, t.bytes_in_p99, t.storage_bytes) for t in model.topics},
        brokers=h.get("brokers"),
        brokers_to_add=None if added is None else sum(added.values()),
        findings=h.get("findings"),
        runway=model.runway,
        cost=model.cost.total if model.cost is not None else None,
    )


def _headline(run: RunInputs) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if run.snapshot:
        s = run.snapshot
        out |= {"brokers": len(s.brokers), "topics": len(s.topics), "partitions": len(s.partitions),
                "racks": len(s.racks)}
    if run.plan:
        copies = [m for m in run.plan.moves if m.adding]
        out |= {"moved_bytes": run.plan.moved_bytes, "partitions_moved": len(run.plan.moves),
                "partitions_copied": len(copies),
                "leader_only": sum(set(m.old_replicas) == set(m.replicas) for m in run.plan.moves),
                "brokers_to_add": dict(sorted(run.plan.brokers_to_add.items())),
                "solver_status": run.plan.solver.status, "solver_gap": run.plan.solver.gap}
    if run.bundle:
        throttle = run.bundle.get("throttle")
        out |= {"batches": len(run.bundle.get("batches", [])),
                "estimated_seconds": _number(run.bundle.get("estimated_seconds")),
                "throttle_floor_Bps": _number(throttle.get("floor_Bps")) if isinstance(throttle, Mapping) else None}
    if run.findings is not None:
        out["findings"] = {s.value: sum(f.severity is s for f in run.findings) for s in SEVERITIES}
    return out


def _membership(run: RunInputs) -> tuple[dict[int, str | None], dict[int, str | None] | None]:
    """Broker → pool now (the brokers the cluster has: not those still to buy) and after the plan (``None``
    without a plan)."""
    if run.plan:
        to_buy = {b.id for b in run.plan.planned_brokers}
        return {b: p for b, p in run.plan.brokers_before.items() if b not in to_buy}, dict(run.plan.brokers)
    if run.snapshot:
        pinned = run.policy.pinned_pool if run.policy else {}
        return {b.id: b.pool or pinned.get(b.id) for b in run.snapshot.brokers}, None
    return {}, None


def _broker_table(run: RunInputs) -> dict[int, dict[str, dict[str, float]]]:
    """Per broker and dimension: capacity, load now, at the forecast (today's placement) and after the plan.

    From ``plan.json`` when the run has a plan; else from the snapshot (and profile) through the audit's loads.
    """
    out: dict[int, dict[str, dict[str, float]]] = {}
    table = (run.plan.utilisation.brokers or {}) if run.plan else {}
    if table:
        for b, dims in table.items():  # in plan.json's order
            for dim, row in dims.items():
                if dim in DIMENSIONS:
                    cell = out.setdefault(b, {}).setdefault(dim, {})
                    cell |= {k: v for k, v in asdict(row).items() if v is not None}
                    cell.setdefault("capacity", 0.0)
    elif run.snapshot:
        s = run.snapshot
        loads = audit_loads(s, run.profile)
        for i, b in enumerate(cluster_arrays(s).broker_ids.tolist()):
            capacity = s.broker_by_id[b].capacity.to_dict()
            for d, dim in enumerate(DIMENSIONS):
                cell = out.setdefault(b, {}).setdefault(dim, {"capacity": float(capacity[dim])})
                for name, table_ in (("now", loads.now), ("before", loads.forecast)):
                    if not np.isnan(table_[i, d]):
                        cell[name] = float(table_[i, d])
    return out


def _heat(before: Mapping[int, str | None], after: Mapping[int, str | None] | None,
          brokers: BrokerTable) -> BrokerHeat | None:
    if not brokers:
        return None

    def order(pools: Mapping[int, str | None]) -> tuple[int, ...]:
        return tuple(sorted((b for b in brokers if b in pools), key=lambda b: (pools.get(b) is None, pools.get(b) or "",
                                                                              b)))

    def grid(ids: tuple[int, ...], key: str) -> tuple[tuple[float | None, ...], ...]:
        return tuple(tuple(_ratio(brokers[b].get(d, {}).get(key), brokers[b].get(d, {}).get("capacity"))
                           for b in ids) for d in DIMENSIONS)

    now_ids = order(before)
    heat = BrokerHeat(now_ids, tuple(before.get(b) for b in now_ids), grid(now_ids, "now"))
    if after is None:
        return heat
    after_ids = order(after)
    return BrokerHeat(heat.brokers, heat.pools, heat.now, after_ids, tuple(after.get(b) for b in after_ids),
                      grid(after_ids, "after"), tuple(b for b in after_ids if b not in before))


def _topic_pools(run: RunInputs) -> dict[str, str | None]:
    if run.plan:
        return dict(run.plan.topics)
    if run.policy and run.snapshot:
        return {t.topic: (run.policy.resolve(t.topic).candidates or (None,))[0] for t in run.snapshot.topics}
    return {}


def _topic_rows(run: RunInputs, topic_pool: Mapping[str, str | None],
                calibration: BandCalibration) -> list[TopicRow]:
    """Each profiled topic at the forecast: bytes-in with the calibrated band (`pools.forecast_band`), and storage
    capped by what the topic's retention keeps (`pools.demand.topic_demand`) when the snapshot lists it."""
    if not run.profile:
        return []
    tenant = run.policy.tenant_of if run.policy else (lambda t: None)
    kept = topic_demand(run.snapshot, run.profile, None, "forecast") if run.snapshot else {}
    rows = []
    for t, r in sorted(run.profile.items()):
        low, high = calibration.widen("bytes_in_p99", [r.forecast_horizon_days], [r.forecast_bytes_in_p99],
                                      [r.forecast_bytes_in_p99_low], [r.forecast_bytes_in_p99_high])
        storage = min(r.forecast_storage_bytes, kept[t].storage) if t in kept else r.forecast_storage_bytes
        rows.append(TopicRow(t, topic_pool.get(t), tenant(t), r.bytes_in_p99, r.forecast_bytes_in_p99,
                             float(low[0]), float(high[0]), r.bytes_in_p99_growth_per_day, float(r.storage_bytes),
                             storage))
    return rows


def _tenants(run: RunInputs, topics: tuple[TopicRow, ...],
             topic_pool: Mapping[str, str | None]) -> tuple[TenantRow, ...]:
    rows: dict[tuple[str, str], list] = {}
    by_topic = {r.topic: r for r in topics}
    listed = {t.topic for t in run.snapshot.topics} if run.snapshot else set()
    names = sorted(set(topic_pool) | set(by_topic) | listed)
    for t in names:
        tenant = run.policy.tenant_of(t) if run.policy else None
        key = (tenant or "", topic_pool.get(t) or "")
        acc = rows.setdefault(key, [0, None, None])
        acc[0] += 1
        if t in by_topic:
            acc[1] = (acc[1] or 0.0) + by_topic[t].bytes_in_p99
            acc[2] = (acc[2] or 0.0) + by_topic[t].storage_bytes
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


def _ratio(load: float | None, capacity: float | None) -> float | None:
    if load is None or not capacity:
        return None
    return float(load) / float(capacity)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
