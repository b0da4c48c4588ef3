"""Telegraf ``jolokia2`` metrics written by ``[[outputs.file]] data_format = "json"``: one JSON object per line.

``kafka_topic`` lines (``mbean = "kafka.server:name=*,topic=*,type=BrokerTopicMetrics"``, ``field_prefix = "$1."``)
carry ``BytesInPerSec.Count`` … fields (the tiered-storage meters' ``RemoteCopyBytesPerSec.Count`` and
``RemoteFetchBytesPerSec.Count`` too, `spark_jobs.records.COUNTER_METRICS`) and the ``RemoteLogSizeBytes`` gauge's
``RemoteLogSizeBytes.Value`` (a size record without a partition, metric ``remote_log_size``, as
`spark_jobs.prom_text` reads the gauge); ``kafka_partition`` lines
(``kafka.log:name=*,partition=*,topic=*,type=Log``) carry ``Size``. The broker comes from the ``jolokia_agent_url``
(or ``host``) tag through the broker map. The timestamp unit is inferred from its magnitude (s, ms, µs or ns,
``json_timestamp_units``).

`stage_telegraf` reads the lines exactly as Telegraf's JSON serializer writes them (`TELEGRAF_LINE`: its member
order, no spaces, no escapes, no key twice) in Python workers, with RE2 regexes, Arrow string kernels and numpy, no
Python per line, and writes their records straight to Parquet (`spark_jobs.staging`); a large file is read by one
task per part of whole lines (`spark_jobs.prom_text.split_points`). Every other line (other spellings, escapes,
broken JSON, bytes that are not UTF-8 …) is left, bytes unchanged, to Spark's JSON reader (`read_telegraf`), so each
line's records are those of the JVM reader, whatever the line (tests/spark_jobs/test_telegraf.py pins them on a
random and adversarial corpus).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.metric_names import LOG_SIZE, REMOTE_LOG_SIZE, SIZE_METRICS
from spark_jobs.records import (
    COUNTER_METRICS,
    KIND_COUNTER,
    KIND_IGNORED,
    KIND_REJECTED,
    KIND_SIZE,
    broker_lookup,
    classify,
    finish,
    origin_rules,
    partition_rule,
    value_rules,
)
from spark_jobs.staging import ReaderOptions

__all__ = ["read_telegraf", "stage_telegraf", "parse_file", "SOURCE", "TELEGRAF_SCHEMA", "TELEGRAF_LINE"]

SOURCE = "telegraf"

TELEGRAF_SCHEMA = T.StructType(
    [
        T.StructField("name", T.StringType()),
        T.StructField("tags", T.MapType(T.StringType(), T.StringType())),
        T.StructField("fields", T.MapType(T.StringType(), T.StringType())),
        T.StructField("timestamp", T.StringType()),
        T.StructField("_corrupt_record", T.StringType()),
    ]
)

#: Field → normalized metric: the meters' ``Count`` and the ``RemoteLogSizeBytes`` gauge's ``Value`` (jolokia2 names a
#: field ``field_prefix`` + attribute: ``$1.`` is the MBean's ``name``) on ``kafka_topic`` lines, ``Size`` on
#: ``kafka_partition`` ones (`field_name = "$1"`).
_FIELDS = {
    **{f"{meter}.Count": metric for metric, meter in COUNTER_METRICS.items()},
    "RemoteLogSizeBytes.Value": REMOTE_LOG_SIZE,
    "Size": LOG_SIZE,
}


def _to_millis(ts: F.Column) -> F.Column:
    value = ts.try_cast("decimal(38,3)")
    return (
        F.when(value < 1e11, value * 1000)
        .when(value < 1e14, value)
        .when(value < 1e17, value / 1000)
        .otherwise(value / 1000000)
        .try_cast("long")  # beyond a long (e.g. 1e30): no timestamp, a bad_timestamp record, not a failed read
    )


def read_telegraf(spark: SparkSession, paths: Sequence[str], options: ReaderOptions) -> DataFrame:
    """Read Telegraf JSON lines into classified records, one per field (a line that does not parse counts once).

    Rejection reasons: ``malformed_json``, ``no_fields``, ``bad_value``, ``nan_value``, ``infinite_value``,
    ``negative_value``, ``bad_timestamp``, ``unknown_broker``, ``bad_partition``. Ignored: ``blank``,
    ``other_measurement``, ``other_field``, ``broker_total``.
    """
    rows = (
        spark.read.schema(TELEGRAF_SCHEMA)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", "_corrupt_record")
        .json(list(paths))
        .select("*", F.col("_metadata.file_path").alias("file"))
    )
    line_ok = F.col("_corrupt_record").isNull() & F.col("name").isNotNull()
    measurement = F.col("name").isin("kafka_topic", "kafka_partition")
    bad_kind, bad_reason = classify(
        [
            (~line_ok, KIND_REJECTED, "malformed_json"),
            (~measurement, KIND_IGNORED, "other_measurement"),
            (F.col("fields").isNull() | (F.size("fields") == 0), KIND_REJECTED, "no_fields"),
        ],
        "data",
    )
    rows = rows.select("*", bad_kind.alias("kind"), bad_reason.alias("reason"))
    other = rows.where(F.col("kind") != "data").select("file", "kind", "reason",
        F.coalesce("_corrupt_record", F.to_json(F.struct("name", "tags", "fields", "timestamp"))).alias("raw"))
    fields = rows.where(F.col("kind") == "data").select(
        "file", "name", "tags", "timestamp", F.explode("fields").alias("field", "field_value")
    )
    metrics = F.create_map(*[F.lit(x) for kv in sorted(_FIELDS.items()) for x in kv])
    tags = F.col("tags")
    fields = fields.select(
        "*",
        metrics[F.col("field")].alias("metric"),
        F.col("field_value").try_cast("double").alias("value"),
        _to_millis(F.col("timestamp")).alias("ts_ms"),
        F.when(tags["topic"] != "", tags["topic"]).alias("topic"),
        tags["partition"].alias("partition_text"),
        broker_lookup(options.broker_map, tags["jolokia_agent_url"], tags["host"]).alias("broker_id"),
    )
    is_partition = F.col("name") == "kafka_partition"
    kind, reason = classify(
        [
            (F.col("metric").isNull() | (is_partition != (F.col("metric") == LOG_SIZE)), KIND_IGNORED, "other_field"),
            (F.col("topic").isNull(), KIND_IGNORED, "broker_total"),
            *value_rules(),
            *origin_rules(),
            partition_rule(is_partition),
        ],
        F.when(F.col("metric").isin(*SIZE_METRICS), F.lit(KIND_SIZE)).otherwise(F.lit(KIND_COUNTER)),
    )
    fields = fields.select(
        "*",
        kind.alias("kind"),
        reason.alias("reason"),
        F.col("partition_text").try_cast("int").alias("partition"),
        F.lit(False).alias("is_future"),
        F.to_json(
            F.struct("name", "tags", F.create_map("field", "field_value").alias("fields"), "timestamp")
        ).alias("raw"),
    )
    out = fields.unionByName(other, allowMissingColumns=True)
    return finish(out.select("*", F.lit(SOURCE).alias("source"), F.lit(options.cluster).alias("cluster")))


# ---- the worker path: Telegraf's own lines parsed in Python workers, any other line by Spark's JSON reader ----

_NO_TEXT = r'[^"\\\x00-\x1f,]'  # a string character needing no escape in JSON and no comma (a member separator)
_KEY = '"' + _NO_TEXT + '+"'
_STRING = '"' + _NO_TEXT + '*"'
_NUMBER = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
_FIELD = _KEY + ":(?:" + _NUMBER + "|" + _STRING + ")"
_TAG = _KEY + ":" + _STRING
#: A line exactly as Telegraf's JSON serializer writes one (members in its order, no spaces, no escapes, a
#: timestamp of up to 18 digits): read in Python workers. Every other line goes to Spark's JSON reader as before.
TELEGRAF_LINE = (
    r'^\{"fields":\{(?P<fields>' + _FIELD + "(?:," + _FIELD + r')*)\},"name":"(?P<name>[^"\\\x00-\x1f]*)",'
    r'"tags":\{(?P<tags>(?:' + _TAG + "(?:," + _TAG + r')*)?)\},"timestamp":(?P<ts>0|[1-9][0-9]{0,17})\}$'
)
_REASONS = (None, "other_measurement", "other_field", "broker_total", "bad_value", "nan_value", "infinite_value",
            "negative_value", "value_out_of_range", "bad_timestamp", "unknown_broker", "bad_partition")
_KINDS = (KIND_COUNTER, KIND_SIZE, KIND_IGNORED, KIND_REJECTED)
_IGNORED = ("other_measurement", "other_field", "broker_total")
_TAGS = ("topic", "partition", "jolokia_agent_url", "host")


def _members(text: pa.Array) -> tuple[np.ndarray, pa.Array, pa.Array]:
    """The ``"key":value`` members of each object body in ``text`` (`TELEGRAF_LINE`'s, so split at commas): each
    member's line, key and value text (a string's without its quotes, a number's as written, as Spark reads a
    JSON value into a string)."""
    import pyarrow.compute as pc

    lists = pc.split_pattern(text, ",")
    flat = pc.list_flatten(lists)
    line = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)
    empty = pc.equal(flat, "").to_numpy(zero_copy_only=False)  # an empty body: no member
    keep = pa.array(~empty)
    flat, line = flat.filter(keep), line[~empty]
    parts = pc.extract_regex(flat, r'^"(?P<k>[^"]*)":(?P<v>.*)$')
    value = pc.struct_field(parts, [1])
    quoted = pc.starts_with(value, '"')
    value = pc.if_else(quoted, pc.utf8_slice_codeunits(value, 1, -1), value)
    return line, pc.struct_field(parts, [0]), value


def _duplicated(line: np.ndarray, key: pa.Array, lines: int) -> np.ndarray:
    """Per line: whether two of its members share a key."""
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(key)
    codes = line.astype(np.int64) * max(1, len(encoded.dictionary)) + encoded.indices.to_numpy(zero_copy_only=False)
    codes.sort()
    out = np.zeros(lines, bool)
    same = codes[1:] == codes[:-1]
    out[(codes[1:][same] // max(1, len(encoded.dictionary))).astype(np.int64)] = True
    return out


def _telegraf_records(line: pa.Array, utf8: np.ndarray, *, file: str, cluster: str, broker_map: Mapping[str, int]
                      ) -> tuple[pa.RecordBatch, np.ndarray]:
    """The records (`STAGED_SCHEMA`) of the lines of ``line`` that are Telegraf's own (`TELEGRAF_LINE`, UTF-8, no key
    twice in an object), as `read_telegraf`'s Spark path makes them; and which lines those were."""
    import pyarrow.compute as pc

    from spark_jobs.metric_names import ID_PATTERN
    from spark_jobs.prom_text import _per_distinct, java_double, java_long
    from spark_jobs.records import MAX_COUNT, RAW_LIMIT
    from spark_jobs.staging import staged_batch

    np_ = lambda a: a.to_numpy(zero_copy_only=False)  # noqa: E731
    parsed = pc.extract_regex(line, TELEGRAF_LINE)
    ok = np_(parsed.is_valid()) & utf8
    rows = np.flatnonzero(ok)
    parsed = parsed.filter(pa.array(ok))
    fields_text, name, tags_text, ts_text = (pc.struct_field(parsed, [i]) for i in range(4))
    f_line, f_key, f_value = _members(fields_text)
    t_line, t_key, t_value = _members(tags_text)
    n = len(rows)
    clean = ~(_duplicated(f_line, f_key, n) | _duplicated(t_line, t_key, n))
    ok[rows[~clean]] = False
    tags = {}
    for tag in _TAGS:
        at = np_(pc.equal(t_key, tag))
        column = np.full(n, None, object)
        column[t_line[at]] = np_(t_value.filter(pa.array(at)))
        tags[tag] = pa.array(column, pa.string())
    measurement = np_(pc.is_in(name, pa.array(["kafka_topic", "kafka_partition"])))
    # one record per field of a kafka_topic / kafka_partition line, one per other line
    per_field = clean & measurement
    take = per_field[f_line]
    owner = np.concatenate([f_line[take], np.flatnonzero(clean & ~measurement)])
    field_key = pa.concat_arrays([f_key.filter(pa.array(take)), pa.nulls(len(owner) - int(take.sum()), pa.string())])
    field_value = pa.concat_arrays(
        [f_value.filter(pa.array(take)), pa.nulls(len(owner) - int(take.sum()), pa.string())])
    order = np.argsort(owner, kind="stable")
    owner, index = owner[order], pa.array(order)
    field_key, field_value = field_key.take(index), field_value.take(index)
    m = len(owner)
    at = pa.array(owner)
    rec_name = name.take(at)
    metric = _field_metric(field_key)
    is_partition = np_(pc.equal(rec_name, "kafka_partition"))
    is_size = np_(pc.is_in(metric, pa.array(SIZE_METRICS)).fill_null(False))
    topic_tag = tags["topic"].take(at)
    topic = pc.if_else(pc.equal(topic_tag, "").fill_null(True), pa.scalar(None, pa.string()), topic_tag)
    partition_text = tags["partition"].take(at)
    url, host = tags["jolokia_agent_url"].take(at), tags["host"].take(at)
    identity = re.compile(ID_PATTERN.removesuffix("$") + r"\Z")

    def lookup(u: str, h: str) -> int | None:
        for label in (u, h):
            if label and label in broker_map:
                return int(broker_map[label])
            if identity.match(label):
                return int(label)
        return None

    broker = _per_distinct([url, host], lookup, pa.int32()) if m else pa.nulls(0, pa.int32())
    value, value_ok = java_double(field_value)
    ts = _millis(np_(pc.cast(ts_text, pa.int64())))[owner]
    partition, partition_ok = java_long(partition_text, 32)
    data_line = np_(field_key.is_valid())
    metric_np = np_(metric.is_null())
    with np.errstate(invalid="ignore"):
        rules = [
            ("other_measurement", ~data_line),
            ("other_field", metric_np | (is_partition != np_(pc.equal(metric, LOG_SIZE).fill_null(False)))),
            ("broker_total", np_(topic.is_null())),
            ("bad_value", ~value_ok),
            ("nan_value", np.isnan(value)),
            ("infinite_value", np.isinf(value)),
            ("negative_value", value < 0),
            ("value_out_of_range", value > MAX_COUNT),
            ("bad_timestamp", ts <= 0),
            ("unknown_broker", np_(broker.is_null())),
            ("bad_partition", is_partition & ~np_(pc.match_substring_regex(partition_text.fill_null(""), ID_PATTERN))),
        ]
    reason = np.zeros(m, np.int8)
    for rule, bad in reversed(rules):
        reason[bad] = _REASONS.index(rule)
    data = reason == 0
    ignored = np.isin(reason, [_REASONS.index(r) for r in _IGNORED])
    kind = np.where(data, np.where(is_size, 1, 0), np.where(ignored, 2, 3)).astype(np.int32)
    rejected = kind == 3
    none = pa.scalar(None, pa.string())
    line_only = ~data_line
    raw = _raw(rec_name, t_line, t_key, t_value, owner, field_key, field_value,
        ts_text.take(at)) if rejected.any() else pa.nulls(m, pa.string())
    batch = staged_batch(
        m, source=SOURCE, file=file, cluster=cluster,
        kind=pa.array(_KINDS, pa.string()).take(pa.array(kind)),
        reason=pa.array(_REASONS, pa.string()).take(pa.array(reason.astype(np.int32))),
        ts_ms=pa.array(ts, pa.int64(), mask=~data),
        broker_id=pc.if_else(pa.array(line_only), pa.scalar(None, pa.int32()), broker),
        topic=pc.if_else(pa.array(line_only), none, topic),
        partition=pa.array(partition.astype(np.int32), pa.int32(), mask=~(data & partition_ok)),
        metric=pc.if_else(pa.array(data), metric, none),
        value=pa.array(value, pa.float64(), mask=~data),
        is_future=pa.array(np.zeros(m, bool), pa.bool_(), mask=~data),
        raw=pc.if_else(pa.array(rejected), pc.utf8_slice_codeunits(raw, 0, RAW_LIMIT), none),
    )
    return batch, ok


