"""Samples to per-minute increases with Prometheus ``increase()`` semantics, per (broker, topic, metric).

Samples of one series are ordered by time; each consecutive pair gives the increase over ``[prev, cur)``:
``cur - prev``, or ``cur`` when the counter went down (a reset: a broker restart, or Kafka closing a
leader-only meter when leadership moves and re-creating it from 0). A meter is new only when its series has
no earlier sample or its value fell: then its value is an increase over the window from its broker's
previous scrape round (a series absent from that round was created since). A series merely missing from
some scrapes (a lost or truncated line) is not new: its increase spans the gap. The very first round of a
broker only anchors its series. Two samples of a series with the same timestamp are one sample exported twice
(``duplicate_sample``, ignored) when their values agree, else none is trusted (``duplicate_timestamp``,
quarantined); neither is ever a reset. Pre-aggregated samples (``increase`` records) are each their own
window. The increase is credited to the minute the window starts in (``prev`` floored to the minute);
windows longer than `spark_jobs.history_contract.GAP_MS` are flagged as gaps and keep their real length instead of
being spread over the missing minutes. The three metrics are then pivoted into the normalized `THROUGHPUT_SCHEMA`
table, each with its own window: a sample one metric lost (a truncated line) lengthens that metric's window only.
``interval_s`` is bytes-in's window (the longest of the row's when it has no bytes-in);
``bytes_out_interval_s`` and ``messages_in_interval_s`` are those metrics' windows where they differ from it
(null where they do not, and in history written before they existed). A metric without a window of its own in
a row is null, whichever metric it is: the meter did not exist (Kafka closes a topic's ``BytesInPerSec`` and
``MessagesInPerSec`` on a broker that leads none of its partitions) or an earlier, longer window covers the minute.
The profile drops a null from every metric's percentiles alike.

The work is split in two so the caller can stage the expensive part once: `sample_steps` (one sort per
series, every sample with its status and predecessor) and `minute_rows` / `duplicate_units` over its output.
A reader that has a whole series at hand applies the same rules to it where it parses it
(`spark_jobs.query_range`): it passes on its plain increases already summed per minute and only the samples
these rules need from other files (its ends, both ends of each fall, its duplicates); `sample_steps` flags
(``foreign``) where another file's samples make that conversion invalid.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.history_contract import DELTA_FIELDS, REMOTE_SCHEMA, THROUGHPUT_SCHEMA, spark_type
from spark_jobs.minute_merge import pivot_batches
from spark_jobs.records import KIND_COUNTER, KIND_IGNORED, KIND_INCREASE, KIND_REJECTED, KIND_SCRAPE, KIND_STEPS, staged

__all__ = [
    "metric_interval",
    "ROUND_MS",
    "with_increase",
    "sample_steps",
    "minute_rows",
    "minute_deltas",
    "duplicate_units",
    "missing_minutes",
    "STATUS_OK",
    "STATUS_DUPLICATE",
    "STATUS_CONFLICT",
]

#: Scrape timestamps of one broker closer than this belong to one scrape round.
ROUND_MS = 5_000
_MINUTE_MS = 60_000

def metric_interval(metric: str) -> F.Column:
    """The window in seconds of ``metric``'s value in a normalized row: its own column where set, else
    ``interval_s``.

    Examples
    --------
    >>> rows = spark.createDataFrame([(60, None), (60, 120)], "interval_s int, bytes_out_interval_s int")
    >>> [r.w for r in rows.select(metric_interval("bytes_out").alias("w")).collect()]
    [60, 120]
    """
    if metric == "bytes_in":
        return F.col("interval_s")
    return F.coalesce(F.col(f"{metric}_interval_s"), F.col("interval_s"))


def missing_minutes(interval_s: F.Column) -> F.Column:
    """Whole minutes a window of ``interval_s`` seconds skipped (0 for a normal minute).

    Examples
    --------
    >>> rows = spark.createDataFrame([(60,), (90,), (180,)], "interval_s int")
    >>> [r.m for r in rows.select(missing_minutes(F.col("interval_s")).alias("m")).collect()]
    [0, 1, 2]
    """
    return F.greatest(F.round(interval_s / 60.0).cast("long") - 1, F.lit(0).cast("long"))


#: Status of a sample in `sample_steps`.
STATUS_OK, STATUS_DUPLICATE, STATUS_CONFLICT = "ok", "duplicate_sample", "duplicate_timestamp"
_SERIES = ["cluster", "broker_id", "topic", "metric"]


def sample_steps(records: DataFrame) -> DataFrame:
    """Every ``counter`` and ``increase`` record with its ``status`` and the previous usable sample of its series.

    Columns: ``cluster, broker_id, topic, metric, kind, source, file, ts_ms, value, window_s, counted,
    status, prev_ts, prev_v, foreign``. One shuffle by series and one sort by (series, time, value) serve
    every window. Records of a series converted in its file (`spark_jobs.records.STAGED_SCHEMA`) come with
    ``counted`` (skip the step into it: already summed) and ``foreign``: true where another file's or
    source's sample falls inside that series' span, or turns one of its usable samples into a conflict
    (then the in-file conversion does not hold and the caller reads every sample instead).
    """
    samples = staged(records).where(
        F.col("kind").isin(KIND_COUNTER, KIND_INCREASE) & F.col("ts_ms").isNotNull()).select(
        *_SERIES, "kind", "source", "file", "ts_ms", "value", "window_s", "counted", "inner", "fast_ok", "segment"
    )
    # among equal samples, one whose step was summed in its file comes first and is the one used
    ordered = Window.partitionBy(*_SERIES).orderBy("ts_ms", "value", F.col("counted").desc(), "file", "segment")
    peers = Window.partitionBy(*_SERIES).orderBy("ts_ms").rangeBetween(0, 0)
    status = (
        F.when(F.min("value").over(peers) != F.max("value").over(peers), F.lit(STATUS_CONFLICT))
        .when(F.lag("ts_ms").over(ordered) == F.col("ts_ms"), F.lit(STATUS_DUPLICATE))
        .otherwise(F.lit(STATUS_OK))
    )
    classified = samples.select("*", status.alias("status"))
    before = ordered.rowsBetween(Window.unboundedPreceding, -1)
    usable = F.col("status") == STATUS_OK
    same = (F.lag("file").over(ordered) == F.col("file")) & (F.lag("segment").over(ordered) == F.col("segment"))
    foreign = (F.col("inner") & ~F.coalesce(same, F.lit(False))) | (
        F.col("fast_ok") & (F.col("status") == STATUS_CONFLICT))
    return classified.select(
        *_SERIES, "kind", "source", "file", "ts_ms", "value", "window_s", "counted", "status",
        F.last(F.when(usable, F.col("ts_ms")), ignorenulls=True).over(before).alias("prev_ts"),
        F.last(F.when(usable, F.col("value")), ignorenulls=True).over(before).alias("prev_v"),
        foreign.alias("foreign"),
    )


def duplicate_units(steps: DataFrame) -> DataFrame:
    """The samples `sample_steps` did not use, as records: ``duplicate_sample`` (ignored) or
    ``duplicate_timestamp`` (rejected, with the sample as JSON in ``raw``)."""
    dropped = steps.where(F.col("status") != STATUS_OK)
    kind = F.when(F.col("status") == STATUS_CONFLICT, F.lit(KIND_REJECTED)).otherwise(F.lit(KIND_IGNORED))
    raw = F.to_json(F.struct("broker_id", "topic", "metric", "ts_ms", "value"))
    return dropped.select(
        "source", "file", kind.alias("kind"), F.col("status").alias("reason"), "cluster", "broker_id", "topic",
        F.when(kind == KIND_REJECTED, raw).alias("raw"),
    )


def minute_deltas(steps: DataFrame, records: DataFrame | None = None, *, summed: bool = True) -> DataFrame:
    """Every increase of `sample_steps` output (`spark_jobs.history_contract.DELTA_FIELDS`: one metric's window of one
    series, credited to the minute it starts in), plus the increases of series converted in their files
    (``records``' `KIND_STEPS` rows, unless ``summed`` is false: their workers left them for
    `spark_jobs.minute_merge.merge_buckets`) and with those series' scrape times (`KIND_SCRAPE`) in the rounds."""
    ok = steps.where(F.col("status") == STATUS_OK)
    usable = ok.where(F.col("kind") == KIND_COUNTER)
    counters = usable.where(~F.col("counted"))
    fell = F.col("value") < F.col("prev_v")
    # only a new meter (first sample, or a value that fell) needs its broker's previous round
    special = counters.where(F.col("prev_ts").isNull() | fell)
    plain = counters.where(F.col("prev_ts").isNotNull() & ~fell).select(
        *_SERIES, "source", F.col("prev_ts").alias("start"), "ts_ms", (F.col("value") - F.col("prev_v")).alias("delta"),
        F.lit(False).alias("reset"),
    )
    grid = usable.select("cluster", "broker_id", "ts_ms")
    if records is not None:
        grid = grid.unionByName(records.where(F.col("kind") == KIND_SCRAPE).select("cluster", "broker_id", "ts_ms"))
    rounds = _rounds(grid)
    # the window starts at the later of the series' previous sample and the broker's previous round; a first
    # sample in its broker's first round has neither and only anchors the series
    start = F.greatest("prev_ts", "prev_round_ms")
    created = special.join(rounds, ["cluster", "broker_id", "ts_ms"]).where(start.isNotNull()).select(
        *_SERIES, "source", start.alias("start"), "ts_ms", F.col("value").alias("delta"), F.lit(True).alias("reset"),
    )
    increases = ok.where(F.col("kind") == KIND_INCREASE).select(
        *_SERIES, "source", (F.col("ts_ms") - F.round(F.col("window_s") * 1000).cast("long")).alias("start"), "ts_ms",
        F.col("value").alias("delta"), F.lit(False).alias("reset"),
    )
    deltas = plain.unionByName(created).unionByName(increases).select(
        *_SERIES, "source", "reset", "delta",
        (F.floor(F.col("start") / _MINUTE_MS) * _MINUTE_MS).alias("minute_ms"),
        (F.col("ts_ms") - F.col("start")).alias("span_ms"),
    )
    if records is not None and summed:
        deltas = deltas.unionByName(records.where(F.col("kind") == KIND_STEPS).select(
            *_SERIES, "source", F.lit(False).alias("reset"), F.col("value").alias("delta"),
            F.col("ts_ms").alias("minute_ms"), "span_ms"
        ))
    return deltas.select(*[F.col(f.name).cast(spark_type(f.type)) for f in DELTA_FIELDS])



