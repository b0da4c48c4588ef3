"""Benchmark: the Spark topic profile against a bare Spark scan and DuckDB, on N per-minute rows.

Generates N normalized per-minute rows (cluster, ts, interval_s, broker_id, topic, bytes_in, bytes_out,
messages_in, source, flags) as JSON lines and Parquet (and, with ``--prom``, the same traffic as Prometheus
exposition text counters), then in one process measures, once each: Spark session start, a bare Spark scan
of each file set (Spark's reader with the table's schema, every column, default options, ``noop`` sink),
the whole Spark profile as ``poolplan ingest`` computes it (JSON lines validated line by line; per-topic
percentiles, daily p99 and quality counters, collected), and DuckDB computing the same profile with every
aggregate fetched. Prints both ratios. ``--formats history`` measures the profile as ``poolplan ingest`` now
computes it from its history table (`spark_jobs.day_profile`): the same rows written once as a history
(``cluster=/dt=`` days), the per-day partials computed and merged (a first run), the merge alone (the days'
partials stored, as a daily increment finds them), the Spark path on the same table (whose figures they must
equal), a bare Spark scan of the table and DuckDB on its files.

    python benchmarks/bench_ingest.py --rows 20000000 --dir /tmp/bench-ingest [--master local[2]] [--prom] [--formats parquet,history]

Needs ``duckdb`` (``pip install duckdb``; the optional ``bench`` extra).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

T0 = 1_740_960_000  # 2025-03-03T00:00:00Z
BROKERS = 12
TOPICS = 200


def generate(rows: int, out: Path, *, prom: bool) -> dict[str, Path]:
    """Write the rows in each format once (skipped when the files exist)."""
    paths = {"json": out / "json", "parquet": out / "parquet", "prom": out / "prom"}
    if (out / "done.json").exists():
        return paths
    minutes = max(rows // (BROKERS * TOPICS), 1)
    rng = np.random.default_rng(0)
    paths["json"].mkdir(parents=True, exist_ok=True)
    paths["parquet"].mkdir(parents=True, exist_ok=True)
    scale = np.exp(rng.normal(11, 1.5, TOPICS))
    chunk = max(1, 1_000_000 // (BROKERS * TOPICS))
    for i, start in enumerate(range(0, minutes, chunk)):
        m = np.arange(start, min(start + chunk, minutes))
        ts = np.repeat(T0 + 60 * m, BROKERS * TOPICS)
        broker = np.tile(np.repeat(np.arange(1, BROKERS + 1), TOPICS), len(m))
        topic_idx = np.tile(np.arange(TOPICS), BROKERS * len(m))
        bytes_in = (scale[topic_idx] * rng.gamma(4.0, 0.25, len(ts)) * 60).astype(np.int64)
        table = pa.table(
            {
                "cluster": pa.array(["bench"] * len(ts)),
                "ts": pa.array(ts * 1_000_000, pa.timestamp("us", tz="UTC")),
                "interval_s": pa.array(np.full(len(ts), 60, np.int32)),
                "broker_id": pa.array(broker.astype(np.int32)),
                "topic": pa.array([f"tenant{t % 20}.topic-{t}" for t in topic_idx]),
                "bytes_in": pa.array(bytes_in),
                "bytes_out": pa.array(bytes_in * 2),
                "messages_in": pa.array(bytes_in // 500),
                "source": pa.array(["prom_text"] * len(ts)),
                "flags": pa.array(np.zeros(len(ts), np.int32)),
            }
        )
        pq.write_table(table, paths["parquet"] / f"part-{i:05d}.parquet", compression="zstd", row_group_size=1_000_000)
        df = table.to_pandas()
        df["ts"] = df["ts"].dt.strftime("%Y-%m-%dT%H:%M:%SZ")
        df.to_json(paths["json"] / f"part-{i:05d}.json", orient="records", lines=True)
        if prom:
            _write_prom(paths["prom"], i, ts, broker, topic_idx, bytes_in)
    (out / "done.json").write_text(json.dumps({"rows": minutes * BROKERS * TOPICS}))
    return paths


def _write_prom(root: Path, i: int, ts, broker, topic_idx, bytes_in) -> None:
    root.mkdir(parents=True, exist_ok=True)
    cum = np.cumsum(bytes_in.reshape(-1, BROKERS * TOPICS), axis=0).ravel()
    with (root / f"part-{i:05d}.prom").open("w") as f:
        for t, b, k, v in zip((ts + 60) * 1000, broker, topic_idx, cum):
            f.write(f'kafka_server_brokertopicmetrics_bytesin_total{{instance="{b}",topic="tenant{k % 20}.topic-{k}",}} {float(v)!r} {t}\n')


def spark_profile(spark, rows) -> str:
    """Collect the profile; return a digest of its rows (sorted by topic), equal across runs iff the profile is."""
    from spark_jobs.profile import aggregate_topic_minutes, aggregate_topic_profile

    result = sorted(aggregate_topic_profile(aggregate_topic_minutes(rows)).collect())
    return hashlib.sha256(repr([tuple(r) for r in result]).encode()).hexdigest()[:16]


def history_table(spark, parquet: Path, out: Path) -> Path:
    """The Parquet rows as a history table (days in the table's order, as an ingest writes them), written once."""
    from spark_jobs.history import stage_merged_days
    from spark_jobs.history_contract import THROUGHPUT_SCHEMA

    root = out / "history"
    if not (out / "history.done").exists():
        stage_merged_days(spark, spark.read.schema(THROUGHPUT_SCHEMA).parquet(str(parquet)), str(out / "no-history"), str(root))
        (out / "history.done").write_text("")
    return root


def measure_history(spark, con, root: Path, work: Path) -> None:
    """Print the day profile's times (partials computed, then stored) against the Spark path, a scan and DuckDB.

    Its ``cpu`` counts the JVM and this process only: the day profile's numpy work runs in Python workers."""
    import shutil

    from spark_jobs.day_profile import PARTIAL_FILE, install_partials, topic_stats
    from spark_jobs.history import read_history
    from spark_jobs.ingest import _spark_stats

    for partial in root.rglob(PARTIAL_FILE):
        partial.unlink()
    shutil.rmtree(work, ignore_errors=True)
    (work / "staged").mkdir(parents=True)
    by_topic = lambda stats: sorted(stats, key=lambda s: s["topic"])  # noqa: E731
    _, scan, scan_cpu = timed(spark, lambda: spark.read.parquet(str(root)).write.format("noop").mode("overwrite").save())
    (stats, pending), first, first_cpu = timed(spark, lambda: topic_stats(spark, str(root), str(work / "staged"), "bench", [], str(work)))
    install_partials(pending)
    (again, _), merge, merge_cpu = timed(spark, lambda: topic_stats(spark, str(root), str(work / "staged"), "bench", [], str(work)))
    slow, spark_path, spark_cpu = timed(spark, lambda: _spark_stats(read_history(spark, str(root), cluster="bench")))
    _, duck, duck_cpu = timed(spark, lambda: duckdb_profile(con, f"read_parquet('{root}/*/*/part-*.parquet')"))
    same = by_topic(stats) == by_topic(again) == by_topic(slow)
    print(
        f"history  spark scan {scan:6.1f}s (cpu {scan_cpu:5.1f}s)  day profile {first:6.1f}s (cpu {first_cpu:5.1f}s)  "
        f"merge of stored partials {merge:6.1f}s (cpu {merge_cpu:5.1f}s)  spark path {spark_path:6.1f}s (cpu {spark_cpu:5.1f}s)  "
        f"duckdb profile {duck:6.1f}s (cpu {duck_cpu:5.1f}s)  day profile/scan {first / scan:4.2f}x  "
        f"day profile/duckdb {first / duck:4.2f}x  every figure equal to the spark path's: {same}"
    )


def jvm_cpu_seconds(spark) -> float:
    """User + system CPU seconds of the Spark JVM so far (``/proc``; 0.0 where that is not readable)."""
    try:
        pid = spark.sparkContext._gateway.proc.pid
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (AttributeError, OSError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(spark, fn):
    """``(result, wall seconds, CPU seconds of the JVM and of this process)`` of ``fn()``."""
    wall, jvm, own = time.perf_counter(), jvm_cpu_seconds(spark), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, jvm_cpu_seconds(spark) - jvm + time.process_time() - own


DUCKDB_MINUTES = """
CREATE OR REPLACE TEMP TABLE m AS
  SELECT topic, ts, sum(bytes_in / interval_s) AS bin, sum(bytes_out / interval_s) AS bout,
         sum(messages_in / interval_s) AS msg, count(*) AS n,
         sum(CASE WHEN flags & 2 <> 0 THEN greatest(round(interval_s / 60) - 1, 0) ELSE 0 END) AS gaps,
         sum(CASE WHEN flags & 1 <> 0 THEN 1 ELSE 0 END) AS resets
  FROM {src} GROUP BY topic, ts
"""
#: Every aggregate is fetched: DuckDB drops aggregates nobody reads, so a ``count(*)`` over the per-topic
#: result would measure only the grouping.
DUCKDB_STATS = """
SELECT topic, quantile_cont(bin, [0.5, 0.95, 0.99]), max(bin), quantile_cont(bout, [0.95, 0.99]), max(bout),
       quantile_cont(msg, 0.99), count(*), min(ts), max(ts), count(DISTINCT CAST(ts AS DATE)),
       sum(n), sum(gaps), sum(resets)
FROM m GROUP BY topic
"""
DUCKDB_DAILY = "SELECT topic, CAST(ts AS DATE) AS day, quantile_cont(bin, 0.99) FROM m GROUP BY ALL"


def duckdb_profile(con, src: str) -> int:
    """The same profile in DuckDB: the per-topic-minute table (like Spark's persisted one), then both results."""
    con.execute(DUCKDB_MINUTES.format(src=src))
    n = len(con.execute(DUCKDB_STATS).fetchall()) + len(con.execute(DUCKDB_DAILY).fetchall())
    con.execute("DROP TABLE m")
    return n


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=20_000_000)
    p.add_argument("--dir", type=Path, default=Path("/tmp/bench-ingest"))
    p.add_argument("--master", default="local[2]")
    p.add_argument("--prom", action="store_true", help="also write and scan Prometheus text")
    p.add_argument("--formats", default="json,parquet", help="comma-separated: json, parquet, history (default json,parquet)")
    a = p.parse_args(argv)
    import duckdb

    t = time.perf_counter()
    paths = generate(a.rows, a.dir, prom=a.prom)
    rows = json.loads((a.dir / "done.json").read_text())["rows"]
    print(f"rows: {rows:,} ({BROKERS} brokers x {TOPICS} topics); generated in {time.perf_counter() - t:.1f}s")
    for name, path in paths.items():
        if path.exists():
            size = sum(f.stat().st_size for f in path.iterdir())
            print(f"  {name}: {size / 1e9:.2f} GB")

    from pyspark.sql import functions as F

    from spark_jobs.normalized_json import read_normalized_json
    from spark_jobs.history_contract import THROUGHPUT_SCHEMA
    from spark_jobs.records import KIND_MINUTE
    from spark_jobs.session import build_session

    t = time.perf_counter()
    spark = build_session(a.master, conf={"spark.ui.showConsoleProgress": "false", "spark.driver.memory": "4g"})
    spark.range(1).collect()
    print(f"spark session start: {time.perf_counter() - t:.1f}s")
    # the bare scan: Spark's own reader with the table's schema, every column, Spark's defaults
    scans = {
        "json": lambda: spark.read.schema(THROUGHPUT_SCHEMA).json(str(paths["json"])),
        "parquet": lambda: spark.read.schema(THROUGHPUT_SCHEMA).parquet(str(paths["parquet"])),
    }
    # what `poolplan ingest` reads: JSON lines validated line by line (only valid rows are profiled)
    readers = {
        "json": lambda: read_normalized_json(spark, [str(paths["json"])], cluster="bench").where(F.col("kind") == KIND_MINUTE),
        "parquet": scans["parquet"],
    }
    duck_src = {
        "json": f"read_json('{paths['json']}/*.json', format='newline_delimited', columns={{cluster:'VARCHAR', ts:'TIMESTAMPTZ', interval_s:'INTEGER', broker_id:'INTEGER', topic:'VARCHAR', bytes_in:'BIGINT', bytes_out:'BIGINT', messages_in:'BIGINT', source:'VARCHAR', flags:'INTEGER'}})",
        "parquet": f"read_parquet('{paths['parquet']}/*.parquet')",
    }
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    print(f"load average {os.getloadavg()[0]:.1f} (1 min); cpu = CPU seconds of the JVM and of this process")
    for fmt in a.formats.split(","):
        if fmt == "history":
            measure_history(spark, con, history_table(spark, paths["parquet"], a.dir), a.dir / "history-work")
            continue
        _, scan, scan_cpu = timed(spark, lambda: scans[fmt]().write.format("noop").mode("overwrite").save())
        digest, prof, prof_cpu = timed(spark, lambda: spark_profile(spark, readers[fmt]()))
        _, duck, duck_cpu = timed(spark, lambda: duckdb_profile(con, duck_src[fmt]))
        print(
            f"{fmt:8s} spark scan {scan:6.1f}s (cpu {scan_cpu:5.1f}s)  spark profile {prof:6.1f}s (cpu {prof_cpu:5.1f}s)  "
            f"duckdb profile {duck:6.1f}s (cpu {duck_cpu:5.1f}s)  profile/scan {prof / scan:4.2f}x  "
            f"profile/duckdb {prof / duck:4.2f}x  profile digest {digest}"
        )
    print(f"load average {os.getloadavg()[0]:.1f} (1 min)")
    if a.prom and paths["prom"].exists():
        from spark_jobs.prom_text import stage_prom_text
        from spark_jobs.staging import ReaderOptions
        from spark_jobs.rates import with_increase

        t = time.perf_counter()
        spark.read.text(str(paths["prom"])).write.format("noop").mode("overwrite").save()
        scan = time.perf_counter() - t
        t = time.perf_counter()
        files = sorted(str(p) for p in paths["prom"].glob("*.prom"))
        records = stage_prom_text(spark, files, str(a.dir / "prom-staged"), ReaderOptions("bench"))
        spark_profile(spark, with_increase(records))
        prof = time.perf_counter() - t
        print(f"prom     spark scan {scan:6.1f}s  spark parse+rates+profile {prof:6.1f}s  profile/scan {prof / scan:4.2f}x")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
