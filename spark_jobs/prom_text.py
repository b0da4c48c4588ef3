"""Prometheus text exposition (0.0.4) from jmx_exporter, with collector-appended millisecond timestamps.

One sample per line, ``name[{label="value",...[,]}] value [timestamp_ms]``; ``# HELP``/``# TYPE`` lines and
blank lines are ignored; the meters' counters are recognised in every spelling `spark_jobs.metric_names` knows
(``lowercaseOutputName`` on or off, jmx_exporter's default export with a ``name`` label …; a rate gauge is
``other_metric`` here: the text holds the counters); values are Go/Java doubles (``1.0004966371E10``, ``NaN``,
``+Inf``). The broker-wide series of a per-topic meter (no topic label) is ignored so it cannot double-count.
The broker comes from the instance labels (``instance``, ``pod``) through the broker map.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_jobs.metric_names import DEFAULT, MetricNames
from spark_jobs.records import (
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

__all__ = ["read_prom_text", "SOURCE", "LINE_PATTERN", "LABELS_PATTERN"]

SOURCE = "prom_text"

_QUOTED = r'"(?:[^"\\]++|\\.)*+"'
#: name, optional label block, value, optional timestamp.
LINE_PATTERN = r"^([A-Za-z_:][A-Za-z0-9_:]*+)(?:[ \t]*+(\{(?:[^\"}]++|" + _QUOTED + r")*+\}))?[ \t]++(\S++)(?:[ \t]++(\S++))?[ \t]*+$"
#: a well-formed label block body: name="value" pairs, comma separated, trailing comma allowed.
LABELS_PATTERN = r'^[ \t]*+(?:[A-Za-z_][A-Za-z0-9_]*+[ \t]*+=[ \t]*+' + _QUOTED + r'[ \t]*+(?:,[ \t]*+|$))*+$'


#: Joins the line pattern's groups: a line break, which no line holds (the text reader splits on them).
_SEP = "\n"


def _label(labels: F.Column, name: str) -> F.Column:
    value = F.regexp_extract(labels, r'(?:^|,)[ \t]*+' + name + r'[ \t]*+=[ \t]*+"((?:[^"\\]++|\\.)*+)"', 1)
    return F.when(value != "", value)


def read_prom_text(
    spark: SparkSession,
    paths: Sequence[str],
    *,
    cluster: str,
    broker_map: Mapping[str, int],
    names: MetricNames = DEFAULT,
) -> DataFrame:
    """Read exposition-text files into classified records (see `spark_jobs.records`).

    Rejection reasons: ``not_utf8``, ``malformed_line``, ``malformed_labels``, ``bad_value``, ``nan_value``,
    ``infinite_value``, ``negative_value``, ``missing_timestamp``, ``bad_timestamp``, ``unknown_broker``, ``bad_partition``.
    Ignored: ``blank``, ``comment``, ``other_metric``, ``broker_total``.
    """
    # a line that is not UTF-8 is quarantined as not_utf8, its bad bytes replaced so it can be shown
    lines = spark.read.text(list(paths)).select(
        F.regexp_replace(F.make_valid_utf8("value"), r"\r$", "").alias("line"),
        F.is_valid_utf8("value").alias("utf8"),
        F.col("_metadata.file_path").alias("file"),
    )
    # the line pattern runs once per line: its groups come out joined by a separator, then split
    fields = F.regexp_replace("line", LINE_PATTERN, "".join(_SEP + f"${i}" for i in range(1, 5)))
    lines = lines.select("*", fields.startswith(_SEP).alias("ok"), F.split(fields, _SEP).alias("parts"))
    m = lambda i: F.when(F.col("ok"), F.col("parts")[i]).otherwise(F.lit(""))  # noqa: E731
    parsed = lines.select(
        "line",
        "utf8",
        "file",
        "ok",
        m(1).alias("name"),
        F.regexp_replace(m(2), r"^\{|\}$", "").alias("labels"),
        m(3).alias("value_text"),
        m(4).alias("ts_text"),
    )
    labels = F.col("labels")
    value = F.regexp_replace(F.col("value_text"), r"^\+?Inf$", "Infinity").try_cast("double")
    parsed = parsed.select(
        "*",
        names.counter_column(F.col("name"), lambda label: _label(labels, label)).alias("metric"),
        value.alias("value"),
        F.col("ts_text").try_cast("long").alias("ts_ms"),
        _label(labels, names.topic_label).alias("topic"),
        _label(labels, "partition").alias("partition_text"),
        broker_lookup(broker_map, *[_label(labels, k) for k in names.instance_labels]).alias("broker_id"),
    )
    stripped = F.trim(F.col("line"))
    kind, reason = classify(
        [
            (~F.col("utf8"), KIND_REJECTED, "not_utf8"),
            (stripped == "", KIND_IGNORED, "blank"),
            (stripped.startswith("#"), KIND_IGNORED, "comment"),
            (~F.col("ok"), KIND_REJECTED, "malformed_line"),
            (~labels.rlike(LABELS_PATTERN), KIND_REJECTED, "malformed_labels"),
            (F.col("metric").isNull(), KIND_IGNORED, "other_metric"),
            (F.col("topic").isNull(), KIND_IGNORED, "broker_total"),
            *value_rules(),
            (F.col("ts_text") == "", KIND_REJECTED, "missing_timestamp"),
            *origin_rules(),
            partition_rule(F.col("metric") == "log_size"),
        ],
        F.when(F.col("metric") == "log_size", F.lit(KIND_SIZE)).otherwise(F.lit(KIND_COUNTER)),
    )
    return finish(
        parsed.select(
            "*",
            kind.alias("kind"),
            reason.alias("reason"),
            F.lit(SOURCE).alias("source"),
            F.lit(cluster).alias("cluster"),
            F.col("partition_text").try_cast("int").alias("partition"),
            F.lit(False).alias("is_future"),
            F.col("line").alias("raw"),
        )
    )
