"""The ingest job: raw metric logs and the normalized history → topic profile, quarantine and quality counts.

``run`` wires the readers, the counter-to-rate step, the history table and the profile aggregates; it
collects only small per-topic results and writes the profile with `pools.profile.save_profile`, so the
profile is byte-identical for the same input whatever the cluster or partitioning. Its one front door is
``poolplan ingest`` (`planner.cli.ingest`), which `spark_jobs.ingest_stage` turns into a session and a ``run``.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pools.atomic import write_json
from pools.errors import InputError
from pools.forecast_band import calibrate, out_of_time
from pools.pool_rules import DEFAULT_FORECAST_HORIZON_DAYS
from pools.profile import BACKTEST_METRICS, BacktestRow, PartitionProfile, TopicProfile, save_backtest, save_profile
from spark_jobs.growth import backtest, robust_growth
from spark_jobs.day_profile import install_partials, topic_stats
from spark_jobs.history import (
    check_history,
    commit_days,
    held_days,
    holds_remote,
    read_history,
    stage_merged_days,
    stage_new_days,
)
from spark_jobs.history_contract import REMOTE_COLUMNS, THROUGHPUT_SCHEMA, bucket_count, steps_files
from spark_jobs.log_dirs import read_log_dirs
from spark_jobs.metric_names import DEFAULT as DEFAULT_NAMES
from spark_jobs.metric_names import MetricNames, RangeValues
from spark_jobs.minute_merge import merge_buckets
from spark_jobs.profile import (
    aggregate_remote_rates,
    aggregate_remote_sizes,
    aggregate_sizes,
    aggregate_topic_minutes,
    aggregate_topic_profile,
)
from spark_jobs.normalized_json import SOURCE as NORMALIZED_SOURCE
from spark_jobs.normalized_json import read_normalized_json
from spark_jobs.prom_text import SOURCE as PROM_TEXT_SOURCE
from spark_jobs.prom_text import stage_prom_text
from spark_jobs.query_range import stage_query_range
from spark_jobs.rates import duplicate_units, minute_deltas, sample_steps
from spark_jobs.records import (
    ACCEPTED_KINDS, KIND_IGNORED, KIND_MINUTE, KIND_REJECTED, KIND_SIZE, STAGED_SCHEMA, staged,
)
from spark_jobs.spark_log import LOG_FILE, job_failure, spark_log
from spark_jobs.staging import ReaderOptions
from spark_jobs.telegraf import SOURCE as TELEGRAF_SOURCE
from spark_jobs.telegraf import stage_telegraf

__all__ = ["IngestInputs", "IngestParams", "IngestResult", "run", "QUALITY_FILE", "QUARANTINE_DIR", "LOG_FILE"]

_log = logging.getLogger(__name__)
QUALITY_FILE = "quality.json"

#: Day 0 of the day numbers the daily series use (days since the Unix epoch).
_EPOCH = date(1970, 1, 1)
QUARANTINE_DIR = "quarantine"
HISTORY_DIR = "history"
#: The source name of rows pulled from a Prometheus server.
PROMETHEUS_SOURCE = "prometheus"


@dataclass(frozen=True, slots=True)
class IngestInputs:
    """Input files (already expanded, sorted) per source, and the history table to read and extend."""

    prom_text: tuple[str, ...] = ()
    query_range: tuple[str, ...] = ()
    telegraf: tuple[str, ...] = ()
    log_dirs: tuple[str, ...] = ()
    normalized_json: tuple[str, ...] = ()
    history: str | None = None
    #: Responses fetched from a Prometheus server (`spark_jobs.prometheus`), and the days they are for:
    #: only rows of those days are taken from them.
    prometheus: tuple[str, ...] = ()
    prometheus_days: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class IngestParams:
    """Options of a run: cluster name, broker map (label value → broker id), horizon, partition counts."""

    cluster: str
    broker_map: Mapping[str, int] = field(default_factory=dict)
    horizon_days: int = DEFAULT_FORECAST_HORIZON_DAYS
    partition_counts: Mapping[str, int] = field(default_factory=dict)
    #: What query_range values are when declared (``--range-values``); None = by the metric's name.
    range_values: RangeValues | None = None
    #: The metric names and the topic/instance labels the readers and the pull go by (``--metric-names``).
    metric_names: MetricNames = DEFAULT_NAMES
    #: Quarantine the pulled series of instances the broker map does not name (with a warning) instead of failing.
    quarantine_unmapped: bool = False


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What a run wrote and counted."""

    out_dir: Path
    topics: int
    partitions: int
    quality: Mapping[str, Any]
    #: The days the pulled Prometheus responses gave usable rows for, none of them quarantined for an
    #: unmapped instance with traffic: the days a later pull need not fetch again.
    prometheus_days: tuple[str, ...] = ()


