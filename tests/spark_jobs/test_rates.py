"""Counters to per-minute rows: increase() semantics, re-created meters, resets, gaps, sub-minute scrapes."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark

M = 60_000
T0 = 1_740_960_000_000  # 2025-03-03T00:00:00Z


def _rows(spark, samples):
    from spark_jobs.records import RECORD_SCHEMA

    data = [
        ("prom_text", "f", "counter", None, "c", ts, broker, topic, None, metric, float(v), None, False, None, None)
        for broker, topic, metric, ts, v in samples
    ]
    return spark.createDataFrame(data, RECORD_SCHEMA)


def _normalized(spark, samples):
    from spark_jobs.rates import with_increase

    out = with_increase(_rows(spark, samples)).collect()
    return {(r["broker_id"], r["topic"], int(r["ts"].timestamp() * 1000) - T0): r.asDict() for r in out}


def test_increase_reset_gap_and_recreated_meter(spark) -> None:
    from spark_jobs.history_contract import FLAG_GAP, FLAG_RESET

    samples = []
    # broker 1, topic a: 0..5 normal, reset at 3 (value drops), scrape 6..8 missing (broker down), back at 9
    values = {0: 100, 1: 160, 2: 250, 3: 40, 4: 100, 5: 130, 9: 400}
    samples += [(1, "a", "bytes_in", T0 + k * M + 1500, v) for k, v in values.items()]
    # broker 1, topic b: present at 0,1, absent at 2,3 while broker 1 was scraped (meter closed), re-created at 4
    samples += [(1, "b", "bytes_in", T0 + k * M + 1500, v) for k, v in {0: 10, 1: 20, 4: 7, 5: 9}.items()]
    rows = _normalized(spark, samples)
    a = {k[2] // M: v for k, v in rows.items() if k[1] == "a"}
    assert {m: r["bytes_in"] for m, r in a.items()} == {0: 60, 1: 90, 2: 40, 3: 60, 4: 30, 5: 270}
    assert a[2]["flags"] & FLAG_RESET and not a[1]["flags"] & FLAG_RESET
    assert a[5]["interval_s"] == 240 and a[5]["flags"] & FLAG_GAP
    assert all(r["interval_s"] == 60 for m, r in a.items() if m != 5)
    b = {k[2] // M: v for k, v in rows.items() if k[1] == "b"}
    # the re-created meter's first value (7) counts over the window from broker 1's previous scrape (3)
    assert {m: r["bytes_in"] for m, r in b.items()} == {0: 10, 3: 7, 4: 2}
    assert b[3]["flags"] & FLAG_RESET and b[3]["interval_s"] == 60


def test_sub_minute_scrapes_sum_into_the_minute_and_duplicates_add_nothing(spark) -> None:
    half = M // 2
    samples = [(2, "t", "bytes_in", T0 + i * half, 1000 + 10 * i) for i in range(5)]
    samples += [(2, "t", "bytes_in", T0 + 2 * half, 1020)]  # the same sample exported twice
    samples += [(2, "t", "bytes_out", T0 + i * half, 5 * i) for i in range(5)]
    rows = _normalized(spark, samples)
    assert sorted((k[2], r["bytes_in"], r["bytes_out"], r["interval_s"]) for k, r in rows.items()) == [
        (0, 20, 10, 60),
        (M, 20, 10, 60),
    ]


def test_first_round_only_anchors(spark) -> None:
    rows = _normalized(spark, [(3, "t", "messages_in", T0, 5e9)])
    assert rows == {}


def test_a_series_missing_from_one_scrape_is_not_a_new_meter(spark) -> None:
    # broker 1 scrapes topics a and b every minute; b's line at minute 2 was lost (truncated): at minute 3 its
    # value did not fall, so only the increase since minute 1 counts, over the two-minute window
    samples = [(1, "a", "bytes_in", T0 + k * M, 1000 + 10 * k) for k in range(5)]
    samples += [(1, "b", "bytes_in", T0 + k * M, 5_000_000 + 100 * k) for k in (0, 1, 3, 4)]
    rows = _normalized(spark, samples)
    b = {k[2] // M: r for k, r in rows.items() if k[1] == "b"}
    assert {m: r["bytes_in"] for m, r in b.items()} == {0: 100, 1: 200, 3: 100}
    assert b[1]["interval_s"] == 120 and not b[1]["flags"] & 1


def test_duplicate_timestamps_are_not_resets(spark) -> None:
    from spark_jobs.rates import duplicate_units, minute_rows, sample_steps

    samples = [(1, "t", "bytes_in", T0 + k * M, 100 * (k + 1)) for k in range(4)]
    samples += [(1, "t", "bytes_in", T0 + 1 * M, 200)]  # the same sample twice
    samples += [(1, "t", "bytes_in", T0 + 2 * M, 50)]  # a second value at minute 2: neither is trusted
    steps = sample_steps(_rows(spark, samples))
    rows = {int(r["ts"].timestamp() * 1000 - T0) // M: r for r in minute_rows(steps).collect()}
    assert {m: (r["bytes_in"], r["interval_s"], r["flags"] & 1) for m, r in rows.items()} == {0: (100, 60, 0), 1: (200, 120, 0)}
    units = sorted((r["kind"], r["reason"]) for r in duplicate_units(steps).collect())
    assert units == [("ignored", "duplicate_sample"), ("rejected", "duplicate_timestamp"), ("rejected", "duplicate_timestamp")]


def test_increase_exports_are_windows_not_counters(spark) -> None:
    from spark_jobs.records import RECORD_SCHEMA
    from spark_jobs.rates import with_increase

    # increase(x[1m]) at a 60 s step: every value is the minute's bytes, even the ones that "fall"
    values = [500.0, 20.0, 700.0, 10.0]
    data = [
        (src, "f", "increase", None, "c", T0 + (k + 1) * M, 1, "t", None, "bytes_in", v, None, False, None, 60.0)
        for k, v in enumerate(values)
        for src in ("prom_range",)
    ]
    rows = with_increase(spark.createDataFrame(data, RECORD_SCHEMA)).collect()
    got = sorted((int(r["ts"].timestamp() * 1000 - T0) // M, r["bytes_in"], r["interval_s"], r["flags"]) for r in rows)
    assert got == [(k, int(v), 60, 0) for k, v in enumerate(values)]


def test_one_metric_losing_a_sample_keeps_the_others_windows(spark) -> None:
    from spark_jobs.profile import aggregate_topic_minutes

    # broker 1, topic t: every metric scraped each minute, but bytes-in's line at minute 2 was truncated
    samples = []
    for metric, per_minute in (("bytes_in", 600), ("bytes_out", 1200), ("messages_in", 60)):
        minutes = [k for k in range(5) if not (metric == "bytes_in" and k == 2)]
        samples += [(1, "t", metric, T0 + k * M, per_minute * k) for k in minutes]
    rows = {k[2] // M: r for k, r in _normalized(spark, samples).items()}
    # bytes-in spans minutes 1-2 (credited to minute 1, 120 s); bytes-out and messages-in keep 60 s windows
    assert {m: (r["bytes_in"], r["interval_s"]) for m, r in rows.items()} == {
        0: (600, 60), 1: (1200, 120), 2: (None, 60), 3: (600, 60)}
    assert {m: (r["bytes_out"], r["bytes_out_interval_s"], r["messages_in"], r["messages_in_interval_s"])
            for m, r in rows.items()} == {
        0: (1200, None, 60, None), 1: (1200, 60, 60, 60), 2: (1200, None, 60, None), 3: (1200, None, 60, None)}
    # per minute, each metric at its own window's rate: 10 B/s in, 20 B/s out, 1 message/s; minute 2 has no
    # bytes-in window of its own (null, not 0)
    df = spark.createDataFrame([r for _, r in sorted(rows.items())])
    rates = {int(r["ts"].timestamp() * 1000 - T0) // M: (r["bytes_in"], r["bytes_out"], r["messages_in"])
             for r in aggregate_topic_minutes(df).collect()}
    assert rates == {0: (10.0, 20.0, 1.0), 1: (10.0, 20.0, 1.0), 2: (None, 20.0, 1.0), 3: (10.0, 20.0, 1.0)}


def _rounds_by_windows(times):
    """The scrape rounds as Spark window functions compute them (the implementation `_rounds` replaced): the oracle."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from spark_jobs.rates import ROUND_MS

    grid = times.distinct()
    by_broker = Window.partitionBy("cluster", "broker_id").orderBy("ts_ms")
    grid = grid.select("*", F.coalesce((F.col("ts_ms") - F.lag("ts_ms").over(by_broker) > ROUND_MS).cast("int"),
                                       F.lit(0)).alias("new"))
    grid = grid.select("*", F.sum("new").over(by_broker).alias("round"))
    starts = grid.groupBy("cluster", "broker_id", "round").agg(F.min("ts_ms").alias("round_ms"))
    starts = starts.select("cluster", "broker_id", "round", F.lag("round_ms").over(
        Window.partitionBy("cluster", "broker_id").orderBy("round")).alias("prev_round_ms"))
    return grid.join(starts, ["cluster", "broker_id", "round"]).select("cluster", "broker_id", "ts_ms", "prev_round_ms")


