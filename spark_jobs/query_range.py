"""Prometheus ``/api/v1/query_range`` exports (and API responses): one JSON document per file, of any size.

``{"status":"success","data":{"resultType":"matrix","result":[{"metric":{...},"values":[[<float s>,"<value>"],
...]}]}}``. Timestamps are float seconds, values strings. Each file is streamed by one task:
`spark_jobs.json_stream` cuts the document into its series, each series is parsed on its own and turned
into Arrow record batches written straight to Parquet (`stage_query_range`), so memory holds one chunk of
the file and one series, never the document (Spark's ``multiLine`` reader, or ``from_json`` over the file's
text, materialise the whole document as one row: the out-of-memory of issue 13).

The metric is ``metric.__name__`` (with its labels, in any spelling `spark_jobs.metric_names` knows, the
tiered-storage meters' too: `MetricNames.minute_meter`; a rate gauge is read as the rate of the step before each
sample; the ``RemoteLogSizeBytes`` gauge, `MetricNames.remote`, gives size records of metric ``remote_log_size``
(with the series' ``partition`` label when it has one), as in `spark_jobs.prom_text`) or, for exports of an
expression, the file name's prefix ``<metric>-<anything>.json``. Pre-aggregated exports (``increase()`` or
``rate()`` values) are read as such, never as counters: by `values` (``--range-values``), or by the recording-rule
naming convention ``level:metric:operation`` whose last part is ``increase<window>`` or ``rate<window>``
(``instance_topic:kafka_server_brokertopicmetrics_bytesin:increase1m``).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from spark_jobs.history_contract import ALL_BROKERS, STEPS_DIR, STEPS_SCHEMA, bucket_of, steps_file
from spark_jobs.json_stream import BROKEN, CHUNK_BYTES, SERIES, read_chunks, split_result
from spark_jobs.metric_names import (
    COUNTER,
    GAUGE,
    LOG_SIZE,
    SIZE_METRICS,
    MetricNames,
    RangeValues,
    duration_s,
    is_id,
)
from spark_jobs.records import (
    KIND_COUNTER,
    KIND_IGNORED,
    KIND_INCREASE,
    KIND_REJECTED,
    KIND_SCRAPE,
    KIND_SIZE,
    KIND_STEPS,
    MAX_COUNT,
    RAW_LIMIT,
    STAGED_SCHEMA,
)
from spark_jobs.staging import (
    ReaderOptions,
    file_size,
    open_input,
    repeated_strings,
    run_tasks,
    staged_batch,
    write_parquet,
)

__all__ = ["stage_query_range", "parse_file", "SOURCE"]

SOURCE = "prom_range"

#: The last millisecond of year 9999: a later timestamp is not a real sample time.
_MAX_TS_MS = 253_402_300_799_999
_BATCH_ROWS = 65_536
#: Rows a steps sink holds per bucket before writing them (a row group: about 4 MB).
_SINK_ROWS = 1 << 17
_FILE_METRIC = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)-[^/]*\.json$")
_OPERATION = re.compile(r"^(increase|rate)(\d+(?:ms|[smhdwy]))$")
_KINDS = (KIND_COUNTER, KIND_SIZE, KIND_INCREASE, KIND_STEPS, KIND_SCRAPE, KIND_IGNORED, KIND_REJECTED)
_MINUTE_MS = 60_000
_REASONS = (
    None,
    "malformed_pair",
    "other_metric",
    "broker_total",
    "bad_value",
    "nan_value",
    "infinite_value",
    "negative_value",
    "value_out_of_range",
    "bad_timestamp",
    "unknown_broker",
    "bad_partition",
    "malformed_json",
    "query_failed",
    "not_a_matrix",
    "empty_result",
    "malformed_series",
    "not_utf8",
)
_R = {r: i for i, r in enumerate(_REASONS)}


def _spacing_s(ts_ms: np.ndarray) -> float:
    """The median spacing of a series' sample times in seconds (a rate gauge's step), 60 with fewer than two.

    >>> _spacing_s(np.array([60_000, 90_000, 120_000, 210_000]))
    30.0
    """
    steps = np.diff(np.unique(ts_ms[ts_ms > 0]))
    return float(np.median(steps)) / 1000 if steps.size else 60.0


def _metric(name: str | None, labels: Mapping[str, str], names: MetricNames) -> tuple[str | None, RangeValues | None]:
    """The normalized metric of a series (by its name and labels, `spark_jobs.metric_names`), and whether it is
    a counter or pre-aggregated: a recording rule's ``level:metric:increase1m`` or a rate gauge (its window
    None: the spacing of its samples)."""
    if not name:
        return None, RangeValues()
    recorded = names.recorded(name)
    if recorded is not None:
        return recorded.metric, RangeValues(recorded.operation, recorded.window_s)
    parts = name.split(":")
    match = _OPERATION.match(parts[-1].lower()) if len(parts) >= 2 else None
    if match:
        base = parts[-2]
        meter = names.minute_meter(base, labels) or names.minute_meter(base + "_total", labels)
        if meter and meter.metric != LOG_SIZE:
            return meter.metric, RangeValues(match.group(1), duration_s(match.group(2)))
        return None, RangeValues()
    meter = names.minute_meter(name, labels) or names.remote(name, labels)
    if meter is None:
        return None, RangeValues()
    return meter.metric, (RangeValues() if meter.type in (COUNTER, GAUGE) else None)


class _Batches:
    """Accumulates per-series columns and cuts them into record batches of about `_BATCH_ROWS` rows.

    Strings that are constant per series (topic, metric …) are stored once and expanded with Arrow's
    ``take``; no Python object is made per record.
    """

    def __init__(self, file: str, cluster: str, source: str) -> None:
        self.file, self.cluster, self.source = file, cluster, source
        self.parts: list[dict[str, Any]] = []
        self.rows = 0

    def add(self, n: int, *, kind: np.ndarray, reason: np.ndarray, raw: list[str | None] | None = None,
        **series: Any) -> Iterator[pa.RecordBatch]:
        self.parts.append({"n": n, "kind": kind, "reason": reason, "raw": raw, **series})
        self.rows += n
        if self.rows >= _BATCH_ROWS:
            yield self.flush()

    def flush(self) -> pa.RecordBatch:
        parts, self.parts, self.rows = self.parts, [], 0
        counts = np.array([p["n"] for p in parts], np.int64)
        rows = int(counts.sum())
        which = pa.array(np.repeat(np.arange(len(parts), dtype=np.int32), counts))
        kind = np.concatenate([p["kind"] for p in parts]).astype(np.int32)
        reason = np.concatenate([p["reason"] for p in parts]).astype(np.int32)
        no_data = kind >= _KINDS.index(KIND_IGNORED)

        def per_series(name: str, typ: pa.DataType) -> pa.Array:
            if typ == pa.string():
                return repeated_strings([p.get(name) for p in parts], counts)
            return pa.array([p.get(name) for p in parts], typ).take(which)

        def per_row(name: str, dtype: type, fill: Any) -> np.ndarray:
            return np.concatenate(
                [p[name] if p.get(name) is not None else np.full(p["n"], fill, dtype) for p in parts]).astype(dtype)

        partition = per_row("partition", np.int64, -1)
        ts_ms = per_row("ts_ms", np.int64, 0)
        no_sample = no_data | (ts_ms < 0)  # a count row (`_COUNT_TS`) has no time and no value
        span = per_row("span_ms", np.int64, -1)
        window = per_series("window_s", pa.float64()).to_numpy(zero_copy_only=False)
        raw = ([r for p in parts for r in (p["raw"] if p["raw"] is not None else [None] * p["n"])]
               if any(p["raw"] for p in parts) else None)
        return staged_batch(
            rows, source=self.source, file=self.file, cluster=self.cluster,
            kind=pa.array(_KINDS, pa.string()).take(pa.array(kind)),
            reason=pa.array(_REASONS, pa.string()).take(pa.array(reason)),
            ts_ms=pa.array(ts_ms, pa.int64(), mask=no_sample),
            broker_id=per_series("broker_id", pa.int32()),
            topic=per_series("topic", pa.string()),
            partition=pa.array(partition, pa.int32(), mask=no_data | (partition < 0)),
            metric=_masked(per_series("metric", pa.string()), no_data),
            value=pa.array(per_row("value", np.float64, np.nan), pa.float64(), mask=no_sample),
            is_future=pa.array(np.zeros(rows, bool), pa.bool_(), mask=no_data),
            raw=pa.array(raw, pa.string()) if raw is not None else pa.nulls(rows, pa.string()),
            window_s=pa.array(np.nan_to_num(window), pa.float64(), mask=no_data | np.isnan(window)),
            n=pa.array(per_row("units", np.int64, 1), pa.int64()),
            counted=pa.array(per_row("counted", bool, False), pa.bool_()),
            inner=pa.array(per_row("inner", bool, False), pa.bool_()),
            fast_ok=pa.array(per_row("fast_ok", bool, False), pa.bool_()),
            segment=per_series("segment", pa.int32()),
            span_ms=pa.array(span, pa.int64(), mask=span < 0),
        )


def _masked(array: pa.Array, mask: np.ndarray) -> pa.Array:
    """``array`` with nulls where ``mask`` is true."""
    return pc.if_else(pa.array(mask), pa.nulls(len(array), array.type), array)


def _raw(labels: Any, pair: Any) -> str:
    return orjson.dumps({"metric": labels, "value": pair}).decode()[:RAW_LIMIT]


_VALUES_KEY = re.compile(rb'"values"\s*:\s*\[')
_TO_CSV = bytes.maketrans(b"]", b"\n")
_OPEN, _CLOSE, _QUOTE, _COMMA, _SPACE = b'[]", '
#: Not in a compact values array: a space, or a line break (it would end a CSV line of Arrow's).
_BREAKS = np.frombuffer(b" \n\r", np.uint8)
_CSV_READ = pcsv.ReadOptions(column_names=["_", "ts", "value"], use_threads=False, block_size=1 << 24)
_CSV_CONVERT = pcsv.ConvertOptions(
    column_types={"ts": pa.float64(), "value": pa.float64()},
    include_columns=["ts", "value"],
    null_values=[],
    quoted_strings_can_be_null=False,
)
#: Bytes of value pairs converted in one call of Arrow's CSV parser (about 256 k pairs).
_PARSE_BYTES = 6 << 20


def _compact_values(element: bytes) -> tuple[bytes, bytes, int] | None:
    """``(the element with an empty values array, its pairs as CSV lines, the number of pairs)`` when the
    ``values`` array has exactly the compact shape Prometheus writes (``[<number>,"<text>"]`` pairs and
    nothing else: no space or line break); else None.

    The shape is checked with one comparison per byte and character (numpy), not one scan of the text each.

    >>> _compact_values(b'{"metric":{},"values":[[1,"2"],[3.5,"NaN"]]}')
    (b'{"metric":{},"values":[]}', b',1,2\\n,3.5,NaN\\n', 2)
    >>> _compact_values(b'{"metric":{},"values":[[1, "2"]]}') is None
    True
    >>> _compact_values(b'{"metric":{},"values":[[1,"2"],\\n[3,"4"]]}') is None  # a line break is not compact
    True
    """
    match = _VALUES_KEY.search(element)
    if match is None:
        return None
    start = match.end()
    text = np.frombuffer(element, np.uint8)[start:]
    close = text == _CLOSE
    ends = np.flatnonzero(close[:-1] & close[1:])  # the first "]]" closes the values array
    if not ends.size:
        return None
    end = int(ends[0]) + 1  # the body keeps the last pair's "]"
    body, close = text[:end], close[:end]
    opened = np.count_nonzero(body == _OPEN)
    quote, comma = body == _QUOTE, body == _COMMA
    if (
        opened == 0
        or np.count_nonzero(close) != opened
        or np.count_nonzero(quote) != 2 * opened
        or np.count_nonzero(comma[:-1] & quote[1:]) != opened
        or np.count_nonzero(quote[:-1] & close[1:]) != opened
        or np.count_nonzero(comma) != 2 * opened - 1
        or ((body <= _SPACE).any() and np.isin(body, _BREAKS).any())
    ):
        return None
    # [1,"2"],[3,"4"] -> ,1,2\n,3,4\n : an empty first column, then the time and the value
    inner = element[start : start + end].translate(_TO_CSV, b'["')
    return element[:start] + element[start + end :], b"," + inner, int(opened)


def _pairs(values: list[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ts_ms, value, reason)`` per pair, one by one; reason `malformed_pair`, `bad_value` or `bad_timestamp`
    where a pair is not usable (0 where it is)."""
    n = len(values)
    seconds = np.full(n, np.nan)
    value = np.full(n, np.nan)
    reason = np.zeros(n, np.int8)
    for i, p in enumerate(values):
        if not isinstance(p, list) or len(p) != 2:
            reason[i] = _R["malformed_pair"]
            continue
        v = _number(p[1]) if isinstance(p[1], str) else None
        t = _number(p[0])
        if v is None:
            reason[i] = _R["bad_value"]
        else:
            value[i] = v
        if t is None:
            reason[i] = reason[i] or _R["bad_timestamp"]
        else:
            seconds[i] = t
    return _ms(seconds), value, reason


