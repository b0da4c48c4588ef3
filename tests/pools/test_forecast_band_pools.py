"""A pool's band: calibrated on the pool's own summed backtest by the topics' rule, every pool's sums pooled where
a pool has too few, scored out of time, and used by the runway's demand paths (network out included). The rule is
recomputed here from docs/formats.md with numpy, independently of `pools.forecast_band`."""

from __future__ import annotations

import math
from dataclasses import fields
from datetime import date, timedelta

import numpy as np
import pytest

from pools.demand import demand_over_days
from pools.forecast_band import (MIN_ORIGINS, MIN_POINTS, BandCalibration, GroupCalibration, calibrate_groups,
                                 group_rows, out_of_time)
from pools.profile import BacktestRow, TopicProfile
from pools.snapshot import Broker, Capacity, ClusterSnapshot, PartitionState

EPOCH = date(2026, 1, 1)
HORIZONS = (1, 7)


def _topic_rows(origins: dict[str, int], seed: int = 5) -> tuple[list[BacktestRow], dict[str, str]]:
    """Three topics per pool, each pool with ``origins[pool]`` daily origins; per pool a shared error (the weather
    every topic of it sees) and each topic's own, so the sum of the topics' edges is not the pool's band."""
    rng = np.random.default_rng(seed)
    rows, pool_of = [], {}
    for pool, n in sorted(origins.items()):
        for o in range(n):
            shared = {h: rng.normal(0, 0.05 * math.sqrt(h)) for h in HORIZONS}
            for k in range(3):
                topic = f"{pool}-{k}"
                pool_of[topic] = pool
                for h in HORIZONS:
                    forecast = 100.0 * (k + 1)
                    actual = forecast * math.exp(shared[h] + rng.normal(0, 0.2))
                    rows.append(BacktestRow(topic, "bytes_in_p99", EPOCH + timedelta(days=o), h, actual, forecast,
                                            forecast * 0.99, forecast * 1.01))
    return rows, pool_of


def _sums(rows, pool_of):
    """docs/formats.md: a pool's row per origin and horizon sums its topics' actual, forecast, low and high."""
    out: dict = {}
    for r in rows:
        acc = out.setdefault((pool_of[r.topic], r.metric, r.origin, r.horizon_days), [0.0] * 4)
        for i, v in enumerate((r.actual, r.forecast, r.low, r.high)):
            acc[i] += v
    return out


def _band(sums: dict, pools: set[str], metric: str, known=lambda key: True) -> dict[int, tuple[float, float]]:
    """The tested and derived horizons' (q_low, q_high) over the sums of ``pools`` (Q with linear
    interpolation; a longer horizon with too few rows derived from the tested ones, q ∝ h^p)."""
    tested, short = {}, []
    for h in HORIZONS:
        keys = [k for k in sums if k[0] in pools and k[1] == metric and k[3] == h and known(k)]
        r = [math.log(sums[k][0] / sums[k][1]) for k in keys]
        if len(r) >= MIN_POINTS and len({k[2] for k in keys}) >= MIN_ORIGINS:
            lo, hi = np.quantile(r, (0.1, 0.9))
            tested[h] = (min(0.0, lo), max(0.0, hi))
        elif r:
            short.append(h)
    if not tested:
        return {}
    s, t = min(tested), max(tested)

    def power(i):
        a, b = tested[s][i], tested[t][i]
        return 0.0 if t == s or a == 0 or b == 0 else min(1.0, max(0.0, math.log(b / a) / math.log(t / s)))
    return tested | {h: tuple(tested[t][i] * (h / t) ** power(i) for i in (0, 1)) for h in short if h > t}


def test_a_pool_is_calibrated_on_its_own_sums_and_falls_back_to_every_pools_pooled():
    rows, pool_of = _topic_rows({"big": 40, "small": 8})  # small: 8 rows per horizon < MIN_POINTS
    grouped = group_rows(rows, pool_of | {"stray": None})
    sums = _sums(rows, pool_of)
    assert [(r.topic, r.metric, r.origin, r.horizon_days, [r.actual, r.forecast, r.low, r.high]) for r in grouped] \
        == [(*k, pytest.approx(v, rel=1e-15)) for k, v in sorted(sums.items())]
    c = calibrate_groups(grouped)
    assert (c.rests_on("big", "bytes_in_p99"), c.rests_on("small", "bytes_in_p99")) == ("own", "pooled")
    assert c.rests_on("big", "storage_bytes") is None and c.rests_on("nowhere", "bytes_in_p99") == "pooled"
    for pool, pools in (("big", {"big"}), ("small", {"big", "small"})):
        got = [(b.horizon_days, b.q_low, b.q_high) for b in c.band(pool).horizons["bytes_in_p99"]]
        assert got == [(h, pytest.approx(lo, rel=1e-12), pytest.approx(hi, rel=1e-12))
                       for h, (lo, hi) in _band(sums, pools, "bytes_in_p99").items()]
    origins = {b.horizon_days: b.origins for b in c.band("small").horizons["bytes_in_p99"]}
    assert origins == {1: 40, 7: 40}  # the pooled rows' origins, not the small pool's 8
    # the pool's own spread is narrower than the sum of its topics' (independent topic errors partly cancel)
    topic_band = _band({(t.topic, t.metric, t.origin, t.horizon_days): [t.actual, t.forecast] for t in rows},
                       {f"big-{k}" for k in range(3)}, "bytes_in_p99")
    assert c.band("big").horizons["bytes_in_p99"][0].q_high < topic_band[1][1]
    assert calibrate_groups([]) == GroupCalibration() and GroupCalibration().band("x").horizons == {}


