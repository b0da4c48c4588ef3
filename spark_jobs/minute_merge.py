"""Per-minute increases → the normalized per-minute rows, in Arrow and numpy: the one home of that pivot.

`spark_jobs.rates` turns samples into increases (``deltas``: one row per window, credited to the minute it
starts in, for one metric of one series); `pivot_minutes` sums them per (cluster, broker, topic, minute) with
the three metrics pivoted into one `THROUGHPUT_SCHEMA` row, each metric keeping its own window, and marks the
later minutes a longer bytes-in window covers (`spark_jobs.rates` says what each column means).

Where the rows are summed: a query_range worker that converts its series in the file writes their per-minute
increases already split into `buckets <bucket_of>` by topic (`spark_jobs.query_range`), so that `merge_buckets`
sums each bucket in one Python task, with Arrow's C++ hash aggregation, next to the few increases Spark's
sample-by-sample path adds (the steps across files, resets, pre-aggregated windows), and writes the rows to
Parquet itself, per (cluster, day) in the history's layout: a day the history holds no row of becomes a history
day from these files alone (`spark_jobs.history.stage_new_days`), with no Spark sort. No per-minute row goes
through the JVM's shuffle or a string-keyed Spark aggregation, which took more than half of a large ingest before (docs/benchmarks/ingest.md). `spark_jobs.rates.minute_rows`
applies the same pivot through a Spark shuffle where a DataFrame is wanted.
"""

from __future__ import annotations

import glob
import os
import zlib
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "ALL_BROKERS",
    "DELTA_FIELDS",
    "day_order",
    "partition_dir",
    "without_covered_totals",
    "THROUGHPUT_ARROW",
    "bucket_of",
    "bucket_count",
    "pivot_minutes",
    "merge_buckets",
    "steps_file",
    "steps_files",
    "BUCKET_BYTES",
    "FLAG_RESET",
    "FLAG_GAP",
    "FLAG_PARTIAL",
    "GAP_MS",
    "PARTIAL_MS",
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
#: `spark_jobs.rates.THROUGHPUT_SCHEMA` as Arrow writes it for Spark.
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
#: Flag bits of a normalized row (re-exported by `spark_jobs.rates`).
FLAG_RESET, FLAG_GAP, FLAG_PARTIAL = 1, 2, 4
#: The ``broker_id`` of a row that is a topic's total over all its brokers (a per-topic series, such as
#: ``sum by (topic) (rate(...))``, which has no instance label): Kafka's own "no broker" id. The history holds a
#: topic's minute either per broker or as such a total, never both (`spark_jobs.history.stage_merged_days`);
#: the profile sums a minute's rows over brokers, so a total counts once as it is.
ALL_BROKERS = -1
#: A window longer than this spans missing scrapes (1.5 minutes).
GAP_MS = 90_000
#: A minute covered for less than this is a partial window.
PARTIAL_MS = 45_000
#: The pseudo-metric of a minute a longer bytes-in window covers.
_COVERED = "bytes_in_covered"
_METRICS = ("bytes_in", "bytes_out", "messages_in")
_KEYS = ["cluster", "broker_id", "topic", "minute_ms"]
#: The columns of a topic's minute in the history (per broker or `ALL_BROKERS`).
_TOPIC_MINUTE = ["cluster", "topic", "ts"]
_MINUTE_MS = 60_000
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


def steps_files(directory: str) -> list[str]:
    """The workers' files of per-minute increases under ``directory`` (`steps_file`), sorted."""
    return sorted(glob.glob(os.path.join(glob.escape(directory), "*-steps-b*.parquet")))


def steps_file(prefix: str, bucket: int) -> str:
    """The name of a worker's file of per-minute increases of one bucket (beside its records file ``prefix``).

    >>> steps_file("prom_range-00003", 12)
    'prom_range-00003-steps-b0012.parquet'
    """
    return f"{prefix}-steps-b{bucket:04d}.parquet"


def _half_up(x: np.ndarray) -> np.ndarray:
    """Round half away from zero, as Spark's ``round`` (exact: ``x - floor(x)`` is exact below 2**52).

    >>> _half_up(np.array([0.5, 1.49999999999999, 2.5, 0.49999999999999994, -2.5])).tolist()
    [1.0, 1.0, 3.0, 0.0, -3.0]
    """
    a = np.abs(x)
    low = np.floor(a)
    return np.copysign(low + (a - low >= 0.5), x)


