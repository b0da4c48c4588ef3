"""How good the forecast has been on the history itself: the profile's rolling-origin backtest, per pool and topic.

`spark_jobs.growth.backtest` wrote, per topic and daily series (``bytes_in_p99``, ``storage_bytes``), forecasts made
from past origins with what then happened (``profile/backtest.parquet``). Here they are scored: a pool's forecast
from an origin ``h`` days ahead is the sum of its topics' forecasts (and band edges) that have one for that origin
and horizon (`pools.forecast_band.group_rows`), against the sum of their actual values. Per pool, series and
horizon: the forecasts scored, their mean absolute percentage error (mean of ``|forecast − actual| / actual``) and
the share whose band held (``low ≤ actual ≤ high``). The band is the calibrated one the runway uses, scored out of
time: each origin's rows judged by the band calibrated only on the rows whose actual day was already past then
(`pools.forecast_band.out_of_time`; rows before the band had a tested horizon are not scored): an 80 % band, so
about 80 % is calibrated. A pool's band is calibrated on the pool's own summed rows (every pool's pooled where it
has too few: `pools.forecast_band.calibrate_groups`), a topic's on every topic's rows. `horizon_scores` gives the
topics' per series and horizon over every topic's rows, with the origins behind each figure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pools.forecast_band import MIN_ORIGINS, group_rows, out_of_time
from pools.profile import BacktestRow

__all__ = ["Score", "HorizonScore", "score", "pool_scores", "topic_scores", "horizon_scores", "coverage_at",
           "SERIES_OF"]


@dataclass(frozen=True, slots=True)
class Score:
    """The backtest of one pool or topic (``name``), series and horizon: one forecast per origin. `judged`: scored
    on at least `pools.forecast_band.MIN_ORIGINS` origins; fewer is too few to judge the band by."""

    name: str
    metric: str
    horizon_days: int
    forecasts: int
    mape: float
    band_held: float

    @property
    def judged(self) -> bool:
        return self.forecasts >= MIN_ORIGINS


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
    """Per pool, series and horizon: the pool's summed forecasts from each origin, judged out of time by the pool's
    band (see the module docstring)."""
    points: dict[tuple[str, str, int], list[tuple[float, float, float, float]]] = {}
    for x in out_of_time(group_rows(rows, topic_pool), grouped=True):
        if x is not None:
            r, low, high = x
            points.setdefault((r.topic, r.metric, r.horizon_days), []).append((r.actual, r.forecast, low, high))
    out = (score(pool, metric, h, p) for (pool, metric, h), p in sorted(points.items()))
    return tuple(s for s in out if s is not None)


def topic_scores(rows: Iterable[BacktestRow], topics: Iterable[str], metric: str = "bytes_in_p99") -> tuple[Score, ...]:
    """Per topic of ``topics`` (in that order) and horizon, the backtest of its ``metric`` series."""
    wanted = list(topics)
    points: dict[tuple[str, int], list[tuple[float, float, float, float]]] = {}
    for r, low, high in _scored(rows):
        if r.metric == metric and r.topic in wanted:
            points.setdefault((r.topic, r.horizon_days), []).append((r.actual, r.forecast, low, high))
    order = {t: i for i, t in enumerate(wanted)}
    out = (score(t, metric, h, p) for (t, h), p in sorted(points.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])))
    return tuple(s for s in out if s is not None)


@dataclass(frozen=True, slots=True)
class HorizonScore:
    """Out-of-time coverage of one series and horizon over every topic's rows: the distinct ``origins`` and the
    ``rows`` scored, and the share whose band held (``None``: no row scored). `judged`: scored on at least
    `pools.forecast_band.MIN_ORIGINS` origins; fewer is reported as too few to judge the band by."""

    metric: str
    horizon_days: int
    origins: int
    rows: int
    band_held: float | None

    @property
    def judged(self) -> bool:
        return self.band_held is not None and self.origins >= MIN_ORIGINS


def horizon_scores(rows: Iterable[BacktestRow]) -> tuple[HorizonScore, ...]:
    """Per series and horizon of the backtest, the out-of-time coverage of its rows (see the module docstring)."""
    listed = list(rows)
    scored: dict[tuple[str, int], list[tuple[BacktestRow, bool]]] = {(r.metric, r.horizon_days): [] for r in listed}
    for r, low, high in _scored(listed):
        if r.actual > 0:
            scored[r.metric, r.horizon_days].append((r, low <= r.actual <= high))
    return tuple(HorizonScore(m, h, len({r.origin for r, _ in hits}), len(hits),
                              sum(ok for _, ok in hits) / len(hits) if hits else None)
                 for (m, h), hits in sorted(scored.items()))


def _scored(rows: Iterable[BacktestRow]) -> list[tuple[BacktestRow, float, float]]:
    """The rows the out-of-time band scores, with its edges."""
    return [x for x in out_of_time(list(rows)) if x is not None]


#: The backtest series that tests each capacity dimension's forecast (replicas have none: they do not grow).
SERIES_OF = {"nw_in": "bytes_in_p99", "nw_out": "bytes_in_p99", "disk": "storage_bytes"}


def coverage_at(scores: Iterable[Score], pool: str, dimension: str | None, day: int) -> Score | None:
    """The pool's out-of-time score behind its crossing ``day`` days ahead in ``dimension`` (`pool_scores`: the
    pool's own band, the one its runway's dates follow): the shortest judged horizon of its series at or past
    ``day`` (``None``: none reaches that far, or the dimension has no series)."""
    metric = SERIES_OF.get(dimension or "")
    reaching = [s for s in scores if (s.name, s.metric) == (pool, metric) and s.judged and s.horizon_days >= day]
    return min(reaching, key=lambda s: s.horizon_days, default=None)
