"""The ingest job: raw metric logs and the normalized history → topic profile, quarantine and quality counts.

``run`` wires the readers, the counter-to-rate step, the history table and the profile aggregates; it
collects only small per-topic results and writes the profile with `pools.profile.save_profile`, so the
profile is byte-identical for the same input whatever the cluster or partitioning. ``main(argv)`` parses
arguments, builds the session and calls ``run`` (``python -m spark_jobs.ingest`` / ``spark-submit``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pools.atomic import write_json
from pools.errors import InputError
from pools.pool_rules import DEFAULT_FORECAST_HORIZON_DAYS
from pools.profile import PartitionProfile, TopicProfile, save_profile
from spark_jobs.growth import robust_growth
from spark_jobs.history import read_history, write_history
from spark_jobs.log_dirs import read_log_dirs
from spark_jobs.profile import aggregate_sizes, aggregate_topic_minutes, aggregate_topic_profile
from spark_jobs.normalized_json import SOURCE as NORMALIZED_SOURCE
from spark_jobs.normalized_json import read_normalized_json
from spark_jobs.prom_text import read_prom_text
from spark_jobs.query_range import read_query_range
from spark_jobs.rates import THROUGHPUT_SCHEMA, with_increase
from spark_jobs.records import ACCEPTED_KINDS, KIND_COUNTER, KIND_IGNORED, KIND_MINUTE, KIND_REJECTED, KIND_SIZE, RECORD_SCHEMA
from spark_jobs.telegraf import read_telegraf

__all__ = ["IngestInputs", "IngestParams", "IngestResult", "run", "main", "QUALITY_FILE", "QUARANTINE_DIR"]

QUALITY_FILE = "quality.json"
QUARANTINE_DIR = "quarantine"
HISTORY_DIR = "history"


@dataclass(frozen=True, slots=True)
class IngestInputs:
    """Input files (already expanded, sorted) per source, and the history table to read and extend."""

    prom_text: tuple[str, ...] = ()
    query_range: tuple[str, ...] = ()
    telegraf: tuple[str, ...] = ()
    log_dirs: tuple[str, ...] = ()
    normalized_json: tuple[str, ...] = ()
    history: str | None = None


@dataclass(frozen=True, slots=True)
class IngestParams:
    """Options of a run: cluster name, broker map (label value → broker id), horizon, partition counts."""

    cluster: str
    broker_map: Mapping[str, int] = field(default_factory=dict)
    horizon_days: int = DEFAULT_FORECAST_HORIZON_DAYS
    partition_counts: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What a run wrote and counted."""

    out_dir: Path
    topics: int
    partitions: int
    quality: Mapping[str, Any]


def run(
    spark: SparkSession,
    inputs: IngestInputs,
    out_dir: str | os.PathLike[str],
    params: IngestParams,
    *,
    progress: Callable[[str], None] = lambda _msg: None,
) -> IngestResult:
    """Ingest ``inputs`` and write the profile, ``quality.json``, ``quarantine/`` and the history into ``out_dir``.

    Raises
    ------
    InputError
        When no input at all is given.
    """
    out = Path(out_dir)
    history = inputs.history or os.fspath(out / HISTORY_DIR)
    records = _records(spark, inputs, params)
    if records is None and not inputs.normalized_json and not _exists(history):
        raise InputError("no input: give --prom, --query-range, --telegraf, --log-dirs, --normalized-json or --history")
    if records is None:
        records = spark.createDataFrame([], RECORD_SCHEMA)
    records = records.persist(StorageLevel.MEMORY_AND_DISK)
    normalized = None
    if inputs.normalized_json:
        normalized = read_normalized_json(spark, inputs.normalized_json, cluster=params.cluster)
        normalized = normalized.persist(StorageLevel.MEMORY_AND_DISK)
    units = _units(records, normalized)
    progress("classifying input records")
    rejected_topic = F.when(F.col("kind") == KIND_REJECTED, F.col("topic")).alias("topic")
    counts = units.groupBy("source", "kind", "reason", rejected_topic).count().collect()
    progress("writing quarantine")
    rejected = units.where(F.col("kind") == KIND_REJECTED).drop("kind")
    rejected.write.mode("overwrite").parquet(os.fspath(out / QUARANTINE_DIR))
    rows = _normalized(spark, records, normalized, history, params, counts, progress)
    progress("computing topic profile")
    topics, partitions, extra = _profile(rows, records, inputs, params, counts)
    quality = {**_quality(counts), **extra, "cluster": params.cluster, "history": history}
    save_profile(out, topics, partitions)
    write_json(out / QUALITY_FILE, quality)
    records.unpersist()
    if normalized is not None:
        normalized.unpersist()
    return IngestResult(out, len(topics), len(partitions), quality)


