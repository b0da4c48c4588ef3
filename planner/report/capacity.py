"""Each pool's capacity before and after the plan, its runway to the limit, the N−1 view and the cost of new brokers.

Every number comes from ``plan.json`` where the plan holds it (per-broker capacities and loads, per-pool demand,
headroom, brokers to add); without a plan, from the snapshot and profile through the audit's load model. What the
pool rules decide (the maximum utilisation of a pool and dimension, and which brokers a failure removes) is asked
of one function, `pool_rules`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from planner.report.inputs import RunInputs
from pools.plan_file import PoolLoad
from pools.policy import NewBrokerType
from pools.pool_rules import DEFAULT_TOLERATED_BROKER_FAILURES, PoolRules, failing_brokers, usable_capacity
from pools.snapshot import DIMENSIONS

__all__ = [
    "CapacityLimits",
    "PoolCapacity",
    "CostRow",
    "Costing",
    "pool_rules",
    "pool_capacity",
    "costing",
    "forecast_horizon",
    "RUNWAY_CAP_DAYS",
]

#: Runway beyond this many days is shown as "more than 10 years": compounding growth that far out is a guess.
RUNWAY_CAP_DAYS = 3650


@dataclass(frozen=True, slots=True)
class CapacityLimits:
    """What the pool rules allow one pool in one dimension.

    ``max_utilisation`` is the policy's ``headroom`` (the largest fraction of capacity the pool may use);
    ``lost`` names the brokers a failure removes (broker ids, ``"new"`` for a broker the plan adds) and
    ``usable`` the capacity left without them.
    """

    max_utilisation: float | None
    lost: tuple[str, ...]
    usable: float


@dataclass(frozen=True, slots=True)
class PoolCapacity:
    """One pool and dimension: capacity before and after the plan, loads, limits, N−1 and runway.

    Loads are in the dimension's unit (bytes/s, bytes, replicas). ``load_now`` and ``load_forecast`` are on the
    pool's brokers before the plan with today's placement; ``demand_now`` and ``demand_forecast`` are the pool's
    topics after the plan (the plan's numbers), carried by ``capacity_after`` (its brokers after the plan,
    including the ``added`` ones). ``limits`` applies the failures the policy tolerates; ``loss`` loses at least
    one broker (the N−1 view, the same as ``limits`` unless the policy tolerates none). ``runway_days`` counts
    from ``as_of`` until the demand (compounding at ``growth_per_day``) first exceeds ``max_utilisation ×
    usable``: 0 when it already does, ``None`` when it never does at this growth. That pool-average runway is
    kept for callers of this API; the report's runway sums each topic's own forecast (`planner.report.runway`).
    ``unbought`` are the limits without the brokers the plan adds, ``capacity_placed`` the capacity of the
    brokers the plan places replicas on (the brokers still to buy included: ``to_buy``, ``plan.json``'s
    ``planned_brokers`` of the pool, carry their planned share once they join), ``load_after`` the load on those
    brokers at the forecast after the plan (whatever topics they hold) and ``busiest_after`` the largest share of
    one of them.
    """

    pool: str
    dimension: str
    brokers_before: int
    brokers_after: int
    added: int
    capacity_before: float
    capacity_after: float
    load_now: float | None
    load_forecast: float | None
    demand_now: float | None
    demand_forecast: float | None
    limits: CapacityLimits
    loss: CapacityLimits
    horizon_days: int | None
    as_of: date | None
    planned: bool
    unbought: CapacityLimits | None = None
    capacity_placed: float | None = None
    busiest_after: float | None = None
    to_buy: tuple[int, ...] = ()
    load_after: float | None = None

    @property
    def max_utilisation(self) -> float | None:
        return self.limits.max_utilisation

    @property
    def now(self) -> float | None:
        """Utilisation now: today's load on today's brokers."""
        return _ratio(self.load_now, self.capacity_before)

    @property
    def forecast(self) -> float | None:
        """Utilisation at the forecast horizon with today's placement on today's brokers."""
        return _ratio(self.load_forecast, self.capacity_before)

    @property
    def after(self) -> float | None:
        """Utilisation at the forecast horizon after the plan: the load on the brokers it places replicas on
        (``load_after`` on ``capacity_placed``: its brokers after the plan, those still to buy included; ``None``:
        no plan), the same basis as `now` and `forecast`."""
        if not self.planned:
            return None
        return _ratio(self.load_after, self.capacity_after if self.capacity_placed is None else
                      self.capacity_placed)

    @property
    def limit(self) -> float | None:
        """The most load the rules allow: max utilisation × usable capacity."""
        return None if self.max_utilisation is None else self.max_utilisation * self.limits.usable

    @property
    def unbought_limit(self) -> float | None:
        """The limit without the brokers the plan adds (``unbought``; the same as ``limit`` when it adds none)."""
        limits = self.unbought or self.limits
        return None if limits.max_utilisation is None else limits.max_utilisation * limits.usable

    @property
    def after_loss_now(self) -> float | None:
        """Utilisation of what is left after the N−1 loss, with today's demand."""
        return _ratio(self.demand_now, self.loss.usable)

    @property
    def after_loss_forecast(self) -> float | None:
        """Utilisation of what is left after the N−1 loss, with the forecast demand."""
        return _ratio(self.demand_forecast, self.loss.usable)

    @property
    def growth_per_day(self) -> float | None:
        """The pool's compounded daily growth between its demand now and at the forecast horizon."""
        d0, dh, h = self.demand_now, self.demand_forecast, self.horizon_days
        if d0 is None or dh is None or not h or d0 <= 0 or dh <= 0:
            return None
        return math.expm1(math.log(dh / d0) / h)

    @property
    def runway_days(self) -> float | None:
        """Days from ``as_of`` until the demand crosses the limit (see the class docstring)."""
        limit, d0, g = self.limit, self.demand_now, self.growth_per_day
        if limit is None or d0 is None:
            return None
        if d0 > limit:
            return 0.0
        if g is None or g <= 0 or d0 <= 0:
            return None
        return math.log(limit / d0) / math.log1p(g)

    @property
    def runway_whole_days(self) -> int | None:
        """Whole days from ``as_of`` to the day the limit is crossed (``None``: never or beyond `RUNWAY_CAP_DAYS`)."""
        days = self.runway_days
        return None if days is None or days > RUNWAY_CAP_DAYS else math.floor(days)

    @property
    def runway_date(self) -> date | None:
        """The day the limit is crossed (``None``: never, beyond `RUNWAY_CAP_DAYS`, or no date known)."""
        days = self.runway_whole_days
        return None if days is None or self.as_of is None else self.as_of + timedelta(days=days)


