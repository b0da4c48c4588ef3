"""Per-topic aggregates of the normalized history and the replica sizes, as small Spark results.

Rates are summed over brokers per minute (each broker's bytes over its window length, so a gap row counts
at its average rate): the bytes of 60 s windows are summed as integers and divided once, other windows are
summed as exact decimals, so the result does not depend on partitioning; percentiles
are exact (``percentile``, linear interpolation between closest ranks, as numpy's default).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_jobs.rates import FLAG_GAP, FLAG_RESET, missing_minutes
from spark_jobs.records import KIND_SIZE

__all__ = [
    "aggregate_topic_minutes",
    "aggregate_topic_stats",
    "aggregate_daily_p99",
    "aggregate_sizes",
    "SIZE_WINDOW_MS",
]

#: Replica sizes within this long before a period's last snapshot count as that snapshot.
SIZE_WINDOW_MS = 3_600_000


def _rate_sum(col: str) -> F.Column:
    """Σ over brokers of bytes / interval_s: 60 s windows summed as integers and divided once, other windows
    as exact decimals (6 places), so the sum does not depend on the order rows arrive in."""
    regular = F.sum(F.when(F.col("interval_s") == 60, F.col(col)))
    odd = F.sum(F.when(F.col("interval_s") != 60, F.col(col).cast("decimal(38,0)") / F.col("interval_s")))
    total = F.coalesce(regular / 60.0, F.lit(0.0)) + F.coalesce(odd.cast("double"), F.lit(0.0))
    return F.when(F.count(col) > 0, total)


def aggregate_topic_minutes(rows: DataFrame) -> DataFrame:
    """``topic, ts, bytes_in, bytes_out, messages_in, rows, gaps, resets``: rates summed over brokers.

    ``gaps`` are the minutes missing inside gap windows and ``resets`` the windows with a counter reset, so
    the quality counters come out of the same single pass over the rows.
    """
    flags = F.col("flags")
    sums = rows.groupBy("topic", "ts").agg(
        *[_rate_sum(c).alias(c) for c in ("bytes_in", "bytes_out", "messages_in")],
        F.count("*").alias("rows"),
        F.sum(F.when(flags.bitwiseAND(FLAG_GAP) != 0, missing_minutes(F.col("interval_s"))).otherwise(0)).alias("gaps"),
        F.sum((flags.bitwiseAND(FLAG_RESET) != 0).cast("long")).alias("resets"),
    )
    # one topic's minutes in one partition: the per-topic percentiles then run once per topic, without
    # partial percentile buffers for every topic in every partition
    return sums.repartition("topic")


def aggregate_topic_stats(minutes: DataFrame) -> DataFrame:
    """Per topic: bytes-in p50/p95/p99/max, bytes-out p95/p99/max, messages-in p99, samples, first/last
    minute, days observed, and the summed ``rows``, ``gaps`` and ``counter_resets``."""
    bin_p = F.percentile("bytes_in", [0.5, 0.95, 0.99])
    bout_p = F.percentile("bytes_out", [0.95, 0.99])
    return minutes.groupBy("topic").agg(
        bin_p.alias("bin_p"),
        F.max("bytes_in").alias("bytes_in_max"),
        bout_p.alias("bout_p"),
        F.max("bytes_out").alias("bytes_out_max"),
        F.percentile("messages_in", 0.99).alias("messages_in_p99"),
        F.count("*").alias("samples"),
        F.min("ts").alias("first_ts"),
        F.max("ts").alias("last_ts"),
        F.size(F.collect_set(F.to_date("ts"))).alias("days_observed"),
        F.sum("rows").alias("rows"),
        F.sum("gaps").alias("gaps"),
        F.sum("resets").alias("counter_resets"),
    ).select(
        "topic",
        F.col("bin_p")[0].alias("bytes_in_p50"),
        F.col("bin_p")[1].alias("bytes_in_p95"),
        F.col("bin_p")[2].alias("bytes_in_p99"),
        "bytes_in_max",
        F.get("bout_p", 0).alias("bytes_out_p95"),
        F.get("bout_p", 1).alias("bytes_out_p99"),
        "bytes_out_max",
        "messages_in_p99",
        "samples",
        "first_ts",
        "last_ts",
        "days_observed",
        "rows",
        "gaps",
        "counter_resets",
    )


def aggregate_daily_p99(minutes: DataFrame) -> DataFrame:
    """``topic, day (days since epoch), p99``: the daily p99 of bytes-in/s."""
    day = F.datediff(F.to_date("ts"), F.lit("1970-01-01").cast("date"))
    return minutes.groupBy("topic", day.alias("day")).agg(F.percentile("bytes_in", 0.99).alias("p99"))


def aggregate_sizes(records: DataFrame, *, by_day: bool) -> DataFrame:
    """Largest replica per partition at the last snapshot of the whole period (or of each day).

    ``isFuture`` replicas are excluded. Returns ``topic, bucket, partition, size_bytes, ts_ms`` where
    ``bucket`` is the day number (``by_day``) or 0.
    """
    sizes = records.where((F.col("kind") == KIND_SIZE) & ~F.col("is_future"))
    bucket = F.floor(F.col("ts_ms") / 86_400_000) if by_day else F.lit(0).cast("long")
    sizes = sizes.select("topic", "partition", "broker_id", "ts_ms", "value", bucket.alias("bucket"))
    last = sizes.groupBy("bucket").agg(F.max("ts_ms").alias("last_ms"))
    recent = sizes.join(last, "bucket").where(F.col("ts_ms") > F.col("last_ms") - SIZE_WINDOW_MS)
    replicas = recent.groupBy("topic", "bucket", "partition", "broker_id").agg(
        F.max_by("value", F.struct("ts_ms", "value")).alias("value"), F.max("ts_ms").alias("ts_ms")
    )
    return replicas.groupBy("topic", "bucket", "partition").agg(
        F.max("value").cast("long").alias("size_bytes"), F.max("ts_ms").alias("ts_ms")
    )
