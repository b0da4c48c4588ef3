"""Per-topic aggregates of the normalized history and the replica sizes, as small Spark results.

Rates are summed over brokers per minute (each broker's bytes over the window length of that metric,
`spark_jobs.rates.metric_interval`, so a gap row counts at its average rate): bytes are summed as integers per
window length and divided once (60 s windows as doubles, others as exact decimals), so the result does not
depend on partitioning; percentiles are exact (linear interpolation between the closest ranks of the sorted
values, as numpy's default).

An ingest usually takes the same figures from per-day partials instead (`spark_jobs.day_profile`, exact to these
functions' doubles); these functions compute them from the rows where that path cannot guarantee it.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_jobs.history_contract import FLAG_GAP, FLAG_RESET, METRICS, OPTIONAL_COLUMNS, REMOTE_COLUMNS, REMOTE_METRICS
from spark_jobs.metric_names import REMOTE_LOG_SIZE
from spark_jobs.rates import metric_interval, missing_minutes
from spark_jobs.records import KIND_SIZE

__all__ = [
    "aggregate_topic_minutes",
    "aggregate_topic_profile",
    "aggregate_sizes",
    "aggregate_remote_sizes",
    "aggregate_remote_rates",
    "SIZE_WINDOW_MS",
]

#: Replica sizes within this long before a period's last snapshot count as that snapshot.
SIZE_WINDOW_MS = 3_600_000



def _rate(col: str) -> F.Column:
    """Σ over window lengths of (bytes summed over brokers) / the window of ``col``, null when no broker
    reported ``col``.

    The 60 s sums are divided once as doubles; other lengths are divided as exact decimals, so the result does
    not depend on the order rows arrive in.
    """
    interval = metric_interval(col)
    regular = F.sum(F.when(interval == 60, F.col(col)))
    odd = F.sum(F.when(interval != 60, F.col(col).cast("decimal(38,0)") / interval))
    total = F.coalesce(regular / 60.0, F.lit(0.0)) + F.coalesce(odd.cast("double"), F.lit(0.0))
    return F.when(F.count(col) > 0, total)


def aggregate_topic_minutes(rows: DataFrame) -> DataFrame:
    """``topic, ts, bytes_in, bytes_out, messages_in, rows, gaps, resets``: rates summed over brokers.

    Two levels, so the expensive part touches only the small table: every row goes through integer sums
    per (topic, minute, window length), which Spark runs as a primitive hash aggregate (a sum over only
    nulls is null, so it also tells whether any broker reported the column); the exact rates are then
    taken per topic-minute from those sums. ``gaps`` are the minutes missing inside gap windows and
    ``resets`` the windows with a counter reset, so the quality counters come out of the same single pass.
    The result is hash-partitioned by topic, so everything per topic after it runs without a shuffle.
    """
    flags = F.col("flags")
    sums = rows.groupBy("topic", "ts", "interval_s", *OPTIONAL_COLUMNS).agg(
        *[F.sum(c).alias(c) for c in METRICS],
        F.count("*").alias("rows"),
        F.sum((flags.bitwiseAND(FLAG_GAP) != 0).cast("long")).alias("gap_rows"),
        F.sum((flags.bitwiseAND(FLAG_RESET) != 0).cast("long")).alias("resets"),
    )
    return sums.repartition("topic").groupBy("topic", "ts").agg(
        *[_rate(c).alias(c) for c in METRICS],
        F.sum("rows").alias("rows"),
        F.sum(F.col("gap_rows") * missing_minutes(F.col("interval_s"))).alias("gaps"),
        F.sum("resets").alias("resets"),
    )


def _percentile(ascending: F.Column, q: float) -> F.Column:
    """The ``q`` percentile of an ascending array: linear interpolation between the closest ranks (numpy's
    default, and Spark's ``percentile``); null for an empty array."""
    n = F.size(ascending)
    pos = (n - 1) * F.lit(q)
    lower = F.floor(pos).cast("int")
    low, high = F.get(ascending, lower), F.get(ascending, F.ceil(pos).cast("int"))
    return F.when(n > 0, low + (high - low) * (pos - lower))


def _merged(col: str) -> F.Column:
    """All of a topic's per-day arrays of ``col`` as one ascending array."""
    return F.sort_array(F.flatten(F.collect_list(col)))


def aggregate_topic_profile(minutes: DataFrame) -> DataFrame:
    """Per topic: bytes-in p50/p95/p99/max, bytes-out p95/p99/max, messages-in p99, samples, first/last
    minute, ``days_observed``, ``daily`` (``day`` since the epoch and the day's bytes-in ``p99``, by day)
    and the summed ``rows``, ``gaps`` and ``counter_resets``.

    Percentiles are exact: each day's values are collected once (``collect_list``), the day's p99 read
    from its sorted array, and the topic's percentiles from the merged, sorted arrays of its days; one
    primitive sort serves every percentile of a column (Spark's ``percentile`` counts boxed values in a
    hash map per percentile column, about 3x slower). One pass, no cache, no shuffle after the minutes.
    """
    day = F.datediff(F.to_date("ts"), F.lit("1970-01-01").cast("date"))
    days = minutes.groupBy("topic", day.alias("day")).agg(
        *[F.collect_list(c).alias(c) for c in METRICS],
        F.count("*").alias("samples"),
        F.min("ts").alias("first_ts"),
        F.max("ts").alias("last_ts"),
        F.sum("rows").alias("rows"),
        F.sum("gaps").alias("gaps"),
        F.sum("resets").alias("resets"),
    )
    days = days.select(
        "*", F.struct("day", _percentile(F.sort_array("bytes_in"), 0.99).alias("p99")).alias("daily")
    )
    topics = days.groupBy("topic").agg(
        _merged("bytes_in").alias("bin"),
        _merged("bytes_out").alias("bout"),
        _merged("messages_in").alias("msg"),
        F.sum("samples").alias("samples"),
        F.min("first_ts").alias("first_ts"),
        F.max("last_ts").alias("last_ts"),
        F.sort_array(F.collect_list("daily")).alias("daily"),
        F.sum("rows").alias("rows"),
        F.sum("gaps").alias("gaps"),
        F.sum("resets").alias("counter_resets"),
    )
    return topics.select(
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
        F.size("daily").alias("days_observed"),
        "daily",
        "rows",
        "gaps",
        "counter_resets",
    )


def aggregate_sizes(records: DataFrame, *, by_day: bool) -> DataFrame:
    """Largest replica per partition at the last snapshot of the whole period (or of each day).

    ``isFuture`` replicas and a tiered topic's remote bytes (`aggregate_remote_sizes`) are excluded. Returns
    ``topic, bucket, partition, size_bytes, ts_ms`` where ``bucket`` is the day number (``by_day``) or 0.
    """
    local = F.coalesce(F.col("metric") != REMOTE_LOG_SIZE, F.lit(True))
    sizes = records.where((F.col("kind") == KIND_SIZE) & ~F.col("is_future") & local)
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


def aggregate_remote_sizes(records: DataFrame) -> DataFrame:
    """Per topic, its bytes in the remote store (KIP-405). Kafka's ``RemoteLogSizeBytes`` gauge is per broker, over
    the partitions it leads: the topic's figure is the sum of each broker's latest value. An exporter that gives
    it per partition (a ``partition`` label) is read per partition instead: each partition's latest value, whichever
    broker reported it, so a leadership change within the window does not count a partition twice. Only the values
    reported within `SIZE_WINDOW_MS` of the topic's last report count (a broker that stopped, its leadership gone,
    drops out). Returns ``topic, remote_bytes``."""
    gauges = records.where((F.col("kind") == KIND_SIZE) & (F.col("metric") == REMOTE_LOG_SIZE))
    # one series per partition where the gauge names one, else per broker
    series = F.when(F.col("partition").isNotNull(), F.lit(-1)).otherwise(F.col("broker_id"))
    latest = gauges.groupBy("topic", "partition", series.alias("series")).agg(
        F.max_by("value", F.struct("ts_ms", "value")).alias("value"), F.max("ts_ms").alias("ts_ms")
    )
    last = latest.groupBy("topic").agg(F.max("ts_ms").alias("last_ms"))
    recent = latest.join(last, "topic").where(F.col("ts_ms") > F.col("last_ms") - SIZE_WINDOW_MS)
    return recent.groupBy("topic").agg(F.sum("value").cast("long").alias("remote_bytes"))


def aggregate_remote_rates(rows: DataFrame) -> DataFrame:
    """Per topic with a remote meter in ``rows`` (history rows with the `REMOTE_COLUMNS`): the 99th percentile of its
    per-minute remote copy and fetch rates (``RemoteCopyBytesPerSec``, ``RemoteFetchBytesPerSec``), bytes per second
    summed over brokers exactly as `aggregate_topic_minutes` sums bytes-out (each meter over its own window), the
    percentile as `aggregate_topic_profile` takes it; null for a meter the topic never had (unmeasured). Returns
    ``topic, remote_copy_bytes_p99, remote_fetch_bytes_p99``."""
    measured = F.lit(False)
    for m in REMOTE_METRICS:
        measured = measured | F.col(m).isNotNull()
    windows = ["interval_s", *[c for c in REMOTE_COLUMNS if c.endswith("_interval_s")]]
    sums = rows.where(measured).groupBy("topic", "ts", *windows).agg(*[F.sum(m).alias(m) for m in REMOTE_METRICS])
    minutes = sums.groupBy("topic", "ts").agg(*[_rate(m).alias(m) for m in REMOTE_METRICS])
    topics = minutes.groupBy("topic").agg(*[F.sort_array(F.collect_list(m)).alias(m) for m in REMOTE_METRICS])
    return topics.select("topic", *[_percentile(F.col(m), 0.99).alias(f"{m}_p99") for m in REMOTE_METRICS])