def test_too_few_rows_anywhere_leave_the_growth_band():
    rows, pool_of = _topic_rows({"a": MIN_ORIGINS - 1, "b": MIN_ORIGINS - 1})  # 8 rows per horizon, 4 origins
    c = calibrate_groups(group_rows(rows, pool_of))
    assert c.rests_on("a", "bytes_in_p99") is None and c.band("a").horizons == {}
    assert out_of_time(group_rows(rows, pool_of), grouped=True) == [None] * len(group_rows(rows, pool_of))


def test_pool_rows_are_scored_out_of_time_by_the_pool_band_known_then():
    rows, pool_of = _topic_rows({"big": 30, "small": 12})
    grouped = group_rows(rows, pool_of)
    sums = _sums(rows, pool_of)
    scored = out_of_time(grouped, grouped=True)
    assert len(scored) == len(grouped)
    for r, x in zip(grouped, scored):
        o = r.origin
        known = lambda k: k[2] + timedelta(days=k[3]) <= o  # noqa: E731 — the rows whose actual day had passed
        own = _band(sums, {r.topic}, r.metric, known)
        band = own or _band(sums, {"big", "small"}, r.metric, known)
        if not band:
            assert x is None, r
            continue
        assert x is not None, r
        at = sorted(band)
        q = [np.interp(r.horizon_days, [0, *at], [0.0, *(band[h][i] for h in at)]) for i in (0, 1)]
        past = max(0.0, 1 - at[-1] / r.horizon_days)  # past the last horizon: the growth band's widening
        q = [q[0] + past * min(0.0, math.log(r.low / r.forecast)),
             q[1] + past * max(0.0, math.log(r.high / r.forecast))]
        assert (x[1], x[2]) == pytest.approx((r.forecast * math.exp(q[0]), r.forecast * math.exp(q[1])), rel=1e-12)
    by_pool = {p: sum(x is not None and x[0].topic == p for x in scored) for p in ("big", "small")}
    assert by_pool["small"] > 0  # judged by the pooled band while its own rows were too few


def test_the_runway_widens_a_pools_summed_forecast_by_its_band_and_network_out_follows():
    """Each topic of a pool: its forecast × e^q(t) of the pool's band; consumer bytes-out = measured bytes-out ×
    (bytes-in edge / measured bytes-in), replication = bytes-in edge × (RF − 1); past the last horizon the pool's
    summed growth band widens it. A topic without a pool takes the pooled band around its own forecast."""
    def row(topic, rate, growth, high):
        return TopicProfile(**{f.name: 0 for f in fields(TopicProfile)} | {
            "topic": topic, "forecast_horizon_days": 10, "bytes_in_p99": rate, "bytes_out_p99": 2 * rate,
            "bytes_in_p99_growth_per_day": growth, "forecast_bytes_in_p99": rate * (1 + growth) ** 10,
            "forecast_bytes_in_p99_low": rate * (1 + growth) ** 10, "forecast_bytes_in_p99_high": rate * high ** 10})
    profile = {"x": row("x", 100.0, 0.01, 1.02), "y": row("y", 50.0, 0.0, 1.05), "z": row("z", 10.0, 0.0, 1.0)}
    snap = ClusterSnapshot("c", tuple(Broker(b, None, Capacity(1, 1, 1, 1)) for b in (1, 2)), (),
                           tuple(PartitionState(t, 0, (1, 2), leader=1) for t in profile))
    own, pooled = BandCalibration({"bytes_in_p99": ((7, -0.2, 0.3, 40),)}), BandCalibration(
        {"bytes_in_p99": ((7, -0.1, 0.1, 80),)})
    c = GroupCalibration({"p": own}, pooled)
    days = [0, 3, 7, 20]
    t = np.array(days, dtype=float)
    paths = demand_over_days(snap, profile, days, edge="high", calibration=c, groups={"x": "p", "y": "p"})
    forecast = {"x": 100.0 * 1.01 ** t, "y": 50.0 * np.ones_like(t), "z": 10.0 * np.ones_like(t)}
    growth = 100.0 * 1.02 ** t + 50.0 * 1.05 ** t
    f = forecast["x"] + forecast["y"]
    q = np.interp(t, [0, 7], [0, 0.3]) + np.clip(1 - 7 / np.maximum(t, 1), 0, 1) * np.maximum(np.log(growth / f), 0)
    for topic, measured in (("x", 100.0), ("y", 50.0)):
        b = forecast[topic] * np.exp(q)
        assert paths[topic][:, 0] == pytest.approx(2 * b, rel=1e-12)  # nw_in = bytes-in × RF
        assert paths[topic][:, 1] == pytest.approx(2 * measured * b / measured + b, rel=1e-12)
    assert paths["z"][:, 0] == pytest.approx(2 * 10.0 * np.exp(np.interp(t, [0, 7], [0, 0.1])), rel=1e-12)
    plain = demand_over_days(snap, profile, days, edge="high", calibration=GroupCalibration(), groups={"x": "p"})
    assert plain["x"][:, 0] == pytest.approx(2 * 100.0 * 1.02 ** t, rel=1e-12)  # no tested horizon: growth band
