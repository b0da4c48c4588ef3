"""The normalized per-minute history: Parquet, hive-partitioned ``cluster=<c>/dt=<YYYY-MM-DD>/``.

Each day's raw logs are converted once; later runs read only this table. A row's key is (cluster,
broker_id, topic, ts): an ingest *merges* its rows into the days they fall on: a new row replaces the row
with its key, every other row of the day (other brokers, topics or sources, written by earlier runs) is
kept. So ingesting sources in separate runs gives the same table as one run, and re-running a day is
idempotent. A topic's minute is held either per broker or as the topic's total (``broker_id`` `ALL_BROKERS`, from
a per-topic series), never both: a new total replaces the minute's per-broker rows and new per-broker rows replace
its total; when one ingest brings both, the per-broker rows (exact counters) win. Nothing of the table changes until
`commit_days` at the very end of a successful ingest:
the merged days are staged outside it first, and a local table swaps each day's directory in one rename.

A day the history holds no row of yet (a first run, a daily increment's new day) needs no merge: `stage_new_days`
writes it straight from the minute merge's per-bucket files (`spark_jobs.minute_merge.merge_buckets`) with Arrow,
one file a day in the table's order and Parquet types (`write_day`), without Spark's shuffle and sort; a day that
has rows goes through `stage_merged_days`.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pools.errors import InputError
from spark_jobs.history_contract import (
    ALL_BROKERS,
    DAY_FILE,
    DAY_ORDER,
    HISTORY_KEY,
    OPTIONAL_COLUMNS,
    REMOTE_COLUMNS,
    REMOTE_METRICS,
    REMOTE_SCHEMA,
    THROUGHPUT_SCHEMA,
    day_column,
    day_order,
    partition_dir,
    partition_key,
    throughput_arrow,
)

__all__ = [
    "check_history",
    "read_history",
    "stage_merged_days",
    "stage_new_days",
    "held_days",
    "holds_remote",
    "write_day",
    "commit_days",
]

#: The columns of a topic's minute, whatever its rows' granularity (per broker or `ALL_BROKERS`).
_MINUTE_KEY = ["cluster", "topic", "ts"]


def _is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file:")


def _local(path: str) -> Path:
    return Path(path.removeprefix("file://").removeprefix("file:"))


def _data_files(root: Path) -> list[Path]:
    """The Parquet files of a local table (Spark's hidden ``_``/``.`` files and folders skipped)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(("_", ".")))
        out += [Path(dirpath) / f for f in sorted(filenames) if not f.startswith(("_", "."))]
    return out


def check_history(path: str) -> bool:
    """Check every file of a local history table before any work; return whether it holds any file.

    Raises
    ------
    InputError
        Naming the first file that is not a readable Parquet file or lacks a column of the table, or when
        ``path`` is a regular file.
    """
    if not _is_local(path):
        return True
    root = _local(path)
    if not root.exists():
        return False
    if not root.is_dir():
        raise InputError(f"{root}: --history must be a directory (the normalized Parquet table), not a file")
    import pyarrow.parquet as pq

    files = _data_files(root)
    for f in files:
        try:
            schema = pq.read_schema(f)
        except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a damaged file
            raise InputError(f"{f}: not a readable Parquet file of the history ({str(exc).splitlines()[0]})") from None
        partitioned = {partition_key(p) for p in f.relative_to(root).parts[:-1]}
        missing = [c for c in THROUGHPUT_SCHEMA.fieldNames()
                   if c not in schema.names and c not in partitioned and c not in OPTIONAL_COLUMNS]
        if missing:
            raise InputError(f"{f}: history file lacks column(s) {', '.join(missing)}")
    return bool(files)


def read_history(
    spark: SparkSession,
    path: str,
    *,
    cluster: str | None = None,
    exclude_days: Sequence[str] = (),
    only_days: Sequence[str] | None = None,
) -> DataFrame:
    """Read the history table, columns as `THROUGHPUT_SCHEMA`, then the remote meters' (`REMOTE_SCHEMA`) where any of
    its files has them: only ``cluster`` when given, only the ``dt`` partitions in ``only_days`` and none of
    ``exclude_days`` (pruned by directory).

    An absent or empty table reads as no rows; files written before the `OPTIONAL_COLUMNS` existed read them as
    null, and files without the remote columns read them as null (unmeasured) beside files with them (the files'
    schemas are merged).

    Raises
    ------
    InputError
        When the table lacks a column of the schema.
    """
    if _is_local(path) and not (_local(path).is_dir() and _data_files(_local(path))):
        return spark.createDataFrame([], THROUGHPUT_SCHEMA)
    df = spark.read.option("basePath", path).option("mergeSchema", "true").parquet(path)
    missing = [f.name for f in THROUGHPUT_SCHEMA.fields if f.name not in df.columns and f.name not in OPTIONAL_COLUMNS]
    if missing:
        raise InputError(f"{path}: history table lacks column(s) {', '.join(missing)}")
    df = df.select("*", *[F.lit(None).cast("int").alias(c) for c in OPTIONAL_COLUMNS if c not in df.columns])
    if cluster is not None:
        df = df.where(F.col("cluster") == cluster)
    if exclude_days:
        df = df.where(~F.col("dt").cast("string").isin(list(exclude_days)))
    if only_days is not None:
        df = df.where(F.col("dt").cast("string").isin(list(only_days)))
    remote = [f for f in REMOTE_SCHEMA.fields if f.name in df.columns]  # only where some file has them
    return df.select(*[F.col(f.name).cast(f.dataType) for f in [*THROUGHPUT_SCHEMA.fields, *remote]])


def holds_remote(path: str) -> bool:
    """Whether the history at ``path`` may hold the remote meters' columns (`REMOTE_COLUMNS`): a local table only
    when one of its files has them (their footers read here, no Spark job); a table that is not local, always."""
    if not _is_local(path):
        return True
    import pyarrow.parquet as pq

    root = _local(path)
    return root.is_dir() and any(REMOTE_COLUMNS[0] in pq.read_schema(f).names for f in _data_files(root))


def held_days(path: str, days: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
    """Which of the ``(cluster, day)`` pairs the history at ``path`` holds any file of (all of them for a table
    that is not local: only a merge can tell)."""
    if not _is_local(path):
        return set(days)
    root = _local(path)
    return {
        (c, d) for c, d in days if (root / partition_dir(c, d)).is_dir() and _data_files(root / partition_dir(c, d))
    }


def _file_schema(remote: bool = False):
    """The Arrow schema of a history file as Spark writes it: `THROUGHPUT_SCHEMA` (and the remote meters' columns
    when ``remote``) less ``cluster`` (a directory), every column nullable, and Spark's own description of the row
    in the footer, so that Spark reads the same types from either writer's files."""
    import json

    import pyarrow as pa
    import pyspark
    from pyspark.sql.types import StructField, StructType

    fields = [f.with_nullable(True) for f in throughput_arrow(remote) if f.name != "cluster"]
    spark_fields = [*THROUGHPUT_SCHEMA.fields, *(REMOTE_SCHEMA.fields if remote else [])]
    spark_row = StructType([StructField(f.name, f.dataType, True) for f in spark_fields if f.name != "cluster"])
    metadata = {"org.apache.spark.version": pyspark.__version__,
                "org.apache.spark.sql.parquet.row.metadata": json.dumps(spark_row.jsonValue(), separators=(",", ":"))}
    return pa.schema(fields, metadata=metadata)


#: Rows per row group of a day file (pyarrow's default for ``write_table``, which the first writer of these files used).
DAY_ROW_GROUP = 1 << 20


def write_day(pieces: Sequence[str], directory: str, row_group: int = DAY_ROW_GROUP) -> int:
    """Write one day of the history from the Parquet files ``pieces`` (rows of one cluster and day, columns of
    `spark_jobs.history_contract.THROUGHPUT_ARROW` but ``cluster``) as ``directory/DAY_FILE``; return its rows.

    The rows are ordered as `day_order` orders them, as `stage_merged_days` orders a day; timestamps are INT96 and
    every column optional, as Spark writes them. Pieces already in that order that share no topic (the minute
    merge's buckets) are interleaved topic by topic, without a sort, one row group at a time: memory holds a row
    group and each piece's current batch, not the day (a day of R100's per-broker rows is some 80 M). Other pieces
    are read whole and sorted. The file appears whole (temporary name, then a rename), and its bytes depend only on
    its rows, not on how they were split into pieces.
    """
    import pyarrow.parquet as pq

    files = [pq.ParquetFile(p) for p in sorted(pieces)]
    schema = _file_schema(any(REMOTE_COLUMNS[0] in f.schema_arrow.names for f in files))
    runs = [
        run for i, f in enumerate(files)
        for run in _topic_runs(f.read(columns=["topic", "broker_id", "ts"]).combine_chunks(), i)
    ]
    runs.sort()
    os.makedirs(directory, exist_ok=True)
    temporary = os.path.join(directory, f".{DAY_FILE}.{uuid.uuid4().hex}.tmp")
    # dictionaries for the columns with few values (the byte counts rarely repeat): a file as small as Spark's
    dictionary = [c for c in schema.names if c not in ("bytes_in", "bytes_out", "messages_in", *REMOTE_METRICS)]
    try:
        with pq.ParquetWriter(temporary, schema, compression="zstd", use_dictionary=dictionary,
                              use_deprecated_int96_timestamps=True) as writer:
            if all(a[0] < b[0] for a, b in zip(runs, runs[1:])) and all(r[1] >= 0 for r in runs):
                rows = _interleaved(files, runs, schema, row_group)
            else:
                rows = _sorted(files, schema, row_group)
            written = 0
            for group in rows:
                writer.write_table(group, row_group_size=row_group)
                written += group.num_rows
        os.replace(temporary, os.path.join(directory, DAY_FILE))
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise
    return written


def _interleaved(files, runs, schema, row_group: int):
    """The rows of ``runs`` (``(topic, piece, start, stop)``, in output order; each piece's runs in its own order)
    in row groups of ``row_group`` rows, each one chunk, reading every piece once in batches."""
    import pyarrow as pa

    streams = [f.iter_batches(batch_size=1 << 16, columns=[c for c in schema.names if c in f.schema_arrow.names])
               for f in files]
    current = [schema.empty_table() for _ in files]  # per piece: the rows read but not yet taken
    pending, count = [], 0
    for _, i, start, stop in runs:
        need = stop - start
        while need:
            if not current[i].num_rows:
                current[i] = _conform(pa.Table.from_batches([next(streams[i])]), schema)
            take = min(need, current[i].num_rows)
            pending.append(current[i].slice(0, take))
            current[i] = current[i].slice(take)
            need, count = need - take, count + take
            while count >= row_group:
                table = pa.concat_tables(pending)
                yield table.slice(0, row_group).combine_chunks()
                pending, count = [table.slice(row_group)], count - row_group
    if count or not runs:
        yield pa.concat_tables(pending or [schema.empty_table()]).combine_chunks()


def _sorted(files, schema, row_group: int):
    """Every row of ``files`` in `day_order`, in row groups of ``row_group`` rows (the whole day in memory: pieces
    that are not the minute merge's)."""
    import pyarrow as pa

    table = pa.concat_tables([_conform(f.read(), schema) for f in files] or [schema.empty_table()])
    table = table.take(pa.array(day_order(table))).combine_chunks()
    for start in range(0, max(table.num_rows, 1), row_group):
        yield table.slice(start, row_group)


def _conform(rows, schema):
    """``rows`` as ``schema``'s columns, a remote meter's column they lack as null (a piece without tiered storage)."""
    import pyarrow as pa

    missing = [f for f in schema if f.name not in rows.column_names]
    for f in missing:
        rows = rows.append_column(f, pa.nulls(rows.num_rows, f.type))
    return rows.select(schema.names).cast(schema)


def _topic_runs(rows, piece: int) -> list[tuple[bytes, int, int, int]]:
    """``(topic as UTF-8, piece, start, stop)`` of each run of one topic's rows in ``rows`` (one chunk); the piece
    is -1 where a run is not in broker and time order."""
    import numpy as np
    import pyarrow.compute as pc

    if not rows.num_rows:
        return []
    topic = rows.column("topic").chunk(0)
    same = pc.equal(topic[1:], topic[:-1]).to_numpy(zero_copy_only=False)
    broker, ts = rows.column("broker_id").to_numpy(), rows.column("ts").cast("int64").to_numpy()
    after = (broker[1:] > broker[:-1]) | ((broker[1:] == broker[:-1]) & (ts[1:] > ts[:-1]))
    ordered = bool((after | ~same).all())
    starts = [0, *(np.flatnonzero(~same) + 1).tolist()]
    return [
        (topic[s].as_py().encode(), piece if ordered else -1, s, e)
        for s, e in zip(starts, [*starts[1:], rows.num_rows])
    ]


def _write_days(batches, *, jobs: list[tuple[list[str], str]]):
    import pyarrow as pa

    for batch in batches:
        for i in batch.column(0).to_pylist():
            pieces, directory = jobs[i]
            yield pa.record_batch([pa.array([write_day(pieces, directory)], pa.int64())], names=["rows"])


def stage_new_days(spark: SparkSession, pieces: str, days: Sequence[tuple[str, str]], work: str) -> None:
    """Stage the ``(cluster, day)`` partitions of the local table ``pieces`` (the minute merge's files, several per
    day) under ``work`` as days of the history, one file each (`write_day`), one Spark task per day.

    For days the history holds no row of: their rows go in as they are, with no merge (`stage_merged_days`).
    """
    from functools import partial

    root = _local(pieces)
    jobs = [([os.fspath(p) for p in _data_files(root / partition_dir(c, d))],
        os.path.join(os.path.abspath(_local(work)), partition_dir(c, d)))
            for c, d in sorted(days)]
    jobs = [(p, d) for p, d in jobs if p]
    if not jobs:
        return
    done = spark.range(0, len(jobs), 1, len(jobs)).mapInArrow(partial(_write_days, jobs=jobs), "rows long")
    done.agg(F.sum("rows")).collect()


def _write(rows: DataFrame, path: str) -> None:
    remote = [c for c in REMOTE_COLUMNS if c in rows.columns]
    out = rows.select(*THROUGHPUT_SCHEMA.fieldNames(), *remote, day_column(F.col("ts")).alias("dt"))
    (
        out.repartition("cluster", "dt")
        # the day first: a task holds several days, and a sort that does not start with the partition columns is
        # replaced by the writer's own sort on them alone, which leaves each day's rows in the order they arrived
        .sortWithinPartitions("cluster", "dt", *DAY_ORDER)
        .write.mode("overwrite")
        .option("partitionOverwriteMode", "dynamic")
        .partitionBy("cluster", "dt")
        .parquet(os.fspath(path))
    )


def stage_merged_days(spark: SparkSession, new: DataFrame, history: str, work: str) -> list[tuple[str, str]]:
    """Write the (cluster, day) partitions ``new`` touches, merged with the history's rows, under ``work``.

    ``new`` should be staged (it is read twice). Returns the touched ``(cluster, day)`` pairs.
    """
    rows = new.select("cluster", day_column(F.col("ts")).alias("dt")).distinct().collect()
    days = sorted((r["cluster"], r["dt"]) for r in rows)
    if not days:
        return []
    new_totals = _has_totals(new)
    if new_totals:
        new = _without_totals_of(new, new)
    merged = new
    clusters = sorted({c for c, _ in days})
    for cluster in clusters:
        touched = [d for c, d in days if c == cluster]
        old = read_history(spark, history, cluster=cluster, only_days=touched)
        kept = old.join(new.select(*HISTORY_KEY), list(HISTORY_KEY), "left_anti")
        if new_totals:
            kept = kept.join(new.where(_total()).select(*_MINUTE_KEY).distinct(), _MINUTE_KEY, "left_anti")
        if _has_totals(old):
            kept = _without_totals_of(kept, new)
        merged = merged.unionByName(kept, allowMissingColumns=True)  # the remote columns, where either has them
    _write(merged, work)
    return days


def _total() -> F.Column:
    return F.col("broker_id") == ALL_BROKERS


def _has_totals(rows: DataFrame) -> bool:
    """Whether ``rows`` hold any topic total (cheap on Parquet: row groups whose ``broker_id`` ≥ 0 are skipped)."""
    return bool(rows.where(_total()).limit(1).count())


def _without_totals_of(rows: DataFrame, by: DataFrame) -> DataFrame:
    """``rows`` less their topic totals of the minutes ``by`` has per-broker rows for."""
    brokers = by.where(~_total()).select(*_MINUTE_KEY).distinct()
    return rows.where(~_total()).unionByName(rows.where(_total()).join(brokers, _MINUTE_KEY, "left_anti"))


def commit_days(spark: SparkSession, work: str, history: str, days: Sequence[tuple[str, str]]) -> None:
    """Put the staged days into the history: one directory rename per day for a local table, Spark's dynamic
    partition overwrite for a remote one."""
    if not days:
        return
    if not _is_local(history) or not _is_local(work):
        _write(spark.read.option("basePath", work).parquet(work).drop("dt"), history)
        return
    root, staged = _local(history), _local(work)
    for cluster, day in days:
        source = staged / partition_dir(cluster, day)
        target = root / partition_dir(cluster, day)
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            old = target.with_name(f".{target.name}.{uuid.uuid4().hex}.old")
            os.replace(target, old)
            os.replace(source, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(source, target)
