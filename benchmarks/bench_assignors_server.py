"""Benchmark the KIP-848 broker-side assignors on Kafka's large uniform-subscription case.

2,000 members, 500 topics x 2,000 partitions (1,000,000 partitions), every member subscribed to every
topic. Kafka's `uniform` assignor does the initial assignment in about 0.06 s on a machine like ours.
Prints one line per case: the best and median of ``--repeat`` runs of `assign_server` (plain data
in and out: group spec, Java hash orders and the name-keyed result included), and of the uniform
assignor alone on a prebuilt group spec, which is what Kafka's JMH benchmark times.

    .venv/bin/python benchmarks/bench_assignors_server.py [--members 2000 --topics 500 --partitions 2000]
"""

from __future__ import annotations

import argparse
import base64
import random
import statistics
import time

from planner.assignors.server import assign_server, build_group_spec
from planner.assignors.server_uniform import assign_uniform


def topic_list(n_topics: int, n_partitions: int, seed: int) -> list[dict]:
    rnd = random.Random(seed)
    return [
        {"name": f"topic-{i:04d}", "topic_id": base64.urlsafe_b64encode(rnd.randbytes(16)).rstrip(b"=").decode(), "partitions": n_partitions}
        for i in range(n_topics)
    ]


def member_list(n_members: int, names: list[str], owned: dict[str, dict[str, list[int]]] | None = None) -> list[dict]:
    return [
        {"member_id": f"member-{i:05d}", "instance_id": None, "rack": None, "topics": names,
         "current_assignment": (owned or {}).get(f"member-{i:05d}", {})}
        for i in range(n_members)
    ]


def timed(fn, repeat: int) -> tuple[float, float, float, object]:
    """Best and median wall time and best CPU time over ``repeat`` runs, plus the last result.

    CPU time (`time.process_time`) is printed too: on a shared machine it stays close to what an idle
    one would measure while wall time does not.
    """
    times, cpu, result = [], [], None
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = fn()
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return min(times), statistics.median(times), min(cpu), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=2000)
    parser.add_argument("--topics", type=int, default=500)
    parser.add_argument("--partitions", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    topics = topic_list(args.topics, args.partitions, seed=1)
    names = [t["name"] for t in topics]
    members = member_list(args.members, names)
    total = args.topics * args.partitions
    print(f"{args.members} members, {args.topics} topics x {args.partitions} partitions = {total:,} partitions")

    for strategy in ("uniform", "range"):
        best, median, cpu, result = timed(lambda: assign_server(strategy, topics, members), args.repeat)
        print(f"{strategy:8s} initial assignment     best {best:.3f} s  median {median:.3f} s  cpu {cpu:.3f} s")
    # the assignor alone on a prebuilt group spec, as Kafka's JMH benchmark times `assign(groupSpec, ...)`
    spec = build_group_spec(topics, members)
    best, median, cpu, _ = timed(lambda: assign_uniform(spec), args.repeat)
    print(f"uniform  assignor only (spec built) best {best:.3f} s  median {median:.3f} s  cpu {cpu:.3f} s")
    _, _, _, first = timed(lambda: assign_server("uniform", topics, members), 1)

    # steady state: the previous target fed back, one member joins
    joined = member_list(args.members, names, first) + [
        {"member_id": "member-new", "instance_id": None, "rack": None, "topics": names, "current_assignment": {}}
    ]
    best, median, cpu, _ = timed(lambda: assign_server("uniform", topics, joined), max(1, args.repeat // 2))
    print(f"uniform  one member joins (sticky)  best {best:.3f} s  median {median:.3f} s  cpu {cpu:.3f} s")

    # heterogeneous: every other member drops the last topic
    hetero = [dict(m, topics=names[:-1]) if i % 2 else m for i, m in enumerate(member_list(args.members, names))]
    best, median, cpu, _ = timed(lambda: assign_server("uniform", topics, hetero), 1)
    print(f"uniform  heterogeneous initial      best {best:.3f} s  median {median:.3f} s  cpu {cpu:.3f} s")


if __name__ == "__main__":
    main()
