"""The calibrated forecast band: its quantiles per horizon (tested on enough origins, else derived by the square
root of the horizon), its use by the runway's demand paths (network out included), and its out-of-time coverage
recomputed independently of `pools.forecast_band` from the series the backtest is made on."""

from __future__ import annotations

import math
from dataclasses import fields
from datetime import date, timedelta

import numpy as np
import pytest

from pools.demand import demand_over_days
from pools.forecast_band import MIN_ORIGINS, MIN_POINTS, BandCalibration, calibrate, out_of_time
from pools.profile import BacktestRow, TopicProfile
from pools.snapshot import Broker, Capacity, ClusterSnapshot, PartitionState
from spark_jobs.growth import backtest

EPOCH = date(2026, 1, 1)


def _noisy_topics(n: int = 40, days: int = 42, seed: int = 3) -> dict[str, tuple[list[int], list[float]]]:
    """Daily p99 series like a real cluster's: a growth trend, a weekly cycle and day-to-day noise."""
    rng = np.random.default_rng(seed)
    out = {}
    for i in range(n):
        g, level = rng.uniform(-0.005, 0.02), rng.uniform(1e5, 1e8)
        week = 1 + 0.15 * np.sin(2 * np.pi * np.arange(days) / 7 + rng.uniform(0, 7))
        noise = np.exp(rng.normal(0, 0.08, days))
        out[f"t{i:02d}"] = (list(range(days)), (level * (1 + g) ** np.arange(days) * week * noise).tolist())
    return out


def _rows(series) -> list[BacktestRow]:
    return [BacktestRow(t, "bytes_in_p99", EPOCH + timedelta(days=p.origin), p.horizon, p.actual, p.forecast, p.low,
                        p.high)
            for t, (d, v) in sorted(series.items()) for p in backtest(d, v, horizons=(1, 7, 14))]


def _quantile(values: list[float], q: float) -> float:
    """Linear interpolation between order statistics, written out."""
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo = int(math.floor(pos))
    return s[lo] + (s[min(lo + 1, len(s) - 1)] - s[lo]) * (pos - lo)


def test_the_growth_band_misses_and_the_calibrated_band_holds_about_80_percent_out_of_time():
    rows = _rows(_noisy_topics(n=30, days=91, seed=5))  # a quarter of history
    scored = [x for x in out_of_time(rows) if x is not None]
    for h in (1, 7, 14):
        at = [r for r in rows if r.horizon_days == h]
        growth = sum(r.low <= r.actual <= r.high for r in at) / len(at)
        held = [(r, lo, hi) for r, lo, hi in scored if r.horizon_days == h]
        calibrated = sum(lo <= r.actual <= hi for r, lo, hi in held) / len(held)
        if h == 1:
            assert growth < 0.5, growth  # the growth slope's band alone: day-to-day noise escapes it
        assert 0.75 <= calibrated <= 0.85, (h, calibrated)  # 80 % ± 5, out of time


def _widths(known: list[BacktestRow]) -> dict[int, tuple[float, float]]:
    """The documented calibration, written out: tested horizons (rows and origins enough), then the longer ones
    with rows derived from the longest tested, T, as q(T) · (h / T)^p, p fitted between the shortest and longest
    tested (clipped to [0, 1]; 0 with one tested horizon)."""
    width: dict[int, tuple[float, float]] = {}
    short = []
    for k in sorted({x.horizon_days for x in known}):
        at = [x for x in known if x.horizon_days == k]
        logs = [math.log(x.actual / x.forecast) for x in at]
        if len(logs) >= MIN_POINTS and len({x.origin for x in at}) >= MIN_ORIGINS:
            width[k] = (min(0.0, _quantile(logs, 0.1)), max(0.0, _quantile(logs, 0.9)))
        else:
            short.append(k)
    if width:
        top, first = max(width), min(width)
        p = [0.0 if top == first or not width[first][e] or not width[top][e] else
             min(1.0, max(0.0, math.log(width[top][e] / width[first][e]) / math.log(top / first))) for e in (0, 1)]
        for k in (k for k in short if k > top):
            width[k] = (width[top][0] * (k / top) ** p[0], width[top][1] * (k / top) ** p[1])
    return width


