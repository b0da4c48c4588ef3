"""Telegraf ``jolokia2`` metrics written by ``[[outputs.file]] data_format = "json"``: one JSON object per line.

``kafka_topic`` lines (``mbean = "kafka.server:name=*,topic=*,type=BrokerTopicMetrics"``, ``field_prefix = "$1."``)
carry ``BytesInPerSec.Count`` … fields; ``kafka_partition`` lines (``kafka.log:name=*,partition=*,topic=*,type=Log``)
carry ``Size``. The broker comes from the ``jolokia_agent_url`` (or ``host``) tag through the broker map. The
timestamp unit is inferred from its magnitude (s, ms, µs or ns, ``json_timestamp_units``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.records import (
    COUNTER_METRICS,
    KIND_COUNTER,
    KIND_IGNORED,
    KIND_REJECTED,
    KIND_SIZE,
    broker_lookup,
    classify,
    finish,
    origin_rules,
    partition_rule,
    value_rules,
)

__all__ = ["read_telegraf", "SOURCE", "TELEGRAF_SCHEMA"]

SOURCE = "telegraf"

TELEGRAF_SCHEMA = T.StructType(
    [
        T.StructField("name", T.StringType()),
        T.StructField("tags", T.MapType(T.StringType(), T.StringType())),
        T.StructField("fields", T.MapType(T.StringType(), T.StringType())),
        T.StructField("timestamp", T.StringType()),
        T.StructField("_corrupt_record", T.StringType()),
    ]
)

_FIELDS = {**{f"{meter}.Count": metric for metric, meter in COUNTER_METRICS.items()}, "Size": "log_size"}


def _to_millis(ts: F.Column) -> F.Column:
    value = ts.try_cast("decimal(38,3)")
    return (
        F.when(value < 1e11, value * 1000)
        .when(value < 1e14, value)
        .when(value < 1e17, value / 1000)
        .otherwise(value / 1000000)
        .try_cast("long")  # beyond a long (e.g. 1e30): no timestamp, a bad_timestamp record, not a failed read
    )


def read_telegraf(
    spark: SparkSession,
    paths: Sequence[str],
    *,
    cluster: str,
    broker_map: Mapping[str, int],
) -> DataFrame:
    """Read Telegraf JSON lines into classified records, one per field (a line that does not parse counts once).

    Rejection reasons: ``malformed_json``, ``no_fields``, ``bad_value``, ``nan_value``, ``infinite_value``,
    ``negative_value``, ``bad_timestamp``, ``unknown_broker``, ``bad_partition``. Ignored: ``blank``,
    ``other_measurement``, ``other_field``, ``broker_total``.
    """
    rows = (
        spark.read.schema(TELEGRAF_SCHEMA)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", "_corrupt_record")
        .json(list(paths))
        .select("*", F.col("_metadata.file_path").alias("file"))
    )
    line_ok = F.col("_corrupt_record").isNull() & F.col("name").isNotNull()
    measurement = F.col("name").isin("kafka_topic", "kafka_partition")
    bad_kind, bad_reason = classify(
        [
            (~line_ok, KIND_REJECTED, "malformed_json"),
            (~measurement, KIND_IGNORED, "other_measurement"),
            (F.col("fields").isNull() | (F.size("fields") == 0), KIND_REJECTED, "no_fields"),
        ],
        "data",
    )
    rows = rows.select("*", bad_kind.alias("kind"), bad_reason.alias("reason"))
    other = rows.where(F.col("kind") != "data").select("file", "kind", "reason", F.coalesce("_corrupt_record", F.to_json(F.struct("name", "tags", "fields", "timestamp"))).alias("raw"))
    fields = rows.where(F.col("kind") == "data").select(
        "file", "name", "tags", "timestamp", F.explode("fields").alias("field", "field_value")
    )
    metrics = F.create_map(*[F.lit(x) for kv in sorted(_FIELDS.items()) for x in kv])
    tags = F.col("tags")
    fields = fields.select(
        "*",
        metrics[F.col("field")].alias("metric"),
        F.col("field_value").try_cast("double").alias("value"),
        _to_millis(F.col("timestamp")).alias("ts_ms"),
        F.when(tags["topic"] != "", tags["topic"]).alias("topic"),
        tags["partition"].alias("partition_text"),
        broker_lookup(broker_map, tags["jolokia_agent_url"], tags["host"]).alias("broker_id"),
    )
    is_size = F.col("name") == "kafka_partition"
    kind, reason = classify(
        [
            (F.col("metric").isNull() | (is_size != (F.col("metric") == "log_size")), KIND_IGNORED, "other_field"),
            (F.col("topic").isNull(), KIND_IGNORED, "broker_total"),
            *value_rules(),
            *origin_rules(),
            partition_rule(is_size),
        ],
        F.when(is_size, F.lit(KIND_SIZE)).otherwise(F.lit(KIND_COUNTER)),
    )
    fields = fields.select(
        "*",
        kind.alias("kind"),
        reason.alias("reason"),
        F.col("partition_text").try_cast("int").alias("partition"),
        F.lit(False).alias("is_future"),
        F.to_json(F.struct("name", "tags", F.create_map("field", "field_value").alias("fields"), "timestamp")).alias("raw"),
    )
    out = fields.unionByName(other, allowMissingColumns=True)
    return finish(out.select("*", F.lit(SOURCE).alias("source"), F.lit(cluster).alias("cluster")))