def _covered(deltas: pa.Table) -> pa.Table:
    """The later minutes each bytes-in window longer than a minute covers, as rows without a metric's value."""
    span = deltas.column("span_ms").to_numpy(zero_copy_only=False)
    metric = deltas.column("metric")
    long = np.flatnonzero(pc.and_(pc.equal(metric, "bytes_in"), pc.greater(deltas.column("span_ms"), _MINUTE_MS)).fill_null(False).to_numpy(zero_copy_only=False))
    if not long.size:
        return deltas.schema.empty_table()
    counts = (span[long] - 1) // _MINUTE_MS  # minutes in [minute + 1 min, minute + span - 1 ms]
    which = np.repeat(long, counts)
    step = np.arange(which.size) - np.repeat(np.cumsum(counts) - counts, counts) + 1
    minute = deltas.column("minute_ms").to_numpy(zero_copy_only=False)[which] + step * _MINUTE_MS
    n = which.size
    take = pa.array(which)
    return pa.table(
        {
            "cluster": deltas.column("cluster").take(take),
            "broker_id": deltas.column("broker_id").take(take),
            "topic": deltas.column("topic").take(take),
            "metric": pa.array(np.full(n, _COVERED), pa.string()),
            "source": pa.nulls(n, pa.string()),
            "reset": pa.array(np.zeros(n, bool)),
            "delta": pa.nulls(n, pa.float64()),
            "minute_ms": pa.array(minute, pa.int64()),
            "span_ms": pa.nulls(n, pa.int64()),
        },
        schema=deltas.schema,
    )


def pivot_minutes(deltas: pa.Table) -> pa.Table:
    """Sum increases (`DELTA_FIELDS`) into the normalized per-minute rows (`THROUGHPUT_ARROW`).

    Per (cluster, broker, topic, minute) and metric: the bytes summed and the windows' lengths summed; a
    metric's window is its summed length in whole seconds (half up, at least 1), ``interval_s`` bytes-in's
    (else the longest of the row's), the other two only where they differ from it. ``bytes_in`` is null on a
    minute a longer bytes-in window covers, else 0 when the row has none. Flags: a reset among the row's
    windows, a gap (longest window > 90 s), a partial minute (< 45 s). The row's source is the least of its
    windows' sources. Rows in the order their keys first appear; sums in input order.

    Examples
    --------
    >>> d = pa.table({"cluster": ["c"] * 5, "broker_id": pa.array([1] * 5, pa.int32()), "topic": ["t"] * 5,
    ...               "metric": ["bytes_in", "bytes_out", "bytes_in", "bytes_out", "bytes_out"],
    ...               "source": ["a", "b", "a", "a", "a"], "reset": [False, False, True, False, False],
    ...               "delta": [10.0, 4.0, 5.0, 7.0, 2.5], "minute_ms": [0, 0, 60_000, 120_000, 300_000],
    ...               "span_ms": [60_000, 61_000, 180_000, 60_000, 60_000]}, schema=DELTA_FIELDS)
    >>> [(r["ts"].minute, r["bytes_in"], r["interval_s"], r["bytes_out"], r["bytes_out_interval_s"], r["source"], r["flags"])
    ...  for r in pivot_minutes(d).to_pylist()]
    [(0, 10, 60, 4, 61, 'a', 0), (1, 5, 180, None, None, 'a', 3), (2, None, 60, 7, None, 'a', 0), (5, 0, 60, 3, None, 'a', 0)]
    """
    deltas = deltas.select(DELTA_FIELDS.names).cast(DELTA_FIELDS)
    deltas = deltas.filter(pc.is_valid(deltas.column("metric")))
    deltas = pa.concat_tables([deltas, _covered(deltas)])
    metric = deltas.column("metric")
    sources = sorted(s for s in pc.unique(deltas.column("source")).to_pylist() if s is not None)
    columns = {k: deltas.column(k) for k in _KEYS}
    for m in _METRICS:
        mine = pc.equal(metric, m)
        columns[f"{m}_span"] = pc.if_else(mine, deltas.column("span_ms"), None)
        columns[m] = pc.if_else(mine, deltas.column("delta"), None)
    columns["reset"] = pc.cast(deltas.column("reset"), pa.int8())
    columns["rank"] = pc.index_in(deltas.column("source"), value_set=pa.array(sources, pa.string()))
    columns["covered"] = pc.cast(pc.equal(metric, _COVERED), pa.int8())
    aggregations = [(f"{m}_span", "sum") for m in _METRICS] + [(m, "sum") for m in _METRICS]
    aggregations += [("reset", "max"), ("rank", "min"), ("covered", "max")]
    rows = pa.table(columns).group_by(_KEYS, use_threads=False).aggregate(aggregations)

    def values(name: str) -> tuple[np.ndarray, np.ndarray]:
        col = rows.column(name)
        return col.is_null().to_numpy(zero_copy_only=False), col.fill_null(0).to_numpy(zero_copy_only=False)

    spans = {m: values(f"{m}_span_sum") for m in _METRICS}
    span = np.max([np.where(null, -1, s) for null, s in spans.values()], axis=0)
    keep = span >= 0  # not a minute only covered
    rows, span = rows.filter(pa.array(keep)), span[keep]
    spans = {m: (null[keep], s[keep]) for m, (null, s) in spans.items()}
    reset = rows.column("reset_max").to_numpy(zero_copy_only=False).astype(np.int32)
    flags = reset * FLAG_RESET + np.where(span > GAP_MS, FLAG_GAP, 0) + np.where(span < PARTIAL_MS, FLAG_PARTIAL, 0)
    seconds = {m: (null, np.maximum(_half_up(s / 1000), 1).astype(np.int32)) for m, (null, s) in spans.items()}
    in_null, in_seconds = seconds["bytes_in"]
    interval = np.where(in_null, np.maximum(_half_up(span / 1000), 1).astype(np.int32), in_seconds)
    out: dict[str, pa.Array] = {
        "cluster": rows.column("cluster"),
        "ts": pa.array(rows.column("minute_ms").to_numpy(zero_copy_only=False) * 1000, pa.timestamp("us", tz="UTC")),
        "interval_s": pa.array(interval, pa.int32()),
        "broker_id": rows.column("broker_id"),
        "topic": rows.column("topic"),
    }
    covered = rows.column("covered_max").to_numpy(zero_copy_only=False) > 0
    for m in _METRICS:
        null, total = values(f"{m}_sum")
        rounded = _half_up(total).astype(np.int64)
        if m == "bytes_in":
            out[m] = pa.array(np.where(null, 0, rounded), pa.int64(), mask=null & covered)
        else:
            out[m] = pa.array(rounded, pa.int64(), mask=null)
    for m in _METRICS[1:]:
        null, s = seconds[m]
        out[f"{m}_interval_s"] = pa.array(s, pa.int32(), mask=null | (s == interval))
    out["source"] = pa.array(sources, pa.string()).take(rows.column("rank_min"))
    out["flags"] = pa.array(flags, pa.int32())
    return pa.table(out, schema=THROUGHPUT_ARROW)


