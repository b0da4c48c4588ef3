"""The topic profile from per-day partials stored with each history day: a daily ingest profiles only its new days.

Every day directory of the history (``cluster=<c>/dt=<day>/``) may hold ``_profile.parquet`` (`PARTIAL_FILE`): per
topic, what `spark_jobs.profile.aggregate_topic_profile` needs of that day, computed exactly as
`spark_jobs.profile.aggregate_topic_minutes` and the profile's per-day step do (rates summed over brokers per
minute, odd windows as half-up decimal(38,6) quotients): the day's ascending per-minute rates of bytes-in,
bytes-out and messages-in (nulls dropped), its minutes (``samples``), first and last minute, rows, gaps, counter
resets and bytes-in p99. Spark and `spark_jobs.history` skip files whose names start with ``_``, so the table's
rows never see it. Its metadata holds a fingerprint of the day's data files (sizes, rows, footers, `fingerprint`):
a partial whose fingerprint differs, or that cannot be read, is computed again, never trusted.

`topic_stats` computes the missing partials in Python tasks (numpy, one day per task, no per-row Python: a day of
whole minutes and 60-second windows summed into dense topic × minute arrays, `_regular_day`; any other sorted
into its window sets, `_minutes`) and
merges every day's partial per topic (`merge_topics`: exact order statistics with ``np.partition``, the same
linear interpolation as `spark_jobs.profile`), so the figures are the Spark path's, bit for bit. Where the
vectorised arithmetic could not be exact (a topic-minute beyond 8e9 per second in odd windows, sums near a long's
range, a window of 0 s, rows whose UTC day is not their directory's, a session time zone other than UTC, a
history that is not a local directory), it returns None and the caller runs the Spark path. The tasks are Spark
tasks on a cluster; under a local master, or Spark Connect (no SparkContext), this process runs them in threads.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import uuid
import zlib
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from spark_jobs.history_contract import FLAG_GAP, FLAG_RESET, METRICS, day_dirs

__all__ = ["PARTIAL_FILE", "PARTIAL_BUCKETS", "PARTIAL_SCHEMA", "Inexact", "fingerprint", "day_partial",
    "merge_topics", "topic_stats",
           "install_partials", "PendingPartial"]

_log = logging.getLogger(__name__)

#: The per-day partial's file name inside a day directory (hidden from Spark's and the history's readers).
PARTIAL_FILE = "_profile.parquet"
#: Topic buckets of a partial (CRC-32 of the topic modulo this): one row group each, so a merge task reads its own.
PARTIAL_BUCKETS = 64
#: Bumped whenever the partial's content or rules change: older partials then no longer match.
_VERSION = "poolplan-day-profile-3"
_FINGERPRINT_KEY = b"poolplan.fingerprint"
_DAY_US = 86_400_000_000
#: Odd-window rates up to this (per topic-minute, per second) keep every decimal(38,6) sum below 2^53 millionths.
_ODD_LIMIT = 8e9
#: Integer sums up to this stay far from a long's range (Spark's ANSI sum would fail beyond it; the Spark path decides).
_SUM_LIMIT = 2.0**61
#: A day's file of up to this many rows is read whole (larger ones by topic); a day in several files beyond it goes
#: to Spark.
_MULTI_FILE_ROWS = 30_000_000
_NULL = -(2**40)  # a null window column in a sort key: below any int32

PARTIAL_SCHEMA = pa.schema(
    [
        ("bucket", pa.int32()),
        ("topic", pa.string()),
        ("day", pa.int32()),
        ("samples", pa.int64()),
        ("first_ts", pa.int64()),
        ("last_ts", pa.int64()),
        ("rows", pa.int64()),
        ("gaps", pa.int64()),
        ("resets", pa.int64()),
        ("p99", pa.float64()),
        # each the day's ascending float64 values, little-endian, as bytes: read back without decoding a list
        *[(m, pa.large_binary()) for m in METRICS],
    ]
)


class Inexact(Exception):
    """The vectorised path cannot guarantee the Spark path's figures for this data."""


def _data_files(day_dir: Path) -> list[Path]:
    from spark_jobs.history import _data_files as files

    return files(day_dir)