@dataclass(frozen=True, slots=True)
class CostRow:
    """The brokers one pool lacks and what they cost (``cost`` is ``None`` without a price)."""

    pool: str
    brokers: int
    cost: float | None


@dataclass(frozen=True)
class Costing:
    """The brokers to add per pool, priced by the policy's ``[new_broker]`` (``broker`` ``None``: no policy)."""

    rows: tuple[CostRow, ...]
    broker: NewBrokerType | None

    @property
    def brokers(self) -> int:
        return sum(r.brokers for r in self.rows)

    @property
    def total(self) -> float | None:
        return None if self.price is None else self.price * self.brokers

    @property
    def price(self) -> float | None:
        return None if self.broker is None else self.broker.price


def pool_rules(run: RunInputs, pool: str, dimension: str, capacities: Mapping[str, float], *,
               at_least: int = 0) -> CapacityLimits:
    """The pool rules for ``pool`` in ``dimension``: its maximum utilisation and what losing brokers leaves.

    This is the report's one question to the pool rules; every capacity limit the report shows comes from it.
    The maximum utilisation is the plan's ``headroom`` for the pool, else `PoolRules.limits` of the policy (the
    pool's own headroom, else the policy default, also for a pool the policy does not name); a failure removes the
    largest of ``capacities`` (the pool's brokers after the plan, ``"new"`` for an added one), as many as
    `PoolRules.limits` tolerates (`DEFAULT_TOLERATED_BROKER_FAILURES` without a policy) and at least ``at_least``.

    Examples
    --------
    >>> from planner.report.inputs import RunInputs
    >>> pool_rules(RunInputs("run"), "core", "nw_in", {"1": 50.0, "2": 80.0, "new": 80.0})
    CapacityLimits(max_utilisation=None, lost=('2',), usable=130.0)
    """
    headroom = run.plan.pool_headroom(pool, dimension) if run.plan else None
    limits = PoolRules.from_policy(run.policy).limits(pool) if run.policy is not None else None
    if headroom is None and limits is not None:
        headroom = limits.headroom_of(dimension)
    tolerated = limits.tolerated_failures if limits is not None else DEFAULT_TOLERATED_BROKER_FAILURES
    labels = sorted(capacities, key=_broker_order)
    values = [capacities[label] for label in labels]
    lost = failing_brokers(values, max(tolerated, at_least))
    return CapacityLimits(headroom, tuple(labels[i] for i in lost), usable_capacity(values, max(tolerated, at_least)))


