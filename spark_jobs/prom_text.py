"""Prometheus text exposition (0.0.4) from jmx_exporter, with collector-appended millisecond timestamps.

One sample per line, ``name[{label="value",...[,]}] value [timestamp_ms]``; ``# HELP``/``# TYPE`` lines and
blank lines are ignored; the meters' counters are recognised in every spelling `spark_jobs.metric_names` knows
(``lowercaseOutputName`` on or off, jmx_exporter's default export with a ``name`` label …; a rate gauge is
``other_metric`` here: the text holds the counters); values are Go/Java doubles (``1.0004966371E10``, ``NaN``,
``+Inf``). The broker-wide series of a per-topic meter (no topic label) is ignored so it cannot double-count.
The broker comes from the instance labels (``instance``, ``pod``) through the broker map. Kafka's
``RemoteLogSizeBytes`` gauge of a tiered topic (KIP-405, `MetricNames.remote`) is a size record without a partition
(metric ``remote_log_size``: the topic's bytes in the remote store, of the partitions the broker leads); the
counters of its ``RemoteCopyBytesPerSec`` and ``RemoteFetchBytesPerSec`` meters are counters like the others (metrics
``remote_copy_bytes``, ``remote_fetch_bytes``).

Files are parsed in Python workers (`stage_prom_text`), a chunk of lines at a time with Arrow's string kernels
and RE2 regexes and numpy, no Python per line, and the records written straight to Parquet
(`spark_jobs.staging`); a local file larger than `SPLIT_BYTES` is read by one task per part, each part whole
lines (`split_points`). Lines end at LF, CR or CRLF and a UTF-8 byte-order mark at the file's start is not
text, as Hadoop's line reader has it; values and timestamps are read as Spark's ``try_cast`` reads them
(`java_double`, `java_long`), so the records are those the JVM reader this one replaced made.

>>> _records([b'kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",topic="a",} 1.5E3 1740960000000'],
...          {"kafka-1:7071": 1}).select(["kind", "broker_id", "topic", "metric", "value", "ts_ms"]).to_pylist()
[{'kind': 'counter', 'broker_id': 1, 'topic': 'a', 'metric': 'bytes_in', 'value': 1500.0, 'ts_ms': 1740960000000}]
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_jobs.metric_names import (
    COUNTER,
    DEFAULT,
    GAUGE,
    ID_PATTERN,
    LOG_SIZE,
    METER_LABELS,
    REMOTE_LOG_SIZE,
    SIZE_METRICS,
    MetricNames,
)
from spark_jobs.records import (
    KIND_COUNTER,
    KIND_IGNORED,
    KIND_REJECTED,
    KIND_SIZE,
    MAX_COUNT,
    RAW_LIMIT,
    RECORD_SCHEMA,
    STAGED_SCHEMA,
)
from spark_jobs.staging import ReaderOptions, file_size, map_tasks, open_input, run_tasks, staged_batch, write_parquet

__all__ = ["read_prom_text", "stage_prom_text", "split_points", "java_double", "java_long", "SOURCE", "LINE_PATTERN",
    "LABELS_PATTERN", "SPLIT_BYTES"]

SOURCE = "prom_text"

# The patterns are RE2's (linear time). They are the JVM reader's Java patterns with each possessive quantifier
# made greedy, which matches the same lines with the same groups: no possessive run there ever had to give
# anything back. A name run is followed by a space or "{", which no name character is; a run of spaces by "{" or
# a value; a value or timestamp run by a space or the line's end; inside a label block every '"' opens a quoted
# value (no other part takes it) whose end is fixed (a backslash always takes the next character), so the
# block's end is fixed too. Java's '.' (no line terminator), '\S' (not [ \t\n\x0B\f\r]) are spelled out.
# Java's '$' also matched before a final U+0085, U+2028 or U+2029; here '$' is the end of the line.
_DOT = r"[^\n\r\x{85}\x{2028}\x{2029}]"
_QUOTED = r'"(?:[^"\\]|\\' + _DOT + r')*"'
_TOKEN = r"[^ \t\n\x0B\f\r]+"
#: name, optional label block, value, optional timestamp (RE2, named groups).
LINE_PATTERN = (
    r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:[ \t]*(?P<labels>\{(?:[^\"}]|" + _QUOTED + r")*\}))?"
    r"[ \t]+(?P<value>" + _TOKEN + r")"
    r"(?:[ \t]+(?P<ts>" + _TOKEN + r"))?[ \t]*$"
)
#: a well-formed label block body: name="value" pairs, comma separated, trailing comma allowed (RE2).
LABELS_PATTERN = r"^[ \t]*(?:[A-Za-z_][A-Za-z0-9_]*[ \t]*=[ \t]*" + _QUOTED + r"[ \t]*(?:,[ \t]*|$))*$"

#: A file is read by one task per this many bytes (both cores work on one large file).
SPLIT_BYTES = 64 << 20
#: Bytes of whole lines parsed at once.
_CHUNK_BYTES = 8 << 20
#: What Java's ``String.trim`` (so Spark's casts) strips: every character up to the space.
_JAVA_BLANK = "".join(map(chr, range(33)))
#: Files Hadoop's codecs would decompress, by extension, and Arrow's name of the codec.
_CODECS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd"}
_BOM = b"\xef\xbb\xbf"

_KINDS = (KIND_COUNTER, KIND_SIZE, KIND_IGNORED, KIND_REJECTED)
_REASONS = (
    None, "not_utf8", "blank", "comment", "malformed_line", "malformed_labels", "other_metric", "broker_total",
    "bad_value", "nan_value", "infinite_value", "negative_value", "value_out_of_range", "missing_timestamp",
    "bad_timestamp", "unknown_broker", "bad_partition",
)
_R = {r: np.int8(i) for i, r in enumerate(_REASONS)}
_IGNORED = {"blank", "comment", "other_metric", "broker_total"}


def _label_pattern(name: str) -> str:
    return r"(?:^|,)[ \t]*" + re.escape(name) + r"[ \t]*=[ \t]*\"(?P<v>(?:[^\"\\]|\\" + _DOT + r")*)\""


def _label(labels: pa.Array, name: str) -> pa.Array:
    """The value of label ``name`` in each label block body (its text as written, escapes kept); null where
    the label is missing or empty. The first occurrence counts."""
    value = pc.struct_field(pc.extract_regex(labels, _label_pattern(name)), [0])
    return pc.if_else(pc.equal(value, ""), pa.scalar(None, pa.string()), value)


def java_double(text: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """``(value, ok)``: each text as Spark's ``try_cast(... as double)`` reads it: Java's ``Double.parseDouble``
    (``1.0004966371E10``, ``.5``, ``1e3``, ``+5``, ``1d``, ``0x1.8p1``, ``NaN``, ``-Infinity``; blanks and control
    characters around ignored) or, case aside, ``inf``, ``+inf``, ``-inf``, ``infinity``, ``nan``.

    >>> value, ok = java_double(pa.array(["1.5E3", "+Inf", "0x10", "1d", " nan", "1,5"]))
    >>> value[ok].tolist(), ok.tolist()
    ([1500.0, inf, 1.0, nan], [True, True, False, True, True, False])
    """
    t = pc.utf8_trim(text.fill_null(""), _JAVA_BLANK)
    decimal = pc.match_substring_regex(t, r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?$")
    value = pc.cast(pc.if_else(decimal, pc.utf8_rtrim(t, "fFdD"), "0"),
        pa.float64()).to_numpy(zero_copy_only=False).copy()
    ok = decimal.to_numpy(zero_copy_only=False).copy()
    for pattern, special in (
        (r"^(?i:\+?inf(?:inity)?)$|^\+?Infinity$", np.inf),
        (r"^(?i:-inf(?:inity)?)$|^-Infinity$", -np.inf),
        (r"^(?i:nan)$|^[+-]NaN$", np.nan),
    ):
        hit = pc.match_substring_regex(t, pattern).to_numpy(zero_copy_only=False)
        value[hit], ok = special, ok | hit
    hexa = pc.match_substring_regex(t,
        r"^[+-]?0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?$")
    for i in np.flatnonzero(hexa.to_numpy(zero_copy_only=False)).tolist():  # rare: one by one
        value[i], ok[i] = _hex_double(t[i].as_py().rstrip("fFdD")), True
    return value, ok


def _hex_double(text: str) -> float:
    try:
        return float.fromhex(text)
    except OverflowError:
        return -np.inf if text.startswith("-") else np.inf


def java_long(text: pa.Array, bits: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """``(value, ok)``: each text as Spark's ``try_cast(... as bigint)`` (``bits`` 32: ``int``) reads it: an optional
    sign and decimal digits, blanks and control characters around ignored, within the type's range.

    >>> value, ok = java_long(pa.array(["+17", " 0012", "-9223372036854775808", "9223372036854775808", "1.5", "1e3"]))
    >>> value[ok].tolist(), ok.tolist()
    ([17, 12, -9223372036854775808], [True, True, True, False, False, False])
    """
    t = pc.utf8_trim(text.fill_null(""), _JAVA_BLANK)
    ok = pc.match_substring_regex(t, r"^[+-]?[0-9]+$").to_numpy(zero_copy_only=False)
    negative = pc.starts_with(t, "-").to_numpy(zero_copy_only=False)
    digits = pc.utf8_ltrim(pc.utf8_ltrim(t, "+-"), "0")
    width = pc.utf8_length(digits).to_numpy(zero_copy_only=False)
    top = str(2 ** (bits - 1) - 1)
    limit = np.where(negative, str(2 ** (bits - 1)), top)
    edge = (width == len(top)) & ok
    fits = (width < len(top)) | (edge & (pc.less_equal(digits, pa.array(limit)).to_numpy(zero_copy_only=False)))
    ok = ok & fits
    short = ok & ~edge
    value = np.zeros(len(t), np.int64)
    magnitude = pc.cast(pc.if_else(pa.array(short & (width > 0)), digits, "0"),
        pa.int64()).to_numpy(zero_copy_only=False)
    value[short] = np.where(negative[short], -magnitude[short], magnitude[short])
    for i in np.flatnonzero(ok & edge).tolist():  # 19 (or 10) digits: rare, one by one
        value[i] = int(t[i].as_py())
    return value, ok


def _per_distinct(keys: list[pa.Array], fn: Any, dtype: Any) -> pa.Array:
    """``fn(*values)`` once per distinct combination of ``keys``' values (nulls as ""), spread back per row."""
    codes, values = [], []
    for key in keys:
        encoded = pc.dictionary_encode(key.fill_null(""))
        codes.append(encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64))
        values.append(encoded.dictionary.to_pylist())
    combined = np.zeros(len(keys[0]), np.int64)
    for code, value in zip(codes, values):
        # dense: cannot overflow
        combined = np.unique(combined * len(value) + code, return_inverse=True)[1].astype(np.int64)
    _, first, inverse = np.unique(combined, return_index=True, return_inverse=True)
    results = [fn(*(value[code[i]] for code, value in zip(codes, values))) for i in first.tolist()]
    return pa.array(results, dtype).take(pa.array(inverse.astype(np.int64)))


