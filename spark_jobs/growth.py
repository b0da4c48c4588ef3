"""Growth per day robust to the weekly cycle, and the forecast band at a horizon (pure functions, no Spark).

The daily series of a busy topic swings with the week (weekends are quieter), so a least-squares slope over
two weeks is biased by about 1 %/day depending on which weekday the window starts. Here the slope of
``log(y)`` is the median of the slopes between days the same weekday apart (``j - i`` a multiple of
`PERIOD`), which cancels the cycle exactly, and the band is their 10th–90th percentile (Theil–Sen restricted
to seasonal pairs). Series shorter than a period fall back to all pairs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pools.demand import grow

__all__ = ["Growth", "robust_growth", "PERIOD", "BAND"]

#: The seasonal period in days.
PERIOD = 7
#: Percentiles of the pairwise slopes that bound the band.
BAND = (0.10, 0.90)


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
        return tuple(grow(self.level, g, horizon_days) for g in (self.per_day, self.low, self.high))  # type: ignore[return-value]


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
