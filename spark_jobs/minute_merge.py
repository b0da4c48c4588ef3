"""Per-minute increases → the normalized per-minute rows, in Arrow and numpy: the one home of that pivot.

`spark_jobs.rates` turns samples into increases (``deltas``: one row per window, credited to the minute it
starts in, for one metric of one series); `pivot_minutes` sums them per (cluster, broker, topic, minute) with
the three metrics pivoted into one `THROUGHPUT_SCHEMA` row, each metric keeping its own window (`spark_jobs.rates`
says what each column means).

Where the rows are summed: a query_range worker that converts its series in the file writes their per-minute
increases already split into buckets by topic (`spark_jobs.query_range`; the steps files and their buckets are the
history contract's, `spark_jobs.history_contract`), so that `merge_buckets` sums each bucket in one Python task, by
integer keys (`_pivot`: dictionary codes, one int64 key per row, ``np.bincount``; a string-keyed hash aggregation
cost twice the CPU), next to the few increases Spark's sample-by-sample path adds (the steps across files, resets,
pre-aggregated windows), and writes the rows to Parquet itself, per (cluster, day) in the history's layout: a day
the history holds no row of becomes a history day from these files alone (`spark_jobs.history.stage_new_days`), with
no Spark sort. No per-minute row goes through the JVM's shuffle or a string-keyed Spark aggregation, which took more
than half of a large ingest before (docs/benchmarks/ingest.md). `spark_jobs.rates.minute_rows` applies the same
pivot through a Spark shuffle where a DataFrame is wanted.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_jobs.history_contract import (
    ALL_BROKERS,
    DELTA_FIELDS,
    FLAG_GAP,
    FLAG_PARTIAL,
    FLAG_RESET,
    GAP_MS,
    METRICS,
    PARTIAL_MS,
    REMOTE_ARROW,
    REMOTE_METRICS,
    THROUGHPUT_ARROW,
    day_names,
    day_order,
    partition_dir,
    steps_bucket,
    throughput_arrow,
)

__all__ = ["pivot_minutes", "pivot_batches", "with_remote_columns", "merge_buckets", "without_covered_totals"]

_MINUTE_MS = 60_000
_DAY_MS = 86_400_000
#: The columns of a topic's minute in the history (per broker or `ALL_BROKERS`).
_TOPIC_MINUTE = ["cluster", "topic", "ts"]


def _half_up(x: np.ndarray) -> np.ndarray:
    """Round half away from zero, as Spark's ``round`` (exact: ``x - floor(x)`` is exact below 2**52).

    >>> _half_up(np.array([0.5, 1.49999999999999, 2.5, 0.49999999999999994, -2.5])).tolist()
    [1.0, 1.0, 3.0, 0.0, -3.0]
    """
    x = np.asarray(x, np.float64)
    a = np.abs(x)
    low = np.floor(a)
    a -= low
    low += a >= 0.5
    return np.copysign(low, x, out=low)


class _Codes:
    """Integer codes of a string column's values across tables, one per distinct value (null included), so
    that rows are grouped by integers: a dictionary column's few values are looked up, never its rows."""

    def __init__(self) -> None:
        self.values: list[str | None] = []
        self._index: dict[str | None, int] = {}

    def code(self, value: str | None) -> int:
        if value not in self._index:
            self._index[value] = len(self.values)
            self.values.append(value)
        return self._index[value]

    def of(self, column: pa.ChunkedArray | pa.Array) -> np.ndarray:
        """The code of each row of ``column`` (strings, or dictionary-encoded strings)."""
        out = [np.zeros(0, np.int64)]
        for chunk in column.chunks if isinstance(column, pa.ChunkedArray) else [column]:
            if not pa.types.is_dictionary(chunk.type):
                chunk = pc.dictionary_encode(chunk)
            local = np.array([self.code(v) for v in chunk.dictionary.to_pylist()] + [self.code(None)], np.int64)
            indices = chunk.indices.fill_null(len(local) - 1) if chunk.indices.null_count else chunk.indices
            out.append(local[indices.to_numpy(zero_copy_only=False)])
        return np.concatenate(out)


def _numbers(column: pa.ChunkedArray | pa.Array, dtype: type) -> tuple[np.ndarray, np.ndarray | None]:
    """A numeric column as numpy values (nulls as 0) and its validity (None: no null)."""
    if column.null_count:
        values = column.fill_null(dtype(0)).to_numpy(zero_copy_only=False).astype(dtype)
        return values, column.is_valid().to_numpy(zero_copy_only=False)
    return column.to_numpy(zero_copy_only=False).astype(dtype, copy=False), None