def _records(
    lines: Sequence[bytes] | pa.Array, broker_map: Mapping[str, int], names: MetricNames = DEFAULT, *,
    utf8: np.ndarray | None = None,
    file: str = "", cluster: str = "",
) -> pa.RecordBatch:
    """The records (`STAGED_SCHEMA`) of ``lines`` (a string array, bad bytes already replaced; ``utf8`` false
    where a line's bytes were not UTF-8), every line classified: the first failing rule wins."""
    line = lines if isinstance(lines, pa.Array) else pa.array([b.decode("utf-8", "replace") for b in lines],
        pa.string())
    n = len(line)
    valid = np.ones(n, bool) if utf8 is None else utf8
    np_ = lambda a: a.to_numpy(zero_copy_only=False)  # noqa: E731
    fields = pc.extract_regex(line, LINE_PATTERN)
    parsed = np_(fields.is_valid())
    empty = pa.scalar("", pa.string())
    field = lambda i: pc.if_else(fields.is_valid(), pc.struct_field(fields, [i]), empty)  # noqa: E731
    name, block, value_text, ts_text = field(0), field(1), field(2), field(3)
    labels = pc.utf8_slice_codeunits(block, 1, -1)
    stripped = pc.utf8_trim(line, " ")

    topic = _label(labels, names.topic_label)
    meter_labels = {k: _label(labels, k) for k in METER_LABELS}

    def counter(name_: str, *meter_values: str) -> str | None:
        labels_ = dict(zip(METER_LABELS, meter_values))
        meter = names.meter(name_, labels_)
        if meter is None:  # a tiered-storage meter's counter, or the remote log size's gauge
            meter = names.remote(name_, labels_)
            if meter is not None and meter.type == GAUGE:
                return REMOTE_LOG_SIZE
        return meter.metric if meter is not None and meter.type == COUNTER else None

    metric = _per_distinct([name, *meter_labels.values()], counter, pa.string())
    instances = [_label(labels, k) for k in names.instance_labels]
    broker = _per_distinct(
        instances, lambda *v: names.broker({k: x for k, x in zip(names.instance_labels, v) if x}, broker_map),
        pa.int32()
    )
    partition_text = _label(labels, "partition")
    value, value_ok = java_double(value_text)
    ts, ts_ok = java_long(ts_text)
    partition, partition_ok = java_long(partition_text, 32)

    is_log_size = np_(pc.equal(metric, LOG_SIZE).fill_null(False))
    is_size = np_(pc.is_in(metric, pa.array(SIZE_METRICS)).fill_null(False))
    with np.errstate(invalid="ignore"):
        rules = [
            ("not_utf8", ~valid),
            ("blank", np_(pc.equal(stripped, ""))),
            ("comment", np_(pc.starts_with(stripped, "#"))),
            ("malformed_line", ~parsed),
            ("malformed_labels", ~np_(pc.match_substring_regex(labels, LABELS_PATTERN))),
            ("other_metric", np_(metric.is_null())),
            ("broker_total", np_(topic.is_null())),
            ("bad_value", ~value_ok),
            ("nan_value", np.isnan(value)),
            ("infinite_value", np.isinf(value)),
            ("negative_value", value < 0),
            ("value_out_of_range", value > MAX_COUNT),
            ("missing_timestamp", np_(pc.equal(ts_text, ""))),
            ("bad_timestamp", ~ts_ok | (ts <= 0)),
            ("unknown_broker", np_(broker.is_null())),
            ("bad_partition", is_log_size & ~np_(pc.match_substring_regex(partition_text.fill_null(""), ID_PATTERN))),
        ]
    reason = np.zeros(n, np.int8)
    for rule, bad in reversed(rules):
        reason[bad] = _R[rule]
    data = reason == 0
    ignored = np.isin(reason, [_R[r] for r in _IGNORED])
    kind = np.where(data, np.where(is_size, 1, 0), np.where(ignored, 2, 3)).astype(np.int32)
    rejected = kind == 3
    none = pa.scalar(None, pa.string())
    return staged_batch(
        n, source=SOURCE, file=file, cluster=cluster,
        kind=pa.array(_KINDS, pa.string()).take(pa.array(kind)),
        reason=pa.array(_REASONS, pa.string()).take(pa.array(reason.astype(np.int32))),
        ts_ms=pa.array(ts, pa.int64(), mask=~data),
        broker_id=broker,
        topic=topic,
        partition=pa.array(partition.astype(np.int32), pa.int32(), mask=~(data & partition_ok)),
        metric=pc.if_else(pa.array(data), metric, none),
        value=pa.array(value, pa.float64(), mask=~data),
        is_future=pa.array(np.zeros(n, bool), pa.bool_(), mask=~data),
        raw=pc.if_else(pa.array(rejected), pc.utf8_slice_codeunits(line, 0, RAW_LIMIT), none),
    )