def run(
    spark: SparkSession,
    inputs: IngestInputs,
    out_dir: str | os.PathLike[str],
    params: IngestParams,
    *,
    progress: Callable[[str], None] = lambda _msg: None,
    echo: bool = False,
) -> IngestResult:
    """Ingest ``inputs`` and write the profile, ``quality.json``, ``quarantine/``, ``spark.log`` and the history.

    ``echo`` shows Spark's log on the console too (`spark_jobs.spark_log.spark_log`).

    Every input is parsed once into a staged record table under ``OUT/.ingest-*`` (removed at the end);
    every later step reads that table. The user's history and the outputs change only at the end, once
    everything has been computed (see `spark_jobs.history`).

    Raises
    ------
    InputError
        When no input is given, a history file is damaged, or the inputs hold no usable record.
    JobError
        When Spark fails for a reason that is not the input's (out of memory, a lost executor, a dead JVM).
    """
    out = Path(out_dir)
    history = inputs.history or os.fspath(out / HISTORY_DIR)
    check_inputs(inputs, out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / LOG_FILE
    work = out / f".ingest-{uuid.uuid4().hex}"
    try:
        with spark_log(spark, log, echo=echo):
            try:
                return _run(spark, inputs, out, work, history, params, progress)
            except Exception as exc:
                failure = job_failure(exc, log)
                if failure is None:
                    raise
                raise failure from None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check_inputs(inputs: IngestInputs, out_dir: str | os.PathLike[str]) -> bool:
    """What can be checked before Spark starts: some input is given and the history table is whole (its own
    directory, else ``OUT/history``); return whether the history holds any file.

    Raises
    ------
    InputError
        No input at all, or a history file that is not a readable Parquet file of the table.
    """
    has_history = check_history(inputs.history or os.fspath(Path(out_dir) / HISTORY_DIR))
    if not (inputs.prom_text or inputs.query_range or inputs.prometheus or inputs.telegraf or inputs.log_dirs
            or inputs.normalized_json or has_history):
        raise InputError(
            "no input: give --prom, --query-range, --telegraf, --log-dirs, --normalized-json, --prometheus "
                         "or --history")
    return has_history


def _run(
    spark: SparkSession,
    inputs: IngestInputs,
    out: Path,
    work: Path,
    history: str,
    params: IngestParams,
    progress: Callable[[str], None],
) -> IngestResult:
    records, steps, summed_files, buckets = _stage_steps(spark, inputs, params, work, progress)
    normalized = None
    if inputs.normalized_json:
        progress("validating normalized JSON lines")
        path = os.fspath(work / "normalized")
        read_normalized_json(spark, inputs.normalized_json, cluster=params.cluster).write.parquet(path)
        normalized = spark.read.parquet(path)
    units = _units(records, normalized, duplicate_units(steps))
    progress("counting input records")
    rejected_topic = F.when(F.col("kind") == KIND_REJECTED, F.col("topic")).alias("topic")
    counts = units.groupBy("source", "kind", "reason", rejected_topic).agg(F.sum("n").alias("count")).collect()
    unmapped: dict[str, list[str]] = {}
    if inputs.prometheus and any(r["source"] == PROMETHEUS_SOURCE and r["reason"] == "unknown_broker" for r in counts):
        unmapped = _unmapped_instances(records, params, inputs.prometheus_days)
        if unmapped and not params.quarantine_unmapped:
            raise InputError(
                f"the broker map does not name the instance(s) {', '.join(sorted(unmapped))} that carry traffic in the "
                "Prometheus pull: add them to --broker-map (label value = broker id), or give --quarantine-unmapped "
                "to quarantine their series"
            )
        if unmapped:
            _log.warning(
                "quarantined the pulled series of %d instance(s) the broker map does not name, which carry traffic: %s",
                len(unmapped), ", ".join(sorted(unmapped)),
            )
    _check_usable(counts, inputs, history)
    progress("converting counters to per-minute rows")
    new_path = os.fspath(work / "minutes")
    # the samples fetched before a day (its first minute's predecessors) give rows of earlier days: not ours
    only_days = {PROMETHEUS_SOURCE: inputs.prometheus_days} if inputs.prometheus else {}
    deltas = minute_deltas(steps, records, summed=not summed_files)
    written = merge_buckets(spark, deltas, summed_files, buckets, new_path, only_days=only_days)
    pulled_days: tuple[str, ...] = ()
    if inputs.prometheus:
        pulled = {d for (_, d), sources in written.items() if sources.get(PROMETHEUS_SOURCE)}
        pulled_days = tuple(sorted(pulled - {d for days in unmapped.values() for d in days}))
    progress(f"merging the new days into the history {history}")
    merged_path = os.fspath(work / "merged")
    # a day the history has no row of takes the new rows as they are; normalized JSON rows go through the merge
    fresh = [] if normalized is not None else sorted(set(written) - held_days(history, sorted(written)))
    merge = [(c, d) for c, d in sorted(written) if (c, d) not in fresh]
    new = spark.createDataFrame([], THROUGHPUT_SCHEMA)
    for cluster in sorted({c for c, _ in merge}):
        new = new.unionByName(
            read_history(spark, new_path, cluster=cluster, only_days=[d for c, d in merge if c == cluster]),
            allowMissingColumns=True)
    if normalized is not None:
        new = new.unionByName(normalized.where(F.col("kind") == KIND_MINUTE).select(*THROUGHPUT_SCHEMA.fieldNames()),
            allowMissingColumns=True)
    days = stage_merged_days(spark, new, history, merged_path) if merge or normalized is not None else []
    stage_new_days(spark, new_path, fresh, merged_path)
    days = sorted([*days, *fresh])
    progress("computing the topic profile")
    touched = [d for c, d in days if c == params.cluster]
    computed = topic_stats(spark, history, merged_path, params.cluster, touched, work)

    def rows() -> DataFrame:
        old = read_history(spark, history, cluster=params.cluster, exclude_days=touched)
        if not days:
            return old
        return old.unionByName(read_history(spark, merged_path, cluster=params.cluster), allowMissingColumns=True)

    if computed is None:
        stats, pending = _spark_stats(rows()), []
    else:
        stats, pending = computed
    remote_rates = _remote_rates(rows()) if holds_remote(history) or holds_remote(merged_path) else {}
    topics, partitions, extra, scored = _profile(stats, remote_rates, records, inputs, params, counts)
    if not topics:
        raise InputError(
            f"no topic has traffic or a size in the inputs{_history_note(history)}: {_summary(counts)} "
            "(a counter needs two scrapes of its series to give a rate)"
        )
    progress("writing the quarantine and the profile")
    quarantine = os.fspath(work / QUARANTINE_DIR)
    rejected = units.where(F.col("kind") == KIND_REJECTED).drop("kind", "n")
    if not any(r["kind"] == KIND_REJECTED for r in counts):  # the counts say so: no need to read every input unit again
        rejected = spark.createDataFrame([], rejected.schema)
    # one file in an order of all its columns: its rows do not depend on how the inputs were split into tasks
    rejected.repartition(1).sortWithinPartitions(*rejected.columns).write.parquet(quarantine)
    # paths inside OUT are stored relative to it, like "quarantine": a run directory is renamed into place
    inside = Path(history).resolve().is_relative_to(out.resolve())
    stored = os.path.relpath(Path(history).resolve(), out.resolve()) if inside else os.path.abspath(history)
    quality = {**_quality(counts), **extra, "cluster": params.cluster, "history": stored,
               "backtest": backtest_summary(scored)}
    if unmapped:
        quality["unmapped_instances"] = {k: unmapped[k] for k in sorted(unmapped)}
    commit_days(spark, merged_path, history, days)
    install_partials(pending)
    target = out / QUARANTINE_DIR
    if target.exists():
        shutil.rmtree(target)
    os.replace(quarantine, target)
    save_profile(out, topics, partitions)
    save_backtest(out, scored)
    write_json(out / QUALITY_FILE, quality)
    return IngestResult(out, len(topics), len(partitions), quality, pulled_days)


def _stage_steps(
    spark: SparkSession, inputs: IngestInputs, params: IngestParams, work: Path, progress: Callable[[str], None]
) -> tuple[DataFrame, DataFrame, list[str], int]:
    """Parse every raw input once into ``work/records``, order the samples Spark sees by series and time
    into ``work/steps`` (`spark_jobs.rates.sample_steps`), and return both tables, the files of per-minute
    increases the workers summed and the number of topic buckets they are split into (`spark_jobs.minute_merge`).

    A query_range series is converted in its file (only its ends, resets and duplicates reach the sort);
    when another file or source has samples inside such a series' span, that conversion does not hold,
    and every input is read again sample by sample (exact, slower).
    """
    raw = [*inputs.query_range, *inputs.prometheus]
    buckets = bucket_count(raw, int(spark.conf.get("spark.sql.shuffle.partitions")))
    records, steps = _stage_samples(spark, inputs, params, work, progress, in_file=True, buckets=buckets)
    if raw and steps.where(F.col("foreign")).limit(1).count():
        progress("series overlap across files: reading every sample")
        records, steps = _stage_samples(spark, inputs, params, work, progress, in_file=False)
        return records, steps, [], buckets
    return records, steps, steps_files(os.fspath(work / "records-1" / "query_range")), buckets


def _stage_samples(
    spark: SparkSession, inputs: IngestInputs, params: IngestParams, work: Path, progress: Callable[[str], None], *,
    in_file: bool,
    buckets: int | None = None,
) -> tuple[DataFrame, DataFrame]:
    records = _stage_records(spark, inputs, params, work / f"records-{int(in_file)}", progress, in_file=in_file,
        buckets=buckets)
    progress("ordering the samples of every series by time")
    path = os.fspath(work / f"steps-{int(in_file)}")
    sample_steps(records).write.parquet(path)
    return records, spark.read.parquet(path)


def _stage_records(
    spark: SparkSession, inputs: IngestInputs, params: IngestParams, work: Path, progress: Callable[[str], None], *,
    in_file: bool,
    buckets: int | None = None,
) -> DataFrame:
    """Parse every raw input once into the directory ``work`` and return that table (`STAGED_SCHEMA`).

    query_range exports (files or fetched from Prometheus), exposition text and Telegraf's own JSON lines are
    written there by the Python workers that parse them (`spark_jobs.query_range.stage_query_range`, their series'
    per-minute increases split into ``buckets`` of topics when given; `spark_jobs.prom_text.stage_prom_text`;
    `spark_jobs.telegraf.stage_telegraf`); the JVM readers' records (log-dirs captures, other JSON lines) by Spark.
    (Not partitioned by kind: a partitioned write sorts every task's rows by the partition column first.)
    """
    parts: list[str] = []
    reader = ReaderOptions(params.cluster, dict(params.broker_map), params.metric_names)
    if inputs.log_dirs or inputs.telegraf or inputs.query_range or inputs.prometheus or inputs.prom_text:
        progress("reading the metric logs")
    residue = None
    if inputs.telegraf:
        path = os.fspath(work / TELEGRAF_SOURCE)
        residue = stage_telegraf(spark, inputs.telegraf, path, reader)
        parts.append(path)
    frames = _readers(spark, inputs, params, residue)
    if inputs.prom_text:
        path = os.fspath(work / PROM_TEXT_SOURCE)
        stage_prom_text(spark, inputs.prom_text, path, reader)
        parts.append(path)
    if inputs.query_range or inputs.prometheus:
        path = os.fspath(work / "query_range")
        ranges = replace(reader, steps=in_file, buckets=buckets)
        for files, options in ((inputs.query_range, replace(ranges, declared=params.range_values)),
                               (inputs.prometheus, replace(ranges, source=PROMETHEUS_SOURCE, own_windows=True))):
            if files:
                stage_query_range(spark, files, path, options)
        parts.append(path)
    if frames is not None:
        path = os.fspath(work / "spark")
        frames.write.parquet(path)
        parts.append(path)
    if parts:
        return spark.read.schema(STAGED_SCHEMA).parquet(*parts)
    return spark.createDataFrame([], STAGED_SCHEMA)


def _units(records: DataFrame, normalized: DataFrame | None, duplicates: DataFrame) -> DataFrame:
    """Every input unit as ``source, file, kind, reason, cluster, broker_id, topic, raw``: counted and quarantined.

    A duplicated sample was first read as an accepted record; its duplicate unit (ignored or rejected) comes
    with a `_CANCEL` unit that takes that acceptance back, so read = accepted + ignored + quarantined holds.
    """
    columns = ("source", "file", "kind", "reason", "cluster", "broker_id", "topic", "raw")
    one = F.lit(1).cast("long").alias("n")
    units = records.where(F.col("n") > 0).select(*columns, "n")
    if normalized is not None:
        rows = normalized.drop("source").select("*", F.lit(NORMALIZED_SOURCE).alias("source"),
            F.col("source_file").alias("file"))
        units = units.unionByName(rows.select(*columns, one))
    none = F.lit(None).cast("string")
    cancel = duplicates.select(
        "source", "file", F.lit(_CANCEL).alias("kind"), none.alias("reason"), "cluster", "broker_id",
        none.alias("topic"), none.alias("raw"), one
    )
    return units.unionByName(duplicates.select(*columns, one)).unionByName(cancel)


#: The kind of the bookkeeping unit that takes back a duplicate sample's first count as accepted.
_CANCEL = "cancel"


def _unmapped_instances(records: DataFrame, params: IngestParams, days: Sequence[str]) -> dict[str, list[str]]:
    """The instances whose pulled series the broker map does not name and that carry traffic (a counter that
    rose, a window above zero), each with the pulled ``days`` their samples end minutes of.

    Read from the quarantined samples' raw text (``{"metric": labels, "value": [time, "value"]}``).
    """
    rejected = records.where((F.col("source") == PROMETHEUS_SOURCE) & (F.col("reason") == "unknown_broker"))
    instance = F.coalesce(*[F.get_json_object("raw", f"$.metric.{k}") for k in params.metric_names.instance_labels],
        F.lit("(no instance label)"))
    value = F.get_json_object("raw", "$.value[1]").try_cast("double")
    seconds = F.get_json_object("raw", "$.value[0]").try_cast("double") - 0.001  # a sample ends the minute before it
    windows = F.col("file").rlike(r":(increase|rate)[0-9]+[a-z]+-[^/]*$")
    series = rejected.groupBy(instance.alias("instance"), F.get_json_object("raw", "$.metric").alias("series"),
        windows.alias("windows")).agg(
        F.max(value).alias("hi"), F.min(value).alias("lo"),
        F.collect_set(F.date_format(F.timestamp_seconds(seconds), "yyyy-MM-dd")).alias("days")
    )
    busy = series.where((F.col("hi") > F.col("lo")) | (F.col("windows") & (F.col("hi") > 0)))
    out: dict[str, set[str]] = {}
    for r in busy.select("instance", "days").collect():
        out.setdefault(r["instance"], set()).update(d for d in r["days"] if d in days)
    return {k: sorted(v) for k, v in out.items()}


def _readers(spark: SparkSession, inputs: IngestInputs, params: IngestParams,
    telegraf: DataFrame | None) -> DataFrame | None:
    """The records of the inputs Spark's JVM reads (log-dirs captures, the Telegraf lines not Telegraf's own:
    ``telegraf``, from `spark_jobs.telegraf.stage_telegraf`), unioned."""
    frames = [] if telegraf is None else [telegraf]
    if inputs.log_dirs:
        frames.append(read_log_dirs(spark, inputs.log_dirs, cluster=params.cluster))
    if not frames:
        return None
    out = staged(frames[0])
    for frame in frames[1:]:
        out = out.unionByName(staged(frame))
    return out


def _check_usable(counts: list[Any], inputs: IngestInputs, history: str) -> None:
    """Raise when the raw inputs hold no usable record and there is no history to fall back on."""
    accepted = (sum(r["count"] for r in counts if r["kind"] in ACCEPTED_KINDS)
                - sum(r["count"] for r in counts if r["kind"] == _CANCEL))
    if accepted > 0 or not counts:
        return
    if not check_history(history):
        raise InputError(f"no usable record in the inputs: {_summary(counts)}")


def _summary(counts: list[Any]) -> str:
    totals = _quality(counts)["totals"]
    reasons: dict[str, int] = {}
    for r in counts:
        if r["kind"] in (KIND_IGNORED, KIND_REJECTED):
            reasons[r["reason"]] = reasons.get(r["reason"], 0) + r["count"]
    top = ", ".join(f"{k} {v}" for k, v in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))[:3])
    return (
        f"{totals['read']} read, {totals['accepted']} accepted, {totals['ignored']} ignored, "
        f"{totals['quarantined']} quarantined" + (f" ({top})" if top else "")
    )


