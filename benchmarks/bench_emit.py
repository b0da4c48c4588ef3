"""Benchmark `poolplan emit` on 100,000 partition moves: batching, throttles, the Kafka checks, writing.

Run: ``.venv/bin/python benchmarks/bench_emit.py [--moves 100000] [--brokers 200]``; prints one line per stage.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from planner.emit import BatchLimits, EmitOptions, build_bundle, plan_batches, write_bundle
from pools.plan_file import PartitionMove, Plan, SolverReport
from pools.snapshot import snapshot_from_dict


def synthetic(moves: int, brokers: int, seed: int = 7) -> tuple[Plan, object]:
    """A cluster of ``brokers`` with ``moves`` RF-3 partitions, each moving one replica to another broker."""
    rnd = random.Random(seed)
    ids = list(range(1, brokers + 1))
    cap = {"nw_in": 1.25e9, "nw_out": 1.25e9, "disk": 8e12, "replicas": 10_000}
    parts, plan_moves = [], []
    for i in range(moves):
        topic, partition = f"topic-{i // 100:04d}", i % 100
        old = rnd.sample(ids, 3)
        new = list(old)
        new[rnd.randrange(3)] = rnd.choice([b for b in ids if b not in old])
        size = rnd.randint(10**6, 5 * 10**10)
        parts.append({"topic": topic, "partition": partition, "replicas": old, "leader": old[0], "isr": old,
                      "sizes": [size] * 3})
        plan_moves.append(PartitionMove(topic, partition, tuple(old), tuple(new), size))
    snapshot = snapshot_from_dict({"version": 1, "cluster": "bench", "partitions": parts,
                                   "brokers": [{"id": b, "rack": f"r{b % 6}", "capacity": cap} for b in ids]})
    util = {"brokers": {str(b): {"nw_in": {"before": 4e8, "after": 4.5e8}, "nw_out": {"before": 6e8, "after": 6e8}} for b in ids}}
    plan = Plan("bench", {b: None for b in ids}, {b: None for b in ids}, {}, tuple(plan_moves), {},
                SolverReport("none", "Optimal", "", None, None, None), util)
    return plan, snapshot


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--moves", type=int, default=100_000)
    parser.add_argument("--brokers", type=int, default=200)
    args = parser.parse_args()
    clock = [(time.perf_counter(), time.process_time())]

    def lap(label: str, extra: str = "") -> None:
        clock.append((time.perf_counter(), time.process_time()))
        (w0, c0), (w1, c1) = clock[-2], clock[-1]
        print(f"{label:<58} wall {w1 - w0:6.2f} s  cpu {c1 - c0:6.2f} s  {extra}")

    print(f"moves={args.moves} brokers={args.brokers}")
    plan, snapshot = synthetic(args.moves, args.brokers)
    lap("synthetic plan + snapshot")
    batches = plan_batches(plan.moves, limits=BatchLimits())
    lap("plan_batches (5 moves/broker)", f"-> {len(batches)} batches")
    files = build_bundle(plan, snapshot, EmitOptions(leader_preserving=True))
    size = sum(len(v.encode()) for v in files.values())
    lap("build_bundle (leader-preserving, every file Kafka-checked)", f"-> {len(files)} files, {size / 1e6:.1f} MB")
    with tempfile.TemporaryDirectory() as tmp:
        write_bundle(Path(tmp) / "bundle", files)
        lap("write_bundle (atomic directory)")


if __name__ == "__main__":
    main()
