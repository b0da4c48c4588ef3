"""``kafka-log-dirs.sh --describe`` snapshots at Spark scale: one file per cron run, one record per replica.

Each file holds the two status lines and one compact JSON line (see `pools.kafka_formats.log_dirs` for the
single-file reader this mirrors). The snapshot time comes from the file name ``log-dirs-<YYYYMMDDTHHMMSSZ>.txt``.
``partition`` strings are ``<topic>-<n>`` split on the last ``-``; ``isFuture`` replicas are kept and flagged
(the profile excludes them).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.records import KIND_IGNORED, KIND_REJECTED, KIND_SIZE, classify, finish

__all__ = ["read_log_dirs", "SOURCE", "LOG_DIRS_SCHEMA", "SNAPSHOT_NAME_PATTERN"]

SOURCE = "log_dirs"

#: The file-name stamp that gives the snapshot time.
SNAPSHOT_NAME_PATTERN = r"(\d{8}T\d{6}Z)[^/]*$"

_REPLICA = T.StructType(
    [
        T.StructField("partition", T.StringType()),
        T.StructField("size", T.LongType()),
        T.StructField("offsetLag", T.LongType()),
        T.StructField("isFuture", T.BooleanType()),
    ]
)
_LOG_DIR = T.StructType(
    [
        T.StructField("logDir", T.StringType()),
        T.StructField("error", T.StringType()),
        T.StructField("partitions", T.ArrayType(_REPLICA)),
    ]
)
LOG_DIRS_SCHEMA = T.StructType(
    [
        T.StructField("version", T.IntegerType()),
        T.StructField(
            "brokers",
            T.ArrayType(
                T.StructType(
                    [T.StructField("broker", T.IntegerType()), T.StructField("logDirs", T.ArrayType(_LOG_DIR))])),
        ),
    ]
)

_STATUS = (
    r"^(Querying brokers for log directories information"
    r"|Received log directory information from brokers [0-9, ]*)$"
)


def read_log_dirs(spark: SparkSession, paths: Sequence[str], *, cluster: str) -> DataFrame:
    """Read ``kafka-log-dirs.sh --describe`` snapshot files into classified records (one per replica).

    Rejection reasons: ``not_utf8``, ``malformed_line`` (neither a status line nor JSON), ``malformed_json``,
    ``unsupported_version``, ``no_snapshot_time`` (file name without a stamp), ``bad_broker``,
    ``bad_partition``, ``bad_size``. Ignored: ``blank``, ``status_line``, ``empty_log_dir``.
    """
    lines = spark.read.text(list(paths)).select(
        F.make_valid_utf8("value").alias("line"), F.is_valid_utf8("value").alias("utf8"),
        F.col("_metadata.file_path").alias("file")
    )
    stamp = F.regexp_extract("file", SNAPSHOT_NAME_PATTERN, 1)
    doc = F.from_json(F.col("line"), LOG_DIRS_SCHEMA, {"mode": "PERMISSIVE"})
    lines = lines.select(
        "line",
        "utf8",
        "file",
        # an impossible stamp (20250230T...) is no snapshot time, not a failed read
        F.when(stamp != "", F.unix_millis(F.try_to_timestamp(stamp, F.lit("yyyyMMdd'T'HHmmss'Z'")))).alias("ts_ms"),
        F.when(F.trim("line").startswith("{"), doc).alias("doc"),
    )
    stripped = F.trim("line")
    is_json = stripped.startswith("{")
    line_kind, line_reason = classify(
        [
            (~F.col("utf8"), KIND_REJECTED, "not_utf8"),
            (stripped == "", KIND_IGNORED, "blank"),
            (stripped.rlike(_STATUS), KIND_IGNORED, "status_line"),
            (~is_json, KIND_REJECTED, "malformed_line"),
            (F.col("doc").isNull() | F.col("doc.brokers").isNull(), KIND_REJECTED, "malformed_json"),
            (F.col("doc.version") != 1, KIND_REJECTED, "unsupported_version"),
            (F.col("ts_ms").isNull(), KIND_REJECTED, "no_snapshot_time"),
        ],
        "data",
    )
    lines = lines.select("*", line_kind.alias("kind"), line_reason.alias("reason"))
    other = lines.where(F.col("kind") != "data").select("file", "kind", "reason", F.col("line").alias("raw"))
    dirs = (
        lines.where(F.col("kind") == "data")
        .select("file", "ts_ms", F.explode_outer("doc.brokers").alias("b"))
        .select("file", "ts_ms", F.col("b.broker").alias("broker_id"), F.explode_outer("b.logDirs").alias("d"))
        .select("file", "ts_ms", "broker_id", F.col("d.logDir").alias("log_dir"),
            F.explode_outer("d.partitions").alias("r"))
    )
    name = F.col("r.partition")
    parts = F.regexp_extract(name, r"^(.+)-([0-9]{1,9})$", 0) != ""
    kind, reason = classify(
        [
            (F.col("r").isNull(), KIND_IGNORED, "empty_log_dir"),
            (F.col("broker_id").isNull() | (F.col("broker_id") < 0), KIND_REJECTED, "bad_broker"),
            (name.isNull() | ~parts, KIND_REJECTED, "bad_partition"),
            (F.col("r.size").isNull() | (F.col("r.size") < 0), KIND_REJECTED, "bad_size"),
        ],
        KIND_SIZE,
    )
    replicas = dirs.select(
        "file",
        "ts_ms",
        "broker_id",
        "log_dir",
        kind.alias("kind"),
        reason.alias("reason"),
        F.when(parts, F.regexp_extract(name, r"^(.+)-([0-9]{1,9})$", 1)).alias("topic"),
        F.regexp_extract(name, r"^(.+)-([0-9]{1,9})$", 2).try_cast("int").alias("partition"),
        F.lit("log_size").alias("metric"),
        F.col("r.size").cast("double").alias("value"),
        F.coalesce(F.col("r.isFuture"), F.lit(False)).alias("is_future"),
        F.to_json(
            F.struct(F.col("broker_id").alias("broker"), F.col("log_dir").alias("logDir"),
                F.col("r").alias("replica"))).alias("raw"),
    )
    out = replicas.unionByName(other, allowMissingColumns=True)
    return finish(out.select("*", F.lit(SOURCE).alias("source"), F.lit(cluster).alias("cluster")))
