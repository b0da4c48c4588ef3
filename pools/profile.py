"""The topic profile (*contract*): what `spark_jobs` writes and `planner` reads, one row per topic.

A profile directory holds::

    topic_profile.parquet       one row per topic, columns `TOPIC_COLUMNS` (the Arrow schema `TOPIC_SCHEMA`)
    topic_profile.json          the same rows as JSON (sorted by topic), for people and diffs
    partition_profile.parquet   one row per partition, columns `PARTITION_COLUMNS`
    backtest.parquet            the forecast's rolling-origin backtest on the history, columns `BACKTEST_COLUMNS`

Rates are bytes (or messages) per second summed over brokers (leader traffic only: replication is not in
Kafka's per-topic meters). Growth is relative per day (``0.01`` = +1 %/day, compounding). Forecasts are at
``forecast_horizon_days`` after ``last_ts``, with a low/high band.

The tiered-storage columns `REMOTE_COLUMNS` (KIP-405: Kafka's ``RemoteLogSizeBytes``, ``RemoteCopyBytesPerSec``
and ``RemoteFetchBytesPerSec``) follow the others only when the history had a remote-storage metric for some
topic, so a profile without them is byte for byte what it was before they existed; a null is "unmeasured".
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pools.atomic import dump_json, write_bytes, write_text
from pools.errors import InputError
from pools.input_limits import MAX_HORIZON_DAYS, MAX_PARTITIONS_PER_TOPIC

__all__ = [
    "TOPIC_SCHEMA",
    "PARTITION_SCHEMA",
    "TOPIC_COLUMNS",
    "REMOTE_COLUMNS",
    "PARTITION_COLUMNS",
    "TopicProfile",
    "PartitionProfile",
    "save_profile",
    "load_profile",
    "load_partition_profile",
    "load_profile_dir",
    "TOPIC_PROFILE_FILE",
    "TOPIC_PROFILE_JSON",
    "PARTITION_PROFILE_FILE",
    "BACKTEST_FILE",
    "BACKTEST_COLUMNS",
    "BACKTEST_METRICS",
    "MIN_FIT_DAYS",
    "BacktestRow",
    "save_backtest",
    "load_backtest",
]

TOPIC_PROFILE_FILE = "topic_profile.parquet"
TOPIC_PROFILE_JSON = "topic_profile.json"
PARTITION_PROFILE_FILE = "partition_profile.parquet"
BACKTEST_FILE = "backtest.parquet"

#: The daily series the backtest scores: the topic's daily p99 bytes-in/s and its storage bytes.
BACKTEST_METRICS = ("bytes_in_p99", "storage_bytes")
#: The fewest days (first to origin, inclusive) a backtest origin fits on: one seasonal period (a week).
MIN_FIT_DAYS = 7

_TS = pa.timestamp("us", tz="UTC")

#: (name, Arrow type, nullable, meaning) for every topic-profile column, in file order.
TOPIC_COLUMNS: tuple[tuple[str, pa.DataType, bool, str], ...] = (
    ("topic", pa.string(), False, "topic name"),
    ("partitions", pa.int32(), False, "partition count (latest size snapshot or metadata)"),
    ("bytes_in_p50", pa.float64(), False, "producer bytes/s into the topic, median minute"),
    ("bytes_in_p95", pa.float64(), False, "bytes/s, 95th percentile minute"),
    ("bytes_in_p99", pa.float64(), False, "bytes/s, 99th percentile minute"),
    ("bytes_in_max", pa.float64(), False, "bytes/s, busiest minute"),
    ("bytes_out_p95", pa.float64(), True, "consumer fetch bytes/s, 95th percentile (null: no BytesOut data)"),
    ("bytes_out_p99", pa.float64(), True, "consumer fetch bytes/s, 99th percentile"),
    ("bytes_out_max", pa.float64(), True, "consumer fetch bytes/s, busiest minute"),
    ("messages_in_p99", pa.float64(), True, "messages/s, 99th percentile minute"),
    ("storage_bytes", pa.int64(), False, "bytes on disk per replica set: largest replica per partition, summed"),
    ("bytes_in_p99_growth_per_day", pa.float64(), False, "relative growth per day of the daily p99 bytes-in"),
    ("storage_growth_per_day", pa.float64(), False, "relative growth per day of storage_bytes"),
    ("forecast_horizon_days", pa.int32(), False, "days after last_ts the forecast is for"),
    ("forecast_bytes_in_p99", pa.float64(), False, "forecast daily p99 bytes-in/s at the horizon"),
    ("forecast_bytes_in_p99_low", pa.float64(), False, "lower edge of the forecast band"),
    ("forecast_bytes_in_p99_high", pa.float64(), False, "upper edge of the forecast band"),
    ("forecast_storage_bytes", pa.float64(), False, "forecast storage at the horizon"),
    ("forecast_storage_low", pa.float64(), False, "lower edge of the storage band"),
    ("forecast_storage_high", pa.float64(), False, "upper edge of the storage band"),
    ("days_observed", pa.int32(), False, "days with data"),
    ("samples", pa.int64(), False, "topic-minutes that went into the percentiles"),
    ("gaps", pa.int64(), False, "missing minutes between a series' first and last sample, summed over brokers"),
    ("counter_resets", pa.int64(), False, "counter resets seen (leader moves, restarts)"),
    ("rejected_rows", pa.int64(), False, "input rows for this topic that were quarantined"),
    ("first_ts", _TS, False, "first minute with data"),
    ("last_ts", _TS, False, "last minute with data"),
)
#: The tiered-storage columns, after `TOPIC_COLUMNS`, written only when some topic has one (see the module doc).
REMOTE_COLUMNS: tuple[tuple[str, pa.DataType, bool, str], ...] = (
    ("remote_log_size_bytes", pa.int64(), True,
     "bytes in remote storage at the last minute: RemoteLogSizeBytes summed over brokers (null: unmeasured)"),
    ("remote_copy_bytes_p99", pa.float64(), True,
     "bytes/s copied to remote storage (RemoteCopyBytesPerSec), 99th percentile minute (null: unmeasured)"),
    ("remote_fetch_bytes_p99", pa.float64(), True,
     "bytes/s read from remote storage to serve fetches (RemoteFetchBytesPerSec), 99th percentile minute"),
)

#: (name, Arrow type, nullable, meaning) for every partition-profile column.
PARTITION_COLUMNS: tuple[tuple[str, pa.DataType, bool, str], ...] = (
    ("topic", pa.string(), False, "topic name"),
    ("partition", pa.int32(), False, "partition id"),
    ("size_bytes", pa.int64(), False, "largest replica's size at the latest snapshot (isFuture excluded)"),
    ("bytes_in_rate", pa.float64(), True, "mean bytes-in/s of this partition where the logs have it"),
)

#: (name, Arrow type, nullable, meaning) for every backtest column (`spark_jobs.growth.backtest`).
BACKTEST_COLUMNS: tuple[tuple[str, pa.DataType, bool, str], ...] = (
    ("topic", pa.string(), False, "topic name"),
    ("metric", pa.string(), False, "the daily series: bytes_in_p99 (B/s) or storage_bytes"),
    ("origin", pa.date32(), False, "the last day of history the forecast was fitted on"),
    ("horizon_days", pa.int32(), False, "days after the origin the forecast is for"),
    ("actual", pa.float64(), False, "the series' value on origin + horizon_days"),
    ("forecast", pa.float64(), False, "the forecast made at the origin"),
    ("low", pa.float64(), False, "lower edge of its band"),
    ("high", pa.float64(), False, "upper edge of its band"),
)

BACKTEST_SCHEMA = pa.schema([pa.field(n, t, nullable=null) for n, t, null, _ in BACKTEST_COLUMNS])

TOPIC_SCHEMA = pa.schema([pa.field(n, t, nullable=null) for n, t, null, _ in TOPIC_COLUMNS])
_REMOTE_SCHEMA = pa.schema([pa.field(n, t, nullable=null) for n, t, null, _ in TOPIC_COLUMNS + REMOTE_COLUMNS])
PARTITION_SCHEMA = pa.schema([pa.field(n, t, nullable=null) for n, t, null, _ in PARTITION_COLUMNS])


@dataclass(frozen=True, slots=True)
class TopicProfile:
    """One topic's row of the profile; fields are `TOPIC_COLUMNS`."""

    topic: str
    partitions: int
    bytes_in_p50: float
    bytes_in_p95: float
    bytes_in_p99: float
    bytes_in_max: float
    bytes_out_p95: float | None
    bytes_out_p99: float | None
    bytes_out_max: float | None
    messages_in_p99: float | None
    storage_bytes: int
    bytes_in_p99_growth_per_day: float
    storage_growth_per_day: float
    forecast_horizon_days: int
    forecast_bytes_in_p99: float
    forecast_bytes_in_p99_low: float
    forecast_bytes_in_p99_high: float
    forecast_storage_bytes: float
    forecast_storage_low: float
    forecast_storage_high: float
    days_observed: int
    samples: int
    gaps: int
    counter_resets: int
    rejected_rows: int
    first_ts: datetime
    last_ts: datetime
    remote_log_size_bytes: int | None = None
    remote_copy_bytes_p99: float | None = None
    remote_fetch_bytes_p99: float | None = None

    @property
    def remote_measured(self) -> bool:
        """Whether the history had any of the topic's remote-storage metrics (`REMOTE_COLUMNS`)."""
        return any(getattr(self, name) is not None for name, *_ in REMOTE_COLUMNS)

    @property
    def forecast_growth_factor(self) -> float:
        """Forecast over current daily p99 bytes-in (1.0 when there is no traffic)."""
        return self.forecast_bytes_in_p99 / self.bytes_in_p99 if self.bytes_in_p99 > 0 else 1.0


