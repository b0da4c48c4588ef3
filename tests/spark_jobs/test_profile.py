"""Per-topic-minute rates: exact quotients for windows other than 60 s, one per set of windows."""

from __future__ import annotations

from datetime import datetime, timezone
from decimal import ROUND_HALF_UP, Decimal

import pytest

pytestmark = pytest.mark.spark

TS = datetime(2025, 3, 3, tzinfo=timezone.utc)


def _table(spark, rows):
    from spark_jobs.history_contract import THROUGHPUT_SCHEMA

    data = [("c", TS, interval, broker, "t", b_in, b_out, None, out_interval, None, "s", 0)
            for broker, interval, b_in, b_out, out_interval in rows]
    return spark.createDataFrame(data, THROUGHPUT_SCHEMA)


def _quotient(total: int, window: int) -> Decimal:
    """bytes / window as Spark's decimal(38,6): rounded half up at 6 decimals."""
    return (Decimal(total) / Decimal(window)).quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP)


def test_odd_windows_are_exact_quotients_per_window_set(spark) -> None:
    from spark_jobs.profile import aggregate_topic_minutes

    big = 9_000_000_000_000_000_000 // 7  # a sum near a long's range: its millionths do not fit a long
    rows = [
        (1, 60, 600, 1200, None),  # regular: 10 B/s in, 20 B/s out
        (2, 60, 1, 7, None),
        (3, 120, 1_000_001, 5, 90),  # one window set: bytes-in over 120 s, bytes-out over 90 s
        (4, 120, 2, None, 90),  # the same set: summed before dividing (rounded apart, 1e-6 more)
        (5, 180, None, big, None),  # another set: divided on its own
        (6, 60, None, 13, 120),  # bytes-out alone over 120 s
    ]
    got = aggregate_topic_minutes(_table(spark, rows)).collect()
    assert len(got) == 1
    row = got[0]
    in_odd = _quotient(1_000_001 + 2, 120)
    out_odd = _quotient(5, 90) + _quotient(big, 180) + _quotient(13, 120)
    assert row["bytes_in"] == pytest.approx((600 + 1) / 60.0 + float(in_odd), rel=1e-14, abs=0)
    assert row["bytes_out"] == pytest.approx((1200 + 7) / 60.0 + float(out_odd), rel=1e-14, abs=0)
    assert row["messages_in"] is None
    assert row["rows"] == 6


def test_remote_log_sizes_are_summed_over_recent_brokers_and_never_counted_as_local_replicas(spark) -> None:
    """A tiered topic's ``remote_log_size`` records (prom text's RemoteLogSizeBytes, no partition) give its remote
    bytes (`aggregate_remote_sizes`) and stay out of the local replica sizes (`aggregate_sizes`)."""
    from spark_jobs.profile import SIZE_WINDOW_MS, aggregate_remote_sizes, aggregate_sizes
    from spark_jobs.records import RECORD_SCHEMA

    def size(broker, metric, partition, ts_ms, value):
        return ("prom_text", "f", "size", None, "c", ts_ms, broker, "t", partition, metric, float(value), None, False,
                None, None)

    records = spark.createDataFrame([
        size(1, "log_size", 0, 10_000_000, 100), size(2, "log_size", 0, 10_000_000, 90),
        size(1, "remote_log_size", None, 10_000_000, 5000), size(1, "remote_log_size", None, 9_000_000, 9999),
        size(2, "remote_log_size", None, 10_000_000 - SIZE_WINDOW_MS + 1, 700),
        size(3, "remote_log_size", None, 10_000_000 - SIZE_WINDOW_MS, 10**9),  # stopped over an hour before: out
    ], RECORD_SCHEMA)
    assert [tuple(r) for r in aggregate_remote_sizes(records).collect()] == [("t", 5700)]
    assert [(r["partition"], r["size_bytes"]) for r in aggregate_sizes(records, by_day=False).collect()] == [(0, 100)]


def test_a_remote_log_size_per_partition_counts_each_partition_once_whichever_broker_reported_it(spark) -> None:
    """An exporter labelling ``RemoteLogSizeBytes`` by partition: each partition's latest value counts once, even when
    its leadership (the broker reporting it) moved within the window; stale partitions drop out."""
    from spark_jobs.profile import SIZE_WINDOW_MS, aggregate_remote_sizes
    from spark_jobs.records import RECORD_SCHEMA

    def size(broker, partition, ts_ms, value, topic="t"):
        return ("query_range", "f", "size", None, "c", ts_ms, broker, topic, partition, "remote_log_size", float(value),
                None, False, None, None)

    records = spark.createDataFrame([
        size(1, 0, 9_000_000, 400), size(2, 0, 10_000_000, 500),  # partition 0's leader moved from 1 to 2: 500
        size(1, 1, 10_000_000, 60), size(1, 1, 9_500_000, 50),  # the latest: 60
        size(3, 2, 10_000_000 - SIZE_WINDOW_MS, 10**9),  # over an hour before the topic's last report: out
        size(1, None, 10_000_000, 7, topic="u"), size(2, None, 10_000_000, 8, topic="u"),  # per broker: summed
    ], RECORD_SCHEMA)
    assert sorted(tuple(r) for r in aggregate_remote_sizes(records).collect()) == [("t", 560), ("u", 15)]