def pool_capacity(run: RunInputs, before: Mapping[int, str | None], after: Mapping[int, str | None] | None,
                  brokers: Mapping[int, Mapping[str, Mapping[str, float]]]) -> tuple[PoolCapacity, ...]:
    """Every pool's `PoolCapacity` per dimension, sorted by pool then dimension.

    ``before``/``after`` map brokers to pools before and after the plan (``after`` ``None``: no plan);
    ``brokers`` holds each broker's ``capacity``, ``now`` and ``before`` (forecast, today's placement) per
    dimension, as ``plan.json``'s ``utilisation.brokers`` does.
    """
    plan_pools = run.plan.utilisation.pool_names if run.plan else ()
    names = sorted({p for p in before.values() if p} | set(plan_pools) | {p for p in (after or {}).values() if p})
    horizon, as_of = forecast_horizon(run), _as_of(run)
    added = dict(run.plan.brokers_to_add) if run.plan else {}
    buying = {b.id: b.pool for b in run.plan.planned_brokers} if run.plan else {}
    out = []
    for pool in names:
        old = [b for b, p in before.items() if p == pool]
        new = old if after is None else [b for b, p in after.items() if p == pool]
        n_added = int(added.get(pool, 0))
        to_buy = tuple(sorted(b for b in new if buying.get(b) == pool))
        unplaced = n_added - len(to_buy)  # a plan written before planned_brokers adds capacity, no broker
        for dim in DIMENSIONS:
            row = (run.plan.utilisation.pool(pool, dim) if run.plan else None) or PoolLoad()
            cap_before = sum(_cap(brokers, b, dim) for b in old)
            caps = {str(b): _cap(brokers, b, dim) for b in new}
            cap_real = sum(caps.values())
            cap_after = row.capacity_with_added
            if cap_after is None:
                cap_after = cap_real
            for i in range(unplaced):  # added brokers are of the policy's new type: the plan's extra capacity
                caps[f"new{i + 1}" if unplaced > 1 else "new"] = (cap_after - cap_real) / unplaced
            load_now, load_fc = _sum(brokers, old, dim, "now"), _sum(brokers, old, dim, "before")
            planned = after is not None
            demand_now = row.demand_now if planned else load_now
            demand_fc = row.demand_forecast if planned else load_fc
            limits = pool_rules(run, pool, dim, caps)
            loss = limits if limits.lost or not caps else pool_rules(run, pool, dim, caps, at_least=1)
            unbought = pool_rules(run, pool, dim, {str(b): caps[str(b)] for b in new if b not in to_buy}) \
                if n_added else limits
            busiest = max((_ratio(brokers[b][dim]["after"], brokers[b][dim].get("capacity")) or 0.0
                           for b in new if "after" in brokers.get(b, {}).get(dim, {})),
                          default=None) if planned else None
            load_after = _sum(brokers, new, dim, "after") if planned else None
            if load_after is None and planned:
                load_after = row.load_after
            out.append(PoolCapacity(pool, dim, len(old), len(new), n_added, cap_before, cap_after, load_now, load_fc,
                                    demand_now, demand_fc, limits, loss, horizon, as_of, planned, unbought,
                                    cap_real if planned else None, busiest, to_buy, load_after))
    return tuple(out)


def costing(run: RunInputs) -> Costing | None:
    """The brokers each pool lacks with their price (``None`` without a plan)."""
    if run.plan is None:
        return None
    broker = run.policy.new_broker if run.policy else None
    price = broker.price if broker else None
    rows = tuple(CostRow(pool, int(n), None if price is None else price * int(n))
                 for pool, n in sorted(run.plan.brokers_to_add.items()) if n)
    return Costing(rows, broker)


def forecast_horizon(run: RunInputs) -> int | None:
    """The forecast horizon (days) the report's forecasts are for: the plan's, else the policy's, else the
    profile's own."""
    if run.plan and run.plan.horizon_days is not None:
        return run.plan.horizon_days
    if run.policy is not None:
        return PoolRules.from_policy(run.policy).horizon_days
    if run.profile:
        return max(r.forecast_horizon_days for r in run.profile.values())
    return None


def _as_of(run: RunInputs) -> date | None:
    """The day the demand "now" was measured: the end of the metric history, else the snapshot's day."""
    if run.profile:
        return max(r.last_ts for r in run.profile.values()).date()
    if run.snapshot and run.snapshot.taken_at:
        return date.fromisoformat(run.snapshot.taken_at[:10])
    return None


def _cap(brokers: Mapping[int, Mapping[str, Mapping[str, float]]], b: int, dim: str) -> float:
    return float(brokers.get(b, {}).get(dim, {}).get("capacity", 0.0))


def _sum(brokers: Mapping[int, Mapping[str, Mapping[str, float]]], members: Sequence[int], dim: str,
         key: str) -> float | None:
    values = [brokers[b][dim][key] for b in members if key in brokers.get(b, {}).get(dim, {})]
    return float(sum(values)) if values else None


def _broker_order(label: str) -> tuple[int, str]:
    return (int(label), "") if label.isdigit() else (1 << 62, label)


def _ratio(load: float | None, capacity: float | None) -> float | None:
    if load is None or not capacity or capacity <= 0:
        return None
    return float(load) / float(capacity)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
