"""Benchmark the client-side assignors on the shape of Kafka's large uniform-subscription tests.

2,000 consumers, 500 topics x 2,000 partitions (1,000,000 partitions), every consumer subscribed to
every topic. Cases: the initial assignment for each strategy; for the sticky assignors also every
member rejoining with what it owns (generation 1), and every 10th member leaving. Kafka's Java on a
machine like ours: Range 0.51 s, RoundRobin 0.74 s, CooperativeSticky rejoin 1.5 s and after 10%
leave 1.2 s, eager Sticky after 10% leave 2.7 s.

Prints per case the best wall and CPU seconds over ``--repeat`` runs of a `planner.assignors.assign`
call (plain dicts in and out: input validation, Java member order, the assignor and the canonical
result) and of the assignor alone on already parsed members (what Kafka's test times).

    .venv/bin/python benchmarks/bench_assignors_client.py [--consumers 2000 --topics 500 --partitions 2000 --repeat 3]
    .venv/bin/python benchmarks/bench_assignors_client.py --random-subscriptions ...   # general sticky builder
"""

from __future__ import annotations

import argparse
import gc
import random
import time

from planner.assignors import assign
from planner.assignors.common import parse_members, parse_topics
from planner.assignors.cooperative_sticky import cooperative_sticky_assign
from planner.assignors.range import range_assign
from planner.assignors.roundrobin import roundrobin_assign
from planner.assignors.sticky import sticky_assign

CORE = {
    "range": lambda topics, members: range_assign(topics, members, {}),
    "roundrobin": roundrobin_assign,
    "sticky": lambda topics, members: sticky_assign(topics, members, {}),
    "cooperative-sticky": lambda topics, members: cooperative_sticky_assign(topics, members, {}),
}


def timed(fn, repeat: int):
    """Best wall and best CPU seconds over ``repeat`` runs, and the result."""
    walls, cpus = [], []
    for _ in range(repeat):
        result = None  # let the previous run's million objects go before timing the next
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus), result


def report(strategy: str, case: str, topics: dict, members: list[dict], repeat: int) -> dict:
    wall, cpu, result = timed(lambda: assign(strategy, topics, members), repeat)
    parsed_topics, parsed_members = parse_topics(topics), parse_members(members)
    core_wall, core_cpu, _ = timed(lambda: CORE[strategy](parsed_topics, parsed_members), repeat)
    assigned = sum(len(ps) for by_topic in result.values() for ps in by_topic.values())
    print(
        f"{strategy:<19} {case:<9} assign wall {wall:6.2f} s cpu {cpu:6.2f} s | "
        f"assignor alone wall {core_wall:6.2f} s cpu {core_cpu:6.2f} s | {assigned:,} partitions assigned",
        flush=True,
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--consumers", type=int, default=2000)
    parser.add_argument("--topics", type=int, default=500)
    parser.add_argument("--partitions", type=int, default=2000)
    parser.add_argument("--strategies", default="range,roundrobin,sticky,cooperative-sticky")
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; the best is reported")
    parser.add_argument(
        "--random-subscriptions", action="store_true",
        help="each consumer subscribes to a random (seeded) subset of the topics: the general sticky builder",
    )
    args = parser.parse_args()
    topics = {f"topic-{i}": args.partitions for i in range(args.topics)}
    names = list(topics)
    rnd = random.Random(1)
    members = [
        {"member_id": f"consumer-{i}", "group_instance_id": None, "rack": None,
         "topics": rnd.sample(names, rnd.randint(1, len(names))) if args.random_subscriptions else names,
         "owned_partitions": {}, "generation": None}
        for i in range(args.consumers)
    ]
    for strategy in args.strategies.split(","):
        first = report(strategy, "initial", topics, members, args.repeat)
        if strategy not in ("sticky", "cooperative-sticky"):
            continue
        rejoined = [{**m, "owned_partitions": first[m["member_id"]], "generation": 1} for m in members]
        report(strategy, "rejoin", topics, rejoined, args.repeat)
        remaining = [m for i, m in enumerate(rejoined) if i % 10 != 1]
        report(strategy, "leave10%", topics, remaining, args.repeat)


if __name__ == "__main__":
    main()
