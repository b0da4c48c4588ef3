"""Per-topic aggregates of the normalized history and the replica sizes, as small Spark results.

Rates are summed over brokers per minute (each broker's bytes over its window length, so a gap row counts
at its average rate): bytes are summed as integers per window length and divided once (60 s windows as
doubles, others as exact decimals), so the result does not depend on partitioning; percentiles
are exact (linear interpolation between the closest ranks of the sorted values, as numpy's default).
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


_METRICS = ("bytes_in", "bytes_out", "messages_in")


def _rate(col: str) -> F.Column:
    """Σ over window lengths of (bytes summed over brokers) / interval_s, null when no broker reported ``col``.

    The 60 s sums are divided once as doubles; other lengths are divided as exact decimals, so the result does
    not depend on the order rows arrive in.
    """
    interval = F.col("interval_s")
    regular = F.sum(F.when(interval == 60, F.col(col)))
    odd = F.sum(F.when(interval != 60, F.col(col).cast("decimal(38,0)") / interval))
    total = F.coalesce(regular / 60.0, F.lit(0.0)) + F.coalesce(odd.cast("double"), F.lit(0.0))
    return F.when(F.sum(f"{col}_n") > 0, total)


def aggregate_topic_minutes(rows: DataFrame) -> DataFrame:
    """``topic, ts, bytes_in, bytes_out, messages_in, rows, gaps, resets``: rates summed over brokers.

    Two levels, so the expensive part touches only the small table: every row goes through integer sums
    per (topic, minute, window length), which Spark runs as a primitive hash aggregate; the exact rates are
    then taken per topic-minute from those sums. ``gaps`` are the minutes missing inside gap windows and
    ``resets`` the windows with a counter reset, so the quality counters come out of the same single pass.
    ``ts`` may be ISO-8601 text (normalized JSON lines): it is parsed once per group, not once per row.
    """
    flags = F.col("flags")
    sums = rows.groupBy("topic", "ts", "interval_s").agg(
        *[F.sum(c).alias(c) for c in _METRICS],
        *[F.count(c).alias(f"{c}_n") for c in _METRICS],
        F.count("*").alias("rows"),
        F.sum((flags.bitwiseAND(FLAG_GAP) != 0).cast("long")).alias("gap_rows"),
        F.sum((flags.bitwiseAND(FLAG_RESET) != 0).cast("long")).alias("resets"),
    )
    # one topic's minutes in one partition: the per-minute rates and the per-topic percentiles then need
    # no further shuffle, and no partition holds partial percentile buffers for every topic
    minutes = sums.repartition("topic").groupBy("topic", F.col("ts").cast("timestamp").alias("ts")).agg(
        *[_rate(c).alias(c) for c in _METRICS],
        F.sum("rows").alias("rows"),
        F.sum(F.col("gap_rows") * missing_minutes(F.col("interval_s"))).alias("gaps"),
        F.sum("resets").alias("resets"),
    )
    return minutes


def _percentile(ascending: F.Column, q: float) -> F.Column:
    """The ``q`` percentile of an ascending array: linear interpolation between the closest ranks (numpy's
    default, and Spark's ``percentile``); null for an empty array."""
    n = F.size(ascending)
    pos = (n - 1) * F.lit(q)
    lower = F.floor(pos).cast("int")
    low, high = F.get(ascending, lower), F.get(ascending, F.ceil(pos).cast("int"))
    return F.when(n > 0, low + (high - low) * (pos - lower))


def _sorted(col: str) -> F.Column:
    """The group's non-null values of ``col``, ascending: one primitive sort serves every percentile of it
    (about 3x faster than ``percentile``, which counts boxed values in a hash map per percentile column)."""
    return F.sort_array(F.collect_list(col))


def aggregate_topic_stats(minutes: DataFrame) -> DataFrame:
    """Per topic: bytes-in p50/p95/p99/max, bytes-out p95/p99/max, messages-in p99, samples, first/last
    minute, days observed, and the summed ``rows``, ``gaps`` and ``counter_resets``."""
    stats = minutes.groupBy("topic").agg(
        _sorted("bytes_in").alias("bin"),
        _sorted("bytes_out").alias("bout"),
        _sorted("messages_in").alias("msg"),
        F.count("*").alias("samples"),
        F.min("ts").alias("first_ts"),
        F.max("ts").alias("last_ts"),
        F.size(F.collect_set(F.to_date("ts"))).alias("days_observed"),
        F.sum("rows").alias("rows"),
        F.sum("gaps").alias("gaps"),
        F.sum("resets").alias("counter_resets"),
    )
    return stats.select(
        "topic",
        _percentile(F.col("bin"), 0.5).alias("bytes_in_p50"),
        _percentile(F.col("bin"), 0.95).alias("bytes_in_p95"),
        _percentile(F.col("bin"), 0.99).alias("bytes_in_p99"),
        F.get("bin", F.size("bin") - 1).alias("bytes_in_max"),
        _percentile(F.col("bout"), 0.95).alias("bytes_out_p95"),
        _percentile(F.col("bout"), 0.99).alias("bytes_out_p99"),
        F.get("bout", F.size("bout") - 1).alias("bytes_out_max"),
        _percentile(F.col("msg"), 0.99).alias("messages_in_p99"),
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
    daily = minutes.groupBy("topic", day.alias("day")).agg(_sorted("bytes_in").alias("bin"))
    return daily.select("topic", "day", _percentile(F.col("bin"), 0.99).alias("p99"))


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