def test_out_of_time_coverage_recomputed_from_the_series_matches():
    """The documented method (docs/formats.md) on the daily series, written out without `pools.forecast_band`: each
    origin's rows judged by the band calibrated on the rows whose actual day had passed at that origin."""
    series = _noisy_topics(n=25, days=35, seed=11)
    rows = _rows(series)
    # the backtest's own forecasts, re-derived: robust growth fitted on the days up to each origin
    from spark_jobs.growth import robust_growth
    for r in rows[::17]:
        d, v = series[r.topic]
        o = (r.origin - EPOCH).days
        fit = robust_growth([x for x in d if x <= o], [y for x, y in zip(d, v) if x <= o])
        assert fit.forecast(r.horizon_days)[0] == pytest.approx(r.forecast, rel=1e-12)
        assert r.actual == v[d.index(o + r.horizon_days)]
    got = {id(x[0]): x[1:] for x in out_of_time(rows) if x is not None}
    checked = 0
    for origin in sorted({r.origin for r in rows}):
        width = _widths([x for x in rows if x.origin + timedelta(days=x.horizon_days) <= origin])
        for r in (r for r in rows if r.origin == origin):
            if not width:
                assert id(r) not in got  # no tested horizon yet: not scored
            elif r.horizon_days in width:
                q_low, q_high = width[r.horizon_days]
                assert got[id(r)] == pytest.approx((r.forecast * math.exp(q_low), r.forecast * math.exp(q_high)),
                                                   rel=1e-9)
                checked += 1
    assert checked > len(rows) / 2


def test_a_future_origin_never_sets_an_earlier_band():
    rows = _rows(_noisy_topics(n=12, days=30, seed=5))
    last = max(r.origin for r in rows)
    wild = [BacktestRow(r.topic, r.metric, r.origin, r.horizon_days, r.actual * 50, r.forecast, r.low, r.high)
            if r.origin == last else r for r in rows]
    before = [x for x in out_of_time(rows) if x is not None and x[0].origin < last]
    after = [x for x in out_of_time(wild) if x is not None and x[0].origin < last]
    assert [x[1:] for x in before] == [x[1:] for x in after] and before


def test_widths_interpolate_from_zero_and_too_few_origins_are_derived_by_the_square_root():
    rows = [BacktestRow("t", "storage_bytes", EPOCH + timedelta(days=i), h, 100.0 * (1 + s), 100.0, 100.0, 100.0)
            for i in range(MIN_POINTS) for h, s in ((1, 0.01 * (i - 4)), (7, 0.03 * (i - 4)))]
    # one origin with many rows (one day's weather): never a band of its own
    rows += [BacktestRow(f"u{i}", "storage_bytes", EPOCH, 28, 300.0, 100.0, 100.0, 100.0) for i in range(40)]
    c = calibrate(rows)
    bands = c.horizons["storage_bytes"]
    assert [(b.horizon_days, b.origins, b.derived_from) for b in bands] == [(1, 10, None), (7, 10, None),
                                                                             (28, 1, 7)]
    q1 = _quantile([math.log(1 + 0.01 * (i - 4)) for i in range(MIN_POINTS)], 0.9)
    q7 = _quantile([math.log(1 + 0.03 * (i - 4)) for i in range(MIN_POINTS)], 0.9)
    p = math.log(q7 / q1) / math.log(7)  # how the width grew from 1 to 7 days, here clipped to 1 at most
    assert 0 < p <= 1 and bands[2].q_high == pytest.approx(q7 * 4 ** p)  # 28 = 4 × 7: not 300 / 100
    low, high = c.log_widths("storage_bytes", [0, 1, 4, 7, 28, 90])
    assert high.tolist() == pytest.approx([0.0, q1, q1 + (q7 - q1) / 2, q7, q7 * 4 ** p, q7 * 4 ** p])
    assert (low <= 0).all() and low[0] == 0.0
    assert c.log_widths("bytes_in_p99", [5])[1].tolist() == [0.0]  # an uncalibrated series keeps the growth band
    few = [r for r in rows if r.origin < EPOCH + timedelta(days=MIN_ORIGINS - 1)]  # 4 origins: nothing tested
    assert calibrate(few).horizons == {}