@dataclass(frozen=True, slots=True)
class PartitionProfile:
    """One partition's size and, where known, its bytes-in rate."""

    topic: str
    partition: int
    size_bytes: int
    bytes_in_rate: float | None = None


@dataclass(frozen=True, slots=True)
class BacktestRow:
    """One backtest forecast of a topic's daily series; fields are `BACKTEST_COLUMNS`."""

    topic: str
    metric: str
    origin: date
    horizon_days: int
    actual: float
    forecast: float
    low: float
    high: float


def save_backtest(out_dir: str | os.PathLike[str], rows: list[BacktestRow]) -> Path:
    """Write ``backtest.parquet`` into ``out_dir`` atomically, sorted by topic, metric, origin and horizon."""
    ordered = sorted(rows, key=lambda r: (r.topic, r.metric, r.origin, r.horizon_days))
    path = Path(out_dir) / BACKTEST_FILE
    write_bytes(path, _parquet_bytes(pa.Table.from_pylist([asdict(r) for r in ordered], schema=BACKTEST_SCHEMA)))
    return path


def load_backtest(profile_dir: str | os.PathLike[str]) -> list[BacktestRow] | None:
    """Read ``backtest.parquet`` of a profile directory (``None`` when the profile has none), validated as
    `load_profile`; ``metric`` must be one of `BACKTEST_METRICS`."""
    path = Path(profile_dir) / BACKTEST_FILE
    if not path.exists():
        return None
    table = _read_table(path, BACKTEST_SCHEMA)
    _check_rows(path, table, BACKTEST_COLUMNS, ("topic", "metric", "origin", "horizon_days"))
    rows = table.to_pylist()
    for i, row in enumerate(rows):
        if row["metric"] not in BACKTEST_METRICS:
            raise InputError(f"{path}: row {i}: metric: expected one of {', '.join(BACKTEST_METRICS)}, "
                             f"got {row['metric']!r}")
    return [BacktestRow(**row) for row in rows]


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"profile value {value!r} is not finite")
    return value