def _units(records: DataFrame, normalized: DataFrame | None) -> DataFrame:
    """Every input unit as ``source, file, kind, reason, cluster, broker_id, topic, raw``: counted and quarantined."""
    columns = ("source", "file", "kind", "reason", "cluster", "broker_id", "topic", "raw")
    units = records.select(*columns)
    if normalized is not None:
        rows = normalized.drop("source").select("*", F.lit(NORMALIZED_SOURCE).alias("source"), F.col("source_file").alias("file"))
        units = units.unionByName(rows.select(*columns))
    return units


def _exists(path: str) -> bool:
    return "://" in path or Path(path).exists()


def _records(spark: SparkSession, inputs: IngestInputs, params: IngestParams) -> DataFrame | None:
    frames = []
    bm = params.broker_map
    if inputs.prom_text:
        frames.append(read_prom_text(spark, inputs.prom_text, cluster=params.cluster, broker_map=bm))
    if inputs.query_range:
        frames.append(read_query_range(spark, inputs.query_range, cluster=params.cluster, broker_map=bm))
    if inputs.telegraf:
        frames.append(read_telegraf(spark, inputs.telegraf, cluster=params.cluster, broker_map=bm))
    if inputs.log_dirs:
        frames.append(read_log_dirs(spark, inputs.log_dirs, cluster=params.cluster))
    if not frames:
        return None
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame)
    return out


def _normalized(
    spark: SparkSession,
    records: DataFrame,
    normalized: DataFrame | None,
    history: str,
    params: IngestParams,
    counts: list[Any],
    progress: Callable[[str], None],
) -> DataFrame:
    """New rows from raw counters and valid normalized lines go into the history; the profile reads the
    whole history for the cluster."""
    has_counters = any(r["kind"] == KIND_COUNTER for r in counts)
    new = with_increase(records) if has_counters else None
    if normalized is not None and any(r["kind"] == KIND_MINUTE for r in counts):
        rows = normalized.where(F.col("kind") == KIND_MINUTE).select(*THROUGHPUT_SCHEMA.fieldNames())
        new = rows if new is None else new.unionByName(rows)
    if new is not None:
        progress(f"converting counters to per-minute rows into {history}")
        write_history(new, history)
    if not _exists(history):
        return spark.createDataFrame([], THROUGHPUT_SCHEMA)
    return read_history(spark, history, cluster=params.cluster)


def _quality(counts: list[Any]) -> dict[str, Any]:
    sources: dict[str, dict[str, Any]] = {}
    for row in sorted(counts, key=lambda r: (r["source"], r["kind"], r["reason"] or "")):
        s = sources.setdefault(row["source"], {"read": 0, "accepted": 0, "ignored": {}, "quarantined": {}})
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