def _history_note(history: str) -> str:
    return f" or the history {history}" if check_history(history) else ""


def _quality(counts: list[Any]) -> dict[str, Any]:
    sources: dict[str, dict[str, Any]] = {}
    for row in sorted(counts, key=lambda r: (r["source"], r["kind"], r["reason"] or "")):
        s = sources.setdefault(row["source"], {"read": 0, "accepted": 0, "ignored": {}, "quarantined": {}})
        if row["kind"] == _CANCEL:
            s["read"] -= row["count"]
            s["accepted"] -= row["count"]
            continue
        s["read"] += row["count"]
        if row["kind"] in ACCEPTED_KINDS:
            s["accepted"] += row["count"]
        else:
            bucket = s["ignored" if row["kind"] == KIND_IGNORED else "quarantined"]
            bucket[row["reason"]] = bucket.get(row["reason"], 0) + row["count"]
    totals = {"read": 0, "accepted": 0, "ignored": 0, "quarantined": 0}
    for s in sources.values():
        s["ignored_total"] = sum(s["ignored"].values())
        s["quarantined_total"] = sum(s["quarantined"].values())
        totals["read"] += s["read"]
        totals["accepted"] += s["accepted"]
        totals["ignored"] += s["ignored_total"]
        totals["quarantined"] += s["quarantined_total"]
    totals["reconciles"] = totals["read"] == totals["accepted"] + totals["ignored"] + totals["quarantined"]
    return {"sources": sources, "totals": totals, "quarantine": QUARANTINE_DIR}