def _number(x: Any) -> float | None:
    """A JSON number, or text Go's ``ParseFloat`` would read (``NaN``, ``+Inf``, ``1e+06`` …), as a float."""
    if isinstance(x, bool):
        return None
    if isinstance(x, (int, float)):
        return float(x)
    if isinstance(x, str) and "_" not in x and x.strip() == x:
        try:
            return float(x)
        except ValueError:
            return None
    return None


def _ms(seconds: np.ndarray) -> np.ndarray:
    """Float seconds as whole milliseconds; 0 (a bad timestamp) where not finite, ≤ 0 or after year 9999."""
    with np.errstate(invalid="ignore", over="ignore"):
        ms = np.round(seconds * 1000.0)
        bad = ~np.isfinite(ms) | (ms <= 0) | (ms > _MAX_TS_MS)
    ms[bad] = 0
    return ms.astype(np.int64)


@dataclass(slots=True)
class _Series:
    """A series waiting for its pairs to be converted: its labels, and its pairs as CSV text or parsed JSON."""

    labels: dict[str, str]
    csv: bytes | None
    values: list[Any] | None
    pairs: int = 0  # the CSV's lines


class _Reader:
    """Turns the elements of one document into record batches.

    The pairs of many compact series are converted by one call of Arrow's CSV parser (C++, no Python
    object per pair); a series of any other shape is parsed with orjson and its pairs read one by one, so
    both give the same records.
    """

    def __init__(self, batches: _Batches, file_name: str | None, options: ReaderOptions,
                 steps_sink: _StepsSink | None = None) -> None:
        self.batches, self.file_name, self.steps_sink = batches, file_name, steps_sink
        self.broker_map, self.declared, self.names = options.broker_map, options.declared, options.names
        self.steps, self.own_windows = options.steps, options.own_windows
        self.pending: list[_Series] = []
        self.pending_bytes = 0
        self.segment = 0
        #: broker id → the distinct times of its usable counter samples in this file
        self.scrapes: dict[int, np.ndarray] = {}

    def element(self, element: bytes) -> Iterator[pa.RecordBatch]:
        compact = _compact_values(element)
        obj: Any = None
        if compact is not None:
            try:
                obj = orjson.loads(compact[0])
            except orjson.JSONDecodeError:
                compact = None
        if compact is None:
            try:
                obj = orjson.loads(element)
            except orjson.JSONDecodeError as exc:
                reason = "not_utf8" if "utf-8" in str(exc).lower() else "malformed_series"
                yield from _one(self.batches, reason, element.decode("utf-8", "replace"))
                return
        labels = obj.get("metric") if isinstance(obj, dict) else None
        values = obj.get("values") if isinstance(obj, dict) else None
        if (not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values())
                or not isinstance(values, list)):
            reason = "not_a_matrix" if isinstance(obj, dict) and "value" in obj else "malformed_series"
            yield from _one(self.batches, reason, element.decode("utf-8", "replace"))
            return
        if compact is None and not values:
            yield from _one(self.batches, "malformed_pair", _raw(labels, None))
            return
        self.pending.append(_Series(labels, compact[1], None, compact[2]) if compact else _Series(labels, None, values))
        self.pending_bytes += len(compact[1]) if compact else _PARSE_BYTES
        if self.pending_bytes >= _PARSE_BYTES:
            yield from self.convert()

    def convert(self) -> Iterator[pa.RecordBatch]:
        """Convert the pending series' pairs (one CSV parse for all compact ones) and classify them."""
        pending, self.pending, self.pending_bytes = self.pending, [], 0
        compact = [s for s in pending if s.csv is not None]
        parsed: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        if compact:
            try:
                table = pcsv.read_csv(pa.py_buffer(b"".join(s.csv for s in compact)), read_options=_CSV_READ,
                    convert_options=_CSV_CONVERT)
            except pa.ArrowInvalid:
                table = None  # a value is not a number: those series are read pair by pair below
            if table is not None:
                seconds = table.column("ts").to_numpy()
                value = table.column("value").to_numpy()
                start = 0
                for s in compact:
                    parsed[id(s)] = (seconds[start : start + s.pairs], value[start : start + s.pairs])
                    start += s.pairs
        for s in pending:
            if id(s) in parsed:
                seconds, value = parsed[id(s)]
                yield from self.classify(s.labels, None, _ms(seconds), value.copy(), np.zeros(len(value), np.int8))
            else:
                values = s.values if s.values is not None else _csv_pairs(s.csv)
                yield from self.classify(s.labels, values, *_pairs(values))

    def classify(
        self, labels: dict[str, str], values: list[Any] | None, ts_ms: np.ndarray, value: np.ndarray, reason: np.ndarray
    ) -> Iterator[pa.RecordBatch]:
        """The records of one series: every value pair classified (the first failing rule wins)."""
        metric, by_name = _metric(labels.get("__name__") or self.file_name, labels, self.names)
        is_size = metric in SIZE_METRICS
        kind_of = self.declared if self.declared is not None and metric is not None and not is_size else by_name
        if kind_of is None:  # a rate gauge: the rate of the step that ends at each sample
            kind_of = RangeValues("rate", _spacing_s(ts_ms))
        topic = labels.get(self.names.topic_label) or None
        broker = self.names.broker(labels, self.broker_map)
        if broker is None and self.names.instance(labels) is None:
            broker = ALL_BROKERS  # a per-topic series (``sum by (topic)``): the topic's total over its brokers
        partition = labels.get("partition")
        partition_ok = bool(partition and is_id(partition))
        n = len(value)
        ok = reason == 0
        if metric is None:
            reason[ok] = _R["other_metric"]
        elif topic is None:
            reason[ok] = _R["broker_total"]
        else:
            with np.errstate(invalid="ignore"):
                rules = (
                    ("nan_value", np.isnan(value)),
                    ("infinite_value", np.isinf(value)),
                    ("negative_value", value < 0),
                    ("value_out_of_range", value > MAX_COUNT),
                    ("bad_timestamp", ts_ms <= 0),
                )
            for rule, bad in rules:
                reason[ok & bad] = _R[rule]
                ok &= ~bad
            if broker is None:
                reason[ok] = _R["unknown_broker"]
            elif metric == LOG_SIZE and not partition_ok:
                reason[ok] = _R["bad_partition"]
        ignored = (reason == _R["other_metric"]) | (reason == _R["broker_total"])
        accepted = KIND_SIZE if is_size else (KIND_COUNTER if kind_of.operation is None else KIND_INCREASE)
        kind = np.where(reason == 0, _KINDS.index(accepted),
            np.where(ignored, _KINDS.index(KIND_IGNORED), _KINDS.index(KIND_REJECTED)))
        rejected = np.flatnonzero(kind == _KINDS.index(KIND_REJECTED))
        raw = None
        if rejected.size:
            raw = [None] * n
            for i in rejected.tolist():
                sample = values[i] if values is not None else [int(ts_ms[i]) / 1000, _go_float(float(value[i]))]
                raw[i] = _raw(labels, sample)
        if kind_of.operation == "rate":
            value = value * kind_of.window_s  # the bytes over the window
        windows = kind == _KINDS.index(KIND_INCREASE)
        if self.steps and self.own_windows and broker == ALL_BROKERS and windows.any():
            rest = np.flatnonzero(~windows)
            if rest.size:
                yield from self.batches.add(
                    rest.size, kind=kind[rest], reason=reason[rest],
                    raw=[raw[i] for i in rest.tolist()] if raw else None,
                    ts_ms=ts_ms[rest], value=value[rest], broker_id=broker, topic=topic, metric=metric,
                )
            yield from self.window_steps(ts_ms[windows], value[windows], topic, metric, kind_of.window_s)
            return
        counter = kind == _KINDS.index(KIND_COUNTER)
        if self.steps and counter.any():
            rest = np.flatnonzero(~counter)
            if rest.size:
                yield from self.batches.add(
                    rest.size, kind=kind[rest], reason=reason[rest],
                    raw=[raw[i] for i in rest.tolist()] if raw else None,
                    ts_ms=ts_ms[rest], value=value[rest], broker_id=broker, topic=topic, metric=metric,
                )
            yield from self.counter_steps(ts_ms[counter], value[counter], broker, topic, metric)
            return
        yield from self.batches.add(
            n,
            kind=kind,
            reason=reason,
            raw=raw,
            ts_ms=ts_ms,
            value=value,
            partition=np.full(n, int(partition) if is_size and partition_ok else -1),
            broker_id=broker,
            topic=topic,
            metric=metric,
            window_s=kind_of.window_s if kind_of.operation else None,
        )


    def counter_steps(self, ts_ms: np.ndarray, value: np.ndarray, broker: int, topic: str,
        metric: str) -> Iterator[pa.RecordBatch]:
        """One counter series of this file, converted here: its plain increases summed per minute
        (`KIND_STEPS`), a count of its samples, and the samples Spark still needs (`_series_steps`)."""
        s = _series_steps(ts_ms, value)
        self.segment += 1
        known = self.scrapes.get(broker)
        if known is None:
            self.scrapes[broker] = s.times
        elif not np.array_equal(known, s.times):  # a query_range's series mostly share their evaluation times
            self.scrapes[broker] = np.union1d(known, s.times)
        series = {"broker_id": broker, "topic": topic, "metric": metric, "segment": self.segment}
        sent = s.sent
        yield from self.batches.add(
            sent.size, kind=np.zeros(sent.size, np.int32), reason=np.zeros(sent.size, np.int32), ts_ms=s.ts[sent],
            value=s.value[sent], counted=s.counted, inner=np.arange(sent.size) > 0, fast_ok=s.fast_ok, **series,
        )
        if len(ts_ms) > sent.size:
            yield from self.batches.add(
                1, kind=np.zeros(1, np.int32), reason=np.zeros(1, np.int32), ts_ms=np.array([_COUNT_TS]),
                units=np.array([len(ts_ms) - sent.size]),
                **series,
            )
        yield from self.minute_steps(s.minutes, s.deltas, s.spans, series)

    def window_steps(self, ts_ms: np.ndarray, value: np.ndarray, topic: str, metric: str,
        window_s: float) -> Iterator[pa.RecordBatch]:
        """A topic's total of pre-aggregated windows that no other file holds (``own_windows``: a Prometheus
        pull's per-topic answers), summed here: each window's bytes in the minute it starts in (`KIND_STEPS`,
        as `spark_jobs.rates.minute_rows` credits an ``increase`` record) and one count of its samples, so none
        goes through Spark's per-series sort."""
        window_ms = int(round(window_s * 1000))
        minutes = (ts_ms - window_ms) // _MINUTE_MS * _MINUTE_MS
        order = np.argsort(minutes, kind="stable")
        minutes, value = minutes[order], value[order]
        cut = np.flatnonzero(np.r_[True, minutes[1:] != minutes[:-1]])
        series = {"broker_id": ALL_BROKERS, "topic": topic, "metric": metric}
        yield from self.batches.add(
            1, kind=np.array([_KINDS.index(KIND_INCREASE)]), reason=np.zeros(1, np.int32), ts_ms=np.array([_COUNT_TS]),
            units=np.array([len(ts_ms)]),
            **series,
        )
        yield from self.minute_steps(minutes[cut], np.add.reduceat(value, cut),
            np.add.reduceat(np.full(value.size, window_ms), cut), series)

    def minute_steps(self, minutes: np.ndarray, deltas: np.ndarray, spans: np.ndarray,
        series: dict[str, Any]) -> Iterator[pa.RecordBatch]:
        """Increases summed per minute (`KIND_STEPS`): among the batches, or to the steps sink's bucket."""
        k = minutes.size
        if not k:
            return
        if self.steps_sink is not None:
            self.steps_sink.add(series["broker_id"], series["topic"], series["metric"], minutes, deltas, spans)
            return
        yield from self.batches.add(
            k, kind=np.full(k, _KINDS.index(KIND_STEPS)), reason=np.zeros(k, np.int32), ts_ms=minutes, value=deltas,
            span_ms=spans, units=np.zeros(k, np.int64), **series,
        )

    def scrape_rows(self) -> Iterator[pa.RecordBatch]:
        """Every broker's distinct scrape times in this file (`KIND_SCRAPE`): the grid of scrape rounds."""
        for broker, times in sorted(self.scrapes.items()):
            k = times.size
            yield from self.batches.add(
                k, kind=np.full(k, _KINDS.index(KIND_SCRAPE)), reason=np.zeros(k, np.int32), ts_ms=times,
                units=np.zeros(k, np.int64),
                broker_id=broker,
            )
        self.scrapes = {}