def fingerprint(day_dir: Path) -> str:
    """A digest of the day directory's data files and of the partial's version: per file its size, rows and each
    column chunk's sizes and statistics (from its footer), in an order of their own.

    Not the files' names: Spark names a file by a random write id, and two runs of the same input must write the same
    partial, byte for byte (`spark_jobs.history`'s days are compared so between a local run and a cluster's).
    """
    files = []
    for f in _data_files(day_dir):
        meta = pq.read_metadata(f)
        chunks = [
            (c.path_in_schema, c.total_compressed_size, c.total_uncompressed_size,
             str(c.statistics.to_dict()) if c.is_stats_set else "")
            for g in range(meta.num_row_groups)
            for c in (meta.row_group(g).column(i) for i in range(meta.num_columns))
        ]
        files.append(repr((f.stat().st_size, meta.num_rows, chunks)))
    return hashlib.sha256("\n".join([_VERSION, *sorted(files)]).encode()).hexdigest()


def _stored_fingerprint(path: Path) -> str | None:
    try:
        meta = pq.read_schema(path).metadata or {}
    except Exception:  # noqa: BLE001 - a damaged or missing partial is recomputed, whatever pyarrow raises
        return None
    value = meta.get(_FINGERPRINT_KEY)
    return value.decode() if value else None


def _half_up_millionths(total: np.ndarray, window: np.ndarray) -> np.ndarray:
    """round_half_up(total / window, 6 decimals) in millionths, as Spark's decimal(38,6) quotient (``window`` > 0).

    >>> _half_up_millionths(np.array([1, -1, 5]), np.array([3, 3, 90])).tolist()
    [333333, -333333, 55556]
    """
    magnitude = np.abs(total)
    whole, rest = np.divmod(magnitude, window)
    frac, rem = np.divmod(rest * 1_000_000, window)
    out = whole * 1_000_000 + frac + (2 * rem >= window)
    return np.where(total < 0, -out, out)


def _ints(col: pa.ChunkedArray, null: int) -> np.ndarray:
    """An integer column as int64, nulls as ``null``."""
    return np.asarray(pc.fill_null(col.cast(pa.int64()), null).to_numpy(), np.int64)