def _parquet_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd", write_statistics=False, store_schema=True)
    return sink.getvalue().to_pybytes()


def save_profile(
    out_dir: str | os.PathLike[str],
    topics: Mapping[str, TopicProfile] | list[TopicProfile],
    partitions: list[PartitionProfile] | None = None,
) -> Path:
    """Write the profile files into ``out_dir`` (each atomically), sorted so output is byte-identical."""
    out = Path(out_dir)
    rows = sorted(topics.values() if isinstance(topics, Mapping) else topics, key=lambda r: r.topic)
    schema = _REMOTE_SCHEMA if any(r.remote_measured for r in rows) else TOPIC_SCHEMA
    dicts = [{k: v for k, v in asdict(r).items() if k in schema.names} for r in rows]
    write_bytes(out / TOPIC_PROFILE_FILE, _parquet_bytes(pa.Table.from_pylist(dicts, schema=schema)))
    write_text(out / TOPIC_PROFILE_JSON, dump_json([{k: _json_value(v) for k, v in d.items()} for d in dicts]))
    prows = sorted(partitions or [], key=lambda r: (r.topic, r.partition))
    ptable = pa.Table.from_pylist([asdict(r) for r in prows], schema=PARTITION_SCHEMA)
    write_bytes(out / PARTITION_PROFILE_FILE, _parquet_bytes(ptable))
    return out


def _read_table(path: Path, schema: pa.Schema) -> pa.Table:
    if not path.exists():
        raise InputError(f"{path}: no such file (expected a profile written by `poolplan ingest`)")
    if path.is_dir():
        raise InputError(f"{path}: is a directory; expected a Parquet file")
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable Parquet file: {str(exc).splitlines()[0]}") from None
    missing = [f.name for f in schema if f.name not in table.column_names]
    if missing:
        raise InputError(f"{path}: missing column(s) {', '.join(missing)}")
    try:
        return table.select(schema.names).cast(schema)
    except (pa.ArrowException, ValueError) as exc:
        raise InputError(f"{path}: columns do not match the profile schema: {str(exc).splitlines()[0]}") from None


def _column_names(path: Path) -> list[str]:
    """The columns a Parquet file holds (none when it is unreadable: `_read_table` then names the problem)."""
    try:
        return pq.read_schema(path).names
    except (pa.ArrowException, OSError, ValueError):
        return []