def _profile(
    rows: DataFrame, records: DataFrame, inputs: IngestInputs, params: IngestParams, counts: list[Any]
) -> tuple[list[TopicProfile], list[PartitionProfile], dict[str, Any]]:
    profile = aggregate_topic_profile(aggregate_topic_minutes(rows))
    stats = {
        r["topic"]: r.asDict()
        for r in profile.select("*", F.unix_micros("first_ts").alias("first_us"), F.unix_micros("last_ts").alias("last_us"))
        .drop("first_ts", "last_ts")
        .collect()
    }
    daily = {topic: [(d["day"], d["p99"]) for d in s["daily"]] for topic, s in stats.items()}
    rejected: dict[str | None, int] = {}
    for r in counts:
        if r["kind"] == KIND_REJECTED:
            rejected[r["topic"]] = rejected.get(r["topic"], 0) + r["count"]
    latest: list[Any] = []
    storage_daily: dict[str, dict[int, int]] = {}
    if any(r["kind"] == KIND_SIZE for r in counts):
        sizes = records.where(F.col("source") == "log_dirs") if inputs.log_dirs else records
        latest = aggregate_sizes(sizes, by_day=False).collect()
        daily_sizes = aggregate_sizes(sizes, by_day=True).groupBy("topic", "bucket").agg(F.sum("size_bytes").alias("s"))
        for r in daily_sizes.collect():
            storage_daily.setdefault(r["topic"], {})[r["bucket"]] = r["s"]
    partitions = sorted((PartitionProfile(r["topic"], r["partition"], r["size_bytes"]) for r in latest), key=lambda p: (p.topic, p.partition))
    storage: dict[str, int] = {}
    size_parts: dict[str, int] = {}
    size_ts: dict[str, int] = {}
    for r in latest:
        storage[r["topic"]] = storage.get(r["topic"], 0) + r["size_bytes"]
        size_parts[r["topic"]] = size_parts.get(r["topic"], 0) + 1
        size_ts[r["topic"]] = max(size_ts.get(r["topic"], 0), r["ts_ms"] * 1000)
    topics = []
    for topic in sorted(set(stats) | set(storage)):
        s = stats.get(topic)
        bytes_in = robust_growth(*_series(daily.get(topic, [])))
        stored = robust_growth(*_series(sorted(storage_daily.get(topic, {}).items())))
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
    return topics, partitions, extra


def _series(points: Sequence[tuple[int, float]]) -> tuple[list[int], list[float]]:
    ordered = sorted(points)
    return [int(d) for d, _ in ordered], [float(v) for _, v in ordered]


def main(argv: Sequence[str] | None = None) -> int:
    """``spark-submit spark_jobs/ingest.py --prom 'metrics/prom/*/*.prom' --out profile/``: run the job."""
    from spark_jobs.inputs import expand_globs, load_broker_map, partition_counts
    from spark_jobs.session import build_session, parse_conf

    p = argparse.ArgumentParser(prog="spark_jobs.ingest", description=__doc__.splitlines()[0])
    for name in ("prom", "query-range", "telegraf", "log-dirs", "normalized-json"):
        p.add_argument(f"--{name}", action="append", default=[], help="input glob (repeatable)")
    for name in ("history", "broker-map", "snapshot", "cluster", "remote"):
        p.add_argument(f"--{name}")
    p.add_argument("--horizon-days", type=int, default=DEFAULT_FORECAST_HORIZON_DAYS)
    p.add_argument("--out", required=True)
    p.add_argument("--master", default="local[*]")
    p.add_argument("--conf", action="append", default=[])
    a = p.parse_args(argv)
    snap_cluster, counts = partition_counts(a.snapshot)
    inputs = IngestInputs(
        *(expand_globs(getattr(a, n), option=f"--{n}") for n in ("prom", "query_range", "telegraf", "log_dirs", "normalized_json")),
        history=a.history,
    )
    params = IngestParams(a.cluster or snap_cluster or "default", load_broker_map(a.broker_map), a.horizon_days, counts)
    spark = build_session(a.master, a.remote, parse_conf(a.conf))
    result = run(spark, inputs, a.out, params)
    print(f"{result.topics} topics, {result.partitions} partitions -> {result.out_dir}", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover - spark-submit entry point
    sys.exit(main())