def _minutes(t: pa.Table) -> dict[str, np.ndarray]:
    """Per (topic, ts) of ``t`` (rows of one cluster): the three rates, rows, gaps and resets, as
    `spark_jobs.profile.aggregate_topic_minutes` computes them. ``topic`` of the result is an index into
    ``names`` (sorted), and the minutes are ordered by (topic, ts)."""
    names, topic = _topic_ranks(t["topic"])
    ts = np.asarray(t["ts"].to_numpy(), np.int64)
    interval = _ints(t["interval_s"], 0)
    own = {m: _ints(t[f"{m}_interval_s"], _NULL) for m in ("bytes_out", "messages_in")}
    n = len(ts)
    # Spark groups a minute's rows by their set of windows first: sort by it only where a minute has several rows
    ordered = bool(n < 2 or ((topic[1:] > topic[:-1]) | ((topic[1:] == topic[:-1]) & (ts[1:] > ts[:-1]))).all())
    keys = None if ordered else np.lexsort((own["messages_in"], own["bytes_out"], interval, ts, topic))

    def take(a: np.ndarray) -> np.ndarray:
        return a if keys is None else a[keys]

    topic, ts, interval = take(topic), take(ts), take(interval)
    own = {m: take(v) for m, v in own.items()}
    new1 = np.ones(n, bool)
    new2 = np.ones(n, bool)
    if n and keys is not None:
        same_minute = (topic[1:] == topic[:-1]) & (ts[1:] == ts[:-1])
        new2[1:] = ~same_minute
        new1[1:] = ~(same_minute & (interval[1:] == interval[:-1]) & (own["bytes_out"][1:] == own["bytes_out"][:-1])
                     & (own["messages_in"][1:] == own["messages_in"][:-1]))
    if keys is None:  # one row a minute (a per-topic series): every row its own window set and minute
        start1 = start2 = minute_of_group = first_group = np.arange(n)
    else:
        start1, start2 = np.flatnonzero(new1), np.flatnonzero(new2)
        minute_of_group = np.cumsum(new2)[start1] - 1  # the (topic, ts) index of each window set
        first_group = np.flatnonzero(np.diff(minute_of_group, prepend=-1))  # a minute's window sets are contiguous
    minutes = len(start2)
    if (interval[start1] <= 0).any():
        raise Inexact("a window of 0 s or less")
    out: dict[str, np.ndarray] = {"topic": topic[start2], "ts": ts[start2], "names": names}
    if not n:
        return {**out, "rows": np.zeros(0, np.int64), "gaps": np.zeros(0, np.int64), "resets": np.zeros(0, np.int64),
                **{m: np.zeros(0) for m in METRICS}, **{m + "_null": np.zeros(0, bool) for m in METRICS}}
    out["rows"] = np.diff(np.append(start2, n)).astype(np.int64)
    flags = take(_ints(t["flags"], 0))
    missing = np.maximum((interval + 30) // 60 - 1, 0)  # Spark's round(interval / 60.0), half up, less one
    out["gaps"] = np.add.reduceat(((flags & FLAG_GAP) != 0) * missing, start2)
    out["resets"] = np.add.reduceat(((flags & FLAG_RESET) != 0).astype(np.int64), start2)

    def per_minute(a: np.ndarray) -> np.ndarray:
        return a if len(first_group) == len(a) else np.add.reduceat(a, first_group)

    for m in METRICS:
        col = t[m]
        null = take(col.is_null().to_numpy(zero_copy_only=False))
        values = take(_ints(col, 0))
        magnitude = np.abs(values.astype(np.float64))
        if (magnitude if minutes == n else np.add.reduceat(magnitude, start2)).max(initial=0.0) >= _SUM_LIMIT:
            raise Inexact(f"{m} sums near a long's range")
        sums = values if len(start1) == n else np.add.reduceat(values, start1)
        reported = ~null if len(start1) == n else np.add.reduceat(~null, start1) > 0
        if m == "bytes_in":
            window = interval[start1]
        else:
            raw = own[m][start1]
            window = np.where(raw == _NULL, interval[start1], raw)
            if (window <= 0).any():
                raise Inexact("a window of 0 s or less")
        regular = reported & (window == 60)
        odd = reported & (window != 60)
        reg_sum = per_minute(np.where(regular, sums, 0))
        rate = reg_sum.astype(np.float64) / 60.0
        has_reg = per_minute(regular.astype(np.int64)) > 0
        has_odd = np.zeros(minutes, bool)
        if odd.any():
            safe = np.where(odd, window, 1)
            if (per_minute(np.where(odd, np.abs(sums) / safe, 0.0)) >= _ODD_LIMIT).any():
                raise Inexact(f"{m} odd-window rates beyond {_ODD_LIMIT:g}/s")
            quotients = np.zeros(len(sums), np.int64)
            quotients[odd] = _half_up_millionths(sums[odd], window[odd])
            odd_sum = per_minute(quotients)
            has_odd = per_minute(odd.astype(np.int64)) > 0
            rate = np.where(has_reg, rate, 0.0) + np.where(has_odd, odd_sum.astype(np.float64) / 1e6, 0.0)
        else:
            rate = np.where(has_reg, rate, 0.0) + 0.0
        out[m] = rate
        out[m + "_null"] = ~(has_reg | has_odd)
    return out


def _read_day(files: Sequence[Path]) -> Iterator[pa.Table]:
    """The rows of a day in tables that each hold whole topics."""
    columns = ["ts", "interval_s", "topic", "flags", *METRICS, "bytes_out_interval_s", "messages_in_interval_s"]

    def fit(batch: pa.Table | pa.RecordBatch) -> pa.Table:
        table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        cols = {}
        for c in columns:
            if c in table.column_names:
                col = table[c]
                if c == "ts":
                    col = col.cast(pa.timestamp("us", tz=col.type.tz)).cast(pa.int64())
                cols[c] = col
            else:
                cols[c] = pa.nulls(table.num_rows, pa.int32())
        return pa.table(cols)

    if len(files) > 1:
        rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        if rows > _MULTI_FILE_ROWS:
            raise Inexact(f"a day of {rows} rows in {len(files)} files")
        yield pa.concat_tables(
            [fit(pq.read_table(f, columns=[c for c in columns if c in pq.read_schema(f).names])) for f in files],
                               promote_options="permissive")
        return
    for f in files:
        parquet = pq.ParquetFile(f)
        present = [c for c in columns if c in parquet.schema_arrow.names]
        if parquet.metadata.num_rows <= _MULTI_FILE_ROWS:
            yield fit(parquet.read(columns=present))
            continue
        carry: pa.Table | None = None
        for batch in parquet.iter_batches(batch_size=1 << 20, columns=present):
            table = fit(batch) if carry is None else pa.concat_tables([carry, fit(batch)])
            topics = table["topic"]
            last = topics[len(topics) - 1]
            tail = pc.equal(topics, last).to_numpy(zero_copy_only=False)
            cut = int(np.argmax(tail)) if tail.any() else len(tail)
            if not tail[cut:].all():  # not sorted by topic: read the file whole
                carry = table
                continue
            if cut:
                yield table.slice(0, cut)
            carry = table.slice(cut)
        if carry is not None and carry.num_rows:
            yield carry


def day_partial(day_dir: Path, day: int) -> pa.Table:
    """The partial of the day directory ``day_dir`` (its rows all on ``day``, days since the epoch): `PARTIAL_SCHEMA`,
    ordered by bucket and topic.

    Raises
    ------
    Inexact
        Where the vectorised figures could differ from the Spark path's.
    """
    files = _data_files(day_dir)
    regular = _regular_day(files, day)
    parts = []
    seen: set[str] = set()
    for table in [None] if regular is not None else _read_day(files):
        topics = regular if table is None else _topics(_minutes(table), day, day_dir)
        names = topics.pop("topic")
        if seen.intersection(names):
            raise Inexact(f"{day_dir}: a topic's rows are not together")
        seen.update(names)
        row: dict[str, Any] = {"bucket": [zlib.crc32(n.encode()) % PARTIAL_BUCKETS for n in names], "topic": names,
                               "day": np.full(len(names), day, np.int32)}
        row.update({c: topics[c] for c in ("samples", "first_ts", "last_ts", "rows", "gaps", "resets")})
        for m in METRICS:
            values, offsets = topics[m]
            row[m] = _doubles_column(values, offsets)
            if m == "bytes_in":
                row["p99"] = _percentiles(values, offsets, 0.99)
        parts.append(pa.table(row, schema=PARTIAL_SCHEMA))
    table = pa.concat_tables(parts) if parts else PARTIAL_SCHEMA.empty_table()
    return table.sort_by([("bucket", "ascending"), ("topic", "ascending")])


def _topics(mins: dict[str, np.ndarray], day: int, day_dir: Path) -> dict[str, Any]:
    """Per topic of `_minutes`' result: its name, samples, first and last minute, rows, gaps, resets and, per metric,
    its ascending non-null rates (all topics' values and the offsets of each topic's)."""
    if len(mins["ts"]) and ((mins["ts"] // _DAY_US) != day).any():
        raise Inexact(f"{day_dir}: rows of another UTC day")
    topic = mins["topic"]
    starts = np.flatnonzero(np.diff(topic, prepend=-1)) if len(topic) else np.zeros(0, np.int64)
    ends = np.append(starts[1:], len(topic))
    out: dict[str, Any] = {
        "topic": mins["names"][topic[starts]].tolist(),
        "samples": (ends - starts).astype(np.int64),
        "first_ts": mins["ts"][starts],
        "last_ts": mins["ts"][ends - 1],
    }
    for c in ("rows", "gaps", "resets"):
        out[c] = np.add.reduceat(mins[c], starts) if len(starts) else np.zeros(0, np.int64)
    for m in METRICS:
        keep = ~mins[m + "_null"]
        owner, values = topic[keep], mins[m][keep]
        counts = np.bincount(owner, minlength=len(mins["names"]))[topic[starts]]
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        for lo, hi in zip(offsets[:-1].tolist(), offsets[1:].tolist()):  # a topic's minutes are contiguous
            values[lo:hi].sort()
        out[m] = (values, offsets)
    return out


def _topic_ranks(col: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct topics of ``col`` in ascending order (code points, i.e. UTF-8 bytes) and each row's index into
    them."""
    encoded = pc.dictionary_encode(col).combine_chunks()
    names = np.array(encoded.dictionary.to_pylist(), dtype=object)
    order = np.argsort(names, kind="stable")
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    return names[order], rank[encoded.indices.to_numpy()]


def _exact_sums(key: np.ndarray, values: np.ndarray, size: int, most: int) -> np.ndarray:
    """Per ``key`` (0 <= key < size), the int64 sum of ``values``, exactly, where at most ``most`` (< 2^21) rows share
    a key: a float64 ``bincount`` is exact while every partial sum stays below 2^53; beyond, the high and low 32 bits
    are summed apart (each exact for fewer than 2^21 rows a key) and joined.

    >>> _exact_sums(np.array([0, 1, 1]), np.array([7, -5, 2**60 + 3]), 2, 2).tolist() == [7, 2**60 - 2]
    True
    """
    if float(np.abs(values).max(initial=0)) * most < 2.0**53:
        return np.bincount(key, weights=values, minlength=size).astype(np.int64)
    high = np.bincount(key, weights=values >> 32, minlength=size).astype(np.int64)
    low = np.bincount(key, weights=values & 0xFFFFFFFF, minlength=size).astype(np.int64)
    return (high << 32) + low


#: Rows per batch of the regular path: its arrays stay small, so a worker reuses their memory instead of faulting in
#: fresh pages for every column of a day.
_BATCH_ROWS = 1 << 18
_COLUMNS = ("ts", "interval_s", "topic", "flags", *METRICS, "bytes_out_interval_s", "messages_in_interval_s")
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def _regular_day(files: Sequence[Path], day: int) -> dict[str, Any] | None:
    """`_topics` of the day's ``files`` without sorting or hashing their rows, where every row is a whole minute of
    ``day`` with 60-second windows (a scraped history's usual day); None otherwise (`_minutes` then decides).

    With one window for every row, a topic-minute's rate is its integer sum over brokers divided by 60, so the rows
    are summed batch by batch into dense (topic, minute-of-day) arrays by ``np.bincount``, and each topic's rates
    sorted row-wise (missing minutes and null rates as NaN, which sort last).
    """
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    ids: dict[str, int] = {}
    counts = resets = np.zeros(0, np.int64)
    sums = {m: np.zeros(0, np.int64) for m in METRICS}
    reported = {m: np.zeros(0, np.int64) for m in METRICS}
    largest = 0.0
    for f in files:
        parquet = pq.ParquetFile(f)
        present = [c for c in _COLUMNS if c in parquet.schema_arrow.names]
        if not {"ts", "topic", "interval_s"} <= set(present):
            return None
        for batch in parquet.iter_batches(batch_size=_BATCH_ROWS, columns=present):
            n = batch.num_rows
            ts, topics = batch.column("ts"), batch.column("topic")
            if topics.null_count or ts.null_count or batch.column("interval_s").null_count:
                return None
            for c in ("interval_s", "bytes_out_interval_s", "messages_in_interval_s"):
                if (c in present and batch.column(c).null_count < n
                        and pc.min_max(batch.column(c)).as_py() != {"min": 60, "max": 60}):
                    return None
            if not pa.types.is_timestamp(ts.type) or ts.type.tz not in (None, "UTC", "Etc/UTC", "+00:00"):
                return None
            per_minute = 60 * _PER_SECOND[ts.type.unit]
            offset = np.frombuffer(ts.buffers()[1], np.int64, n, ts.offset * 8) - day * 1440 * per_minute
            minute = offset // per_minute  # a constant divisor: numpy multiplies instead
            if (minute * per_minute != offset).any() or minute.min(initial=0) < 0 or minute.max(initial=0) >= 1440:
                return None
            encoded = pc.dictionary_encode(topics)
            local = np.array([ids.setdefault(name, len(ids)) for name in encoded.dictionary.to_pylist()], np.int64)
            size = len(ids) * 1440
            # a few rows of many topics: the general path's memory stays with the rows
            if size > max(4 * rows, 1 << 22):
                return None
            if size > len(counts):  # room for twice the topics seen: growing stays rare
                def grow(a: np.ndarray, length: int) -> np.ndarray:
                    return np.concatenate([a, np.zeros(length - len(a), np.int64)])

                counts, resets = grow(counts, 2 * size), grow(resets, 2 * len(ids))
                sums = {m: grow(v, 2 * size) for m, v in sums.items()}
                reported = {m: grow(v, 2 * size) for m, v in reported.items()}
            topic = local[encoded.indices.to_numpy()]
            key = topic * 1440 + minute
            here = np.bincount(key, minlength=size)
            counts[:size] += here
            most = int(here.max(initial=0))
            if "flags" in present:
                reset = (_ints(batch.column("flags"), 0) & FLAG_RESET) != 0
                resets[:len(ids)] += np.bincount(topic, weights=reset, minlength=len(ids)).astype(np.int64)
            for m in METRICS:
                if m not in present or batch.column(m).null_count == n:
                    continue
                col = batch.column(m)
                values = _ints(col, 0)
                largest = max(largest, float(np.abs(values).max(initial=0)))
                sums[m][:size] += _exact_sums(key, values, size, most)
                reported[m][:size] += here if not col.null_count else np.bincount(
                    key, weights=col.is_valid().to_numpy(zero_copy_only=False), minlength=size).astype(np.int64)
    if not ids or largest * counts.max() >= _SUM_LIMIT:  # sums that may near a long's range: the general path checks
        return None
    names = np.array(list(ids), dtype=object)
    order = np.argsort(names, kind="stable")  # code points: UTF-8 bytes
    size = len(ids) * 1440

    def dense(a: np.ndarray) -> np.ndarray:
        return a[:size].reshape(len(ids), 1440)[order]

    present_minutes = dense(counts) > 0
    first = np.argmax(present_minutes, axis=1).astype(np.int64)
    last = 1439 - np.argmax(present_minutes[:, ::-1], axis=1).astype(np.int64)
    out: dict[str, Any] = {
        "topic": names[order].tolist(),
        "samples": present_minutes.sum(axis=1).astype(np.int64),
        "first_ts": day * _DAY_US + first * 60_000_000,
        "last_ts": day * _DAY_US + last * 60_000_000,
        "rows": dense(counts).sum(axis=1),
        "gaps": np.zeros(len(ids), np.int64),  # a 60-second window misses no minute
        "resets": resets[:len(ids)][order],
    }
    for m in METRICS:
        has = dense(reported[m]) > 0
        rates = np.where(has, dense(sums[m]).astype(np.float64) / 60.0, np.nan)
        rates.sort(axis=1)
        kept = has.sum(axis=1)
        out[m] = (rates[np.arange(1440) < kept[:, None]], np.concatenate([[0], np.cumsum(kept)]).astype(np.int64))
    return out


def _doubles_column(values: np.ndarray, offsets: np.ndarray) -> pa.Array:
    """Row i: ``values[offsets[i]:offsets[i+1]]`` as little-endian float64 bytes.

    >>> _doubles(_doubles_column(np.array([1.0, 2.5, -3.0]), np.array([0, 2, 2, 3])))[1].tolist()
    [0, 2, 2, 3]
    """
    data = pa.py_buffer(np.ascontiguousarray(values, "<f8").tobytes())
    return pa.Array.from_buffers(pa.large_binary(), len(offsets) - 1,
        [None, pa.py_buffer((offsets.astype(np.int64) * 8).tobytes()), data])


def _doubles(column: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A `_doubles_column` (any slice of one) as its values and the offsets into them of each row (no copy)."""
    _, offsets, data = column.buffers()
    starts = np.frombuffer(offsets, np.int64)[column.offset:column.offset + len(column) + 1] // 8
    return np.frombuffer(data, "<f8") if data is not None else np.zeros(0), starts


def _percentiles(values: np.ndarray, offsets: np.ndarray, q: float) -> pa.Array:
    """The ``q`` percentile of each ascending slice ``values[offsets[i]:offsets[i+1]]`` (null when empty), as
    `spark_jobs.profile._percentile` computes it."""
    n = np.diff(offsets).astype(np.int64)
    pos = (n - 1).astype(np.float64) * q
    lower = np.floor(pos).astype(np.int64)
    upper = np.ceil(pos).astype(np.int64)
    empty = n == 0
    base = offsets[:-1].astype(np.int64)
    low = values[np.where(empty, 0, base + lower)] if len(values) else np.zeros(len(n))
    high = values[np.where(empty, 0, base + upper)] if len(values) else np.zeros(len(n))
    return pa.array(low + (high - low) * (pos - lower), pa.float64(), mask=empty)


def _write_partial(table: pa.Table, path: Path, print_: str) -> None:
    """Write ``table`` to ``path`` (temp + rename), one row group per bucket, with the fingerprint ``print_``."""
    schema = PARTIAL_SCHEMA.with_metadata({_FINGERPRINT_KEY: print_.encode()})
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    buckets = table["bucket"].to_numpy()
    with pq.ParquetWriter(temporary, schema, compression="zstd") as writer:
        for b in np.unique(buckets):
            index = np.flatnonzero(buckets == b)
            writer.write_table(table.slice(int(index[0]), len(index)).replace_schema_metadata(schema.metadata))
    os.replace(temporary, path)


def _compute_task(job: tuple[str, int, str, str]) -> bool:
    """A Spark task: the partial of one day directory written to its target; False when it cannot be exact."""
    day_dir, day, target, print_ = job
    try:
        table = day_partial(Path(day_dir), day)
    # e.g. a column of another type: Spark's path decides
    except (Inexact, pa.ArrowException, ValueError, KeyError) as exc:
        _log.info("profile of %s by Spark: %s", day_dir, exc)
        return False
    _write_partial(table, Path(target), print_)
    return True


_FIGURES = (
    ("bytes_in", (("bytes_in_p50", 0.5), ("bytes_in_p95", 0.95), ("bytes_in_p99", 0.99), ("bytes_in_max", None))),
    ("bytes_out", (("bytes_out_p95", 0.95), ("bytes_out_p99", 0.99), ("bytes_out_max", None))),
    ("messages_in", (("messages_in_p99", 0.99),)),
)


def merge_topics(tables: Sequence[pa.Table]) -> list[dict[str, Any]]:
    """Per topic, the profile's figures from its days' partials (rows of `PARTIAL_SCHEMA`, each topic's days may come
    from several ``tables``), as `spark_jobs.profile.aggregate_topic_profile` computes them; ordered by topic.

    The value lists are not copied into one table: each topic's slices are gathered straight into the array its order
    statistics are taken on.
    """
    batches = [b for t in tables for b in t.to_batches()]  # no copy: a batch per row group read
    rows: dict[str, list[tuple[int, int]]] = {}  # topic -> (batch, row) of each of its days
    for i, b in enumerate(batches):
        for r, topic in enumerate(b.column("topic").to_pylist()):
            rows.setdefault(topic, []).append((i, r))
    scalars = [{c: b.column(c).to_numpy() for c in ("day", "samples", "first_ts", "last_ts", "rows", "gaps", "resets")}
        for b in batches]
    p99 = [b.column("p99").to_pylist() for b in batches]
    flat = [{m: _doubles(b.column(m)) for m in METRICS} for b in batches]
    out = []
    for topic in sorted(rows):
        days = sorted(rows[topic], key=lambda ir: int(scalars[ir[0]]["day"][ir[1]]))
        stats: dict[str, Any] = {"topic": topic}
        for m, figures in _FIGURES:
            parts = []
            for i, r in days:
                values, offsets = flat[i][m]
                parts.append(values[offsets[r]:offsets[r + 1]])
            stats.update(_order_statistics(np.concatenate(parts) if len(parts) > 1 else parts[0], figures))

        def column(c: str) -> np.ndarray:
            return np.array([scalars[i][c][r] for i, r in days], np.int64)

        stats["samples"] = int(column("samples").sum())
        stats["first_us"] = int(column("first_ts").min())
        stats["last_us"] = int(column("last_ts").max())
        stats["days_observed"] = len(days)
        stats["daily"] = [(int(scalars[i]["day"][r]), p99[i][r]) for i, r in days]
        stats["rows"] = int(column("rows").sum())
        stats["gaps"] = int(column("gaps").sum())
        stats["counter_resets"] = int(column("resets").sum())
        out.append(stats)
    return out


def _order_statistics(values: np.ndarray, figures: Sequence[tuple[str, float | None]]) -> dict[str, float | None]:
    """Each figure of ``values`` (unsorted): the ``q`` percentile (``q`` None: the maximum), null when empty."""
    n = len(values)
    if not n:
        return {name: None for name, _ in figures}
    wanted = {n - 1}
    positions = {}
    for name, q in figures:
        if q is not None:
            pos = float(n - 1) * q
            lower, upper = int(np.floor(pos)), int(np.ceil(pos))
            positions[name] = (pos, lower, upper)
            wanted |= {lower, upper}
    ranks = sorted(wanted)
    part = np.partition(values, ranks)  # a copy: ``values`` may be a view of a partial
    out: dict[str, float | None] = {}
    for name, q in figures:
        if q is None:
            out[name] = float(part[n - 1])
        else:
            pos, lower, upper = positions[name]
            low, high = float(part[lower]), float(part[upper])
            out[name] = low + (high - low) * (pos - lower)
    return out


def _merge_task(job: tuple[Sequence[str], Sequence[int]]) -> list[dict[str, Any]]:
    """A Spark task: the topics of ``buckets`` merged over every partial file."""
    paths, buckets = job
    wanted = set(buckets)
    tables = []
    for p in paths:
        parquet = pq.ParquetFile(p)
        meta = parquet.metadata
        # one row group per bucket (`_write_partial`): its statistics name it
        groups = [g for g in range(meta.num_row_groups) if meta.row_group(g).column(0).statistics.min in wanted]
        if groups:
            tables.append(parquet.read_row_groups(groups))
    return merge_topics(tables)


@dataclass(frozen=True)
class PendingPartial:
    """A partial computed for a day of the history that had none (or a stale one): installed after the commit."""

    source: Path
    day_dir: Path
    fingerprint: str


def _days(root: Path, cluster: str) -> dict[str, Path]:
    """The ``dt`` directories of ``cluster`` under the table ``root``, by day, that hold data files."""
    return {day: d for day, d in day_dirs(root, cluster).items() if _data_files(d)}


def topic_stats(spark: Any, history: str, staged: str, cluster: str, touched: Sequence[str],
    work: str | os.PathLike[str]
                ) -> tuple[list[dict[str, Any]], list[PendingPartial]] | None:
    """Per topic of ``cluster``, the profile's figures over the history's days not in ``touched`` and the days staged
    under ``staged``, and the partials to install into the history after the commit (`install_partials`); None
    when the Spark path must compute them (see the module's docstring).

    Partials of staged days are written into their staged directories (they move into the history with them).
    """
    from spark_jobs.history import _is_local, _local

    if not (_is_local(history) and _is_local(staged)):
        return None
    if spark.conf.get("spark.sql.session.timeZone") not in ("UTC", "Etc/UTC", "GMT", "Z", "+00:00"):
        return None
    try:
        sc = spark.sparkContext
    except Exception:  # noqa: BLE001 - a Spark Connect session has no SparkContext: its client runs the tasks itself
        sc = None  # (it holds the local history: it renames the days into it)
    # absolute: the tasks of a standalone cluster run in their own directories
    history_root, staged_root, work = (Path(os.path.abspath(_local(os.fspath(p)))) for p in (history, staged, work))
    days = {d: p for d, p in _days(history_root, cluster).items() if d not in set(touched)}
    days.update(_days(staged_root, cluster))
    jobs, pending, partials = [], [], []
    for day, directory in sorted(days.items()):
        try:
            number = (date.fromisoformat(day) - date(1970, 1, 1)).days
        except ValueError:
            return None
        try:
            print_ = fingerprint(directory)
        except Exception:  # noqa: BLE001 - a data file pyarrow cannot read: the Spark path reports it as today
            return None
        path = directory / PARTIAL_FILE
        if _stored_fingerprint(path) == print_:
            partials.append(os.fspath(path))
            continue
        if directory.is_relative_to(staged_root):
            target = path
        else:
            target = work / "partials" / directory.parent.name / directory.name / PARTIAL_FILE
            pending.append(PendingPartial(target, directory, print_))
        jobs.append((os.fspath(directory), number, os.fspath(target), print_))
        partials.append(os.fspath(target))
    if jobs and not all(_tasks(sc, f"profile of {len(jobs)} day(s)", _compute_task, jobs)):
        return None
    if not partials:
        return [], pending
    size = sum(os.path.getsize(p) for p in partials)
    tasks = min(PARTIAL_BUCKETS, max(sc.defaultParallelism if sc else 1, -(-size // (64 << 20))))
    merges = [(partials, list(range(t, PARTIAL_BUCKETS, tasks))) for t in range(tasks)]
    parts = _tasks(sc, f"profile of {len(days)} day(s): merging per topic", _merge_task, merges)
    stats = [s for part in parts for s in part]
    return sorted(stats, key=lambda s: s["topic"]), pending


def _tasks(sc: Any, description: str, task: Any, jobs: Sequence[Any]) -> list[Any]:
    """``task`` of each job: one Spark task each on a cluster; under a local master, or Spark Connect (no
    SparkContext: its client holds the local history), in this process's threads, as many as the cores Spark uses:
    the same numpy and Arrow work, without shipping it to Python workers (nor starting them)."""
    if sc is None or sc.master.startswith("local"):
        threads = min(len(jobs), sc.defaultParallelism if sc is not None else os.cpu_count() or 1)
        if threads <= 1:
            return [task(job) for job in jobs]
        with ThreadPoolExecutor(threads) as pool:
            return list(pool.map(task, jobs))
    sc.setJobDescription(description)
    try:
        return sc.parallelize(jobs, len(jobs)).map(task).collect()
    finally:
        sc.setJobDescription(None)


def install_partials(pending: Sequence[PendingPartial]) -> None:
    """Move (or copy) each computed partial into its history day (temp + rename inside the day directory), if the
    day's data files are still the ones it was computed from; a failure only leaves the day to be computed again next
    time."""
    for p in pending:
        try:
            if not p.day_dir.is_dir() or fingerprint(p.day_dir) != p.fingerprint:
                continue
            temporary = p.day_dir / f".{PARTIAL_FILE}.{uuid.uuid4().hex}.tmp"
            try:
                os.replace(p.source, temporary)  # the work directory is usually on the history's file system
            except OSError:
                shutil.copyfile(p.source, temporary)
            os.replace(temporary, p.day_dir / PARTIAL_FILE)
        except OSError as exc:
            _log.warning("could not store the profile partial of %s: %s", p.day_dir, exc)