#: Column → (smallest, largest) valid value; every float must also be finite. Growth is relative per day: below
#: -1 a quantity would turn negative.
_RANGES: dict[str, tuple[float, float]] = {
    "partitions": (0, MAX_PARTITIONS_PER_TOPIC),
    "partition": (0, MAX_PARTITIONS_PER_TOPIC - 1),
    "forecast_horizon_days": (0, MAX_HORIZON_DAYS),
    "bytes_in_p99_growth_per_day": (-1, math.inf),
    "storage_growth_per_day": (-1, math.inf),
}


def _check_rows(path: Path, table: pa.Table, columns: tuple[tuple[str, pa.DataType, bool, str], ...],
                key: tuple[str, ...]) -> None:
    """Every value in range (see `_RANGES`; otherwise >= 0), finite, non-null where required; keys unique."""
    for name, kind, nullable, _ in columns:
        column = table.column(name)
        if column.null_count and not nullable:
            row = pc.index(pc.is_null(column), True).as_py()
            raise InputError(f"{path}: row {row}: {name}: expected a value, got null")
        if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
            continue
        low, high = _RANGES.get(name, (0, math.inf))
        values = column.cast(pa.float64())
        bad = pc.invert(pc.and_(pc.and_(pc.greater_equal(values, low), pc.less_equal(values, high)),
                                pc.is_finite(values)))
        bad = pc.fill_null(bad, False)
        if pc.any(bad).as_py():
            row = pc.index(bad, True).as_py()
            shown = f"{low:g}..{high:g}" if high < math.inf else f"a finite number >= {low:g}"
            raise InputError(f"{path}: row {row}: {name}: expected {shown}, got {column[row].as_py()!r}")
    keys = table.select(list(key))
    if keys.num_rows and keys.group_by(list(key)).aggregate([]).num_rows != keys.num_rows:
        rows = keys.to_pylist()
        seen: set[tuple[Any, ...]] = set()
        for i, row in enumerate(rows):
            value = tuple(row[k] for k in key)
            if value in seen:
                raise InputError(f"{path}: row {i}: {'/'.join(key)} {'-'.join(map(str, value))} is listed twice")
            seen.add(value)


def load_profile(profile_dir: str | os.PathLike[str]) -> dict[str, TopicProfile]:
    """Read ``topic_profile.parquet`` from a profile directory (or the file itself): topic → row.

    Raises
    ------
    InputError
        Naming the file, row and column: an unreadable file, a missing column, a null, NaN, infinite or negative
        rate or size, a partition count past `MAX_PARTITIONS_PER_TOPIC`, a topic listed twice, ``first_ts`` after
        ``last_ts``.
    """
    path = Path(profile_dir)
    if path.is_dir():
        path = path / TOPIC_PROFILE_FILE
    remote = path.is_file() and bool(set(_column_names(path)) & {name for name, *_ in REMOTE_COLUMNS})
    table = _read_table(path, _REMOTE_SCHEMA if remote else TOPIC_SCHEMA)
    _check_rows(path, table, TOPIC_COLUMNS + REMOTE_COLUMNS if remote else TOPIC_COLUMNS, ("topic",))
    rows = table.to_pylist()
    for i, row in enumerate(rows):
        if row["first_ts"] > row["last_ts"]:
            raise InputError(f"{path}: row {i}: first_ts: expected a time at or before last_ts {row['last_ts']}")
    return {row["topic"]: TopicProfile(**row) for row in rows}


def load_partition_profile(profile_dir: str | os.PathLike[str]) -> dict[tuple[str, int], PartitionProfile]:
    """Read ``partition_profile.parquet``: (topic, partition) → row; validated as `load_profile`."""
    path = Path(profile_dir)
    if path.is_dir():
        path = path / PARTITION_PROFILE_FILE
    table = _read_table(path, PARTITION_SCHEMA)
    _check_rows(path, table, PARTITION_COLUMNS, ("topic", "partition"))
    return {(r["topic"], r["partition"]): PartitionProfile(**r) for r in table.to_pylist()}


def load_profile_dir(
    profile_dir: str | os.PathLike[str], *, required: bool = True
) -> tuple[dict[str, TopicProfile] | None, dict[tuple[str, int], PartitionProfile] | None]:
    """The one way commands read a profile directory: its topic rows and, when present, its partition rows.

    With ``required`` false a directory without ``topic_profile.parquet`` gives ``(None, None)`` (the audit then
    skips traffic checks); otherwise it is an `InputError` naming the file.
    """
    path = Path(profile_dir)
    if not path.is_dir() and path.exists():
        raise InputError(f"{path}: expected a profile directory (holding {TOPIC_PROFILE_FILE})")
    if not required and not (path / TOPIC_PROFILE_FILE).exists():
        return None, None
    topics = load_profile(path)
    partitions = load_partition_profile(path) if (path / PARTITION_PROFILE_FILE).exists() else None
    return topics, partitions
