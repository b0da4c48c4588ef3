"""Growth per day robust to the weekly cycle, and the forecast band at a horizon (pure functions, no Spark).

The daily series of a busy topic swings with the week (weekends are quieter), so a least-squares slope over
two weeks is biased by about 1 %/day depending on which weekday the window starts. Here the slope of
``log(y)`` is the median of the slopes between days the same weekday apart (``j - i`` a multiple of
`PERIOD`), which cancels the cycle exactly, and the band is their 10th–90th percentile (Theil–Sen restricted
to seasonal pairs). Series shorter than a period fall back to all pairs.

`backtest` scores the method on the history itself (rolling origin): from each past day with at least
`MIN_FIT_DAYS` of history before it, the series up to that day is fitted and forecast `BACKTEST_HORIZONS` days
ahead; each forecast that lands on a day with data is compared with what happened.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pools.demand import grow
from pools.profile import MIN_FIT_DAYS

__all__ = ["Growth", "robust_growth", "PERIOD", "BAND", "BacktestPoint", "backtest", "BACKTEST_HORIZONS",
           "MIN_FIT_DAYS", "MAX_ORIGINS"]

#: The seasonal period in days.
PERIOD = 7
#: Percentiles of the pairwise slopes that bound the band.
BAND = (0.10, 0.90)
#: Days ahead the backtest forecasts from each origin.
BACKTEST_HORIZONS = (1, 7, 14, 30, 60, 90)
#: The most origins a backtest uses per series: evenly spaced back from the last eligible day.
MAX_ORIGINS = 30


@dataclass(frozen=True, slots=True)
class Growth:
    """A fitted growth: ``per_day`` (relative, compounding), its band, and the level at the last day."""

    per_day: float
    low: float
    high: float
    level: float

    def forecast(self, horizon_days: int) -> tuple[float, float, float]:
        """``(forecast, low, high)`` of the level ``horizon_days`` after the last day (`pools.demand.grow`: finite,
        capped at e^700)."""
        forecast = tuple(grow(self.level, g, horizon_days) for g in (self.per_day, self.low, self.high))
        return forecast  # type: ignore[return-value]


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def robust_growth(days: Sequence[int], values: Sequence[float], *, period: int = PERIOD) -> Growth:
    """Fit relative growth per day to a daily series.

    Parameters
    ----------
    days
        Day numbers (e.g. days since the epoch), strictly increasing.
    values
        The daily value (daily p99 bytes-in/s, storage bytes); days with a value ≤ 0 carry no information
        about relative growth and are skipped.
    period
        The seasonal period to cancel (7 for the weekly cycle).

    Returns
    -------
    Growth
        Zero growth and the last positive value as level when fewer than two positive days exist.

    Notes
    -----
    O(n²) pairs for n days; n is a quarter at most.
    """
    positive = [(d, v) for d, v in zip(days, values, strict=True) if v > 0]
    if len(positive) < 2:
        return Growth(0.0, 0.0, 0.0, positive[-1][1] if positive else 0.0)
    points = [(d, math.log(v)) for d, v in positive]
    seasonal = points[-1][0] - points[0][0] >= period
    slopes = sorted(
        (yj - yi) / (dj - di)
        for i, (di, yi) in enumerate(points)
        for dj, yj in points[i + 1 :]
        if not seasonal or (dj - di) % period == 0
    )
    if not slopes:
        slopes = sorted((yj - yi) / (dj - di) for i, (di, yi) in enumerate(points) for dj, yj in points[i + 1 :])
    slope = _quantile(slopes, 0.5)
    last = points[-1][0]
    tail = sorted(y + slope * (last - d) for d, y in points if last - d < period)
    level = math.exp(_quantile(tail, 0.5))
    return Growth(
        per_day=math.expm1(slope),
        low=math.expm1(_quantile(slopes, BAND[0])),
        high=math.expm1(_quantile(slopes, BAND[1])),
        level=level,
    )


@dataclass(frozen=True, slots=True)
class BacktestPoint:
    """One backtest forecast: fitted on the series up to ``origin`` (a day number), ``horizon`` days ahead, against
    the ``actual`` value of day ``origin + horizon``; ``forecast``, ``low``, ``high`` as `Growth.forecast`."""

    origin: int
    horizon: int
    actual: float
    forecast: float
    low: float
    high: float


def backtest(days: Sequence[int], values: Sequence[float], *,
             horizons: Sequence[int] = BACKTEST_HORIZONS) -> list[BacktestPoint]:
    """Rolling-origin backtest of `robust_growth` on a daily series (``days`` strictly increasing).

    Origins are the series' days ``d`` with ``d − days[0] + 1 ≥ MIN_FIT_DAYS`` and a later day, thinned to at
    most `MAX_ORIGINS` (every ``ceil(n / MAX_ORIGINS)``-th of the ``n``, counted back from the last). From each origin
    the values of days ≤ origin are fitted and forecast ``h`` days ahead for every ``h`` in ``horizons``; a forecast
    counts when day ``origin + h`` has a positive value.

    Examples
    --------
    >>> pts = backtest(list(range(10)), [100 * 1.01 ** d for d in range(10)], horizons=(1, 2))
    >>> [(p.origin, p.horizon, round(p.actual, 3), round(p.forecast, 3)) for p in pts][:3]
    [(6, 1, 107.214, 107.214), (6, 2, 108.286, 108.286), (7, 1, 108.286, 108.286)]
    """
    if not days:
        return []
    actual = dict(zip(days, values, strict=True))
    eligible = [d for d in days[:-1] if d - days[0] + 1 >= MIN_FIT_DAYS]
    step = max(1, math.ceil(len(eligible) / MAX_ORIGINS))
    origins = sorted(eligible[::-1][::step])
    out = []
    for origin in origins:
        known = [(d, v) for d, v in zip(days, values) if d <= origin]
        fit = robust_growth([d for d, _ in known], [v for _, v in known])
        for h in horizons:
            value = actual.get(origin + h)
            if value is not None and value > 0:
                forecast, low, high = fit.forecast(h)
                out.append(BacktestPoint(origin, h, float(value), forecast, low, high))
    return out
