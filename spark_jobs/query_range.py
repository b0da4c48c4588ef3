"""Prometheus ``/api/v1/query_range`` exports: one JSON document per file, raw counters at a fixed step.

``{"status":"success","data":{"resultType":"matrix","result":[{"metric":{...},"values":[[<float s>,"<value>"],
...]}]}}``. Timestamps are float seconds, values strings. Each file is one document, so Spark reads it with
``multiLine`` as one task per file: many files parse in parallel. The metric is ``metric.__name__`` (matched
case-insensitively) or, for exports of an expression, the file name's prefix ``<metric>-<week>.json``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.records import (
    KIND_COUNTER,
    KIND_IGNORED,
    KIND_REJECTED,
    KIND_SIZE,
    PROM_METRICS,
    broker_lookup,
    classify,
    finish,
    origin_rules,
    partition_rule,
    value_rules,
)

__all__ = ["read_query_range", "SOURCE", "QUERY_RANGE_SCHEMA"]

SOURCE = "prom_range"

QUERY_RANGE_SCHEMA = T.StructType(
    [
        T.StructField("status", T.StringType()),
        T.StructField(
            "data",
            T.StructType(
                [
                    T.StructField("resultType", T.StringType()),
                    T.StructField(
                        "result",
                        T.ArrayType(
                            T.StructType(
                                [
                                    T.StructField("metric", T.MapType(T.StringType(), T.StringType())),
                                    T.StructField("values", T.ArrayType(T.ArrayType(T.StringType()))),
                                ]
                            )
                        ),
                    ),
                ]
            ),
        ),
        T.StructField("_corrupt_record", T.StringType()),
    ]
)


def read_query_range(
    spark: SparkSession,
    paths: Sequence[str],
    *,
    cluster: str,
    broker_map: Mapping[str, int],
) -> DataFrame:
    """Read query_range export files into classified records, one per value pair (see `spark_jobs.records`).

    Rejection reasons (a whole document counts once): ``malformed_json``, ``query_failed`` (status not
    ``success``), ``not_a_matrix``; per value pair: ``malformed_pair``, ``bad_value``, ``nan_value``,
    ``infinite_value``, ``negative_value``, ``bad_timestamp``, ``unknown_broker``, ``bad_partition``.
    Ignored: ``empty_result``, ``other_metric``, ``broker_total``.
    """
    docs = (
        spark.read.schema(QUERY_RANGE_SCHEMA)
        .option("multiLine", "true")
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", "_corrupt_record")
        .json(list(paths))
        .select("*", F.col("_metadata.file_path").alias("file"))
    )
    doc_ok = (
        F.col("_corrupt_record").isNull()
        & (F.col("status") == "success")
        & (F.col("data.resultType") == "matrix")
        & F.col("data.result").isNotNull()
    )
    good = docs.where(doc_ok)
    bad_kind, bad_reason = classify(
        [
            (F.col("_corrupt_record").isNotNull() | F.col("status").isNull(), KIND_REJECTED, "malformed_json"),
            (F.col("status") != "success", KIND_REJECTED, "query_failed"),
        ],
        KIND_REJECTED,
    )
    bad = docs.where(~doc_ok).select(
        "file",
        bad_kind.alias("kind"),
        F.coalesce(bad_reason, F.lit("not_a_matrix")).alias("reason"),
        F.coalesce(F.col("_corrupt_record"), F.to_json(F.struct("status", "data"))).alias("raw"),
    )
    series = good.select("file", F.explode_outer("data.result").alias("r"))
    empty = series.where(F.col("r").isNull()).select("file", F.lit(KIND_IGNORED).alias("kind"), F.lit("empty_result").alias("reason"))
    samples = series.where(F.col("r").isNotNull()).select(
        "file", F.col("r.metric").alias("labels"), F.explode_outer("r.values").alias("pair")
    )
    file_metric = F.lower(F.regexp_extract("file", r"([A-Za-z_:][A-Za-z0-9_:]*)-[^/]*\.json$", 1))
    name = F.coalesce(F.lower(F.col("labels")["__name__"]), file_metric)
    metrics = F.create_map(*[F.lit(x) for kv in sorted(PROM_METRICS.items()) for x in kv])
    labels = F.col("labels")
    samples = samples.select(
        "file",
        "pair",
        "labels",
        metrics[name].alias("metric"),
        F.get("pair", 1).try_cast("double").alias("value"),
        (F.get("pair", 0).try_cast("decimal(20,3)") * 1000).cast("long").alias("ts_ms"),
        F.when(labels["topic"] != "", labels["topic"]).alias("topic"),
        labels["partition"].alias("partition_text"),
        broker_lookup(broker_map, labels["instance"], labels["pod"]).alias("broker_id"),
    )
    kind, reason = classify(
        [
            (F.col("pair").isNull() | (F.size("pair") != 2), KIND_REJECTED, "malformed_pair"),
            (F.col("metric").isNull(), KIND_IGNORED, "other_metric"),
            (F.col("topic").isNull(), KIND_IGNORED, "broker_total"),
            *value_rules(),
            *origin_rules(),
            partition_rule(F.col("metric") == "log_size"),
        ],
        F.when(F.col("metric") == "log_size", F.lit(KIND_SIZE)).otherwise(F.lit(KIND_COUNTER)),
    )
    samples = samples.select(
        "*",
        kind.alias("kind"),
        reason.alias("reason"),
        F.col("partition_text").try_cast("int").alias("partition"),
        F.lit(False).alias("is_future"),
        F.to_json(F.struct(F.col("labels").alias("metric"), F.col("pair").alias("value"))).alias("raw"),
    )
    out = samples.unionByName(empty, allowMissingColumns=True).unionByName(bad, allowMissingColumns=True)
    return finish(out.select("*", F.lit(SOURCE).alias("source"), F.lit(cluster).alias("cluster")))
