"""The forecast band calibrated on the history (conformal): the band the runway and the report use.

The profile's band (``forecast_*_low`` / ``_high``) is the 10th–90th percentile of the growth slopes: it covers
how uncertain the growth rate is, not how far a day's value strays from the trend, so at a short horizon it
almost never holds. The backtest (``backtest.parquet``) measures that spread on the history itself. Per daily
series (``metric``) and horizon ``h`` with at least `MIN_POINTS` backtest rows whose forecast and actual value are
positive, over every topic's rows, with ``r = ln(actual / forecast)``::

    q_low(h)  = min(0, Q(0.10, r))        q_high(h) = max(0, Q(0.90, r))

(``Q``: the quantile with linear interpolation between order statistics, ``a + (b − a) · frac``). At day ``t`` after the
last sample ``q(t)`` is interpolated linearly between ``(0, 0)`` and the calibrated horizons. Up to the last
calibrated horizon ``H`` the band is ``forecast(t) · e^q(t)``; past it the band held at ``H`` widens as the
growth band does since ``H`` (the growth band is log-linear in ``t`` from the last sample's level, so that is
``(1 − H / t) · ln(growth edge(t) / forecast(t))``, counted only outwards)::

    low(t)  = forecast(t) · exp(q_low(t)  + max(0, 1 − H/t) · min(0, ln(growth low(t)  / forecast(t))))
    high(t) = forecast(t) · exp(q_high(t) + max(0, 1 − H/t) · max(0, ln(growth high(t) / forecast(t))))

A series without a calibrated horizon (``H`` = 0, ``q`` = 0) keeps the growth band. `held_out` scores the backtest
itself: each topic's rows against the band calibrated on every *other* topic's rows, so no forecast is judged by a
band fitted on its own errors.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from pools.profile import BacktestRow

__all__ = ["BandCalibration", "calibrate", "held_out", "MIN_POINTS", "QUANTILES", "NO_CALIBRATION"]

#: The fewest backtest rows a horizon needs to be calibrated (a 10th percentile of fewer says little).
MIN_POINTS = 10
#: The quantiles of the log error that bound the band: an 80 % band.
QUANTILES = (0.10, 0.90)


@dataclass(frozen=True)
class BandCalibration:
    """Per metric, the calibrated horizons as ``(horizon, q_low, q_high, rows)``, by horizon."""

    horizons: dict[str, tuple[tuple[int, float, float, int], ...]] = field(default_factory=dict)

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
        q_low, q_high = self.log_widths(metric, t)
        f = np.asarray(forecast, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            past = np.where(t > 0, np.clip(1.0 - self.last_horizon(metric) / np.where(t > 0, t, 1.0), 0.0, 1.0), 0.0)
            grow_low = np.where(f > 0, np.log(np.maximum(low, 1e-300) / np.where(f > 0, f, 1.0)), 0.0)
            grow_high = np.where(f > 0, np.log(np.maximum(high, 1e-300) / np.where(f > 0, f, 1.0)), 0.0)
        q_low = q_low + past * np.minimum(grow_low, 0.0)
        q_high = q_high + past * np.maximum(grow_high, 0.0)
        return f * np.exp(q_low), f * np.exp(q_high)

    def to_json(self) -> dict[str, list[dict[str, float | int]]]:
        """The calibration as ``quality.json``-style JSON: per metric, ``horizon_days``, ``q_low``, ``q_high``,
        ``rows``."""
        return {m: [{"horizon_days": h, "q_low": lo, "q_high": hi, "rows": n} for h, lo, hi, n in rows]
                for m, rows in sorted(self.horizons.items())}


#: No backtest: every band stays the growth band.
NO_CALIBRATION = BandCalibration()


def calibrate(rows: Iterable[BacktestRow]) -> BandCalibration:
    """The `BandCalibration` of backtest rows (see the module docstring).

    Examples
    --------
    >>> from datetime import date
    >>> rows = [BacktestRow("t", "bytes_in_p99", date(2025, 1, i), 1, 100.0 + i, 100.0, 0, 0) for i in range(1, 12)]
    >>> calibrate(rows).horizons["bytes_in_p99"][0][0], round(calibrate(rows).horizons["bytes_in_p99"][0][2], 4)
    (1, 0.0953)
    """
    out: dict[str, list[tuple[int, float, float, int]]] = {}
    for (metric, h), (logs, _) in sorted(_log_errors(rows).items()):
        if len(logs) >= MIN_POINTS:
            out.setdefault(metric, []).append((h, *_edges(logs, np.zeros(0, dtype=np.int64)), len(logs)))
    return BandCalibration({m: tuple(v) for m, v in out.items()})


def held_out(rows: Sequence[BacktestRow]) -> list[tuple[BacktestRow, float, float]]:
    """Each backtest row with its calibrated ``(low, high)``, the calibration fitted on every *other* topic's rows
    (the row's own topic left out: `calibrate` of the rest), in the order given.

    Leaving a topic out, not an origin: a short history has few origins (two weeks give seven at one day ahead,
    each a different weekday, and one at seven days ahead), too few to calibrate on the rest; every topic has
    them all. O(rows · log rows): each topic's quantiles skip its own ranks in the pooled sorted errors.
    """
    errors = _log_errors(rows)
    topics = sorted({r.topic for r in rows})
    ranks: dict[tuple[str, int], dict[str, np.ndarray]] = {}
    for key, (_, owner) in errors.items():
        order = np.argsort(owner, kind="stable")
        grouped = owner[order]
        cut = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
        ranks[key] = {str(grouped[i]): np.sort(part) for i, part in zip(cut.tolist(), np.split(order, cut[1:]))}
    edges: list[tuple[float, float]] = [(0.0, 0.0)] * len(rows)
    groups: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault((r.topic, r.metric), []).append(i)
    bands: dict[str, BandCalibration] = {}
    for topic in topics:
        out: dict[str, list[tuple[int, float, float, int]]] = {}
        for (metric, h), (logs, _) in sorted(errors.items()):
            mine = ranks[metric, h].get(topic, np.zeros(0, dtype=np.int64))
            if len(logs) - len(mine) >= MIN_POINTS:
                out.setdefault(metric, []).append((h, *_edges(logs, mine), len(logs) - len(mine)))
        bands[topic] = BandCalibration({m: tuple(v) for m, v in out.items()})
    for (topic, metric), index in sorted(groups.items()):
        picked = [rows[i] for i in index]
        low, high = bands[topic].widen(metric, [r.horizon_days for r in picked], [r.forecast for r in picked],
                                       [r.low for r in picked], [r.high for r in picked])
        for i, lo, hi in zip(index, low.tolist(), high.tolist()):
            edges[i] = (lo, hi)
    return [(r, lo, hi) for r, (lo, hi) in zip(rows, edges)]


def _log_errors(rows: Iterable[BacktestRow]) -> dict[tuple[str, int], tuple[np.ndarray, np.ndarray]]:
    """Per (metric, horizon): the sorted ``ln(actual / forecast)`` of the rows with both positive, and the topic of
    each."""
    logs: dict[tuple[str, int], tuple[list[float], list[str]]] = {}
    for r in rows:
        if r.actual > 0 and r.forecast > 0:
            values, topics = logs.setdefault((r.metric, r.horizon_days), ([], []))
            values.append(math.log(r.actual / r.forecast))
            topics.append(r.topic)
    out = {}
    for key, (values, topics) in logs.items():
        order = np.argsort(np.asarray(values), kind="stable")
        out[key] = (np.asarray(values)[order], np.asarray(topics, dtype=object)[order])
    return out


def _edges(sorted_logs: np.ndarray, removed: np.ndarray) -> tuple[float, float]:
    """``(q_low, q_high)`` of ``sorted_logs`` without the positions ``removed`` (sorted)."""
    lo, hi = (_quantile_without(sorted_logs, removed, q) for q in QUANTILES)
    return min(0.0, lo), max(0.0, hi)


def _quantile_without(values: np.ndarray, removed: np.ndarray, q: float) -> float:
    """The ``q`` quantile (linear interpolation between order statistics) of sorted ``values`` less the positions
    ``removed``: the ``j``-th value left is at the least ``i = j + #(removed ≤ i)``.

    >>> v = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    >>> _quantile_without(v, np.array([1, 3]), 0.5), _quantile_without(v, np.zeros(0, dtype=int), 0.9)
    (3.0, 4.6)
    """
    n = len(values) - len(removed)

    def at(j: int) -> float:
        i = j
        while (k := j + int(np.searchsorted(removed, i, side="right"))) != i:
            i = k
        return float(values[i])

    pos = q * (n - 1)
    lo = math.floor(pos)
    a, b = at(lo), at(min(lo + 1, n - 1))
    return a + (b - a) * (pos - lo)
