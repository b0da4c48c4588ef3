"""How a reader that parses in Python workers stages its records: one task per file part, Parquet written by the worker.

The readers of `spark_jobs.query_range` and `spark_jobs.prom_text` parse their files in Python tasks with Arrow
and numpy and write the records (`spark_jobs.records.STAGED_SCHEMA`) straight to Parquet (`write_parquet`); Spark
reads them back with its vectorized reader. No record passes through the JVM row by row (turning Arrow batches
into Spark rows and writing them took three times the parsing's time). `run_tasks` runs one task per part;
`map_tasks` gives a reader's records as a lazy DataFrame instead (for a library caller). Every worker reader builds
its record batches with `staged_batch`, the one place the staged columns' order, types and plain-record values live.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa

from spark_jobs.metric_names import DEFAULT, MetricNames, RangeValues
from spark_jobs.records import STAGED_SCHEMA

__all__ = ["ReaderOptions", "write_parquet", "open_input", "file_size", "run_tasks", "map_tasks", "ROW_GROUP_ROWS",
           "staged_batch", "repeated_strings"]

#: Rows per row group of a staged Parquet file (Spark splits its reading by row group).
ROW_GROUP_ROWS = 1 << 19


@dataclass(frozen=True)
class ReaderOptions:
    """What a reader that parses in Python workers is told, the same for each of its files.

    Attributes
    ----------
    cluster : str
        The cluster every record belongs to.
    broker_map : mapping of str to int
        Label value (instance, pod, agent URL) → broker id.
    names : MetricNames
        The metric names and the topic and instance labels to read by (``--metric-names``).
    split_bytes : int, optional
        A file is parsed by one task per this many bytes (None: the reader's own `SPLIT_BYTES`).
    declared : RangeValues, optional
        query_range: what the values are when declared (``--range-values``); None: by each series' name.
    source : str, optional
        query_range: the records' source (None: ``prom_range``; a Prometheus pull's files are ``prometheus``).
    steps : bool
        query_range: convert each counter series in its file (`spark_jobs.query_range.parse_file`).
    buckets : int, optional
        query_range with ``steps``: write the per-minute increases in this many topic buckets beside the records.
    own_windows : bool
        query_range with ``steps``: the pre-aggregated windows are in no other file (a Prometheus pull's answers).
    """

    cluster: str
    broker_map: Mapping[str, int] = field(default_factory=dict)
    names: MetricNames = DEFAULT
    split_bytes: int | None = None
    declared: RangeValues | None = None
    source: str | None = None
    steps: bool = False
    buckets: int | None = None
    own_windows: bool = False


#: The Arrow type of each staged column (`spark_jobs.records.STAGED_SCHEMA`'s Spark types).
_ARROW = {"string": pa.string(), "bigint": pa.int64(), "int": pa.int32(), "double": pa.float64(), "boolean": pa.bool_()}
#: A plain record's value of a staged column a reader leaves out (any other: null): one input unit, not converted
#: in its file.
_PLAIN = {"n": 1, "counted": False, "inner": False, "fast_ok": False}


def staged_batch(rows: int, *, source: str, file: str, cluster: str, **columns: pa.Array) -> pa.RecordBatch:
    """``rows`` staged records (`spark_jobs.records.STAGED_SCHEMA`, its columns in order) from a worker reader's
    ``columns``: ``source``, ``file`` and ``cluster`` the same on every row; a column left out holds a plain
    record's value (``n`` 1, ``counted``/``inner``/``fast_ok`` false, anything else null).

    >>> b = staged_batch(2, source="prom_text", file="f", cluster="c", kind=pa.array(["counter", "ignored"]))
    >>> b.num_columns == len(STAGED_SCHEMA.fields), b.column("n").to_pylist(), b.column("cluster").to_pylist()
    (True, [1, 1], ['c', 'c'])
    """
    names = STAGED_SCHEMA.fieldNames()
    unknown = set(columns) - set(names)
    if unknown:
        raise ValueError(f"not staged columns: {sorted(unknown)}")
    every_row = np.array([rows])
    columns = {"source": repeated_strings([source], every_row), "file": repeated_strings([file], every_row),
               "cluster": repeated_strings([cluster], every_row), **columns}
    arrays = []
    for f in STAGED_SCHEMA.fields:
        kind = _ARROW[f.dataType.simpleString()]
        if f.name in columns:
            arrays.append(columns[f.name])
        elif f.name in _PLAIN:
            arrays.append(pa.array(np.full(rows, _PLAIN[f.name]), kind))
        else:
            arrays.append(pa.nulls(rows, kind))
    return pa.RecordBatch.from_arrays(arrays, names=names)


def repeated_strings(texts: list[str | None], counts: np.ndarray) -> pa.Array:
    """A string array of each of ``texts`` repeated its count of times (None: nulls), built from its buffers:
    as ``take`` would give it, without a look-up per row (that took 70 ns a row for a file's path).

    >>> repeated_strings(["a", None, "bc"], np.array([2, 1, 2])).to_pylist()
    ['a', 'a', None, 'bc', 'bc']
    """
    encoded = [b"" if t is None else t.encode() for t in texts]
    sizes = np.repeat(np.array([len(e) for e in encoded], np.int64), counts)
    rows = sizes.size
    offsets = np.zeros(rows + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    if offsets[-1] >= 1 << 31:  # beyond a string array's 32-bit offsets: as take would, Arrow says so
        return pa.array(texts, pa.string()).take(pa.array(np.repeat(np.arange(len(texts)), counts)))
    data = b"".join(e * c for e, c in zip(encoded, counts.tolist()))
    nulls = np.repeat(np.array([t is None for t in texts]), counts)
    validity = pa.py_buffer(np.packbits(~nulls, bitorder="little")) if nulls.any() else None
    return pa.StringArray.from_buffers(rows, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data), validity,
                                       int(nulls.sum()))


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


def run_tasks(spark: Any, parts: Sequence[tuple[str, tuple[int, int, int] | None]], worker: Callable[..., int],
    **options: Any) -> None:
    """Run ``worker(i, path, part, **options)`` (it returns the rows it wrote) for each ``(path, part)`` of ``parts``
    in a task of its own (in that order: put the largest first), ``part`` being ``(index, start, end)`` or None
    for the whole file."""
    # each task's one count row comes back as it is: summing them in Spark took a shuffle and a second stage
    map_tasks(spark, parts, partial(_count, worker=worker), "rows long", **options).collect()


def map_tasks(spark: Any, parts: Sequence[tuple[str, tuple[int, int, int] | None]],
    worker: Callable[..., Iterator[pa.RecordBatch]],
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


def _count(i: int, path: str, part: tuple[int, int, int] | None, *, worker: Callable[..., int],
    **options: Any) -> Iterator[pa.RecordBatch]:
    yield pa.record_batch([pa.array([worker(i, path, part, **options)], pa.int64())], names=["rows"])


def _task(
    batches: Iterator[pa.RecordBatch], *, parts: Sequence[tuple[str, tuple[int, int, int] | None]],
    worker: Callable[..., Iterator[pa.RecordBatch]], options: dict[str, Any],
) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for i in batch.column("id").to_pylist():
            yield from worker(i, *parts[i], **options)