def pivot_batches(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """`pivot_minutes` over all of a Spark partition's increases (every key's rows in that partition)."""
    batches = list(batches)
    if batches:
        yield from pivot_minutes(pa.Table.from_batches(batches)).to_batches()


def _read_steps(path: str) -> pa.Table:
    """A worker's per-minute increases file (`spark_jobs.records.STAGED_SCHEMA` rows of kind ``steps``) as deltas."""
    import pyarrow.parquet as pq

    t = pq.read_table(path, columns=["cluster", "broker_id", "topic", "metric", "source", "ts_ms", "value", "span_ms"])
    return pa.table(
        {
            "cluster": t.column("cluster"), "broker_id": t.column("broker_id"), "topic": t.column("topic"),
            "metric": t.column("metric"), "source": t.column("source"), "reset": pa.array(np.zeros(t.num_rows, bool)),
            "delta": t.column("value"), "minute_ms": t.column("ts_ms"), "span_ms": t.column("span_ms"),
        },
        schema=DELTA_FIELDS,
    )


_DAY_US = 86_400_000_000
#: What a minute-merge task reports per bucket: rows written per (cluster, day, source).
_WRITTEN = pa.schema([("cluster", pa.string()), ("dt", pa.string()), ("source", pa.string()), ("rows", pa.int64())])


def _day_names(days: np.ndarray) -> np.ndarray:
    """Days since the Unix epoch as the history's ``dt`` values (``YYYY-MM-DD``, the UTC date `spark_jobs.history.day_column` gives).

    >>> _day_names(np.array([0, 20_394])).tolist()
    ['1970-01-01', '2025-11-02']
    """
    return days.astype("datetime64[D]").astype(str)


#: Characters Spark escapes as ``%XX`` in a partition directory's value (``ExternalCatalogUtils.escapePathName``).
_ESCAPED = frozenset([chr(c) for c in range(1, 0x20)] + list('"#%\'*/:=?\\\x7f{[]^'))


def partition_dir(cluster: str, day: str) -> str:
    """The directory of a (cluster, day) partition inside the table, its values escaped as Spark escapes them.

    >>> partition_dir("prod", "2026-11-02"), partition_dir("eu/prod:1", "2026-11-02")
    ('cluster=prod/dt=2026-11-02', 'cluster=eu%2Fprod%3A1/dt=2026-11-02')
    """
    escaped = "".join(f"%{ord(ch):02X}" if ch in _ESCAPED else ch for ch in cluster)
    return f"cluster={escaped}/dt={day}"


def day_order(rows, *leading: str):
    """Indices that order Arrow ``rows`` by the ``leading`` integer columns, then as a history day is ordered: topic
    (by UTF-8 bytes, as Spark orders strings), broker, time.

    >>> import pyarrow as pa
    >>> day_order(pa.table({"topic": ["é", "z", "a", "a"], "broker_id": [1, 1, 2, 1], "ts": [0, 0, 0, 5]})).tolist()
    [3, 2, 1, 0]
    """
    import numpy as np
    import pyarrow as pa
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


def without_covered_totals(rows):
    """Arrow rows (a `pyarrow.Table` with the history's columns) less the topic totals of the minutes they have
    per-broker rows for, where a Python task holds every row of its topics: the rule `spark_jobs.history.stage_merged_days`
    applies to one ingest's rows in Spark.

    >>> import pyarrow as pa
    >>> rows = pa.table({"cluster": ["c"] * 3, "topic": ["a"] * 3, "ts": [1, 1, 2], "broker_id": [ALL_BROKERS, 4, ALL_BROKERS]})
    >>> sorted(without_covered_totals(rows).column("broker_id").to_pylist())
    [-1, 4]
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    total = pc.equal(rows.column("broker_id"), ALL_BROKERS).to_numpy(zero_copy_only=False)
    if not total.any() or total.all():
        return rows
    brokers = rows.filter(pa.array(~total))
    minutes = brokers.select(_TOPIC_MINUTE).group_by(_TOPIC_MINUTE, use_threads=False).aggregate([])
    totals = rows.filter(pa.array(total)).join(minutes, _TOPIC_MINUTE, join_type="left anti", use_threads=False)
    return pa.concat_tables([brokers, totals.select(rows.column_names).cast(rows.schema)])


def _write_pieces(rows: pa.Table, bucket: int, directory: str, only_days: Mapping[str, Collection[str]]) -> pa.RecordBatch:
    """Write one bucket's per-minute ``rows`` (`THROUGHPUT_ARROW`) per (cluster, day) to
    ``directory/cluster=<c>/dt=<day>/part-b<bucket>.parquet``, in a history day's order (`merge_buckets` says which
    rows are kept); return the rows kept per (cluster, day, source) (`_WRITTEN`)."""
    import pyarrow.parquet as pq

    day = rows.column("ts").cast(pa.int64()).to_numpy(zero_copy_only=False) // _DAY_US
    first = int(day.min())
    day -= first
    names = _day_names(np.arange(first, first + int(day.max()) + 1))  # every day the bucket spans
    keep = np.ones(rows.num_rows, bool)
    for source, wanted in only_days.items():
        theirs = pc.equal(rows.column("source"), source).to_numpy(zero_copy_only=False)
        keep &= ~theirs | np.isin(names, list(wanted))[day]
    rows = rows.filter(pa.array(keep))
    if not rows.num_rows:  # every row a pulled one of a day not asked for
        return pa.RecordBatch.from_pylist([], schema=_WRITTEN)
    clusters = pc.dictionary_encode(rows.column("cluster")).combine_chunks()
    part = clusters.indices.to_numpy(zero_copy_only=False).astype(np.int64) * len(names) + day[keep]  # (cluster, day)
    rows = rows.append_column("_part", pa.array(part))
    counts = rows.group_by(["_part", "source"], use_threads=False).aggregate([([], "count_all")])
    counted = counts.column("_part").to_numpy()
    kept = pa.record_batch(
        [pa.array(clusters.dictionary.take(pa.array(counted // len(names))), pa.string()), pa.array(names[counted % len(names)], pa.string()),
         counts.column("source").combine_chunks().cast(pa.string()), counts.column("count_all").combine_chunks()],
        schema=_WRITTEN,
    )
    rows = without_covered_totals(rows)
    order = day_order(rows, "_part")  # each piece in the order of a history day: `write_day` need not sort
    part = rows.column("_part").to_numpy()[order]
    rows = rows.drop_columns(["cluster", "_part"]).take(pa.array(order))
    starts = [0, *(np.flatnonzero(np.diff(part)) + 1).tolist()]
    for start, stop in zip(starts, [*starts[1:], rows.num_rows]):
        p = int(part[start])
        target = os.path.join(directory, partition_dir(clusters.dictionary[p // len(names)].as_py(), str(names[p % len(names)])))
        os.makedirs(target, exist_ok=True)
        temporary = os.path.join(target, f".part-b{bucket:04d}.{os.getpid()}.tmp")
        pq.write_table(rows.slice(start, stop - start), temporary, compression="lz4")  # read once or twice, soon
        os.replace(temporary, os.path.join(target, f"part-b{bucket:04d}.parquet"))
    return kept


def _merge_partition(
    batches: Iterator[pa.RecordBatch], *, files: dict[int, list[str]], directory: str, only_days: Mapping[str, Collection[str]]
) -> Iterator[pa.RecordBatch]:
    """Sum each bucket of this partition (its workers' files, then Spark's increases in a fixed order) and write
    its rows per (cluster, day) (`_write_pieces`); yield the rows written per (cluster, day, source)."""
    batches = list(batches)
    if not batches:
        return
    table = pa.Table.from_batches(batches)
    bucket = table.column("bucket").to_numpy(zero_copy_only=False)
    for b in np.unique(bucket).tolist():
        spark_rows = table.filter(pa.array(bucket == b)).drop_columns(["bucket"])
        spark_rows = spark_rows.sort_by([(c, "ascending") for c in DELTA_FIELDS.names])  # a fixed summing order
        parts = [_read_steps(p) for p in sorted(files.get(b, ()))] + [spark_rows.cast(DELTA_FIELDS)]
        rows = pivot_minutes(pa.concat_tables(parts))
        if rows.num_rows:
            yield _write_pieces(rows, b, directory, only_days)


def merge_buckets(
    spark, deltas, steps_files: Sequence[str], buckets: int, directory: str, *, only_days: Mapping[str, Collection[str]] | None = None
) -> dict[tuple[str, str], dict[str, int]]:
    """Write the per-minute rows of Spark's increases ``deltas`` and the workers' bucketed ``steps_files`` under
    ``directory``, one Python task per group of buckets; return the rows written per ``(cluster, day)`` and source.

    ``directory`` is laid out as the history (`spark_jobs.history.read_history` reads it): per (cluster, day) one
    file per bucket, its columns `THROUGHPUT_ARROW` but ``cluster``. A source named in ``only_days`` keeps only
    its rows of those days (a pull's samples before its first day give rows of the day before). Where a topic's
    minute has per-broker rows and its total (`spark_jobs.rates.ALL_BROKERS`), the total is dropped, as
    `spark_jobs.history` merges them (a topic is in one bucket, so each task sees every row of its topics).

    ``deltas`` are bucketed as the workers bucket theirs (`bucket_of`); every bucket is sent to a task even
    when Spark has no increase for it (one marker row each), so each bucket is summed exactly once.
    """
    from pyspark.sql import functions as F

    os.makedirs(directory, exist_ok=True)
    by_bucket: dict[int, list[str]] = {}
    for path in steps_files:
        by_bucket.setdefault(int(path.rsplit("-b", 1)[1].split(".")[0]), []).append(path)
    bucket = F.pmod(F.crc32(F.coalesce(F.col("topic"), F.lit("")).cast("binary")), F.lit(buckets)).cast("int")
    rows = deltas.select(*DELTA_FIELDS.names, bucket.alias("bucket"))
    markers = spark.range(buckets).select(
        *[F.lit(None).cast(rows.schema[c].dataType).alias(c) for c in DELTA_FIELDS.names], F.col("id").cast("int").alias("bucket")
    )
    only = {k: sorted(v) for k, v in (only_days or {}).items()}
    merge = partial(_merge_partition, files=by_bucket, directory=os.path.abspath(directory), only_days=only)
    done = rows.unionByName(markers).repartition(buckets, "bucket").mapInArrow(merge, "cluster string, dt string, source string, rows long")  # _WRITTEN
    written: dict[tuple[str, str], dict[str, int]] = {}
    for r in done.groupBy("cluster", "dt", "source").agg(F.sum("rows").alias("rows")).collect():
        written.setdefault((r["cluster"], r["dt"]), {})[r["source"]] = int(r["rows"])
    return written
