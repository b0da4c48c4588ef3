"""Benchmark the day-2 operations on a 1,000-broker cluster: a 200-broker pool rebalance and a 10-broker
decommission, time and moved bytes against the lower bound (`planner.operations.outcome`).

Usage::

    .venv/bin/python benchmarks/bench_operations.py [--brokers 1000] [--pools 5] [--topics 4000] [--partitions 50]
    .venv/bin/python benchmarks/bench_operations.py --exact     # small pools: moved bytes against exact.py

Prints the cluster, then per operation: wall time (the library call: engine, plan assembly and the validator),
bytes moved against the lower bound, partitions changed, preferred-leader-only changes, each touched pool's
spread (busiest − idlest broker over the mean) before and after per dimension, warnings and validator findings.
"""

from __future__ import annotations

import argparse
import time

from planner.operations import decommission_brokers, operation_inputs, rebalance
from planner.operations.balance import spread
from random_clusters import random_cluster


def report(name: str, seconds: float, op) -> None:
    plan = op.plan
    leaders_only = sum(set(m.replicas) == set(m.old_replicas) for m in plan.moves)
    ratio = op.moved_bytes / op.lower_bound if op.lower_bound else float("nan")
    print(f"{name}: {seconds:.1f} s; moved {op.moved_bytes / 1e9:.1f} GB, lower bound {op.lower_bound / 1e9:.1f} GB "
          f"(×{ratio:.3f}); {len(plan.moves)} partitions change, {leaders_only} by preferred leader only")
    for pool, table in sorted(op.balance.items()):
        before = spread({d: v["before"] for d, v in table.items() if v["before"]})
        after = spread({d: v["after"] for d, v in table.items() if v["after"]})
        out = {d: v["after"]["outside_band"] for d, v in table.items() if v["after"]}
        print(f"  pool {pool}: spread " + ", ".join(f"{d} {before.get(d, 0):.3f}→{after.get(d, 0):.3f}" for d in table)
              + f"; brokers outside the band after: {out}")
    engine = {p: (r["status"], r["gap"], r["candidates"]) for p, r in plan.placement.items()}
    print(f"  engine {engine}; warnings {len(plan.warnings)}; validator findings "
          f"{sum(w.startswith('validator:') for w in plan.warnings)}")
    for w in plan.warnings[:6]:
        print(f"    {w[:200]}")


def exact() -> None:
    """Rebalance and add brokers on small skewed pools (the test shapes), engine and distribution search, against
    the exact reference (`planner.placement.exact.exact_placement`, PuLP + HiGHS to gap 0)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from planner.operations import add_brokers
    from planner.placement.exact import exact_placement
    from pools.snapshot import DIMENSIONS
    from tests.planner.operations.shapes import new_rack, skewed_pool

    module = sys.modules["planner.operations.distribution"]
    for name, make in (("skewed 6 brokers x 12 partitions", skewed_pool),):
        s = make()
        inputs = operation_inputs(s.snapshot, s.policy, s.profile)
        best = exact_placement(s.snapshot, inputs.forecast, list(s.snapshot.partitions_by_topic), inputs.members("a"),
                               headroom=inputs.rules.limits("a").headroom, band=0.10, band_brokers=inputs.members("a"))
        for how, pairs in (("engine", module.ENGINE_PAIRS), ("distribution search", 0)):
            module.ENGINE_PAIRS, saved = pairs, module.ENGINE_PAIRS
            t = time.perf_counter()
            op = rebalance(inputs, dimensions=DIMENSIONS)
            seconds = time.perf_counter() - t
            module.ENGINE_PAIRS = saved
            out = max(v["after"]["outside_band"] for v in op.balance["a"].values())
            print(f"rebalance {name}, {how}: {seconds:.2f} s, moved {op.moved_bytes / 1e9:.0f} GB, exact "
                  f"{best.moved_bytes / 1e9:.0f} GB (×{op.moved_bytes / best.moved_bytes:.3f}), lower bound "
                  f"{op.lower_bound / 1e9:.0f} GB; brokers outside the band after: {out}")
    s = new_rack()
    inputs = operation_inputs(s.snapshot, s.policy, s.profile)
    t = time.perf_counter()
    op = add_brokers(inputs, "a", [7, 8, 9])
    seconds = time.perf_counter() - t
    best = exact_placement(s.snapshot, inputs.forecast, ["a.orders"], list(range(1, 10)),
                           headroom=inputs.rules.limits("a").headroom, band=0.10, band_brokers=[7, 8, 9])
    print(f"add 3 brokers in a new rack to 6 (18 partitions): {seconds:.2f} s, moved {op.moved_bytes / 1e9:.0f} GB, "
          f"exact {best.moved_bytes / 1e9:.0f} GB (×{op.moved_bytes / best.moved_bytes:.3f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", type=int, default=1000)
    parser.add_argument("--pools", type=int, default=5)
    parser.add_argument("--topics", type=int, default=4000)
    parser.add_argument("--partitions", type=int, default=50)
    parser.add_argument("--drain", type=int, default=10)
    parser.add_argument("--skip", default="", help="operations to skip: rebalance, decommission")
    parser.add_argument("--exact", action="store_true", help="small pools against the exact reference instead")
    args = parser.parse_args()
    if args.exact:
        exact()
        return
    t0 = time.perf_counter()
    snapshot, policy, profile = random_cluster(args.brokers, args.topics, args.pools, partitions=args.partitions,
                                               misplaced=0.0, floating=0.0, seed=0)
    t1 = time.perf_counter()
    inputs = operation_inputs(snapshot, policy, profile)
    t2 = time.perf_counter()
    sizes = {p: len(inputs.members(p)) for p in policy.pool_names}
    pool = min(sizes, key=lambda p: (abs(sizes[p] - 200), p))  # the pool nearest 200 brokers
    parts = sum(inputs.topics.get(p.topic) == pool for p in snapshot.partitions)
    print(f"cluster: {len(snapshot.brokers)} brokers, {len(snapshot.partitions)} partitions, pools {sizes}; "
          f"generate {t1 - t0:.1f} s, inputs {t2 - t1:.1f} s; pool {pool}: {sizes[pool]} brokers, {parts} partitions")
    if "rebalance" not in args.skip:
        t = time.perf_counter()
        op = rebalance(inputs, pools=[pool])
        report(f"rebalance {pool}", time.perf_counter() - t, op)
    if "decommission" not in args.skip:
        pinned = set(policy.pinned_pool)
        drained = [b for b in inputs.members(pool) if b not in pinned][: args.drain]
        t = time.perf_counter()
        op = decommission_brokers(inputs, drained)
        report(f"decommission {drained}", time.perf_counter() - t, op)


if __name__ == "__main__":
    main()
