"""Benchmark: Telegraf JSON lines read by Spark's JSON reader (`spark_jobs.telegraf.read_telegraf`, the JVM) and by
the worker path (`spark_jobs.telegraf.stage_telegraf`), both staged to Parquet, on the same file.

Generates ``--lines`` lines of a cluster's Telegraf ``jolokia2`` output (``kafka_topic`` lines with the three meters'
counts and a rate, ``kafka_partition`` sizes; ``--odd`` of them spelled otherwise, left to Spark's JSON reader), then
prints each reader's wall time and lines/s, the load average and whether both gave the same records.

    python benchmarks/bench_telegraf.py --lines 4000000 --dir /tmp/bench-telegraf [--master local[2]] [--odd 0.01]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import time
from pathlib import Path


def generate(path: Path, lines: int, odd: float, seed: int = 5) -> None:
    """``lines`` Telegraf lines (50 brokers, 400 topics, one line a broker, topic and minute), written once."""
    if path.exists() and path.with_suffix(".done").read_text() == f"{lines} {odd}":
        return
    rng = random.Random(seed)
    with open(path, "w") as out:
        for i in range(lines):
            broker, topic, minute = i % 50, (i // 50) % 400, i // 20_000
            agent = f"http://kafka-{broker}:8778/jolokia"
            if i % 4 == 3:
                line = {"fields": {"Size": rng.randint(0, 10**11)}, "name": "kafka_partition",
                        "tags": {"jolokia_agent_url": agent, "partition": str(i % 12), "topic": f"topic-{topic:04d}"},
                        "timestamp": 1740960000 + 60 * minute}
            else:
                count = rng.randint(0, 10**12)
                line = {"fields": {"BytesInPerSec.Count": count, "BytesInPerSec.OneMinuteRate": rng.random() * 1e6,
                                   "BytesOutPerSec.Count": 2 * count, "MessagesInPerSec.Count": count // 1000},
                        "name": "kafka_topic", "tags": {"jolokia_agent_url": agent, "topic": f"topic-{topic:04d}"},
                        "timestamp": 1740960000 + 60 * minute}
            compact = rng.random() >= odd
            out.write(json.dumps(line, separators=(",", ":") if compact else (", ", ": ")) + "\n")
    path.with_suffix(".done").write_text(f"{lines} {odd}")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lines", type=int, default=4_000_000)
    p.add_argument("--dir", type=Path, required=True)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--odd", type=float, default=0.01, help="share of lines in another spelling (default 0.01)")
    a = p.parse_args(argv)
    from pyspark.sql import functions as F

    from spark_jobs.records import RECORD_SCHEMA, STAGED_SCHEMA, staged
    from spark_jobs.session import build_session
    from spark_jobs.staging import ReaderOptions
    from spark_jobs.telegraf import read_telegraf, stage_telegraf

    a.dir.mkdir(parents=True, exist_ok=True)
    path = a.dir / "telegraf.json"
    generate(path, a.lines, a.odd)
    brokers = {f"http://kafka-{b}:8778/jolokia": b for b in range(50)}
    spark = build_session(master=a.master, conf={"spark.ui.enabled": "false"}, app_name="bench-telegraf")
    print(f"{a.lines} lines, {path.stat().st_size / 1e6:.0f} MB; load average {os.getloadavg()[0]:.1f} (1 min)")
    spark.range(1).collect()  # the JVM started
    out = {}
    for name in ("jvm", "workers"):
        target = a.dir / name
        shutil.rmtree(target, ignore_errors=True)
        for extra in (".residue", ".rest"):
            shutil.rmtree(str(target) + extra, ignore_errors=True)
        t = time.perf_counter()
        if name == "jvm":
            staged(read_telegraf(spark, [str(path)], ReaderOptions("c", brokers))).write.parquet(str(target))
            records = spark.read.schema(STAGED_SCHEMA).parquet(str(target))
        else:
            rest = stage_telegraf(spark, [str(path)], str(target), ReaderOptions("c", brokers))
            frames = [f for f in (rest and staged(rest),) if f is not None]
            if frames:
                frames[0].write.parquet(str(target) + ".rest")
            records = spark.read.schema(STAGED_SCHEMA).parquet(str(target), *([str(target) + ".rest"] if frames else []))
        seconds = time.perf_counter() - t
        out[name] = records.select(*RECORD_SCHEMA.fieldNames())
        print(f"{name:8s} {seconds:6.1f} s  {a.lines / seconds / 1e3:6.1f} k lines/s  load {os.getloadavg()[0]:.1f}")
    digest = [d.select(F.sum(F.xxhash64(*RECORD_SCHEMA.fieldNames()) % 1_000_000_007)).first()[0] for d in out.values()]
    print(f"same records: {digest[0] == digest[1] and out['jvm'].count() == out['workers'].count()}")
    spark.stop()


if __name__ == "__main__":
    main()
