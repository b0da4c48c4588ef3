"""Benchmark the pool planner on synthetic pooled clusters and measure the placement against the exact optimum.

Usage::

    .venv/bin/python benchmarks/bench_planner.py [--cases small,medium,large] [--threads 2] [--time-limit 60]
    .venv/bin/python benchmarks/bench_planner.py --margin 200     # greedy vs exact placement on 200 small pools
    .venv/bin/python benchmarks/bench_planner.py --exact small,medium   # plan vs the exact pool-model optimum
    .venv/bin/python benchmarks/bench_planner.py --overloaded all  # engine vs exact on pools over headroom

Prints, per case: generation time, planning time split into model+solve and placement, solver status, gap,
bytes moved (fraction of all replica bytes) against placing every pool from scratch with AdminUtils, brokers
to add and validator violations.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from planner.placement import assign_replicas_to_brokers
from planner.placement.exact import exact_placement
from planner.placement.minimal_move import place_in_pools
from planner.pool_planner import plan_pools
from random_clusters import random_cluster
from planner.validator import validate_plan
from pools.demand import topic_demand
from pools.errors import InfeasibleError
from pools.snapshot import Broker, Capacity, ClusterSnapshot, PartitionState, TopicState

CASES = {
    "small": dict(brokers=50, topics=500, pools=5, partitions=10),
    # ten pools, some over headroom with brokers joining them: the case tests/planner/test_plan_under_load.py plans
    # twice, once with both cores kept busy, for a byte-identical plan.json
    "hundred": dict(brokers=100, topics=3000, pools=10, partitions=10, load=0.7),
    "medium": dict(brokers=200, topics=5000, pools=10, partitions=10),
    "large": dict(brokers=1000, topics=20000, pools=40, partitions=50),
}


def scratch_moved(snapshot, plan) -> int:
    """Bytes moved if every pool's topics were placed from scratch by AdminUtils on the pool's brokers."""
    moved = 0
    members: dict[str, list[tuple[int, str | None]]] = {}
    for b in snapshot.brokers:
        pool = plan.brokers.get(b.id)
        if pool is not None:
            members.setdefault(pool, []).append((b.id, b.rack))
    for topic, pool in plan.topics.items():
        parts = snapshot.partitions_by_topic[topic]
        target = assign_replicas_to_brokers(members[pool], len(parts), len(parts[0].replicas), fixed_start_index=0)
        for p in parts:
            moved += p.size_bytes * sum(b not in p.replicas for b in target[p.partition])
    return moved


def run_case(name: str, threads: int, time_limit: float) -> None:
    spec = CASES[name]
    t0 = time.perf_counter()
    snapshot, policy, profile = random_cluster(**spec, misplaced=0.05, seed=0)
    t1 = time.perf_counter()
    outcome = plan_pools(snapshot, policy, profile, time_limit=time_limit, gap=0.01, threads=threads)
    t2 = time.perf_counter()
    plan = outcome.plan
    total = sum(p.size_bytes * len(p.replicas) for p in snapshot.partitions)
    violations = validate_plan(snapshot, policy, plan, topic_demand(snapshot, profile))
    t3 = time.perf_counter()
    scratch = scratch_moved(snapshot, plan)
    s = plan.solver
    replicas = sum(len(p.replicas) for p in snapshot.partitions)
    print(f"{name}: {spec['brokers']} brokers, {len(snapshot.topics)} topics, {len(snapshot.partitions)} partitions, "
          f"{replicas} replicas, {spec['pools']} pools")
    print(f"  generate {t1 - t0:.1f} s; plan {t2 - t1:.1f} s (solver {s.name} {s.status}/{s.solution}, "
          f"{outcome.solver_seconds:.1f} s, objective {s.objective}, bound {s.bound}, gap {s.gap}); validate {t3 - t2:.1f} s")
    print(f"  moved {plan.moved_bytes / total:.4%} of replica bytes ({len(plan.moves)} partitions); "
          f"from scratch {scratch / total:.4%}; brokers to add {sum(plan.brokers_to_add.values())}; "
          f"violations {len(violations)}; warnings {len(plan.warnings)}")


def exact(name: str, threads: int) -> None:
    """Moved bytes of the default plan against the unrestricted broker model solved to gap 0."""
    from planner import pool_milp, pool_planner

    snapshot, policy, profile = random_cluster(**CASES[name], misplaced=0.05, seed=0)
    problem, _ = pool_planner._problem(snapshot, policy, pool_planner.check_policy(snapshot, policy),
                                       topic_demand(snapshot, profile), pool_milp)
    default = pool_milp.solve_pools(problem, gap=0.01, threads=threads)
    best = pool_milp.solve_pools(problem, gap=0.0, threads=threads, restrict=False, time_limit=600)
    moved = [1 - s.kept_bytes / problem.total_bytes for s in (default, best)]
    print(f"{name}: default plan moves {moved[0]:.4%}, exact optimum {moved[1]:.4%} "
          f"({best.report.status}, gap {best.report.gap}): {moved[0] / moved[1] - 1:+.3%}")


def margin(cases: int) -> None:
    """Greedy placement vs the exact MILP on random small pools (6 brokers, 3 racks, 30 partitions)."""
    rng = np.random.default_rng(0)
    ratios, infeasible, greedy_over = [], 0, 0
    for _ in range(cases):
        n, outside = 6, 3
        parts = []
        for i in range(30):
            rf = int(rng.integers(1, 4))
            replicas = tuple(int(b) + 1 for b in rng.permutation(n + outside)[:rf])
            parts.append(PartitionState("t", i, replicas, leader=replicas[0],
                                        sizes=(int(rng.integers(1, 1000)),) * rf))
        total = sum(p.size_bytes * len(p.replicas) for p in parts)
        cap = Capacity(1e9, 1e9, total / n / rng.uniform(0.5, 0.9), 1000)
        brokers = tuple(Broker(b, f"r{b % 3}", cap) for b in range(1, n + outside + 1))
        snap = ClusterSnapshot("m", brokers, (TopicState("t"),), tuple(parts))
        demands = topic_demand(snap, {})
        pool = list(range(1, n + 1))
        greedy = place_in_pools(snap, demands, {"t": "p"}, {"p": pool}, headroom={"p": (1.0,) * 4})
        try:
            exact = exact_placement(snap, demands, ["t"], pool, headroom=(1.0,) * 4)
        except InfeasibleError:
            infeasible += 1
            continue
        if greedy.warnings:
            greedy_over += 1
            continue
        moved = sum(p.size_bytes * sum(b not in p.replicas for b in greedy.assignment[p.topic, p.partition])
                    for p in parts)
        ratios.append(moved / exact.moved_bytes if exact.moved_bytes else (1.0 if moved == 0 else float("inf")))
    r = np.array(ratios)
    print(f"placement margin over {cases} pools: {len(r)} compared, {infeasible} with no exact placement, "
          f"{greedy_over} where the greedy left a broker over capacity")
    print(f"  greedy/exact moved bytes: mean {r.mean():.4f}, p95 {np.quantile(r, 0.95):.4f}, max {r.max():.4f}, "
          f"equal in {np.mean(r <= 1 + 1e-12):.1%}, within 1% in {np.mean(r <= 1.01):.1%}")


def overloaded(names: list[str], exact_limit: float) -> None:
    """The engine against the exact reference on the test pools with brokers over headroom
    (`tests/planner/placement/overloaded.py`, written apart from the sample generator)."""
    from planner.placement.minimal_move import FAIR_SHARE_BAND
    from pools.demand import broker_load
    from pools.snapshot import DIMENSIONS
    from tests.planner.placement.overloaded import CASES, HEADROOM, overloaded_pool

    print("| case | brokers / partitions | over headroom before | engine moved | exact optimum | excess | "
          "engine s | exact s |")
    print("|---|---|---|---|---|---|---|---|")
    for name in names if names != ["all"] else list(CASES):
        case = overloaded_pool(name, **CASES[name])
        snap = case.snapshot
        before = broker_load(snap, case.demands)
        over = [b for b in case.pool if any(before[b][d] > HEADROOM[i] * snap.broker_by_id[b].capacity.get(d)
                                            for i, d in enumerate(DIMENSIONS))]
        t0 = time.perf_counter()
        out = place_in_pools(snap, case.demands, {"t": "p"}, {"p": case.pool}, headroom={"p": HEADROOM},
                             joining={"p": case.joining} if case.joining else None)
        t1 = time.perf_counter()
        moved = sum(p.size_bytes * sum(b not in p.replicas for b in out.assignment[p.topic, p.partition])
                    for p in snap.partitions)
        best = exact_placement(snap, case.demands, ["t"], case.pool, headroom=HEADROOM, time_limit=exact_limit,
                               band=FAIR_SHARE_BAND if case.joining else None, band_brokers=case.joining)
        t2 = time.perf_counter()
        joining = f" + {len(case.joining)} joining" if case.joining else ""
        print(f"| {name} | {len(case.pool) - len(case.joining)}{joining} / {len(snap.partitions)} | "
              f"{', '.join(map(str, over))} | {moved / 1e9:,.3f} GB | {best.moved_bytes / 1e9:,.3f} GB"
              f"{'' if best.optimal else ' (not proven)'} | {moved / best.moved_bytes - 1:+.3%} | {t1 - t0:.1f} | "
              f"{t2 - t1:.1f} |{' warnings: ' + '; '.join(out.warnings) if out.warnings else ''}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="small,medium,large")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--margin", type=int, default=0, help="compare greedy and exact placement on N pools")
    parser.add_argument("--exact", default="", help="cases whose plan to compare with the exact pool optimum")
    parser.add_argument("--overloaded", default="", help="overloaded test pools (names or 'all') vs the exact optimum")
    parser.add_argument("--exact-limit", type=float, default=600.0, help="seconds for each exact reference solve")
    args = parser.parse_args()
    if args.overloaded:
        overloaded(args.overloaded.split(","), args.exact_limit)
        return
    for name in filter(None, args.exact.split(",")):
        exact(name, args.threads)
    if args.exact:
        return
    if args.margin:
        margin(args.margin)
        return
    for name in args.cases.split(","):
        run_case(name, args.threads, args.time_limit)


if __name__ == "__main__":
    main()