def _utc(micros: int) -> datetime:
    return datetime.fromtimestamp(micros / 1_000_000, tz=timezone.utc)


def _spark_stats(rows: DataFrame) -> list[dict[str, Any]]:
    """The per-topic figures of `spark_jobs.day_profile.merge_topics`, computed by Spark from the history's rows
    (where the per-day partials cannot be exact)."""
    profile = aggregate_topic_profile(aggregate_topic_minutes(rows))
    stats = []
    for r in profile.select("*", F.unix_micros("first_ts").alias("first_us"),
        F.unix_micros("last_ts").alias("last_us")).drop(
        "first_ts", "last_ts"
    ).collect():
        s = r.asDict()
        s["daily"] = [(d["day"], d["p99"]) for d in s["daily"]]
        stats.append(s)
    return stats


def _remote_rates(rows: DataFrame) -> dict[str, dict[str, float | None]]:
    """Per topic whose history has a remote meter, the p99 of its per-minute remote copy and fetch rates
    (`spark_jobs.profile.aggregate_remote_rates`, null where that meter is unmeasured); none when the history's
    ``rows`` have no remote columns."""
    if not set(REMOTE_COLUMNS) <= set(rows.columns):
        return {}
    return {r["topic"]: r.asDict() for r in aggregate_remote_rates(rows).collect()}