def _lines(data: bytes) -> tuple[pa.Array, np.ndarray]:
    """``data``'s lines (ended by LF, CR or CRLF; the last may have no end) as a string array, bad bytes
    replaced as Spark's ``make_valid_utf8`` does (U+FFFD per maximal bad sequence), and whether each was UTF-8."""
    bad_at: list[int] = []
    try:
        data.decode("utf-8")
        text = data
    except UnicodeDecodeError:
        at = 0
        while True:  # once per bad sequence, not per line
            try:
                data[at:].decode("utf-8")
                break
            except UnicodeDecodeError as exc:
                bad_at.append(at + exc.start)
                at += exc.end
        text = data.decode("utf-8", "replace").encode("utf-8")
    starts, keep = _line_starts(text)
    utf8 = np.ones(len(starts) - 1, bool)
    if bad_at:
        old_starts, _ = _line_starts(data)
        utf8[np.searchsorted(old_starts, np.array(bad_at), side="right") - 1] = False
    buffer = np.frombuffer(text, np.uint8)[keep]
    offsets = (starts - np.searchsorted(np.flatnonzero(~keep), starts)).astype(np.int32)  # less the line ends before
    array = pa.StringArray.from_buffers(len(starts) - 1, pa.py_buffer(offsets), pa.py_buffer(buffer.tobytes()))
    return array, utf8


