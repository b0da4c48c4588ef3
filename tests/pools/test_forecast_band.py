"""The calibrated forecast band: its quantiles per horizon, its use by the runway's demand paths, and its coverage
recomputed independently of `pools.forecast_band` from the series the backtest is made on."""

from __future__ import annotations

import math
from dataclasses import fields
from datetime import date, timedelta

import numpy as np
import pytest

from pools.demand import demand_over_days
from pools.forecast_band import MIN_POINTS, BandCalibration, calibrate, held_out
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


def test_the_growth_band_misses_and_the_calibrated_band_holds_about_80_percent():
    rows = _rows(_noisy_topics())
    for h in (1, 7, 14):
        at = [r for r in rows if r.horizon_days == h]
        growth = sum(r.low <= r.actual <= r.high for r in at) / len(at)
        held = [(r, lo, hi) for r, lo, hi in held_out(rows) if r.horizon_days == h]
        calibrated = sum(lo <= r.actual <= hi for r, lo, hi in held) / len(held)
        if h == 1:
            assert growth < 0.5, growth  # the growth slope's band alone: day-to-day noise escapes it
        assert 0.72 <= calibrated <= 0.88, (h, calibrated)


def test_coverage_recomputed_from_the_series_matches():
    """The documented method (docs/formats.md) on the daily series, written out without `pools.forecast_band`."""
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
    got = {id(r): (lo, hi) for r, lo, hi in held_out(rows)}
    for h in (1, 7, 14):
        held = total = 0
        for r in (r for r in rows if r.horizon_days == h):
            width = {}
            for k in sorted({x.horizon_days for x in rows}):
                logs = [math.log(x.actual / x.forecast) for x in rows if x.topic != r.topic and x.horizon_days == k]
                if len(logs) >= MIN_POINTS:
                    width[k] = (min(0.0, _quantile(logs, 0.1)), max(0.0, _quantile(logs, 0.9)))
            assert h in width
            assert max(width) >= h  # every horizon is calibrated: the band is forecast × e^q, nothing of growth
            low, high = r.forecast * math.exp(width[h][0]), r.forecast * math.exp(width[h][1])
            assert got[id(r)] == pytest.approx((low, high), rel=1e-9)
            held += low <= r.actual <= high
            total += 1
        assert 0.7 <= held / total <= 0.9


def test_widths_interpolate_from_zero_and_hold_past_the_last_horizon():
    rows = [BacktestRow("t", "storage_bytes", EPOCH + timedelta(days=i), h, 100.0 * (1 + s), 100.0, 100.0, 100.0)
            for i in range(MIN_POINTS) for h, s in ((1, 0.01 * (i - 4)), (7, 0.03 * (i - 4)))]
    rows += [BacktestRow("t", "storage_bytes", EPOCH, 30, 100.0, 100.0, 100.0, 100.0)]  # too few rows at 30
    c = calibrate(rows)
    assert [h for h, *_ in c.horizons["storage_bytes"]] == [1, 7]
    q1 = _quantile([math.log(1 + 0.01 * (i - 4)) for i in range(MIN_POINTS)], 0.9)
    q7 = _quantile([math.log(1 + 0.03 * (i - 4)) for i in range(MIN_POINTS)], 0.9)
    low, high = c.log_widths("storage_bytes", [0, 1, 4, 7, 90])
    assert high.tolist() == pytest.approx([0.0, q1, q1 + (q7 - q1) / 2, q7, q7])
    assert (low <= 0).all() and low[0] == 0.0
    assert c.log_widths("bytes_in_p99", [5])[1].tolist() == [0.0]  # an uncalibrated series keeps the growth band


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
