"""Time `poolplan audit` on a generated cluster of 1,000,000 partitions (the cron-job case).

Usage: ``python benchmarks/bench_audit.py [--partitions N] [--brokers B] [--pools K]``. Generates a healthy
cluster (RF 3, rack-aware within pools) with drift planted in 0.5 % of the partitions, writes it as
snapshot.json, then prints the wall time of each step: loading the snapshot, the audit without and with a
topic profile, and writing findings.json and findings.md.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from pools.atomic import write_text
from pools.audit import audit, findings_to_json, render_findings_md
from pools.audit.findings import Severity
from pools.policy import parse_policy
from pools.profile import TopicProfile
from pools.snapshot import Broker, Capacity, ClusterSnapshot, PartitionState, TopicState, load_snapshot, save_snapshot

RACKS, RF, PARTITIONS_PER_TOPIC = 3, 3, 50


def generate(partitions: int, brokers: int, pools: int, seed: int = 1) -> tuple[ClusterSnapshot, str, dict]:
    """A cluster of ``pools`` equal pools, ``partitions`` partitions, and drift in 0.5 % of them."""
    rng = random.Random(seed)
    cap = Capacity(nw_in=1.25e9, nw_out=1.25e9, disk=2e14, replicas=20_000)
    per_pool = brokers // pools
    broker_list = [Broker(b, f"r{b % RACKS}", cap, f"p{b // per_pool}") for b in range(per_pool * pools)]
    members = [[b for b in range(p * per_pool, (p + 1) * per_pool)] for p in range(pools)]
    topics = partitions // PARTITIONS_PER_TOPIC
    parts, states, profile = [], [], {}
    t0, t1 = datetime(2026, 8, 1, tzinfo=timezone.utc), datetime(2026, 10, 31, tzinfo=timezone.utc)
    for t in range(topics):
        pool = t % pools
        name = f"p{pool}.topic-{t:06d}"
        states.append(TopicState(name, configs={"min.insync.replicas": "2"}))
        ring = members[pool]
        for p in range(PARTITIONS_PER_TOPIC):
            start = (t * 7 + p) % len(ring)
            reps = tuple(ring[(start + k) % len(ring)] for k in range(RF))
            isr = reps
            x = rng.random()
            if x < 0.002:
                other = members[(pool + 1) % pools]
                reps = reps[:2] + (other[p % len(other)],)
                isr = reps
            elif x < 0.003:
                isr = reps[:2]
            elif x < 0.005:
                reps, isr = reps, reps
                parts.append(PartitionState(name, p, reps, leader=reps[1], isr=isr, sizes=(10**9,) * RF,
                                            log_dirs=("/data",) * RF))
                continue
            parts.append(PartitionState(name, p, reps, leader=reps[0], isr=isr, sizes=(10**9,) * RF,
                                        log_dirs=("/data",) * RF))
        rate = 1e6 * (1 + t % 10)
        profile[name] = TopicProfile(
            name, PARTITIONS_PER_TOPIC, rate / 2, rate * 0.9, rate, rate * 1.2, rate, rate * 1.5, rate * 2, rate / 1e3,
            PARTITIONS_PER_TOPIC * 10**9, 0.002, 0.002, 90, rate * 1.2, rate, rate * 1.4, 6e10, 5e10, 7e10, 90,
            129600, 0, 0, 0, t0, t1,
        )
    policy = "[defaults]\nheadroom = 0.8\n" + "".join(
        f"\n[[pool]]\nname = \"p{p}\"\ntopics = ['p{p}\\..*']\n" for p in range(pools)
    )
    snap = ClusterSnapshot("bench", tuple(broker_list), tuple(states), tuple(parts), taken_at="2026-11-01T00:00:00Z")
    return snap, policy, profile


def _timed(label: str, fn):
    """Run ``fn``; print wall and CPU seconds (CPU is the honest figure on a shared machine)."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    print(f"{label:<42}{time.perf_counter() - t0:>9.2f} s wall{time.process_time() - c0:>9.2f} s CPU", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--partitions", type=int, default=1_000_000)
    parser.add_argument("--brokers", type=int, default=600)
    parser.add_argument("--pools", type=int, default=10)
    args = parser.parse_args()
    snap, policy_text, profile = _timed("generate", lambda: generate(args.partitions, args.brokers, args.pools))
    policy = parse_policy(policy_text, source="bench-pools.toml")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "snapshot.json"
        _timed("write snapshot.json", lambda: save_snapshot(snap, path))
        print(f"{'snapshot.json size':<42}{path.stat().st_size / 1e6:>9.0f} MB", flush=True)
        loaded = _timed("load_snapshot (parse + validate)", lambda: load_snapshot(path))
        found = _timed("audit, no profile (builds the arrays)", lambda: audit(loaded, policy))
        _timed("audit, no profile (arrays cached)", lambda: audit(loaded, policy))
        found = _timed("audit with profile (traffic, forecast)", lambda: audit(loaded, policy, profile))
        _timed("write findings.json + findings.md", lambda: (
            write_text(Path(tmp) / "findings.json", findings_to_json(found, cluster="bench", taken_at=None)),
            write_text(Path(tmp) / "findings.md",
                       render_findings_md(found, cluster="bench", taken_at=None, fail_on=Severity.ERROR))))
    kinds: dict[str, int] = {}
    for f in found:
        kinds[f.kind] = kinds.get(f.kind, 0) + 1
    print(f"partitions {len(snap.partitions):,}, brokers {len(snap.brokers)}, findings {len(found):,}: "
          + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))


if __name__ == "__main__":
    main()
