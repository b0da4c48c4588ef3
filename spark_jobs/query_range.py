"""Prometheus ``/api/v1/query_range`` exports: one JSON document per file, raw counters at a fixed step.

``{"status":"success","data":{"resultType":"matrix","result":[{"metric":{...},"values":[[<float s>,"<value>"],
...]}]}}``. Timestamps are float seconds, values strings. Each file is one document, read whole by one task:
many files parse in parallel. The metric is ``metric.__name__`` (matched
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
    ]
)


#: Per-series fields every value pair of the series carries, with their types (for the null unit).
_SERIES_FIELDS = (
    ("labels", "map<string,string>"),
    ("metric", "string"),
    ("topic", "string"),
    ("partition_text", "string"),
    ("broker_id", "int"),
)


def _unit(series: F.Column | None, pair: F.Column) -> F.Column:
    """One value pair with its series' fields (all null for a document that is not read)."""
    fields = [(series[name] if series is not None else F.lit(None).cast(t)).alias(name) for name, t in _SERIES_FIELDS]
    return F.struct(*fields, pair.alias("pair"))


def read_query_range(
    spark: SparkSession,
    paths: Sequence[str],
    *,
    cluster: str,
    broker_map: Mapping[str, int],
) -> DataFrame:
    """Read query_range export files into classified records, one per value pair (see `spark_jobs.records`).

    Each file is read whole as text and parsed with ``from_json``; its value pairs are flattened into one
    array inside the same projection and exploded. (Spark's ``multiLine`` JSON reader would first copy each
    week-long document into one nested row, which takes minutes per file.) A file is one string, so it must
    be under 2 GiB.

    Rejection reasons (a whole document counts once): ``malformed_json``, ``query_failed`` (status not
    ``success``), ``not_a_matrix``; per value pair: ``malformed_pair``, ``bad_value``, ``nan_value``,
    ``infinite_value``, ``negative_value``, ``bad_timestamp``, ``unknown_broker``, ``bad_partition``.
    Ignored: ``empty_result``, ``other_metric``, ``broker_total``.
    """
    text = spark.read.text(list(paths), wholetext=True)
    docs = text.select(
        F.col("_metadata.file_path").alias("file"), "value", F.from_json("value", QUERY_RANGE_SCHEMA).alias("doc")
    )
    result = F.col("doc.data.result")
    doc_kind, doc_reason = classify(
        [
            (F.col("doc.status").isNull(), KIND_REJECTED, "malformed_json"),
            (F.col("doc.status") != "success", KIND_REJECTED, "query_failed"),
            ((F.col("doc.data.resultType") != "matrix") | result.isNull(), KIND_REJECTED, "not_a_matrix"),
            (F.size(result) == 0, KIND_IGNORED, "empty_result"),
        ],
        KIND_COUNTER,
    )
    # the labels are resolved once per series, not once per value pair
    file_metric = F.lower(F.regexp_extract("file", r"([A-Za-z_:][A-Za-z0-9_:]*)-[^/]*\.json$", 1))
    metrics = F.create_map(*[F.lit(x) for kv in sorted(PROM_METRICS.items()) for x in kv])

    def series(r: F.Column) -> F.Column:
        labels = r["metric"]
        return F.struct(
            labels.alias("labels"),
            metrics[F.coalesce(F.lower(labels["__name__"]), file_metric)].alias("metric"),
            F.when(labels["topic"] != "", labels["topic"]).alias("topic"),
            labels["partition"].alias("partition_text"),
            broker_lookup(broker_map, labels["instance"], labels["pod"]).alias("broker_id"),
            r["values"].alias("values"),
        )

    no_pair = F.lit(None).cast("array<string>")
    # a series without values still counts once (as a malformed pair), a bad document once (as itself)
    pairs = F.transform(
        F.transform(result, series),
        lambda s: F.when(F.size(s["values"]) > 0, F.transform(s["values"], lambda p: _unit(s, p))).otherwise(
            F.array(_unit(s, no_pair))
        ),
    )
    per_doc = docs.select(
        "file",
        doc_kind.alias("doc_kind"),
        doc_reason.alias("doc_reason"),
        F.when(doc_reason.isNotNull(), F.col("value")).alias("doc_raw"),
        F.when(doc_reason.isNull(), F.flatten(pairs)).otherwise(F.array(_unit(None, no_pair))).alias("units"),
    )
    units = per_doc.select("file", "doc_kind", "doc_reason", "doc_raw", F.inline_outer("units"))
    samples = units.select(
        "*",
        F.get("pair", 1).try_cast("double").alias("value"),
        (F.get("pair", 0).try_cast("decimal(20,3)") * 1000).cast("long").alias("ts_ms"),
    )
    kind, reason = classify(
        [
            (F.col("doc_reason").isNotNull(), F.col("doc_kind"), F.col("doc_reason")),
            (F.col("pair").isNull() | (F.size("pair") != 2), KIND_REJECTED, "malformed_pair"),
            (F.col("metric").isNull(), KIND_IGNORED, "other_metric"),
            (F.col("topic").isNull(), KIND_IGNORED, "broker_total"),
            *value_rules(),
            *origin_rules(),
            partition_rule(F.col("metric") == "log_size"),
        ],
        F.when(F.col("metric") == "log_size", F.lit(KIND_SIZE)).otherwise(F.lit(KIND_COUNTER)),
    )
    raw = F.coalesce(F.col("doc_raw"), F.to_json(F.struct(F.col("labels").alias("metric"), F.col("pair").alias("value"))))
    out = samples.select(
        "*",
        kind.alias("kind"),
        reason.alias("reason"),
        F.col("partition_text").try_cast("int").alias("partition"),
        F.lit(False).alias("is_future"),
        raw.alias("raw"),
    )
    return finish(out.select("*", F.lit(SOURCE).alias("source"), F.lit(cluster).alias("cluster")))