#: ``ts_ms`` of the row that counts a series' samples not sent on (null in the table).
_COUNT_TS = -1


@dataclass(frozen=True, slots=True)
class _Steps:
    """`_series_steps` of one series: samples sorted by (time, value), which of them to send on (``sent``,
    with ``counted`` and ``fast_ok`` per sent sample), the usable sample ``times``, and the plain
    increases summed per minute their window starts in (``minutes``, ``deltas``, ``spans``)."""

    ts: np.ndarray
    value: np.ndarray
    sent: np.ndarray
    counted: np.ndarray
    fast_ok: np.ndarray
    times: np.ndarray
    minutes: np.ndarray
    deltas: np.ndarray
    spans: np.ndarray


def _series_steps(ts_ms: np.ndarray, value: np.ndarray) -> _Steps:
    """Convert one counter series of one file with the rules of `spark_jobs.rates`, as far as the file allows.

    Samples sharing a time are one usable sample when their values agree, none when they differ. Each
    step between consecutive usable samples whose value did not fall is a plain increase: summed here per
    (minute its window starts in). What needs the other files or the broker's scrape rounds is sent on
    as samples: the first and last usable sample, both ends of every step whose value fell (a reset), and
    every sample sharing its time with another (Spark classifies those and counts the duplicates).

    Examples
    --------
    >>> s = _series_steps(np.array([0, 60_000, 120_000, 180_000]) + 600_000, np.array([5.0, 7.0, 1.0, 4.0]))
    >>> s.minutes.tolist(), s.deltas.tolist(), s.spans.tolist()
    ([600000, 720000], [2.0, 3.0], [60000, 60000])
    >>> s.sent.tolist(), s.counted.tolist()
    ([0, 1, 2, 3], [False, True, False, True])
    """
    n = ts_ms.size
    if n < 2 or bool((ts_ms[1:] > ts_ms[:-1]).all()):  # already in time order, no time shared (a query_range's shape)
        t, v = ts_ms, value
        first, sizes = np.arange(n), np.ones(n, np.int64)
        conflict = v != v  # as the general case below finds a NaN sample alone at its time
    else:
        order = np.lexsort((value, ts_ms))
        t, v = ts_ms[order], value[order]
        first = np.flatnonzero(np.r_[True, t[1:] != t[:-1]])  # the first sample of each time
        sizes = np.diff(np.r_[first, n])
        conflict = np.minimum.reduceat(v, first) != np.maximum.reduceat(v, first)
    ok = first[~conflict]
    to, vo = t[ok], v[ok]
    delta = vo[1:] - vo[:-1]
    plain = delta >= 0
    start = to[:-1][plain]
    minute = start // _MINUTE_MS * _MINUTE_MS
    cut = np.flatnonzero(np.r_[True, minute[1:] != minute[:-1]]) if minute.size else np.zeros(0, np.int64)
    minutes = minute[cut]
    deltas = np.add.reduceat(delta[plain], cut) if cut.size else np.zeros(0)
    spans = np.add.reduceat((to[1:] - to[:-1])[plain], cut) if cut.size else np.zeros(0, np.int64)
    # the usable samples to send: both ends, and both ends of every fall
    m = ok.size
    keep = np.zeros(m, bool)
    if m:
        keep[[0, m - 1]] = True
        fell = np.flatnonzero(~plain) + 1
        keep[fell] = True
        keep[fell - 1] = True
    counted_ok = np.r_[False, plain] if m else np.zeros(0, bool)
    # per time group: sent when it holds a kept usable sample, a duplicate or a conflict
    group_sent = sizes > 1
    group_counted = np.zeros(first.size, bool)
    group_ok = ~conflict
    ok_groups = np.flatnonzero(~conflict)
    group_sent[ok_groups[keep]] = True
    group_counted[ok_groups] = counted_ok
    which = np.repeat(np.arange(first.size), sizes)
    sent = np.flatnonzero(group_sent[which])
    return _Steps(
        ts=t, value=v, sent=sent, counted=group_counted[which[sent]], fast_ok=group_ok[which[sent]], times=to,
        minutes=minutes, deltas=deltas, spans=spans,
    )