def _concat(parts: list[tuple[np.ndarray, np.ndarray | None]]) -> tuple[np.ndarray, np.ndarray | None]:
    values = np.concatenate([v for v, _ in parts])
    if all(valid is None for _, valid in parts):
        return values, None
    return values, np.concatenate([np.ones(v.size, bool) if valid is None else valid for v, valid in parts])


def _dense(key: np.ndarray) -> tuple[np.ndarray, int]:
    """``key`` renumbered 0, 1, … in the order of its distinct values, and their count."""
    distinct, inverse = np.unique(key, return_inverse=True)
    return inverse.astype(np.int64), int(distinct.size)


def _group_ids(components: Sequence[tuple[np.ndarray, int]]) -> tuple[np.ndarray, int]:
    """Each row's group (0 … groups - 1, in the order of the combined key) of rows given by integer key
    ``components``, each ``(codes in [0, size), size)``: one int64 key, grouped by direct counting where the
    key's range is small next to the rows, else by sorting.

    >>> _group_ids([(np.array([1, 0, 1]), 2), (np.array([5, 7, 5]), 10)])[0].tolist()
    [1, 0, 1]
    """
    n = components[0][0].size
    key, size = np.zeros(n, np.int64), 1
    for codes, width in components:
        if width >= 1 << 31:
            codes, width = _dense(codes)
        if size * width >= 1 << 62:
            key, size = _dense(key)
        key, size = key * width + codes, size * width
    if size > 2 * n + 1024:
        return _dense(key)
    present = np.bincount(key, minlength=size) > 0
    lookup = np.cumsum(present) - 1
    return lookup[key], int(lookup[-1] + 1) if size else 0


def pivot_minutes(deltas: pa.Table) -> pa.Table:
    """Sum increases (`DELTA_FIELDS`) into the normalized per-minute rows (`THROUGHPUT_ARROW`).

    Per (cluster, broker, topic, minute) and metric: the bytes summed and the windows' lengths summed; a
    metric's window is its summed length in whole seconds (half up, at least 1), ``interval_s`` bytes-in's
    (else the longest of the row's), the other two only where they differ from it. A metric the row has no window
    of is null, whichever it is: its meter did not exist that minute (Kafka creates ``BytesInPerSec`` and
    ``MessagesInPerSec`` on a partition leader only, ``BytesOutPerSec`` on first use) or an earlier, longer window
    covers the minute. Flags: a reset among the row's
    windows, a gap (longest window > 90 s), a partial minute (< 45 s). The row's source is the least of its
    windows' sources. The bytes are whole: a series' fractions (a rate × its window) are carried from minute to
    minute within its UTC day (`_whole_bytes`). Rows in the order their keys first appear; sums in input order.

    Examples
    --------
    >>> d = pa.table({"cluster": ["c"] * 5, "broker_id": pa.array([1] * 5, pa.int32()), "topic": ["t"] * 5,
    ...               "metric": ["bytes_in", "bytes_out", "bytes_in", "bytes_out", "bytes_out"],
    ...               "source": ["a", "b", "a", "a", "a"], "reset": [False, False, True, False, False],
    ...               "delta": [10.0, 4.0, 5.0, 7.0, 2.5], "minute_ms": [0, 0, 60_000, 120_000, 300_000],
    ...               "span_ms": [60_000, 61_000, 180_000, 60_000, 60_000]}, schema=DELTA_FIELDS)
    >>> for r in pivot_minutes(d).to_pylist():
    ...     print(r["ts"].minute, r["bytes_in"], r["interval_s"], r["bytes_out"], r["bytes_out_interval_s"],
    ...           r["source"], r["flags"])
    0 10 60 4 61 a 0
    1 5 180 None None a 3
    2 None 60 7 None a 0
    5 None 60 3 None a 0
    """
    return _pivot([deltas])


#: The metrics `_pivot` sums, by their code in it: `METRICS` 0-2, the remote meters (`REMOTE_METRICS`) 3-4; any
#: other metric is `_OTHER`.
_PIVOTED = (*METRICS, *REMOTE_METRICS)
_OTHER = len(_PIVOTED)


