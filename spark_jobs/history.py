"""The normalized per-minute history: Parquet, hive-partitioned ``cluster=<c>/dt=<YYYY-MM-DD>/``.

Each day's raw logs are converted once; later runs read only this table. Writing replaces exactly the
(cluster, day) partitions present in the new rows (dynamic partition overwrite), so re-running a day is
idempotent and other days are kept.
"""

from __future__ import annotations

import os

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pools.errors import InputError
from spark_jobs.rates import THROUGHPUT_SCHEMA

__all__ = ["read_history", "write_history"]


def read_history(spark: SparkSession, path: str, *, cluster: str | None = None) -> DataFrame:
    """Read the history table (only ``cluster`` when given), columns as `THROUGHPUT_SCHEMA`.

    Raises
    ------
    InputError
        When the table lacks a column of the schema.
    """
    df = spark.read.option("basePath", path).parquet(path)
    missing = [f.name for f in THROUGHPUT_SCHEMA.fields if f.name not in df.columns]
    if missing:
        raise InputError(f"{path}: history table lacks column(s) {', '.join(missing)}")
    if cluster is not None:
        df = df.where(F.col("cluster") == cluster)
    return df.select(*[F.col(f.name).cast(f.dataType) for f in THROUGHPUT_SCHEMA.fields])


def write_history(rows: DataFrame, path: str) -> None:
    """Write normalized rows into the history table, replacing the (cluster, day) partitions they cover."""
    out = rows.select("*", F.date_format("ts", "yyyy-MM-dd").alias("dt"))
    (
        out.repartition("cluster", "dt")
        .sortWithinPartitions("topic", "broker_id", "ts")
        .write.mode("overwrite")
        .option("partitionOverwriteMode", "dynamic")
        .partitionBy("cluster", "dt")
        .parquet(os.fspath(path))
    )