def _profile(
    figures: list[dict[str, Any]], remote_rates: dict[str, dict[str, float | None]], records: DataFrame,
    inputs: IngestInputs, params: IngestParams, counts: list[Any]
) -> tuple[list[TopicProfile], list[PartitionProfile], dict[str, Any], list[BacktestRow]]:
    stats = {s["topic"]: s for s in figures}
    daily = {topic: s["daily"] for topic, s in stats.items()}
    rejected: dict[str | None, int] = {}
    for r in counts:
        if r["kind"] == KIND_REJECTED:
            rejected[r["topic"]] = rejected.get(r["topic"], 0) + r["count"]
    latest: list[Any] = []
    storage_daily: dict[str, dict[int, int]] = {}
    remote: dict[str, int] = {}  # a tiered topic's bytes in the remote store, where its RemoteLogSizeBytes was read
    if any(r["kind"] == KIND_SIZE for r in counts):
        remote = {r["topic"]: r["remote_bytes"] for r in aggregate_remote_sizes(records).collect()}
        sizes = records.where(F.col("source") == "log_dirs") if inputs.log_dirs else records
        latest = aggregate_sizes(sizes, by_day=False).collect()
        daily_sizes = aggregate_sizes(sizes, by_day=True).groupBy("topic", "bucket").agg(F.sum("size_bytes").alias("s"))
        for r in daily_sizes.collect():
            storage_daily.setdefault(r["topic"], {})[r["bucket"]] = r["s"]
    partitions = sorted((PartitionProfile(r["topic"], r["partition"], r["size_bytes"]) for r in latest),
        key=lambda p: (p.topic, p.partition))
    storage: dict[str, int] = {}
    size_parts: dict[str, int] = {}
    size_ts: dict[str, int] = {}
    for r in latest:
        storage[r["topic"]] = storage.get(r["topic"], 0) + r["size_bytes"]
        size_parts[r["topic"]] = size_parts.get(r["topic"], 0) + 1
        size_ts[r["topic"]] = max(size_ts.get(r["topic"], 0), r["ts_ms"] * 1000)
    topics, scored = [], []
    for topic in sorted(set(stats) | set(storage)):
        s = stats.get(topic)
        series = {"bytes_in_p99": _series(daily.get(topic, [])),
                  "storage_bytes": _series(sorted(storage_daily.get(topic, {}).items()))}
        bytes_in = robust_growth(*series["bytes_in_p99"])
        stored = robust_growth(*series["storage_bytes"])
        for metric in BACKTEST_METRICS:
            scored += [BacktestRow(topic, metric, _EPOCH + timedelta(days=p.origin), p.horizon, p.actual, p.forecast,
                                   p.low, p.high) for p in backtest(*series[metric])]
        f_in = bytes_in.forecast(params.horizon_days)
        f_st = stored.forecast(params.horizon_days)
        first_us = s["first_us"] if s else size_ts[topic]
        last_us = s["last_us"] if s else size_ts[topic]
        topics.append(
            TopicProfile(
                topic=topic,
                partitions=int(params.partition_counts.get(topic, size_parts.get(topic, 0))),
                bytes_in_p50=float(s["bytes_in_p50"]) if s else 0.0,
                bytes_in_p95=float(s["bytes_in_p95"]) if s else 0.0,
                bytes_in_p99=float(s["bytes_in_p99"]) if s else 0.0,
                bytes_in_max=float(s["bytes_in_max"]) if s else 0.0,
                bytes_out_p95=s["bytes_out_p95"] if s else None,
                bytes_out_p99=s["bytes_out_p99"] if s else None,
                bytes_out_max=s["bytes_out_max"] if s else None,
                messages_in_p99=s["messages_in_p99"] if s else None,
                storage_bytes=int(storage.get(topic, 0)),
                bytes_in_p99_growth_per_day=bytes_in.per_day,
                storage_growth_per_day=stored.per_day,
                forecast_horizon_days=params.horizon_days,
                forecast_bytes_in_p99=f_in[0],
                forecast_bytes_in_p99_low=f_in[1],
                forecast_bytes_in_p99_high=f_in[2],
                forecast_storage_bytes=f_st[0],
                forecast_storage_low=f_st[1],
                forecast_storage_high=f_st[2],
                days_observed=int(s["days_observed"]) if s else 0,
                samples=int(s["samples"]) if s else 0,
                gaps=int(s["gaps"]) if s else 0,
                counter_resets=int(s["counter_resets"]) if s else 0,
                rejected_rows=int(rejected.get(topic, 0)),
                first_ts=_utc(first_us),
                last_ts=_utc(last_us),
                remote_log_size_bytes=remote.get(topic),
                remote_copy_bytes_p99=remote_rates.get(topic, {}).get("remote_copy_bytes_p99"),
                remote_fetch_bytes_p99=remote_rates.get(topic, {}).get("remote_fetch_bytes_p99"),
            )
        )
    extra = {
        "topics": len(topics),
        "normalized_rows": sum(int(s["rows"]) for s in stats.values()),
        "gaps": sum(t.gaps for t in topics),
        "counter_resets": sum(t.counter_resets for t in topics),
        "rejected_without_topic": rejected.get(None, 0),
        "topics_without_size": sorted(t.topic for t in topics if t.topic not in storage),
        "topics_without_traffic": sorted(t.topic for t in topics if t.topic not in stats),
        "snapshot_topics_without_data": sorted(set(params.partition_counts) - {t.topic for t in topics}),
    }
    return topics, partitions, extra, scored


