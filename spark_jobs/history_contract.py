"""The history's contract, in one place: what every writer and reader of the normalized per-minute table agrees on.

* **Schemas, side by side.** `DELTA_FIELDS` (one increase: a metric's window of one series, credited to the minute
  it starts in), `STEPS_SCHEMA` (a worker's per-minute increases of one topic bucket), and the normalized row
  itself: `THROUGHPUT_ARROW` as Arrow writes it, `THROUGHPUT_SCHEMA` the same columns as Spark reads them (derived
  from it: one definition), `OPTIONAL_COLUMNS` that older files lack and `HISTORY_KEY`, a row's key; the remote
  meters' columns (`REMOTE_METRICS`, `REMOTE_ARROW`), in a file only where one of its rows has one (`throughput_arrow`).
* **Flags and limits.** `FLAG_RESET`, `FLAG_GAP`, `FLAG_PARTIAL` and the windows that set them (`GAP_MS`,
  `PARTIAL_MS`); `ALL_BROKERS`, the ``broker_id`` of a topic's total.
* **Partition directories and row order.** ``cluster=<c>/dt=<YYYY-MM-DD>/`` escaped as Spark escapes them
  (`partition_dir`, `partition_value`, `partition_key`, `day_dirs`), a day's name (`day_names`, `day_column`), its
  data file (`DAY_FILE`) and its rows' order (`DAY_ORDER`, `day_order`).
* **Steps files.** Where the query_range workers leave their per-minute increases (`STEPS_DIR`), how they are
  named (`steps_file`, `steps_bucket`, `steps_files`) and bucketed by topic (`bucket_of`, `bucket_count`).

A missing meter is null, never 0, in every metric column: a minute holds a metric only where a series of it
had a window starting in that minute (`spark_jobs.minute_merge.pivot_minutes`).
"""

from __future__ import annotations

import glob
import os
import re
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.metric_names import METRICS, REMOTE_METRICS  # each in the order of its columns

__all__ = [
    "DELTA_FIELDS",
    "STEPS_SCHEMA",
    "THROUGHPUT_ARROW",
    "THROUGHPUT_SCHEMA",
    "OPTIONAL_COLUMNS",
    "HISTORY_KEY",
    "METRICS",
    "REMOTE_METRICS",
    "REMOTE_ARROW",
    "REMOTE_COLUMNS",
    "REMOTE_SCHEMA",
    "throughput_arrow",
    "spark_type",
    "FLAG_RESET",
    "FLAG_GAP",
    "FLAG_PARTIAL",
    "GAP_MS",
    "PARTIAL_MS",
    "ALL_BROKERS",
    "partition_dir",
    "partition_value",
    "partition_key",
    "day_dirs",
    "day_names",
    "day_column",
    "DAY_FILE",
    "DAY_ORDER",
    "day_order",
    "STEPS_DIR",
    "BUCKET_BYTES",
    "bucket_of",
    "bucket_count",
    "steps_file",
    "steps_bucket",
    "steps_files",
]


#: The columns of an increase (`spark_jobs.rates.minute_deltas`), as Arrow types.
DELTA_FIELDS = pa.schema(
    [
        ("cluster", pa.string()),
        ("broker_id", pa.int32()),
        ("topic", pa.string()),
        ("metric", pa.string()),
        ("source", pa.string()),
        ("reset", pa.bool_()),
        ("delta", pa.float64()),
        ("minute_ms", pa.int64()),
        ("span_ms", pa.int64()),
    ]
)
#: A worker's file of per-minute increases of one bucket (`steps_file`): per (broker, topic, metric, minute) the
#: increases summed in the file and their windows' summed length (`DELTA_FIELDS`' ``delta`` and ``span_ms``), each
#: series' rows together; the file's cluster and source are its schema's metadata (``cluster``, ``source``).
#: Strings are dictionary encoded, so that `spark_jobs.minute_merge.merge_buckets` groups rows by integers.
STEPS_SCHEMA = pa.schema(
    [
        ("broker_id", pa.int32()),
        ("topic", pa.dictionary(pa.int32(), pa.string())),
        ("metric", pa.dictionary(pa.int8(), pa.string())),
        ("minute_ms", pa.int64()),
        ("delta", pa.float64()),
        ("span_ms", pa.int64()),
    ]
)
#: The normalized per-minute table (`kafka-formats` README, ``throughput_minute``) as Arrow writes it; the byte
#: counts are whole bytes (int64) from the increases' sums to the files. `spark_jobs.rates` says what each means.
THROUGHPUT_ARROW = pa.schema(
    [
        pa.field("cluster", pa.string(), False),
        pa.field("ts", pa.timestamp("us", tz="UTC"), False),
        pa.field("interval_s", pa.int32(), False),
        pa.field("broker_id", pa.int32(), False),
        pa.field("topic", pa.string(), False),
        pa.field("bytes_in", pa.int64()),
        pa.field("bytes_out", pa.int64()),
        pa.field("messages_in", pa.int64()),
        pa.field("bytes_out_interval_s", pa.int32()),
        pa.field("messages_in_interval_s", pa.int32()),
        pa.field("source", pa.string(), False),
        pa.field("flags", pa.int32(), False),
    ]
)

