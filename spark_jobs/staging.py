"""How a reader that parses in Python workers stages its records: one task per file part, Parquet written by the worker.

The readers of `spark_jobs.query_range` and `spark_jobs.prom_text` parse their files in Python tasks with Arrow
and numpy and write the records (`spark_jobs.records.STAGED_SCHEMA`) straight to Parquet (`write_parquet`); Spark
reads them back with its vectorized reader. No record passes through the JVM row by row (turning Arrow batches
into Spark rows and writing them took three times the parsing's time). `run_tasks` runs one task per part;
`map_tasks` gives a reader's records as a lazy DataFrame instead (for a library caller).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from typing import Any

import pyarrow as pa

__all__ = ["write_parquet", "open_input", "file_size", "run_tasks", "map_tasks", "ROW_GROUP_ROWS"]

#: Rows per row group of a staged Parquet file (Spark splits its reading by row group).
ROW_GROUP_ROWS = 1 << 19


def write_parquet(batches: Iterable[pa.RecordBatch], target: str) -> int:
    """Write ``batches`` to the Parquet file ``target`` (zstd, row groups of about `ROW_GROUP_ROWS` rows);
    return the rows written. No file is made for no rows.

    The file appears whole or not at all (written under a hidden temporary name, then renamed), so a task
    that Spark retries replaces its earlier attempt's file instead of adding to it.
    """
    import pyarrow.parquet as pq

    directory, name = os.path.split(target)
    os.makedirs(directory, exist_ok=True)
    temporary = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    writer, pending, rows = None, [], 0
    try:
        for batch in batches:
            if writer is None:
                writer = pq.ParquetWriter(temporary, batch.schema, compression="zstd")
            pending.append(batch)
            rows += batch.num_rows
            if sum(b.num_rows for b in pending) >= ROW_GROUP_ROWS:  # a handful of batches at most
                writer.write_table(pa.Table.from_batches(pending), row_group_size=ROW_GROUP_ROWS)
                pending = []
        if writer is not None:
            if pending:
                writer.write_table(pa.Table.from_batches(pending), row_group_size=ROW_GROUP_ROWS)
            writer.close()
            os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
    return rows


def open_input(path: str):
    """A binary stream of a local path (``file:`` URIs too) or of a URI Arrow's file systems know (``hdfs://``, ``s3://``)."""
    if "://" in path and not path.startswith("file:"):
        from pyarrow import fs

        filesystem, inner = fs.FileSystem.from_uri(path)
        return filesystem.open_input_stream(inner)
    return open(path.removeprefix("file://").removeprefix("file:"), "rb")


def file_size(path: str) -> int:
    """The size of a local file in bytes; 0 for a URI or a file that cannot be read."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def run_tasks(spark: Any, parts: Sequence[tuple[str, tuple[int, int, int] | None]], worker: Callable[..., int], **options: Any) -> None:
    """Run ``worker(i, path, part, **options)`` (it returns the rows it wrote) for each ``(path, part)`` of ``parts``
    in a task of its own (in that order: put the largest first), ``part`` being ``(index, start, end)`` or None
    for the whole file."""
    # each task's one count row comes back as it is: summing them in Spark took a shuffle and a second stage
    map_tasks(spark, parts, partial(_count, worker=worker), "rows long", **options).collect()


def map_tasks(spark: Any, parts: Sequence[tuple[str, tuple[int, int, int] | None]], worker: Callable[..., Iterator[pa.RecordBatch]],
              schema: Any, **options: Any):
    """The DataFrame (``schema``) of the batches ``worker(i, path, part, **options)`` yields for each ``(path, part)``
    of ``parts``, one task each (see `run_tasks`); lazy, like any DataFrame.

    Task ``i`` is partition ``i`` of ``spark.range(n, numPartitions=n)`` (one number each) and finds its part in
    the list it was sent: no sampling job and no shuffle to spread the parts, as a range-partitioned table of them took.
    """
    listed = list(parts)
    return spark.range(0, len(listed), 1, max(1, len(listed))).mapInArrow(
        partial(_task, parts=listed, worker=worker, options=options), schema
    )


def _count(i: int, path: str, part: tuple[int, int, int] | None, *, worker: Callable[..., int], **options: Any) -> Iterator[pa.RecordBatch]:
    yield pa.record_batch([pa.array([worker(i, path, part, **options)], pa.int64())], names=["rows"])


def _task(
    batches: Iterator[pa.RecordBatch], *, parts: Sequence[tuple[str, tuple[int, int, int] | None]],
    worker: Callable[..., Iterator[pa.RecordBatch]], options: dict[str, Any],
) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for i in batch.column("id").to_pylist():
            yield from worker(i, *parts[i], **options)