def _field_metric(key: pa.Array) -> pa.Array:
    """Each field key's normalized metric (`_FIELDS`), null for any other field."""
    import pyarrow.compute as pc

    names = sorted(_FIELDS)
    index = pc.index_in(key, pa.array(names))
    return pa.array([_FIELDS[k] for k in names], pa.string()).take(index)


def _millis(ts: np.ndarray) -> np.ndarray:
    """`_to_millis` of timestamps of up to 18 digits (non-negative): the unit by the magnitude, as a double compares
    it."""
    magnitude = ts.astype(np.float64)
    return np.where(magnitude < 1e11, ts * 1000,
        np.where(magnitude < 1e14, ts, np.where(magnitude < 1e17, ts // 1000, ts // 1_000_000)))


def _raw(name: pa.Array, t_line: np.ndarray, t_key: pa.Array, t_value: pa.Array, owner: np.ndarray, field_key: pa.Array,
         field_value: pa.Array, ts_text: pa.Array) -> pa.Array:
    """Each record's line as Spark's ``to_json`` writes its struct (name, tags, the one field, timestamp as text)."""
    import pyarrow.compute as pc

    pairs = pc.binary_join_element_wise('"', t_key, '":"', t_value, '"', "")
    lines = int(owner.max(initial=-1)) + 1
    offsets = np.concatenate([[0], np.cumsum(np.bincount(t_line, minlength=lines)[:lines])]).astype(np.int32)
    bodies = pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), pairs.slice(0, int(offsets[-1]))), ",")
    tags = bodies.take(pa.array(owner))
    return pc.binary_join_element_wise(
        '{"name":"', name, '","tags":{', tags, '},"fields":{"', field_key, '":"', field_value, '"},"timestamp":"',
        ts_text, '"}', "")