def _csv_pairs(csv: bytes) -> list[Any]:
    """The pairs of a compact series as JSON would give them (``[number, "text"]``), for one whose CSV parse failed."""
    out: list[Any] = []
    for line in csv.split(b"\n"):
        if line:
            _, ts, value = line.split(b",", 2)
            out.append([orjson.loads(ts), value.decode("utf-8", "replace")])
    return out


def _go_float(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(v)


def _one(batches: _Batches, reason: str, raw: str) -> Iterator[pa.RecordBatch]:
    """One rejected or ignored unit standing for a whole document or series."""
    kind = KIND_IGNORED if reason == "empty_result" else KIND_REJECTED
    yield from batches.add(
        1, kind=np.array([_KINDS.index(kind)]), reason=np.array([_R[reason]]),
        raw=[raw[:RAW_LIMIT] if kind == KIND_REJECTED else None]
    )


def _flush(batches: _Batches) -> Iterator[pa.RecordBatch]:
    if batches.parts:
        yield batches.flush()


def parse_file(path: str, options: ReaderOptions, *, steps_sink: _StepsSink | None = None,
               part: tuple[int, int, int] | None = None) -> Iterator[pa.RecordBatch]:
    """Stream one export file into record batches (`spark_jobs.records`), one record per value pair; with
    ``options.steps``, each counter series is converted here instead (`_series_steps`): its per-minute increases,
    a count and the few samples Spark still needs, and the file's scrape times. With a ``steps_sink`` the
    per-minute increases go to it, bucketed by topic, instead of among the batches yielded. With ``part``
    (``(index, start, end)``, from `split_points`) only the series whose text starts in bytes
    ``[start, end)`` of the file are read, as if they were the whole result. With ``options.own_windows``
    (the file's pre-aggregated windows are in no other file: a Prometheus pull's answers) and ``steps``, a topic's
    total of windows is summed per minute here too (`_Reader.window_steps`).

    Rejection reasons (a whole document or series counts once): ``malformed_json`` (the document's structure
    is broken or truncated; its complete series still count), ``query_failed`` (status not ``success``),
    ``not_a_matrix``, ``malformed_series``, ``not_utf8``; per value pair: ``malformed_pair``, ``bad_value``,
    ``nan_value``, ``infinite_value``, ``negative_value``, ``value_out_of_range``, ``bad_timestamp``,
    ``unknown_broker``, ``bad_partition``. Ignored: ``empty_result``, ``other_metric``, ``broker_total``.
    """
    match = _FILE_METRIC.search(path)
    file_name = match.group(1) if match else None
    batches = _Batches(path, options.cluster, options.source or SOURCE)
    reader = _Reader(batches, file_name, options, steps_sink)
    series = 0
    with open_input(path) as stream:
        chunks = read_chunks(stream) if part is None else _part_chunks(stream, *part[1:])
        if part is not None:
            reader.segment = part[0] << _PART_SEGMENT_BITS  # a series' segment is unique in its file
        for kind, item in split_result(chunks):
            if kind == SERIES:
                series += 1
                yield from reader.element(item)
                continue
            yield from reader.convert()
            if kind == BROKEN:
                yield from _one(batches, "malformed_json", item)
            else:
                reason = _document_reason(item, series)
                if reason:
                    yield from _one(batches, reason, orjson.dumps(item).decode())
    yield from reader.scrape_rows()
    yield from _flush(batches)
    if steps_sink is not None:
        steps_sink.close()


#: The first bytes of a compact ``query_range`` document, as Prometheus writes it.
_HEAD = b'{"status":"success","data":{"resultType":"matrix","result":['
#: Its last bytes (before trailing whitespace).
_TAIL = b"]}}"
#: Between two series of a compact document (a series' text starts 2 bytes in).
_BETWEEN = b'},{"metric":'
#: A file is read by one task per this many bytes (both cores work on one large file).
SPLIT_BYTES = 64 << 20
_PART_SEGMENT_BITS = 20


def split_points(path: str, split_bytes: int = SPLIT_BYTES) -> list[tuple[int, int, int] | None]:
    """The parts one file is read in: ``[None]`` (whole) unless it is a local compact document larger than
    ``split_bytes`` (`_HEAD` … `_TAIL`), then ``(index, start, end)`` byte ranges that each start at a series.

    A series starts right after ``},{"metric":``'s first two bytes, which only a boundary between two
    elements of ``result`` can hold in a JSON document (a string cannot hold an unescaped quote). A part
    whose series are damaged loses the rest of that part only.
    """
    if "://" in path and not path.startswith("file:"):
        return [None]
    local = path.removeprefix("file://").removeprefix("file:")
    size = file_size(local)
    if size <= split_bytes:
        return [None]
    with open(local, "rb") as fh:
        if fh.read(len(_HEAD)) != _HEAD:
            return [None]
        fh.seek(max(0, size - 64))
        if not fh.read().rstrip().endswith(_TAIL):
            return [None]
        starts = [0]
        for k in range(1, -(-size // split_bytes)):
            at = _next_series(fh, max(k * size // -(-size // split_bytes), starts[-1] + 1), size)
            if at is None:
                break
            if at > starts[-1]:
                starts.append(at)
    if len(starts) == 1:
        return [None]
    ends = [s - 1 for s in starts[1:]] + [size]  # a part ends before the comma between two series
    return [(i, a, b) for i, (a, b) in enumerate(zip(starts, ends))]


def _next_series(fh: Any, offset: int, size: int) -> int | None:
    """The offset of the first series that starts at or after ``offset`` (None: none does)."""
    block = 1 << 20
    while offset < size:
        fh.seek(offset)
        data = fh.read(block + len(_BETWEEN))
        at = data.find(_BETWEEN)
        if at >= 0:
            return offset + at + 2
        offset += block
    return None


def _part_chunks(stream: Any, start: int, end: int) -> Iterator[bytes]:
    """The bytes ``[start, end)`` of a compact document as a document of their own (`_HEAD` … `_TAIL`)."""
    if start > 0:
        yield _HEAD
        stream.seek(start)
    left = end - start
    while left > 0 and (chunk := stream.read(min(CHUNK_BYTES, left))):
        left -= len(chunk)
        yield chunk
    if stream.read(1):  # not the file's last part
        yield _TAIL


def _document_reason(skeleton: Any, series: int) -> str | None:
    if not isinstance(skeleton, dict) or "status" not in skeleton:
        return "malformed_json"
    if skeleton["status"] != "success":
        return "query_failed"
    data = skeleton.get("data")
    if series:
        return None
    if not isinstance(data, dict) or data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
        return "not_a_matrix"
    return "empty_result"


class _StepsSink:
    """A worker's per-minute increases of one file, written to one Parquet file per `bucket <bucket_of>` of
    topics (`steps_file`, `STEPS_SCHEMA`, in the records directory's `STEPS_DIR`), so that
    `spark_jobs.minute_merge.merge_buckets` sums each bucket in one task.

    Each file appears whole or not at all (written under a hidden temporary name, renamed by `close`)."""

    def __init__(self, file: str, cluster: str, source: str, *, buckets: int, directory: str, prefix: str) -> None:
        self.file, self.cluster, self.source = file, cluster, source
        self.buckets, self.directory, self.prefix = buckets, os.path.join(directory, STEPS_DIR), prefix
        self.schema = STEPS_SCHEMA.with_metadata({"cluster": cluster, "source": source})
        self.pending: dict[int, list[tuple[int, str, str, np.ndarray, np.ndarray, np.ndarray]]] = {}
        self.rows: dict[int, int] = {}
        self.bucket: dict[str, int] = {}
        self.writers: dict[int, tuple[Any, str, str]] = {}

    def add(self, broker: int, topic: str, metric: str, minutes: np.ndarray, deltas: np.ndarray,
        spans: np.ndarray) -> None:
        """One series' increases summed per minute (``minutes`` ascending), with their windows' summed lengths."""
        bucket = self.bucket.get(topic)
        if bucket is None:
            bucket = self.bucket[topic] = bucket_of(topic, self.buckets)
        self.pending.setdefault(bucket, []).append((broker, topic, metric, minutes, deltas, spans))
        self.rows[bucket] = self.rows.get(bucket, 0) + minutes.size
        if self.rows[bucket] >= _SINK_ROWS:
            self._flush(bucket)

    def _flush(self, bucket: int) -> None:
        """Write a bucket's pending series as one row group, in the order they came."""
        import pyarrow.parquet as pq

        series, self.pending[bucket], self.rows[bucket] = self.pending[bucket], [], 0
        counts = np.array([s[3].size for s in series], np.int64)

        def coded(i: int, index: type) -> pa.DictionaryArray:
            names = list(dict.fromkeys(s[i] for s in series))
            code = {name: k for k, name in enumerate(names)}
            indices = np.repeat(np.array([code[s[i]] for s in series], index), counts)
            return pa.DictionaryArray.from_arrays(pa.array(indices), pa.array(names, pa.string()))

        batch = pa.record_batch(
            [
                pa.array(np.repeat(np.array([s[0] for s in series], np.int32), counts)), coded(1, np.int32),
                coded(2, np.int8),
                pa.array(np.concatenate([s[3] for s in series]).astype(np.int64, copy=False)),
                pa.array(np.concatenate([s[4] for s in series]).astype(np.float64, copy=False)),
                pa.array(np.concatenate([s[5] for s in series]).astype(np.int64, copy=False)),
            ],
            schema=self.schema,
        )
        if bucket not in self.writers:
            os.makedirs(self.directory, exist_ok=True)
            name = steps_file(self.prefix, bucket)
            temporary = os.path.join(self.directory, f".{name}.{os.getpid()}.tmp")
            writer = pq.ParquetWriter(  # read once, soon: fast to decode; times, spans and brokers as deltas
                temporary, self.schema, compression="lz4", use_dictionary=["topic", "metric"],
                column_encoding={c: "DELTA_BINARY_PACKED" for c in ("broker_id", "minute_ms", "span_ms")},
            )
            self.writers[bucket] = (writer, temporary, os.path.join(self.directory, name))
        self.writers[bucket][0].write_batch(batch)

    def close(self) -> None:
        """Write what every bucket holds and put its file in place."""
        for bucket in sorted(self.pending):
            if self.pending[bucket]:
                self._flush(bucket)
        for writer, temporary, target in self.writers.values():
            writer.close()
            os.replace(temporary, target)
        self.pending, self.rows, self.writers = {}, {}, {}

    def discard(self) -> None:
        """Remove the temporary files of a parse that did not finish."""
        for writer, temporary, _ in self.writers.values():
            writer.close()
            if os.path.exists(temporary):
                os.remove(temporary)
        self.pending, self.rows, self.writers = {}, {}, {}


def stage_query_range(spark, paths: Sequence[str], directory: str, options: ReaderOptions):
    """Parse query_range export files into classified records (`STAGED_SCHEMA`), one per value pair or, with
    ``options.steps``, each counter series converted in its file (see `parse_file`); return them as a DataFrame.
    With ``steps`` and ``options.buckets``, the converted series' per-minute increases are written beside the
    records, one file per bucket of topics (``_steps/<source>-<n>-steps-b<bucket>.parquet``,
    `spark_jobs.history_contract.steps_file`, `spark_jobs.history_contract.STEPS_SCHEMA`), for
    `spark_jobs.minute_merge.merge_buckets`; the returned table does not hold them.

    One task per file (largest first; per `SPLIT_BYTES` of a large one, `split_points`) streams its file through
    `parse_file` in a Python worker and writes the records straight to ``directory/<source>-<n>.parquet`` with
    Arrow's Parquet writer; Spark reads them back with its vectorized reader. Memory is bounded by the chunk size
    and the longest series, not by the file, and no record passes through the JVM row by row (turning Arrow batches
    into Spark rows and writing them took three times the parsing's time). ``directory`` must be one the executors
    and the driver both see, like any Spark output path.
    """
    os.makedirs(directory, exist_ok=True)
    ordered = sorted(paths, key=lambda p: (-file_size(p), p))
    parts = [(p, part) for p in ordered for part in split_points(p, options.split_bytes or SPLIT_BYTES)]
    run_tasks(spark, parts, _stage_file, directory=os.path.abspath(directory), options=options)
    return spark.read.schema(STAGED_SCHEMA).parquet(directory)


def _stage_file(i: int, path: str, part: tuple[int, int, int] | None, *, directory: str, options: ReaderOptions) -> int:
    """Parse one file (or one part of it) and write its records to ``directory/<source>-<i>.parquet``."""
    source = options.source or SOURCE
    name = f"{source}-{i:05d}"
    sink = None
    if options.buckets and options.steps:
        sink = _StepsSink(path, options.cluster, source, buckets=options.buckets, directory=directory, prefix=name)
    try:
        records = parse_file(path, options, steps_sink=sink, part=part)
        return write_parquet(records, os.path.join(directory, f"{name}.parquet"))
    finally:
        if sink is not None:
            sink.discard()