def _line_starts(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The offset each line of ``data`` starts at, then ``len(data)``; and which bytes are not line ends.

    >>> _line_starts(b"a\\r\\nb\\rc\\n\\nd")[0].tolist()
    [0, 3, 5, 7, 8, 9]
    """
    b = np.frombuffer(data, np.uint8)
    keep = (b != 10) & (b != 13)
    ends = np.flatnonzero(~keep)
    crlf = (b[ends] == 13) & (ends + 1 < len(b)) & (b[np.minimum(ends + 1, len(b) - 1)] == 10)
    second = np.zeros(len(ends), bool)
    second[1:] = crlf[:-1] & (ends[1:] == ends[:-1] + 1)  # the LF of a CRLF: not an end of its own
    after = ends[~second] + 1 + crlf[~second]
    starts = np.concatenate([[0], after[after < len(b)], [len(b)]]).astype(np.int64)
    if len(b) == 0:
        starts = np.array([0], np.int64)
    return starts, keep


def parse_file(path: str, options: ReaderOptions, *, part: tuple[int, int, int] | None = None,
               file: str | None = None) -> Iterator[pa.RecordBatch]:
    """Stream one exposition-text file (with ``part`` ``(index, start, end)`` from `split_points`: its lines that
    start in bytes ``[start, end)``) into record batches, one record per line; ``file`` names it in them.

    Rejection reasons: ``not_utf8``, ``malformed_line``, ``malformed_labels``, ``bad_value``, ``nan_value``,
    ``infinite_value``, ``negative_value``, ``value_out_of_range``, ``missing_timestamp``, ``bad_timestamp``,
    ``unknown_broker``, ``bad_partition``. Ignored: ``blank``, ``comment``, ``other_metric``, ``broker_total``.
    """
    file = file if file is not None else file_uri(path)
    start, end = (0, None) if part is None else part[1:]
    for data in _chunks(path, start, end):
        if not data:
            continue
        array, utf8 = _lines(data)
        yield _records(array, options.broker_map, options.names, utf8=utf8, file=file, cluster=options.cluster)


def _chunks(path: str, start: int, end: int | None) -> Iterator[bytes]:
    """Bytes ``[start, end)`` of the file (decompressed by its extension), in whole lines of about `_CHUNK_BYTES`;
    the byte-order mark at the file's start left out."""
    with open_input(path) as raw:
        codec = _CODECS.get(os.path.splitext(path)[1].lower())
        stream = pa.CompressedInputStream(raw, codec) if codec else raw
        if start:
            stream.seek(start)
        left = None if end is None else end - start
        carry = b""
        if start == 0:  # the mark is only at the file's first byte
            carry = stream.read(len(_BOM) if left is None else min(len(_BOM), left))
            left = None if left is None else left - len(carry)
            carry = carry.removeprefix(_BOM)
        while True:
            block = stream.read(_CHUNK_BYTES if left is None else min(_CHUNK_BYTES, left))
            if left is not None:
                left -= len(block)
            data = carry + block
            if not block:
                yield data
                return
            cut = data.rfind(b"\n") + 1 or data.rfind(b"\r", 0, len(data) - 1) + 1
            if cut:
                yield data[:cut]
            carry = data[cut:]


def split_points(path: str, split_bytes: int = SPLIT_BYTES) -> list[tuple[int, int, int] | None]:
    """The parts one file is read in: ``[None]`` (whole) unless it is a local, uncompressed file larger than
    ``split_bytes``; then ``(index, start, end)`` byte ranges of whole lines, each starting after a line feed.

    >>> import tempfile; f = tempfile.NamedTemporaryFile(suffix=".prom")
    >>> _ = f.write(b"a 1 2\\r\\nb 3 4\\nc 5 6"); f.flush()
    >>> split_points(f.name, 4)
    [(0, 0, 7), (1, 7, 13), (2, 13, 18)]
    """
    if "://" in path and not path.startswith("file:") or os.path.splitext(path)[1].lower() in _CODECS:
        return [None]
    local = path.removeprefix("file://").removeprefix("file:")
    size = file_size(local)
    if size <= split_bytes:
        return [None]
    count = -(-size // split_bytes)
    starts = [0]
    with open(local, "rb") as fh:
        for k in range(1, count):
            at = max(k * size // count, starts[-1])
            fh.seek(at)
            while True:  # the first line feed at or after `at`
                block = fh.read(1 << 16)
                if not block:
                    at = size
                    break
                found = block.find(b"\n")
                if found >= 0:
                    at += found + 1
                    break
                at += len(block)
            if starts[-1] < at < size:
                starts.append(at)
    if len(starts) == 1:
        return [None]
    ends = starts[1:] + [size]
    return [(i, a, b) for i, (a, b) in enumerate(zip(starts, ends))]


def file_uri(path: str) -> str:
    """A local file's name as Spark's file readers give it (``file:`` and the path, quoted as ``java.net.URI``
    quotes a path); a URI as given.

    >>> file_uri("/data/kafka-1:7071/a b%.prom")
    'file:/data/kafka-1:7071/a%20b%25.prom'
    """
    if "://" in path:
        return path
    local = os.path.abspath(path.removeprefix("file:"))
    out = []
    for c in local:
        if c.isascii():
            out.append(c if c.isalnum() or c in "_-!.~'()*,;:$&+=/@" else f"%{ord(c):02X}")
        elif ord(c) <= 0x9F or unicodedata.category(c) in ("Zs", "Zl", "Zp"):
            out.append("".join(f"%{b:02X}" for b in c.encode()))
        else:
            out.append(c)
    return "file:" + "".join(out)


def _stage_file(i: int, path: str, part: tuple[int, int, int] | None, *, directory: str, options: ReaderOptions) -> int:
    return write_parquet(parse_file(path, options, part=part), os.path.join(directory, f"{SOURCE}-{i:05d}.parquet"))


def _parts(paths: Sequence[str], options: ReaderOptions) -> list[tuple[str, tuple[int, int, int] | None]]:
    """Each file's parts (`split_points`), the largest files first."""
    ordered = sorted(paths, key=lambda p: (-file_size(p), p))
    return [(p, part) for p in ordered for part in split_points(p, options.split_bytes or SPLIT_BYTES)]


def stage_prom_text(spark: Any, paths: Sequence[str], directory: str, options: ReaderOptions):
    """Parse exposition-text files into classified records (`STAGED_SCHEMA`, one per line, see `parse_file`),
    written to ``directory/prom_text-<n>.parquet`` by the Python workers (`spark_jobs.staging`), one task per
    file or per ``options.split_bytes`` part of a large one, largest first; return them as a DataFrame.
    """
    os.makedirs(directory, exist_ok=True)
    run_tasks(spark, _parts(paths, options), _stage_file, directory=os.path.abspath(directory), options=options)
    return spark.read.schema(STAGED_SCHEMA).parquet(directory)


def _parse_part(i: int, path: str, part: tuple[int, int, int] | None, *,
                options: ReaderOptions) -> Iterator[pa.RecordBatch]:
    return parse_file(path, options, part=part)


def read_prom_text(spark: Any, paths: Sequence[str], options: ReaderOptions):
    """Exposition-text files' classified records (`spark_jobs.records.RECORD_SCHEMA`, one per line, see
    `parse_file`) as a lazy DataFrame, parsed by Python tasks like `stage_prom_text`'s when an action runs."""
    records = map_tasks(spark, _parts(paths, options), _parse_part, STAGED_SCHEMA, options=options)
    return records.select(*RECORD_SCHEMA.fieldNames())