def minute_rows(steps: DataFrame, records: DataFrame | None = None, *, remote: bool = False) -> DataFrame:
    """The normalized per-minute rows (`THROUGHPUT_SCHEMA`, with ``remote`` then the remote meters' `REMOTE_SCHEMA`)
    of `minute_deltas`: each (broker, topic)'s increases brought together by a shuffle and pivoted by
    `spark_jobs.minute_merge.pivot_minutes`.

    (``poolplan ingest`` sums the bulk of them without the shuffle: `spark_jobs.minute_merge.merge_buckets`.)
    """
    deltas = minute_deltas(steps, records)
    # a series' rows together: its fractional bytes are carried from minute to minute (`pivot_minutes`)
    schema = T.StructType([*THROUGHPUT_SCHEMA.fields, *(REMOTE_SCHEMA.fields if remote else [])])
    pivot = partial(pivot_batches, remote=remote)
    return deltas.repartition("cluster", "broker_id", "topic").mapInArrow(pivot, schema)


def with_increase(records: DataFrame) -> DataFrame:
    """`minute_rows` of `sample_steps` in one plan (no staging): the per-minute rows of ``records``."""
    return minute_rows(sample_steps(records))


def _rounds(times: DataFrame) -> DataFrame:
    """``cluster, broker_id, ts_ms, prev_round_ms``: the start of the scrape round before each scrape time's.

    ``times`` holds every usable counter sample's ``cluster, broker_id, ts_ms``; a broker's scrape
    timestamps within `ROUND_MS` of each other are one round. One shuffle brings each broker's times together
    and `round_starts` chains them in numpy (a broker's grid is small: 1,440 times a day).
    """
    return times.groupBy("cluster", "broker_id").applyInArrow(round_starts, _ROUNDS_SCHEMA)


_ROUNDS_SCHEMA = "cluster string, broker_id int, ts_ms long, prev_round_ms long"


def round_starts(times: pa.Table) -> pa.Table:
    """One broker's distinct scrape times, each with the start of the round before its own (null in the first
    round): a time more than `ROUND_MS` after the one before it starts a round.

    >>> t = pa.table({"cluster": ["c"] * 5, "broker_id": pa.array([1] * 5, pa.int32()),
    ...               "ts_ms": [60_000, 0, 2_000, 60_000, 121_000]})
    >>> round_starts(t).to_pydict()["prev_round_ms"]
    [None, None, 0, 60000]
    """
    ts = np.unique(times.column("ts_ms").drop_null().to_numpy())
    starts_round = np.ones(ts.size, bool)
    starts_round[1:] = np.diff(ts) > ROUND_MS
    number = np.cumsum(starts_round) - 1
    starts = ts[starts_round]
    return pa.table({
        "cluster": pa.repeat(times.column("cluster")[0], ts.size),
        "broker_id": pa.repeat(times.column("broker_id")[0], ts.size),
        "ts_ms": pa.array(ts, pa.int64()),
        "prev_round_ms": pa.array(starts[np.maximum(number - 1, 0)], pa.int64(), mask=number == 0),
    })
