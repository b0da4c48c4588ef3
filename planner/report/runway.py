"""The runway: when each pool's demand first exceeds its limit, and by when brokers must be ordered.

A pool's demand on day ``t`` after the end of the metric history (``as_of``) is the sum over the pool's topics
of each topic's own forecast on that day (`pools.demand.demand_over_days`: the profile's forecast re-derived at
``t`` days, each topic compounding at its own growth), never a pool-wide average. The band is the pool's calibrated
one (`pools.forecast_band.GroupCalibration`: the pool's summed forecast widened by the spread its own backtest
measured, or every pool's pooled where its own is too short); its high edge gives the earliest crossing, the
forecast the likely one, the low edge the latest. A crossing is the first whole day
``1 ≤ t ≤ max(history_days, horizon_days)`` on which the demand exceeds the limit (day 0 when the demand measured
now already does); later ones are "after" that day. How far the evidence reaches is `pools.evidence`'s rule: a
crossing within the span of history the forecast was fitted on (``history_days``) is a forecast, one past it (up
to the plan's horizon) a trend (`Runway.trend`), dated but said to be one.

The limit is the pool's maximum utilisation × the capacity left when the tolerated failures take its largest
brokers (`planner.report.capacity.pool_rules`), with the brokers the plan adds (``limit``) and without them
(``unbought_limit``). A pool's order-by date is its first crossing without the brokers still to buy less the
policy's procurement lead time (``[new_broker] lead_time_days``), with the band's dates (the high and low edges'
crossings without those brokers). When the plan buys brokers for a pool none of whose limits its demand crosses
without them by the horizon (the plan needs them for a per-broker limit or the rack spread), they are needed by the
horizon itself: the order-by is the horizon's day less the lead time (``OrderBy.basis`` ``"horizon"``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Literal

import numpy as np

from planner.report.capacity import PoolCapacity
from pools.demand import demand_over_days, topic_demand
from pools.evidence import Evidence, evidence
from pools.forecast_band import NO_CALIBRATION, BandCalibration, GroupCalibration
from pools.profile import TopicProfile
from pools.snapshot import DIMENSIONS, ClusterSnapshot

__all__ = ["Crossing", "PoolRunway", "OrderBy", "Runway", "pool_runway", "first_crossing", "history_days"]

#: Which edge of the forecast band each crossing of a `PoolRunway` follows.
EDGE_OF = {"earliest": "high", "likely": "forecast", "latest": "low"}


@dataclass(frozen=True, slots=True)
class Crossing:
    """When a demand path first exceeds a limit.

    ``kind``: ``"past"`` (already now, ``day`` 0), ``"day"`` (on ``day``), ``"after"`` (not within the days
    computed while the demand grows), ``"flat"`` (not within them and the demand does not grow), ``"unknown"`` (no
    limit known).
    """

    kind: Literal["past", "day", "after", "flat", "unknown"]
    day: int | None = None

    def sort_key(self) -> tuple[int, int]:
        """Soonest first: a dated crossing by its day, then "after", then never."""
        rank = {"past": 0, "day": 0, "after": 1, "flat": 2, "unknown": 3}[self.kind]
        return rank, self.day or 0


def first_crossing(path: Sequence[float], limit: float | None, now: float) -> Crossing:
    """The first day ``1 ≤ t < len(path)`` with ``path[t] > limit`` (day 0 when ``now > limit``).

    Examples
    --------
    >>> first_crossing([5.0, 8.0, 11.0], 10.0, 5.0), first_crossing([5.0, 8.0], 10.0, 11.0)
    (Crossing(kind='day', day=2), Crossing(kind='past', day=0))
    >>> first_crossing([5.0, 6.0], 10.0, 5.0).kind, first_crossing([5.0, 5.0], 10.0, 5.0).kind
    ('after', 'flat')
    """
    if limit is None:
        return Crossing("unknown")
    if now > limit:
        return Crossing("past", 0)
    values = np.asarray(path, dtype=float)
    over = np.nonzero(values[1:] > limit)[0]
    if len(over):
        return Crossing("day", int(over[0]) + 1)
    return Crossing("after" if len(values) > 1 and np.any(np.diff(values) > 0) else "flat")


@dataclass(frozen=True, slots=True)
class PoolRunway:
    """One pool and dimension: demand now and at the horizon (the pool's topics), its limits and crossings.

    ``path`` is the likely demand on days ``0 … len(path) − 1`` and ``low``/``high`` the band's edges, for the
    chart; ``unbought`` is the likely crossing without the brokers the plan adds (the same as ``likely`` when it
    adds none), ``unbought_earliest`` and ``unbought_latest`` the band's edges' crossings without them.
    """

    pool: str
    dimension: str
    demand_now: float
    demand_forecast: float
    usable: float
    limit: float | None
    unbought_limit: float | None
    earliest: Crossing
    likely: Crossing
    latest: Crossing
    unbought: Crossing
    path: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    unbought_earliest: Crossing = Crossing("unknown")
    unbought_latest: Crossing = Crossing("unknown")


@dataclass(frozen=True, slots=True)
class OrderBy:
    """A pool's order-by date: its first crossing without the brokers still to buy (``dimension``), less the lead
    time; ``earliest`` and ``latest`` are the band's crossings of that limit. ``brokers`` is how many the plan adds
    (0: the order is for the pool's next broker). ``basis`` ``"horizon"``: the plan buys brokers though no limit is
    crossed without them by the horizon, so ``crossing`` is the horizon's day (see the module docstring)."""

    pool: str
    brokers: int
    dimension: str | None
    crossing: Crossing
    earliest: Crossing = Crossing("unknown")
    latest: Crossing = Crossing("unknown")
    basis: Literal["crossing", "horizon"] = "crossing"


@dataclass(frozen=True)
class Runway:
    """Every pool's `PoolRunway` and `OrderBy`, counted from ``as_of`` over ``max(history_days, horizon_days)``
    days (`pools.evidence`: the history supports ``history_days``); ``lead_time_days`` is ``None`` when the policy
    gives none."""

    as_of: date
    horizon_days: int
    history_days: int
    lead_time_days: int | None
    rows: tuple[PoolRunway, ...]
    orders: tuple[OrderBy, ...]

    def date(self, crossing: Crossing) -> date | None:
        """The day of a dated crossing (``None`` otherwise)."""
        return None if crossing.day is None else self.as_of + timedelta(days=crossing.day)

    @property
    def supported_until(self) -> date:
        """The last day the history supports a forecast for (`pools.evidence`)."""
        return self.as_of + timedelta(days=self.history_days)

    @property
    def evidence(self) -> Evidence:
        """How far the history supports a forecast (`pools.evidence`)."""
        return Evidence(self.history_days)

    @property
    def until(self) -> date:
        """The last day computed: the later of the evidence's reach and the horizon."""
        return self.as_of + timedelta(days=self.evidence.reach(self.horizon_days))

    def trend(self, crossing: Crossing) -> bool:
        """A dated crossing past the history's span: a trend, not a forecast the evidence supports."""
        return crossing.kind == "day" and not self.evidence.supports(crossing.day or 0)

    def order_by(self, order: OrderBy) -> date | None:
        """The day an order must be placed: the crossing less the lead time (``None``: no dated crossing)."""
        day = self.date(order.crossing)
        return None if day is None else day - timedelta(days=self.lead_time_days or 0)

    def may_be_due(self, order: OrderBy) -> bool:
        """The crossing is past the last day computed, but the lead time reaches back before ``as_of``: the order
        may already be due."""
        lead = timedelta(days=self.lead_time_days or 0)
        return order.crossing.kind == "after" and self.until - lead <= self.as_of

    def overdue(self, order: OrderBy) -> bool:
        """The order-by date is before ``as_of``, or the limit is already crossed without the brokers."""
        day = self.order_by(order)
        return day is not None and (order.crossing.kind == "past" or day < self.as_of)


def history_days(profile: Mapping[str, TopicProfile]) -> int:
    """The span of history the forecast is fitted on: the most days any topic was observed (at least 1;
    `pools.evidence`)."""
    return evidence(profile).history_days


def pool_runway(snapshot: ClusterSnapshot, profile: Mapping[str, TopicProfile], topic_pool: Mapping[str, str | None],
                pools: Sequence[PoolCapacity], *, as_of: date, horizon_days: int,
                lead_time_days: int | None, added: Mapping[str, int],
                calibration: BandCalibration | GroupCalibration = NO_CALIBRATION) -> Runway:
    """The `Runway` of every pool in ``pools`` whose topics (``topic_pool``) the profile and snapshot know.

    Demand now is each topic's measured demand (`pools.demand.topic_demand` at ``"now"``), summed over the pool's
    topics; the paths are `pools.demand.demand_over_days` on days ``0 … max(history_days, horizon_days)``, plus
    the unchanging demand of topics absent from the profile (their partition sizes and replicas), every crossing
    searched over those days. Topics are read
    with one consumer group where the profile has no bytes-out (as `poolplan plan` without
    ``--consumer-groups``). The band's edges are ``calibration``'s (`pools.forecast_band`: the growth band widened
    to the spread the backtest measured; a `GroupCalibration` widens each pool's summed forecast by its pool's band).
    """
    span = history_days(profile)
    grid = np.arange(0, Evidence(span).reach(horizon_days) + 1, dtype=float)
    measured = topic_demand(snapshot, profile, None, "now")  # every topic of the snapshot; unprofiled: by sizes
    names = sorted({p.pool for p in pools})
    members = {pool: sorted(t for t in measured if topic_pool.get(t) == pool) for pool in names}
    growing = {t: profile[t] for pool in names for t in members[pool] if t in profile}
    sums: dict[str, dict[str, np.ndarray]] = {pool: {} for pool in names}
    for edge in ("low", "forecast", "high"):  # one split of every topic per edge, summed per pool at once
        paths = demand_over_days(snapshot, growing, grid, edge=edge, calibration=calibration, groups=topic_pool)
        for pool in names:
            steady = _sum(measured[t] for t in members[pool] if t not in profile)  # no forecast: the same each day
            sums[pool][edge] = steady + _path_sum({t: paths[t] for t in members[pool] if t in paths}, len(grid))
        del paths
    rows: list[PoolRunway] = []
    for pool in names:
        now = _sum(measured[t] for t in members[pool])
        paths = sums[pool]
        for p in (p for p in pools if p.pool == pool):
            d = DIMENSIONS.index(p.dimension)
            cut = {edge: path[:, d] for edge, path in paths.items()}
            crossing = {name: first_crossing(cut[edge], p.limit, now[d]) for name, edge in EDGE_OF.items()}
            unbought = p.unbought_limit
            rows.append(PoolRunway(
                pool, p.dimension, float(now[d]), float(paths["forecast"][horizon_days, d]), p.limits.usable, p.limit,
                unbought, **crossing, unbought=first_crossing(cut["forecast"], unbought, now[d]),
                path=tuple(paths["forecast"][:, d].tolist()), low=tuple(paths["low"][:, d].tolist()),
                high=tuple(paths["high"][:, d].tolist()),
                unbought_earliest=first_crossing(cut["high"], unbought, now[d]),
                unbought_latest=first_crossing(cut["low"], unbought, now[d])))
    orders = []
    for pool in sorted({r.pool for r in rows}):
        first = min((r for r in rows if r.pool == pool),
                    key=lambda r: (r.unbought.sort_key(), DIMENSIONS.index(r.dimension)))
        brokers = int(added.get(pool, 0))
        if first.unbought.kind in ("past", "day"):
            orders.append(OrderBy(pool, brokers, first.dimension, first.unbought, first.unbought_earliest,
                                  first.unbought_latest))
        elif brokers:  # bought for a per-broker limit or the rack spread: needed by the horizon
            by = Crossing("day", horizon_days)
            orders.append(OrderBy(pool, brokers, None, by, by, by, "horizon"))
        else:
            orders.append(OrderBy(pool, brokers, None, first.unbought))
    return Runway(as_of, horizon_days, span, lead_time_days, tuple(rows), tuple(orders))


def _sum(demands) -> np.ndarray:
    out = np.zeros(len(DIMENSIONS))
    for demand in demands:
        out += [demand.get(d) for d in DIMENSIONS]
    return out


def _path_sum(paths: Mapping[str, np.ndarray], days: int) -> np.ndarray:
    out = np.zeros((days, len(DIMENSIONS)))
    for topic in sorted(paths):
        out += paths[topic]
    return out
