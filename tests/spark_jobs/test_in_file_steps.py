"""A query_range series converted in its file gives exactly what the sample-by-sample path gives.

Random counters over several files per metric (resets, lost scrapes, meters created mid-way, duplicate and
conflicting samples, files that touch at a shared sample), plus exposition text for later days: the
per-minute rows and the unit counts must equal the sample-by-sample path's; and when files overlap
inside a series' span, the conversion is detected as not holding.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

# each test stages the same random series twice, through both Spark paths (over a minute each)
pytestmark = [pytest.mark.spark, pytest.mark.slow]

T0 = 1_740_960_000_000
M = 60_000
FAMILIES = {"bytes_in": "bytesin", "messages_in": "messagesin"}
BROKER_MAP = {"kafka-1:7071": 1, "kafka-2:7071": 2}


def _series(rng: np.random.Generator, minutes: int) -> dict[tuple[int, str, str], list[tuple[int, float]]]:
    """(broker, topic, metric) → [(ts_ms, value)], on each broker's scrape grid (broker 2 scrapes 2 s later)."""
    out = {}
    for b in (1, 2):
        for t in ("a", "b", "c"):
            for metric in FAMILIES:
                value, pairs = float(rng.integers(0, 10**9)), []
                born = int(rng.integers(0, minutes // 3)) if t == "c" else 0  # a meter created mid-way
                for k in range(born, minutes):
                    ts = T0 + k * M + (2_000 if b == 2 else 0) + int(rng.integers(0, 300))
                    if rng.random() < 0.05:
                        continue  # a lost scrape
                    value = float(rng.integers(0, 5_000)) if rng.random() < 0.03 else value + float(rng.integers(0, 10**6))
                    pairs.append((ts, value))
                out[(b, t, metric)] = pairs
    return out


def _write_range(root: Path, series, cuts: list[tuple[int, int]], *, dups: bool) -> None:
    """One file per (metric, [lo, hi] minute range); ``dups`` adds a repeated and a conflicting sample."""
    for metric, fam in FAMILIES.items():
        name = f"kafka_server_brokertopicmetrics_{fam}_total"
        for i, (lo, hi) in enumerate(cuts):
            result = []
            for (b, t, m), pairs in sorted(series.items()):
                if m != metric:
                    continue
                values = [[ts / 1000, f"{v:.1f}"] for ts, v in pairs if T0 + lo * M <= ts <= T0 + hi * M + 59_999]
                if dups and values and t == "a":
                    values.insert(3, list(values[2]))  # exported twice
                    values.insert(8, [values[7][0], f"{float(values[7][1]) + 1:.1f}"])  # two values at one time
                if values:
                    result.append({"metric": {"__name__": name, "instance": f"kafka-{b}:7071", "topic": t}, "values": values})
            doc = {"status": "success", "data": {"resultType": "matrix", "result": result}}
            (root / f"{name}-part{i}.json").write_text(json.dumps(doc))


def _write_prom(root: Path, series, lo: int) -> list[str]:
    lines = []
    for (b, t, metric), pairs in sorted(series.items()):
        name = f"kafka_server_brokertopicmetrics_{FAMILIES[metric]}_total"
        lines += [f'{name}{{instance="kafka-{b}:7071",topic="{t}"}} {v:.1f} {ts}' for ts, v in pairs if ts >= T0 + lo * M]
    path = root / "late.prom"
    path.write_text("\n".join(lines) + "\n")
    return [str(path)]


def _both(spark, root: Path, prom: list[str]):
    from pyspark.sql import functions as F

    from spark_jobs.ingest import IngestInputs, IngestParams, _stage_samples, _units
    from spark_jobs.rates import duplicate_units, minute_rows

    inputs = IngestInputs(prom_text=tuple(prom), query_range=tuple(sorted(str(p) for p in root.glob("*.json"))))
    params = IngestParams("c", BROKER_MAP)
    out = []
    for in_file in (True, False):
        records, steps = _stage_samples(spark, inputs, params, root / "work", lambda _m: None, in_file=in_file)
        rows = sorted(tuple(r) for r in minute_rows(steps, records).collect())
        counts = Counter()
        for r in _units(records, None, duplicate_units(steps)).groupBy("kind", "reason").agg(F.sum("n").alias("n")).collect():
            counts[(r["kind"], r["reason"])] += r["n"]
        foreign = steps.where(F.col("foreign")).count()
        out.append((rows, +counts, foreign))
    return out


def test_series_converted_in_their_files_equal_the_sample_path(spark, tmp_path: Path) -> None:
    series = _series(np.random.default_rng(3), 300)
    # the second and third files share their boundary minute's samples (an export's inclusive end)
    _write_range(tmp_path, series, [(0, 99), (100, 180), (180, 239)], dups=True)
    prom = _write_prom(tmp_path, series, 240)
    (fast, fast_counts, foreign), (slow, slow_counts, _) = _both(spark, tmp_path, prom)
    assert foreign == 0
    assert fast_counts == slow_counts
    assert fast_counts[("ignored", "duplicate_sample")] > 0 and fast_counts[("rejected", "duplicate_timestamp")] > 0
    assert len(fast) > 1000 and fast == slow
    assert any(r[-1] & 1 for r in fast)  # resets were seen


def test_series_overlapping_across_files_are_detected(spark, tmp_path: Path) -> None:
    series = _series(np.random.default_rng(4), 120)
    _write_range(tmp_path, series, [(0, 80), (60, 119)], dups=False)
    (_rows, _counts, foreign), _ = _both(spark, tmp_path, [])
    assert foreign > 0
