"""The forecast band calibrated on the history (conformal), tested out of time: the band the runway and the report use.

The profile's band (``forecast_*_low`` / ``_high``) is the 10th–90th percentile of the growth slopes: it covers
how uncertain the growth rate is, not how far a day's value strays from the trend, so at a short horizon it
almost never holds. The backtest (``backtest.parquet``) measures that spread on the history itself. Per daily
series (``metric``) and horizon ``h``, over every topic's backtest rows whose forecast and actual value are
positive, with ``r = ln(actual / forecast)``::

    q_low(h)  = min(0, Q(0.10, r))        q_high(h) = max(0, Q(0.90, r))

(``Q``: the quantile with linear interpolation between order statistics, ``a + (b − a) · frac``). A horizon is
*tested* when its rows number at least `MIN_POINTS` and come from at least `MIN_ORIGINS` distinct origins: one
origin is one day's weather, never a band. A horizon with rows but too few origins, longer than the longest tested
one ``T``, is *derived* from the tested ones by how their widths grow with the horizon, ``q ∝ h^p``::

    q(h) = q(T) · (h / T)^p        p = clip(ln(q(T) / q(S)) / ln(T / S), 0, 1)

per edge, ``S`` the shortest tested horizon (``p`` = `DEFAULT_POWER`, 0: held, when ``S = T`` or a width
is 0): a width that did not grow from ``S`` to ``T`` (noise about the trend) is held, one that grew like the
growth rate's error grows in proportion.

At day ``t`` after the last sample ``q(t)`` is interpolated linearly between ``(0, 0)`` and the tested and derived
horizons. Up to the last of them, ``H``, the band is ``forecast(t) · e^q(t)``; past it the band held at ``H``
widens as the growth band does since ``H`` (the growth band is log-linear in ``t`` from the last sample's level, so
that is ``(1 − H / t) · ln(growth edge(t) / forecast(t))``, counted only outwards)::

    low(t)  = forecast(t) · exp(q_low(t)  + max(0, 1 − H/t) · min(0, ln(growth low(t)  / forecast(t))))
    high(t) = forecast(t) · exp(q_high(t) + max(0, 1 − H/t) · max(0, ln(growth high(t) / forecast(t))))

A series without a tested horizon (``H`` = 0, ``q`` = 0) keeps the growth band.

`out_of_time` scores the backtest as the band would have fared: each row (an origin ``o`` and horizon ``h``) is
judged by the band calibrated, by the rule above, only on the rows whose actual day was already past at ``o``
(``origin' + h' ≤ o``). Every topic shares the weekly cycle, so leaving a topic out is close to in-sample in time;
leaving the future out is not. A row whose series had no tested horizon yet at its origin is not scored.

The same rule calibrates a group of topics (a pool) on its own backtest (`group_rows`): per origin and horizon the
sums of its topics' actual values, forecasts and growth-band edges, ``r = ln(Σ actual / Σ forecast)``. The sum of
the topics' band edges is not the pool's band: independent errors partly cancel in a sum (the sum of edges is too
wide), shared ones do not (too narrow). `calibrate_groups` gives each group its own calibration of a series when
that has a tested horizon, else the calibration of every group's rows pooled per series and horizon (as the topic
band pools every topic); `out_of_time` scores the groups' rows the same way (``grouped=True``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

import numpy as np

from pools.profile import BacktestRow

__all__ = ["BandCalibration", "GroupCalibration", "HorizonBand", "calibrate", "calibrate_groups", "group_rows",
           "out_of_time", "MIN_POINTS", "MIN_ORIGINS", "QUANTILES", "NO_CALIBRATION"]

#: The fewest backtest rows a horizon needs to be tested (a 10th percentile of fewer says little).
MIN_POINTS = 10
#: The fewest distinct origins a horizon needs to be tested: fewer are derived from a tested horizon, never trusted.
MIN_ORIGINS = 5
#: How a derived width grows with the horizon when only one horizon is tested: held (the sample's out-of-time
#: coverage: noise about the trend, not a random walk, dominates a daily series' error).
DEFAULT_POWER = 0.0
#: The quantiles of the log error that bound the band: an 80 % band.
QUANTILES = (0.10, 0.90)


class HorizonBand(NamedTuple):
    """One horizon of a calibration: its log widths, the rows and distinct origins behind them, and the tested
    horizon it was derived from (``None``: tested itself)."""

    horizon_days: int
    q_low: float
    q_high: float
    rows: int
    origins: int = 0
    derived_from: int | None = None


@dataclass(frozen=True)
class BandCalibration:
    """Per metric, the tested and derived horizons as `HorizonBand` (or plain ``(horizon, q_low, q_high, rows)``
    tuples), by horizon."""

    horizons: dict[str, tuple[HorizonBand, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "horizons", {m: tuple(HorizonBand(*r) for r in rows)
                                              for m, rows in self.horizons.items()})

    def last_horizon(self, metric: str) -> int:
        """The longest calibrated horizon of ``metric`` (0: none)."""
        rows = self.horizons.get(metric, ())
        return rows[-1][0] if rows else 0

    def log_widths(self, metric: str, days: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(q_low(t), q_high(t))`` at each of ``days``: interpolated from ``(0, 0)`` through the calibrated
        horizons, held at the last one past it (zeros for a metric without a calibrated horizon).

        Examples
        --------
        >>> c = BandCalibration({"bytes_in_p99": ((1, -0.1, 0.2, 50), (7, -0.3, 0.4, 40))})
        >>> [a.round(3).tolist() for a in c.log_widths("bytes_in_p99", [0, 1, 4, 7, 30])]
        [[0.0, -0.1, -0.2, -0.3, -0.3], [0.0, 0.2, 0.3, 0.4, 0.4]]
        """
        t = np.asarray(days, dtype=float)
        rows = self.horizons.get(metric, ())
        if not rows:
            return np.zeros_like(t), np.zeros_like(t)
        h = [0.0, *(float(r[0]) for r in rows)]
        return (np.interp(t, h, [0.0, *(r[1] for r in rows)]), np.interp(t, h, [0.0, *(r[2] for r in rows)]))

    def widen(self, metric: str, days, forecast, low, high) -> tuple[np.ndarray, np.ndarray]:
        """The calibrated ``(low, high)`` at ``days`` (> 0) from the forecast and the growth band's edges there
        (floats or arrays aligned with ``days``; the growth band log-linear in days from the last sample's level):
        ``forecast · e^q(t)`` up to the last calibrated horizon ``H``, times the growth band's widening since ``H``
        past it.

        Examples
        --------
        >>> c = BandCalibration({"bytes_in_p99": ((7, -0.2, 0.3, 40),)})
        >>> [a.round(2).tolist() for a in c.widen("bytes_in_p99", [7, 14], [100.0, 100.0], [90.0, 81.0],
        ...                                       [110.0, 121.0])]
        [[81.87, 73.69], [134.99, 148.48]]
        """
        t = np.asarray(days, dtype=float)
        if not self.horizons.get(metric):  # the growth band as it is, bit for bit
            return np.broadcast_to(np.asarray(low, dtype=float), t.shape), \
                np.broadcast_to(np.asarray(high, dtype=float), t.shape)
        q_low, q_high = self.log_band(metric, t, forecast, low, high)
        f = np.asarray(forecast, dtype=float)
        return f * np.exp(q_low), f * np.exp(q_high)

    def log_band(self, metric: str, days, forecast, low, high) -> tuple[np.ndarray, np.ndarray]:
        """The calibrated band's edges as log ratios to the forecast at ``days`` (see `widen`, whose band is
        ``forecast · e^log_band``; zeros for a metric without a calibrated horizon)."""
        t = np.asarray(days, dtype=float)
        q_low, q_high = self.log_widths(metric, t)
        if not self.horizons.get(metric):
            return q_low, q_high
        f = np.asarray(forecast, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            past = np.where(t > 0, np.clip(1.0 - self.last_horizon(metric) / np.where(t > 0, t, 1.0), 0.0, 1.0), 0.0)
            grow_low = np.where(f > 0, np.log(np.maximum(low, 1e-300) / np.where(f > 0, f, 1.0)), 0.0)
            grow_high = np.where(f > 0, np.log(np.maximum(high, 1e-300) / np.where(f > 0, f, 1.0)), 0.0)
        return q_low + past * np.minimum(grow_low, 0.0), q_high + past * np.maximum(grow_high, 0.0)

    def to_json(self) -> dict[str, list[dict[str, float | int | None]]]:
        """The calibration as ``quality.json``-style JSON: per metric, ``horizon_days``, ``q_low``, ``q_high``,
        ``rows``, ``origins`` and ``derived_from`` (``null``: tested)."""
        return {m: [r._asdict() for r in rows] for m, rows in sorted(self.horizons.items())}


#: No backtest: every band stays the growth band.
NO_CALIBRATION = BandCalibration()


def calibrate(rows: Iterable[BacktestRow]) -> BandCalibration:
    """The `BandCalibration` of backtest rows (see the module docstring).

    Examples
    --------
    >>> from datetime import date
    >>> rows = [BacktestRow("t", "bytes_in_p99", date(2025, 1, i), h, 100.0 + i, 100.0, 0, 0)
    ...         for i in range(1, 12) for h in (1, 4)]
    >>> rows += [BacktestRow("t", "bytes_in_p99", date(2025, 1, 1), 16, 150.0, 100.0, 0, 0)] * 10  # one origin
    >>> [(b.horizon_days, round(b.q_high, 4), b.origins, b.derived_from) for b in calibrate(rows).horizons[
    ...     "bytes_in_p99"]]
    [(1, 0.0953, 11, None), (4, 0.0953, 11, None), (16, 0.0953, 1, 4)]
    """
    errors = _Errors.of(list(rows))
    return errors.calibration(np.ones(len(errors.log), dtype=bool))


@dataclass(frozen=True)
class GroupCalibration:
    """Each group's (a pool's) calibration of its own summed backtest (``own``, by group), and that of every
    group's rows pooled (``pooled``): the band a group falls back to for a series it has no tested horizon of."""

    own: dict[str, BandCalibration] = field(default_factory=dict)
    pooled: BandCalibration = field(default_factory=BandCalibration)

    def rests_on(self, group: str, metric: str) -> Literal["own", "pooled"] | None:
        """Whose calibration ``group``'s band of ``metric`` is: its own, every group's pooled, or none (the
        growth band)."""
        if self.own.get(group, NO_CALIBRATION).horizons.get(metric):
            return "own"
        return "pooled" if self.pooled.horizons.get(metric) else None

    def band(self, group: str) -> BandCalibration:
        """``group``'s band: per metric its own calibration where it has a tested horizon, else the pooled one."""
        mine = self.own.get(group, NO_CALIBRATION).horizons
        metrics = sorted(set(mine) | set(self.pooled.horizons))
        return BandCalibration({m: mine.get(m) or self.pooled.horizons[m] for m in metrics})


def group_rows(rows: Iterable[BacktestRow], group_of: Mapping[str, str | None]) -> list[BacktestRow]:
    """Each group's backtest: per group (``group_of``: topic → group; ``None`` or absent: none), metric, origin and
    horizon one row (``topic``: the group) summing its topics' ``actual``, ``forecast``, ``low`` and ``high`` of
    that origin and horizon, sorted by those four.

    >>> from datetime import date
    >>> rows = [BacktestRow(t, "storage_bytes", date(2025, 1, 1), 1, a, 10.0, 9.0, 11.0) for t, a in (("x", 8.0),
    ...         ("y", 14.0), ("z", 1.0))]
    >>> [(r.topic, r.actual, r.forecast, r.low, r.high) for r in group_rows(rows, {"x": "p", "y": "p", "z": None})]
    [('p', 22.0, 20.0, 18.0, 22.0)]
    """
    sums: dict[tuple[str, str, object, int], list[float]] = {}
    for r in rows:
        group = group_of.get(r.topic)
        if group is not None:
            acc = sums.setdefault((group, r.metric, r.origin, r.horizon_days), [0.0, 0.0, 0.0, 0.0])
            for i, v in enumerate((r.actual, r.forecast, r.low, r.high)):
                acc[i] += v
    return [BacktestRow(g, m, o, h, *v) for (g, m, o, h), v in sorted(sums.items())]  # type: ignore[arg-type]


def calibrate_groups(rows: Iterable[BacktestRow]) -> GroupCalibration:
    """The `GroupCalibration` of groups' rows (`group_rows`: ``topic`` names the group; see the module docstring).

    >>> from datetime import date
    >>> rows = [BacktestRow(g, "bytes_in_p99", date(2025, 1, i), 1, 100.0 + i, 100.0, 0, 0)
    ...         for g, days in (("big", 12), ("small", 6)) for i in range(1, days + 1)]
    >>> c = calibrate_groups(rows)
    >>> c.rests_on("big", "bytes_in_p99"), c.rests_on("small", "bytes_in_p99"), c.band("small") == c.pooled
    ('own', 'pooled', True)
    """
    errors = _Errors.of(list(rows))
    return errors.group_calibration(np.ones(len(errors.log), dtype=bool))


def out_of_time(rows: Sequence[BacktestRow], *, grouped: bool = False) -> list[tuple[BacktestRow, float, float] | None]:
    """Each backtest row with the ``(low, high)`` of the band calibrated on the rows whose actual day was past at
    its origin (``None``: no tested horizon of its series then), in the order given (see the module docstring).
    ``grouped``: the rows are groups' (`group_rows`), each judged by its group's band (`calibrate_groups`).

    One calibration per distinct origin, each over the rows known by then (O(origins · rows · log rows)).
    """
    rows = list(rows)
    errors = _Errors.of(rows)
    out: list[tuple[BacktestRow, float, float] | None] = [None] * len(rows)
    origin = np.array([r.origin.toordinal() for r in rows], dtype=np.int64)
    for day in sorted(set(origin.tolist())):
        known = errors.known <= day
        groups: dict[tuple[str, str], list[int]] = {}
        for i in np.flatnonzero(origin == day).tolist():
            groups.setdefault((rows[i].topic if grouped else "", rows[i].metric), []).append(i)
        if grouped:
            calibrated = errors.group_calibration(known)
            bands = {g: calibrated.band(g) for g, _ in groups}
        else:
            bands = {"": errors.calibration(known)}
        for (group, metric), picked in sorted(groups.items()):
            band = bands[group]
            if not band.horizons.get(metric):
                continue
            at = [rows[i] for i in picked]
            low, high = band.widen(metric, [r.horizon_days for r in at], [r.forecast for r in at],
                                   [r.low for r in at], [r.high for r in at])
            for i, lo, hi in zip(picked, low.tolist(), high.tolist()):
                out[i] = (rows[i], lo, hi)
    return out


@dataclass(frozen=True, eq=False)
class _Errors:
    """The rows' log errors as arrays: group (``topic``), metric, horizon, origin and actual day (ordinals), and
    ``ln(actual / forecast)`` (NaN where either is not positive)."""

    group: np.ndarray
    metric: np.ndarray
    horizon: np.ndarray
    origin: np.ndarray
    known: np.ndarray
    log: np.ndarray

    @classmethod
    def of(cls, rows: Sequence[BacktestRow]) -> _Errors:
        usable = [r.actual > 0 and r.forecast > 0 for r in rows]
        origin = np.array([r.origin.toordinal() for r in rows], dtype=np.int64)
        horizon = np.array([r.horizon_days for r in rows], dtype=np.int64)
        log = np.array([math.log(r.actual / r.forecast) if ok else math.nan for r, ok in zip(rows, usable)])
        return cls(np.array([r.topic for r in rows], dtype=object), np.array([r.metric for r in rows], dtype=object),
                   horizon, origin, origin + horizon, log)

    def group_calibration(self, mask: np.ndarray) -> GroupCalibration:
        """The `GroupCalibration` of the rows under ``mask``: each group's own, and every group's pooled."""
        groups = sorted(set(self.group[mask].tolist()))
        return GroupCalibration({g: self.calibration(mask & (self.group == g)) for g in groups},
                                self.calibration(mask))

    def calibration(self, mask: np.ndarray) -> BandCalibration:
        """The `BandCalibration` of the rows under ``mask``: tested horizons, then derived ones."""
        mask = mask & ~np.isnan(self.log)
        out: dict[str, tuple[HorizonBand, ...]] = {}
        for metric in sorted(set(self.metric[mask].tolist())):
            mine = mask & (self.metric == metric)
            tested: list[HorizonBand] = []
            short: list[tuple[int, int, int]] = []
            for h in sorted(set(self.horizon[mine].tolist())):
                at = mine & (self.horizon == h)
                n, origins = int(at.sum()), len(np.unique(self.origin[at]))
                if n >= MIN_POINTS and origins >= MIN_ORIGINS:
                    lo, hi = (float(v) for v in np.quantile(self.log[at], QUANTILES))
                    tested.append(HorizonBand(h, min(0.0, lo), max(0.0, hi), n, origins))
                else:
                    short.append((h, n, origins))
            if not tested:
                continue
            top, first = tested[-1], tested[0]
            powers = [_power(first.horizon_days, a, top.horizon_days, b)
                      for a, b in ((first.q_low, top.q_low), (first.q_high, top.q_high))]
            derived = [HorizonBand(h, top.q_low * (h / top.horizon_days) ** powers[0],
                                   top.q_high * (h / top.horizon_days) ** powers[1], n, origins, top.horizon_days)
                       for h, n, origins in short if h > top.horizon_days]
            out[metric] = (*tested, *derived)
        return BandCalibration(out)


def _power(short: int, q_short: float, long: int, q_long: float) -> float:
    """How a log width grows with the horizon between two tested horizons, ``q ∝ h^p``: ``p = ln(q_long / q_short)
    / ln(long / short)`` clipped to [0, 1] (0: a width that does not grow, noise about the trend; 1: growing like
    a growth rate's error); `DEFAULT_POWER` with one tested horizon or a zero width.

    >>> round(_power(1, 0.1, 16, 0.2), 4), _power(7, 0.1, 7, 0.1), _power(1, 0.1, 7, 0.05)
    (0.25, 0.0, 0.0)
    """
    if long <= short or q_short == 0 or q_long == 0:
        return DEFAULT_POWER
    return min(1.0, max(0.0, math.log(q_long / q_short) / math.log(long / short)))