#: The columns of the remote meters (`REMOTE_METRICS`: Kafka's tiered-storage ``RemoteCopyBytesPerSec`` and
#: ``RemoteFetchBytesPerSec``, KIP-405, bytes per minute like `METRICS`), after `THROUGHPUT_ARROW`'s: each meter's
#: bytes and its window where it differs from ``interval_s`` (as ``bytes_out_interval_s``). Only a file with a row of
#: a remote meter has them, so a history without tiered storage keeps its bytes; a file without them reads them as
#: null (unmeasured).
REMOTE_ARROW = pa.schema(
    [pa.field(m, pa.int64()) for m in REMOTE_METRICS]
    + [pa.field(m + "_interval_s", pa.int32()) for m in REMOTE_METRICS]
)
REMOTE_COLUMNS = tuple(REMOTE_ARROW.names)


def throughput_arrow(remote: bool) -> pa.Schema:
    """The normalized row's Arrow schema: `THROUGHPUT_ARROW`, with the `REMOTE_ARROW` columns when ``remote``."""
    return pa.schema([*THROUGHPUT_ARROW, *REMOTE_ARROW]) if remote else THROUGHPUT_ARROW


_SPARK_TYPES = {
    pa.string(): T.StringType(), pa.int32(): T.IntegerType(), pa.int64(): T.LongType(), pa.float64(): T.DoubleType(),
    pa.bool_(): T.BooleanType(), pa.timestamp("us", tz="UTC"): T.TimestampType(),
}


def spark_type(arrow: pa.DataType) -> T.DataType:
    """The Spark type Arrow's ``arrow`` is exchanged as (a dictionary as its values).

    >>> spark_type(pa.int32()), spark_type(pa.dictionary(pa.int8(), pa.string()))
    (IntegerType(), StringType())
    """
    return _SPARK_TYPES[arrow.value_type if pa.types.is_dictionary(arrow) else arrow]


#: `THROUGHPUT_ARROW` as Spark reads and writes it.
THROUGHPUT_SCHEMA = T.StructType([T.StructField(f.name, spark_type(f.type), f.nullable) for f in THROUGHPUT_ARROW])
#: `REMOTE_ARROW` as Spark reads it.
REMOTE_SCHEMA = T.StructType([T.StructField(f.name, spark_type(f.type), True) for f in REMOTE_ARROW])
#: Columns of `THROUGHPUT_SCHEMA` that history files written before them lack (read as null).
OPTIONAL_COLUMNS = ("bytes_out_interval_s", "messages_in_interval_s")
#: The columns that identify a row: one row per cluster, broker, topic and minute.
HISTORY_KEY = ("cluster", "broker_id", "topic", "ts")

#: Flag bits of a normalized row: a counter reset among its windows, a gap (its longest window over `GAP_MS`), a
#: partial minute (its longest window under `PARTIAL_MS`).
FLAG_RESET, FLAG_GAP, FLAG_PARTIAL = 1, 2, 4
#: A window longer than this spans missing scrapes (1.5 minutes).
GAP_MS = 90_000
#: A minute covered for less than this is a partial window.
PARTIAL_MS = 45_000
#: The ``broker_id`` of a row that is a topic's total over all its brokers (a per-topic series, such as
#: ``sum by (topic) (rate(...))``, which has no instance label): Kafka's own "no broker" id. The history holds a
#: topic's minute either per broker or as such a total, never both (`spark_jobs.history.stage_merged_days`);
#: the profile sums a minute's rows over brokers, so a total counts once as it is.
ALL_BROKERS = -1

#: Characters Spark escapes as ``%XX`` in a partition directory's value (``ExternalCatalogUtils.escapePathName``).
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_ESCAPED = frozenset([chr(c) for c in range(1, 0x20)] + list('"#%\'*/:=?\\\x7f{[]^'))


def partition_dir(cluster: str, day: str) -> str:
    """The directory of a (cluster, day) partition inside the table, its values escaped as Spark escapes them.

    >>> partition_dir("prod", "2026-11-02"), partition_dir("eu/prod:1", "2026-11-02")
    ('cluster=prod/dt=2026-11-02', 'cluster=eu%2Fprod%3A1/dt=2026-11-02')
    """
    escaped = "".join(f"%{ord(ch):02X}" if ch in _ESCAPED else ch for ch in cluster)
    return f"cluster={escaped}/dt={day}"


def partition_value(name: str) -> str:
    """A ``key=value`` directory's value, unescaped as Spark does (`partition_dir` escapes it).

    >>> partition_value("cluster=eu%2Fprod%3A1")
    'eu/prod:1'
    """
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), name.split("=", 1)[1])


