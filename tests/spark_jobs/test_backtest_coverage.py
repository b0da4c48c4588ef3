"""The backtest's error and coverage recomputed from the history alone, as docs/formats.md documents the method.

Three weeks of normalized history, one minute a day per topic (so each day's p99 minute is that minute), go
through `poolplan ingest`; ``backtest.parquet`` and ``quality.json``'s ``backtest`` are then recomputed here from
the rows written: origins, horizons, the fit (`spark_jobs.growth.robust_growth`, the documented forecaster), the
calibration quantiles and the out-of-time coverage, without `pools.forecast_band`.
"""

from __future__ import annotations

import json
import math
import random
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pytest

from spark_jobs.growth import BACKTEST_HORIZONS, MAX_ORIGINS, robust_growth

pytestmark = pytest.mark.slow

DAYS, TOPICS = 21, 12
DAY0 = date(2026, 3, 2)


def _quantile(values: list[float], q: float) -> float:
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo = int(math.floor(pos))
    return s[lo] + (s[min(lo + 1, len(s) - 1)] - s[lo]) * (pos - lo)


def test_coverage_recomputed_from_the_history_matches_the_profile(spark, tmp_path: Path) -> None:
    from spark_jobs.ingest import IngestInputs, IngestParams, run

    rng = random.Random(5)
    series: dict[str, list[float]] = {}
    lines = []
    for k in range(TOPICS):
        topic, level, g = f"t{k:02d}", rng.uniform(1e6, 1e8), rng.uniform(-0.01, 0.03)
        series[topic] = []
        for d in range(DAYS):
            rate = level * (1 + g) ** d * (1 + 0.15 * math.sin(2 * math.pi * d / 7 + k)) * math.exp(rng.gauss(0, 0.1))
            bytes_in = round(rate * 60)
            series[topic].append(bytes_in / 60)
            lines.append(json.dumps({"cluster": "c", "ts": f"{DAY0 + timedelta(days=d)}T12:00:00Z", "interval_s": 60,
                                     "broker_id": 1, "topic": topic, "bytes_in": bytes_in, "bytes_out": bytes_in,
                                     "messages_in": 100, "source": "prom_range", "flags": 0}))
    (tmp_path / "in.json").write_text("\n".join(lines) + "\n")
    result = run(spark, IngestInputs(normalized_json=(str(tmp_path / "in.json"),)), tmp_path / "out",
                 IngestParams(cluster="c"))

    # the backtest rows, from the history: every day with 7 days up to it and a later day is an origin
    expected = []
    days = list(range(DAYS))
    eligible = [d for d in days[:-1] if d + 1 >= 7]
    step = max(1, math.ceil(len(eligible) / MAX_ORIGINS))
    for topic, values in sorted(series.items()):
        for o in sorted(eligible[::-1][::step]):
            fit = robust_growth(days[: o + 1], values[: o + 1])
            for h in BACKTEST_HORIZONS:
                if o + h < DAYS:
                    f, lo, hi = fit.forecast(h)
                    expected.append((topic, o, h, values[o + h], f, lo, hi))
    import pyarrow.parquet as pq
    written = [r for r in pq.read_table(tmp_path / "out" / "backtest.parquet").to_pylist()
               if r["metric"] == "bytes_in_p99"]
    assert len(written) == len(expected)
    for r, e in zip(written, expected):
        assert (r["topic"], (r["origin"] - DAY0).days, r["horizon_days"]) == e[:3]
        assert (r["actual"], r["forecast"], r["low"], r["high"]) == pytest.approx(e[3:], rel=1e-9)

    # calibration and out-of-time coverage: ln(actual / forecast) quantiles per horizon on the rows whose actual day
    # had passed at the judged row's origin; 5+ origins to test a horizon, longer ones derived as q(T)·(h/T)^p
    def widths(rows):
        out, short = {}, []
        for h in sorted({x[2] for x in rows}):
            at = [x for x in rows if x[2] == h]
            if len(at) >= 10 and len({x[1] for x in at}) >= 5:
                logs = [math.log(x[3] / x[4]) for x in at]
                out[h] = (min(0.0, _quantile(logs, 0.1)), max(0.0, _quantile(logs, 0.9)))
            else:
                short.append(h)
        if out:
            top, first = max(out), min(out)
            p = [0.0 if top == first or not out[first][k] or not out[top][k] else
                 min(1.0, max(0.0, math.log(out[top][k] / out[first][k]) / math.log(top / first))) for k in (0, 1)]
            out |= {h: (out[top][0] * (h / top) ** p[0], out[top][1] * (h / top) ** p[1]) for h in short if h > top}
        return out

    def band(w, e):
        """forecast · e^q(h), q interpolated from (0, 0), widening past the last horizon as the growth band does."""
        keys = sorted(w)
        last, h = keys[-1], e[2]
        past = max(0.0, 1 - last / h)
        q_low = float(np.interp(h, [0, *keys], [0.0, *(w[k][0] for k in keys)]))
        q_high = float(np.interp(h, [0, *keys], [0.0, *(w[k][1] for k in keys)]))
        q_low += past * min(0.0, math.log(e[5] / e[4]))
        q_high += past * max(0.0, math.log(e[6] / e[4]))
        return e[4] * math.exp(q_low), e[4] * math.exp(q_high)

    summary = result.quality["backtest"]["bytes_in_p99"]
    growth_held = {}
    for h in sorted({e[2] for e in expected}):
        mine = [e for e in expected if e[2] == h]
        held = scored = 0
        for e in mine:
            w = widths([x for x in expected if x[1] + x[2] <= e[1]])
            if not w:
                continue  # no tested horizon yet at this origin: not scored
            low, high = band(w, e)
            held += low <= e[3] <= high
            scored += 1
        growth_held[h] = sum(e[5] <= e[3] <= e[6] for e in mine) / len(mine)
        assert summary[str(h)]["forecasts"] == len(mine)
        assert summary[str(h)]["origins"] == len({e[1] for e in mine})
        assert scored < len(mine) and summary[str(h)]["scored"] == scored  # the first origins are never scored
        assert summary[str(h)]["band_held"] == (pytest.approx(held / scored, abs=1e-12) if scored else None), h
        assert summary[str(h)]["growth_band_held"] == pytest.approx(growth_held[h], abs=1e-12), h
        assert summary[str(h)]["mape"] == pytest.approx(sum(abs(e[4] - e[3]) / e[3] for e in mine) / len(mine))
    one_day = summary["1"]
    assert one_day["growth_band_held"] < 0.5 and 0.65 <= one_day["band_held"] <= 0.95, one_day