def backtest_summary(rows: Sequence[BacktestRow]) -> dict[str, Any]:
    """``quality.json``'s ``backtest``: per metric and horizon, the forecasts (rows) and distinct ``origins``, their
    mean absolute percentage error (``mape``: mean of ``|forecast − actual| / actual``), the share the growth band
    alone held (``growth_band_held``), and out of time (`pools.forecast_band.out_of_time`: each origin's rows
    against the band calibrated on the rows known by then) the rows and origins scored and the share whose
    calibrated band held (``band_held``, ``null`` when none was scored; an 80 % band, so about 0.8 is calibrated);
    and the ``calibration`` on every row (`pools.forecast_band.calibrate`)."""
    groups: dict[tuple[str, int], list[tuple[BacktestRow, tuple[BacktestRow, float, float] | None]]] = {}
    for r, scored in zip(rows, out_of_time(list(rows))):
        groups.setdefault((r.metric, r.horizon_days), []).append((r, scored))

    def entry(g: list[tuple[BacktestRow, tuple[BacktestRow, float, float] | None]]) -> dict[str, Any]:
        judged = [s for _, s in g if s is not None]
        return {"forecasts": len(g), "origins": len({r.origin for r, _ in g}),
                "mape": sum(abs(r.forecast - r.actual) / r.actual for r, _ in g) / len(g),
                "growth_band_held": sum(r.low <= r.actual <= r.high for r, _ in g) / len(g),
                "scored": len(judged), "scored_origins": len({r.origin for r, _, _ in judged}),
                "band_held": sum(lo <= r.actual <= hi for r, lo, hi in judged) / len(judged) if judged else None}

    summary: dict[str, Any] = {
        metric: {str(h): entry(g) for (m, h), g in sorted(groups.items()) if m == metric}
        for metric in BACKTEST_METRICS
    }
    return {**summary, "calibration": calibrate(rows).to_json()}


def _series(points: Sequence[tuple[int, float]]) -> tuple[list[int], list[float]]:
    ordered = sorted(points)
    return [int(d) for d, _ in ordered], [float(v) for _, v in ordered]
