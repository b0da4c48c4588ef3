"""The record every reader emits: one classified input unit (sample, replica size, ignored or rejected line).

Every reader returns a DataFrame with `RECORD_COLUMNS`, one row per input unit (a text line, a
query_range value pair, a Telegraf field, a log-dirs replica; a whole unparseable document counts once),
classified by ``kind``:

``counter``   a cumulative ``...PerSec`` Count sample (``metric`` in `COUNTER_METRICS`)
``increase``  a pre-aggregated sample: ``value`` is the metric's increase over the ``window_s`` seconds that
              end at ``ts_ms`` (an ``increase()`` export, or ``rate()`` times the window)
``size``      a replica's size on disk (``kafka_log_log_size`` or ``kafka-log-dirs.sh``), or a tiered topic's bytes
              in the remote store on one broker (metric ``remote_log_size``: ``RemoteLogSizeBytes``, per partition where
              an exporter labels one)
``ignored``   read and deliberately not used (comments, other metrics, the broker-wide series); ``reason`` says why
``rejected``  malformed; goes to the quarantine output with its ``reason`` and ``raw`` text

so ``read = counter + size + ignored + rejected`` holds per source by construction.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.metric_names import ID_PATTERN, REMOTE_COPY, REMOTE_FETCH

__all__ = [
    "RECORD_SCHEMA",
    "COUNTER_METRICS",
    "PROM_METRICS",
    "KIND_COUNTER",
    "KIND_SIZE",
    "KIND_IGNORED",
    "KIND_REJECTED",
    "KIND_MINUTE",
    "KIND_INCREASE",
    "ACCEPTED_KINDS",
    "DATA_KINDS",
    "MAX_COUNT",
    "classify",
    "value_rules",
    "origin_rules",
    "partition_rule",
    "broker_lookup",
    "finish",
    "RAW_LIMIT",
    "utf8_rule",
    "KIND_STEPS",
    "KIND_SCRAPE",
    "STAGED_SCHEMA",
    "staged",
]

KIND_COUNTER, KIND_SIZE, KIND_IGNORED, KIND_REJECTED = "counter", "size", "ignored", "rejected"
#: A valid normalized per-minute row read as such (`spark_jobs.normalized_json`).
KIND_MINUTE = "minute"
#: A pre-aggregated sample (an ``increase()`` or ``rate()`` export), never read as a counter.
KIND_INCREASE = "increase"
#: Rows a reader may add that are not input units (``n`` = 0), made where a whole series is at hand
#: (`spark_jobs.query_range`): the summed plain increases of one series in one minute (``ts_ms`` the minute,
#: ``value`` the bytes, ``span_ms`` the summed window lengths), and one broker's scrape times (``ts_ms``).
KIND_STEPS, KIND_SCRAPE = "steps", "scrape"
#: The kinds of records that carry a sample (their payload columns are kept).
DATA_KINDS = (KIND_COUNTER, KIND_SIZE, KIND_INCREASE)
#: The kinds that count as accepted in the quality totals.
ACCEPTED_KINDS = (*DATA_KINDS, KIND_MINUTE)
#: Kafka's meters and log sizes are Java longs: a larger value cannot be a real sample.
MAX_COUNT = float(2**63 - 1)

#: Normalized metric name → the BrokerTopicMetrics meter whose Count it is (the tiered-storage meters too).
COUNTER_METRICS: Mapping[str, str] = {
    "bytes_in": "BytesInPerSec",
    "bytes_out": "BytesOutPerSec",
    "messages_in": "MessagesInPerSec",
    REMOTE_COPY: "RemoteCopyBytesPerSec",
    REMOTE_FETCH: "RemoteFetchBytesPerSec",
}

#: jmx_exporter's ``kafka-2_0_0`` names (lower-cased) → normalized metric: the readers recognise these and every
#: other exporter's spelling through `spark_jobs.metric_names`.
PROM_METRICS: Mapping[str, str] = {
    "kafka_server_brokertopicmetrics_bytesin_total": "bytes_in",
    "kafka_server_brokertopicmetrics_bytesout_total": "bytes_out",
    "kafka_server_brokertopicmetrics_messagesin_total": "messages_in",
    "kafka_log_log_size": "log_size",
}

#: Rejected rows keep at most this many characters of their input.
RAW_LIMIT = 2000

RECORD_SCHEMA = T.StructType(
    [
        T.StructField("source", T.StringType(), False),
        T.StructField("file", T.StringType(), True),
        T.StructField("kind", T.StringType(), False),
        T.StructField("reason", T.StringType(), True),
        T.StructField("cluster", T.StringType(), False),
        T.StructField("ts_ms", T.LongType(), True),
        T.StructField("broker_id", T.IntegerType(), True),
        T.StructField("topic", T.StringType(), True),
        T.StructField("partition", T.IntegerType(), True),
        T.StructField("metric", T.StringType(), True),
        T.StructField("value", T.DoubleType(), True),
        T.StructField("log_dir", T.StringType(), True),
        T.StructField("is_future", T.BooleanType(), True),
        T.StructField("raw", T.StringType(), True),
        T.StructField("window_s", T.DoubleType(), True),
    ]
)


#: `RECORD_SCHEMA` plus what the staged record table adds: ``n`` (the input units a row stands for: 1 for a
#: record, the count of the samples a reader summed, 0 for `KIND_STEPS`/`KIND_SCRAPE`), and for a sample
#: sent on from a series already converted in its file: ``counted`` (the step into it is in that series'
#: `KIND_STEPS` rows), ``inner`` (not the first sample sent of its series), ``fast_ok`` (usable in its
#: file) and ``segment`` (which series of its file).
STAGED_SCHEMA = T.StructType(
    [
        *RECORD_SCHEMA.fields,
        T.StructField("n", T.LongType(), False),
        T.StructField("counted", T.BooleanType(), False),
        T.StructField("inner", T.BooleanType(), False),
        T.StructField("fast_ok", T.BooleanType(), False),
        T.StructField("segment", T.IntegerType(), True),
        T.StructField("span_ms", T.LongType(), True),
    ]
)
_STAGE_DEFAULTS = {"n": 1, "counted": False, "inner": False, "fast_ok": False, "segment": None, "span_ms": None}


def staged(df: DataFrame) -> DataFrame:
    """``df`` (`RECORD_SCHEMA` or `STAGED_SCHEMA`) with every `STAGED_SCHEMA` column: a plain record stands for
    one input unit and was not converted in its file."""
    cols = [
        F.col(f.name) if f.name in df.columns else F.lit(_STAGE_DEFAULTS[f.name]).cast(f.dataType).alias(f.name)
        for f in STAGED_SCHEMA.fields
    ]
    return df.select(*cols)


def classify(
    rules: list[tuple[Column, str | Column, str | Column]], default_kind: Column | str
) -> tuple[Column, Column]:
    """Turn ordered ``(condition, kind, reason)`` rules into ``kind`` and ``reason`` columns (first match wins)."""
    kind = F.lit(default_kind) if isinstance(default_kind, str) else default_kind
    reason = F.lit(None).cast("string")
    for cond, k, r in reversed(rules):
        kind = F.when(cond, F.lit(k)).otherwise(kind)
        reason = F.when(cond, F.lit(r)).otherwise(reason)
    return kind, reason


def value_rules() -> list[tuple[Column, str, str]]:
    """`classify` rules rejecting a sample whose ``value`` is missing, NaN, infinite, negative or above a Java long."""
    return [
        (F.col("value").isNull(), KIND_REJECTED, "bad_value"),
        (F.isnan("value"), KIND_REJECTED, "nan_value"),
        (F.abs("value") == float("inf"), KIND_REJECTED, "infinite_value"),
        (F.col("value") < 0, KIND_REJECTED, "negative_value"),
        (F.col("value") > MAX_COUNT, KIND_REJECTED, "value_out_of_range"),
    ]


def utf8_rule(text: Column) -> tuple[Column, str, str]:
    """The `classify` rule rejecting a line whose bytes are not UTF-8 (it is quarantined, made readable)."""
    return (~F.is_valid_utf8(text), KIND_REJECTED, "not_utf8")


def origin_rules() -> list[tuple[Column, str, str]]:
    """`classify` rules rejecting a sample without a positive ``ts_ms`` or from an unmapped broker."""
    return [
        (F.col("ts_ms").isNull() | (F.col("ts_ms") <= 0), KIND_REJECTED, "bad_timestamp"),
        (F.col("broker_id").isNull(), KIND_REJECTED, "unknown_broker"),
    ]


def partition_rule(is_size: Column) -> tuple[Column, str, str]:
    """The `classify` rule rejecting a partition-size sample whose partition label is not an int id."""
    bad = ~F.coalesce(F.col("partition_text"), F.lit("")).rlike(ID_PATTERN)
    return (is_size & bad, KIND_REJECTED, "bad_partition")


def broker_lookup(broker_map: Mapping[str, int], *labels: Column) -> Column:
    """The broker id of the first label value found in ``broker_map`` (instance, pod, agent URL …), else null.

    A label whose value is itself a non-negative integer is taken as the broker id when the map has no entry.
    """
    mapping = F.create_map(
        *[F.lit(x) for k, v in sorted(broker_map.items()) for x in (k, int(v))]) if broker_map else None
    candidates: list[Column] = []
    for label in labels:
        if mapping is not None:
            candidates.append(mapping[label].cast("int"))
        candidates.append(F.when(label.rlike(ID_PATTERN), label.cast("int")))
    return F.coalesce(*candidates)


def finish(df: DataFrame) -> DataFrame:
    """Select `RECORD_SCHEMA`'s columns in order, casting each, and clear payload columns of non-data rows."""
    data = F.col("kind").isin(*DATA_KINDS)
    cols = []
    for field in RECORD_SCHEMA.fields:
        col = F.col(field.name).cast(field.dataType) if field.name in df.columns else F.lit(None).cast(field.dataType)
        if field.name == "raw":
            col = F.when(F.col("kind") == KIND_REJECTED, F.substring(F.make_valid_utf8(col), 1, RAW_LIMIT))
        elif field.name in {"value", "ts_ms", "metric", "partition", "log_dir", "is_future", "window_s"}:
            col = F.when(data, col)
        cols.append(col.alias(field.name))
    return df.select(*cols)
