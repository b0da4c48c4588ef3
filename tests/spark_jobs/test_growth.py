"""Growth robust to the weekly cycle (pure Python, no Spark)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_jobs.growth import Growth, robust_growth
from tests.plugin import examples

WEEK = (1.0, 1.05, 1.1, 1.08, 1.02, 0.7, 0.6)  # Monday .. Sunday


def _series(days: int, growth: float, start_weekday: int = 0) -> tuple[list[int], list[float]]:
    d = list(range(100, 100 + days))
    return d, [1e6 * (1 + growth) ** i * WEEK[(start_weekday + i) % 7] for i in range(days)]


def _ols_growth(days: list[int], values: list[float]) -> float:
    ys = [math.log(v) for v in values]
    mx, my = sum(days) / len(days), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(days, ys)) / sum((x - mx) ** 2 for x in days)
    return math.expm1(slope)


@pytest.mark.parametrize("start", range(7))
def test_weekly_cycle_does_not_bias_the_growth(start: int) -> None:
    days, values = _series(14, 0.01, start)
    fit = robust_growth(days, values)
    assert fit.per_day == pytest.approx(0.01, abs=1e-12)
    assert fit.low == pytest.approx(0.01, abs=1e-12) and fit.high == pytest.approx(0.01, abs=1e-12)
    # the level is the seasonally adjusted value on the last day, projected without the weekday factor
    assert fit.level == pytest.approx(1e6 * 1.01**13 * _median_factor(), rel=1e-9)


def _median_factor() -> float:
    return sorted(WEEK)[3]


def test_a_plain_slope_over_two_weeks_is_biased() -> None:
    biases = [abs(_ols_growth(*_series(14, 0.01, s)) - 0.01) for s in range(7)]
    assert max(biases) > 0.005  # the reason for the seasonal pairs


def test_short_and_empty_series() -> None:
    assert robust_growth([], []) == Growth(0.0, 0.0, 0.0, 0.0)
    assert robust_growth([1, 2], [0.0, 5.0]) == Growth(0.0, 0.0, 0.0, 5.0)
    fit = robust_growth([1, 2, 3], [100.0, 110.0, 121.0])
    assert fit.per_day == pytest.approx(0.1)
    assert fit.forecast(2) == pytest.approx((121.0 * 1.21, 121.0 * 1.21, 121.0 * 1.21))


@settings(max_examples=examples(40))
@given(
    st.lists(st.floats(min_value=1.0, max_value=1e12, allow_nan=False), min_size=2, max_size=40),
    st.integers(min_value=0, max_value=400),
)
def test_band_contains_the_forecast(values: list[float], horizon: int) -> None:
    fit = robust_growth(list(range(len(values))), values)
    low, mid, high = fit.forecast(horizon)[1], fit.forecast(horizon)[0], fit.forecast(horizon)[2]
    assert fit.low <= fit.per_day <= fit.high
    assert low <= mid * (1 + 1e-12) and mid <= high * (1 + 1e-12)


def test_backtest_forecasts_from_each_origin_with_only_the_history_before_it() -> None:
    from spark_jobs.growth import MIN_FIT_DAYS, backtest

    days, values = _series(28, 0.01)
    points = backtest(days, values, horizons=(1, 7))
    origins = sorted({p.origin for p in points})
    assert origins[0] == days[0] + MIN_FIT_DAYS - 1 and origins[-1] == days[-2]
    for p in points:
        known = [(d, v) for d, v in zip(days, values) if d <= p.origin]
        fit = robust_growth([d for d, _ in known], [v for _, v in known])
        assert (p.forecast, p.low, p.high) == fit.forecast(p.horizon)  # nothing after the origin is used
        assert p.actual == values[days.index(p.origin + p.horizon)]
    assert {(p.origin, p.horizon) for p in points} == {(o, h) for o in origins for h in (1, 7) if o + h <= days[-1]}


def test_backtest_origins_are_thinned_to_the_latest_and_skip_missing_days() -> None:
    from spark_jobs.growth import MAX_ORIGINS, backtest

    days, values = _series(200, 0.002)
    origins = sorted({p.origin for p in backtest(days, values, horizons=(1,))})
    eligible = 200 - 7  # days 106 .. 298 have a week of history and a later day
    assert len(origins) == math.ceil(eligible / math.ceil(eligible / MAX_ORIGINS)) <= MAX_ORIGINS
    assert origins[-1] == days[-2]
    assert len({b - a for a, b in zip(origins, origins[1:])}) == 1  # evenly spaced
    gappy = backtest([0, 1, 2, 3, 4, 5, 6, 8], [1.0] * 8, horizons=(1, 2))
    assert [(p.origin, p.horizon) for p in gappy] == [(6, 2)]  # day 7 has no value