def test_scrape_rounds_in_one_pass_equal_the_window_functions(spark) -> None:
    """Random scrape grids (jittered rounds, duplicates, gaps, rounds closer than ROUND_MS chained, several clusters
    and brokers, negative times): every time's previous round start equals the window functions' answer."""
    import numpy as np

    from spark_jobs.rates import ROUND_MS, _rounds

    rng = np.random.default_rng(7)
    rows = []
    for cluster in ("a", "b/c"):
        for broker in (1, 2, 3, 1_000_000):
            t = int(rng.integers(-10**7, 10**7))
            for _ in range(int(rng.integers(1, 300))):
                t += int(rng.choice([rng.integers(0, ROUND_MS + 2), 60_000 + rng.integers(-3000, 3000), 400_000]))
                rows += [(cluster, broker, t)] * int(rng.integers(1, 3))
    times = spark.createDataFrame(rows, "cluster string, broker_id int, ts_ms long")
    got = sorted(_rounds(times).collect())
    assert got == sorted(_rounds_by_windows(times).collect())
    assert len(got) == len(set(rows)) and any(r.prev_round_ms is None for r in got)


def test_the_remote_meters_follow_the_counter_rules_beside_the_others(spark) -> None:
    """RemoteCopyBytesPerSec and RemoteFetchBytesPerSec counters go through the rules bytes-in goes through: a reset
    counts the new meter's value and flags the row, a meter created mid-history counts from 0, a missed scrape
    lengthens only that meter's window; their rows join the same (broker, topic, minute) rows."""
    from spark_jobs.history_contract import FLAG_RESET
    from spark_jobs.rates import minute_rows, sample_steps

    samples = [(1, "a", "bytes_in", T0 + k * M, 1000 * k) for k in range(6)]
    copy = {0: 100, 1: 400, 2: 50, 3: 250, 4: 300, 5: 900}  # a reset at 2 (the meter re-created)
    samples += [(1, "a", "remote_copy_bytes", T0 + k * M, v) for k, v in copy.items()]
    fetch = {2: 70, 3: 90, 5: 150}  # created at 2 (counts from 0 over the round before), scrape 4 lost
    samples += [(1, "a", "remote_fetch_bytes", T0 + k * M, v) for k, v in fetch.items()]
    rows = {int(r["ts"].timestamp() * 1000 - T0) // M: r.asDict()
            for r in minute_rows(sample_steps(_rows(spark, samples)), remote=True).collect()}
    assert {m: r["remote_copy_bytes"] for m, r in rows.items()} == {0: 300, 1: 50, 2: 200, 3: 50, 4: 600}
    assert {m: (r["remote_fetch_bytes"], r["remote_fetch_bytes_interval_s"]) for m, r in rows.items()} == {
        0: (None, None), 1: (70, None), 2: (20, None), 3: (60, 120), 4: (None, None)}
    assert {m for m, r in rows.items() if r["flags"] & FLAG_RESET} == {1}  # the copy reset and the fetch creation
    assert all(r["bytes_in"] == 1000 and r["interval_s"] == 60 for r in rows.values())
    assert "remote_copy_bytes" not in minute_rows(sample_steps(_rows(spark, samples))).columns