def parse_file(path: str, options: ReaderOptions, *, residue: str, part: tuple[int, int, int] | None = None
               ) -> Iterator[pa.RecordBatch]:
    """Stream the Telegraf lines of one file (or of its ``part`` from `spark_jobs.prom_text.split_points`) into record
    batches; every other line's bytes (line ends kept) go to the file ``residue`` for Spark's JSON reader, after a
    first empty line (Spark reads none from it; no byte-order mark is ever at the residue's start)."""
    from spark_jobs.prom_text import _chunks, _line_starts, _lines, file_uri

    uri = file_uri(path)
    start, end = (0, None) if part is None else part[1:]
    out = None
    try:
        for data in _chunks(path, start, end):
            if not data:
                continue
            array, utf8 = _lines(data)
            batch, ok = _telegraf_records(array, utf8, file=uri, cluster=options.cluster, broker_map=options.broker_map)
            if not ok.all():
                starts, _ = _line_starts(data)
                rest = np.frombuffer(data, np.uint8)[np.repeat(~ok, np.diff(starts))]
                if out is None:
                    os.makedirs(os.path.dirname(residue), exist_ok=True)
                    out = open(residue + ".tmp", "wb")
                    out.write(b"\n")
                out.write(rest.tobytes())
                out.write(b"\n")
            if batch.num_rows:
                yield batch
    finally:
        if out is not None:
            out.close()
            os.replace(residue + ".tmp", residue)


