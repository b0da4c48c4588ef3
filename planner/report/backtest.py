"""How good the forecast has been on the history itself: the profile's rolling-origin backtest, per pool and topic.

`spark_jobs.growth.backtest` wrote, per topic and daily series (``bytes_in_p99``, ``storage_bytes``), forecasts made
from past origins with what then happened (``profile/backtest.parquet``). Here they are scored: a pool's forecast
from an origin ``h`` days ahead is the sum of its topics' forecasts (and band edges) that have one for that origin
and horizon, against the sum of their actual values. Per pool, series and horizon: the forecasts scored, their
mean absolute percentage error (mean of ``|forecast − actual| / actual``) and the share whose band held
(``low ≤ actual ≤ high``). The band is the calibrated one the runway uses (`pools.forecast_band`), each topic's
rows judged by the band calibrated on the other topics' rows (`pools.forecast_band.held_out`): an 80 % band, so
about 80 % is calibrated.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pools.forecast_band import held_out
from pools.profile import BacktestRow

__all__ = ["Score", "score", "pool_scores", "topic_scores"]


@dataclass(frozen=True, slots=True)
class Score:
    """The backtest of one pool or topic (``name``), series and horizon."""

    name: str
    metric: str
    horizon_days: int
    forecasts: int
    mape: float
    band_held: float


def score(name: str, metric: str, horizon: int, points: Iterable[tuple[float, float, float, float]]) -> Score | None:
    """A `Score` of ``(actual, forecast, low, high)`` points (``None`` when there is none).

    Examples
    --------
    >>> score("p", "bytes_in_p99", 7, [(100.0, 125.0, 90.0, 130.0), (100.0, 75.0, 70.0, 95.0)])
    Score(name='p', metric='bytes_in_p99', horizon_days=7, forecasts=2, mape=0.25, band_held=0.5)
    """
    points = [p for p in points if p[0] > 0]
    if not points:
        return None
    mape = sum(abs(f - a) / a for a, f, _, _ in points) / len(points)
    held = sum(lo <= a <= hi for a, _, lo, hi in points) / len(points)
    return Score(name, metric, horizon, len(points), mape, held)


def pool_scores(rows: Iterable[BacktestRow], topic_pool: Mapping[str, str | None]) -> tuple[Score, ...]:
    """Per pool, series and horizon: the pool's summed forecasts from each origin (see the module docstring)."""
    sums: dict[tuple[str, str, int], dict[object, list[float]]] = {}
    for r, low, high in held_out(list(rows)):
        pool = topic_pool.get(r.topic)
        if pool is None:
            continue
        acc = sums.setdefault((pool, r.metric, r.horizon_days), {}).setdefault(r.origin, [0.0, 0.0, 0.0, 0.0])
        for i, v in enumerate((r.actual, r.forecast, low, high)):
            acc[i] += v
    out = (score(pool, metric, h, (tuple(v) for _, v in sorted(origins.items())))  # type: ignore[arg-type]
           for (pool, metric, h), origins in sorted(sums.items()))
    return tuple(s for s in out if s is not None)


def topic_scores(rows: Iterable[BacktestRow], topics: Iterable[str], metric: str = "bytes_in_p99") -> tuple[Score, ...]:
    """Per topic of ``topics`` (in that order) and horizon, the backtest of its ``metric`` series."""
    wanted = list(topics)
    points: dict[tuple[str, int], list[tuple[float, float, float, float]]] = {}
    for r, low, high in held_out(list(rows)):
        if r.metric == metric and r.topic in wanted:
            points.setdefault((r.topic, r.horizon_days), []).append((r.actual, r.forecast, low, high))
    order = {t: i for i, t in enumerate(wanted)}
    out = (score(t, metric, h, p) for (t, h), p in sorted(points.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])))
    return tuple(s for s in out if s is not None)