def test_the_runway_paths_take_the_calibrated_edges():
    row = TopicProfile(**{f.name: 0 for f in fields(TopicProfile)} | {
        "topic": "t", "forecast_horizon_days": 10, "bytes_in_p99": 100.0, "bytes_in_p99_growth_per_day": 0.0,
        "forecast_bytes_in_p99": 100.0, "forecast_bytes_in_p99_low": 100.0, "forecast_bytes_in_p99_high": 100.0})
    snap = ClusterSnapshot("c", (Broker(1, None, Capacity(1, 1, 1, 1)),), (), (PartitionState("t", 0, (1,), leader=1),))
    c = BandCalibration({"bytes_in_p99": ((1, -0.1, 0.2, 50),)})
    high = demand_over_days(snap, {"t": row}, [0, 1, 5], edge="high", calibration=c)["t"][:, 0]
    low = demand_over_days(snap, {"t": row}, [0, 1, 5], edge="low", calibration=c)["t"][:, 0]
    assert high.tolist() == pytest.approx([100.0, 100 * math.exp(0.2), 100 * math.exp(0.2)])
    assert low.tolist() == pytest.approx([100.0, 100 * math.exp(-0.1), 100 * math.exp(-0.1)])
    plain = demand_over_days(snap, {"t": row}, [0, 1, 5], edge="high")["t"][:, 0]
    assert plain.tolist() == pytest.approx([100.0, 100.0, 100.0])


def test_network_out_follows_the_calibrated_bytes_in_edge():
    """docs/formats.md: consumer bytes-out = measured bytes-out × (bytes-in edge / measured bytes-in), replication =
    bytes-in edge × (RF − 1), the edge being the calibrated one; nw_out is their sum."""
    row = TopicProfile(**{f.name: 0 for f in fields(TopicProfile)} | {
        "topic": "t", "forecast_horizon_days": 10, "bytes_in_p99": 100.0, "bytes_out_p99": 300.0,
        "bytes_in_p99_growth_per_day": 0.01, "forecast_bytes_in_p99": 100.0 * 1.01 ** 10,
        "forecast_bytes_in_p99_low": 100.0 * 1.005 ** 10, "forecast_bytes_in_p99_high": 100.0 * 1.02 ** 10})
    snap = ClusterSnapshot("c", tuple(Broker(b, None, Capacity(1, 1, 1, 1)) for b in (1, 2, 3)), (),
                           (PartitionState("t", 0, (1, 2, 3), leader=1), PartitionState("t", 1, (2, 3, 1), leader=2)))
    c = BandCalibration({"bytes_in_p99": ((1, -0.1, 0.2, 50), (7, -0.2, 0.3, 40))})
    days = [0, 1, 4, 7, 13, 30]
    for edge, k in (("high", 1), ("low", 0)):
        path = demand_over_days(snap, {"t": row}, days, edge=edge, calibration=c)["t"]
        t = np.array(days, dtype=float)
        forecast = 100.0 * 1.01 ** t
        growth = 100.0 * (1.005, 1.02)[k] ** t
        q = np.interp(t, [0, 1, 7], [0.0, (-0.1, 0.2)[k], (-0.2, 0.3)[k]])
        past = np.clip(1 - 7 / np.maximum(t, 1), 0, 1) * (t > 0)
        widen = np.log(growth / forecast)
        widen = np.minimum(widen, 0) if edge == "low" else np.maximum(widen, 0)
        bytes_in = forecast * np.exp(q + past * widen)
        assert path[:, 0] == pytest.approx(bytes_in * 3, rel=1e-12)  # nw_in = bytes-in × RF
        assert path[:, 1] == pytest.approx(300.0 * bytes_in / 100.0 + bytes_in * 2, rel=1e-12)