def _stage_part(i: int, path: str, part: tuple[int, int, int] | None, *, directory: str, residues: str,
                options: ReaderOptions) -> int:
    from spark_jobs.staging import write_parquet

    residue = os.path.join(residues, f"{i:05d}.json")
    if os.path.exists(residue):  # a retried task's
        os.remove(residue)
    records = parse_file(path, options, residue=residue, part=part)
    return write_parquet(records, os.path.join(directory, f"{SOURCE}-{i:05d}.parquet"))


def stage_telegraf(spark: SparkSession, paths: Sequence[str], directory: str,
                   options: ReaderOptions) -> DataFrame | None:
    """Parse Telegraf JSON files into classified records (`STAGED_SCHEMA`, one per field, see `read_telegraf`):
    Telegraf's own lines (`TELEGRAF_LINE`) by the Python workers into ``directory/telegraf-<n>.parquet``, one task
    per file or per ``options.split_bytes`` part of a large one, largest first; return the records of every other line
    (Spark's JSON reader, `read_telegraf`, on the lines the workers left, named by their own file), None if none.
    """
    from spark_jobs.prom_text import SPLIT_BYTES, file_uri, split_points
    from spark_jobs.staging import file_size, run_tasks

    os.makedirs(directory, exist_ok=True)
    residues = os.path.abspath(directory) + ".residue"
    ordered = sorted(paths, key=lambda p: (-file_size(p), p))
    parts = [(p, part) for p in ordered for part in split_points(p, options.split_bytes or SPLIT_BYTES)]
    run_tasks(spark, parts, _stage_part, directory=os.path.abspath(directory), residues=residues, options=options)
    found = sorted(f for f in os.listdir(residues) if f.endswith(".json")) if os.path.isdir(residues) else []
    if not found:
        return None
    names = F.create_map(*[F.lit(x) for i, (p, _) in enumerate(parts) for x in (i, file_uri(p))])
    rest = read_telegraf(spark, [os.path.join(residues, f) for f in found], options)
    return rest.withColumn("file", names[F.regexp_extract("file", r"/([0-9]+)\.json$", 1).cast("int")])