def _pivot(parts: Sequence[pa.Table], *, by_day: bool = False) -> pa.Table:
    """`pivot_minutes` of the increases of ``parts`` in turn (`DELTA_FIELDS` columns; the strings may be dictionary
    encoded), summed by integer keys: each string is coded once per distinct value (`_Codes`), each row's
    (cluster, broker, topic, minute) becomes a group number (`_group_ids`), and every sum is a ``np.bincount``,
    which adds a group's values in input order, as Arrow's hash aggregation did. With ``by_day`` the rows come
    per (cluster, day) in a history day's order (`day_order`: topic by UTF-8 bytes, broker, time), not in the
    order their keys first appear."""
    clusters, topics, metrics, sources = _Codes(), _Codes(), _Codes(), _Codes()
    cols: dict[str, list] = {
        k: [] for k in ("cluster", "topic", "metric", "source", "broker", "reset", "delta", "minute", "span")
    }
    for part in parts:
        if part.column("metric").null_count:  # a row without a metric is no increase
            part = part.filter(pc.is_valid(part.column("metric")))
        cols["cluster"].append(clusters.of(part.column("cluster")))
        cols["topic"].append(topics.of(part.column("topic")))
        cols["metric"].append(metrics.of(part.column("metric")))
        cols["source"].append(sources.of(part.column("source")))
        cols["broker"].append(_numbers(part.column("broker_id"), np.int64))
        cols["reset"].append(_numbers(part.column("reset"), bool))
        cols["delta"].append(_numbers(part.column("delta"), np.float64))
        cols["minute"].append(_numbers(part.column("minute_ms"), np.int64))
        cols["span"].append(_numbers(part.column("span_ms"), np.int64))
    metric = np.array([_PIVOTED.index(v) if v in _PIVOTED else _OTHER for v in metrics.values] or [0], np.int8)[
        np.concatenate(cols["metric"])
    ]
    ranked = sorted(v for v in sources.values if v is not None)
    rank = np.array([ranked.index(v) if v is not None else -1 for v in sources.values] or [0],
        np.int16)[np.concatenate(cols["source"])]
    cluster, topic = np.concatenate(cols["cluster"]), np.concatenate(cols["topic"])
    (broker, broker_ok), (reset, reset_ok), (delta, delta_ok), (minute, minute_ok), (span, span_ok) = (
        _concat(cols[k]) for k in ("broker", "reset", "delta", "minute", "span")
    )
    reset = reset & (True if reset_ok is None else reset_ok)
    n = metric.size
    if not n:
        return THROUGHPUT_ARROW.empty_table()
    remote = bool(((metric >= len(METRICS)) & (metric < _OTHER)).any())  # then the remote columns are written
    k = _OTHER

    def coded(values: np.ndarray, ok: np.ndarray | None, unit: int = 1) -> tuple[np.ndarray, int]:
        """A key component of integer ``values``: their offsets from the least (in ``unit``s when all are whole
        ones, as minutes are), null a key of its own."""
        known = values if ok is None else values[ok]
        low, high = (int(known.min()), int(known.max())) if known.size else (0, 0)
        if unit > 1 and (known % unit).any():
            unit = 1  # minutes not on the minute (a caller's own increases): keyed by the millisecond
        codes, width = (values - low) // unit, (high - low) // unit + 1
        return (codes, width) if ok is None else (np.where(ok, codes, width), width + 1)

    if by_day:
        names = topics.values
        ranked_topics = sorted(range(len(names)), key=lambda i: (names[i] is not None, (names[i] or "").encode()))
        topic_rank = np.empty(len(names), np.int64)
        topic_rank[ranked_topics] = np.arange(len(names))
        day = minute // _DAY_MS
        components = [(cluster, len(clusters.values)), coded(day, minute_ok), (topic_rank[topic], len(names)),
            coded(broker, broker_ok),
                      coded(minute - day * _DAY_MS, minute_ok, _MINUTE_MS)]
    else:
        components = [(cluster, len(clusters.values)), (topic, len(topics.values)), coded(broker, broker_ok),
            coded(minute, minute_ok, _MINUTE_MS)]
    group, groups = _group_ids(components)
    if by_day:
        first = np.empty(groups, np.int64)
        first[group] = np.arange(n)  # a row of each group: any of them holds its key
    else:
        first = np.full(groups, n, np.int64)
        np.minimum.at(first, group, np.arange(n))  # the row each group first appears in
        order = np.argsort(first, kind="stable")
        number = np.empty(groups, np.int64)
        number[order] = np.arange(groups)
        group, first = number[group], first[order]  # groups in order of appearance

    cell = group * k + metric  # (group, metric) of a row with one of the pivoted metrics
    pick = metric < _OTHER

    def by_metric(weights: np.ndarray, ok: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Per group and metric: whether no row has a value (null), and the values' sum in input order."""
        mine = pick if ok is None else pick & ok
        cells = cell if mine.all() else cell[mine]
        if not mine.all():
            weights = weights[mine]
        null = np.bincount(cells, minlength=k * groups).reshape(groups, k) == 0
        return null, np.bincount(cells, weights=weights, minlength=k * groups).reshape(groups, k)

    delta_null, delta_sum = by_metric(delta, delta_ok)
    span_null, span_sum = (delta_null, np.bincount(cell, weights=span, minlength=k * groups).reshape(groups, k)) if (
        span_ok is None and delta_ok is None and pick.all()) else by_metric(span.astype(np.float64), span_ok)
    span_sum = span_sum.astype(np.int64)
    widest = np.where(span_null, -1, span_sum).max(axis=1)
    keep = widest >= 0  # a minute of none of the pivoted metrics is no row
    resets = np.bincount(group[reset], minlength=groups) > 0
    if len(ranked) == 1 and not rank.any():  # one source, on every row
        least = np.zeros(groups, np.int64)
    else:
        least = np.full(groups, -1, np.int64)
        for r in range(len(ranked) - 1, -1, -1):
            least[np.bincount(group[rank == r], minlength=groups) > 0] = r
    rep = first[keep]
    if not keep.all():
        delta_null, delta_sum, span_null, span_sum, widest, resets, least = (
            a[keep] for a in (delta_null, delta_sum, span_null, span_sum, widest, resets, least)
        )
    flags = (resets.astype(np.int32) * FLAG_RESET + np.where(widest > GAP_MS, FLAG_GAP, 0)
             + np.where(widest < PARTIAL_MS, FLAG_PARTIAL, 0))
    seconds = np.maximum(_half_up(span_sum / 1000), 1).astype(np.int32)
    interval = np.where(span_null[:, 0], np.maximum(_half_up(widest / 1000), 1).astype(np.int32), seconds[:, 0])
    out: dict[str, pa.Array] = {
        "cluster": pa.array(clusters.values, pa.string()).take(pa.array(cluster[rep])),
        "ts": pa.array(minute[rep] * 1000, pa.timestamp("us", tz="UTC")),
        "interval_s": pa.array(interval, pa.int32()),
        "broker_id": pa.array(broker[rep], pa.int32(), mask=None if broker_ok is None else ~broker_ok[rep]),
        "topic": pa.array(topics.values, pa.string()).take(pa.array(topic[rep])),
    }
    rounded = _whole_bytes(delta_sum, delta_null, [cluster[rep], topic[rep], broker[rep]], minute[rep])
    written = _PIVOTED if remote else METRICS
    for i, m in enumerate(written):  # a metric no window of the row has: its meter did not exist, or was not seen
        out[m] = pa.array(rounded[:, i], pa.int64(), mask=delta_null[:, i])
    for i, m in enumerate(written[1:], 1):
        out[f"{m}_interval_s"] = pa.array(seconds[:, i], pa.int32(), mask=span_null[:, i] | (seconds[:, i] == interval))
    out["source"] = pa.array(ranked, pa.string()).take(pa.array(least, mask=least < 0))
    out["flags"] = pa.array(flags, pa.int32())
    schema = throughput_arrow(remote)
    return pa.table({f.name: out[f.name] for f in schema}, schema=schema)


def _whole_bytes(sums: np.ndarray, null: np.ndarray, series: Sequence[np.ndarray], minute: np.ndarray) -> np.ndarray:
    """Whole bytes (int64) of each row's summed increases (``sums``, rows × metrics; ``null`` where a row has none):
    a series' fractions carried from minute to minute within its UTC day.

    The rows of one ``series`` (cluster, topic and broker codes) and day, in ``minute`` order, take the differences
    of their running total rounded half up, so they sum to their total rounded, as Prometheus' ``increase()`` over
    them gives it: an increase seen in several minutes (a rate gauge's step after a lost sample, read as rate ×
    60 s each minute) is never a byte under or over from rounding each minute alone. A row alone in its series-day
    is its sum rounded half up; whole sums (every counter's) stay as they are.

    >>> codes = [np.zeros(3, np.int64)] * 3
    >>> _whole_bytes(np.array([[107056302.5], [107056302.5], [7.0]]), np.zeros((3, 1), bool), codes,
    ...              np.array([0, 60_000, 120_000])).ravel().tolist()
    [107056303, 107056302, 7]
    """
    values = np.where(null, 0.0, sums)
    rounded = _half_up(values)
    fractional = (rounded != values).any(axis=1)
    if not fractional.any():
        return rounded.astype(np.int64)
    day = minute // _DAY_MS
    order = np.lexsort((minute, *reversed(series), day))
    keys = np.stack([day, *series])[:, order]
    starts = np.flatnonzero(np.r_[True, (keys[:, 1:] != keys[:, :-1]).any(axis=0)])
    for start, stop in zip(starts.tolist(), [*starts[1:].tolist(), order.size]):
        rows = order[start:stop]
        if stop - start > 1 and fractional[rows].any():
            total = _half_up(np.cumsum(values[rows], axis=0))
            rounded[rows] = np.diff(total, axis=0, prepend=np.zeros((1, values.shape[1])))
    return rounded.astype(np.int64)


def pivot_batches(batches: Iterable[pa.RecordBatch], *, remote: bool = False) -> Iterator[pa.RecordBatch]:
    """`pivot_minutes` over all of a Spark partition's increases (every key's rows in that partition), in one Spark
    schema: `THROUGHPUT_ARROW`'s columns, with ``remote`` the remote meters' too (`with_remote_columns`)."""
    batches = list(batches)
    if batches:
        rows = with_remote_columns(pivot_minutes(pa.Table.from_batches(batches)))
        yield from (rows if remote else rows.select(THROUGHPUT_ARROW.names)).to_batches()


def with_remote_columns(rows: pa.Table) -> pa.Table:
    """Normalized ``rows`` with the remote meters' columns (`spark_jobs.history_contract.REMOTE_ARROW`), null
    (unmeasured) where ``rows`` lack them."""
    for field in REMOTE_ARROW:
        if field.name not in rows.column_names:
            rows = rows.append_column(field, pa.nulls(rows.num_rows, field.type))
    return rows


def _read_steps(path: str) -> pa.Table:
    """A worker's file of per-minute increases (`STEPS_SCHEMA`) as `DELTA_FIELDS` columns, the strings dictionary
    encoded."""
    import pyarrow.parquet as pq

    steps = pq.read_table(path)
    meta = steps.schema.metadata
    n = steps.num_rows

    def constant(key: bytes) -> pa.DictionaryArray:
        return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)),
            pa.array([meta[key].decode()], pa.string()))

    return pa.table(
        {
            "cluster": constant(b"cluster"), "broker_id": steps.column("broker_id"), "topic": steps.column("topic"),
            "metric": steps.column("metric"), "source": constant(b"source"), "reset": pa.array(np.zeros(n, bool)),
            "delta": steps.column("delta"), "minute_ms": steps.column("minute_ms"), "span_ms": steps.column("span_ms"),
        }
    )