def partition_key(name: str) -> str | None:
    """The column a ``key=value`` directory partitions by (None for any other name).

    >>> partition_key("dt=2026-11-02"), partition_key("_steps")
    ('dt', None)
    """
    key, sep, _ = name.partition("=")
    return key if sep else None


def day_dirs(root: Path, cluster: str) -> dict[str, Path]:
    """The ``dt`` directories of ``cluster`` under the local table ``root``, by day (none when it is no directory)."""
    out: dict[str, Path] = {}
    if not root.is_dir():
        return out
    for c in sorted(root.iterdir()):
        if c.is_dir() and partition_key(c.name) == "cluster" and partition_value(c.name) == cluster:
            days = (d for d in sorted(c.iterdir()) if d.is_dir() and partition_key(d.name) == "dt")
            out.update({partition_value(d.name): d for d in days})
    return out


def day_names(days: np.ndarray) -> np.ndarray:
    """Days since the Unix epoch as the history's ``dt`` values (``YYYY-MM-DD``, the UTC date `day_column` gives).

    >>> day_names(np.array([0, 20_394])).tolist()
    ['1970-01-01', '2025-11-02']
    """
    return days.astype("datetime64[D]").astype(str)


def day_column(ts: F.Column) -> F.Column:
    """The ``dt`` partition value of a row in Spark: its UTC date as ``YYYY-MM-DD`` (`day_names`)."""
    return F.date_format(ts, "yyyy-MM-dd")


#: The data file of a day written by `spark_jobs.history.write_day` (Spark's own files carry its task number and
#: a random write id).
DAY_FILE = "part-00000.c000.zstd.parquet"
#: The order of a day's rows (after cluster and ``dt``): topic by UTF-8 bytes, as Spark orders strings, broker, time.
DAY_ORDER = ("topic", "broker_id", "ts")


def day_order(rows: pa.Table, *leading: str) -> np.ndarray:
    """Indices that order Arrow ``rows`` by the ``leading`` integer columns, then in `DAY_ORDER`.

    >>> day_order(pa.table({"topic": ["é", "z", "a", "a"], "broker_id": [1, 1, 2, 1], "ts": [0, 0, 0, 5]})).tolist()
    [3, 2, 1, 0]
    """
    import pyarrow.compute as pc

    topics = pc.dictionary_encode(rows.column("topic")).combine_chunks()
    names = topics.dictionary.to_pylist()
    rank = np.empty(len(names), np.int64)
    rank[sorted(range(len(names)), key=lambda i: names[i].encode())] = np.arange(len(names))
    keys = [
        rows.column("ts").cast(pa.int64()).to_numpy(),
        rows.column("broker_id").to_numpy(),
        rank[topics.indices.to_numpy(zero_copy_only=False)],
        *[rows.column(c).to_numpy() for c in reversed(leading)],
    ]
    return np.lexsort(keys)


#: The folder of the steps files inside a records directory: Spark's file listing skips a name starting with ``_``,
#: so reading the records never reads them.
STEPS_DIR = "_steps"
#: Input bytes per bucket: a bucket's increases are summed in one task's memory (about 2.5 M rows).
BUCKET_BYTES = 64 << 20


def bucket_of(topic: str, buckets: int) -> int:
    """The bucket of a topic's rows: CRC-32 of its UTF-8 name modulo ``buckets`` (Spark's ``pmod(crc32(topic), n)``).

    >>> bucket_of("orders", 8), bucket_of("orders", 1)
    (6, 0)
    """
    return zlib.crc32(topic.encode()) % buckets


def bucket_count(paths: Sequence[str], parallelism: int) -> int:
    """Buckets for the raw input files ``paths``: one per `BUCKET_BYTES` of them, at least ``parallelism``.

    >>> bucket_count([], 2), bucket_count(["/nonexistent"], 8)
    (2, 8)
    """
    size = 0
    for path in paths:
        try:
            size += os.path.getsize(path)
        except OSError:
            pass  # a remote file: its reader finds it
    return max(parallelism, 1, -(-size // BUCKET_BYTES))


def steps_file(prefix: str, bucket: int) -> str:
    """The name of a worker's file of per-minute increases of one bucket (beside its records file ``prefix``).

    >>> steps_file("prom_range-00003", 12)
    'prom_range-00003-steps-b0012.parquet'
    """
    return f"{prefix}-steps-b{bucket:04d}.parquet"


def steps_bucket(path: str) -> int:
    """The bucket of a `steps_file`.

    >>> steps_bucket("/r/_steps/prom_range-00003-steps-b0012.parquet")
    12
    """
    return int(path.rsplit("-steps-b", 1)[1].split(".")[0])


def steps_files(directory: str) -> list[str]:
    """The workers' files of per-minute increases beside the records in ``directory`` (in its `STEPS_DIR`), sorted."""
    return sorted(glob.glob(os.path.join(glob.escape(directory), STEPS_DIR, "*-steps-b*.parquet")))
