"""Benchmark the day-2 operations on a 1,000-broker cluster: a 200-broker pool rebalance and a 10-broker
decommission, time and moved bytes against the lower bound (`planner.operations.outcome`).

Usage::

    .venv/bin/python benchmarks/bench_operations.py [--brokers 1000] [--pools 5] [--topics 4000] [--partitions 50]
    .venv/bin/python benchmarks/bench_operations.py --exact     # small pools: moved bytes against exact.py
    .venv/bin/python benchmarks/bench_operations.py --bytes     # large-pool rebalance bytes: exact model, bound

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


def band_bound(state, goal) -> float:
    """A lower bound on the bytes any placement of ``state`` (its seed the current placement) meeting ``goal``'s
    band copies. Every copied replica leaves one broker and lands on another, so the copied bytes are both the
    bytes leaving brokers and the bytes arriving. A broker above its band in a dimension leadership does not
    move (``extra`` 0: nw_in, disk, replicas) must shed at least its excess there from its own replicas, the
    cheapest such set at least the fractional knapsack by load per byte; one below its band must receive at
    least its shortfall (the knapsack over every partition). The bound is the larger of the two sums over brokers,
    each broker counting its largest dimension."""
    import numpy as np

    from planner.placement.engine import evaluate, state_fair_share

    seed = evaluate(state, goal, state.seed, "seed")
    assert seed.moved_bytes == 0, "the seed must be the current placement"
    share = state_fair_share(state)
    fixed = (state.extra == 0).all(axis=0)

    def knapsack(load: np.ndarray, size: np.ndarray, need: float) -> float:
        order = np.argsort(-load / np.maximum(size, 1.0), kind="stable")
        got, paid = np.cumsum(load[order]), np.cumsum(size[order])
        k = int(np.searchsorted(got, need))
        if k >= len(order):
            return float(paid[-1]) if len(paid) else 0.0
        before = (got[k - 1], paid[k - 1]) if k else (0.0, 0.0)
        return float(before[1] + (need - before[0]) / load[order][k] * size[order][k])

    shed = fill = 0.0
    for b in range(len(state.broker_ids)):
        on = (state.seed == b).any(axis=1)
        out, low = seed.outside_band[b], seed.load[b] < share[b]
        shed += max([knapsack(state.follower[on, d], state.size[on], out[d]) for d in np.flatnonzero(
            fixed & (out > 0) & ~low)] or [0.0])
        fill += max([knapsack(state.follower[:, d], state.size, out[d]) for d in np.flatnonzero(
            fixed & (out > 0) & low)] or [0.0])
    return max(shed, fill)


def fewest_bytes(brokers: int) -> None:
    """Rebalance bytes of the large-pool path (the distribution search, then `planner.operations.polish`) on the
    9-broker hot pools of the tests against the exact model, and on one pool of ``brokers`` brokers against
    `band_bound`."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from planner.operations import distribution
    from planner.operations.polish import polish
    from planner.placement.exact import exact_placement
    from pools.snapshot import DIMENSIONS
    from tests.planner.operations.shapes import hot_pool

    saved, distribution.ENGINE_PAIRS = distribution.ENGINE_PAIRS, 0  # the search and its polish, as on a large pool
    for seed in (0, 1):
        s = hot_pool(45, seed=seed)
        inputs = operation_inputs(s.snapshot, s.policy, s.profile)
        t = time.perf_counter()
        op = rebalance(inputs, dimensions=DIMENSIONS)
        seconds = time.perf_counter() - t
        t = time.perf_counter()
        best = exact_placement(s.snapshot, inputs.forecast, sorted(s.snapshot.partitions_by_topic), list(range(1, 10)),
                               headroom=inputs.rules.limits("a").headroom, band=0.10, band_brokers=list(range(1, 10)))
        exact_seconds = time.perf_counter() - t
        out = sum(v["after"]["distance"] for d, v in op.balance["a"].items() if d in DIMENSIONS and v["after"])
        print(f"hot_pool(45, seed={seed}), 9 brokers, rebalance ±10 % in {len(DIMENSIONS)} dimensions: "
              f"{seconds:.1f} s, moved {op.moved_bytes / 1e9:.1f} GB, distance outside the band {out:.4f}; exact "
              f"{best.moved_bytes / 1e9:.1f} GB ({'optimal' if best.optimal else 'not proven optimal'}, "
              f"{exact_seconds:.1f} s): ×{op.moved_bytes / best.moved_bytes:.3f}")
    distribution.ENGINE_PAIRS = saved
    snapshot, policy, profile = random_cluster(brokers, 4 * brokers, 1, partitions=50, misplaced=0.0, floating=0.0,
                                               seed=0)
    inputs = operation_inputs(snapshot, policy, profile)
    pool = policy.pool_names[0]
    captured = []
    module = sys.modules["planner.operations.rebalance"]
    optimiser = module.pool_optimiser
    module.pool_optimiser = lambda state, goal: captured.append((state, goal)) or optimiser(state, goal)
    t = time.perf_counter()
    op = rebalance(inputs, pools=[pool])
    seconds = time.perf_counter() - t
    module.pool_optimiser = optimiser
    state, goal = captured[0]
    t = time.perf_counter()
    searched = distribution.distribute(state, goal)
    search_seconds = time.perf_counter() - t
    t = time.perf_counter()
    polished = polish(state, goal, searched)
    polish_seconds = time.perf_counter() - t
    bound = band_bound(state, goal)
    out = {d: v["after"]["outside_band"] for d, v in op.balance[pool].items() if v["after"]}
    print(f"pool of {len(state.broker_ids)} brokers, {len(state.size)} partitions, rebalance: {seconds:.1f} s, "
          f"moved {op.moved_bytes / 1e9:.2f} GB (×{op.moved_bytes / bound:.3f} the band bound "
          f"{bound / 1e9:.2f} GB), brokers outside the band after {out}")
    print(f"  search alone {searched.moved_bytes / 1e9:.2f} GB (×{searched.moved_bytes / bound:.3f}, "
          f"{search_seconds:.1f} s); with the polish {polished.moved_bytes / 1e9:.2f} GB "
          f"(×{polished.moved_bytes / bound:.3f}, {polish_seconds:.1f} s more) before pruning")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", type=int, default=1000)
    parser.add_argument("--pools", type=int, default=5)
    parser.add_argument("--topics", type=int, default=4000)
    parser.add_argument("--partitions", type=int, default=50)
    parser.add_argument("--drain", type=int, default=10)
    parser.add_argument("--skip", default="", help="operations to skip: rebalance, decommission")
    parser.add_argument("--exact", action="store_true", help="small pools against the exact reference instead")
    parser.add_argument("--bytes", action="store_true", help="large-pool rebalance bytes against the exact model "
                        "(9-broker hot pools) and the band bound (one pool of --brokers brokers) instead")
    args = parser.parse_args()
    if args.exact:
        exact()
        return
    if args.bytes:
        fewest_bytes(args.brokers)
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
