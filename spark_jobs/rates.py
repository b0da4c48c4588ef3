"""Counters to per-minute increases with Prometheus ``increase()`` semantics, per (broker, topic, metric).

Samples of one series are ordered by time; each consecutive pair gives the increase over ``[prev, cur)``:
``cur - prev``, or ``cur`` when the counter went down (a reset: a broker restart, or Kafka closing a
leader-only meter when leadership moves and re-creating it from 0). A series that was absent from its
broker's previous scrape round was re-created since, so its first value is an increase too. The increase is credited to the minute the window starts in
(``prev`` floored to the minute); windows longer than `GAP_MS` are flagged as gaps and keep their real length
in ``interval_s`` instead of being spread over the missing minutes. The three metrics are then pivoted into
the normalized `THROUGHPUT_SCHEMA` table.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.records import KIND_COUNTER

__all__ = [
    "THROUGHPUT_SCHEMA",
    "FLAG_RESET",
    "FLAG_GAP",
    "FLAG_PARTIAL",
    "GAP_MS",
    "PARTIAL_MS",
    "ROUND_MS",
    "with_increase",
    "missing_minutes",
]

#: Flag bits of a normalized row.
FLAG_RESET, FLAG_GAP, FLAG_PARTIAL = 1, 2, 4
#: A window longer than this spans missing scrapes (1.5 minutes).
GAP_MS = 90_000
#: Scrape timestamps of one broker closer than this belong to one scrape round.
ROUND_MS = 5_000
#: A minute covered for less than this is a partial window.
PARTIAL_MS = 45_000
_MINUTE_MS = 60_000

#: The normalized per-minute table (`kafka-formats` README, ``throughput_minute``).
THROUGHPUT_SCHEMA = T.StructType(
    [
        T.StructField("cluster", T.StringType(), False),
        T.StructField("ts", T.TimestampType(), False),
        T.StructField("interval_s", T.IntegerType(), False),
        T.StructField("broker_id", T.IntegerType(), False),
        T.StructField("topic", T.StringType(), False),
        T.StructField("bytes_in", T.LongType(), False),
        T.StructField("bytes_out", T.LongType(), True),
        T.StructField("messages_in", T.LongType(), True),
        T.StructField("source", T.StringType(), False),
        T.StructField("flags", T.IntegerType(), False),
    ]
)


def missing_minutes(interval_s: F.Column) -> F.Column:
    """Whole minutes a window of ``interval_s`` seconds skipped (0 for a normal minute).

    Examples
    --------
    >>> rows = spark.createDataFrame([(60,), (90,), (180,)], "interval_s int")
    >>> [r.m for r in rows.select(missing_minutes(F.col("interval_s")).alias("m")).collect()]
    [0, 1, 2]
    """
    return F.greatest(F.round(interval_s / 60.0).cast("long") - 1, F.lit(0).cast("long"))


def with_increase(records: DataFrame) -> DataFrame:
    """Turn ``counter`` records into normalized per-minute rows (`THROUGHPUT_SCHEMA`).

    A broker's scrapes are grouped into rounds (timestamps within `ROUND_MS` of each other). A series absent
    from the broker's previous round was created since (Kafka re-creates a closed meter from 0), so its
    first value is an increase over the window from that round, not an anchor. The very first round of a
    broker only anchors its series. Two samples of a series with the same timestamp (overlapping exports)
    add nothing.
    """
    counters = records.where(F.col("kind") == KIND_COUNTER).select(
        "cluster", "broker_id", "topic", "metric", "ts_ms", "value", "source"
    )
    series = ["cluster", "broker_id", "topic", "metric"]
    w = Window.partitionBy(*series).orderBy("ts_ms", "value")
    samples = counters.join(_rounds(counters), ["cluster", "broker_id", "ts_ms"]).select(
        "*",
        F.lag("ts_ms").over(w).alias("prev_ts"),
        F.lag("value").over(w).alias("prev_v"),
        F.lag("round").over(w).alias("prev_round"),
    )
    created = F.col("prev_round_ms").isNotNull() & (F.col("prev_ts").isNull() | (F.col("prev_round") < F.col("round") - 1))
    start = F.when(created, F.col("prev_round_ms")).otherwise(F.col("prev_ts"))
    deltas = samples.where(created | F.col("prev_ts").isNotNull()).select(
        *series,
        "source",
        (F.floor(start / _MINUTE_MS) * _MINUTE_MS).alias("minute_ms"),
        (F.col("ts_ms") - start).alias("span_ms"),
        (created | (F.col("value") < F.col("prev_v"))).alias("reset"),
        F.when(created | (F.col("value") < F.col("prev_v")), F.col("value"))
        .when(F.col("ts_ms") == F.col("prev_ts"), F.lit(0.0))
        .otherwise(F.col("value") - F.col("prev_v"))
        .alias("delta"),
    )
    metric = F.col("metric")
    per_minute = deltas.groupBy("cluster", "broker_id", "topic", "minute_ms", "metric").agg(
        F.sum("span_ms").alias("span_ms"),
        F.sum("delta").alias("delta"),
        F.max(F.col("reset").cast("int")).alias("reset"),
        F.min("source").alias("source"),
    )
    rows = per_minute.groupBy("cluster", "broker_id", "topic", "minute_ms").agg(
        F.max("span_ms").alias("span_ms"),
        F.max("reset").alias("reset"),
        F.min("source").alias("source"),
        *[F.max(F.when(metric == m, F.round("delta").cast("long"))).alias(m) for m in ("bytes_in", "bytes_out", "messages_in")],
    )
    flags = (
        F.col("reset") * FLAG_RESET
        + F.when(F.col("span_ms") > GAP_MS, FLAG_GAP).otherwise(0)
        + F.when(F.col("span_ms") < PARTIAL_MS, FLAG_PARTIAL).otherwise(0)
    )
    return rows.select(
        "cluster",
        F.timestamp_millis("minute_ms").alias("ts"),
        F.greatest(F.round(F.col("span_ms") / 1000).cast("int"), F.lit(1)).alias("interval_s"),
        "broker_id",
        "topic",
        F.coalesce("bytes_in", F.lit(0).cast("long")).alias("bytes_in"),
        "bytes_out",
        "messages_in",
        "source",
        flags.cast("int").alias("flags"),
    )


def _rounds(counters: DataFrame) -> DataFrame:
    """``cluster, broker_id, ts_ms, round, prev_round_ms``: each scrape timestamp's round and the previous round's start."""
    grid = counters.select("cluster", "broker_id", "ts_ms").distinct()
    by_broker = Window.partitionBy("cluster", "broker_id").orderBy("ts_ms")
    grid = grid.select(
        "*", F.coalesce((F.col("ts_ms") - F.lag("ts_ms").over(by_broker) > ROUND_MS).cast("int"), F.lit(0)).alias("new")
    )
    grid = grid.select("*", F.sum("new").over(by_broker).alias("round"))
    starts = grid.groupBy("cluster", "broker_id", "round").agg(F.min("ts_ms").alias("round_ms"))
    starts = starts.select(
        "cluster",
        "broker_id",
        "round",
        F.lag("round_ms").over(Window.partitionBy("cluster", "broker_id").orderBy("round")).alias("prev_round_ms"),
    )
    return grid.join(starts, ["cluster", "broker_id", "round"]).select("cluster", "broker_id", "ts_ms", "round", "prev_round_ms")