_DAY_US = 86_400_000_000
#: What a minute-merge task reports per bucket: rows written per (cluster, day, source).
_WRITTEN = pa.schema([("cluster", pa.string()), ("dt", pa.string()), ("source", pa.string()), ("rows", pa.int64())])


def without_covered_totals(rows):
    """Arrow rows (a `pyarrow.Table` with the history's columns) less the topic totals of the minutes they have
    per-broker rows for, where a Python task holds every row of its topics: the rule
    `spark_jobs.history.stage_merged_days` applies to one ingest's rows in Spark.

    >>> import pyarrow as pa
    >>> rows = pa.table({"cluster": ["c"] * 3, "topic": ["a"] * 3, "ts": [1, 1, 2],
    ...                  "broker_id": [ALL_BROKERS, 4, ALL_BROKERS]})
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


def _write_pieces(
    rows: pa.Table, bucket: int, directory: str, only_days: Mapping[str, Collection[str]], *, ordered: bool = False
) -> pa.RecordBatch:
    """Write one bucket's per-minute ``rows`` (`THROUGHPUT_ARROW`; ``ordered``: already in a history day's order
    per (cluster, day), `_pivot`'s ``by_day``) per (cluster, day) to
    ``directory/cluster=<c>/dt=<day>/part-b<bucket>.parquet``,
    in a history day's order (`merge_buckets` says which rows are kept); return the rows kept per (cluster, day,
    source) (`_WRITTEN`)."""
    import pyarrow.parquet as pq

    day = rows.column("ts").cast(pa.int64()).to_numpy(zero_copy_only=False) // _DAY_US
    first = int(day.min())
    day -= first
    names = day_names(np.arange(first, first + int(day.max()) + 1))  # every day the bucket spans
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
        [pa.array(clusters.dictionary.take(pa.array(counted // len(names))), pa.string()),
            pa.array(names[counted % len(names)], pa.string()),
         counts.column("source").combine_chunks().cast(pa.string()), counts.column("count_all").combine_chunks()],
        schema=_WRITTEN,
    )
    kept_rows = without_covered_totals(rows)
    if ordered and kept_rows is rows:  # each (cluster, day)'s rows together, in order
        part = rows.column("_part").to_numpy()
        rows = rows.drop_columns(["cluster", "_part"])
    else:
        order = day_order(kept_rows, "_part")  # each piece in the order of a history day: `write_day` need not sort
        part = kept_rows.column("_part").to_numpy()[order]
        rows = kept_rows.drop_columns(["cluster", "_part"]).take(pa.array(order))
    starts = [0, *(np.flatnonzero(np.diff(part)) + 1).tolist()]
    for start, stop in zip(starts, [*starts[1:], rows.num_rows]):
        p = int(part[start])
        target = os.path.join(directory,
            partition_dir(clusters.dictionary[p // len(names)].as_py(), str(names[p % len(names)])))
        os.makedirs(target, exist_ok=True)
        temporary = os.path.join(target, f".part-b{bucket:04d}.{os.getpid()}.tmp")
        pq.write_table(rows.slice(start, stop - start), temporary, compression="lz4")  # read once or twice, soon
        os.replace(temporary, os.path.join(target, f"part-b{bucket:04d}.parquet"))
    return kept


def _merge_partition(
    batches: Iterator[pa.RecordBatch], *, files: dict[int, list[str]], directory: str,
    only_days: Mapping[str, Collection[str]]
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
        rows = _pivot([*(_read_steps(p) for p in sorted(files.get(b, ()))), spark_rows.cast(DELTA_FIELDS)], by_day=True)
        if rows.num_rows:
            yield _write_pieces(rows, b, directory, only_days, ordered=True)


def merge_buckets(
    spark, deltas, steps_files: Sequence[str], buckets: int, directory: str, *,
    only_days: Mapping[str, Collection[str]] | None = None
) -> dict[tuple[str, str], dict[str, int]]:
    """Write the per-minute rows of Spark's increases ``deltas`` and the workers' bucketed ``steps_files`` under
    ``directory``, one Python task per group of buckets; return the rows written per ``(cluster, day)`` and source.

    ``directory`` is laid out as the history (`spark_jobs.history.read_history` reads it): per (cluster, day) one
    file per bucket, its columns `THROUGHPUT_ARROW` but ``cluster``. A source named in ``only_days`` keeps only
    its rows of those days (a pull's samples before its first day give rows of the day before). Where a topic's
    minute has per-broker rows and its total (`spark_jobs.history_contract.ALL_BROKERS`), the total is dropped, as
    `spark_jobs.history` merges them (a topic is in one bucket, so each task sees every row of its topics).

    ``deltas`` are bucketed as the workers bucket theirs (`spark_jobs.history_contract.bucket_of`); every bucket is
    sent to a task even when Spark has no increase for it (one marker row each), so each bucket is summed exactly once.
    """
    from pyspark.sql import functions as F

    os.makedirs(directory, exist_ok=True)
    by_bucket: dict[int, list[str]] = {}
    for path in steps_files:
        by_bucket.setdefault(steps_bucket(path), []).append(path)
    bucket = F.pmod(F.crc32(F.coalesce(F.col("topic"), F.lit("")).cast("binary")), F.lit(buckets)).cast("int")
    rows = deltas.select(*DELTA_FIELDS.names, bucket.alias("bucket"))
    markers = spark.range(buckets).select(
        *[F.lit(None).cast(rows.schema[c].dataType).alias(c) for c in DELTA_FIELDS.names],
        F.col("id").cast("int").alias("bucket")
    )
    only = {k: sorted(v) for k, v in (only_days or {}).items()}
    merge = partial(_merge_partition, files=by_bucket, directory=os.path.abspath(directory), only_days=only)
    done = rows.unionByName(markers).repartition(buckets, "bucket").mapInArrow(merge,
        "cluster string, dt string, source string, rows long")  # _WRITTEN
    written: dict[tuple[str, str], dict[str, int]] = {}
    for r in done.groupBy("cluster", "dt", "source").agg(F.sum("rows").alias("rows")).collect():
        written.setdefault((r["cluster"], r["dt"]), {})[r["source"]] = int(r["rows"])
    return written
